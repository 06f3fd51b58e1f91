//! In-band DTMF on the media path: muting, what leaks, per leg and on the local radio.

use super::*;

#[test]
fn inband_tones_are_muted_and_what_leaks_is_measured() {
    for (rate, codec) in [(8000u32, Slin), (16000, Slin16)] {
        let n = (rate / 50) as usize;
        let mut worst = 0usize;
        let mut total = 0usize;
        let mut tones = 0usize;
        for lead in (0..n).step_by(n / 20) {
            let mut st = station(
                rate,
                [
                    LegSpec {
                        dtmf: true,
                        ..spec(300, 9700, codec)
                    },
                    spec(301, 9701, codec),
                ],
            );
            let mut out = TickOutput::default();
            let mut got = String::new();
            let mut heard_pcm = Vec::new();
            let digits = "*32000#ABCD1456789";
            for (k, frame) in dtmf_frames(rate, digits, 50, 50, lead).iter().enumerate() {
                let now = k as u64 * 20;
                feed(&mut st, 300, codec, frame, 100 + k as u32 * 20, now);
                tick(&mut st, &mut out, now);
                for (c, d) in dtmf_events(&out) {
                    assert_eq!(c, Some(300));
                    got.push(d);
                }
                heard_pcm.extend(heard(&out, 301, addr(9701), codec).unwrap_or(vec![0; n]));
            }
            assert_eq!(got, digits, "rate {rate} lead {lead}");
            // The far end hears only short onsets: no detector sees a digit in them.
            let mut far = crate::dtmf::DtmfDetector::new(rate).expect("detector");
            let _ = far.process(&heard_pcm);
            assert_eq!(far.stats().presses, 0, "rate {rate} lead {lead}");
            for b in bursts(&heard_pcm) {
                worst = worst.max(b);
                total += b;
            }
            tones += digits.len();
        }
        let ms = |s: usize| s as f64 * 1000.0 / f64::from(rate);
        println!(
            "in-band DTMF at {rate} Hz: leaked onset at most {:.1} ms, {:.1} ms on average",
            ms(worst),
            ms(total) / tones as f64
        );
        assert!(ms(worst) <= 20.0, "{} ms leaked", ms(worst));
    }
}

#[test]
fn inband_dtmf_on_the_local_radio_and_switched_per_leg() {
    let rate = 8000;
    let mut st = Station::new(rate, true);
    st.set_local_radio(true);
    st.set_local_dtmf(true).expect("local");
    st.add_leg(spec(310, 9710, Slin), 0).expect("leg");
    let mut out = TickOutput::default();
    let mut got = Vec::new();
    let mut heard_pcm = Vec::new();
    for (k, frame) in dtmf_frames(rate, "*70", 60, 60, 37).iter().enumerate() {
        st.put_local(frame);
        tick(&mut st, &mut out, k as u64 * 20);
        got.extend(dtmf_events(&out));
        heard_pcm.extend(heard(&out, 310, addr(9710), Slin).unwrap_or_default());
    }
    assert_eq!(got, vec![(None, '*'), (None, '7'), (None, '0')]);
    let mut far = crate::dtmf::DtmfDetector::new(rate).expect("detector");
    let _ = far.process(&heard_pcm);
    assert_eq!(far.stats().presses, 0);

    // Off for the local radio, on for the leg afterwards.
    st.set_local_dtmf(false).expect("off");
    st.set_leg_dtmf(310, true).expect("leg on");
    assert_eq!(st.set_leg_dtmf(999, true), Err(MediaError::NoSuchLeg(999)));
    let mut got = Vec::new();
    let base = 100;
    for (k, frame) in dtmf_frames(rate, "5", 60, 60, 0).iter().enumerate() {
        let now = (base + k) as u64 * 20;
        st.put_local(frame);
        feed(&mut st, 310, Slin, frame, 100 + k as u32 * 20, now);
        tick(&mut st, &mut out, now);
        got.extend(dtmf_events(&out));
    }
    assert_eq!(got, vec![(Some(310), '5')]);
}
