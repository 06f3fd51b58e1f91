use super::*;
use crate::test_signal::Rng;
use proptest::prelude::*;

const ALL: &str = "0123456789*#ABCD";

/// Signal builder in f64, rounded at the end.
struct Sig {
    rate: u32,
    x: Vec<f64>,
}

impl Sig {
    fn new(rate: u32) -> Self {
        Sig {
            rate,
            x: Vec::new(),
        }
    }
    fn samples(&self, ms: f64) -> usize {
        (ms * f64::from(self.rate) / 1000.0).round() as usize
    }
    fn silence(&mut self, ms: f64) -> &mut Self {
        let n = self.samples(ms);
        self.x.extend(std::iter::repeat_n(0.0, n));
        self
    }
    /// Two tones, each `(frequency, peak amplitude, phase)`.
    fn tones(&mut self, ms: f64, one: (f64, f64, f64), two: (f64, f64, f64)) -> &mut Self {
        let ((f1, a1, p1), (f2, a2, p2)) = (one, two);
        let n = self.samples(ms);
        let r = f64::from(self.rate);
        for i in 0..n {
            let t = i as f64 / r;
            self.x
                .push(a1 * (2.0 * PI * f1 * t + p1).sin() + a2 * (2.0 * PI * f2 * t + p2).sin());
        }
        self
    }
    /// A digit with its tones scaled by `fl`, `fh` (1.0 = nominal), at composite peak level
    /// `dbfs` and `twist` dB (low over high).
    fn digit_off(
        &mut self,
        d: char,
        ms: f64,
        dbfs: f64,
        twist: f64,
        fl: f64,
        fh: f64,
    ) -> &mut Self {
        let (l, h) = digit_frequencies(d).unwrap();
        let peak = tone::dbfs_to_amplitude(dbfs).unwrap();
        let ratio = 10f64.powf(twist / 20.0);
        let ah = peak / (1.0 + ratio);
        let n = self.x.len() as f64;
        self.tones(
            ms,
            (l * fl, peak - ah, 0.3 + n),
            (h * fh, ah, 1.1 + 0.7 * n),
        )
    }
    fn digit(&mut self, d: char, ms: f64, dbfs: f64) -> &mut Self {
        self.digit_off(d, ms, dbfs, 0.0, 1.0, 1.0)
    }
    /// Adds white noise at `snr_db` below the power of the signal so far (its non-silent
    /// part), over the whole length.
    fn noise_snr(&mut self, snr_db: f64, seed: u64) -> &mut Self {
        let loud: Vec<f64> = self.x.iter().copied().filter(|v| v.abs() > 0.0).collect();
        let p = loud.iter().map(|v| v * v).sum::<f64>() / loud.len().max(1) as f64;
        self.noise_rms((p / 10f64.powf(snr_db / 10.0)).sqrt(), seed)
    }
    fn noise_rms(&mut self, rms: f64, seed: u64) -> &mut Self {
        let mut rng = Rng(seed);
        for v in &mut self.x {
            *v += rms * rng.gauss();
        }
        self
    }
    fn pcm(&self) -> Vec<i16> {
        self.x.iter().map(|&v| tone::to_i16(v)).collect()
    }
}

/// All events of `pcm` fed in frames of `frame` samples.
fn events(rate: u32, pcm: &[i16], frame: usize) -> (Vec<DtmfEvent>, DtmfStats) {
    let mut d = DtmfDetector::new(rate).unwrap();
    let mut out = Vec::new();
    for f in pcm.chunks(frame.max(1)) {
        if let Some(e) = d.process(f) {
            out.push(e);
        }
        while let Some(e) = d.next_event() {
            out.push(e);
        }
    }
    // Flush: 60 ms of silence releases any digit still held.
    let tail = vec![0i16; rate as usize * 60 / 1000];
    if let Some(e) = d.process(&tail) {
        out.push(e);
    }
    while let Some(e) = d.next_event() {
        out.push(e);
    }
    (out, d.stats())
}

fn presses(rate: u32, pcm: &[i16]) -> String {
    let (ev, _) = events(rate, pcm, rate as usize / 50);
    ev.iter()
        .filter_map(|e| match e {
            DtmfEvent::Pressed(c) => Some(*c),
            DtmfEvent::Released(_) => None,
        })
        .collect()
}

