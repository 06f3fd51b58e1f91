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
mod tests;
