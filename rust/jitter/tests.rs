use super::config::MAX_VOICE_SLOTS;
use super::*;
use proptest::prelude::*;

/// The delay changes only in pauses: the tests that feed levels.
#[path = "pause_tests.rs"]
mod pause;

/// Control events keep their order with the audio.
#[path = "control_tests.rs"]
mod control;

/// Adapting to the jitter.
#[path = "adapt_tests.rs"]
mod adapt;

/// Timestamps, wraps and resyncs.
#[path = "timestamp_tests.rs"]
mod timestamps;

const T0: u64 = 1_000;

/// An owned copy of one `get` result.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Voice(u32),
    Interp(u32),
    Silence,
    Control(ControlKind, u32),
    Dropped(u32),
}

#[derive(Debug, Clone, Copy)]
enum Pkt {
    V(u32),
    C(u32, ControlKind),
}

fn payload_for(ts: u32) -> [u8; 8] {
    let b = ts.to_le_bytes();
    [b[0], b[1], b[2], b[3], !b[0], !b[1], !b[2], !b[3]]
}

fn jb() -> JitterBuffer {
    JitterBuffer::new(JitterConfig::default()).unwrap()
}

/// A buffer with one setting changed from the defaults.
fn jb_with(change: impl FnOnce(&mut JitterConfig)) -> JitterBuffer {
    let mut cfg = JitterConfig::default();
    change(&mut cfg);
    JitterBuffer::new(cfg).unwrap()
}

/// Calls `get` until the tick is filled; checks voice payloads on the way.
fn tick(jb: &mut JitterBuffer, now: u64) -> Vec<Out> {
    let mut outs = Vec::new();
    for _ in 0..(CONTROL_SLOTS + MAX_VOICE_SLOTS + 4) {
        let r = jb.get(now);
        let end = r.ends_tick();
        outs.push(match r {
            GetResult::Voice { ts, payload } => {
                assert_eq!(payload, &payload_for(ts)[..], "payload of {ts}");
                Out::Voice(ts)
            }
            GetResult::Interpolate { nth } => Out::Interp(nth),
            GetResult::Silence => Out::Silence,
            GetResult::Control { ts, kind, .. } => Out::Control(kind, ts),
            GetResult::Dropped { ts } => Out::Dropped(ts),
        });
        if end {
            jb.check_invariants();
            return outs;
        }
    }
    panic!("get never filled the tick: {outs:?}");
}

fn put(jb: &mut JitterBuffer, pkt: Pkt, now: u64) -> PutResult {
    let r = match pkt {
        Pkt::V(ts) => jb.put_voice(ts, &payload_for(ts), now),
        Pkt::C(ts, kind) => jb.put_control(ts, kind, &[], now),
    };
    jb.check_invariants();
    r
}

/// Delivers `arrivals` (time, packet) and ticks every frame from `T0` to `until`
/// (inclusive); packets due at a tick are put before that tick's `get`s.
fn run(jb: &mut JitterBuffer, arrivals: &[(u64, Pkt)], until: u64) -> Vec<(u64, Vec<Out>)> {
    run_from(jb, arrivals, T0, until)
}

fn run_from(
    jb: &mut JitterBuffer,
    arrivals: &[(u64, Pkt)],
    from: u64,
    until: u64,
) -> Vec<(u64, Vec<Out>)> {
    let mut arrivals = arrivals.to_vec();
    arrivals.sort_by_key(|a| a.0);
    let mut next = 0;
    let mut log = Vec::new();
    let mut now = from;
    while now <= until {
        while let Some(&(at, pkt)) = arrivals.get(next) {
            if at > now {
                break;
            }
            let _ = put(jb, pkt, at);
            next += 1;
        }
        log.push((now, tick(jb, now)));
        now += 20;
    }
    log
}

fn flat(log: &[(u64, Vec<Out>)]) -> Vec<Out> {
    log.iter().flat_map(|(_, o)| o.iter().cloned()).collect()
}

/// Everything played after voice frame `ts`.
fn after(log: &[(u64, Vec<Out>)], ts: u32) -> Vec<Out> {
    let f = flat(log);
    let at = f.iter().position(|o| *o == Out::Voice(ts));
    f[at.expect("frame played") + 1..].to_vec()
}