#[test]
fn hann_response_matches_the_window() {
    let d = DtmfDetector::new(8000).unwrap();
    for delta in [0.0, 0.001, 0.01, 0.03, 0.05, -0.02] {
        let mid = (d.hann.len() as f64 - 1.0) / 2.0;
        let direct: f64 = d
            .hann
            .iter()
            .enumerate()
            .map(|(n, &w)| f64::from(w) * (delta * (n as f64 - mid)).cos())
            .sum::<f64>()
            / d.hann_sum;
        let closed = hann_response(delta, d.hann.len() as f64);
        assert!(
            (direct - closed).abs() < 1e-5,
            "{delta}: {direct} vs {closed}"
        );
    }
    assert!((hann_response(0.0, 204.0) - 1.0).abs() < 1e-12);
}

#[test]
fn keypad_tables() {
    assert_eq!(digit_frequencies('1'), Some((697.0, 1209.0)));
    assert_eq!(digit_frequencies('0'), Some((941.0, 1336.0)));
    assert_eq!(digit_frequencies('#'), Some((941.0, 1477.0)));
    assert_eq!(digit_frequencies('d'), Some((941.0, 1633.0)));
    assert_eq!(digit_frequencies('x'), None);
    assert_eq!(DtmfDetector::new(44100).err(), Some(DtmfError::Rate(44100)));
    let mut g = DtmfGenerator::new(8000).unwrap();
    assert_eq!(g.start('x', 50, -6.0), Err(DtmfError::Digit('x')));
    assert_eq!(
        g.start('1', 50, 2.0),
        Err(DtmfError::Tone(ToneError::Level(2.0)))
    );
    assert!(DtmfError::Rate(1).to_string().contains("16000"));
}

#[test]
fn every_digit_once_with_noise() {
    for rate in [8000, 16000] {
        for (i, d) in ALL.chars().enumerate() {
            let mut s = Sig::new(rate);
            s.silence(100.0).digit(d, 80.0, -10.0).silence(100.0);
            s.noise_snr(20.0, 1000 + i as u64);
            let (ev, _) = events(rate, &s.pcm(), rate as usize / 50);
            assert_eq!(
                ev,
                vec![DtmfEvent::Pressed(d), DtmfEvent::Released(d)],
                "{rate} Hz digit {d}"
            );
        }
    }
}

#[test]
fn generator_digits_are_detected() {
    for rate in [8000, 16000] {
        let mut g = DtmfGenerator::new(rate).unwrap();
        let mut pcm = Vec::new();
        let mut frame = vec![0i16; rate as usize / 50];
        for d in ALL.chars() {
            g.start(d, 60, -6.0).unwrap();
            while g.fill(&mut frame) {
                pcm.extend_from_slice(&frame);
            }
            pcm.extend(std::iter::repeat_n(0, rate as usize / 20));
        }
        assert_eq!(presses(rate, &pcm), ALL, "{rate} Hz");
    }
}

#[test]
fn sequence_with_50_ms_tones_and_gaps() {
    for rate in [8000, 16000] {
        for seed in 0..4u64 {
            let mut s = Sig::new(rate);
            s.silence(30.0 + 7.0 * seed as f64);
            for d in "*31999#".chars() {
                s.digit(d, 50.0, -12.0).silence(50.0);
            }
            s.noise_snr(20.0, seed);
            assert_eq!(presses(rate, &s.pcm()), "*31999#", "{rate} Hz seed {seed}");
        }
    }
}

#[test]
fn levels_from_minus_30_to_minus_3_dbfs() {
    for rate in [8000, 16000] {
        for level in [-30.0, -24.0, -18.0, -12.0, -6.0, -3.0] {
            let mut s = Sig::new(rate);
            for d in "159D".chars() {
                s.silence(60.0).digit(d, 60.0, level);
            }
            s.silence(60.0).noise_snr(20.0, 7);
            assert_eq!(presses(rate, &s.pcm()), "159D", "{rate} Hz {level} dBFS");
        }
        // Far below the minimum level nothing is reported.
        let mut s = Sig::new(rate);
        s.silence(20.0).digit('5', 100.0, -50.0).silence(20.0);
        assert_eq!(presses(rate, &s.pcm()), "");
    }
}

