use super::*;
use crate::codec::Codec::{Alaw, Slin, Slin16, Ulaw};
use crate::frame::{parse, Frame, MiniFrame};
use std::f64::consts::PI;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn spec(callno: u16, port: u16, codec: Codec) -> LegSpec {
    LegSpec {
        callno,
        peer_callno: callno + 1000,
        peer: addr(port),
        codec,
        mode: LegMode::Transceive,
        keying: RxKeying::Always,
        call_ts_ms: 1000,
        dtmf: false,
        link: false,
        normalize: None,
    }
}

/// `n`-th 20 ms frame of a tone at `rate`, amplitude 8000.
fn tone(freq: f64, rate: u32, n: usize) -> Vec<i16> {
    let len = (rate / 50) as usize;
    (0..len)
        .map(|i| {
            let t = (n * len + i) as f64 / f64::from(rate);
            (8000.0 * (2.0 * PI * freq * t).sin()).round() as i16
        })
        .collect()
}

/// Power of `freq` in `x` relative to a full-amplitude-8000 tone (Goertzel), in dB.
fn tone_db(x: &[i16], freq: f64, rate: u32) -> f64 {
    let w = 2.0 * PI * freq / f64::from(rate);
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &v in x {
        let s = f64::from(v) + 2.0 * w.cos() * s1 - s2;
        s2 = s1;
        s1 = s;
    }
    let power = s1 * s1 + s2 * s2 - 2.0 * w.cos() * s1 * s2;
    let amp = 2.0 * power.sqrt() / x.len() as f64;
    20.0 * (amp / 8000.0).log10()
}

/// Feed leg `callno` one encoded frame of its codec as a full voice frame.
fn feed(st: &mut Station, callno: u16, codec: Codec, pcm: &[i16], ts: u32, now: u64) {
    let mut wire = Vec::new();
    codec.encode(pcm, &mut wire);
    assert_eq!(st.push_full_voice(callno, codec, ts, &wire, now), Ok(()));
}

/// `spec` with the receiver keyed by `keying`.
fn keyed(spec: LegSpec, keying: RxKeying) -> LegSpec {
    LegSpec { keying, ..spec }
}

/// `spec` taking part as `mode`.
fn in_mode(spec: LegSpec, mode: LegMode) -> LegSpec {
    LegSpec { mode, ..spec }
}

/// An 8 kHz station with µ-law leg `callno` (port `9400 + callno`) keyed by `keying`, and a
/// plain listener `callno + 1` on the next port.
fn keyed_pair(callno: u16, keying: RxKeying) -> Station {
    let port = 9400 + callno;
    let link = keyed(spec(callno, port, Ulaw), keying);
    station(8000, [link, spec(callno + 1, port + 1, Ulaw)])
}

/// A station at `rate` (mix-minus) with these legs, added at 0 ms.
fn station(rate: u32, legs: impl IntoIterator<Item = LegSpec>) -> Station {
    let mut st = Station::new(rate, true);
    for leg in legs {
        let callno = leg.callno;
        st.add_leg(leg, 0)
            .unwrap_or_else(|e| panic!("leg {callno}: {e}"));
    }
    st
}

/// Feed leg `callno` the `n`-th 20 ms frame of a `freq` tone in its codec as a full voice
/// frame, stamped `ts0 + 20 n` and arriving at `20 n` ms.
fn feed_tone(st: &mut Station, callno: u16, codec: Codec, freq: f64, n: usize, ts0: u32) {
    let pcm = tone(freq, codec.rate(), n);
    feed(st, callno, codec, &pcm, ts0 + n as u32 * 20, n as u64 * 20);
}

/// Frame numbers `n` of a run with their times (`20 n` ms).
fn frame_times(range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, u64)> {
    range.map(|n| (n, n as u64 * 20))
}

/// One tick at `now`, its output in the cleared `out`.
fn tick(st: &mut Station, out: &mut TickOutput, now: u64) {
    out.clear();
    st.tick(now, out);
}

/// Decode what went to `to` this tick (full voice event or mini frame) with `codec`.
fn heard(out: &TickOutput, callno: u16, to: SocketAddr, codec: Codec) -> Option<Vec<i16>> {
    let mut pcm = Vec::new();
    for e in &out.events {
        if let MediaEvent::FullVoice {
            callno: c, payload, ..
        } = e
        {
            if *c == callno {
                codec.decode(payload, &mut pcm).ok()?;
                return Some(pcm);
            }
        }
    }
    for d in &out.datagrams {
        if d.to == to {
            if let Ok(Frame::Mini(m)) = parse(&out.wire(d)) {
                assert_eq!(m.scall, callno);
                codec.decode(&m.payload, &mut pcm).ok()?;
                return Some(pcm);
            }
        }
    }
    None
}

#[test]
fn mixed_codec_members_hear_each_other_and_not_themselves() {
    // A µ-law leg (8 kHz) and a slin16 leg in a 16 kHz conference, both talking.
    let mut st = station(16000, [spec(10, 5000, Ulaw), spec(11, 5001, Slin16)]);
    let mut out = TickOutput::default();
    let (mut heard_a, mut heard_b) = (Vec::new(), Vec::new());
    for (n, now) in frame_times(0..60) {
        feed_tone(&mut st, 10, Ulaw, 600.0, n, 2000);
        feed_tone(&mut st, 11, Slin16, 1500.0, n, 2000);
        tick(&mut st, &mut out, now);
        if let Some(p) = heard(&out, 10, addr(5000), Ulaw) {
            heard_a.extend(p);
        }
        if let Some(p) = heard(&out, 11, addr(5001), Slin16) {
            heard_b.extend(p);
        }
    }
    assert!(heard_a.len() >= 160 * 40, "µ-law leg received audio");
    assert!(heard_b.len() >= 320 * 40, "slin16 leg received audio");
    // Skip the jitter-buffer and filter start-up; look at the steady state.
    let a = &heard_a[heard_a.len() - 160 * 20..];
    let b = &heard_b[heard_b.len() - 320 * 20..];
    // (what was heard, at which rate, the other's tone, its own tone, who heard it)
    for (x, rate, other, own, who) in [
        (a, 8000, 1500.0, 600.0, "µ-law"),
        (b, 16000, 600.0, 1500.0, "slin16"),
    ] {
        let (heard, echo) = (tone_db(x, other, rate), tone_db(x, own, rate));
        assert!(heard > -1.5, "{who} hears the other tone: {heard:.1} dB");
        assert!(echo < -40.0, "{who} does not hear itself: {echo:.1} dB");
    }
}