fn voices(log: &[(u64, Vec<Out>)]) -> Vec<u32> {
    flat(log)
        .into_iter()
        .filter_map(|o| match o {
            Out::Voice(ts) => Some(ts),
            _ => None,
        })
        .collect()
}

/// Frames `ts = base + 20 k` for k in `range`, each arriving at `T0 + 20 k`.
fn stream(base: u32, range: std::ops::Range<u32>) -> Vec<(u64, Pkt)> {
    range
        .map(|k| (T0 + 20 * u64::from(k), Pkt::V(base.wrapping_add(20 * k))))
        .collect()
}

/// `arrivals` without the voice frames whose timestamps `lost` picks (never sent).
fn without(arrivals: Vec<(u64, Pkt)>, lost: impl Fn(u32) -> bool) -> Vec<(u64, Pkt)> {
    let kept = |a: &(u64, Pkt)| !matches!(a.1, Pkt::V(ts) if lost(ts));
    arrivals.into_iter().filter(kept).collect()
}

/// Voice frame `ts` of `arrivals` arrives `by_ms` later.
fn delay(arrivals: &mut [(u64, Pkt)], ts: u32, by_ms: u64) {
    for a in arrivals
        .iter_mut()
        .filter(|a| matches!(a.1, Pkt::V(t) if t == ts))
    {
        a.0 += by_ms;
    }
}

/// Where the first control event was played.
fn first_control(f: &[Out]) -> usize {
    let at = f.iter().position(|o| matches!(o, Out::Control(..)));
    at.expect("a control event played")
}

/// Deterministic generator for the jitter scenarios (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

// ---------------------------------------------------------------- unwrap_mini

#[test]
fn unwrap_mini_inside_one_period_is_plain() {
    assert_eq!(unwrap_mini(0x0001_2000, 0x2010), 0x0001_2010);
    assert_eq!(unwrap_mini(0x0001_2000, 0x1FF0), 0x0001_1FF0);
    assert_eq!(unwrap_mini(0, 0), 0);
}

#[test]
fn unwrap_mini_at_the_16_bit_edge() {
    // Low bits wrapped before a full frame raised `last`: pushed forward.
    assert_eq!(unwrap_mini(0x0000_FFF0, 0x0004), 0x0001_0004);
    assert_eq!(unwrap_mini(0x0000_FFEC, 0x0000), 0x0001_0000);
    // A straggler from before the wrap after `last` crossed it: pushed back.
    assert_eq!(unwrap_mini(0x0001_0005, 0xFFF0), 0x0000_FFF0);
    assert_eq!(unwrap_mini(0x0001_0000, 0xFFFF), 0x0000_FFFF);
    // Exactly 50 000 ms either side is kept as is; one more flips to the other period.
    assert_eq!(unwrap_mini(0x0000_0000, 50_000), 50_000);
    assert_eq!(
        unwrap_mini(0x0000_0000, 50_001),
        50_001u32.wrapping_sub(0x1_0000)
    );
    assert_eq!(unwrap_mini(0x0000_FFFF, 0xFFFF - 50_000), 0xFFFF - 50_000);
    assert_eq!(unwrap_mini(0x0000_FFFF, 0xFFFF - 50_001), 0x1_FFFF - 50_001);
}

#[test]
fn unwrap_mini_at_the_32_bit_edge() {
    assert_eq!(unwrap_mini(0xFFFF_FFF0, 0x0005), 0x0000_0005);
    assert_eq!(unwrap_mini(0x0000_0005, 0xFFF0), 0xFFFF_FFF0);
    assert_eq!(unwrap_mini(u32::MAX, 0xFFFF), u32::MAX);
    assert_eq!(unwrap_mini(u32::MAX, 0x0000), 0);
}

proptest! {
    #[test]
    fn unwrap_mini_is_exact_near_last(last in any::<u32>(), delta in -15_535i32..=15_535) {
        let truth = last.wrapping_add(delta as u32);
        prop_assert_eq!(unwrap_mini(last, (truth & 0xFFFF) as u16), truth);
    }

    #[test]
    fn unwrap_mini_stays_within_the_window(last in any::<u32>(), ts16 in any::<u16>()) {
        let r = unwrap_mini(last, ts16);
        prop_assert_eq!(r & 0xFFFF, u32::from(ts16));
        let d = r.wrapping_sub(last) as i32;
        prop_assert!((-MINI_TS_WINDOW_MS..=MINI_TS_WINDOW_MS).contains(&d));
    }
}

