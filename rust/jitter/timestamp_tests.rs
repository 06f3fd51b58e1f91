//! Timestamps: the 16- and 32-bit wraps, clock jumps and resynchronisation.

use super::*;

#[test]
fn mini_frame_timestamps_across_the_16_bit_wrap() {
    let mut jb = jb();
    let base: u32 = 65_536 - 1_000;
    let mut last = base; // the full voice frame that started the call
    let mut arrivals = Vec::new();
    for k in 0..150u32 {
        let truth = base + 20 * k;
        let ts = unwrap_mini(last, (truth & 0xFFFF) as u16);
        assert_eq!(ts, truth);
        last = ts;
        arrivals.push((T0 + 20 * u64::from(k), Pkt::V(ts)));
    }
    let log = run(&mut jb, &arrivals, T0 + 20 * 151);
    assert_eq!(
        voices(&log),
        (0..150).map(|k| base + 20 * k).collect::<Vec<_>>()
    );
    assert_eq!(jb.stats().lost, 0);
}

#[test]
fn timestamps_across_the_32_bit_wrap() {
    let mut jb = jb();
    let base = u32::MAX - 999;
    let log = run(&mut jb, &stream(base, 0..150), T0 + 20 * 151);
    let want: Vec<u32> = (0..150).map(|k| base.wrapping_add(20 * k)).collect();
    assert!(want.iter().any(|&t| t < 1000), "the stream wraps");
    assert_eq!(voices(&log), want);
    let s = jb.stats();
    assert_eq!((s.lost, s.late, s.resyncs, s.reordered), (0, 0, 0, 0));
}

fn clock_jump(new_base: u32) {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..200);
    arrivals.extend((200..400u32).map(|k| {
        (
            T0 + 20 * u64::from(k),
            Pkt::V(new_base.wrapping_add(20 * (k - 200))),
        )
    }));
    let mut results = Vec::new();
    let mut log = Vec::new();
    let mut now = T0;
    for (at, pkt) in &arrivals {
        results.push(put(&mut jb, *pkt, *at));
        log.push((now, tick(&mut jb, now)));
        now += 20;
    }
    assert!(results[..200].iter().all(|r| *r == PutResult::Queued));
    assert_eq!(
        results[200..203],
        [PutResult::Dropped(DropReason::Discontinuity); 3]
    );
    assert_eq!(results[203], PutResult::Resynced);
    assert!(results[204..].iter().all(|r| *r == PutResult::Queued));
    let resumed = Out::Voice(new_base.wrapping_add(60));
    let want = [Out::Interp(0), Out::Interp(1), Out::Interp(2), resumed];
    assert_eq!(after(&log, 3980)[..4], want);
    let played = voices(&log);
    assert_eq!(
        played.len(),
        200 + 197 - 2,
        "all but the 3 dropped (and the last 2 still queued)"
    );
    let s = jb.stats();
    assert_eq!((s.resyncs, s.dropped, s.lost, s.late), (1, 3, 3, 0));
    assert_eq!(s.current_ms, 40);
}

#[test]
fn peer_clock_jumping_forward_resyncs_after_four_discontinuities() {
    clock_jump(100_000);
}

#[test]
fn peer_clock_restarting_resyncs_after_four_discontinuities() {
    clock_jump(0);
    clock_jump(u32::MAX - 30);
}

#[test]
fn a_single_discontinuity_is_dropped_without_resync() {
    let mut jb = jb();
    let log = run(&mut jb, &stream(0, 0..20), T0 + 20 * 19);
    assert_eq!(voices(&log).len(), 18);
    assert_eq!(
        put(&mut jb, Pkt::V(900_000), T0 + 20 * 20),
        PutResult::Dropped(DropReason::Discontinuity)
    );
    assert_eq!(put(&mut jb, Pkt::V(400), T0 + 20 * 20), PutResult::Queued);
    assert_eq!(
        put(&mut jb, Pkt::V(900_020), T0 + 20 * 21),
        PutResult::Dropped(DropReason::Discontinuity)
    );
    assert_eq!(jb.stats().resyncs, 0);
}

#[test]
fn resync_can_be_disabled() {
    let mut jb = jb_with(|c| c.resync_threshold_ms = 0);
    let _ = run(&mut jb, &stream(0, 0..20), T0 + 20 * 19);
    for k in 20..30u32 {
        let r = put(&mut jb, Pkt::V(900_000 + 20 * k), T0 + 20 * u64::from(k));
        assert_eq!(r, PutResult::Dropped(DropReason::TooFar), "frame {k}");
    }
    assert_eq!(jb.stats().resyncs, 0);
}