#[test]
fn first_frame_of_a_spurt_is_full_then_minis_then_spurt_end() {
    let mut st = station(8000, [spec(20, 6000, Ulaw), spec(21, 6001, Ulaw)]);
    let mut out = TickOutput::default();
    let mut kinds = Vec::new();
    for (n, now) in frame_times(0..40) {
        if n < 20 {
            feed_tone(&mut st, 20, Ulaw, 1000.0, n, 100);
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            match e {
                MediaEvent::FullVoice { callno: 21, ts, .. } => kinds.push(("full", *ts)),
                MediaEvent::SpurtEnded { callno: 21, ts } => kinds.push(("end", *ts)),
                _ => {}
            }
        }
        for d in &out.datagrams {
            assert_eq!(d.to, addr(6001), "the talker hears nothing");
            if let Ok(Frame::Mini(m)) = parse(&out.wire(d)) {
                kinds.push(("mini", u32::from(m.ts16)));
            }
        }
    }
    assert_eq!(kinds.first().map(|k| k.0), Some("full"));
    assert_eq!(kinds.iter().filter(|k| k.0 == "full").count(), 1);
    assert_eq!(kinds.last().map(|k| k.0), Some("end"));
    let minis: Vec<u32> = kinds
        .iter()
        .filter(|k| k.0 == "mini")
        .map(|k| k.1)
        .collect();
    assert!(minis.len() >= 15);
    assert!(
        minis.windows(2).all(|w| w[1] == w[0] + 20),
        "steady 20 ms timestamps"
    );
    // Timestamps continue the call's clock given at add_leg (1000 ms at t=0).
    assert!(kinds.first().is_some_and(|k| k.1 >= 1000 && k.1 % 20 == 0));
}

#[test]
fn full_voice_frame_again_when_the_upper_timestamp_bits_change() {
    let mut st = station(
        8000,
        [
            // crosses a 32 768 ms boundary after five frames
            LegSpec {
                call_ts_ms: 32_768 - 100,
                ..spec(30, 7000, Ulaw)
            },
            spec(31, 7001, Ulaw),
        ],
    );
    let mut out = TickOutput::default();
    let mut fulls = Vec::new();
    for (n, now) in frame_times(0..20) {
        feed_tone(&mut st, 31, Ulaw, 800.0, n, 500);
        tick(&mut st, &mut out, now);
        for e in &out.events {
            if let MediaEvent::FullVoice { callno: 30, ts, .. } = e {
                fulls.push(*ts);
            }
        }
    }
    assert_eq!(fulls.len(), 2, "{fulls:?}");
    assert!(fulls[0] < 32_768 && fulls[1] >= 32_768);
}

#[test]
fn control_events_come_out_in_order_after_the_audio_before_them() {
    let mut st = station(8000, [spec(40, 8000, Ulaw)]);
    let mut out = TickOutput::default();
    let mut order = Vec::new();
    for (n, now) in frame_times(0..30) {
        if n < 10 {
            feed_tone(&mut st, 40, Ulaw, 1000.0, n, 100);
        }
        if n == 9 {
            // UNKEY stamped right after the last audio frame, arriving with it.
            st.push_control(40, ControlKind::Unkey, 100 + 10 * 20, &[], now)
                .expect("control");
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            if let MediaEvent::Control { kind, ts, .. } = e {
                order.push((*kind, *ts, n));
            }
        }
    }
    assert_eq!(order.len(), 1);
    assert_eq!(order[0].0, ControlKind::Unkey);
    assert!(
        order[0].2 >= 10,
        "UNKEY is played out after the ten audio frames"
    );
}

#[test]
fn a_mini_frame_before_any_full_voice_frame_asks_for_vnak_once() {
    let mut st = station(8000, [spec(50, 9000, Ulaw)]);
    let mini = MiniFrame {
        scall: 1050,
        ts16: 40,
        payload: vec![0xFF; 160],
    };
    let mut events = Vec::new();
    assert!(st.on_mini(addr(9000), &mini, 0, &mut events));
    assert!(st.on_mini(addr(9000), &mini, 20, &mut events));
    assert_eq!(events, vec![MediaEvent::MiniBeforeFull { callno: 50 }]);
    // Unknown peer or call number: not routed.
    assert!(!st.on_mini(addr(9001), &mini, 40, &mut events));
}

#[test]
fn mini_frames_route_to_their_leg_and_unwrap_timestamps() {
    let mut st = station(8000, [spec(60, 9100, Ulaw), spec(61, 9101, Ulaw)]);
    let mut out = TickOutput::default();
    let mut got = 0;
    // The peer's clock is just below a 16-bit wrap: minis must unwrap past it.
    let base = 0x0001_FFC0u32;
    feed(&mut st, 60, Ulaw, &tone(1000.0, 8000, 0), base, 0);
    for (n, now) in frame_times(1..30) {
        let ts = base.wrapping_add(n as u32 * 20);
        let mut wire = Vec::new();
        Ulaw.encode(&tone(1000.0, 8000, n), &mut wire);
        let mini = MiniFrame {
            scall: 1060,
            ts16: (ts & 0xFFFF) as u16,
            payload: wire,
        };
        let mut ev = Vec::new();
        assert!(st.on_mini(addr(9100), &mini, now, &mut ev));
        tick(&mut st, &mut out, now);
        if heard(&out, 61, addr(9101), Ulaw).is_some() {
            got += 1;
        }
    }
    assert!(got >= 25, "listener heard {got} frames");
    let stats = st.jitter_stats(60).expect("stats");
    assert_eq!(stats.lost, 0);
}

