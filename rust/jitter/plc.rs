//! Packet-loss concealment that follows the pitch of the last good audio.
//!
//! The approach is the one ITU-T G.711 Appendix I describes, re-stated for 20 ms frames at
//! 8 or 16 kHz and without its 3.75 ms output delay:
//!
//! * every frame that plays (received or concealed) goes into a history of about 49 ms;
//! * when a frame is lost, the pitch period is the lag (2.5-15 ms, i.e. 66-400 Hz) whose
//!   normalised correlation with the last 10 ms is highest, and the last period is repeated;
//!   where that correlation is under 0.5 (noise, fricatives, a noisy line's background) a
//!   period would sound buzzy, and the last 20 ms are repeated instead;
//! * after 10 ms of loss a voiced repeated stretch grows to two periods, blended over a
//!   quarter period;
//! * the level is full for 5 ms, then falls by a tenth (voiced) or a twentieth (unvoiced) of
//!   full level every 10 ms, times the level trend of the last 20 ms when that falls (down to
//!   0.7 per 10 ms): a sound that was dying away keeps dying away. The concealment is silent
//!   at the latest [`CONCEAL_MAX_FRAMES`] (100 ms) into a loss;
//! * the first good frame after a loss is cross-faded with the concealment's continuation, over
//!   an eighth of a period however long the loss was (a longer cross-fade smears the good
//!   frame's onset, which PESQ hears more than the short join), so the join has no step.
//!
//! Those figures were tuned on the PESQ bound (benches/plc_bounds.py, seeds 1-20 of three
//! speakers) and checked on other seeds and a fourth speaker: G.711's own (a 20 ms window,
//! three periods, full level for 10 ms then a fifth less per 10 ms) lost to repeat-and-fade on
//! about a quarter of the runs.
//!
//! Repeating the whole last frame with a linear fade ([`Concealment::Fade`], the old
//! behaviour) stays available for comparison. All storage is allocated in [`Concealer::new`].

use super::{conceal, CONCEAL_FADE_FRAMES};

/// Normalised correlation at the pitch lag below which the history is taken as unvoiced
/// (noise, fricatives, background): a 2.5-15 ms period repeated there sounds buzzy, so a
/// whole 20 ms stretch is repeated instead.
const VOICED_CORR: f32 = 0.5;
/// Level lost per 10 ms of concealment, voiced and unvoiced, after the first 5 ms at full level.
const VOICED_SLOPE: f32 = 0.1;
const UNVOICED_SLOPE: f32 = 0.05;
/// The level trend of the last 20 ms (per 10 ms) carries on through a loss, down to this.
const MIN_DECAY: f32 = 0.7;
/// Frames (20 ms) a loss is concealed for at most: from then on the concealment is silence
/// (`Concealer::conceal` returns false), however slowly it was fading.
pub const CONCEAL_MAX_FRAMES: usize = 5;
/// The repeated stretch grows to this many periods (one period for the first 10 ms).
const MAX_PERIODS: usize = 2;

/// Which concealment a [`Concealer`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concealment {
    /// Pitch-period repetition with overlap-add (G.711 Appendix I's approach).
    #[default]
    Pitch,
    /// Repeat the last frame, fading to silence over [`CONCEAL_FADE_FRAMES`] frames.
    Fade,
}

impl Concealment {
    /// The names the configuration uses: "pitch" or "fade".
    pub fn from_name(name: &str) -> Option<Concealment> {
        match name {
            "pitch" => Some(Concealment::Pitch),
            "fade" => Some(Concealment::Fade),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Concealment::Pitch => "pitch",
            Concealment::Fade => "fade",
        }
    }
}

/// Per-leg concealment state: the recent history and where a loss run stands.
#[derive(Debug, Clone)]
pub struct Concealer {
    mode: Concealment,
    /// Samples per 10 ms (80 or 160): the unit of the attenuation and period schedule.
    unit: usize,
    pmin: usize,
    pmax: usize,
    /// Length of the window whose correlation picks the pitch (20 ms).
    corr_len: usize,
    /// The last samples that played, oldest first.
    hist: Vec<f32>,
    /// Whether `hist` holds audio of the current talk spurt.
    primed: bool,
    /// The last three periods of history, frozen when a loss starts.
    pbuf: Vec<f32>,
    pitch: usize,
    periods: usize,
    /// Read position in the repeated stretch (the last `periods` periods of `pbuf`).
    read: usize,
    /// Blend from the previous stretch (`old_periods`, `old_read`) still to run, of `ola_len`.
    ola_left: usize,
    ola_len: usize,
    old_periods: usize,
    old_read: usize,
    /// Samples concealed in the current run; 0 when the last frame was good.
    erased: usize,
    /// Fade mode: the last good frame, and the index of the next concealed frame.
    last: Vec<i16>,
    nth: u32,
    /// Whether the last history before the loss was periodic enough to repeat by the period.
    voiced: bool,
    /// Level change per 10 ms over the last 20 ms of history (<= 1), applied through the loss.
    decay: f32,
    /// Blending toward a frame already queued after the gap ([`Concealer::conceal_toward`]):
    /// the gap's length from where the blend began, and how far into it the output is.
    toward_len: usize,
    toward_at: usize,
}

