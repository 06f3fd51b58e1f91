//! Tests of the pitch-following concealment.

use super::plc::{conceal_lost, Concealer, Concealment, CONCEAL_MAX_FRAMES};

/// A voiced, vowel-like signal: harmonics of `f0` with falling levels, and a slow vibrato-free
/// amplitude, at `rate`.
fn voiced(rate: u32, f0: f64, len: usize) -> Vec<i16> {
    (0..len)
        .map(|n| {
            let t = n as f64 / f64::from(rate);
            let mut v = 0.0;
            for h in 1..=8 {
                let hf = f64::from(h);
                if hf * f0 < f64::from(rate) / 2.0 {
                    v += (2.0 * std::f64::consts::PI * hf * f0 * t + 0.3 * hf).sin() / hf;
                }
            }
            (6000.0 * v) as i16
        })
        .collect()
}

fn max_step(x: &[i16]) -> i32 {
    x.windows(2)
        .map(|w| (i32::from(w[1]) - i32::from(w[0])).abs())
        .max()
        .unwrap_or(0)
}

fn energy(x: &[i16]) -> f64 {
    x.iter().map(|&s| f64::from(s) * f64::from(s)).sum::<f64>() / x.len().max(1) as f64
}

/// Plays `signal` in frames through a concealer, concealing the frames in `lost`.
fn play(rate: u32, signal: &[i16], lost: &[usize], mode: Concealment) -> Vec<i16> {
    let frame = rate as usize / 50;
    let mut plc = Concealer::new(rate, frame, mode);
    let mut out = Vec::with_capacity(signal.len());
    let mut buf = vec![0i16; frame];
    for (i, chunk) in signal.chunks(frame).enumerate() {
        buf[..chunk.len()].copy_from_slice(chunk);
        if lost.contains(&i) {
            plc.conceal(&mut buf);
        } else {
            plc.good(&mut buf);
        }
        out.extend_from_slice(&buf[..chunk.len()]);
    }
    out
}

#[test]
fn pitch_follows_a_voiced_signal_at_8_and_16_khz() {
    for (rate, f0) in [(8000, 125.0), (8000, 210.0), (16000, 125.0), (16000, 95.0)] {
        let frame = rate as usize / 50;
        let signal = voiced(rate, f0, frame * 10);
        let mut plc = Concealer::new(rate, frame, Concealment::Pitch);
        let mut buf = vec![0i16; frame];
        for chunk in signal.chunks(frame).take(5) {
            buf.copy_from_slice(chunk);
            plc.good(&mut buf);
        }
        assert!(plc.conceal(&mut buf));
        let period = f64::from(rate) / f0;
        assert!(
            (plc.pitch() as f64 - period).abs() <= 1.0,
            "{rate} Hz, f0 {f0}: pitch {} for a period of {period:.1}",
            plc.pitch()
        );
        // The first 10 ms of concealment continue the waveform itself.
        let unit = rate as usize / 100;
        let truth = &signal[5 * frame..5 * frame + unit];
        let err: f64 = buf[..unit]
            .iter()
            .zip(truth)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
            .sum::<f64>()
            / unit as f64;
        assert!(
            err < 0.02 * energy(truth),
            "{rate} Hz, f0 {f0}: error {err:.0} vs energy {:.0}",
            energy(truth)
        );
    }
}

#[test]
fn the_join_into_the_next_good_frame_is_continuous() {
    for rate in [8000, 16000] {
        let frame = rate as usize / 50;
        // A pitch glide, so the concealment (a fixed period) drifts off the true signal and
        // the join has something to smooth.
        let signal: Vec<i16> = {
            let mut phase = 0.0f64;
            (0..frame * 20)
                .map(|n| {
                    let f0 = 110.0 + 60.0 * n as f64 / (frame * 20) as f64;
                    phase += 2.0 * std::f64::consts::PI * f0 / f64::from(rate);
                    let v: f64 = (1..=6)
                        .map(|h| (f64::from(h) * phase).sin() / f64::from(h))
                        .sum();
                    (5000.0 * v) as i16
                })
                .collect()
        };
        let own = max_step(&signal);
        for lost in [vec![6], vec![6, 7], vec![6, 7, 8], vec![6, 7, 8, 9, 10]] {
            let out = play(rate, &signal, &lost, Concealment::Pitch);
            let steps = max_step(&out);
            assert!(
                steps <= own * 11 / 10,
                "{rate} Hz, lost {lost:?}: step {steps} > the signal's own {own}"
            );
        }
        // The old concealment jumps at the join (it is what the new one replaces).
        let old = play(rate, &signal, &[6, 7], Concealment::Fade);
        assert!(max_step(&old) > own * 11 / 10, "{rate} Hz");
    }
}

