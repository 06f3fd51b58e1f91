//! Parrot mode: each member hears itself back.

use super::*;

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