impl Concealer {
    /// A concealer for `rate` (8000 or 16000; other rates are treated by their 10 ms length)
    /// and frames of up to `frame_len` samples.
    pub fn new(rate: u32, frame_len: usize, mode: Concealment) -> Concealer {
        let unit = (rate as usize / 100).max(1);
        // 66-400 Hz covers men's and women's voices.
        let pmin = (rate as usize / 400).max(1);
        let pmax = (rate as usize * 3 / 200).max(pmin + 1);
        let corr_len = unit;
        let hist_len = (3 * pmax + pmax / 4).max(corr_len + pmax).max(frame_len);
        Concealer {
            mode,
            unit,
            pmin,
            pmax,
            corr_len,
            hist: vec![0.0; hist_len],
            primed: false,
            pbuf: vec![0.0; 3 * pmax],
            pitch: pmax,
            periods: 1,
            read: 0,
            ola_left: 0,
            ola_len: 0,
            old_periods: 1,
            old_read: 0,
            erased: 0,
            last: vec![0; frame_len],
            nth: 0,
            voiced: true,
            decay: 1.0,
            toward_len: 0,
            toward_at: 0,
        }
    }

    /// Samples of storage held (for the media path's no-growth test).
    pub fn capacity_samples(&self) -> usize {
        self.hist.capacity() + self.pbuf.capacity() + self.last.capacity()
    }

    pub fn mode(&self) -> Concealment {
        self.mode
    }

    /// The pitch period (samples) of the current or last loss.
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// A pause: the next loss must not repeat audio from before it.
    pub fn reset(&mut self) {
        if self.primed || self.erased > 0 {
            self.hist.fill(0.0);
            self.last.fill(0);
            self.primed = false;
            self.erased = 0;
            self.nth = 0;
        }
        self.toward_len = 0;
        self.toward_at = 0;
    }

    /// A frame that was received: after a loss its start is blended with the concealment's
    /// continuation; then it becomes history.
    pub fn good(&mut self, pcm: &mut [i16]) {
        match self.mode {
            Concealment::Fade => {
                self.nth = 0;
                let n = pcm.len().min(self.last.len());
                self.last[..n].copy_from_slice(&pcm[..n]);
            }
            Concealment::Pitch => {
                // A blend that ended where this frame begins already continues into it.
                let blended = self.toward_len > 0 && self.toward_at == self.toward_len;
                if self.erased > 0 && !blended {
                    self.join(pcm);
                }
                self.toward_len = 0;
                self.toward_at = 0;
                self.erased = 0;
                self.primed = true;
                self.remember(pcm);
            }
        }
    }

    /// A lost frame: fills `out` with concealment. Returns false once the concealment has
    /// faded to silence (the frame carries nothing).
    pub fn conceal(&mut self, out: &mut [i16]) -> bool {
        match self.mode {
            Concealment::Fade => {
                let nth = self.nth;
                self.nth = self.nth.saturating_add(1);
                conceal(&self.last, out, nth);
                nth < CONCEAL_FADE_FRAMES
            }
            Concealment::Pitch => {
                let audible = self.extrapolate(out);
                if self.primed {
                    self.remember(out);
                }
                audible
            }
        }
    }