#[test]
fn frequency_tolerance() {
    for rate in [8000, 16000] {
        for d in ALL.chars() {
            for (fl, fh) in [
                (1.015, 1.015),
                (0.985, 0.985),
                (1.015, 0.985),
                (0.985, 1.015),
            ] {
                let mut s = Sig::new(rate);
                s.silence(40.0)
                    .digit_off(d, 60.0, -10.0, 0.0, fl, fh)
                    .silence(40.0);
                s.noise_snr(20.0, 3);
                assert_eq!(
                    presses(rate, &s.pcm()),
                    d.to_string(),
                    "{rate} {d} {fl} {fh}"
                );
            }
            for (fl, fh) in [(1.035, 1.0), (0.965, 1.0), (1.0, 1.035), (1.0, 0.965)] {
                let mut s = Sig::new(rate);
                s.silence(40.0)
                    .digit_off(d, 200.0, -10.0, 0.0, fl, fh)
                    .silence(40.0);
                assert_eq!(presses(rate, &s.pcm()), "", "{rate} {d} {fl} {fh}");
            }
        }
    }
}

#[test]
fn twist_limits() {
    for rate in [8000, 16000] {
        for d in ALL.chars() {
            for twist in [7.0, -3.0] {
                let mut s = Sig::new(rate);
                s.silence(40.0)
                    .digit_off(d, 60.0, -6.0, twist, 1.0, 1.0)
                    .silence(40.0);
                s.noise_snr(20.0, 5);
                assert_eq!(presses(rate, &s.pcm()), d.to_string(), "{rate} {d} {twist}");
            }
            for twist in [10.0, -6.0] {
                let mut s = Sig::new(rate);
                s.silence(40.0)
                    .digit_off(d, 200.0, -6.0, twist, 1.0, 1.0)
                    .silence(40.0);
                assert_eq!(presses(rate, &s.pcm()), "", "{rate} {d} {twist}");
            }
        }
    }
}

#[test]
fn single_tones_and_test_tone_are_rejected() {
    for rate in [8000, 16000] {
        for f in ROW_HZ
            .iter()
            .chain(COL_HZ.iter())
            .chain([1000.0, 400.0].iter())
        {
            let mut s = Sig::new(rate);
            s.tones(1000.0, (*f, 16000.0, 0.0), (1.0, 0.0, 0.0));
            let (ev, st) = events(rate, &s.pcm(), 160);
            assert!(ev.is_empty(), "{rate} Hz, {f} Hz tone: {ev:?}");
            assert_eq!(st.hits, 0);
        }
    }
}

#[test]
fn short_blips_are_rejected() {
    for rate in [8000, 16000] {
        for d in ALL.chars() {
            // Every alignment of a 20 ms blip against the analysis hop.
            for shift in 0..8 {
                let mut s = Sig::new(rate);
                s.silence(10.0 + shift as f64 * 0.8)
                    .digit(d, 20.0, -6.0)
                    .silence(40.0);
                assert_eq!(presses(rate, &s.pcm()), "", "{rate} {d} shift {shift}");
            }
        }
    }
}

#[test]
fn tones_of_40_ms_are_always_detected() {
    for rate in [8000, 16000] {
        for (i, d) in ALL.chars().enumerate() {
            // Every alignment of the tone against the 51-sample (8 kHz) hop, in steps of
            // 3 samples at 8 kHz (6 at 16 kHz).
            for shift in 0..17 {
                let mut s = Sig::new(rate);
                s.silence(10.0 + shift as f64 * 0.375)
                    .digit(d, 40.0, -12.0)
                    .silence(40.0);
                s.noise_snr(20.0, (i * 100 + shift) as u64);
                assert_eq!(presses(rate, &s.pcm()), d.to_string(), "{rate} {d} {shift}");
            }
        }
    }
}

