//! Rational-ratio resampling of a whole clip: a TTS binary's output (espeak-ng 22050 Hz, piper
//! 16000 or 22050 Hz, ...) to the station rate, 8 or 16 kHz.
//!
//! For `from → to` with `g = gcd(from, to)`, the clip is upsampled by `L = to / g`, filtered and
//! decimated by `M = from / g` (22050 → 8000 is 160/441, 22050 → 16000 is 320/441), computed in
//! polyphase form: each output sample is one branch of `2K + 1` taps of the prototype over the
//! input samples around it, so no zero is ever multiplied and no discarded sample computed.
//!
//! - **Design.** A Kaiser-windowed sinc (β = 9, the window `polyphase.rs` uses) at the upsampled
//!   rate `L·from`, cut off halfway between the passband edge `0.85·f_N` and `f_N`, the lower
//!   rate's Nyquist frequency (3.4 and 4 kHz for 8 kHz). The half length `K` (input samples) is
//!   chosen for that transition band: `K = ceil(2.86 · from / (0.15 · f_N))` (105 taps either
//!   side for 22050 → 8000). Each branch is scaled to sum to exactly 1, so DC passes at unity.
//! - **Response** (tested): passband 100 Hz to 3.4 kHz within ±0.01 dB; anything at or above
//!   the output's Nyquist frequency attenuated by ≥ 80 dB (aliases included).
//! - **Whole clips.** The filter is centred on each output (no delay: output `m` is input time
//!   `m·M/L`), with silence before and after the clip; the output has `ceil(len·L/M)` samples.
//!   A clip is seconds long and rendered once, so this is not a streaming filter.
//! - **Gain.** A gain in dB scales the outputs before rounding to nearest and saturating.
//!
//! Errors for rates outside [`MIN_RATE`]..=[`MAX_RATE`] and for ratios whose `L` exceeds
//! [`MAX_UP`] (the branch table would be large; no TTS rate needs it).

use std::f64::consts::PI;

use crate::polyphase::{kaiser, sinc};

/// Lowest rate accepted either way.
pub const MIN_RATE: u32 = 4000;
/// Highest rate accepted either way.
pub const MAX_RATE: u32 = 192_000;
/// Largest upsampling factor `L` (44100 → 16000 is 160; 11025 → 16000 is 640).
pub const MAX_UP: u32 = 1024;

/// Kaiser shape: about 90 dB of stopband.
const BETA: f64 = 9.0;
/// Passband edge as a fraction of the lower rate's Nyquist frequency.
const PASSBAND: f64 = 0.85;

/// Errors of the rational resampler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RatioError {
    /// A rate outside `MIN_RATE..=MAX_RATE`.
    Rate(u32),
    /// The reduced ratio needs an upsampling factor above `MAX_UP`.
    Ratio { from: u32, to: u32, up: u32 },
    /// The gain is not finite.
    Gain(f64),
}

impl std::fmt::Display for RatioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RatioError::Rate(r) => {
                write!(f, "sample rate {r} Hz is outside {MIN_RATE}..={MAX_RATE}")
            }
            RatioError::Ratio { from, to, up } => write!(
                f,
                "{from} Hz to {to} Hz needs upsampling by {up} (at most {MAX_UP} is supported)"
            ),
            RatioError::Gain(g) => write!(f, "gain {g} dB is not finite"),
        }
    }
}

impl std::error::Error for RatioError {}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A converter from one rate to another, its branches designed once.
#[derive(Debug, Clone)]
pub struct RatioResampler {
    up: usize,
    down: usize,
    /// Half length of a branch, in input samples.
    half: usize,
    /// Branch p (`p = (m·M) mod L`) holds the taps for input offsets `-K..=K` around
    /// `floor(m·M / L)`, `2K + 1` of them, each branch summing to 1.
    branches: Vec<f32>,
}

