//! Control events (KEY/UNKEY, hangup, text, DTMF, CNG) come out in order with the audio.

use super::*;

#[test]
fn unkey_arriving_before_the_last_audio_comes_out_after_it() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..50);
    delay(&mut arrivals, 980, 10);
    arrivals.push((T0 + 20 * 49 + 2, Pkt::C(983, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 60);
    let f = after(&log, 980);
    assert_eq!(
        f[..2],
        [Out::Control(ControlKind::Unkey, 983), Out::Silence]
    );
    assert!(f[2..].iter().all(|o| *o == Out::Silence));
    assert_eq!(jb.stats().lost, 0);
}

#[test]
fn unkey_arriving_ahead_of_several_frames_waits_for_them() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..50);
    // The UNKEY overtakes the last three frames.
    arrivals.push((T0 + 20 * 46 + 1, Pkt::C(983, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 60);
    let f = flat(&log);
    let unkey = first_control(&f);
    assert_eq!(f[unkey - 1], Out::Voice(980));
    assert_eq!(voices(&log).len(), 50);
}

#[test]
fn unkey_stamped_ahead_of_the_audio_ends_the_spurt_without_concealment() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..50);
    // Control frames carry the sender's real clock, here 150 ms ahead of its voice clock.
    arrivals.push((T0 + 20 * 49 + 1, Pkt::C(980 + 150, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 60);
    let unkey = Out::Control(ControlKind::Unkey, 1130);
    assert_eq!(after(&log, 980)[..2], [unkey, Out::Silence]);
    assert_eq!((jb.stats().lost, jb.stats().interpolated), (0, 0));
    // Audio from before the UNKEY that still turns up is late, not a new spurt.
    assert_eq!(put(&mut jb, Pkt::V(1100), T0 + 20 * 61), PutResult::Late);
}

#[test]
fn non_final_control_stamped_ahead_waits_for_its_time() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..50);
    arrivals.push((T0 + 20 * 49 + 1, Pkt::C(980 + 70, ControlKind::Dtmf(b'1'))));
    let log = run(&mut jb, &arrivals, T0 + 20 * 60);
    let dtmf = Out::Control(ControlKind::Dtmf(b'1'), 1050);
    let want = [Out::Interp(0), Out::Interp(1), dtmf, Out::Interp(2)];
    assert_eq!(after(&log, 980)[..4], want);
}

#[test]
fn late_unkey_is_delivered_at_the_next_get() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..50);
    // A retransmitted UNKEY, 600 ms after the last audio.
    arrivals.push((T0 + 20 * 79, Pkt::C(983, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 90);
    assert_eq!(voices(&log).len(), 50);
    let (when, outs) = log
        .iter()
        .find(|(_, o)| o.iter().any(|x| matches!(x, Out::Control(..))))
        .unwrap();
    assert_eq!(*when, T0 + 20 * 79);
    assert_eq!(
        outs,
        &vec![Out::Control(ControlKind::Unkey, 983), Out::Silence]
    );
    let s = jb.stats();
    assert_eq!(
        (s.control_out, s.lost),
        (1, 10),
        "the end of the spurt was concealed"
    );
}

#[test]
fn late_control_in_mid_stream_comes_before_the_current_audio() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..100);
    arrivals.push((T0 + 20 * 40 + 1, Pkt::C(503, ControlKind::Dtmf(b'5'))));
    let log = run(&mut jb, &arrivals, T0 + 20 * 102);
    let f = flat(&log);
    let at = first_control(&f);
    assert_eq!(f[at], Out::Control(ControlKind::Dtmf(b'5'), 503));
    // The tick after arrival: the audio of slot 800 (k = 40 - 2 + 1 ... ) follows it.
    assert_eq!(f[at + 1], Out::Voice(780));
    assert_eq!(voices(&log).len(), 100);
}

#[test]
fn key_at_spurt_start_precedes_its_audio_and_text_keeps_its_payload() {
    let mut jb = jb();
    assert_eq!(
        jb.put_control(0, ControlKind::Key, &[], T0),
        PutResult::Queued
    );
    assert_eq!(put(&mut jb, Pkt::V(0), T0), PutResult::Queued);
    assert_eq!(
        jb.put_control(5, ControlKind::Text, b"hello", T0 + 5),
        PutResult::Queued
    );
    assert_eq!(tick(&mut jb, T0), vec![Out::Silence]);
    assert_eq!(put(&mut jb, Pkt::V(20), T0 + 20), PutResult::Queued);
    assert_eq!(tick(&mut jb, T0 + 20), vec![Out::Silence]);
    assert_eq!(put(&mut jb, Pkt::V(40), T0 + 40), PutResult::Queued);
    assert_eq!(
        tick(&mut jb, T0 + 40),
        vec![Out::Control(ControlKind::Key, 0), Out::Voice(0)]
    );
    match jb.get(T0 + 60) {
        GetResult::Control { ts, kind, payload } => {
            assert_eq!((ts, kind, payload), (5, ControlKind::Text, &b"hello"[..]));
        }
        other => panic!("expected the text, got {other:?}"),
    }
    assert_eq!(tick(&mut jb, T0 + 60), vec![Out::Voice(20)]);
}

#[test]
fn the_first_voice_frame_is_never_a_discontinuity() {
    let mut jb = jb();
    // A text frame starts the timeline; the voice that follows uses a base 3 s away.
    assert_eq!(
        jb.put_control(10, ControlKind::Text, b"!NEWKEY1!", T0),
        PutResult::Queued
    );
    assert_eq!(put(&mut jb, Pkt::V(3000), T0 + 10), PutResult::Queued);
    let log = run_from(&mut jb, &stream(3000, 1..10), T0 + 20, T0 + 20 * 12);
    let f = flat(&log);
    assert_eq!(f[0], Out::Control(ControlKind::Text, 10));
    assert_eq!(
        voices(&log),
        (0..10).map(|k| 3000 + 20 * k).collect::<Vec<_>>()
    );
    assert_eq!(jb.stats().dropped, 0);
}

#[test]
fn control_far_in_the_future_is_placed_after_queued_audio() {
    let mut jb = jb();
    let log = run(&mut jb, &stream(0, 0..10), T0 + 20 * 9);
    assert_eq!(voices(&log).last(), Some(&140));
    // A clock jump on a control frame must not block or resync anything.
    assert_eq!(
        jb.put_control(500_000, ControlKind::Key, &[], T0 + 20 * 9 + 1),
        PutResult::Queued
    );
    let f: Vec<Out> = (10..13).flat_map(|k| tick(&mut jb, T0 + 20 * k)).collect();
    assert_eq!(
        f,
        vec![
            Out::Voice(160),
            Out::Voice(180),
            Out::Control(ControlKind::Key, 500_000),
            Out::Interp(0)
        ]
    );
    assert_eq!(jb.stats().resyncs, 0);
}

#[test]
fn control_queue_is_bounded_but_never_drops_for_lateness() {
    let mut jb = jb();
    for i in 0..CONTROL_SLOTS as u32 {
        assert_eq!(
            jb.put_control(i, ControlKind::Dtmf(b'1'), &[], T0),
            PutResult::Queued
        );
    }
    assert_eq!(
        jb.put_control(99, ControlKind::Text, &[], T0),
        PutResult::Dropped(DropReason::Full)
    );
    assert_eq!(
        jb.put_control(99, ControlKind::Text, &[0; 641], T0),
        PutResult::Dropped(DropReason::Oversize)
    );
    assert_eq!(jb.stats().control_dropped, 2);
    let f = tick(&mut jb, T0 + 100);
    assert_eq!(f.len(), CONTROL_SLOTS + 1);
}