/// One randomised trial: a digit with random level, twist, frequency offsets, phases and
/// duration, 20 dB SNR. Returns the pressed digits.
fn trial(rate: u32, d: char, rng: &mut Rng, bad: Option<usize>) -> String {
    let pick = |rng: &mut Rng, lo: f64, hi: f64| lo + (hi - lo) * rng.uniform();
    let level = pick(rng, -30.0, -3.0);
    let mut twist = pick(rng, -3.5, 7.5);
    let mut off_l = 1.0 + pick(rng, -0.015, 0.015);
    let mut off_h = 1.0 + pick(rng, -0.015, 0.015);
    let mut ms = pick(rng, 40.0, 100.0);
    let sign = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
    match bad {
        // Out of tolerance: one tone 3.5 to 6 % off.
        Some(0) => off_l = 1.0 + sign * pick(rng, 0.035, 0.06),
        Some(1) => off_h = 1.0 + sign * pick(rng, 0.035, 0.06),
        // Too much twist.
        Some(2) => {
            twist = if sign > 0.0 {
                pick(rng, 10.0, 20.0)
            } else {
                pick(rng, -15.0, -6.0)
            }
        }
        // Too short.
        Some(_) => ms = pick(rng, 5.0, 20.0),
        None => {}
    }
    let (l, h) = digit_frequencies(d).unwrap();
    let peak = tone::dbfs_to_amplitude(level).unwrap();
    let ah = peak / (1.0 + 10f64.powf(twist / 20.0));
    let (p1, p2) = (pick(rng, 0.0, 6.3), pick(rng, 0.0, 6.3));
    let mut s = Sig::new(rate);
    s.silence(pick(rng, 10.0, 30.0))
        .tones(ms, (l * off_l, peak - ah, p1), (h * off_h, ah, p2))
        .silence(60.0);
    s.noise_snr(20.0, rng.next_u64());
    presses(rate, &s.pcm())
}

#[test]
fn measured_detection_and_rejection_rates() {
    let trials = 24;
    for rate in [8000, 16000] {
        let mut rng = Rng(u64::from(rate));
        let (mut hit, mut n) = (0, 0);
        let mut wrong = Vec::new();
        for d in ALL.chars() {
            for _ in 0..trials {
                let got = trial(rate, d, &mut rng, None);
                n += 1;
                if got == d.to_string() {
                    hit += 1;
                } else {
                    wrong.push((d, got));
                }
            }
        }
        eprintln!("{rate} Hz: {hit}/{n} in-spec digits detected exactly once");
        assert!(wrong.is_empty(), "{rate} Hz: {wrong:?}");
        let names = ["low tone off", "high tone off", "twist", "short"];
        for (k, name) in names.iter().enumerate() {
            let mut false_hits = Vec::new();
            for d in ALL.chars() {
                for _ in 0..trials / 2 {
                    let got = trial(rate, d, &mut rng, Some(k));
                    if !got.is_empty() {
                        false_hits.push((d, got));
                    }
                }
            }
            eprintln!(
                "{rate} Hz: {} of {} out-of-spec ({name}) digits detected",
                false_hits.len(),
                16 * trials / 2
            );
            assert!(false_hits.is_empty(), "{rate} Hz {name}: {false_hits:?}");
        }
    }
}

/// Share of `trials` randomised presses of each digit detected exactly once, for one
/// setting of the signal.
fn detection_share(rate: u32, trials: u64, f: impl Fn(&mut Sig, char, &mut Rng)) -> f64 {
    let mut ok = 0;
    let mut rng = Rng(77);
    for d in ALL.chars() {
        for _ in 0..trials {
            let mut s = Sig::new(rate);
            s.silence(10.0 + 20.0 * rng.uniform());
            f(&mut s, d, &mut rng);
            s.silence(60.0);
            if presses(rate, &s.pcm()) == d.to_string() {
                ok += 1;
            }
        }
    }
    f64::from(ok) / (16 * trials) as f64
}

/// Sweeps one parameter; returns (last value with every digit detected, first value with
/// none), walking from the easy end to the hard end.
fn boundary(values: &[f64], share: impl Fn(f64) -> f64) -> (f64, f64) {
    let (mut all, mut none) = (f64::NAN, f64::NAN);
    for &v in values {
        let s = share(v);
        if s >= 1.0 && none.is_nan() {
            all = v;
        }
        if s <= 0.0 && none.is_nan() {
            none = v;
        }
    }
    (all, none)
}

