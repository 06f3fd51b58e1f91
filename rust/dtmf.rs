//! In-band DTMF: a streaming Goertzel detector and a two-tone generator.
//!
//! The detector follows the classic telephony design (ITU-T Q.23/Q.24, and the Goertzel
//! detectors in Asterisk's `dsp.c` and spandsp), re-derived here; docs/dtmf.md has the
//! reasoning and the measured results. Audio is analysed in windows of 12.75 ms
//! ([`WINDOW_MS`]: 102 samples at 8 kHz, 204 at 16 kHz) that overlap by half, so a verdict comes
//! every 6.375 ms. A window is a *hit* for a digit when all of these hold:
//!
//! 1. **Peaks.** The strongest row tone exceeds every other row tone by [`RELATIVE_PEAK_DB`] in
//!    rectangular-window Goertzel power (neighbouring rows, 73 to 89 Hz apart, sit near each
//!    other's first null at 78.4 Hz), and the strongest column tone exceeds the other columns by
//!    as much in Hann-window power (columns are 127 to 156 Hz apart; the Hann window also keeps
//!    a row tone up to 8 dB stronger out of the column bins, where the rectangular window's
//!    sidelobes let it in).
//! 2. **Energy share.** Those two tones carry at least [`TONE_ENERGY_FRACTION`] of the window's
//!    energy (Goertzel power against the sum of squares), which rejects speech and music (their
//!    energy spreads over many harmonics), noise, and windows only partly covered by a tone.
//! 3. **Frequency.** Each tone's frequency, from the phase advance of a Hann-windowed DFT
//!    between this window and the previous one (6.375 ms earlier), is within
//!    [`FREQ_TOLERANCE`] of nominal. That accepts the ±1.5 % Q.24 asks to accept and rejects
//!    the ±3.5 % it asks to reject, which a 12.75 ms window's bandwidth alone cannot tell apart.
//! 4. **Level.** Each tone's amplitude (Hann DFT, corrected for the measured frequency offset,
//!    so nearly free of the other tone's leakage) is at least [`MIN_TONE_DBFS`].
//! 5. **Twist.** The low-group tone is at most [`NORMAL_TWIST_DB`] above the high-group tone
//!    and at most [`REVERSE_TWIST_DB`] below it (Asterisk's convention of "normal" and
//!    "reverse" twist).
//! 6. **Second harmonic.** With both fitted tones (frequency, amplitude, phase) subtracted from
//!    the window, the power left at twice each tone's frequency is at least [`HARMONIC_DB`]
//!    below the tone. A voiced sound with a harmonic on a DTMF frequency also has one at twice
//!    that frequency; a DTMF tone has none. (Twice a row frequency lies only 58 to 71 Hz from a
//!    column tone, so without the subtraction the column tone would read as a harmonic.)
//! 7. **Residual.** What is left after the subtraction holds at most [`RESIDUAL_DB`] of the
//!    window's energy: the window is two steady sines and little else.
//!
//! A digit is *pressed* after [`HITS_TO_PRESS`] hits in a row and *released* after
//! [`MISSES_TO_RELEASE`] windows in a row without it. As measured at 20 dB SNR: tones of 38 ms
//! or more are always pressed and tones of 31 ms or less never are; a gap of up to 19 ms inside
//! a press is bridged (Q.24: at least 10 ms) and one of 27 ms or more always splits it into two
//! digits (Q.24: at most 40 ms).
//!
//! The detector is a `&mut self` kernel: samples of any frame length go into a buffer carried
//! across calls, every decision depends only on the sample stream (never on where the frames
//! were cut), and nothing allocates after [`DtmfDetector::new`].

use std::collections::VecDeque;
use std::f64::consts::PI;
use std::fmt;

use crate::tone::{self, Envelope, Oscillator, ToneError};

