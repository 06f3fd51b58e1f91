//! Tone and CW (Morse) kernels: a steady tone and a Morse keyer, both filling caller frames.
//!
//! Both are built from two small parts that `dtmf.rs` reuses for its generator:
//!
//! * [`Oscillator`]: a sine from a phase accumulator (`f64` cycles, wrapped to `[0, 1)`), so the
//!   phase runs on across calls and frame edges never click; the sample at index `n` is the same
//!   whichever way the signal is cut into frames.
//! * [`Envelope`]: a raised-cosine key envelope. Keying down ramps it from 0 to 1 over
//!   [`RAMP_MS`], keying up ramps it back; a change mid-ramp turns around where it is. The
//!   envelope crosses 0.5 exactly `on` samples apart for a key held `on` samples, so a keyed
//!   element keeps its nominal length measured at half amplitude.
//!
//! [`CwKeyer`] turns text into Morse with PARIS timing: a dot lasts `1200 / wpm` ms, a dash
//! three dots, the gap inside a character one dot, between characters three, between words
//! seven. Element edges sit at `round(k · dot)` samples for the `k`-th dot unit from the start,
//! so timing never drifts when a dot is not a whole number of samples. The whole schedule is
//! built in [`CwKeyer::new`]; filling allocates nothing.

use std::f64::consts::PI;
use std::fmt;

/// Raised-cosine ramp of tone starts and stops and of CW keying, in ms.
pub const RAMP_MS: u32 = 5;
/// Sample value of a 0 dBFS sine's peak.
pub const FULL_SCALE: f64 = 32767.0;
/// Lowest sample rate the generators accept.
pub const MIN_RATE: u32 = 8000;
/// Highest sample rate the generators accept.
pub const MAX_RATE: u32 = 96_000;
/// Slowest CW speed accepted, in words per minute.
pub const MIN_WPM: u32 = 1;
/// Fastest CW speed accepted (a dot at 60 wpm is 20 ms, still four ramps long).
pub const MAX_WPM: u32 = 60;

/// Errors of the tone kernels (bad construction parameters).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ToneError {
    /// The sample rate is outside `MIN_RATE..=MAX_RATE`.
    Rate(u32),
    /// The frequency is not finite, or not strictly between 0 and half the sample rate.
    Frequency(f64),
    /// The level is not finite, or above 0 dBFS (it would clip).
    Level(f64),
    /// The CW speed is outside `MIN_WPM..=MAX_WPM`.
    Wpm(u32),
}

impl fmt::Display for ToneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToneError::Rate(r) => {
                write!(f, "sample rate {r} Hz is outside {MIN_RATE}..={MAX_RATE}")
            }
            ToneError::Frequency(hz) => {
                write!(
                    f,
                    "tone frequency {hz} Hz is not between 0 and half the rate"
                )
            }
            ToneError::Level(db) => write!(f, "level {db} dBFS is not a finite value <= 0"),
            ToneError::Wpm(w) => write!(f, "CW speed {w} wpm is outside {MIN_WPM}..={MAX_WPM}"),
        }
    }
}

impl std::error::Error for ToneError {}

pub(crate) fn check_rate(rate: u32) -> Result<(), ToneError> {
    if (MIN_RATE..=MAX_RATE).contains(&rate) {
        Ok(())
    } else {
        Err(ToneError::Rate(rate))
    }
}

pub(crate) fn check_freq(rate: u32, freq_hz: f64) -> Result<(), ToneError> {
    if freq_hz.is_finite() && freq_hz > 0.0 && freq_hz < f64::from(rate) / 2.0 {
        Ok(())
    } else {
        Err(ToneError::Frequency(freq_hz))
    }
}

/// Peak sample value of a sine at `level_dbfs` (0 dBFS is a full-scale sine).
pub fn dbfs_to_amplitude(level_dbfs: f64) -> Result<f64, ToneError> {
    if level_dbfs.is_finite() && level_dbfs <= 0.0 {
        Ok(FULL_SCALE * 10f64.powf(level_dbfs / 20.0))
    } else {
        Err(ToneError::Level(level_dbfs))
    }
}

/// Samples of a [`RAMP_MS`] ramp at `rate` (at least 1).
pub fn ramp_samples(rate: u32) -> usize {
    ((rate as usize) * RAMP_MS as usize / 1000).max(1)
}

/// Rounds to the nearest sample value and saturates.
#[inline]
pub(crate) fn to_i16(v: f64) -> i16 {
    // `as` saturates and maps NaN to 0; the value is already rounded.
    v.round() as i16
}

/// A sine oscillator with a phase accumulator; the phase carries across calls.
#[derive(Debug, Clone)]
pub struct Oscillator {
    /// Phase in cycles, in `[0, 1)`.
    phase: f64,
    /// Phase advance per sample, in cycles.
    step: f64,
    amplitude: f64,
}