fn steps(from: f64, to: f64, step: f64) -> Vec<f64> {
    let n = ((to - from) / step).abs().round() as usize;
    (0..=n)
        .map(|i| from + (to - from).signum() * step * i as f64)
        .collect()
}

#[test]
fn measured_boundaries() {
    // The boundaries of acceptance, measured at 20 dB SNR (docs/dtmf.md quotes them); each
    // must fall between what Q.24 asks to accept and what it asks to reject.
    for rate in [8000u32, 16000] {
        let trials = 4;
        let freq = |low: bool, sign: f64| {
            boundary(&steps(0.0, 0.05, 0.0025), |off| {
                detection_share(rate, trials, |s, d, _| {
                    let o = 1.0 + sign * off;
                    let (fl, fh) = if low { (o, 1.0) } else { (1.0, o) };
                    s.digit_off(d, 80.0, -10.0, 0.0, fl, fh).noise_snr(20.0, 5);
                })
            })
        };
        for (low, sign, name) in [
            (true, 1.0, "low +"),
            (true, -1.0, "low -"),
            (false, 1.0, "high +"),
            (false, -1.0, "high -"),
        ] {
            let (all, none) = freq(low, sign);
            eprintln!(
                "{rate} Hz frequency {name}: all up to {:.2} %, none from {:.2} %",
                all * 100.0,
                none * 100.0
            );
            assert!(all >= 0.015 && none <= 0.035, "{rate} {name}: {all} {none}");
        }
        let twist = |sign: f64| {
            boundary(&steps(0.0, 14.0, 0.5), |t| {
                detection_share(rate, trials, |s, d, _| {
                    s.digit_off(d, 80.0, -6.0, sign * t, 1.0, 1.0)
                        .noise_snr(20.0, 5);
                })
            })
        };
        let (all, none) = twist(1.0);
        eprintln!("{rate} Hz normal twist: all up to {all} dB, none from {none} dB");
        assert!(all >= 7.0 && none <= 10.0);
        let (all, none) = twist(-1.0);
        eprintln!("{rate} Hz reverse twist: all up to {all} dB, none from {none} dB");
        assert!(all >= 3.0 && none <= 6.0);
        let (all, none) = boundary(&steps(44.0, 14.0, 1.0), |ms| {
            detection_share(rate, trials, |s, d, _| {
                s.digit(d, ms, -10.0).noise_snr(20.0, 5);
            })
        });
        eprintln!("{rate} Hz duration: all down to {all} ms, none from {none} ms");
        assert!(all <= 40.0 && none >= 20.0);
        let (all, none) = boundary(&steps(-30.0, -50.0, 1.0), |db| {
            detection_share(rate, trials, |s, d, _| {
                s.digit(d, 80.0, db).noise_snr(20.0, 5);
            })
        });
        eprintln!("{rate} Hz level: all down to {all} dBFS, none from {none} dBFS");
        assert!(all <= -30.0);
        let (all, none) = boundary(&steps(30.0, 0.0, 1.0), |snr| {
            detection_share(rate, trials, |s, d, rng| {
                s.digit(d, 80.0, -10.0).noise_snr(snr, rng.next_u64());
            })
        });
        eprintln!("{rate} Hz SNR: all down to {all} dB, none from {none} dB");
        assert!(all <= 20.0);
        // Share of split presses (two digits) against the length of a gap inside a press.
        let (bridged, split) = boundary(&steps(0.0, 45.0, 1.0), |gap| {
            detection_share(rate, trials, |s, d, _| {
                s.digit(d, 60.0, -10.0).silence(gap).digit(d, 60.0, -10.0);
                s.noise_snr(20.0, 5);
            })
        });
        eprintln!("{rate} Hz gaps: bridged up to {bridged} ms, always split from {split} ms");
        assert!(bridged >= 10.0 && split <= 40.0);
    }
}

#[test]
fn white_noise_is_rejected() {
    for rate in [8000, 16000] {
        for rms in [100.0, 1000.0, 8000.0] {
            let mut s = Sig::new(rate);
            s.silence(5000.0).noise_rms(rms, rms as u64);
            let (ev, st) = events(rate, &s.pcm(), 160);
            assert!(ev.is_empty(), "{rate} Hz rms {rms}: {ev:?}");
            assert_eq!(st.hits, 0, "{rate} Hz rms {rms}: {st:?}");
        }
    }
}