impl RatioResampler {
    pub fn new(from: u32, to: u32) -> Result<Self, RatioError> {
        for r in [from, to] {
            if !(MIN_RATE..=MAX_RATE).contains(&r) {
                return Err(RatioError::Rate(r));
            }
        }
        let g = gcd(from, to);
        let (up, down) = (to / g, from / g);
        if up > MAX_UP {
            return Err(RatioError::Ratio { from, to, up });
        }
        let nyquist = f64::from(from.min(to)) / 2.0;
        let transition = (1.0 - PASSBAND) * nyquist;
        // Kaiser's estimate of the length for β = 9 (A ≈ 90 dB): N ≈ (A − 8) / (2.285 Δω).
        let taps_at_from = (90.0 - 8.0) / (2.285 * 2.0 * PI * transition / f64::from(from));
        let half = ((taps_at_from / 2.0).ceil() as usize).max(2);
        let (l, width) = (up as usize, 2 * half + 1);
        // The prototype at the upsampled rate, centred at 0, over offsets -half·L..=half·L.
        let fast = f64::from(from) * f64::from(up);
        let cutoff = (PASSBAND + 1.0) / 2.0 * nyquist;
        let span = (half * l) as f64 + 1.0;
        let proto = |d: i64| -> f64 {
            sinc(2.0 * cutoff * d as f64 / fast) * kaiser(d as f64 / span, BETA)
        };
        let mut branches = vec![0f32; l * width];
        for p in 0..l {
            let taps: Vec<f64> = (0..width)
                .map(|j| proto(p as i64 + (j as i64 - half as i64) * l as i64))
                .collect();
            let sum: f64 = taps.iter().sum();
            if let Some(dst) = branches.get_mut(p * width..(p + 1) * width) {
                for (d, t) in dst.iter_mut().zip(&taps) {
                    *d = (t / sum) as f32;
                }
            }
        }
        Ok(RatioResampler {
            up: l,
            down: down as usize,
            half,
            branches,
        })
    }

    /// Output samples for `len` input samples: `ceil(len · L / M)`.
    pub fn output_len(&self, len: usize) -> usize {
        (len * self.up).div_ceil(self.down)
    }

    /// The whole clip converted, scaled by `gain_db`.
    pub fn process(&self, input: &[i16], gain_db: f64) -> Result<Vec<i16>, RatioError> {
        if !gain_db.is_finite() {
            return Err(RatioError::Gain(gain_db));
        }
        let gain = 10f64.powf(gain_db / 20.0) as f32;
        let width = 2 * self.half + 1;
        // The clip with `half` samples of silence either side, so every branch reads in range.
        let mut padded = vec![0f32; input.len() + 2 * self.half];
        for (d, s) in padded.iter_mut().skip(self.half).zip(input) {
            *d = f32::from(*s);
        }
        let n_out = self.output_len(input.len());
        let mut out = Vec::with_capacity(n_out);
        for m in 0..n_out {
            let t = m * self.down;
            let (base, phase) = (t / self.up, t % self.up);
            // Input sample base + i - half sits at padded index base + i, for tap index
            // width - 1 - i (the branch runs from offset -K to +K in the upsampled grid, i.e.
            // input offsets +K down to -K).
            let (Some(x), Some(taps)) = (
                padded.get(base..base + width),
                self.branches.get(phase * width..(phase + 1) * width),
            ) else {
                out.push(0);
                continue;
            };
            let acc: f32 = x.iter().zip(taps.iter().rev()).map(|(a, b)| a * b).sum();
            out.push((acc * gain).round().clamp(-32768.0, 32767.0) as i16);
        }
        Ok(out)
    }
}