impl Oscillator {
    /// A sine at `freq_hz` with peak `amplitude`, starting at phase 0.
    pub fn new(rate: u32, freq_hz: f64, amplitude: f64) -> Result<Self, ToneError> {
        check_rate(rate)?;
        check_freq(rate, freq_hz)?;
        Ok(Oscillator {
            phase: 0.0,
            step: freq_hz / f64::from(rate),
            amplitude,
        })
    }

    /// The next sample (unrounded).
    #[inline]
    pub fn next_sample(&mut self) -> f64 {
        let v = self.amplitude * (2.0 * PI * self.phase).sin();
        self.phase += self.step;
        if self.phase >= 1.0 {
            self.phase -= 1.0;
        }
        v
    }

    /// Back to phase 0.
    pub fn reset(&mut self) {
        self.phase = 0.0;
    }
}

/// A raised-cosine keying envelope: `0.5 − 0.5·cos(π·p/R)` for ramp position `p` in `0..=R`.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// Envelope value at each ramp position, `table[0] = 0`, `table[R] = 1`.
    table: Vec<f64>,
    pos: usize,
    keyed: bool,
}

impl Envelope {
    /// An envelope with ramps of `ramp` samples (at least 1), key up and silent.
    pub fn new(ramp: usize) -> Self {
        let ramp = ramp.max(1);
        let table = (0..=ramp)
            .map(|p| 0.5 - 0.5 * (PI * p as f64 / ramp as f64).cos())
            .collect();
        Envelope {
            table,
            pos: 0,
            keyed: false,
        }
    }

    /// Key down (`true`) or up (`false`); the envelope ramps towards 1 or 0 from where it is.
    pub fn key(&mut self, down: bool) {
        self.keyed = down;
    }

    pub fn keyed(&self) -> bool {
        self.keyed
    }

    /// Envelope value for the next sample.
    #[inline]
    pub fn next_gain(&mut self) -> f64 {
        let top = self.table.len() - 1;
        if self.keyed {
            if self.pos < top {
                self.pos += 1;
            }
        } else if self.pos > 0 {
            self.pos -= 1;
        }
        self.table.get(self.pos).copied().unwrap_or(0.0)
    }

    /// Key up and fully decayed: every further sample is 0 until the next key down.
    pub fn is_silent(&self) -> bool {
        !self.keyed && self.pos == 0
    }

    /// Silent and key up at once (no ramp).
    pub fn reset(&mut self) {
        self.keyed = false;
        self.pos = 0;
    }

    /// Ramp length in samples.
    pub fn ramp(&self) -> usize {
        self.table.len() - 1
    }
}

/// A steady tone with raised-cosine start and stop ramps.
///
/// It sounds from construction (ramping up over [`RAMP_MS`]) until [`stop`](Self::stop), and
/// again after [`start`](Self::start); the oscillator phase never restarts, so frame edges and
/// restarts are click-free.
#[derive(Debug, Clone)]
pub struct ToneGenerator {
    osc: Oscillator,
    env: Envelope,
}

impl ToneGenerator {
    /// A sine of `freq_hz` whose peak is `level_dbfs` (0 dBFS = full-scale sine), keyed on.
    pub fn new(rate: u32, freq_hz: f64, level_dbfs: f64) -> Result<Self, ToneError> {
        let amplitude = dbfs_to_amplitude(level_dbfs)?;
        let osc = Oscillator::new(rate, freq_hz, amplitude)?;
        let mut env = Envelope::new(ramp_samples(rate));
        env.key(true);
        Ok(ToneGenerator { osc, env })
    }

    /// Fill `out` with the next samples. Returns false when the tone was already silent
    /// (stopped and ramped down) before this call, like [`CwKeyer::fill`].
    pub fn fill(&mut self, out: &mut [i16]) -> bool {
        let sounding = !self.env.is_silent();
        for o in out.iter_mut() {
            let g = self.env.next_gain();
            let v = self.osc.next_sample();
            *o = to_i16(g * v);
        }
        sounding
    }

    /// Ramp down to silence over [`RAMP_MS`].
    pub fn stop(&mut self) {
        self.env.key(false);
    }

    /// Ramp up again.
    pub fn start(&mut self) {
        self.env.key(true);
    }

    pub fn is_sounding(&self) -> bool {
        !self.env.is_silent()
    }
}

