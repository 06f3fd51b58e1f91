//! The delay changes only in pauses: tests of the buffer fed with each frame's level.

use super::*;

/// Speech of 1.5 s then a 0.5 s pause, repeating: the level of frame `k`.
fn talker_level(k: u32) -> i16 {
    if k % 100 < 75 {
        -20
    } else {
        -80
    }
}

/// Plays a talker whose network jitter rises (0-40 ms, then 0-160 ms) and calms (0-10 ms)
/// and checks, per tick, that the buffer never drops a frame of speech to shrink and never
/// inserts a frame between two frames of speech that were both there to play. Returns the
/// stats near the end of the speech and the delay at its highest.
fn play_speech_with_levels(seed: u64) -> (JitterStats, i64) {
    let mut jb = jb();
    let mut rng = Rng(seed);
    let frames = 1500u32;
    let mut arrivals: Vec<(u64, u32)> = (0..frames)
        .map(|k| {
            let t = u64::from(k) * 20;
            let spread = match t {
                0..6000 => 40,
                6000..18000 => 160,
                _ => 10,
            };
            (T0 + t + rng.below(spread + 1), k)
        })
        .collect();
    arrivals.sort();
    let mut next = 0;
    let mut arrived = vec![false; frames as usize];
    let mut last: Option<u32> = None;
    let mut highest = 0;
    let mut settled = None;
    let mut now = T0;
    while now <= T0 + u64::from(frames) * 20 + 2000 {
        while let Some(&(at, k)) = arrivals.get(next) {
            if at > now {
                break;
            }
            let ts = 20 * k;
            let r = jb.put_voice_level(ts, &payload_for(ts), talker_level(k), now);
            arrived[k as usize] = matches!(r, PutResult::Queued);
            next += 1;
        }
        loop {
            let dropped_before = jb.stats().dropped;
            let r = jb.get(now);
            let end = r.ends_tick();
            match r {
                GetResult::Voice { ts, .. } => last = Some(ts / 20),
                GetResult::Interpolate { .. } => {
                    // Speech on both sides, and the next frame already here: an insertion.
                    if let Some(k) = last {
                        let next_here = arrived.get(k as usize + 1).copied().unwrap_or(false);
                        assert!(
                            !(talker_level(k) > QUIET_DBFS
                                && talker_level(k + 1) > QUIET_DBFS
                                && next_here),
                            "frame inserted inside speech after frame {k} at {now}"
                        );
                    }
                }
                GetResult::Dropped { ts } => {
                    let shrink = jb.stats().dropped > dropped_before;
                    assert!(
                        !shrink || talker_level(ts / 20) <= QUIET_DBFS,
                        "speech frame {} dropped to shrink at {now}",
                        ts / 20
                    );
                }
                _ => {}
            }
            if end {
                break;
            }
        }
        highest = highest.max(jb.stats().delay_ms);
        if now == T0 + 29_500 {
            settled = Some(jb.stats());
        }
        now += 20;
    }
    (settled.unwrap_or_else(|| jb.stats()), highest)
}

#[test]
fn the_delay_changes_only_in_pauses() {
    for seed in 1..=4 {
        let (stats, highest) = play_speech_with_levels(seed);
        // It did adapt: up under the heavy jitter, and back down in the pauses after it.
        assert!(
            highest >= 140,
            "seed {seed}: delay never rose ({highest} ms)"
        );
        // Down to within the shrink hysteresis (target_extra) of the calm target.
        let extra = i64::from(JitterConfig::default().target_extra_ms);
        assert!(
            stats.current_ms - stats.target_ms <= extra && stats.delay_ms < highest - 40,
            "seed {seed}: delay stayed at {} ms (highest {highest}, {stats:?})",
            stats.delay_ms
        );
        assert!(stats.dropped > 0, "seed {seed}: never shrank");
    }
}

#[test]
fn levels_in_dbfs() {
    assert_eq!(level_dbfs(&[]), -120);
    assert_eq!(level_dbfs(&[0; 160]), -120);
    let full: Vec<i16> = (0..160)
        .map(|n| (32767.0 * (f64::from(n) * 0.3).sin()) as i16)
        .collect();
    assert_eq!(level_dbfs(&full), -3);
    assert!(is_quiet(LEVEL_UNKNOWN) && is_quiet(-60) && !is_quiet(-20));
}

/// Plays 40 frames of "speech" with levels: loud, but frame 10 is a one-frame gap between
/// words and frames 20-23 a pause. Frame 5 arrives `late_by` ms after its time, which raises
/// the target by as much. Returns what played, one entry per `get`
/// (`tick` checks payloads and invariants on the way).
fn words_and_a_pause(late_by: u64) -> Vec<Out> {
    let level = |k: u32| {
        if k == 10 || (20..24).contains(&k) {
            -80
        } else {
            -20
        }
    };
    let mut jb = jb();
    let mut outs = Vec::new();
    let mut now = T0;
    while now <= T0 + 40 * 20 + 200 {
        for k in 0..40u32 {
            let at = T0 + 20 * u64::from(k) + if k == 5 { late_by } else { 0 };
            if (now.saturating_sub(19)..=now).contains(&at) {
                let ts = 20 * k;
                jb.put_voice_level(ts, &payload_for(ts), level(k), at);
            }
        }
        outs.extend(tick(&mut jb, now));
        now += 20;
    }
    outs
}

#[test]
fn a_gap_between_words_takes_a_growth_step_only_when_half_the_margin_is_gone() {
    let grown_after = |outs: &[Out]| -> Vec<u32> {
        outs.windows(2)
            .filter_map(|w| match w {
                // After the last frame the stream has ended: concealment, not growth.
                [Out::Voice(ts), Out::Interp(_)] if ts / 20 < 39 => Some(ts / 20),
                _ => None,
            })
            .collect()
    };
    // 10 ms over the target (a quarter of the 40 ms margin): the one-frame gap is left
    // alone and the delay grows in the pause, after its third quiet frame.
    let outs = words_and_a_pause(10);
    assert_eq!(grown_after(&outs), vec![22], "{outs:?}");
    // 30 ms over: the margin is too thin to wait for the pause, so the gap takes one step,
    // and the pause the remaining 10 ms.
    let outs = words_and_a_pause(30);
    assert_eq!(grown_after(&outs), vec![10, 22], "{outs:?}");
    // Either way every frame plays, in order.
    for late_by in [10, 30] {
        let played: Vec<u32> = words_and_a_pause(late_by)
            .into_iter()
            .filter_map(|o| match o {
                Out::Voice(ts) => Some(ts / 20),
                _ => None,
            })
            .collect();
        assert_eq!(played, (0..40).collect::<Vec<_>>());
    }
}
