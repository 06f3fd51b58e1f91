//! Streaming integer-ratio converters for the sound card edge: 48 kHz ↔ 8 kHz (÷6, ×6) and
//! 48 kHz ↔ 16 kHz (÷3, ×3).
//!
//! USB radio interfaces (CM108/CM119) run only at 44.1 or 48 kHz, while the station mixes at 8 or
//! 16 kHz. Both directions use one linear-phase FIR prototype per factor, run in polyphase form so
//! that only the outputs kept (decimation) and only the non-zero taps (interpolation) are
//! computed:
//!
//! - **Design.** `h[n] = sinc((n - c)/M) / M · kaiser(N, β = 9)[n]` at 48 kHz, cutoff at the low
//!   rate's Nyquist frequency, N = M·K taps (M = 6: N = 240; M = 3: N = 144), c = (N - 1)/2.
//!   Each of the M polyphase branches is then scaled to sum to exactly 1/M, so DC passes at unity
//!   gain and leaves no image at multiples of the low rate. The design runs once per converter,
//!   in f64, and the taps are stored as f32.
//! - **Response** (f32 taps; see the tests and docs/media.md): passband ripple within
//!   ±0.0004 dB up to 3.4 kHz (÷6) or 7 kHz (÷3); stopband from 4.6 kHz (÷6) or 9 kHz (÷3)
//!   attenuated by ≥ 90 dB.
//! - **Cost.** Decimating: the N taps pair up by symmetry, N/2 multiplies per output sample
//!   (120 at ÷6, 72 at ÷3). Interpolating: K multiplies per output sample (40 at ×6, 48 at ×3).
//!   Arithmetic is f32; outputs are rounded to nearest (ties to even) and saturated to i16.
//! - **Latency.** (N - 1)/2 samples at 48 kHz either way: 2.49 ms for 8 kHz, 1.49 ms for 16 kHz.
//!
//! Both structs carry their history across calls, so any split of a signal into pieces gives
//! exactly the samples one call on the whole signal gives. A gain (linear, default 1) scales the
//! outputs before rounding, so a level change never clips inside the filter.

use std::f64::consts::PI;

use crate::fir::{fir_dot, fir_pair, round_up_block};
use crate::resample::{check_even, Kernel, NeBytes, PcmIn, PcmOut, Resample, ResampleError};

/// The sound card rate the filters are designed for.
pub const DEVICE_RATE: u32 = 48_000;

/// Conversion factors with a filter: 48 kHz ↔ 16 kHz and 48 kHz ↔ 8 kHz.
pub const FACTORS: &[u32] = &[3, 6];

/// Kaiser window shape: ≥ 90 dB stopband with the tap counts below.
const BETA: f64 = 9.0;

/// Taps per polyphase branch; the prototype has `factor × branch_len` taps.
const fn branch_len(factor: usize) -> usize {
    if factor == 3 {
        48
    } else {
        40
    }
}

fn check_factor(factor: u32) -> Result<usize, ResampleError> {
    if FACTORS.contains(&factor) {
        Ok(factor as usize)
    } else {
        Err(ResampleError::UnsupportedFactor {
            factor,
            accepted: FACTORS,
        })
    }
}

/// Modified Bessel function of the first kind, order 0 (power series; converges for the
/// arguments a Kaiser window uses).
pub(crate) fn bessel_i0(x: f64) -> f64 {
    let mut sum = 1.0;
    let mut term = 1.0;
    for k in 1..60 {
        let r = x / (2.0 * f64::from(k));
        term *= r * r;
        sum += term;
    }
    sum
}

/// The Kaiser window with shape `beta` at `r`, the position from -1 (first tap) through 0 (the
/// centre) to 1 (last tap).
pub(crate) fn kaiser(r: f64, beta: f64) -> f64 {
    bessel_i0(beta * (1.0 - r * r).max(0.0).sqrt()) / bessel_i0(beta)
}

/// The normalised sinc, `sin(πx) / πx`, and 1 at 0.
pub(crate) fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        (PI * x).sin() / (PI * x)
    }
}

/// The prototype lowpass for `factor`, at 48 kHz, in f64 (see the module docs).
pub fn prototype(factor: u32) -> Result<Vec<f64>, ResampleError> {
    let m = check_factor(factor)?;
    let n = m * branch_len(m);
    let centre = (n - 1) as f64 / 2.0;
    let tap = |i: usize| {
        let t = (i as f64 - centre) / m as f64;
        let r = 2.0 * i as f64 / (n - 1) as f64 - 1.0;
        sinc(t) * kaiser(r, BETA) / m as f64
    };
    // Computed for the first half and mirrored, so the symmetry the decimator relies on is exact.
    let half: Vec<f64> = (0..n / 2).map(tap).collect();
    let mut h: Vec<f64> = half.iter().chain(half.iter().rev()).copied().collect();
    // Branches p and M-1-p are mirror images: one scale for both keeps the symmetry exact.
    let scales: Vec<f64> = (0..m)
        .map(|p| {
            let sum: f64 = h.iter().skip(p.min(m - 1 - p)).step_by(m).sum();
            1.0 / (m as f64 * sum)
        })
        .collect();
    for (i, v) in h.iter_mut().enumerate() {
        *v *= scales.get(i % m).copied().unwrap_or(1.0);
    }
    Ok(h)
}