    /// A lost frame whose gap ends at a frame already in the jitter buffer: `next` is that
    /// frame's audio and `gap` the lost slots between this one and it (0: it plays next). The
    /// concealment is cross-faded, over the rest of the gap, into `next`'s own pitch periods
    /// extended backwards from its start, so the gap is interpolated between the audio on
    /// both sides rather than extrapolated from one, and it meets `next` without a join. No
    /// delay is added: the frame is already queued. Returns false only when both sides are
    /// silent. Repeat-and-fade ignores `next`.
    pub fn conceal_toward(&mut self, out: &mut [i16], next: &[i16], gap: usize) -> bool {
        if self.mode == Concealment::Fade || next.is_empty() {
            return self.conceal(out);
        }
        let n = out.len();
        let forward = self.extrapolate(out);
        // From this frame's start to `next`'s (a frame that turns up inside the gap ends it
        // early; then `good` joins as after any loss).
        self.toward_len = self.toward_at + (gap + 1) * n;
        let (period, corr) = self.pitch_of(next);
        let voiced_next = corr >= VOICED_CORR;
        let total = self.toward_len as f32 + 1.0;
        let mut backward_audible = false;
        for (i, o) in out.iter_mut().enumerate() {
            let at = self.toward_at + i;
            // Index into `next` of the sample `toward_len - at` before its start, repeating
            // its first period backwards (in phase: period samples back is the same point).
            let d = self.toward_len - at;
            let idx = if voiced_next {
                let back = d % period;
                if back == 0 {
                    0
                } else {
                    period - back
                }
            } else {
                // Unvoiced: `next` mirrored about its start (no period to keep in phase, and
                // no step where it meets its own first sample).
                (d - 1) % next.len()
            };
            let b = f32::from(next.get(idx).copied().unwrap_or(0));
            backward_audible |= b != 0.0;
            let w = (at + 1) as f32 / total;
            *o = to_i16(f32::from(*o) * (1.0 - w) + b * w);
        }
        self.toward_at += n;
        self.primed = true;
        self.remember(out);
        forward || backward_audible
    }

    /// The concealment from the audio before the loss alone (silence without history):
    /// fills `out`; false once it has faded to silence.
    fn extrapolate(&mut self, out: &mut [i16]) -> bool {
        if !self.primed {
            out.fill(0);
            return false;
        }
        if self.erased == 0 {
            self.start_loss();
        }
        let audible = self.gain(self.erased) > 0.0;
        for o in out.iter_mut() {
            *o = to_i16(self.next_sample());
        }
        audible
    }

    /// The pitch period of `x` itself (`pmin..=pmax`, at most three quarters of its length so
    /// a quarter is left to correlate) and its normalised correlation.
    fn pitch_of(&self, x: &[i16]) -> (usize, f32) {
        let pmax = self.pmax.min(x.len() * 3 / 4);
        let mut best = (x.len(), 0.0f32);
        let mut best_score = f32::MIN;
        for lag in self.pmin..=pmax {
            let (a, b) = (&x[lag..], &x[..x.len() - lag]);
            let (mut dot, mut ea, mut eb) = (0.0f32, 0.0f32, 0.0f32);
            for (&p, &q) in a.iter().zip(b) {
                let (p, q) = (f32::from(p), f32::from(q));
                dot += p * q;
                ea += p * p;
                eb += q * q;
            }
            let e = (ea * eb).sqrt();
            if e <= 0.0 {
                continue;
            }
            let c = dot / e;
            if c > best_score * 1.0001 + 1e-6 {
                best_score = c;
                best = (lag, c);
            }
        }
        best
    }

    fn start_loss(&mut self) {
        let (pitch, corr) = self.find_pitch();
        self.voiced = corr >= VOICED_CORR;
        self.pitch = if self.voiced {
            pitch
        } else {
            (2 * self.unit).clamp(1, self.pbuf.len())
        };
        let n = self.hist.len();
        let u = self.unit;
        let e_last: f32 = self.hist[n - u..].iter().map(|x| x * x).sum();
        let e_prev: f32 = self.hist[n - 2 * u..n - u].iter().map(|x| x * x).sum();
        self.decay = if e_prev > 0.0 {
            (e_last / e_prev).sqrt().clamp(MIN_DECAY, 1.0)
        } else {
            1.0
        };
        let p3 = 3 * self.pmax;
        self.pbuf.copy_from_slice(&self.hist[n - p3..]);
        self.periods = 1;
        self.read = 0;
        self.ola_left = 0;
    }

    /// The lag in `pmin..=pmax` whose normalised correlation with the last `corr_len` samples
    /// is highest (the smallest such lag on ties, so a multiple of the period is not taken).
    fn find_pitch(&self) -> (usize, f32) {
        let n = self.hist.len();
        let target = &self.hist[n - self.corr_len..];
        let mut best = self.pmax;
        let mut best_score = f32::MIN;
        let mut best_corr = 0.0f32;
        let te: f32 = target.iter().map(|a| a * a).sum();
        for lag in self.pmin..=self.pmax {
            let cand = &self.hist[n - self.corr_len - lag..n - lag];
            let (mut dot, mut energy) = (0.0f32, 0.0f32);
            for (a, b) in target.iter().zip(cand) {
                dot += a * b;
                energy += b * b;
            }
            if energy <= 0.0 {
                continue;
            }
            // Sign kept: a lag where the waveform is inverted is no period.
            let score = dot * dot.abs() / energy;
            if score > best_score * 1.0001 {
                best_score = score;
                best = lag;
                best_corr = dot / (te * energy).sqrt().max(1e-9);
            }
        }
        (best, best_corr)
    }

