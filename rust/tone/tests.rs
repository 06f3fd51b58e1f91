use super::*;
use proptest::prelude::*;

/// Amplitude of the `freq` component of `x` (single-bin DFT, exact for whole cycles).
fn amplitude_at(x: &[i16], rate: u32, freq: f64) -> f64 {
    let w = 2.0 * PI * freq / f64::from(rate);
    let (mut re, mut im) = (0.0, 0.0);
    for (n, &s) in x.iter().enumerate() {
        re += f64::from(s) * (w * n as f64).cos();
        im -= f64::from(s) * (w * n as f64).sin();
    }
    2.0 * (re * re + im * im).sqrt() / x.len() as f64
}

fn db(x: f64) -> f64 {
    20.0 * x.log10()
}

fn run_tone(g: &mut ToneGenerator, n: usize, frame: usize) -> Vec<i16> {
    let mut out = vec![0i16; n];
    for chunk in out.chunks_mut(frame) {
        g.fill(chunk);
    }
    out
}

/// Every `frame`-sample buffer `fill` writes until it reports the end, cut to `total`.
fn render(frame: usize, total: u64, mut fill: impl FnMut(&mut [i16]) -> bool) -> Vec<i16> {
    let mut all = Vec::new();
    let mut buf = vec![0i16; frame];
    while fill(&mut buf) {
        all.extend_from_slice(&buf);
    }
    all.truncate(total as usize);
    all
}

fn run_keyer(k: &mut CwKeyer, frame: usize) -> Vec<i16> {
    render(frame, k.duration_samples(), |buf| k.fill(buf))
}

#[test]
fn tone_level_and_harmonics() {
    for &(rate, freq, level) in &[
        (8000, 1000.0, -10.0),
        (8000, 600.0, -3.0),
        (16000, 1000.0, -20.0),
        (16000, 440.0, 0.0),
    ] {
        let mut g = ToneGenerator::new(rate, freq, level).unwrap();
        // 20 ms frames; analyse one second after the start ramp (whole cycles for these
        // frequencies, so the DFT bins are exact).
        let x = run_tone(&mut g, rate as usize * 2, rate as usize / 50);
        let steady = &x[rate as usize..];
        let a = amplitude_at(steady, rate, freq);
        let got = db(a / FULL_SCALE);
        assert!((got - level).abs() < 0.1, "{rate} {freq}: {got} dBFS");
        for h in 2..=5 {
            let hf = freq * f64::from(h);
            if hf < f64::from(rate) / 2.0 {
                let rel = db(amplitude_at(steady, rate, hf) / a);
                assert!(rel < -50.0, "{rate} {freq} harmonic {h}: {rel} dB");
            }
        }
    }
}

#[test]
fn tone_frames_join_without_clicks() {
    // A click would be a jump between neighbouring samples larger than the sine's own
    // steepest step (amplitude · 2π f / rate).
    let (rate, freq) = (8000, 1020.0);
    let mut g = ToneGenerator::new(rate, freq, -1.0).unwrap();
    let x = run_tone(&mut g, 8000, 160);
    let max_step = dbfs_to_amplitude(-1.0).unwrap() * 2.0 * PI * freq / f64::from(rate) + 1.0;
    for w in x.windows(2) {
        assert!(f64::from(w[1] - w[0]).abs() <= max_step);
    }
    let mut one = ToneGenerator::new(rate, freq, -1.0).unwrap();
    assert_eq!(run_tone(&mut one, 8000, 8000), x);
}

#[test]
fn tone_ramps_up_and_down() {
    let rate = 8000;
    let ramp = ramp_samples(rate);
    assert_eq!(ramp, 40);
    let mut g = ToneGenerator::new(rate, 500.0, 0.0).unwrap();
    let mut x = vec![0i16; 400];
    assert!(g.fill(&mut x));
    // The first samples are scaled by the tiny start of the ramp.
    let peak_start = x[..4].iter().map(|v| v.unsigned_abs()).max().unwrap();
    assert!(peak_start < 1000, "{peak_start}");
    let peak = x[100..].iter().map(|v| v.unsigned_abs()).max().unwrap();
    assert!(peak > 32000);
    g.stop();
    let mut y = vec![0i16; ramp];
    assert!(g.fill(&mut y), "this frame holds the ramp-down");
    assert!(!g.is_sounding());
    let mut z = vec![1i16; 160];
    assert!(!g.fill(&mut z));
    assert!(z.iter().all(|&v| v == 0));
    g.start();
    assert!(g.fill(&mut z));
    assert!(z.iter().any(|&v| v != 0));
}