/// A voice-like signal: a sum of harmonics of a pitch that glides between 80 and 320 Hz,
/// shaped by three moving formants and a falling spectral tilt, in syllables.
fn speech_like(rate: u32, secs: f64, seed: u64) -> Vec<i16> {
    let mut rng = Rng(seed);
    let n = (secs * f64::from(rate)) as usize;
    let r = f64::from(rate);
    let mut phases = vec![0.0f64; 60];
    for p in &mut phases {
        *p = rng.uniform() * 2.0 * PI;
    }
    let (a1, a2, a3) = (
        rng.uniform() * 6.0,
        rng.uniform() * 6.0,
        rng.uniform() * 6.0,
    );
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64 / r;
        let f0 = 200.0
            + 120.0 * (2.0 * PI * 0.31 * t + a1).sin() * (2.0 * PI * 0.07 * t).cos()
            + 8.0 * (2.0 * PI * 5.5 * t).sin();
        let f1 = 650.0 + 200.0 * (2.0 * PI * 1.3 * t + a2).sin();
        let f2 = 1300.0 + 450.0 * (2.0 * PI * 0.9 * t + a3).sin();
        let f3 = 2500.0 + 200.0 * (2.0 * PI * 0.5 * t).sin();
        // Syllables: 4 per second, with short pauses.
        let syl = (2.0 * PI * 2.0 * t).sin().abs().powf(0.5);
        let mut v = 0.0;
        for (h, ph) in phases.iter_mut().enumerate() {
            let fh = f0 * (h + 1) as f64;
            *ph += 2.0 * PI * fh / r;
            if fh > 0.45 * r || fh > 3600.0 {
                continue;
            }
            let formant = |fc: f64, bw: f64| 1.0 / (1.0 + ((fh - fc) / bw).powi(2));
            let g = (formant(f1, 90.0) + 0.7 * formant(f2, 120.0) + 0.3 * formant(f3, 200.0))
                / (1.0 + fh / 1000.0);
            v += g * ph.sin();
        }
        out.push(v * 6000.0 * syl);
    }
    out.iter().map(|&v| tone::to_i16(v)).collect()
}

#[test]
fn speech_like_signal_gives_no_digits() {
    for rate in [8000, 16000] {
        for seed in 0..3 {
            let pcm = speech_like(rate, 10.0, seed);
            let (ev, st) = events(rate, &pcm, rate as usize / 50);
            eprintln!("speech-like {rate} Hz seed {seed}: {st:?}");
            assert!(ev.is_empty(), "{rate} Hz seed {seed}: {ev:?} {st:?}");
        }
    }
}

/// A sustained vowel: harmonics of `f0` (with a slow 1 % pitch wander) from a source
/// falling 6 dB per octave (glottal pulse and lip radiation), through a cascade of
/// second-order formant resonances `(centre, bandwidth)` plus a third formant at 2.5 kHz.
fn vowel(rate: u32, f0: f64, formants: [(f64, f64); 2], secs: f64) -> Vec<i16> {
    let r = f64::from(rate);
    let n = (secs * r) as usize;
    // Magnitude of a resonance with unity gain at 0 Hz.
    let resonance = |f: f64, fc: f64, bw: f64| {
        let b = bw / 2.0;
        (fc * fc + b * b) / (((f - fc).powi(2) + b * b) * ((f + fc).powi(2) + b * b)).sqrt()
    };
    let mut phases = [0.0f64; 48];
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64 / r;
        let f = f0 * (1.0 + 0.01 * (2.0 * PI * 0.8 * t).sin());
        let mut v = 0.0;
        for (h, ph) in phases.iter_mut().enumerate() {
            let fh = f * (h + 1) as f64;
            *ph += 2.0 * PI * fh / r;
            if fh > 3600.0 {
                continue;
            }
            let g: f64 = formants
                .iter()
                .map(|&(fc, bw)| resonance(fh, fc, bw))
                .product::<f64>()
                * resonance(fh, 2500.0, 150.0)
                / (h + 1) as f64;
            v += g * ph.sin();
        }
        out.push(v);
    }
    // Peak at -6 dBFS.
    let peak = out.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    out.iter()
        .map(|v| tone::to_i16(v * 16384.0 / peak))
        .collect()
}