#[test]
fn topology_changes_live_without_dropping_legs() {
    let mut st = station(8000, [spec(70, 9200, Ulaw), spec(71, 9201, Ulaw)]);
    let mut out = TickOutput::default();
    let mut a_heard_itself = false;
    for (n, now) in frame_times(0..60) {
        feed_tone(&mut st, 70, Ulaw, 1000.0, n, 100);
        match n {
            20 => st.set_mix_minus(false),
            30 => st.set_local_radio(true),
            40 => {
                st.set_local_radio(false);
                st.set_mix_minus(true);
            }
            _ => {}
        }
        if (31..40).contains(&n) {
            st.put_local(&tone(400.0, 8000, n));
        }
        tick(&mut st, &mut out, now);
        if (24..30).contains(&n) && heard(&out, 70, addr(9200), Ulaw).is_some() {
            a_heard_itself = true; // full mix: the talker hears itself
        }
        if (35..40).contains(&n) {
            assert!(st.local_hears_audio());
            assert!(tone_db(st.local_output(), 1000.0, 8000) > -2.0);
            // b hears both the talker and the local radio.
            let b = heard(&out, 71, addr(9201), Ulaw).expect("b hears");
            assert!(tone_db(&b, 400.0, 8000) > -3.0);
        }
        if n > 45 {
            assert!(
                heard(&out, 70, addr(9200), Ulaw).is_none(),
                "mix-minus again"
            );
            assert!(
                heard(&out, 71, addr(9201), Ulaw).is_some(),
                "b never lost audio"
            );
        }
    }
    assert!(a_heard_itself);
    assert_eq!(st.leg_count(), 2);
}

#[test]
fn receive_only_and_transmit_only_legs() {
    let mut st = station(
        8000,
        [
            // we monitor it: it is heard, hears nothing
            in_mode(spec(80, 9300, Ulaw), LegMode::ReceiveOnly),
            // it monitors us: hears, is not heard
            in_mode(spec(81, 9301, Ulaw), LegMode::TransmitOnly),
            spec(82, 9302, Ulaw),
        ],
    );
    let mut out = TickOutput::default();
    for (n, now) in frame_times(0..30) {
        feed_tone(&mut st, 80, Ulaw, 700.0, n, 100);
        feed_tone(&mut st, 81, Ulaw, 1200.0, n, 100);
        tick(&mut st, &mut out, now);
        assert!(heard(&out, 80, addr(9300), Ulaw).is_none());
        if n > 10 {
            let normal = heard(&out, 82, addr(9302), Ulaw).expect("normal hears");
            assert!(tone_db(&normal, 700.0, 8000) > -2.0);
            assert!(tone_db(&normal, 1200.0, 8000) < -40.0);
            assert!(heard(&out, 81, addr(9301), Ulaw).is_some());
        }
    }
}

#[test]
fn no_buffer_growth_over_100k_ticks() {
    let mut st = Station::new(16000, true);
    let codecs = [Ulaw, Alaw, Slin, Slin16];
    for c in 0..8u16 {
        let mut leg = spec(100 + c, 9500 + c, codecs[usize::from(c) % 4]);
        leg.dtmf = c % 2 == 0;
        st.add_leg(leg, 0).expect("leg");
    }
    st.set_local_radio(true);
    st.set_local_dtmf(true).expect("local dtmf");
    let wires: Vec<Vec<u8>> = codecs
        .iter()
        .map(|c| {
            let mut w = Vec::new();
            c.encode(&tone(500.0, c.rate(), 0), &mut w);
            w
        })
        .collect();
    let mut out = TickOutput::default();
    let mut cap = 0;
    for (n, now) in frame_times(0..100_000) {
        for c in 0..8u16 {
            // Half the legs talk in bursts, so spurts start and end all the time.
            if (n / 50 + usize::from(c)) % 2 == 0 {
                let i = usize::from(c) % 4;
                st.push_full_voice(100 + c, codecs[i], 100 + n as u32 * 20, &wires[i], now)
                    .expect("voice");
            }
        }
        tick(&mut st, &mut out, now);
        if n == 1000 {
            cap = st.buffer_capacity();
        }
    }
    assert_eq!(st.buffer_capacity(), cap);
    assert!(out.datagrams.capacity() < 64 && out.events.capacity() < 64);
    assert!(out.payloads.len() <= 8, "payload buffers are reused");
}

#[test]
fn removing_legs_keeps_the_others_routed() {
    let mut st = Station::new(8000, true);
    for c in 0..5u16 {
        st.add_leg(spec(90 + c, 9400 + c, Ulaw), 0).expect("leg");
    }
    assert_eq!(
        st.add_leg(spec(92, 1, Ulaw), 0),
        Err(MediaError::LegExists(92))
    );
    st.remove_leg(90).expect("remove first");
    st.remove_leg(92).expect("remove middle");
    assert_eq!(st.remove_leg(92), Err(MediaError::NoSuchLeg(92)));
    assert_eq!(st.leg_count(), 3);
    let mini = MiniFrame {
        scall: 1094,
        ts16: 0,
        payload: vec![0xFF; 160],
    };
    let mut ev = Vec::new();
    assert!(
        st.on_mini(addr(9404), &mini, 0, &mut ev),
        "moved leg still routed"
    );
    assert!(!st.on_mini(addr(9400), &mini, 0, &mut ev));
}

fn rx_keys(out: &TickOutput, callno: u16) -> Vec<bool> {
    out.events
        .iter()
        .filter_map(|e| match e {
            MediaEvent::RxKey { callno: c, keyed } if *c == callno => Some(*keyed),
            _ => None,
        })
        .collect()
}

fn silence(rate: u32) -> Vec<i16> {
    vec![0; (rate / 50) as usize]
}

