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