#[test]
fn tone_rejects_bad_parameters() {
    assert_eq!(
        ToneGenerator::new(100, 440.0, -3.0).err(),
        Some(ToneError::Rate(100))
    );
    assert_eq!(
        ToneGenerator::new(8000, 4000.0, -3.0).err(),
        Some(ToneError::Frequency(4000.0))
    );
    assert!(matches!(
        ToneGenerator::new(8000, f64::NAN, -3.0),
        Err(ToneError::Frequency(_))
    ));
    assert_eq!(
        ToneGenerator::new(8000, 440.0, 1.0).err(),
        Some(ToneError::Level(1.0))
    );
    assert_eq!(
        CwKeyer::new(8000, 0, 600.0, -6.0, "K").err(),
        Some(ToneError::Wpm(0))
    );
    assert_eq!(
        CwKeyer::new(8000, 61, 600.0, -6.0, "K").err(),
        Some(ToneError::Wpm(61))
    );
    let msg = ToneError::Level(3.0).to_string();
    assert!(msg.contains("3 dBFS"), "{msg}");
}

#[test]
fn morse_table() {
    assert_eq!(morse('a'), Some(".-"));
    assert_eq!(morse('0'), Some("-----"));
    assert_eq!(morse('/'), Some("-..-."));
    assert_eq!(morse('?'), Some("..--.."));
    assert_eq!(morse('='), Some("-...-"));
    assert_eq!(morse('@'), None);
    // Every code is distinct, so the table has no copy-paste slip.
    let chars: Vec<char> = ('A'..='Z')
        .chain('0'..='9')
        .chain("/?.,=".chars())
        .collect();
    let mut codes: Vec<&str> = chars.iter().filter_map(|&c| morse(c)).collect();
    assert_eq!(codes.len(), 41);
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), 41);
}

#[test]
fn schedule_in_units() {
    let (e, units) = schedule("PARIS ");
    assert_eq!(units, 50);
    // P = .--. starts the message: dot, gap, dash, gap, dash, gap, dot.
    assert_eq!(&e[..4], &[(0, 1), (2, 5), (6, 9), (10, 11)]);
    // A starts after the three-unit letter gap.
    assert_eq!(e[4], (14, 15));
    assert_eq!(schedule("PARIS").1, 43);
    // Unknown characters vanish; runs of spaces are one word gap; leading space ignored.
    assert_eq!(schedule("  E@E").0, vec![(0, 1), (4, 5)]);
    assert_eq!(schedule("E   E").0, vec![(0, 1), (8, 9)]);
    assert_eq!(schedule("E @ E").0, schedule("E E").0);
    assert_eq!(schedule("@#"), (vec![], 0));
}

/// Half-amplitude crossings of the keyed audio, as `(on_start, on_end)` sample positions.
///
/// The keyer's oscillator starts at phase 0 and runs continuously, so at a sample where the
/// sine is well away from zero the envelope is `x / (A·sin)`; the envelope crosses 0.5
/// between the last sample below and the first at or above it.
fn measured_elements(x: &[i16], rate: u32, tone_hz: f64, amp: f64) -> Vec<(i64, i64)> {
    let step = tone_hz / f64::from(rate);
    let mut on = false;
    let mut out = Vec::new();
    let mut start = 0i64;
    for (n, &s) in x.iter().enumerate() {
        let sin = (2.0 * PI * ((n as f64 * step) % 1.0)).sin();
        if sin.abs() < 0.5 {
            continue;
        }
        let env = f64::from(s) / (amp * sin);
        if !on && env >= 0.5 {
            on = true;
            start = n as i64;
        } else if on && env < 0.5 {
            on = false;
            out.push((start, n as i64));
        }
    }
    assert!(!on, "audio ends keyed down");
    out
}

#[test]
fn paris_at_20_wpm_is_50_units_of_3000_ms() {
    for rate in [8000, 16000] {
        let mut k = CwKeyer::new(rate, 20, 700.0, -6.0, "PARIS ").unwrap();
        assert_eq!(k.units(), 50);
        assert_eq!(k.duration_ms(), 3000);
        assert_eq!(k.duration_samples(), u64::from(rate) * 3);
        let x = run_keyer(&mut k, 160);
        assert_eq!(x.len(), rate as usize * 3);
        // The on/off envelope covers exactly the 50 units: the last element (S's final dot)
        // ends 7 units before the end, and the audio is silent from its ramp-down on.
        let dot = rate as usize * 60 / 1000;
        let last = k.elements().last().unwrap().1 as usize;
        assert_eq!(last, 43 * dot);
        assert!(x[last + ramp_samples(rate)..].iter().all(|&v| v == 0));
        assert!(x[..ramp_samples(rate)].iter().any(|&v| v != 0));
    }
}

