//! Announcements to their destinations, over talkers, and activity edges.

use super::*;

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
