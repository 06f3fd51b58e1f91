//! The delay changes only in pauses: tests of the buffer fed with each frame's level.

use super::*;

/// Speech of 1.5 s then a 0.5 s pause, repeating: whether frame `k` is speech.
fn is_speech(k: u32) -> bool {
    k % 100 < 75
}

/// A clean talker: speech at -20 dBFS, pauses of digital silence.
fn clean_talker(k: u32) -> i16 {
    if is_speech(k) {
        -20
    } else {
        -80
    }
}

/// A talker on a noisy line: speech at -20 dBFS (its weakest frames at -37), and pauses of
/// background noise at -41 to -40 dBFS, well above the fixed -50 dBFS threshold.
fn noisy_talker(k: u32) -> i16 {
    let wobble = i16::try_from(k.wrapping_mul(2_654_435_761) >> 31).unwrap_or(0);
    match k % 100 {
        0 | 74 => -37,
        0..75 => -20 - wobble,
        _ => -41 + wobble,
    }
}

/// Plays a talker (`level` of each frame) whose network jitter rises (0-40 ms, then
/// 0-160 ms) and calms (0-10 ms) and checks, per tick, that the buffer never drops a frame
/// of speech to shrink and never inserts a frame between two frames of speech that were both
/// there to play. Returns the stats near the end of the speech and the delay at its highest.
fn play_speech_with_levels(seed: u64, level: fn(u32) -> i16) -> (JitterStats, i64) {
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
            let r = jb.put_voice_level(ts, &payload_for(ts), level(k), now);
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
                            !(is_speech(k) && is_speech(k + 1) && next_here),
                            "frame inserted inside speech after frame {k} at {now}"
                        );
                    }
                }
                GetResult::Dropped { ts } => {
                    let shrink = jb.stats().dropped > dropped_before;
                    assert!(
                        !shrink || !is_speech(ts / 20),
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
        let stats = assert_adapts_in_pauses(seed, clean_talker);
        assert_eq!(stats.quiet_below_dbfs, QUIET_DBFS);
    }
}

#[test]
fn a_noisy_talker_s_pauses_are_found_above_its_background() {
    // Its pauses never drop below -50 dBFS; without the background estimate the buffer would
    // find no pause, and after the heavy jitter never shrink again.
    for seed in 1..=4 {
        let stats = assert_adapts_in_pauses(seed, noisy_talker);
        // 2 dB above the quietest noise (-41): the noise counts, the weakest speech (-37)
        // does not.
        assert_eq!(stats.quiet_below_dbfs, -39);
    }
}

/// Plays `play_speech_with_levels` and checks that the delay rose under the heavy jitter and
/// came back down in the pauses after it; returns the stats near the end.
fn assert_adapts_in_pauses(seed: u64, level: fn(u32) -> i16) -> JitterStats {
    let (stats, highest) = play_speech_with_levels(seed, level);
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
    stats
}

#[test]
fn levels_in_dbfs() {
    assert_eq!(level_dbfs(&[]), -120);
    assert_eq!(level_dbfs(&[0; 160]), -120);
    let full: Vec<i16> = (0..160)
        .map(|n| (32767.0 * (f64::from(n) * 0.3).sin()) as i16)
        .collect();
    assert_eq!(level_dbfs(&full), -3);
}

/// Plays 40 frames of "speech" whose frame `k` has level `level(k)`: frame 5 arrives `late_by`
/// ms after its time, which raises the target by as much (beyond the first spurt's 40 ms delay
/// it is late itself), and frame `missing` never arrives. Returns what played, one entry per
/// `get` (`tick` checks payloads and invariants on the way), and the stats at the end.
fn forty_frames(
    level: impl Fn(u32) -> i16,
    late_by: u64,
    missing: Option<u32>,
) -> (Vec<Out>, JitterStats) {
    let mut jb = jb();
    let mut outs = Vec::new();
    let mut now = T0;
    while now <= T0 + 40 * 20 + 200 {
        for k in (0..40u32).filter(|&k| Some(k) != missing) {
            let at = T0 + 20 * u64::from(k) + if k == 5 { late_by } else { 0 };
            if (now.saturating_sub(19)..=now).contains(&at) {
                let ts = 20 * k;
                jb.put_voice_level(ts, &payload_for(ts), level(k), at);
            }
        }
        outs.extend(tick(&mut jb, now));
        now += 20;
    }
    (outs, jb.stats())
}

fn played(outs: &[Out]) -> Vec<u32> {
    outs.iter()
        .filter_map(|o| match o {
            Out::Voice(ts) => Some(ts / 20),
            _ => None,
        })
        .collect()
}

/// Loud, but frame 10 is a one-frame gap between words and frames 20-23 a pause.
fn words_and_a_pause(late_by: u64) -> Vec<Out> {
    let level = |k: u32| {
        if k == 10 || (20..24).contains(&k) {
            -80
        } else {
            -20
        }
    };
    forty_frames(level, late_by, None).0
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
        assert_eq!(
            played(&words_and_a_pause(late_by)),
            (0..40).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_missing_frame_in_speech_stretches_only_when_three_margins_are_gone() {
    // Unbroken speech; frame 15 never arrives.
    let speech = |late_by| forty_frames(|_| -20, late_by, Some(15));
    let concealed_before_16 = |outs: &[Out]| -> usize {
        let at16 = outs.iter().position(|o| matches!(o, Out::Voice(320)));
        outs.iter()
            .take(at16.unwrap_or(0))
            .skip_while(|o| !matches!(o, Out::Voice(280)))
            .filter(|o| matches!(o, Out::Interp(_)))
            .count()
    };
    // Up to three 40 ms margins over the target (30 ms, 50 ms, and exactly 120): frame 15's
    // slot is concealed as a loss and the utterance plays on at its delay; the deficit waits
    // for a pause.
    for late_by in [30, 50, 120] {
        let (outs, stats) = speech(late_by);
        assert_eq!(stats.stretched, 0, "{late_by}: {outs:?}");
        assert_eq!(concealed_before_16(&outs), 1, "{late_by}: {outs:?}");
    }
    // 130 ms over: three margins are gone, so the slot is stretched: concealed twice, the
    // buffer one frame deeper.
    let (outs, stats) = speech(130);
    assert_eq!(stats.stretched, 1, "{outs:?}");
    assert_eq!(concealed_before_16(&outs), 2, "{outs:?}");
    // Every other frame plays, in order (frame 5 only when it came within the 40 ms).
    for late_by in [30, 130] {
        let expected: Vec<u32> = (0..40)
            .filter(|&k| k != 15 && (k != 5 || late_by < 40))
            .collect();
        assert_eq!(played(&speech(late_by).0), expected);
    }
}