#[test]
fn element_timings_measured_from_audio() {
    let text = "CQ DE N0CALL/9 ?.,= PARIS";
    for rate in [8000u32, 16000] {
        for wpm in [5u32, 13, 20, 30] {
            let tone = 650.0;
            let level = -6.0;
            let mut k = CwKeyer::new(rate, wpm, tone, level, text).unwrap();
            let x = run_keyer(&mut k, rate as usize / 50);
            let amp = dbfs_to_amplitude(level).unwrap();
            let got = measured_elements(&x, rate, tone, amp);
            let (units, total_units) = schedule(text);
            assert_eq!(got.len(), units.len(), "{rate} {wpm}");
            let dot = f64::from(rate) * 1.2 / f64::from(wpm);
            // The half-amplitude points trail the key edges by a constant half ramp;
            // the measurement resolves them to the sine's valid samples (a few samples).
            let lag = (ramp_samples(rate) / 2) as f64 - 1.0;
            let tol = f64::from(rate) / tone / 3.0 + 2.0;
            for (i, (&(a, b), &(ua, ub))) in got.iter().zip(&units).enumerate() {
                let want_a = f64::from(ua) * dot + lag;
                let want_b = f64::from(ub) * dot + lag;
                assert!(
                    (a as f64 - want_a).abs() <= tol && (b as f64 - want_b).abs() <= tol,
                    "{rate} Hz {wpm} wpm element {i}: {a}..{b}, want {want_a}..{want_b}"
                );
            }
            // Dots, dashes and gaps from the audio, in units.
            for w in got.windows(2) {
                let on = (w[0].1 - w[0].0) as f64 / dot;
                let off = (w[1].0 - w[0].1) as f64 / dot;
                let near = |v: f64, set: &[f64]| set.iter().any(|s| (v - s).abs() < 0.1);
                assert!(near(on, &[1.0, 3.0]), "{wpm} wpm on {on}");
                assert!(near(off, &[1.0, 3.0, 7.0]), "{wpm} wpm off {off}");
            }
            let want_ms = (f64::from(total_units) * 1200.0 / f64::from(wpm)).ceil() as u64;
            // No trailing space: the message ends with the last ramp, inside a ms or so.
            assert!(k.duration_ms() <= want_ms + u64::from(RAMP_MS));
        }
    }
}

#[test]
fn keyer_spectrum_is_clean() {
    // Key clicks spread energy away from the tone. With the raised-cosine ramps, the
    // energy more than 300 Hz from the tone is tiny; hard keying of the same text is far
    // worse (the comparison shows the test can fail).
    let (rate, tone, wpm) = (8000u32, 700.0, 20u32);
    let mut k = CwKeyer::new(rate, wpm, tone, -6.0, "TEST DE N0CALL").unwrap();
    let x = run_keyer(&mut k, 160);
    let amp = dbfs_to_amplitude(-6.0).unwrap();
    let mut hard = vec![0i16; x.len()];
    let mut osc = Oscillator::new(rate, tone, amp).unwrap();
    for (n, h) in hard.iter_mut().enumerate() {
        let v = osc.next_sample();
        if k.elements()
            .iter()
            .any(|&(a, b)| (a..b).contains(&(n as u64)))
        {
            *h = to_i16(v);
        }
    }
    let splatter = |sig: &[i16]| {
        let total: f64 = sig.iter().map(|&v| f64::from(v).powi(2)).sum();
        // Energy at 25 Hz spacing from 300 Hz off the tone up to 3.5 kHz, as a fraction of
        // the total (per-bin energy ∝ amplitude² · N / 2).
        let mut worst: f64 = 0.0;
        let mut f = 100.0;
        while f < 3500.0 {
            if (f - tone).abs() >= 300.0 {
                let a = amplitude_at(sig, rate, f);
                let e = a * a * sig.len() as f64 / 2.0;
                worst = worst.max(e / total);
            }
            f += 25.0;
        }
        10.0 * worst.log10()
    };
    let soft = splatter(&x);
    let hard = splatter(&hard);
    eprintln!("CW splatter >= 300 Hz off the tone: ramped {soft:.1} dB, hard {hard:.1} dB");
    assert!(soft < -60.0, "ramped keying splatter {soft} dB");
    assert!(hard > soft + 20.0, "hard {hard} dB vs ramped {soft} dB");
}

#[test]
fn keyer_done_and_rewind() {
    let mut k = CwKeyer::new(8000, 20, 600.0, -6.0, "E").unwrap();
    // One dot (480 samples) plus the ramp-down.
    assert_eq!(k.duration_samples(), 480 + 40);
    assert_eq!(k.duration_ms(), 65);
    let mut f = vec![0i16; 160];
    let mut frames = 0;
    while k.fill(&mut f) {
        frames += 1;
    }
    assert_eq!(frames, 4);
    assert!(k.is_done());
    assert!(f.iter().all(|&v| v == 0));
    k.rewind();
    assert!(!k.is_done());
    assert!(k.fill(&mut f));
    let empty = CwKeyer::new(8000, 20, 600.0, -6.0, "  ").unwrap();
    assert_eq!(empty.duration_samples(), 0);
    assert!(!empty.clone().fill(&mut f));
}