/// Low-group (row) frequencies in Hz.
pub const ROW_HZ: [f64; 4] = [697.0, 770.0, 852.0, 941.0];
/// High-group (column) frequencies in Hz.
pub const COL_HZ: [f64; 4] = [1209.0, 1336.0, 1477.0, 1633.0];
/// The keypad, row by row: `KEYS[row][col]`.
pub const KEYS: [[char; 4]; 4] = [
    ['1', '2', '3', 'A'],
    ['4', '5', '6', 'B'],
    ['7', '8', '9', 'C'],
    ['*', '0', '#', 'D'],
];

/// Analysis window length in ms (the hop between verdicts is half of it).
pub const WINDOW_MS: f64 = 12.75;
/// Consecutive hits that make a press (4 hits span 31.9 ms of audio; the frequency test also
/// looks 6.4 ms further back).
pub const HITS_TO_PRESS: u32 = 4;
/// Consecutive windows without the digit that release it (6 hops, 38 ms).
pub const MISSES_TO_RELEASE: u32 = 6;
/// Weakest tone accepted, per tone (peak level of that sine).
pub const MIN_TONE_DBFS: f64 = -42.0;
/// Largest excess of the low-group tone over the high-group tone.
pub const NORMAL_TWIST_DB: f64 = 8.0;
/// Largest excess of the high-group tone over the low-group tone.
pub const REVERSE_TWIST_DB: f64 = 4.0;
/// Margin of the strongest tone of a group over the group's other tones (power).
pub const RELATIVE_PEAK_DB: f64 = 8.0;
/// Share of the window's energy the two tones must carry.
pub const TONE_ENERGY_FRACTION: f64 = 0.7;
/// Margin of each tone over the power at twice its frequency.
pub const HARMONIC_DB: f64 = 15.0;
/// Largest energy left in the window after subtracting the two fitted tones, relative to the
/// window's energy.
pub const RESIDUAL_DB: f64 = -15.0;
/// Largest relative frequency error accepted (2.5 %, between Q.24's 1.5 % and 3.5 %).
pub const FREQ_TOLERANCE: f64 = 0.025;
/// Raised-cosine ramp of generated digits, in ms.
pub const GENERATOR_RAMP_MS: u32 = 2;

/// Events held for [`DtmfDetector::next_event`]; 20 ms frames never hold more than two.
const EVENT_QUEUE: usize = 32;

/// Errors of the DTMF kernels.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum DtmfError {
    /// The detector runs at 8000 or 16000 Hz only.
    Rate(u32),
    /// Not one of `0-9`, `*`, `#`, `A-D`.
    Digit(char),
    /// A generator parameter was refused.
    Tone(ToneError),
    /// The twist is not finite.
    Twist(f64),
}

impl fmt::Display for DtmfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DtmfError::Rate(r) => write!(f, "DTMF detection runs at 8000 or 16000 Hz, not {r}"),
            DtmfError::Digit(c) => write!(f, "{c:?} is not a DTMF digit"),
            DtmfError::Tone(e) => write!(f, "DTMF generator: {e}"),
            DtmfError::Twist(t) => write!(f, "twist {t} dB is not finite"),
        }
    }
}

impl std::error::Error for DtmfError {}

impl From<ToneError> for DtmfError {
    fn from(e: ToneError) -> Self {
        DtmfError::Tone(e)
    }
}

/// Row and column of a digit (case-insensitive for `A-D`).
pub fn digit_position(digit: char) -> Option<(usize, usize)> {
    let d = digit.to_ascii_uppercase();
    KEYS.iter()
        .enumerate()
        .find_map(|(r, row)| row.iter().position(|&k| k == d).map(|c| (r, c)))
}

/// The two frequencies of a digit, low group first.
pub fn digit_frequencies(digit: char) -> Option<(f64, f64)> {
    let (r, c) = digit_position(digit)?;
    Some((*ROW_HZ.get(r)?, *COL_HZ.get(c)?))
}

/// What the detector reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtmfEvent {
    /// A digit began (reported once per press).
    Pressed(char),
    /// The digit pressed earlier ended.
    Released(char),
}