#[test]
fn voice_keyed_link_keys_on_voice_and_unkeys_on_unkey_or_linger() {
    let mut st = keyed_pair(200, RxKeying::Voice);
    let mut out = TickOutput::default();
    let mut edges = Vec::new();
    let mut heard = 0;
    for (n, now) in frame_times(0..80) {
        let ts = 100 + n as u32 * 20;
        // Spurt one ends with RADIO_UNKEY; spurt two just stops.
        if n < 15 || (30..45).contains(&n) {
            feed(&mut st, 200, Ulaw, &tone(900.0, 8000, n), ts, now);
        }
        if n == 14 {
            st.push_control(200, ControlKind::Unkey, ts + 20, &[], now)
                .expect("unkey");
        }
        tick(&mut st, &mut out, now);
        for k in rx_keys(&out, 200) {
            edges.push((k, n));
        }
        if heard_frame(&out, 201, addr(9601)) {
            heard += 1;
        }
    }
    let kinds: Vec<bool> = edges.iter().map(|e| e.0).collect();
    assert_eq!(kinds, vec![true, false, true, false], "{edges:?}");
    // The second spurt unkeys by linger: concealment first, then 50 ms without audio.
    let (second_on, second_off) = (edges[2].1, edges[3].1);
    assert!(second_off > second_on + 14, "{edges:?}");
    assert!(
        heard >= 28,
        "the listener heard both spurts ({heard} frames)"
    );
}

fn heard_frame(out: &TickOutput, callno: u16, to: SocketAddr) -> bool {
    out.events
        .iter()
        .any(|e| matches!(e, MediaEvent::FullVoice { callno: c, .. } if *c == callno))
        || out.datagrams.iter().any(|d| d.to == to)
}

#[test]
fn control_keyed_link_is_mixed_only_between_key_and_unkey() {
    let mut st = keyed_pair(210, RxKeying::Control);
    let mut out = TickOutput::default();
    let (mut heard_at, mut edges) = (Vec::new(), Vec::new());
    for (n, now) in frame_times(0..60) {
        let ts = 100 + n as u32 * 20;
        // A legacy peer streams voice all the time; only KEY..UNKEY counts.
        feed(&mut st, 210, Ulaw, &tone(700.0, 8000, n), ts, now);
        if n == 20 {
            st.push_control(210, ControlKind::Key, ts, &[], now)
                .expect("key");
        }
        if n == 40 {
            st.push_control(210, ControlKind::Unkey, ts, &[], now)
                .expect("unkey");
        }
        tick(&mut st, &mut out, now);
        edges.extend(rx_keys(&out, 210));
        if heard_frame(&out, 211, addr(9611)) {
            heard_at.push(n);
        }
    }
    assert_eq!(edges, vec![true, false]);
    assert!(!heard_at.is_empty());
    assert!(
        heard_at.iter().all(|&n| (20..46).contains(&n)),
        "{heard_at:?}"
    );
}

#[test]
fn vox_call_streaming_silence_does_not_hold_the_conference() {
    let mut st = keyed_pair(220, RxKeying::Vox);
    let mut out = TickOutput::default();
    let (mut heard_at, mut edges) = (Vec::new(), Vec::new());
    let hang = (VOX_HANG_MS / 20) as usize;
    for (n, now) in frame_times(0..(40 + hang + 20)) {
        let ts = 100 + n as u32 * 20;
        // Silence, then 20 frames of speech-level tone, then silence for good.
        let pcm = if (20..40).contains(&n) {
            tone(500.0, 8000, n)
        } else {
            silence(8000)
        };
        feed(&mut st, 220, Ulaw, &pcm, ts, now);
        tick(&mut st, &mut out, now);
        edges.extend(rx_keys(&out, 220));
        if heard_frame(&out, 221, addr(9621)) {
            heard_at.push(n);
        }
    }
    assert_eq!(edges, vec![true, false]);
    let first = heard_at.first().copied().unwrap_or(0);
    let last = heard_at.last().copied().unwrap_or(0);
    // Silence before speech is not sent, except the few frames the gate looks ahead.
    assert!(
        first >= 20 - VOX_LOOKAHEAD_FRAMES,
        "silence before speech is not sent: {heard_at:?}"
    );
    // The gate holds over the hang time, then closes although frames keep coming.
    assert!(last >= 40 && last < 40 + hang + 8, "{heard_at:?}");
}

/// A frame of a 500 Hz tone whose mean power is `dbfs`.
fn tone_at(dbfs: f64, n: usize) -> Vec<i16> {
    // A sine's mean power is its peak's minus 3 dB; `tone` peaks at 8000.
    let gain = 32768.0 * 10f64.powf((dbfs + 3.0) / 20.0) / 8000.0;
    tone(500.0, 8000, n)
        .iter()
        .map(|&s| (f64::from(s) * gain).round() as i16)
        .collect()
}

#[test]
fn vox_call_passes_a_weak_word_onset() {
    // A word that starts below the VOX threshold (a soft fricative) and swells: its weak first
    // frames reach the listener, with the rest of the word, through the gate's look-ahead. It
    // sees as far as the jitter buffer holds: at least its 40 ms margin, two frames.
    let mut st = keyed_pair(240, RxKeying::Vox);
    let mut out = TickOutput::default();
    let onset = [-60.0, -55.0];
    let mut levels = Vec::new();
    for (n, now) in frame_times(0..60) {
        let ts = 100 + n as u32 * 20;
        let pcm = match n {
            0..20 => silence(8000),
            20..22 => tone_at(onset[n - 20], n),
            22..40 => tone_at(-20.0, n),
            _ => silence(8000),
        };
        feed(&mut st, 240, Ulaw, &pcm, ts, now);
        tick(&mut st, &mut out, now);
        if let Some(pcm) = heard(&out, 241, addr(9641), Ulaw) {
            levels.push(crate::jitter::level_dbfs(&pcm));
        }
    }
    // Every frame of the word was heard, the weak onset first and in order.
    let start = levels
        .iter()
        .position(|&l| l > -70)
        .unwrap_or_else(|| panic!("nothing heard: {levels:?}"));
    let word = &levels[start..start + 20];
    assert!(levels[..start].iter().all(|&l| l <= -70), "{levels:?}");
    for (i, want) in onset.iter().enumerate() {
        assert!(
            (f64::from(word[i]) - want).abs() <= 2.0,
            "onset frame {i}: {} dBFS heard, {want} sent ({levels:?})",
            word[i]
        );
    }
    assert!(word[2..].iter().all(|&l| (l + 20).abs() <= 2), "{levels:?}");
}