#[test]
fn vowels_with_harmonics_on_a_digit_give_no_digits() {
    // The worst case for talk-off: a pitch whose harmonics land on both tones of a digit
    // (within 1.5 %), with the formants centred on those harmonics.
    let mut cases = 0;
    let mut total = DtmfStats::default();
    for rate in [8000, 16000] {
        for d in ALL.chars() {
            let (fl, fh) = digit_frequencies(d).unwrap();
            for h1 in 2..=8u32 {
                let f0 = fl / f64::from(h1);
                if !(80.0..=350.0).contains(&f0) {
                    continue;
                }
                let h2 = (fh / f0).round();
                if (h2 * f0 / fh - 1.0).abs() > 0.015 {
                    continue;
                }
                for bw in [60.0, 100.0] {
                    let pcm = vowel(rate, f0, [(fl, bw), (fh, bw * 1.3)], 1.0);
                    let (ev, st) = events(rate, &pcm, rate as usize / 50);
                    assert!(
                        ev.is_empty(),
                        "{rate} {d} f0 {f0:.1} bw {bw}: {ev:?} {st:?}"
                    );
                    cases += 1;
                    total.hits += st.hits;
                    total.windows += st.windows;
                    total.residual += st.residual;
                    total.harmonic += st.harmonic;
                    total.twisted += st.twisted;
                    total.off_frequency += st.off_frequency;
                    total.low_fraction += st.low_fraction;
                    total.not_peaked += st.not_peaked;
                    total.quiet += st.quiet;
                    total.too_weak += st.too_weak;
                }
            }
        }
    }
    assert!(cases >= 20, "{cases}");
    eprintln!("adversarial vowels: {cases} cases, no digit; {total:?}");
}

#[test]
fn capacity_does_not_grow() {
    let mut d = DtmfDetector::new(16000).unwrap();
    let cap = d.capacity_samples();
    let mut s = Sig::new(16000);
    for c in "123".chars() {
        s.digit(c, 60.0, -10.0).silence(60.0);
    }
    s.noise_rms(50.0, 9);
    let pcm = s.pcm();
    let mut pressed = 0;
    for frame in pcm.chunks(320).cycle().take(100_000) {
        if let Some(DtmfEvent::Pressed(_)) = d.process(frame) {
            pressed += 1;
        }
    }
    assert_eq!(d.capacity_samples(), cap);
    assert!(pressed > 1000, "{pressed}");
    assert_eq!(d.stats().events_dropped, 0);
}

#[test]
fn long_input_queues_events() {
    // One call with a whole second of digits: the events wait in the queue.
    let mut s = Sig::new(8000);
    for c in "2580".chars() {
        s.digit(c, 60.0, -10.0).silence(60.0);
    }
    let mut d = DtmfDetector::new(8000).unwrap();
    let mut got = vec![d.process(&s.pcm())];
    while let Some(e) = d.next_event() {
        got.push(Some(e));
    }
    let pressed: String = got
        .iter()
        .flatten()
        .filter(|e| matches!(e, DtmfEvent::Pressed(_)))
        .map(DtmfEvent::digit)
        .collect();
    assert_eq!(pressed, "2580");
    assert_eq!(got.len(), 8);
    d.reset();
    assert_eq!(d.current(), None);
}

#[test]
fn interruptions_and_pauses() {
    for rate in [8000, 16000] {
        for shift in 0..12 {
            let lead = 20.0 + shift as f64 * 0.6;
            // Two 60 ms bursts of one key `gap_ms` apart, in noise.
            let split_by = |gap_ms: f64| {
                let mut s = Sig::new(rate);
                s.silence(lead)
                    .digit('6', 60.0, -10.0)
                    .silence(gap_ms)
                    .digit('6', 60.0, -10.0);
                s.silence(60.0).noise_snr(20.0, shift);
                presses(rate, &s.pcm())
            };
            // A 10 ms interruption inside a digit does not split it (Q.24).
            assert_eq!(split_by(10.0), "6", "{rate} Hz shift {shift}");
            // A 40 ms pause between two presses of one key gives two digits.
            assert_eq!(split_by(40.0), "66", "{rate} Hz shift {shift}");
        }
    }
}