impl DtmfEvent {
    pub fn digit(&self) -> char {
        match self {
            DtmfEvent::Pressed(c) | DtmfEvent::Released(c) => *c,
        }
    }
}

/// Counters of the detector's verdicts, one per analysis window. Each rejected window counts
/// under the first test it failed, in the order of the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DtmfStats {
    /// Windows analysed.
    pub windows: u64,
    /// Windows that passed every test.
    pub hits: u64,
    /// Too little energy to hold a tone at the minimum level (no Goertzel run).
    pub quiet: u64,
    /// No clear strongest tone in a group.
    pub not_peaked: u64,
    /// The two tones carried too little of the energy.
    pub low_fraction: u64,
    /// A tone was outside the frequency tolerance.
    pub off_frequency: u64,
    /// A tone was below the minimum level.
    pub too_weak: u64,
    /// The tones' levels differed too much.
    pub twisted: u64,
    /// A tone had a second harmonic.
    pub harmonic: u64,
    /// Too much was left after taking the two tones out.
    pub residual: u64,
    /// Digits pressed.
    pub presses: u64,
    /// Events lost because nobody drained the queue (see [`DtmfDetector::next_event`]).
    pub events_dropped: u64,
}

/// Why a window was not a hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    Quiet,
    Peak,
    Fraction,
    Frequency,
    Level,
    Twist,
    Harmonic,
    Residual,
}

/// Per-frequency constants at one sample rate.
#[derive(Debug, Clone, Copy, Default)]
struct Bin {
    /// Goertzel coefficient `2·cos(ω)` for the tone and for its second harmonic.
    coef: f32,
    coef2: f32,
    /// Radians per sample.
    omega: f64,
}

/// A tone fitted in one window: `amplitude · cos(omega·n + phase)` for `n` from the window start.
#[derive(Debug, Clone, Copy)]
struct Fit {
    /// Relative frequency error against the nominal frequency.
    error: f64,
    amplitude: f64,
    phase: f64,
    /// Measured frequency, radians per sample.
    omega: f64,
}

/// Streaming DTMF detector for one audio stream at 8 or 16 kHz.
#[derive(Debug, Clone)]
pub struct DtmfDetector {
    rate: u32,
    /// Hop between windows (half a window), in samples.
    hop: usize,
    /// `3·hop` samples: the previous window is `buf[..2·hop]`, the current one
    /// `buf[hop..]`. New samples are written at `fill`, from `2·hop` up.
    buf: Vec<f32>,
    fill: usize,
    /// Rows then columns.
    bins: [Bin; 8],
    /// `bins[k].coef`, side by side for [`goertzel8`].
    coefs: [f32; 8],
    /// Hann window times `cos(ωn)` and `sin(ωn)` for each of the eight tones, `8 × window`.
    hann_cos: Vec<f32>,
    hann_sin: Vec<f32>,
    /// The Hann window and its sum.
    hann: Vec<f32>,
    hann_sum: f64,
    /// Scratch: the window less its two fitted tones.
    residual: Vec<f32>,
    /// Window energy below which no tone can pass the level test.
    quiet_energy: f32,
    /// Minimum tone amplitude, in sample units.
    min_amplitude: f64,
    /// Candidate digit of the latest hits and their count.
    candidate: Option<usize>,
    run: u32,
    /// Digit held down, and windows in a row without it.
    current: Option<usize>,
    misses: u32,
    events: VecDeque<DtmfEvent>,
    stats: DtmfStats,
}