// ---------------------------------------------------------------- delay history

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn history_matches_a_naive_window(
        delays in prop::collection::vec(prop_oneof![-300i64..300, Just(0i64), any::<i64>()], 0..1100),
    ) {
        let mut h = DelayHistory::new();
        for (n, &d) in delays.iter().enumerate() {
            h.push(d);
            let mut window: Vec<i64> = delays[(n + 1).saturating_sub(HISTORY_LEN)..=n].to_vec();
            window.sort_unstable();
            prop_assert_eq!(&h.sorted[..h.len], &window[..]);
            let idx = window.len() * HISTORY_DROP_PCT / 100;
            let lo = window[idx];
            let hi = window[window.len() - 1 - idx];
            prop_assert_eq!(h.estimate(), (lo, hi.saturating_sub(lo).max(0)));
        }
    }
}

#[test]
fn history_percentiles_ignore_three_percent_outliers() {
    let mut h = DelayHistory::new();
    assert_eq!(h.estimate(), (0, 0));
    for k in 0..500 {
        // 15 very late and 15 very early frames among steady 30 ms delays.
        h.push(match k % 100 {
            50..=52 => 900,
            53..=55 => -900,
            _ => 30,
        });
    }
    assert_eq!(h.estimate(), (30, 0));
    h.push(900); // a 16th late one replaces a steady delay and now counts
    assert_eq!(h.estimate(), (30, 870));
    h.clear();
    assert_eq!(h.estimate(), (0, 0));
}

// ---------------------------------------------------------------- conceal

#[test]
fn conceal_repeats_then_fades_to_silence() {
    let last: Vec<i16> = (0..160)
        .map(|i| if i % 2 == 0 { 10_000 } else { -10_000 })
        .collect();
    let mut frames = Vec::new();
    for nth in 0..5 {
        let mut out = vec![7i16; 160];
        conceal(&last, &mut out, nth);
        frames.push(out);
    }
    assert_eq!(frames[0][0], 10_000, "the first sample is the last frame's");
    assert_eq!(frames[0][1], -9_979);
    let env: Vec<i32> = frames
        .iter()
        .flatten()
        .map(|&s| i32::from(s).abs())
        .collect();
    assert!(
        env.windows(2).all(|w| w[1] <= w[0]),
        "the envelope only falls"
    );
    assert!(
        frames[2].iter().any(|&s| s != 0),
        "still audible in the 3rd frame"
    );
    assert!(frames[3].iter().all(|&s| s == 0) && frames[4].iter().all(|&s| s == 0));
    // Same sign pattern as the repeated frame while audible.
    assert!(frames[1]
        .iter()
        .zip(&last)
        .all(|(&o, &l)| o == 0 || o.signum() == l.signum()));
}

#[test]
fn conceal_handles_mismatched_and_empty_frames() {
    let mut out = [1i16; 8];
    conceal(&[], &mut out, 0);
    assert_eq!(out, [0; 8]);
    let mut out = [0i16; 6];
    conceal(&[100, -100], &mut out, 0);
    assert_eq!(out[..4], [100, -94, 88, -83]);
    let mut none: [i16; 0] = [];
    conceal(&[1, 2, 3], &mut none, 0);
    let mut out = [5i16; 3];
    conceal(&[i16::MIN, i16::MAX], &mut out, 0);
    assert_eq!(out[0], i16::MIN);
}

// ---------------------------------------------------------------- config

#[test]
fn config_defaults_and_validation() {
    let d = JitterConfig::default();
    assert_eq!(
        (
            d.frame_ms,
            d.max_jitterbuf_ms,
            d.resync_threshold_ms,
            d.max_contig_interp,
            d.target_extra_ms
        ),
        (20, 1000, 1000, 10, 40)
    );
    assert!(d.validate().is_ok());
    let bad = JitterConfig { frame_ms: 0, ..d };
    let err = JitterBuffer::new(bad).unwrap_err();
    assert_eq!(
        err,
        JitterError::InvalidConfig {
            field: "frame_ms",
            allowed: "1..=1000"
        }
    );
    assert_eq!(
        err.to_string(),
        "invalid jitter buffer config: frame_ms must be 1..=1000"
    );
    let refused: [fn(&mut JitterConfig); 4] = [
        |c| c.max_jitterbuf_ms = 10,
        |c| c.max_payload = 0,
        |c| c.max_payload = 9000,
        |c| (c.frame_ms, c.max_jitterbuf_ms) = (1, 60_000),
    ];
    for change in refused {
        let mut bad = d;
        change(&mut bad);
        assert!(JitterBuffer::new(bad).is_err(), "{bad:?}");
    }
    let big = JitterBuffer::new(JitterConfig {
        frame_ms: 10,
        max_jitterbuf_ms: 4000,
        ..d
    })
    .unwrap();
    assert_eq!(big.config().max_jitterbuf_ms, 4000);
}

