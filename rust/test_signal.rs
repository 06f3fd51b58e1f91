//! Test signals and measurements shared by the kernels' unit tests.

use std::f64::consts::PI;

/// `len` samples of a sine of amplitude `amp` at `freq` Hz, sampled at `fs`, rounded to i16.
pub fn tone(freq: f64, fs: f64, amp: f64, len: usize) -> Vec<i16> {
    (0..len)
        .map(|n| (amp * (2.0 * PI * freq * n as f64 / fs).sin()).round() as i16)
        .collect()
}

/// Amplitude of the `freq` component of `x` (one DFT bin; `x` spans whole periods).
pub fn amplitude(x: &[i16], freq: f64, fs: f64) -> f64 {
    let (mut re, mut im) = (0.0, 0.0);
    for (n, &v) in x.iter().enumerate() {
        let ph = 2.0 * PI * freq * n as f64 / fs;
        re += f64::from(v) * ph.cos();
        im += f64::from(v) * ph.sin();
    }
    2.0 * re.hypot(im) / x.len() as f64
}

/// An amplitude ratio in dB.
pub fn db(ratio: f64) -> f64 {
    20.0 * ratio.log10()
}

/// Splits `x` at the given cut points (taken modulo the length, sorted).
pub fn pieces<'a>(x: &'a [i16], cuts: &[usize]) -> Vec<&'a [i16]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (x.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts.into_iter().chain([x.len()]) {
        out.push(&x[at..c]);
        at = c;
    }
    out
}

/// `len` samples of a full-scale square wave, `half` samples at `i16::MAX` then `half` at
/// `i16::MIN`.
pub fn square_wave(len: usize, half: usize) -> Vec<i16> {
    (0..len)
        .map(|n| {
            if (n / half) % 2 == 0 {
                i16::MAX
            } else {
                i16::MIN
            }
        })
        .collect()
}

/// `len` samples of a fixed pseudo-random sequence (a multiplicative hash of the index).
pub fn hash_noise(len: u32) -> Vec<i16> {
    (0..len)
        .map(|n| (n.wrapping_mul(2_654_435_761) >> 16) as i16)
        .collect()
}

/// `got` is the reference output `want` rounded and saturated to i16, within one step.
pub fn assert_matches_reference(got: &[i16], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let clamped = w.round().clamp(-32768.0, 32767.0);
        assert!((f64::from(g) - clamped).abs() <= 1.0, "k={k}: {g} vs {w}");
    }
}

/// Deterministic noise for the tests: SplitMix64, and Box-Muller for a normal deviate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal.
    pub fn gauss(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
    }
}