/// The filter of `factor`: its prototype, the factor as an index, and the taps per branch.
fn design(factor: u32) -> Result<(Vec<f64>, usize, usize), ResampleError> {
    let h = prototype(factor)?;
    let m = check_factor(factor)?;
    Ok((h, m, branch_len(m)))
}

/// Streaming 48 kHz → 8 kHz (factor 6) or → 16 kHz (factor 3) decimator.
///
/// Output m is `Σ_n h[n] · x[M·m - n]`; it is produced once the M input samples from `x[M·m]` on
/// have arrived, so fewer than M trailing input samples wait for the next call.
#[derive(Debug, Clone)]
pub struct Decimator {
    factor: usize,
    k: usize,
    /// `(taps, a, b)`: adds `Σ_i taps[i] · (v_a[j + k - 1 - i] + v_b[j + i])`, where stream
    /// `v_q[t] = raw[M·t + q]`. Branches q and M-1-q have mirrored taps, so they share the
    /// multiplies; with M odd the middle branch pairs with itself (half its taps).
    pairs: Vec<(Vec<f32>, usize, usize)>,
    /// `N - 1` samples of history, then the input not yet consumed.
    raw: Vec<f32>,
    /// The M deinterleaved streams of the current call (scratch).
    streams: Vec<Vec<f32>>,
    acc: Vec<f32>,
    gain: f32,
}

impl Decimator {
    /// A decimator by `factor` (3 or 6) whose history is silence.
    pub fn new(factor: u32) -> Result<Self, ResampleError> {
        let (h, m, k) = design(factor)?;
        let branch = |q: usize| -> Vec<f32> {
            h.iter()
                .skip(m - 1 - q)
                .step_by(m)
                .map(|&v| v as f32)
                .collect()
        };
        let mut pairs = Vec::new();
        for q in 0..m {
            let r = m - 1 - q;
            if q < r {
                pairs.push((branch(q), q, r));
            } else if q == r {
                let mut taps = branch(q);
                taps.truncate(k / 2);
                pairs.push((taps, q, q));
            }
        }
        Ok(Decimator {
            factor: m,
            k,
            pairs,
            raw: vec![0.0; m * k - 1],
            streams: vec![Vec::new(); m],
            acc: Vec::new(),
            gain: 1.0,
        })
    }

    fn history(&self) -> usize {
        self.factor * self.k - 1
    }

    pub fn factor(&self) -> u32 {
        self.factor as u32
    }

    /// Group delay in output samples: (N - 1) / 2M.
    pub fn delay(&self) -> f64 {
        self.history() as f64 / 2.0 / self.factor as f64
    }

    /// Linear gain applied to every output before rounding (1.0 leaves the signal untouched).
    pub fn set_gain(&mut self, gain: f32) {
        self.gain = gain;
    }

    /// Forgets the history and any waiting input, as if newly created.
    pub fn reset(&mut self) {
        self.raw.clear();
        self.raw.resize(self.history(), 0.0);
    }

    /// As [`process`](Self::process) with native-endian 16-bit PCM bytes in.
    pub fn process_ne_bytes(
        &mut self,
        input: &[u8],
        out: &mut Vec<i16>,
    ) -> Result<(), ResampleError> {
        check_even(input.len())?;
        let start = out.len();
        out.resize(start + self.output_len(input.len() / 2), 0);
        if let Some(dst) = out.get_mut(start..) {
            self.run(NeBytes(input), dst);
        }
        Ok(())
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.raw.capacity()
            + self.acc.capacity()
            + self.streams.iter().map(Vec::capacity).sum::<usize>()
    }
}

impl Kernel for Decimator {
    /// One output sample per `factor` input samples, counting those waiting from the last call.
    fn samples_out(&self, input: usize) -> usize {
        let waiting = self.raw.len() - self.history();
        input.saturating_add(waiting) / self.factor
    }