/// Morse code of a character, `.` for a dot and `-` for a dash; `None` for characters CW
/// announcements do not send (they are skipped). Letters are case-insensitive.
pub fn morse(c: char) -> Option<&'static str> {
    Some(match c.to_ascii_uppercase() {
        'A' => ".-",
        'B' => "-...",
        'C' => "-.-.",
        'D' => "-..",
        'E' => ".",
        'F' => "..-.",
        'G' => "--.",
        'H' => "....",
        'I' => "..",
        'J' => ".---",
        'K' => "-.-",
        'L' => ".-..",
        'M' => "--",
        'N' => "-.",
        'O' => "---",
        'P' => ".--.",
        'Q' => "--.-",
        'R' => ".-.",
        'S' => "...",
        'T' => "-",
        'U' => "..-",
        'V' => "...-",
        'W' => ".--",
        'X' => "-..-",
        'Y' => "-.--",
        'Z' => "--..",
        '0' => "-----",
        '1' => ".----",
        '2' => "..---",
        '3' => "...--",
        '4' => "....-",
        '5' => ".....",
        '6' => "-....",
        '7' => "--...",
        '8' => "---..",
        '9' => "----.",
        '/' => "-..-.",
        '?' => "..--..",
        '.' => ".-.-.-",
        ',' => "--..--",
        '=' => "-...-",
        _ => return None,
    })
}

/// Key-down intervals of `text` in dot units, and the total length in units.
///
/// Whitespace separates words (a gap of seven units); a run of whitespace is one gap, leading
/// whitespace is ignored and trailing whitespace leaves a final word gap (so "PARIS " is the
/// classic 50 units). Characters without a Morse code are skipped as if absent.
fn schedule(text: &str) -> (Vec<(u32, u32)>, u32) {
    let mut elements = Vec::new();
    let mut t: u32 = 0;
    // Gap owed before the next element: 0 at the start, 1 inside a character, 3 between
    // characters, 7 between words.
    let mut gap: u32 = 0;
    let mut started = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if started {
                gap = 7;
            }
            continue;
        }
        let Some(code) = morse(c) else { continue };
        if started && gap < 3 {
            gap = 3;
        }
        for e in code.bytes() {
            t = t.saturating_add(gap);
            let len = if e == b'-' { 3 } else { 1 };
            elements.push((t, t.saturating_add(len)));
            t = t.saturating_add(len);
            gap = 1;
        }
        started = true;
    }
    if started && gap == 7 {
        t = t.saturating_add(7);
    }
    (elements, t)
}

/// Morse audio of a text, produced frame by frame.
#[derive(Debug, Clone)]
pub struct CwKeyer {
    rate: u32,
    wpm: u32,
    osc: Oscillator,
    env: Envelope,
    /// Key-down intervals `[start, end)` in samples.
    elements: Vec<(u64, u64)>,
    /// Index of the next element whose end has not been reached.
    next: usize,
    /// Samples produced so far.
    pos: u64,
    /// Samples of the whole message (last ramp-down included).
    total: u64,
    units: u32,
}

impl CwKeyer {
    /// The Morse audio of `text` at `wpm`, as a `tone_hz` sine peaking at `level_dbfs`.
    pub fn new(
        rate: u32,
        wpm: u32,
        tone_hz: f64,
        level_dbfs: f64,
        text: &str,
    ) -> Result<Self, ToneError> {
        if !(MIN_WPM..=MAX_WPM).contains(&wpm) {
            return Err(ToneError::Wpm(wpm));
        }
        let amplitude = dbfs_to_amplitude(level_dbfs)?;
        let osc = Oscillator::new(rate, tone_hz, amplitude)?;
        let env = Envelope::new(ramp_samples(rate));
        let (unit_elements, units) = schedule(text);
        let dot = f64::from(rate) * 1.2 / f64::from(wpm);
        let at = |u: u32| (f64::from(u) * dot).round() as u64;
        let elements: Vec<(u64, u64)> =
            unit_elements.iter().map(|&(a, b)| (at(a), at(b))).collect();
        let tail = elements
            .last()
            .map_or(0, |&(_, end)| end + env.ramp() as u64);
        let total = at(units).max(tail);
        Ok(CwKeyer {
            rate,
            wpm,
            osc,
            env,
            elements,
            next: 0,
            pos: 0,
            total,
            units,
        })
    }

    /// Fill `out` with the next samples (silence after the end). Returns false when the
    /// message was already complete before this call, so `while keyer.fill(&mut f) { send(f) }`
    /// sends every frame holding part of it.
    pub fn fill(&mut self, out: &mut [i16]) -> bool {
        if self.pos >= self.total {
            out.fill(0);
            return false;
        }
        for o in out.iter_mut() {
            let down = loop {
                match self.elements.get(self.next) {
                    Some(&(_, end)) if self.pos >= end => self.next += 1,
                    Some(&(start, _)) => break self.pos >= start,
                    None => break false,
                }
            };
            self.env.key(down);
            let g = self.env.next_gain();
            let v = self.osc.next_sample();
            *o = if self.pos < self.total {
                to_i16(g * v)
            } else {
                0
            };
            self.pos += 1;
        }
        true
    }

