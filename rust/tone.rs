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
mod tests {
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

    fn run_keyer(k: &mut CwKeyer, frame: usize) -> Vec<i16> {
        let mut all = Vec::new();
        let mut buf = vec![0i16; frame];
        while k.fill(&mut buf) {
            all.extend_from_slice(&buf);
        }
        all.truncate(k.duration_samples() as usize);
        all
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
        let mut all = Vec::new();
        let mut buf = vec![0i16; frame];
        while seq.fill(&mut buf) {
            all.extend_from_slice(&buf);
        }
        all.truncate(seq.duration_samples() as usize);
        all
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
}