#[test]
fn long_losses_fade_to_silence() {
    for rate in [8000, 16000] {
        let frame = rate as usize / 50;
        let signal = voiced(rate, 140.0, frame * 5);
        let mut plc = Concealer::new(rate, frame, Concealment::Pitch);
        let mut buf = vec![0i16; frame];
        for chunk in signal.chunks(frame) {
            buf.copy_from_slice(chunk);
            plc.good(&mut buf);
        }
        let reference = energy(&signal[signal.len() - frame..]);
        let mut levels = Vec::new();
        let mut audible = Vec::new();
        for _ in 0..8 {
            audible.push(plc.conceal(&mut buf));
            levels.push(energy(&buf));
        }
        assert!(
            levels[0] > 0.5 * reference,
            "{rate}: first frame {levels:?}"
        );
        // A steady voiced sound: full level for 5 ms, then a tenth less every 10 ms, silent
        // 100 ms into the loss.
        assert!(
            levels[..5].windows(2).all(|w| w[0] > w[1]),
            "{rate}: {levels:?}"
        );
        assert!(levels[4] > 0.0, "{rate}: {levels:?}");
        assert!(levels[5..].iter().all(|&e| e == 0.0), "{rate}: {levels:?}");
        assert_eq!(audible, [true, true, true, true, true, false, false, false]);
        assert_eq!(CONCEAL_MAX_FRAMES, 5);
        // After a long loss the next good frame fades in from silence: no click.
        let mut next = signal[..frame].to_vec();
        let first = next[0];
        plc.good(&mut next);
        assert!(next[0].unsigned_abs() < first.unsigned_abs().max(1) / 2 + 1);
    }
}

/// White-ish noise from a fixed linear congruential generator.
fn noise(len: usize, level: f64) -> Vec<i16> {
    let mut x: u32 = 12345;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let u = f64::from((x >> 16) & 0x7fff) / 32767.0 - 0.5;
            (level * u) as i16
        })
        .collect()
}

#[test]
fn unvoiced_history_repeats_a_whole_frame_and_fades_slower() {
    for rate in [8000, 16000] {
        let frame = rate as usize / 50;
        let signal = noise(frame * 5, 8000.0);
        let mut plc = Concealer::new(rate, frame, Concealment::Pitch);
        let mut buf = vec![0i16; frame];
        for chunk in signal.chunks(frame) {
            buf.copy_from_slice(chunk);
            plc.good(&mut buf);
        }
        let mut levels = Vec::new();
        let mut audible = Vec::new();
        for _ in 0..12 {
            audible.push(plc.conceal(&mut buf));
            levels.push(energy(&buf));
        }
        // No pitch in noise: the last 20 ms repeat, not a 2.5-15 ms period.
        assert_eq!(plc.pitch(), frame, "{rate}");
        // Half as fast a fade as for voiced sound (the last audible frame louder), still
        // silent 100 ms into the loss.
        assert!(levels[4] > 0.25 * levels[0], "{rate}: {levels:?}");
        assert!(levels[5..].iter().all(|&e| e == 0.0), "{rate}: {levels:?}");
        assert_eq!(audible.iter().filter(|&&a| a).count(), 5, "{rate}");
    }
}

#[test]
fn a_decaying_sound_keeps_decaying_through_a_loss() {
    for rate in [8000, 16000] {
        let frame = rate as usize / 50;
        let steady = voiced(rate, 140.0, frame * 5);
        // The same sound, falling 6 dB every 10 ms over its last 20 ms.
        let unit = frame / 2;
        let falling: Vec<i16> = steady
            .iter()
            .enumerate()
            .map(|(n, &s)| {
                let k = n.saturating_sub(steady.len() - 2 * unit) as f64 / unit as f64;
                (f64::from(s) * 0.5f64.powf(k)) as i16
            })
            .collect();
        let first = |signal: &[i16]| {
            let mut plc = Concealer::new(rate, frame, Concealment::Pitch);
            let mut buf = vec![0i16; frame];
            for chunk in signal.chunks(frame) {
                buf.copy_from_slice(chunk);
                plc.good(&mut buf);
            }
            plc.conceal(&mut buf);
            energy(&buf) / energy(&signal[signal.len() - unit..])
        };
        // Relative to the last 10 ms heard, the falling sound's concealment is quieter.
        let (s, f) = (first(&steady), first(&falling));
        assert!(f < 0.7 * s, "{rate}: steady {s:.3}, falling {f:.3}");
    }
}

#[test]
fn no_history_conceals_silence_and_reset_forgets() {
    let mut plc = Concealer::new(8000, 160, Concealment::Pitch);
    let mut buf = vec![7i16; 160];
    assert!(!plc.conceal(&mut buf));
    assert!(buf.iter().all(|&s| s == 0));
    let mut voice = voiced(8000, 150.0, 160);
    plc.good(&mut voice);
    plc.reset();
    assert!(!plc.conceal(&mut buf));
    assert!(buf.iter().all(|&s| s == 0));
}