// ---------------------------------------------------------------- playout

#[test]
fn clean_stream_plays_out_exactly() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..100);
    arrivals.push((T0 + 20 * 99, Pkt::C(20 * 99 + 3, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 110);
    for (i, (_, outs)) in log.iter().enumerate() {
        let want = match i {
            0 | 1 => vec![Out::Silence],
            2..=101 => vec![Out::Voice(20 * (i as u32 - 2))],
            102 => vec![Out::Control(ControlKind::Unkey, 1983), Out::Silence],
            _ => vec![Out::Silence],
        };
        assert_eq!(outs, &want, "tick {i}");
    }
    let s = jb.stats();
    assert_eq!(
        (s.frames_in, s.frames_out, s.lost, s.late, s.dropped),
        (100, 100, 0, 0, 0)
    );
    assert_eq!(
        (s.interpolated, s.reordered, s.duplicate, s.resyncs),
        (0, 0, 0, 0)
    );
    assert_eq!(
        (s.current_ms, s.target_ms, s.jitter_ms, s.min_ms, s.delay_ms),
        (40, 40, 0, 0, 40)
    );
    assert_eq!(
        (s.control_in, s.control_out, s.queued, s.talking),
        (1, 1, 0, false)
    );
}

#[test]
fn single_loss_is_concealed_once_and_a_late_arrival_moves_it_to_late() {
    let mut jb = jb();
    let mut arrivals = without(stream(0, 0..60), |ts| ts == 400);
    let log = run(&mut jb, &arrivals, T0 + 20 * 40);
    assert_eq!(after(&log, 380)[..2], [Out::Interp(0), Out::Voice(420)]);
    let s = jb.stats();
    assert_eq!((s.lost, s.interpolated, s.late), (1, 1, 0));

    // Frame 400 turns up after its slot: late, and no longer counted as lost.
    assert_eq!(put(&mut jb, Pkt::V(400), T0 + 20 * 41), PutResult::Late);
    let s = jb.stats();
    assert_eq!((s.lost, s.late), (0, 1));
    arrivals.clear();
}

#[test]
fn burst_loss_interpolates_then_goes_silent_and_resumes_at_the_same_delay() {
    let mut jb = jb();
    let arrivals = without(stream(0, 0..80), |ts| (400..700).contains(&ts));
    let log = run(&mut jb, &arrivals, T0 + 20 * 60);
    // Frame k plays at tick k + 2 while the delay is 40 ms.
    for (i, (_, outs)) in log.iter().enumerate() {
        let want = match i {
            0 | 1 => Out::Silence,
            2..=21 | 37.. => Out::Voice(20 * (i as u32 - 2)),
            22..=31 => Out::Interp(i as u32 - 22),
            _ => Out::Silence,
        };
        assert_eq!(outs, &vec![want], "tick {i}");
    }
    let s = jb.stats();
    assert_eq!((s.lost, s.interpolated, s.current_ms), (10, 10, 40));
}

#[test]
fn off_grid_timestamps_and_a_wobbly_tick_still_play_every_frame() {
    // Sender timestamps 7 ms off the 20 ms grid with ±3 ms of rounding wobble, and an
    // engine timer that fires up to 8 ms late.
    let mut rng = Rng(3);
    let mut jb = jb();
    let mut played = Vec::new();
    let mut sent = Vec::new();
    for k in 0..500u64 {
        let tick_at = T0 + 20 * k + rng.below(9);
        let ts = 20 * k as u32 + 7 + rng.below(7) as u32 - 3;
        sent.push(ts);
        assert_eq!(put(&mut jb, Pkt::V(ts), T0 + 20 * k), PutResult::Queued);
        for o in tick(&mut jb, tick_at) {
            if let Out::Voice(ts) = o {
                played.push(ts);
            }
        }
    }
    assert_eq!(played[..], sent[..played.len()]);
    assert!(played.len() >= 497);
    let s = jb.stats();
    assert_eq!((s.lost, s.late, s.dropped), (0, 0, 0));
}

#[test]
fn max_contig_interp_zero_conceals_forever() {
    let mut jb = jb_with(|c| c.max_contig_interp = 0);
    let log = run(&mut jb, &stream(0, 0..10), T0 + 20 * 40);
    let f = flat(&log);
    assert_eq!(f.last(), Some(&Out::Interp(28)));
    assert!(jb.stats().talking);
}

#[test]
fn reordered_frames_come_out_in_order() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..100);
    // Frame 1000 (k = 50) arrives after frame 1020, still before its slot.
    delay(&mut arrivals, 1000, 25);
    arrivals.push((T0 + 20 * 99, Pkt::C(1983, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 101);
    assert_eq!(voices(&log), (0..100).map(|k| 20 * k).collect::<Vec<_>>());
    assert!(flat(&log)
        .iter()
        .all(|o| matches!(o, Out::Voice(_) | Out::Silence)));
    let s = jb.stats();
    assert_eq!((s.reordered, s.lost, s.late, s.interpolated), (1, 0, 0, 0));
}

#[test]
fn early_reorder_grows_the_delay_instead_of_losing() {
    let mut jb = jb();
    // Frame 200 arrives right after frame 220, in the same millisecond.
    let mut arrivals = without(stream(0, 0..40), |ts| ts == 200);
    arrivals.push((T0 + 220, Pkt::V(200)));
    arrivals.push((T0 + 20 * 39, Pkt::C(783, ControlKind::Unkey)));
    let log = run(&mut jb, &arrivals, T0 + 20 * 45);
    assert_eq!(voices(&log), (0..40).map(|k| 20 * k).collect::<Vec<_>>());
    // While the history is short one outlier counts: the delay grows by one frame,
    // concealed in the tick where the late frame 200 showed up.
    assert_eq!(after(&log, 160)[..2], [Out::Interp(0), Out::Voice(180)]);
    let s = jb.stats();
    assert_eq!((s.reordered, s.lost, s.late, s.interpolated), (1, 0, 0, 1));
    // With 40 delays in the history the single outlier is discarded again; the extra
    // frame of delay stays (shrinking needs a 40 ms excess).
    assert_eq!((s.jitter_ms, s.target_ms, s.current_ms), (0, 40, 60));
}

#[test]
fn duplicates_are_counted_and_played_once() {
    let mut jb = jb();
    let mut arrivals = stream(0, 0..100);
    arrivals.push((T0 + 20 * 51, Pkt::V(1000))); // while still queued
    arrivals.push((T0 + 20 * 60, Pkt::V(1000))); // after it was played
    arrivals.push((T0 + 20 * 61, Pkt::V(1200))); // played as well
    let log = run(&mut jb, &arrivals, T0 + 20 * 101);
    assert_eq!(voices(&log), (0..100).map(|k| 20 * k).collect::<Vec<_>>());
    let s = jb.stats();
    assert_eq!(
        (s.duplicate, s.frames_in, s.frames_out, s.late, s.lost),
        (3, 103, 100, 0, 0)
    );
    assert_eq!(s.reordered, 0, "duplicates are not reorders");
}

// ---------------------------------------------------------------- limits

#[test]
fn oversize_and_too_far_frames_are_dropped() {
    let mut jb = jb();
    assert_eq!(
        jb.put_voice(0, &[0; 641], T0),
        PutResult::Dropped(DropReason::Oversize)
    );
    assert_eq!(put(&mut jb, Pkt::V(0), T0), PutResult::Queued);
    // 1 s ahead of the queued audio on the same timeline, but within the resync window.
    assert_eq!(
        put(&mut jb, Pkt::V(1000), T0 + 300),
        PutResult::Dropped(DropReason::TooFar)
    );
    assert_eq!(put(&mut jb, Pkt::V(980), T0 + 300), PutResult::Queued);
    assert_eq!(jb.stats().dropped, 2);
}

#[test]
fn frames_played_past_are_late_in_silence_too() {
    let mut jb = jb();
    let unkey = (T0 + 20 * 21, Pkt::C(383, ControlKind::Unkey));
    let _ = run(
        &mut jb,
        &[stream(0, 0..20), vec![unkey]].concat(),
        T0 + 20 * 30,
    );
    assert!(!jb.stats().talking);
    assert_eq!(
        put(&mut jb, Pkt::V(360), T0 + 20 * 31),
        PutResult::Duplicate
    );
    assert_eq!(put(&mut jb, Pkt::V(370), T0 + 20 * 31), PutResult::Late);
    assert_eq!(put(&mut jb, Pkt::V(2000), T0 + 2000), PutResult::Queued);
}

#[test]
fn rr_values_follow_the_counters() {
    let mut jb = jb();
    assert_eq!(
        jb.rr_values(),
        RrValues {
            delay: 40,
            ..RrValues::default()
        }
    );
    // 100 frames, 4 of them never sent, 1 sent twice, 1 reordered.
    let mut arrivals = without(stream(0, 0..100), |ts| [400, 800, 1200, 1600].contains(&ts));
    arrivals.push((T0 + 20 * 70, Pkt::V(1380)));
    delay(&mut arrivals, 1800, 25);
    arrivals.push((T0 + 20 * 99, Pkt::C(1983, ControlKind::Unkey)));
    let _ = run(&mut jb, &arrivals, T0 + 20 * 110);
    let s = jb.stats();
    assert_eq!(
        (s.lost, s.frames_out, s.duplicate, s.reordered),
        (4, 96, 1, 1)
    );
    let rr = jb.rr_values();
    assert_eq!(rr.loss_percent(), 4);
    assert_eq!(rr.lost_frames(), 4);
    assert_eq!(rr.loss, (4 << 24) | 4);
    assert_eq!((rr.pkts, rr.dropped, rr.ooo), (97, 0, 1));
    assert_eq!(u32::from(rr.delay), u32::try_from(s.delay_ms).unwrap());
    assert_eq!(i64::from(rr.jitter), s.jitter_ms);
    // A new interval without loss reports 0 % but keeps the running total.
    let mut more = stream(0, 120..140);
    more.push((T0 + 20 * 139, Pkt::C(20 * 139 + 3, ControlKind::Unkey)));
    let _ = run_from(&mut jb, &more, T0 + 20 * 111, T0 + 20 * 150);
    assert_eq!(jb.stats().frames_out, 116);
    let rr = jb.rr_values();
    assert_eq!((rr.loss_percent(), rr.lost_frames()), (0, 4));
}

#[test]
fn reset_forgets_everything() {
    let mut jb = jb();
    let _ = run(&mut jb, &stream(0, 0..30), T0 + 20 * 20);
    let caps = jb.capacities();
    jb.reset();
    assert_eq!(
        jb.stats(),
        JitterStats {
            current_ms: 40,
            target_ms: 40,
            delay_ms: 40,
            quiet_below_dbfs: QUIET_DBFS,
            ..JitterStats::default()
        }
    );
    jb.check_invariants();
    assert_eq!(jb.capacities(), caps);
    let log = run(&mut jb, &stream(777, 0..10), T0 + 20 * 11);
    assert_eq!(voices(&log).first(), Some(&777));
}

// ---------------------------------------------------------------- robustness

#[derive(Debug, Clone)]
enum Op {
    Voice { ts: u32, len: usize },
    Control { ts: u32, kind: u8, len: usize },
    Get,
    Tick,
    Advance(u64),
    SetNow(u64),
    Rr,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u32>(), 0usize..700).prop_map(|(ts, len)| Op::Voice { ts, len }),
        4 => (0u32..4000, 0usize..700).prop_map(|(ts, len)| Op::Voice { ts: ts * 5, len }),
        2 => (any::<u32>(), 0u8..8, 0usize..700).prop_map(|(ts, kind, len)| Op::Control { ts, kind, len }),
        3 => Just(Op::Get),
        4 => Just(Op::Tick),
        3 => (0u64..3000).prop_map(Op::Advance),
        1 => any::<u64>().prop_map(Op::SetNow),
        1 => Just(Op::Rr),
    ]
}