    /// Whether every sample of the message has been produced.
    pub fn is_done(&self) -> bool {
        self.pos >= self.total
    }

    /// Length of the message in ms, rounded up (known before the first frame).
    pub fn duration_ms(&self) -> u64 {
        (self.total * 1000).div_ceil(u64::from(self.rate))
    }

    /// Length of the message in samples.
    pub fn duration_samples(&self) -> u64 {
        self.total
    }

    /// Length of the message in dot units (the final ramp-down not counted).
    pub fn units(&self) -> u32 {
        self.units
    }

    /// Dot length in ms: `1200 / wpm`.
    pub fn dot_ms(&self) -> f64 {
        1200.0 / f64::from(self.wpm)
    }

    /// Key-down intervals `[start, end)` in samples. The audio crosses half amplitude
    /// `RAMP_MS / 2` (less one sample) after each edge, so on and off times are exact.
    pub fn elements(&self) -> &[(u64, u64)] {
        &self.elements
    }

    /// Back to the start of the message.
    pub fn rewind(&mut self) {
        self.next = 0;
        self.pos = 0;
        self.osc.reset();
        self.env.reset();
    }
}

/// One step of a [`ToneSequence`]: up to two frequencies (0 Hz for none, both 0 for a pause),
/// sounded for `ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToneStep {
    pub freq1_hz: f64,
    pub freq2_hz: f64,
    pub ms: u32,
}

/// A sequence of tones and pauses, such as a repeater's courtesy tone (app_rpt's telemetry
/// `|t(f1,f2,ms,amplitude)...`), produced frame by frame.
///
/// Each tone step is keyed for its length less one ramp, so its raised-cosine ramp-down ends
/// with the step and the next step starts from silence: no click at any edge. A step of two
/// frequencies sums two sines at half the level each, so its peak stays at the level.
#[derive(Debug, Clone)]
pub struct ToneSequence {
    /// Per step: its oscillators and its `[start, end)` in samples.
    steps: Vec<(Vec<Oscillator>, u64, u64)>,
    env: Envelope,
    /// Index of the step `pos` is in.
    next: usize,
    pos: u64,
    total: u64,
}

impl ToneSequence {
    /// The sequence of `steps` at `rate`, each tone peaking at `level_dbfs`.
    pub fn new(rate: u32, steps: &[ToneStep], level_dbfs: f64) -> Result<Self, ToneError> {
        check_rate(rate)?;
        let amplitude = dbfs_to_amplitude(level_dbfs)?;
        let mut out = Vec::with_capacity(steps.len());
        let mut at = 0u64;
        for step in steps {
            let freqs: Vec<f64> = [step.freq1_hz, step.freq2_hz]
                .into_iter()
                .filter(|&f| f != 0.0)
                .collect();
            let each = amplitude / freqs.len().max(1) as f64;
            let oscillators = freqs
                .iter()
                .map(|&f| Oscillator::new(rate, f, each))
                .collect::<Result<Vec<_>, _>>()?;
            let len = u64::from(rate) * u64::from(step.ms) / 1000;
            out.push((oscillators, at, at + len));
            at += len;
        }
        Ok(ToneSequence {
            steps: out,
            env: Envelope::new(ramp_samples(rate)),
            next: 0,
            pos: 0,
            total: at,
        })
    }

    /// Fill `out` with the next samples (silence after the end). Returns false when the
    /// sequence was already complete before this call, like [`CwKeyer::fill`].
    pub fn fill(&mut self, out: &mut [i16]) -> bool {
        if self.pos >= self.total {
            out.fill(0);
            return false;
        }
        let ramp = self.env.ramp() as u64;
        for o in out.iter_mut() {
            while self
                .steps
                .get(self.next)
                .is_some_and(|&(_, _, end)| self.pos >= end)
            {
                self.next += 1;
            }
            let Some((oscillators, _, end)) = self.steps.get_mut(self.next) else {
                *o = 0;
                self.pos += 1;
                continue;
            };
            self.env
                .key(!oscillators.is_empty() && self.pos + ramp < *end);
            let g = self.env.next_gain();
            let v: f64 = oscillators.iter_mut().map(Oscillator::next_sample).sum();
            *o = to_i16(g * v);
            self.pos += 1;
        }
        true
    }

    /// Length of the sequence in samples.
    pub fn duration_samples(&self) -> u64 {
        self.total
    }

    pub fn is_done(&self) -> bool {
        self.pos >= self.total
    }

    /// Back to the start.
    pub fn rewind(&mut self) {
        self.next = 0;
        self.pos = 0;
        self.env.reset();
        for (oscillators, _, _) in &mut self.steps {
            oscillators.iter_mut().for_each(Oscillator::reset);
        }
    }
}

#[cfg(test)]
mod tests;