    /// `out` holds exactly `output_len(input.samples())` samples.
    fn run(&mut self, input: impl PcmIn, out: impl PcmOut) {
        let (m, k, hist) = (self.factor, self.k, self.history());
        input.push_all(&mut self.raw);
        let n = (self.raw.len() - hist) / m;
        debug_assert_eq!(out.samples(), n);
        if n == 0 {
            return;
        }
        let padded = round_up_block(n);
        for (q, s) in self.streams.iter_mut().enumerate() {
            s.clear();
            s.extend(self.raw.iter().skip(q).step_by(m).take(k - 1 + n));
            s.resize(k - 1 + padded, 0.0);
        }
        self.acc.clear();
        self.acc.resize(padded, 0.0);
        for (taps, a, b) in &self.pairs {
            if let (Some(a), Some(b)) = (self.streams.get(*a), self.streams.get(*b)) {
                fir_pair(a, b, taps, k, &mut self.acc);
            }
        }
        let out_acc = self.acc.get_mut(..n).unwrap_or_default();
        if self.gain != 1.0 {
            out_acc.iter_mut().for_each(|v| *v *= self.gain);
        }
        out.put(out_acc);
        self.raw.drain(..m * n);
    }
}

/// Streaming 8 kHz → 48 kHz (factor 6) or 16 kHz → 48 kHz (factor 3) interpolator.
///
/// Output `M·m + r` is `M · Σ_i h[M·i + r] · x[m - i]`: the zero-stuffed input filtered by the
/// prototype, skipping the products with the stuffed zeros.
#[derive(Debug, Clone)]
pub struct Interpolator {
    factor: usize,
    k: usize,
    /// Taps of output phase r, ordered for [`fir_dot`]: `M · h[M·(k - 1 - i) + r]`.
    phases: Vec<Vec<f32>>,
    /// `k - 1` samples of history, then the current call's input, then zero padding.
    x: Vec<f32>,
    /// Each phase's outputs for the current call.
    acc: Vec<Vec<f32>>,
    /// The phases interleaved into output order.
    out: Vec<f32>,
    gain: f32,
}

impl Interpolator {
    /// An interpolator by `factor` (3 or 6) whose history is silence.
    pub fn new(factor: u32) -> Result<Self, ResampleError> {
        let (h, m, k) = design(factor)?;
        let phases = (0..m)
            .map(|r| {
                let mut taps: Vec<f32> = h
                    .iter()
                    .skip(r)
                    .step_by(m)
                    .map(|&v| (v * m as f64) as f32)
                    .collect();
                taps.reverse();
                taps
            })
            .collect();
        Ok(Interpolator {
            factor: m,
            k,
            phases,
            x: vec![0.0; k - 1],
            acc: vec![Vec::new(); m],
            out: Vec::new(),
            gain: 1.0,
        })
    }

    pub fn factor(&self) -> u32 {
        self.factor as u32
    }

    /// Group delay in output samples: (N - 1) / 2.
    pub fn delay(&self) -> f64 {
        (self.factor * self.k - 1) as f64 / 2.0
    }

    /// Linear gain applied to every output before rounding (1.0 leaves the signal untouched).
    pub fn set_gain(&mut self, gain: f32) {
        self.gain = gain;
    }

    /// Forgets the history, as if newly created.
    pub fn reset(&mut self) {
        self.x.clear();
        self.x.resize(self.k - 1, 0.0);
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.x.capacity() + self.out.capacity() + self.acc.iter().map(Vec::capacity).sum::<usize>()
    }
}

impl Kernel for Interpolator {
    /// `factor` output samples per input sample (saturating).
    fn samples_out(&self, input: usize) -> usize {
        input.saturating_mul(self.factor)
    }

    /// `out` holds exactly `factor × input.samples()` samples.
    fn run(&mut self, input: impl PcmIn, out: impl PcmOut) {
        let n = input.samples();
        debug_assert_eq!(out.samples(), n * self.factor);
        if n == 0 {
            return;
        }
        let k = self.k;
        let padded = round_up_block(n);
        self.x.truncate(k - 1);
        input.push_all(&mut self.x);
        self.x.resize(k - 1 + padded, 0.0);
        for (taps, acc) in self.phases.iter().zip(self.acc.iter_mut()) {
            acc.clear();
            acc.resize(padded, 0.0);
            fir_dot(&self.x, taps, acc);
        }
        let m = self.factor;
        self.out.clear();
        self.out.resize(n * m, 0.0);
        for (frame, j) in self.out.chunks_exact_mut(m).zip(0..n) {
            for (dst, acc) in frame.iter_mut().zip(&self.acc) {
                *dst = acc.get(j).copied().unwrap_or(0.0) * self.gain;
            }
        }
        out.put(&self.out);
        self.x.copy_within(n..n + k - 1, 0);
        self.x.truncate(k - 1);
    }
}

#[cfg(test)]
mod tests;