#[test]
fn local_key_sends_one_unbroken_spurt_and_ends_it_on_unkey() {
    let mut st = station(16000, [spec(230, 9630, Ulaw), spec(231, 9631, Slin16)]);
    let mut out = TickOutput::default();
    let mut starts = Vec::new();
    let mut frames = 0;
    let mut ended = Vec::new();
    for (n, now) in frame_times(0..50) {
        if n == 10 {
            st.set_local_keyed(true);
        }
        if n == 30 {
            st.set_local_keyed(false);
        }
        // A microphone frame only every other tick: keyed, the gaps are filled.
        if n % 2 == 0 {
            st.put_local(&tone(440.0, 16000, n));
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            match e {
                MediaEvent::FullVoice {
                    callno: 230,
                    spurt_start,
                    ..
                } => {
                    frames += 1;
                    if *spurt_start {
                        starts.push(n);
                    }
                }
                MediaEvent::SpurtEnded { callno: 230, .. } => ended.push(n),
                _ => {}
            }
        }
        frames += out.datagrams.iter().filter(|d| d.to == addr(9630)).count();
    }
    assert_eq!(starts, vec![10]);
    assert_eq!(frames, 20, "one frame per keyed tick, silence included");
    assert_eq!(ended, vec![30]);
    assert!(!st.local_radio(), "keying does not make the radio a member");
}

#[test]
fn local_tx_reports_when_the_local_radio_starts_and_stops_hearing_audio() {
    let mut st = station(8000, [spec(250, 9650, Ulaw)]);
    st.set_local_radio(true);
    let mut out = TickOutput::default();
    let mut edges = Vec::new();
    for (n, now) in frame_times(0..40) {
        if (10..20).contains(&n) {
            feed_tone(&mut st, 250, Ulaw, 700.0, n, 100);
        }
        if n == 30 {
            st.set_local_radio(false);
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            if let MediaEvent::LocalTx { on } = e {
                edges.push((n, *on));
            }
        }
    }
    // On with the first frame the jitter buffer plays, off when it stops delivering (and
    // concealment has faded out); one edge each way.
    assert_eq!(edges.len(), 2, "{edges:?}");
    assert!(edges[0].1);
    assert!(!edges[1].1);
    assert!(edges[0].0 >= 10 && edges[1].0 > edges[0].0 && edges[1].0 < 30);
}

#[test]
fn a_gated_local_receiver_is_heard_only_while_keyed() {
    let mut st = station(8000, [spec(260, 9660, Ulaw)]);
    st.set_local_radio(true);
    st.set_local_gated(true);
    let mut out = TickOutput::default();
    let mut heard_at = Vec::new();
    for n in 0..30usize {
        match n {
            10 => st.set_local_keyed(true),
            20 => st.set_local_keyed(false),
            _ => {}
        }
        st.put_local(&tone(500.0, 8000, n));
        tick(&mut st, &mut out, n as u64 * 20);
        if heard(&out, 260, addr(9660), Ulaw).is_some() {
            heard_at.push(n);
        }
    }
    assert_eq!(heard_at, (10..20).collect::<Vec<_>>());
    st.set_local_gated(false);
    st.put_local(&tone(500.0, 8000, 30));
    tick(&mut st, &mut out, 600);
    assert!(
        heard(&out, 260, addr(9660), Ulaw).is_some(),
        "ungated: by level"
    );
}

#[test]
fn set_leg_keying_resets_the_keyed_state() {
    let mut st = station(8000, [keyed(spec(240, 9640, Ulaw), RxKeying::Voice)]);
    let mut out = TickOutput::default();
    feed(&mut st, 240, Ulaw, &tone(900.0, 8000, 0), 100, 0);
    for n in 0..5u64 {
        tick(&mut st, &mut out, n * 20);
    }
    let mut events = Vec::new();
    st.set_leg_keying(240, RxKeying::Control, &mut events)
        .expect("keying");
    assert_eq!(
        events,
        vec![MediaEvent::RxKey {
            callno: 240,
            keyed: false
        }]
    );
    assert_eq!(
        st.set_leg_keying(999, RxKeying::Voice, &mut events),
        Err(MediaError::NoSuchLeg(999))
    );
}

#[test]
fn a_local_only_leg_is_heard_by_the_local_radio_alone() {
    for member in [true, false] {
        let mut st = Station::new(8000, true);
        st.set_local_radio(member);
        let mut local = spec(300, 9700, Slin);
        local.mode = LegMode::LocalOnly;
        st.add_leg(local, 0).expect("local monitor link");
        st.add_leg(spec(301, 9701, Slin), 0).expect("call");
        let mut out = TickOutput::default();
        let mut heard_locally = 0;
        for (n, now) in frame_times(0..20) {
            feed_tone(&mut st, 300, Slin, 700.0, n, 100);
            tick(&mut st, &mut out, now);
            // Nothing goes to the call, and nothing back to the monitored node.
            assert!(out.datagrams.is_empty(), "member {member}");
            assert!(!out.events.iter().any(
                |e| matches!(e, MediaEvent::FullVoice { callno, .. } if *callno == 301 || *callno == 300)
            ));
            if st.local_speaker() && tone_db(st.local_output(), 700.0, 8000) > -1.0 {
                heard_locally += 1;
                // It keys the local transmitter only where the radio is a member.
                assert_eq!(st.local_hears_audio(), member);
            }
        }
        assert!(heard_locally >= 15, "member {member}: {heard_locally}");
    }
}

