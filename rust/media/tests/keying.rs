//! Who is heard when: voice- and control-keyed links, VOX calls, the local radio's key and gate.

use super::*;

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