fn config() -> impl Strategy<Value = JitterConfig> {
    (
        1u32..=60,
        1u32..=30,
        0u32..=2,
        0u32..=12,
        0u32..=100,
        0u32..=100,
    )
        .prop_map(
            |(frame_ms, frames, resync, max_contig_interp, target_extra_ms, intervals)| {
                JitterConfig {
                    frame_ms,
                    max_jitterbuf_ms: frame_ms * frames,
                    resync_threshold_ms: resync * 500,
                    max_contig_interp,
                    target_extra_ms,
                    max_payload: 640,
                    grow_interval_ms: intervals,
                    shrink_interval_ms: intervals * 5,
                    shrink_empty_interval_ms: intervals / 2,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_sequences(cfg in config(), ops in prop::collection::vec(op(), 0..300)) {
        let mut jb = JitterBuffer::new(cfg).unwrap();
        let caps = jb.capacities();
        let mut now = 0u64;
        let kinds = [
            ControlKind::Key, ControlKind::Unkey, ControlKind::Hangup, ControlKind::Cng,
            ControlKind::Dtmf(b'#'), ControlKind::Text,
            ControlKind::Other { frametype: 4, subclass: 20 }, ControlKind::Key,
        ];
        for op in ops {
            match op {
                Op::Voice { ts, len } => { let _ = jb.put_voice(ts, &vec![1; len], now); }
                Op::Control { ts, kind, len } => {
                    let _ = jb.put_control(ts, kinds[usize::from(kind)], &vec![2; len], now);
                }
                Op::Get => { let _ = jb.get(now); }
                Op::Tick => {
                    let queued = jb.stats().queued;
                    let mut n = 0;
                    while !jb.get(now).ends_tick() {
                        n += 1;
                        prop_assert!(n <= queued, "a tick took more items than were queued");
                    }
                }
                Op::Advance(d) => now = now.saturating_add(d),
                Op::SetNow(t) => now = t,
                Op::Rr => {
                    let rr = jb.rr_values();
                    prop_assert!(rr.loss_percent() <= 100);
                }
            }
            jb.check_invariants();
        }
        prop_assert_eq!(jb.capacities(), caps);
    }
}

/// Ticks `jb` at `now` and, when the tick conceals, what `next_voice` then offers.
fn tick_ahead(jb: &mut JitterBuffer, now: u64) -> (Vec<Out>, Option<(usize, Vec<u8>)>) {
    let outs = tick(jb, now);
    let ahead = match outs.last() {
        Some(Out::Interp(_)) => jb.next_voice().map(|(gap, p)| (gap, p.to_vec())),
        _ => None,
    };
    (outs, ahead)
}

/// Frames 0-19 arriving 40 ms after their time, frames 5 and 10-14 never: what `next_voice`
/// offers at each concealed tick, with a margin of `extra_ms`.
fn offered_after_gaps(extra_ms: u32) -> Vec<Option<(usize, Vec<u8>)>> {
    let mut jb = jb_with(|c| c.target_extra_ms = extra_ms);
    let missing = |k: u32| k == 5 || (10..15).contains(&k);
    let mut seen = Vec::new();
    let mut now = T0;
    while now <= T0 + 20 * 40 {
        for k in (0..20u32).filter(|&k| !missing(k)) {
            if T0 + 20 * u64::from(k) + 40 == now {
                put(&mut jb, Pkt::V(20 * k), now);
            }
        }
        let (outs, ahead) = tick_ahead(&mut jb, now);
        if let Some(Out::Interp(_)) = outs.last() {
            seen.push(ahead);
        }
        now += 20;
    }
    seen
}

#[test]
fn a_concealed_slot_offers_the_queued_frame_after_the_gap() {
    let off = |gap: usize, ts: u32| Some((gap, payload_for(ts).to_vec()));
    // The default 40 ms margin: frame 6 is queued when slot 5 conceals (it plays next);
    // frame 15 arrives only in time for slots 13 and 14.
    let seen = offered_after_gaps(40);
    let want = [off(0, 120), None, None, None, off(1, 300), off(0, 300)];
    assert_eq!(&seen[..6], &want, "{seen:?}");
    // Then the stream ends: nothing is queued.
    assert!(seen[6..].iter().all(Option::is_none), "{seen:?}");
    // A deep buffer (200 ms) holds frame 15 through the whole gap; it is offered from at
    // most LOOKAHEAD_SLOTS lost slots away.
    let seen = offered_after_gaps(200);
    let want = [
        off(0, 120),
        None,
        off(3, 300),
        off(2, 300),
        off(1, 300),
        off(0, 300),
    ];
    assert_eq!(&seen[..6], &want, "{seen:?}");
    assert_eq!(jb().next_voice(), None);
}