    /// Sample `read` of the repetition of the last `periods` periods of `pbuf`.
    fn stretch(&self, periods: usize, read: usize) -> f32 {
        let len = periods * self.pitch;
        let start = self.pbuf.len() - len;
        self.pbuf.get(start + read).copied().unwrap_or(0.0)
    }

    fn next_sample(&mut self) -> f32 {
        // Grow the repeated stretch 10 ms into the loss.
        let maxp = if self.voiced { MAX_PERIODS } else { 1 };
        if self.erased > 0
            && self.erased % self.unit == 0
            && self.periods < maxp
            && (self.periods + 1) * self.pitch <= self.pbuf.len()
        {
            self.old_periods = self.periods;
            self.old_read = self.read;
            self.periods += 1;
            // Same phase one period further back.
            self.ola_len = (self.pitch / 4).max(1);
            self.ola_left = self.ola_len;
        }
        let mut s = self.stretch(self.periods, self.read);
        if self.ola_left > 0 {
            let w = self.ola_left as f32 / (self.ola_len + 1) as f32;
            let old = self.stretch(self.old_periods, self.old_read);
            s = old * w + s * (1.0 - w);
            self.old_read = (self.old_read + 1) % (self.old_periods * self.pitch);
            self.ola_left -= 1;
        }
        self.read = (self.read + 1) % (self.periods * self.pitch);
        let gain = self.gain(self.erased);
        self.erased += 1;
        s * gain
    }

    /// Level `t` samples into a loss: full for 5 ms, then down by `VOICED_SLOPE` (or
    /// `UNVOICED_SLOPE`) per 10 ms, times the level trend of the history before the loss;
    /// silence after `CONCEAL_MAX_FRAMES`.
    fn gain(&self, t: usize) -> f32 {
        let slope = if self.voiced {
            VOICED_SLOPE
        } else {
            UNVOICED_SLOPE
        };
        let full = self.unit / 2;
        let base = if t >= CONCEAL_MAX_FRAMES * 2 * self.unit {
            0.0
        } else if t < full {
            1.0
        } else {
            (1.0 - slope * (t - full) as f32 / self.unit as f32).max(0.0)
        };
        if self.decay < 1.0 {
            base * self.decay.powf((t + 1) as f32 / self.unit as f32)
        } else {
            base
        }
    }

    /// Cross-fade the start of a good frame from the concealment's continuation.
    fn join(&mut self, pcm: &mut [i16]) {
        let len = (self.pitch / 8).clamp(1, self.unit).min(pcm.len());
        for (i, x) in pcm.iter_mut().take(len).enumerate() {
            let w = (i + 1) as f32 / (len + 1) as f32;
            let synth = self.next_sample();
            *x = to_i16(f32::from(*x) * w + synth * (1.0 - w));
        }
    }

    fn remember(&mut self, pcm: &[i16]) {
        let n = self.hist.len();
        let k = pcm.len().min(n);
        self.hist.copy_within(k.., 0);
        for (h, &x) in self.hist[n - k..].iter_mut().zip(&pcm[pcm.len() - k..]) {
            *h = f32::from(x);
        }
    }
}

/// `signal` in 20 ms frames at `rate` with the frames where `lost(i)` holds concealed by `mode`,
/// as a leg conceals them when its buffer holds every frame in time: a lost frame whose gap
/// ends at a good frame at most `reach` lost slots ahead is blended toward it
/// ([`Concealer::conceal_toward`]), any other is extrapolated. A short last frame is kept as
/// it is. (The PESQ bound of the media path, and the concealment tests.)
pub fn conceal_lost(
    signal: &[i16],
    rate: u32,
    mode: Concealment,
    reach: usize,
    lost: impl Fn(usize) -> bool,
) -> Vec<i16> {
    let frame = (rate as usize / 50).max(1);
    let mut plc = Concealer::new(rate, frame, mode);
    let mut out = Vec::with_capacity(signal.len());
    let mut buf = vec![0i16; frame];
    let whole = signal.len() / frame;
    for (i, chunk) in signal.chunks(frame).enumerate() {
        if chunk.len() < frame {
            out.extend_from_slice(chunk);
            continue;
        }
        buf.copy_from_slice(chunk);
        if lost(i) {
            match (i + 1..whole).find(|&j| !lost(j)) {
                Some(j) if j - i - 1 <= reach => {
                    plc.conceal_toward(&mut buf, &signal[j * frame..(j + 1) * frame], j - i - 1);
                }
                _ => {
                    plc.conceal(&mut buf);
                }
            }
        } else {
            plc.good(&mut buf);
        }
        out.extend_from_slice(&buf);
    }
    out
}

fn to_i16(v: f32) -> i16 {
    // `as` saturates for floats (and maps NaN to 0).
    v.round() as i16
}