#[test]
fn listeners_hearing_the_same_mix_share_one_encode_and_payload() {
    let mut st = station(8000, [spec(300, 9700, Ulaw), spec(301, 9701, Ulaw)]);
    for c in 0..10u16 {
        st.add_leg(spec(310 + c, 9710 + c, Ulaw), 0)
            .expect("µ-law listener");
    }
    st.add_leg(spec(320, 9720, Alaw), 0).expect("A-law");
    st.add_leg(spec(321, 9721, Slin16), 0).expect("slin16");
    let mut out = TickOutput::default();
    for (n, now) in frame_times(0..20) {
        feed_tone(&mut st, 300, Ulaw, 500.0, n, 100);
        feed_tone(&mut st, 301, Ulaw, 1300.0, n, 100);
        tick(&mut st, &mut out, now);
    }
    // Steady state: every leg sends a mini frame.
    assert_eq!(out.datagrams.len(), 14);
    // Two talkers (each its own mix-minus), one µ-law and one A-law payload shared by the
    // listeners, and the resampled slin16 leg's own.
    assert_eq!(out.payload_count(), 5);
    let shared: Vec<usize> = out
        .datagrams
        .iter()
        .filter(|d| (9710..9720).contains(&d.to.port()))
        .map(|d| d.payload)
        .collect();
    assert_eq!(shared.len(), 10);
    assert!(shared.iter().all(|&p| p == shared[0]));
    // Same payload, own header: the mini frame names each listener's call.
    for d in &out.datagrams {
        let Ok(Frame::Mini(m)) = parse(&out.wire(d)) else {
            panic!("not a mini frame")
        };
        assert_eq!(m.scall, d.to.port() - 9700 + 300);
    }
    // The shared payload is the plain mix: both talkers.
    let heard = heard(&out, 310, addr(9710), Ulaw).expect("listener hears");
    assert!(tone_db(&heard, 500.0, 8000) > -2.0);
    assert!(tone_db(&heard, 1300.0, 8000) > -2.0);
    let a = heard_at(&out, addr(9700), Ulaw);
    assert!(
        tone_db(&a, 500.0, 8000) < -30.0,
        "mix-minus: a does not hear itself"
    );
}

fn heard_at(out: &TickOutput, to: SocketAddr, codec: Codec) -> Vec<i16> {
    let mut pcm = Vec::new();
    for d in out.datagrams.iter().filter(|d| d.to == to) {
        codec.decode(out.payload(d), &mut pcm).expect("decode");
    }
    pcm
}

fn dtmf_events(out: &TickOutput) -> Vec<(Option<u16>, char)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            MediaEvent::Dtmf { callno, digit } => Some((*callno, *digit)),
            _ => None,
        })
        .collect()
}

/// `digits` from the project's generator, `on_ms` tones and `off_ms` gaps, starting `lead`
/// samples into the first frame, then silence, cut into 20 ms frames.
fn dtmf_frames(rate: u32, digits: &str, on_ms: u32, off_ms: u32, lead: usize) -> Vec<Vec<i16>> {
    let mut g = crate::dtmf::DtmfGenerator::new(rate).expect("generator");
    let per = |ms: u32| (rate * ms / 1000) as usize;
    let mut sig = vec![0i16; per(40) + lead];
    for d in digits.chars() {
        g.start(d, on_ms, -10.0).expect("digit");
        let mut t = vec![0i16; per(on_ms + GENERATOR_TAIL_MS)];
        let _ = g.fill(&mut t);
        sig.extend_from_slice(&t);
        sig.extend(std::iter::repeat_n(0, per(off_ms)));
    }
    sig.extend(std::iter::repeat_n(0, per(200)));
    let n = (rate / 50) as usize;
    sig.chunks(n)
        .map(|c| {
            let mut f = c.to_vec();
            f.resize(n, 0);
            f
        })
        .collect()
}

/// The generator's envelope adds this much after the key-down time.
const GENERATOR_TAIL_MS: u32 = 5;

/// Runs of non-zero samples in `x`, in samples.
fn bursts(x: &[i16]) -> Vec<usize> {
    let mut runs = Vec::new();
    let (mut run, mut gap) = (0usize, 0usize);
    for &v in x {
        if v != 0 {
            // Two tones cross zero together now and then: a short zero run is not a gap.
            run += gap + 1;
            gap = 0;
        } else if run > 0 {
            gap += 1;
            if gap > 8 {
                runs.push(run);
                run = 0;
                gap = 0;
            }
        }
    }
    if run > 0 {
        runs.push(run);
    }
    runs
}

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

fn play_events(out: &TickOutput) -> Vec<PlayerEvent> {
    out.events
        .iter()
        .filter_map(|e| match e {
            MediaEvent::Play(p) => Some(*p),
            _ => None,
        })
        .collect()
}