#[test]
fn held_digit_and_short_dropout() {
    let mut s = Sig::new(8000);
    // A long press with a 5 ms drop-out in the middle is still one digit.
    s.silence(20.0)
        .digit('7', 200.0, -10.0)
        .silence(5.0)
        .digit('7', 200.0, -10.0)
        .silence(60.0);
    assert_eq!(presses(8000, &s.pcm()), "7");
    // Digit changes without a pause are both reported.
    let mut s = Sig::new(8000);
    s.silence(20.0)
        .digit('1', 100.0, -10.0)
        .digit('2', 100.0, -10.0)
        .silence(60.0);
    assert_eq!(presses(8000, &s.pcm()), "12");
}

#[test]
fn generator_frames_join_and_levels() {
    let rate = 8000;
    let mut one = DtmfGenerator::new(rate).unwrap();
    one.start('5', 100, -6.0).unwrap();
    let mut whole = vec![0i16; 1000];
    assert!(one.fill(&mut whole));
    assert!(!one.is_active());
    // Peak of the two-tone sum stays at the level (0.5 dB margin for the rounding).
    let peak = whole.iter().map(|v| v.unsigned_abs()).max().unwrap();
    let want = tone::dbfs_to_amplitude(-6.0).unwrap();
    assert!(f64::from(peak) <= want + 1.0 && f64::from(peak) > want * 0.94);
    // 100 ms at half amplitude plus the ramp tail, then silence.
    let ramp = rate as usize * GENERATOR_RAMP_MS as usize / 1000;
    assert!(whole[800 + ramp..].iter().all(|&v| v == 0));
    assert!(whole[800..800 + ramp - 1].iter().any(|&v| v != 0));
    let mut g = DtmfGenerator::new(rate).unwrap();
    g.start('5', 100, -6.0).unwrap();
    let mut parts = Vec::new();
    for n in [1usize, 7, 160, 33, 299, 500] {
        let mut f = vec![0i16; n];
        g.fill(&mut f);
        parts.extend_from_slice(&f);
    }
    assert_eq!(parts, whole);
    g.start('1', 100, -6.0).unwrap();
    g.cancel();
    let mut f = vec![3i16; 10];
    assert!(!g.fill(&mut f));
    assert_eq!(f, vec![0; 10]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_frame_split_gives_the_same_events(
        sizes in proptest::collection::vec(1usize..900, 1..12),
        lead in 0usize..400,
        digit in 0usize..16,
        wide in any::<bool>(),
    ) {
        let rate = if wide { 16000 } else { 8000 };
        let d = ALL.chars().nth(digit).unwrap();
        let mut s = Sig::new(rate);
        s.x.extend(std::iter::repeat_n(0.0, lead));
        s.digit(d, 45.0, -9.0).silence(40.0).digit('9', 45.0, -9.0).silence(40.0);
        s.noise_rms(30.0, lead as u64);
        let pcm = s.pcm();
        let (want, _) = events(rate, &pcm, pcm.len());
        prop_assert_eq!(
            want.clone(),
            vec![
                DtmfEvent::Pressed(d),
                DtmfEvent::Released(d),
                DtmfEvent::Pressed('9'),
                DtmfEvent::Released('9'),
            ]
        );
        let mut det = DtmfDetector::new(rate).unwrap();
        let mut got = Vec::new();
        let mut pos = 0;
        let mut i = 0;
        while pos < pcm.len() {
            let n = sizes[i % sizes.len()].min(pcm.len() - pos);
            if let Some(e) = det.process(&pcm[pos..pos + n]) {
                got.push(e);
            }
            while let Some(e) = det.next_event() {
                got.push(e);
            }
            pos += n;
            i += 1;
        }
        if let Some(e) = det.process(&vec![0i16; rate as usize * 60 / 1000]) {
            got.push(e);
        }
        while let Some(e) = det.next_event() {
            got.push(e);
        }
        prop_assert_eq!(got, want);
    }
}