#[inline]
fn goertzel(x: &[f32], coef: f32) -> f32 {
    let (mut s1, mut s2) = (0f32, 0f32);
    for &v in x {
        let s0 = v + coef * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    s1 * s1 + s2 * s2 - coef * s1 * s2
}

/// Eight Goertzel filters in one pass: the filters are independent, so the eight lanes
/// vectorise and no filter waits on its own recursion.
#[inline]
fn goertzel8(x: &[f32], coef: &[f32; 8]) -> [f32; 8] {
    let (mut s1, mut s2) = ([0f32; 8], [0f32; 8]);
    for &v in x {
        for k in 0..8 {
            let s0 = v + coef[k] * s1[k] - s2[k];
            s2[k] = s1[k];
            s1[k] = s0;
        }
    }
    let mut power = [0f32; 8];
    for k in 0..8 {
        power[k] = s1[k] * s1[k] + s2[k] * s2[k] - coef[k] * s1[k] * s2[k];
    }
    power
}

/// Response of the `len`-point Hann window `sin²(π(n + ½)/len)` at `delta` radians per sample
/// off its centre frequency, relative to its response at the centre.
///
/// With `m = n − (len − 1)/2` the window is `½ + ½·cos(2πm/len)`, so its transform is three
/// Dirichlet kernels `D(x) = Σ e^{jxm} = sin(x·len/2) / sin(x/2)`: `½·D(δ) + ¼·D(δ ± 2π/len)`,
/// and `len/2` at the centre.
fn hann_response(delta: f64, len: f64) -> f64 {
    let dirichlet = |x: f64| {
        let d = (x / 2.0).sin();
        if d.abs() < 1e-12 {
            len
        } else {
            (x * len / 2.0).sin() / d
        }
    };
    let step = 2.0 * PI / len;
    (0.5 * dirichlet(delta) + 0.25 * (dirichlet(delta + step) + dirichlet(delta - step)))
        / (len / 2.0)
}

/// Lanes of the Hann DFT's partial sums (independent accumulators that vectorise).
const LANES: usize = 8;

fn db_ratio(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

fn digit_char(idx: usize) -> char {
    KEYS.get(idx / 4)
        .and_then(|row| row.get(idx % 4))
        .copied()
        .unwrap_or('?')
}

impl DtmfDetector {
    /// A detector for audio at `rate` (8000 or 16000 Hz).
    pub fn new(rate: u32) -> Result<Self, DtmfError> {
        let hop = match rate {
            8000 => 51,
            16000 => 102,
            _ => return Err(DtmfError::Rate(rate)),
        };
        let window = 2 * hop;
        let mut bins = [Bin::default(); 8];
        for (b, &f) in bins.iter_mut().zip(ROW_HZ.iter().chain(COL_HZ.iter())) {
            let omega = 2.0 * PI * f / f64::from(rate);
            *b = Bin {
                coef: (2.0 * omega.cos()) as f32,
                coef2: (2.0 * (2.0 * omega).cos()) as f32,
                omega,
            };
        }
        let mut coefs = [0f32; 8];
        for (c, b) in coefs.iter_mut().zip(&bins) {
            *c = b.coef;
        }
        let hann: Vec<f32> = (0..window)
            .map(|n| {
                let s = (PI * (n as f64 + 0.5) / window as f64).sin();
                (s * s) as f32
            })
            .collect();
        let hann_sum = hann.iter().map(|&w| f64::from(w)).sum();
        let mut hann_cos = Vec::with_capacity(8 * window);
        let mut hann_sin = Vec::with_capacity(8 * window);
        for b in &bins {
            for (n, &w) in hann.iter().enumerate() {
                let ph = b.omega * n as f64;
                hann_cos.push(w * ph.cos() as f32);
                hann_sin.push(w * ph.sin() as f32);
            }
        }
        let min_amplitude = tone::FULL_SCALE * 10f64.powf(MIN_TONE_DBFS / 20.0);
        // A sine of amplitude a carries a²/2 per sample; a window holding one tone at the
        // minimum level, attenuated by the largest accepted frequency offset, still has more
        // than half of that.
        let quiet_energy = (0.5 * min_amplitude * min_amplitude / 2.0 * window as f64) as f32;
        Ok(DtmfDetector {
            rate,
            hop,
            buf: vec![0.0; 3 * hop],
            fill: window,
            bins,
            coefs,
            hann_cos,
            hann_sin,
            hann,
            hann_sum,
            residual: vec![0.0; window],
            quiet_energy,
            min_amplitude,
            candidate: None,
            run: 0,
            current: None,
            misses: 0,
            events: VecDeque::with_capacity(EVENT_QUEUE),
            stats: DtmfStats::default(),
        })
    }

    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Feed the next samples (any length; 20 ms frames in the media path). Returns the oldest
    /// event not yet returned; when several arise in one call (long inputs), the rest come from
    /// [`next_event`](Self::next_event).
    #[must_use]
    pub fn process(&mut self, pcm: &[i16]) -> Option<DtmfEvent> {
        let end = self.buf.len();
        for &s in pcm {
            if let Some(slot) = self.buf.get_mut(self.fill) {
                *slot = f32::from(s);
            }
            self.fill += 1;
            if self.fill >= end {
                self.analyse();
                self.buf.copy_within(self.hop.., 0);
                self.fill = 2 * self.hop;
            }
        }
        self.events.pop_front()
    }

    /// The next queued event, if any.
    #[must_use]
    pub fn next_event(&mut self) -> Option<DtmfEvent> {
        self.events.pop_front()
    }

    /// The digit held down now, if any.
    pub fn current(&self) -> Option<char> {
        self.current.map(digit_char)
    }

    /// Whether the last windows hold a tone: a digit is held down, or hits are running up to a
    /// press. An idle detector fed silence stays idle, so a caller may skip feeding it silence.
    pub fn busy(&self) -> bool {
        self.current.is_some() || self.run > 0
    }

    pub fn stats(&self) -> DtmfStats {
        self.stats
    }

    /// Forget all audio and state (counters are kept).
    pub fn reset(&mut self) {
        self.buf.fill(0.0);
        self.fill = 2 * self.hop;
        self.candidate = None;
        self.run = 0;
        self.current = None;
        self.misses = 0;
        self.events.clear();
    }

    /// Elements held by the buffers (for the no-growth test).
    pub fn capacity_samples(&self) -> usize {
        self.buf.capacity()
            + self.hann.capacity()
            + self.hann_cos.capacity()
            + self.hann_sin.capacity()
            + self.residual.capacity()
            + self.events.capacity()
    }

    fn analyse(&mut self) {
        self.stats.windows += 1;
        let verdict = self.verdict();
        let hit = match verdict {
            Ok(idx) => {
                self.stats.hits += 1;
                Some(idx)
            }
            Err(r) => {
                let c = &mut self.stats;
                match r {
                    Reject::Quiet => c.quiet += 1,
                    Reject::Peak => c.not_peaked += 1,
                    Reject::Fraction => c.low_fraction += 1,
                    Reject::Frequency => c.off_frequency += 1,
                    Reject::Level => c.too_weak += 1,
                    Reject::Twist => c.twisted += 1,
                    Reject::Harmonic => c.harmonic += 1,
                    Reject::Residual => c.residual += 1,
                }
                None
            }
        };
        self.decide(hit);
    }

    /// Press and release logic over the window verdicts.
    fn decide(&mut self, hit: Option<usize>) {
        if let Some(d) = self.current {
            if hit == Some(d) {
                self.misses = 0;
            } else {
                self.misses += 1;
                if self.misses >= MISSES_TO_RELEASE {
                    self.current = None;
                    self.push(DtmfEvent::Released(digit_char(d)));
                }
            }
        }
        if hit.is_some() && hit == self.candidate {
            self.run = self.run.saturating_add(1);
        } else {
            self.candidate = hit;
            self.run = u32::from(hit.is_some());
        }
        if self.current.is_none() && self.run >= HITS_TO_PRESS {
            if let Some(d) = self.candidate {
                self.current = Some(d);
                self.misses = 0;
                self.stats.presses += 1;
                self.push(DtmfEvent::Pressed(digit_char(d)));
            }
        }
    }

    fn push(&mut self, e: DtmfEvent) {
        if self.events.len() >= EVENT_QUEUE {
            self.stats.events_dropped += 1;
        } else {
            self.events.push_back(e);
        }
    }

    /// Complex Hann-windowed DFT of `x` at tone `k` (phase referred to `x[0]`).
    fn hann_dft(&self, x: &[f32], k: usize) -> (f64, f64) {
        let n = self.hann.len();
        let (Some(c), Some(s)) = (
            self.hann_cos.get(k * n..(k + 1) * n),
            self.hann_sin.get(k * n..(k + 1) * n),
        ) else {
            return (0.0, 0.0);
        };
        let (mut re, mut im) = ([0f32; LANES], [0f32; LANES]);
        for ((xv, cv), sv) in x
            .chunks_exact(LANES)
            .zip(c.chunks_exact(LANES))
            .zip(s.chunks_exact(LANES))
        {
            for l in 0..LANES {
                re[l] += xv[l] * cv[l];
                im[l] -= xv[l] * sv[l];
            }
        }
        // The window is not a multiple of the lane count: the tail goes in one by one.
        let tail = x.len() - x.len() % LANES;
        for ((&v, &cv), &sv) in x.iter().zip(c).zip(s).skip(tail) {
            re[0] += v * cv;
            im[0] -= v * sv;
        }
        let re: f32 = re.iter().sum();
        let im: f32 = im.iter().sum();
        (f64::from(re), f64::from(im))
    }

    /// Fit tone `k` in the current window: frequency from the phase advance of its Hann DFT
    /// since the previous window, then amplitude and phase from the current window's DFT.
    fn fit_tone(&self, prev: &[f32], cur: &[f32], k: usize) -> Fit {
        let omega = self.bins.get(k).map_or(1.0, |b| b.omega);
        let (pr, pi) = self.hann_dft(prev, k);
        let (cr, ci) = self.hann_dft(cur, k);
        // cur · conj(prev): its angle is (ω + δ)·hop for a tone at ω + δ.
        let re = cr * pr + ci * pi;
        let im = ci * pr - cr * pi;
        let hop = self.hop as f64;
        let adv = (im.atan2(re) - omega * hop + PI).rem_euclid(2.0 * PI) - PI;
        let delta = adv / hop;
        // For a·cos((ω+δ)n + φ) the DFT is (a/2)·e^{j(φ + δ·mid)}·Σw·H(δ), where
        // H(δ) = Σ w[n]·cos(δ(n − mid)) / Σ w is the Hann window's (real, symmetric) response.
        let len = self.hann.len() as f64;
        let mid = (len - 1.0) / 2.0;
        let resp = hann_response(delta, len);
        Fit {
            error: delta / omega,
            amplitude: 2.0 * (cr * cr + ci * ci).sqrt() / (self.hann_sum * resp.max(1e-3)),
            phase: ci.atan2(cr) - delta * mid,
            omega: omega + delta,
        }
    }

    /// Whether the current window is a hit, and for which digit (`row · 4 + col`).
    fn verdict(&mut self) -> Result<usize, Reject> {
        let h = self.hop;
        let (Some(prev), Some(cur)) = (self.buf.get(..2 * h), self.buf.get(h..3 * h)) else {
            return Err(Reject::Quiet);
        };
        let energy: f32 = cur.iter().map(|v| v * v).sum();
        if energy < self.quiet_energy {
            return Err(Reject::Quiet);
        }
        let power = goertzel8(cur, &self.coefs);
        let (rows, cols) = power.split_at(4);
        let peak = |group: &[f32]| -> Option<usize> {
            let (best, &top) = group.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
            let limit = top / db_ratio(RELATIVE_PEAK_DB) as f32;
            let clear = group
                .iter()
                .enumerate()
                .all(|(i, &p)| i == best || p <= limit);
            clear.then_some(best)
        };
        // Rows are told apart by the rectangular window: neighbouring rows (73 to 89 Hz apart)
        // sit near its first null (78.4 Hz). Columns (127 to 156 Hz apart) are told apart by
        // the Hann window, which also keeps a row tone up to 8 dB stronger (at least 268 Hz
        // away) out of the column bins; the rectangular window's sidelobes let it in.
        let mut col_power = [0f32; 4];
        for (k, p) in col_power.iter_mut().enumerate() {
            let (re, im) = self.hann_dft(cur, 4 + k);
            *p = (re * re + im * im) as f32;
        }
        let (Some(r), Some(c)) = (peak(rows), peak(&col_power)) else {
            return Err(Reject::Peak);
        };
        let (pr, pc) = (
            f64::from(rows.get(r).copied().unwrap_or(0.0)),
            f64::from(cols.get(c).copied().unwrap_or(0.0)),
        );
        // A sine of amplitude a, on the bin, gives power (a·L/2)² and carries a²·L/2 of energy:
        // its energy is 2·power / L.
        let tone_energy = 2.0 * (pr + pc) / cur.len() as f64;
        if tone_energy < TONE_ENERGY_FRACTION * f64::from(energy) {
            return Err(Reject::Fraction);
        }
        let row = self.fit_tone(prev, cur, r);
        let col = self.fit_tone(prev, cur, 4 + c);
        if row.error.abs() > FREQ_TOLERANCE || col.error.abs() > FREQ_TOLERANCE {
            return Err(Reject::Frequency);
        }
        if row.amplitude < self.min_amplitude || col.amplitude < self.min_amplitude {
            return Err(Reject::Level);
        }
        let twist_db = 20.0 * (row.amplitude / col.amplitude).log10();
        if !(-REVERSE_TWIST_DB..=NORMAL_TWIST_DB).contains(&twist_db) {
            return Err(Reject::Twist);
        }
        // The harmonics are measured on what is left after taking the two fitted tones out:
        // twice a row frequency lies only 58 to 71 Hz from a column tone (1394/1336,
        // 1540/1477, 1704/1633 Hz), well inside this window's resolution, so the column
        // tone itself would otherwise read as the row's harmonic.
        let residual = &mut self.residual;
        residual.copy_from_slice(cur);
        for fit in [row, col] {
            let (mut re, mut im) = (fit.phase.cos(), fit.phase.sin());
            let (sr, si) = (fit.omega.cos(), fit.omega.sin());
            for v in residual.iter_mut() {
                *v -= (fit.amplitude * re) as f32;
                (re, im) = (re * sr - im * si, re * si + im * sr);
            }
        }
        let limit = 1.0 / db_ratio(HARMONIC_DB);
        let rest: f32 = residual.iter().map(|v| v * v).sum();
        for (k, p) in [(r, pr), (4 + c, pc)] {
            let coef2 = self.bins.get(k).map_or(0.0, |b| b.coef2);
            if f64::from(goertzel(residual, coef2)) > p * limit {
                return Err(Reject::Harmonic);
            }
        }
        if f64::from(rest) > f64::from(energy) / db_ratio(-RESIDUAL_DB) {
            return Err(Reject::Residual);
        }
        Ok(r * 4 + c)
    }
}

/// Generates DTMF digits: two sines for a given duration and level, with short raised-cosine
/// ramps ([`GENERATOR_RAMP_MS`]) and phase continuity across frames.
///
/// `level_dbfs` is the peak of the two-tone sum, so a digit at 0 dBFS just reaches full scale;
/// with equal tones each sits 6.02 dB lower. The twist is the low-group tone's level minus the
/// high-group tone's, in dB.
#[derive(Debug, Clone)]
pub struct DtmfGenerator {
    rate: u32,
    low: Oscillator,
    high: Oscillator,
    env: Envelope,
    /// Samples of key-down left.
    remaining: u64,
}

impl DtmfGenerator {
    /// A silent generator at `rate` (8000..=96000 Hz).
    pub fn new(rate: u32) -> Result<Self, DtmfError> {
        let ramp = (rate as usize * GENERATOR_RAMP_MS as usize / 1000).max(1);
        Ok(DtmfGenerator {
            rate,
            low: Oscillator::new(rate, ROW_HZ[0], 0.0)?,
            high: Oscillator::new(rate, COL_HZ[0], 0.0)?,
            env: Envelope::new(ramp),
            remaining: 0,
        })
    }

    /// Start `digit` for `duration_ms` (measured at half amplitude) with equal tones.
    pub fn start(
        &mut self,
        digit: char,
        duration_ms: u32,
        level_dbfs: f64,
    ) -> Result<(), DtmfError> {
        self.start_with_twist(digit, duration_ms, level_dbfs, 0.0)
    }

    /// Start `digit` with the low-group tone `twist_db` above the high-group one.
    pub fn start_with_twist(
        &mut self,
        digit: char,
        duration_ms: u32,
        level_dbfs: f64,
        twist_db: f64,
    ) -> Result<(), DtmfError> {
        let (fl, fh) = digit_frequencies(digit).ok_or(DtmfError::Digit(digit))?;
        if !twist_db.is_finite() {
            return Err(DtmfError::Twist(twist_db));
        }
        let peak = tone::dbfs_to_amplitude(level_dbfs)?;
        let ratio = 10f64.powf(twist_db / 20.0);
        let high = peak / (1.0 + ratio);
        self.low = Oscillator::new(self.rate, fl, peak - high)?;
        self.high = Oscillator::new(self.rate, fh, high)?;
        self.env.reset();
        self.env.key(true);
        self.remaining = u64::from(self.rate) * u64::from(duration_ms) / 1000;
        Ok(())
    }

    /// Fill `out` (silence once the digit is over). Returns false when the digit was already
    /// over before this call, like [`tone::CwKeyer::fill`].
    pub fn fill(&mut self, out: &mut [i16]) -> bool {
        if !self.is_active() {
            out.fill(0);
            return false;
        }
        for o in out.iter_mut() {
            if self.remaining == 0 {
                self.env.key(false);
            } else {
                self.remaining -= 1;
            }
            let g = self.env.next_gain();
            let v = self.low.next_sample() + self.high.next_sample();
            *o = tone::to_i16(g * v);
        }
        true
    }

    /// Whether a digit is sounding (its final ramp included).
    pub fn is_active(&self) -> bool {
        self.remaining > 0 || !self.env.is_silent()
    }

    /// Stop at once, without a ramp.
    pub fn cancel(&mut self) {
        self.remaining = 0;
        self.env.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: &str = "0123456789*#ABCD";

    /// Deterministic noise (SplitMix64 into Box-Muller).
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn uniform(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn gauss(&mut self) -> f64 {
            let u1 = self.uniform().max(1e-300);
            let u2 = self.uniform();
            (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
        }
    }

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
                self.x.push(
                    a1 * (2.0 * PI * f1 * t + p1).sin() + a2 * (2.0 * PI * f2 * t + p2).sin(),
                );
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
                // A 10 ms interruption inside a digit does not split it (Q.24).
                let mut s = Sig::new(rate);
                s.silence(lead)
                    .digit('6', 60.0, -10.0)
                    .silence(10.0)
                    .digit('6', 60.0, -10.0);
                s.silence(60.0).noise_snr(20.0, shift);
                assert_eq!(presses(rate, &s.pcm()), "6", "{rate} Hz shift {shift}");
                // A 40 ms pause between two presses of one key gives two digits.
                let mut s = Sig::new(rate);
                s.silence(lead)
                    .digit('6', 60.0, -10.0)
                    .silence(40.0)
                    .digit('6', 60.0, -10.0);
                s.silence(60.0).noise_snr(20.0, shift);
                assert_eq!(presses(rate, &s.pcm()), "66", "{rate} Hz shift {shift}");
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
}