#[test]
fn announcements_reach_their_destinations_only() {
    let mut st = station(8000, [spec(400, 9800, Slin)]);
    let mut link = spec(401, 9801, Slin);
    link.link = true;
    link.keying = RxKeying::Voice;
    st.add_leg(link, 0).expect("link");
    let mut monitor = spec(402, 9802, Slin);
    monitor.mode = LegMode::ReceiveOnly;
    st.add_leg(monitor, 0).expect("monitored link");
    let clip = |n: usize| tone(1000.0, 8000, 0).repeat(n);
    let mut out = TickOutput::default();
    let mut events = Vec::new();
    let mut now = 0u64;
    let mut run = |st: &mut Station, ticks: usize, f: &mut dyn FnMut(&TickOutput, &Station)| {
        for _ in 0..ticks {
            tick(st, &mut out, now);
            now += 20;
            f(&out, st);
        }
    };

    // to_monitor: the local output only, with the local radio out of the conference.
    st.play(1, clip(3), Destination::Monitor, false, &mut events)
        .expect("monitor");
    let mut ticks_heard = 0;
    run(&mut st, 4, &mut |out, st| {
        assert!(out.datagrams.is_empty());
        assert!(!out
            .events
            .iter()
            .any(|e| matches!(e, MediaEvent::FullVoice { .. })));
        if st.local_speaker() {
            ticks_heard += 1;
            assert!(tone_db(st.local_output(), 1000.0, 8000) > -1.0);
            assert!(!st.local_hears_audio(), "a monitor clip keys nothing");
        }
    });
    assert_eq!(ticks_heard, 3);

    // to_air: the calls and the local output, not the links; the transmitter stays unkeyed.
    st.play(2, clip(3), Destination::Air, false, &mut events)
        .expect("air");
    let mut started = Vec::new();
    run(&mut st, 4, &mut |out, st| {
        if let Some(pcm) = heard(out, 400, addr(9800), Slin) {
            assert!(tone_db(&pcm, 1000.0, 8000) > -1.0);
            started.push(play_events(out));
        }
        assert!(heard(out, 401, addr(9801), Slin).is_none());
        assert!(heard(out, 402, addr(9802), Slin).is_none());
        assert!(!st.local_hears_audio());
    });
    assert_eq!(started.len(), 3);
    assert_eq!(started[0], vec![PlayerEvent::Started { id: 2 }]);
    assert_eq!(
        started[2],
        vec![PlayerEvent::Finished {
            id: 2,
            completed: true
        }]
    );

    // to_air_and_links: the transceive link too, as a talk spurt; keys_local keys the
    // local transmitter while it plays.
    st.play(3, clip(2), Destination::AirAndLinks, true, &mut events)
        .expect("links");
    let mut link_frames = 0;
    let mut keyed = 0;
    run(&mut st, 3, &mut |out, st| {
        if heard(out, 401, addr(9801), Slin).is_some() {
            link_frames += 1;
        }
        assert!(heard(out, 402, addr(9802), Slin).is_none());
        if st.local_hears_audio() {
            keyed += 1;
        }
    });
    assert_eq!((link_frames, keyed), (2, 2));
    assert!(events.is_empty());
}

#[test]
fn an_announcement_mixes_over_a_talker_and_a_refused_one_still_finishes() {
    let mut st = station(16000, [spec(410, 9810, Slin16), spec(411, 9811, Ulaw)]);
    let mut events = Vec::new();
    let clip = tone(1500.0, 16000, 0).repeat(10);
    st.play(7, clip, Destination::Air, false, &mut events)
        .expect("play");
    let mut out = TickOutput::default();
    let mut both = 0;
    for (n, now) in frame_times(0..8) {
        feed_tone(&mut st, 410, Slin16, 500.0, n, 100);
        tick(&mut st, &mut out, now);
        if let Some(pcm) = heard(&out, 411, addr(9811), Ulaw) {
            if tone_db(&pcm, 500.0, 8000) > -2.0 && tone_db(&pcm, 1500.0, 8000) > -2.0 {
                both += 1;
            }
        }
    }
    assert!(
        both >= 6,
        "{both} frames carried the talker and the announcement"
    );
    let too_long = vec![0i16; 16 * 200_000];
    assert!(matches!(
        st.play(8, too_long, Destination::Air, false, &mut events),
        Err(MediaError::Player(PlayerError::TooLong { .. }))
    ));
    assert_eq!(
        events,
        vec![MediaEvent::Play(PlayerEvent::Finished {
            id: 8,
            completed: false
        })]
    );
    events.clear();
    st.stop_playing(7, &mut events);
    assert_eq!(
        events,
        vec![MediaEvent::Play(PlayerEvent::Finished {
            id: 7,
            completed: false
        })]
    );
}

#[test]
fn activity_edges_follow_talkers_with_a_hang_and_ignore_announcements() {
    let mut st = station(8000, [spec(420, 9820, Slin)]);
    let mut events = Vec::new();
    let clip = tone(700.0, 8000, 0).repeat(5);
    st.play(1, clip, Destination::Air, false, &mut events)
        .expect("play");
    let mut out = TickOutput::default();
    let mut edges = Vec::new();
    for (n, now) in frame_times(0..80) {
        // Talks for frames 10..30 with a 100 ms pause (a breath) in the middle.
        if (10..30).contains(&n) && !(18..23).contains(&n) {
            feed_tone(&mut st, 420, Slin, 500.0, n, 100);
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            if let MediaEvent::Activity { active } = e {
                edges.push((*active, n));
            }
        }
    }
    let kinds: Vec<bool> = edges.iter().map(|e| e.0).collect();
    assert_eq!(kinds, vec![true, false], "{edges:?}");
    let quiet_at = edges[1].1;
    // The last talk frame plays out around frame 30, its concealment lasts up to
    // CONCEAL_MAX_FRAMES more; the hang adds 25 ticks.
    let tail = crate::jitter::CONCEAL_MAX_FRAMES;
    assert!((30 + 24..=30 + 27 + tail).contains(&quiet_at), "{edges:?}");
}

fn parrot_settings() -> ParrotSettings {
    ParrotSettings {
        playback_delay_ms: 100,
        silence_gap_ms: 100,
        vox_threshold_db: -40.0,
    }
}