proptest! {
    #[test]
    fn keyer_frames_split_anywhere(
        sizes in proptest::collection::vec(1usize..700, 1..40),
        wpm in 5u32..=40,
    ) {
        let mut whole = CwKeyer::new(8000, wpm, 733.3, -3.0, "R5 73").unwrap();
        let total = whole.duration_samples() as usize;
        let mut ref_buf = vec![0i16; total];
        whole.fill(&mut ref_buf);
        let mut k = CwKeyer::new(8000, wpm, 733.3, -3.0, "R5 73").unwrap();
        let mut got = Vec::new();
        let mut i = 0;
        while got.len() < total {
            let n = sizes[i % sizes.len()];
            let mut buf = vec![0i16; n];
            k.fill(&mut buf);
            got.extend_from_slice(&buf);
            i += 1;
        }
        prop_assert!(got[total..].iter().all(|&v| v == 0));
        got.truncate(total);
        prop_assert_eq!(got, ref_buf);
    }

    #[test]
    fn tone_frames_split_anywhere(sizes in proptest::collection::vec(1usize..500, 1..30)) {
        let n: usize = sizes.iter().sum();
        let mut one = ToneGenerator::new(16000, 1234.5, -12.0).unwrap();
        let mut whole = vec![0i16; n];
        one.fill(&mut whole);
        let mut g = ToneGenerator::new(16000, 1234.5, -12.0).unwrap();
        let mut got = Vec::new();
        for s in &sizes {
            let mut buf = vec![0i16; *s];
            g.fill(&mut buf);
            got.extend_from_slice(&buf);
        }
        prop_assert_eq!(got, whole);
    }
}

fn step(freq1_hz: f64, freq2_hz: f64, ms: u32) -> ToneStep {
    ToneStep {
        freq1_hz,
        freq2_hz,
        ms,
    }
}

fn run_sequence(seq: &mut ToneSequence, frame: usize) -> Vec<i16> {
    render(frame, seq.duration_samples(), |buf| seq.fill(buf))
}

#[test]
fn a_courtesy_tone_sequence_sounds_each_step_for_its_length() {
    // 880 Hz 100 ms, a 50 ms pause, then 660 + 1320 Hz together for 100 ms.
    let steps = [
        step(880.0, 0.0, 100),
        step(0.0, 0.0, 50),
        step(660.0, 1320.0, 100),
    ];
    let mut seq = ToneSequence::new(8000, &steps, -6.0).unwrap();
    assert_eq!(seq.duration_samples(), 2000);
    let x = run_sequence(&mut seq, 160);
    assert_eq!(x.len(), 2000);
    assert!(seq.is_done() && !seq.fill(&mut [0i16; 160]));
    let peak = dbfs_to_amplitude(-6.0).unwrap();
    // The steady middle of each step: its tones at their level, nothing else.
    let first = &x[200..600];
    assert!((db(amplitude_at(first, 8000, 880.0) / peak)).abs() < 0.1);
    assert!(x[800..1200].iter().all(|&s| s == 0), "the pause is silent");
    let both = &x[1400..1800];
    for f in [660.0, 1320.0] {
        assert!(
            (db(amplitude_at(both, 8000, f) / (peak / 2.0))).abs() < 0.1,
            "{f}"
        );
    }
    assert!(both
        .iter()
        .all(|&s| f64::from(s.unsigned_abs()) <= peak + 1.0));
    // Every step starts and ends in silence: no click at the edges.
    for edge in [0usize, 800, 1200, 2000] {
        if edge < x.len() {
            assert!(x[edge].unsigned_abs() < 200, "start at {edge}: {}", x[edge]);
        }
        assert!(
            x[edge - usize::from(edge > 0)].unsigned_abs() < 200,
            "end before {edge}"
        );
    }
}

#[test]
fn a_sequence_rewinds_and_refuses_bad_steps() {
    let steps = [step(1000.0, 0.0, 60)];
    let mut seq = ToneSequence::new(16000, &steps, -12.0).unwrap();
    let once = run_sequence(&mut seq, 320);
    seq.rewind();
    assert_eq!(run_sequence(&mut seq, 100), once);
    assert_eq!(
        ToneSequence::new(8000, &[step(4000.0, 0.0, 10)], -6.0).unwrap_err(),
        ToneError::Frequency(4000.0)
    );
    assert!(ToneSequence::new(8000, &steps, 1.0).is_err());
    let mut empty = ToneSequence::new(8000, &[], -6.0).unwrap();
    assert!(empty.is_done() && !empty.fill(&mut [1i16; 4]));
}