/// Convert a whole clip from `from` Hz to `to` Hz with `gain_db` (a copy when the rates match).
pub fn resample_clip(
    input: &[i16],
    from: u32,
    to: u32,
    gain_db: f64,
) -> Result<Vec<i16>, RatioError> {
    if from == to {
        if !gain_db.is_finite() {
            return Err(RatioError::Gain(gain_db));
        }
        if !(MIN_RATE..=MAX_RATE).contains(&from) {
            return Err(RatioError::Rate(from));
        }
        let gain = 10f64.powf(gain_db / 20.0);
        return Ok(input
            .iter()
            .map(|&s| (f64::from(s) * gain).round().clamp(-32768.0, 32767.0) as i16)
            .collect());
    }
    RatioResampler::new(from, to)?.process(input, gain_db)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_signal::{amplitude, db, tone};

    fn gain_of(from: u32, to: u32, freq: f64) -> f64 {
        let x = tone(freq, f64::from(from), 16000.0, from as usize);
        let y = resample_clip(&x, from, to, 0.0).expect("resample");
        // Away from the clip's edges, over whole periods of the output.
        let n = to as usize / 2;
        let mid = &y[to as usize / 4..to as usize / 4 + n];
        db(amplitude(mid, freq, f64::from(to)) / 16000.0)
    }

    #[test]
    fn lengths_and_ratios() {
        let r = RatioResampler::new(22050, 8000).expect("160/441");
        assert_eq!((r.up, r.down), (160, 441));
        assert_eq!(r.output_len(22050), 8000);
        assert_eq!(r.output_len(1), 1);
        let r = RatioResampler::new(22050, 16000).expect("320/441");
        assert_eq!((r.up, r.down), (320, 441));
        assert_eq!(
            resample_clip(&[1000; 441], 22050, 16000, 0.0)
                .expect("ok")
                .len(),
            320
        );
        assert_eq!(
            resample_clip(&[], 22050, 8000, 0.0).expect("empty"),
            Vec::<i16>::new()
        );
        assert_eq!(
            RatioResampler::new(22050, 8).err(),
            Some(RatioError::Rate(8))
        );
        assert!(matches!(
            RatioResampler::new(22051, 8000),
            Err(RatioError::Ratio { .. })
        ));
        assert!(matches!(
            resample_clip(&[1], 8000, 8000, f64::NAN),
            Err(RatioError::Gain(_))
        ));
        assert!(matches!(
            resample_clip(&[1], 22050, 8000, f64::INFINITY),
            Err(RatioError::Gain(_))
        ));
    }

    #[test]
    fn passband_is_flat_and_dc_passes() {
        for (from, to) in [
            (22050, 8000),
            (22050, 16000),
            (16000, 8000),
            (8000, 16000),
            (24000, 16000),
        ] {
            let top = f64::from(from.min(to)) / 2.0 * 0.85;
            let mut f = 100.0;
            while f <= top {
                let g = gain_of(from, to, f);
                assert!(g.abs() < 0.01, "{from}->{to} at {f} Hz: {g:.4} dB");
                f += 100.0;
            }
            let dc = resample_clip(&vec![12_345; from as usize], from, to, 0.0).expect("dc");
            let mid = dc.get(dc.len() / 2).copied();
            assert_eq!(mid, Some(12_345), "{from}->{to}");
        }
    }

    #[test]
    fn what_would_alias_is_removed() {
        let mut worst: f64 = -200.0;
        for (from, to) in [(22050u32, 8000u32), (22050, 16000), (44100, 8000)] {
            let nyquist = f64::from(to) / 2.0;
            let mut f = nyquist;
            while f < f64::from(from) / 2.0 - 50.0 {
                let x = tone(f, f64::from(from), 16000.0, from as usize);
                let y = resample_clip(&x, from, to, 0.0).expect("resample");
                let mid = &y[to as usize / 4..3 * to as usize / 4];
                let rms = (mid.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>()
                    / mid.len() as f64)
                    .sqrt();
                // Against the tone's own RMS (16000 / √2).
                let level = db(rms.max(0.5) / (16000.0 / 2f64.sqrt()));
                worst = worst.max(level);
                assert!(level < -80.0, "{from}->{to}: {f} Hz leaks at {level:.1} dB");
                f += 97.0;
            }
        }
        println!("worst alias {worst:.1} dB");
    }

    #[test]
    fn gain_is_applied_before_rounding() {
        let x = tone(1000.0, 22050.0, 10000.0, 22050);
        let y = resample_clip(&x, 22050, 8000, -6.0206).expect("resample");
        let a = amplitude(&y[2000..6000], 1000.0, 8000.0);
        assert!((a - 5000.0).abs() < 5.0, "{a}");
        let loud = resample_clip(&x, 22050, 8000, 20.0).expect("loud");
        assert_eq!(loud.iter().copied().max(), Some(i16::MAX));
        let same = resample_clip(&[100, -100], 16000, 16000, 6.0206).expect("same");
        assert_eq!(same, vec![200, -200]);
    }
}