#[test]
fn in_parrot_mode_each_member_hears_only_itself_back() {
    let mut st = station(8000, [spec(430, 9830, Slin)]);
    st.set_parrot(Some(parrot_settings()));
    st.add_leg(spec(431, 9831, Slin), 0)
        .expect("b, added in parrot mode");
    let mut out = TickOutput::default();
    let (mut a_back, mut b_heard) = (Vec::new(), 0);
    let mut a_sent = Vec::new();
    for (n, now) in frame_times(0..40) {
        if (2..12).contains(&n) {
            let f = tone(900.0, 8000, n);
            a_sent.extend_from_slice(&f);
            feed(&mut st, 430, Slin, &f, 100 + n as u32 * 20, now);
        }
        tick(&mut st, &mut out, now);
        if let Some(pcm) = heard(&out, 430, addr(9830), Slin) {
            a_back.push((n, pcm));
        }
        if heard(&out, 431, addr(9831), Slin).is_some() {
            b_heard += 1;
        }
        assert!(!out
            .events
            .iter()
            .any(|e| matches!(e, MediaEvent::Activity { .. })));
    }
    assert_eq!(b_heard, 0, "nobody else hears a parrot");
    let back: Vec<i16> = a_back.iter().flat_map(|(_, f)| f.clone()).collect();
    // The preroll (silence), the ten frames sample for sample, then the jitter buffer's
    // fading concealment (what the conference would have mixed too) and the start of the
    // quiet that ended the recording.
    let frames = back.len() / 160;
    // The default concealment (pitch) is silent after CONCEAL_MAX_FRAMES.
    let fade = crate::jitter::CONCEAL_MAX_FRAMES;
    let tail = crate::parrot::TAIL_FRAMES;
    assert!(
        (PREROLL + 10..=PREROLL + 10 + fade + tail).contains(&frames),
        "{frames}"
    );
    assert_eq!(&back[PREROLL * 160..(PREROLL + 10) * 160], &a_sent[..]);
    // Talk ends at frame 11, plays out of the jitter buffer a few ticks later and fades;
    // then 100 ms of quiet (5 ticks) end the recording, and it plays 100 ms later.
    let first = a_back[0].0;
    assert!((11 + 10..=11 + 10 + 2 + fade).contains(&first), "{first}");

    // Back to the conference: b hears a again, live.
    st.set_parrot(None);
    let mut b_live = 0;
    for (n, now) in frame_times(40..50) {
        feed_tone(&mut st, 430, Slin, 900.0, n, 100);
        tick(&mut st, &mut out, now);
        if heard(&out, 431, addr(9831), Slin).is_some() {
            b_live += 1;
        }
    }
    assert!(b_live >= 8);
    assert!(st.parrot().is_none());
}

const PREROLL: usize = crate::parrot::PREROLL_FRAMES;

#[test]
fn the_local_radio_parrots_too_when_it_is_a_member() {
    let mut st = Station::new(16000, true);
    st.set_local_radio(true);
    st.set_parrot(Some(parrot_settings()));
    let mut out = TickOutput::default();
    let mut back = 0;
    for n in 0..40usize {
        if (2..8).contains(&n) {
            st.put_local(&tone(600.0, 16000, n));
        }
        tick(&mut st, &mut out, n as u64 * 20);
        if st.local_speaker() && tone_db(st.local_output(), 600.0, 16000) > -1.0 {
            back += 1;
            assert!(st.local_hears_audio());
        }
    }
    assert_eq!(back, 6);
}

/// Frame `n` of a syllabic test voice at `rate`: the first 12 harmonics of 140 Hz (a voiced
/// sound, not a tone) under a 4 Hz envelope, about `amp` at its peaks.
fn voice_frame(rate: u32, n: usize, amp: f64) -> Vec<i16> {
    let len = (rate / 50) as usize;
    (0..len)
        .map(|i| {
            let t = (n * len + i) as f64 / f64::from(rate);
            let env = (PI * 4.0 * t).sin().powi(2);
            let x: f64 = (1..=12)
                .map(|h| {
                    (2.0 * PI * 140.0 * f64::from(h) * t + f64::from(h * h)).sin() / f64::from(h)
                })
                .sum();
            (amp / 3.0 * env * x).round() as i16
        })
        .collect()
}

#[test]
fn legs_carry_meters_and_a_normalised_voice_reaches_the_target() {
    use crate::loudness::{LoudnessMeter, NormalizeSettings};
    let settings = NormalizeSettings {
        target_lufs: -24.0,
        max_gain_db: 18.0,
    };
    // A quiet talker (leg 10, normalised by the station's default), a loud one (leg 11, its
    // own override keeps it as it comes), and a listener (leg 12) on a link.
    let quiet = spec(10, 9810, Slin);
    let loud = LegSpec {
        normalize: Some(false),
        ..spec(11, 9811, Slin)
    };
    let listener = LegSpec {
        link: true,
        ..spec(12, 9812, Slin)
    };
    let mut st = station(8000, [quiet, loud, listener]);
    st.set_normalize(true, settings);
    let mut out = TickOutput::default();
    let mut heard_quiet = LoudnessMeter::new(8000);
    // 8 s of the quiet talker, then 8 s of the loud one.
    for (n, now) in frame_times(0..800) {
        let (callno, amp) = if n < 400 { (10, 1500.0) } else { (11, 24000.0) };
        feed(
            &mut st,
            callno,
            Slin,
            &voice_frame(8000, n, amp),
            2000 + now as u32,
            now,
        );
        tick(&mut st, &mut out, now);
        if let Some(pcm) = heard(&out, 12, addr(9812), Slin) {
            if (200..400).contains(&n) {
                heard_quiet.feed(&pcm);
            }
        }
    }
    let mut levels = Levels::default();
    st.fill_levels(&mut levels);
    let by = |c: u16| levels.legs.iter().find(|l| l.callno == c).copied();
    let (q, l, li) = (by(10).unwrap(), by(11).unwrap(), by(12).unwrap());
    let arrived_quiet = q.rx.short_term_lufs;
    // What arrives is metered as it came, and the gain is what brings it to the target.
    assert!(arrived_quiet < -35.0, "{q:?}");
    let gain = q.gain_db.expect("normalised");
    assert!((arrived_quiet + gain - -24.0).abs() < 0.5, "{q:?}");
    assert!(l.gain_db.is_none() && l.rx.short_term_lufs > -20.0, "{l:?}");
    // The listener heard the quiet talker (its last 4 s, once learnt) at the target.
    let heard = heard_quiet.reading().short_term_lufs;
    assert!((heard - -24.0).abs() < 0.5, "{heard}");
    // Each talker hears the other: its own mix, its own meter; the listener's reading is
    // what it was sent last, the loud talker as it came.
    assert!(
        (li.tx.short_term_lufs - l.rx.short_term_lufs).abs() < 0.5,
        "{li:?} {l:?}"
    );
    assert!(levels.local.is_some());
    // Normalisation off again: no leg keeps a normaliser.
    st.set_normalize(false, settings);
    st.fill_levels(&mut levels);
    assert!(levels.legs.iter().all(|l| l.gain_db.is_none()));
}