#[test]
fn fade_mode_is_the_old_repeat_and_fade() {
    let signal = voiced(8000, 150.0, 160 * 6);
    let mut expect = vec![0i16; 160];
    let mut plc = Concealer::new(8000, 160, Concealment::Fade);
    let mut buf = signal[..160].to_vec();
    plc.good(&mut buf);
    assert_eq!(buf, signal[..160]);
    for nth in 0..5 {
        let audible = plc.conceal(&mut buf);
        super::conceal(&signal[..160], &mut expect, nth);
        assert_eq!(buf, expect);
        assert_eq!(audible, nth < super::CONCEAL_FADE_FRAMES);
    }
}

#[test]
fn names_round_trip() {
    for mode in [Concealment::Pitch, Concealment::Fade] {
        assert_eq!(Concealment::from_name(mode.name()), Some(mode));
    }
    assert_eq!(Concealment::from_name("g711"), None);
}

/// Plays `signal` as `play` does, but each lost frame is concealed toward the next good frame
/// when it lies at most `reach` lost frames ahead (as a leg's buffer that holds it).
fn play_toward(rate: u32, signal: &[i16], lost: &[usize], reach: usize) -> Vec<i16> {
    conceal_lost(signal, rate, Concealment::Pitch, reach, |i| {
        lost.contains(&i)
    })
}

fn error_energy(a: &[i16], b: &[i16]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum::<f64>()
}

#[test]
fn a_gap_before_a_queued_frame_is_interpolated_toward_it() {
    // The pitch glides from 120 to 160 Hz: extrapolating from before the gap alone drifts
    // out of phase, blending toward the frame after it lands on it.
    for rate in [8000u32, 16000] {
        let frame = rate as usize / 50;
        let signal: Vec<i16> = (0..frame * 12)
            .map(|n| {
                let t = n as f64 / f64::from(rate);
                let phase = 2.0 * std::f64::consts::PI * (120.0 * t + 40.0 * t * t / 0.48);
                (7000.0 * phase.sin() + 2000.0 * (2.0 * phase).sin()) as i16
            })
            .collect();
        for lost in [vec![6], vec![6, 7], vec![5, 6, 7]] {
            let alone = play(rate, &signal, &lost, Concealment::Pitch);
            let toward = play_toward(rate, &signal, &lost, 3);
            let span = lost[0] * frame..(lost[lost.len() - 1] + 2) * frame;
            let e_alone = error_energy(&alone[span.clone()], &signal[span.clone()]);
            let e_toward = error_energy(&toward[span.clone()], &signal[span.clone()]);
            assert!(
                e_toward < 0.7 * e_alone,
                "{rate} {lost:?}: {e_toward} vs {e_alone}"
            );
            // The frame after the gap plays untouched (no join needed) and meets the
            // concealment without a step.
            let after = (lost[lost.len() - 1] + 1) * frame;
            assert_eq!(&toward[after..after + frame], &signal[after..after + frame]);
            let edge = &toward[after - frame / 4..after + frame / 4];
            assert!(max_step(edge) <= max_step(&signal) + 600, "{rate} {lost:?}");
        }
    }
}

#[test]
fn unvoiced_audio_after_a_gap_is_mirrored_without_a_step() {
    let rate = 8000;
    let frame = 160;
    let signal = noise(frame * 8, 6000.0);
    let out = play_toward(rate, &signal, &[4], 3);
    // The frame after the gap plays as it came, and the concealment's last samples are its
    // first ones mirrored (a wrapped copy would put its last samples there, another value).
    assert_eq!(&out[5 * frame..6 * frame], &signal[5 * frame..6 * frame]);
    for k in 1..=4 {
        let got = i32::from(out[5 * frame - k]);
        let mirrored = i32::from(signal[5 * frame + k - 1]);
        assert!((got - mirrored).abs() <= 200, "{k}: {got} vs {mirrored}");
    }
    // The gap carries sound at about the level around it.
    let gap = energy(&out[4 * frame..5 * frame]);
    let around = energy(&signal[3 * frame..6 * frame]);
    assert!(
        gap > 0.2 * around && gap < 2.0 * around,
        "{gap} vs {around}"
    );
}

#[test]
fn fade_mode_and_a_missing_next_frame_conceal_as_before() {
    let rate = 8000;
    let frame = 160;
    let signal = voiced(rate, 150.0, frame * 8);
    let next = &signal[5 * frame..6 * frame];
    for mode in [Concealment::Fade, Concealment::Pitch] {
        let mut a = Concealer::new(rate, frame, mode);
        let mut b = Concealer::new(rate, frame, mode);
        let mut buf_a = vec![0i16; frame];
        let mut buf_b = vec![0i16; frame];
        for chunk in signal.chunks(frame).take(4) {
            buf_a.copy_from_slice(chunk);
            buf_b.copy_from_slice(chunk);
            a.good(&mut buf_a);
            b.good(&mut buf_b);
        }
        a.conceal(&mut buf_a);
        let empty: &[i16] = &[];
        let toward = if mode == Concealment::Fade {
            next
        } else {
            empty
        };
        b.conceal_toward(&mut buf_b, toward, 0);
        assert_eq!(buf_a, buf_b, "{mode:?}");
    }
}
