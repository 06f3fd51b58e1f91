//! Loudness on the media path: an ITU-R BS.1770 meter (K-weighted short-term loudness over the
//! last 3 s of speech, peak, clipped samples) and the normaliser that brings a voice to a target
//! loudness slowly, with a look-ahead limiter behind it.
//!
//! **K-weighting.** BS.1770-4 gives its two biquads (a high shelf of about +4 dB above 1.5 kHz,
//! the "RLB" high-pass near 38 Hz) as coefficients for 48 kHz only. They are designed here for
//! any rate from their analogue prototypes by the bilinear transform with prewarping at each
//! filter's corner (Brecht De Man's derivation, which gives back the standard's 48 kHz
//! coefficients to their printed precision; pyloudnorm calls it the "DeMan" filter class). The
//! shelf's corner (1682 Hz) stays below the Nyquist frequency of 8 kHz audio, so the same design
//! serves 8, 16 and 48 kHz.
//!
//! **Short-term loudness over speech.** The K-weighted signal's mean square is taken over 100 ms
//! blocks. A block is speech when it is above [`ABSOLUTE_GATE_LUFS`] and no more than
//! [`PAUSE_GATE_LU`] below the loudness of the speech before it (BS.1770's relative gate, applied
//! as the blocks come). The reading is the loudness of the last [`SPEECH_BLOCKS`] speech blocks
//! (3 s of speech): pauses neither dilute it nor age it, so between words and overs it holds the
//! level the talker speaks at. Loudness is `-0.691 + 10 log10(mean square)` of the signal scaled
//! to ±1 (a 997 Hz sine at full scale reads -3.01 LUFS).
//!
//! Time is counted in samples, never read from a clock: `&mut self` kernels fed slices.

#[cfg(test)]
mod tests;

/// What a meter reads before it has heard [`MIN_SPEECH_BLOCKS`] blocks of speech.
pub const SILENCE_LUFS: f64 = -100.0;

/// Length of one loudness block.
pub const BLOCK_MS: u32 = 100;

/// Speech blocks in the short-term window: 3 s of speech.
pub const SPEECH_BLOCKS: usize = 30;

/// Speech blocks heard before the meter reads anything (and the normaliser acts): 400 ms, the
/// length of BS.1770's own gating block.
pub const MIN_SPEECH_BLOCKS: usize = 4;

/// BS.1770's absolute gate: a block below this is never speech.
pub const ABSOLUTE_GATE_LUFS: f64 = -70.0;

/// A block this far below the loudness of the speech before it is a pause (BS.1770's relative
/// gate is 10 LU below the programme's mean; speech blocks spread wider than programme blocks,
/// so a quiet syllable still counts).
pub const PAUSE_GATE_LU: f64 = 20.0;

/// After this many blocks (10 s) without speech the relative gate lets go: a new, much quieter
/// talker on the same leg is heard as speech, not as the pause of the old one.
pub const GATE_MEMORY_BLOCKS: u32 = 100;

const FULL_SCALE: f64 = 32768.0;

/// A sample this large is at full scale: µ-law's top code decodes to 32124 (A-law's to 32256),
/// so a voice clipped before a G.711 leg never reaches 32767. 0.17 dB below full scale.
pub const CLIP_LEVEL: u16 = 32124;

/// Loudness of a mean square (of the K-weighted signal scaled to ±1).
fn lufs(mean_square: f64) -> f64 {
    if mean_square <= 0.0 {
        SILENCE_LUFS
    } else {
        (-0.691 + 10.0 * mean_square.log10()).max(SILENCE_LUFS)
    }
}

fn dbfs(amplitude: f64) -> f64 {
    if amplitude <= 0.0 {
        crate::level::SILENCE_DBFS
    } else {
        (20.0 * (amplitude / FULL_SCALE).log10()).max(crate::level::SILENCE_DBFS)
    }
}

/// One biquad in direct form I, in f64: at 48 kHz the high-pass's poles sit within 0.005 of
/// the unit circle, where f32 state loses the low end. Direct form I rather than transposed
/// form II because its only sample-to-sample dependency is `a1 * y[n-1]` and one add (the
/// input taps and `a2 * y[n-2]` are computed off that chain): the meter runs on every leg's
/// every sample, and the recursion's latency, not its arithmetic, bounds its speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Biquad {
    pub b: [f64; 3],
    /// `a[0]` is 1.
    pub a: [f64; 3],
    x1: f64,
    x2: f64,
    y1: f64,
    y2: f64,
}

impl Biquad {
    fn new(b: [f64; 3], a: [f64; 3]) -> Self {
        Biquad {
            b,
            a,
            x1: 0.0,
            x2: 0.0,
            y1: 0.0,
            y2: 0.0,
        }
    }

    #[inline]
    fn run(&mut self, x: f64) -> f64 {
        let off_chain =
            self.b[0] * x + self.b[1] * self.x1 + self.b[2] * self.x2 - self.a[2] * self.y2;
        let y = off_chain - self.a[1] * self.y1;
        self.x2 = self.x1;
        self.x1 = x;
        self.y2 = self.y1;
        self.y1 = y;
        y
    }
}

/// BS.1770's pre-filter (the high shelf modelling the head) and RLB high-pass, in series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KWeighting {
    pub shelf: Biquad,
    pub highpass: Biquad,
}

// The analogue prototypes' parameters, fitted to the standard's 48 kHz coefficients.
const SHELF_HZ: f64 = 1_681.974_450_955_533;
const SHELF_GAIN_DB: f64 = 3.999_843_853_973_347;
const SHELF_Q: f64 = 0.707_175_236_955_419_6;
/// The exponent relating the shelf's band-edge gain to its full gain.
const SHELF_VB_EXP: f64 = 0.499_666_774_154_541_6;
const HIGHPASS_HZ: f64 = 38.135_470_876_024_44;
const HIGHPASS_Q: f64 = 0.500_327_037_323_877_3;

impl KWeighting {
    /// The two biquads for audio sampled at `rate` Hz.
    pub fn new(rate: u32) -> Self {
        let fs = f64::from(rate);
        let k = (std::f64::consts::PI * SHELF_HZ / fs).tan();
        let vh = 10f64.powf(SHELF_GAIN_DB / 20.0);
        let vb = vh.powf(SHELF_VB_EXP);
        let a0 = 1.0 + k / SHELF_Q + k * k;
        let shelf = Biquad::new(
            [
                (vh + vb * k / SHELF_Q + k * k) / a0,
                2.0 * (k * k - vh) / a0,
                (vh - vb * k / SHELF_Q + k * k) / a0,
            ],
            [
                1.0,
                2.0 * (k * k - 1.0) / a0,
                (1.0 - k / SHELF_Q + k * k) / a0,
            ],
        );
        let k = (std::f64::consts::PI * HIGHPASS_HZ / fs).tan();
        let a0 = 1.0 + k / HIGHPASS_Q + k * k;
        let highpass = Biquad::new(
            [1.0, -2.0, 1.0],
            [
                1.0,
                2.0 * (k * k - 1.0) / a0,
                (1.0 - k / HIGHPASS_Q + k * k) / a0,
            ],
        );
        KWeighting { shelf, highpass }
    }

    /// The K-weighted value of the next sample `x` (scaled to ±1).
    #[inline]
    pub fn run(&mut self, x: f64) -> f64 {
        self.highpass.run(self.shelf.run(x))
    }
}

/// What a loudness meter shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoudnessReading {
    /// Loudness of the last 3 s of speech (fewer while less was heard; [`SILENCE_LUFS`] before
    /// [`MIN_SPEECH_BLOCKS`] of it).
    pub short_term_lufs: f64,
    /// The highest sample over the last 3 s (pauses included), dBFS.
    pub peak_dbfs: f64,
    /// Samples at full scale since the meter started (at or beyond [`CLIP_LEVEL`]).
    pub clipped: u64,
    /// The last complete block was speech.
    pub speech: bool,
}

/// The BS.1770 meter of one signal (see the module's documentation).
#[derive(Debug, Clone)]
pub struct LoudnessMeter {
    kw: KWeighting,
    block_len: usize,
    /// The block being filled: sum of squares, samples, peak.
    sum: f64,
    n: usize,
    peak: u16,
    /// Mean squares of the last speech blocks (a ring of [`SPEECH_BLOCKS`]).
    speech: [f64; SPEECH_BLOCKS],
    speech_len: usize,
    speech_at: usize,
    /// Peaks of the last [`SPEECH_BLOCKS`] blocks, speech or not.
    peaks: [u16; SPEECH_BLOCKS],
    peaks_at: usize,
    blocks_since_speech: u32,
    last_speech: bool,
    clipped: u64,
}

impl LoudnessMeter {
    /// A meter for a signal sampled at `rate` Hz.
    pub fn new(rate: u32) -> Self {
        LoudnessMeter {
            kw: KWeighting::new(rate),
            block_len: (rate / 1000 * BLOCK_MS).max(1) as usize,
            sum: 0.0,
            n: 0,
            peak: 0,
            speech: [0.0; SPEECH_BLOCKS],
            speech_len: 0,
            speech_at: 0,
            peaks: [0; SPEECH_BLOCKS],
            peaks_at: 0,
            blocks_since_speech: GATE_MEMORY_BLOCKS,
            last_speech: false,
            clipped: 0,
        }
    }

    /// Measures `x`, the next samples of the signal. Returns how many blocks it closed.
    pub fn feed(&mut self, mut x: &[i16]) -> usize {
        let mut closed = 0;
        while !x.is_empty() {
            let take = (self.block_len - self.n).min(x.len());
            let (now, rest) = x.split_at(take);
            let mut sum = 0.0;
            let mut peak = 0u16;
            let mut clipped = 0u64;
            // The filters run on the samples as they are and the squares are scaled once: a
            // linear filter commutes exactly with a power-of-two scale, so this is the same
            // sum, bit for bit, as scaling each sample to ±1 first. A local copy keeps the
            // filter state in registers across the loop.
            let mut kw = self.kw;
            for &s in now {
                let y = kw.run(f64::from(s));
                sum += y * y;
                let a = s.unsigned_abs();
                peak = peak.max(a);
                clipped += u64::from(a >= CLIP_LEVEL);
            }
            self.kw = kw;
            self.sum += sum / (FULL_SCALE * FULL_SCALE);
            self.peak = self.peak.max(peak);
            self.clipped += clipped;
            self.n += take;
            if self.n == self.block_len {
                self.close_block();
                closed += 1;
            }
            x = rest;
        }
        closed
    }

    /// Mean square of the speech blocks in the window (0 when there are none).
    fn speech_mean_square(&self) -> f64 {
        let blocks = self.speech.get(..self.speech_len).unwrap_or(&[]);
        if blocks.is_empty() {
            0.0
        } else {
            blocks.iter().sum::<f64>() / blocks.len() as f64
        }
    }

    /// Below this a block is a pause.
    pub fn gate_lufs(&self) -> f64 {
        if self.blocks_since_speech < GATE_MEMORY_BLOCKS && self.speech_len > 0 {
            (lufs(self.speech_mean_square()) - PAUSE_GATE_LU).max(ABSOLUTE_GATE_LUFS)
        } else {
            ABSOLUTE_GATE_LUFS
        }
    }

    fn close_block(&mut self) {
        let ms = self.sum / self.n as f64;
        let loudness = lufs(ms);
        let gate = self.gate_lufs();
        self.last_speech = loudness > gate;
        if self.last_speech && self.blocks_since_speech >= GATE_MEMORY_BLOCKS {
            // A voice after a long silence starts a new window: the last one may be another
            // talker's.
            self.speech_len = 0;
            self.speech_at = 0;
        }
        if self.last_speech {
            if let Some(slot) = self.speech.get_mut(self.speech_at) {
                *slot = ms;
            }
            self.speech_at = (self.speech_at + 1) % SPEECH_BLOCKS;
            self.speech_len = (self.speech_len + 1).min(SPEECH_BLOCKS);
            self.blocks_since_speech = 0;
        } else {
            self.blocks_since_speech = self.blocks_since_speech.saturating_add(1);
        }
        if let Some(slot) = self.peaks.get_mut(self.peaks_at) {
            *slot = self.peak;
        }
        self.peaks_at = (self.peaks_at + 1) % SPEECH_BLOCKS;
        self.sum = 0.0;
        self.n = 0;
        self.peak = 0;
    }

    /// Speech blocks in the window (at most [`SPEECH_BLOCKS`]).
    pub fn speech_blocks(&self) -> usize {
        self.speech_len
    }

    /// The short-term loudness of speech, once [`MIN_SPEECH_BLOCKS`] of it were heard.
    pub fn short_term(&self) -> Option<f64> {
        (self.speech_len >= MIN_SPEECH_BLOCKS).then(|| lufs(self.speech_mean_square()))
    }

    /// Whether the last complete block was speech.
    pub fn speaking(&self) -> bool {
        self.last_speech
    }

    pub fn reading(&self) -> LoudnessReading {
        let peak = self.peaks.iter().copied().max().unwrap_or(0).max(self.peak);
        LoudnessReading {
            short_term_lufs: self.short_term().unwrap_or(SILENCE_LUFS),
            peak_dbfs: dbfs(f64::from(peak)),
            clipped: self.clipped,
            speech: self.last_speech,
        }
    }
}

/// Prediction order of the tone detector: two sinusoids (DTMF; CW and single tones have one)
/// are predicted exactly at order four; six leaves room for a tone's harmonics.
const TONE_ORDER: usize = 6;

/// A frame predicted this well (prediction gain, dB) is a tone, not a voice: a sum of a few
/// sinusoids leaves only the codec's quantisation noise (µ-law's is about 38 dB down), while
/// voiced speech at order six stays near 10-20 dB.
pub const TONE_PREDICTION_DB: f64 = 28.0;

/// Quarter-frames of a tone differ by less than this in energy (dB): a tone holds its level
/// across the frame, a syllable does not.
const TONE_FLATNESS_DB: f64 = 3.0;

/// Frames quieter than this (dBFS mean power) are never called tones.
const TONE_FLOOR_DBFS: f64 = -55.0;

/// Whether a frame is a steady tone: one or two sinusoids holding their level (DTMF, CW, a
/// courtesy or telemetry tone; a chord of three beats too slowly to hold its level over a
/// frame and counts as a voice). `buf` is the [`TONE_ORDER`] samples before the frame, then the
/// frame. Covariance-method linear prediction, so the frame's edges do not count as prediction
/// error. The cheap tests (level, flatness) run first: most frames stop there.
pub fn is_tone(buf: &[i16]) -> bool {
    let (Some(history), Some(x)) = (buf.get(..TONE_ORDER), buf.get(TONE_ORDER..)) else {
        return false;
    };
    let n = x.len();
    if n < 4 * TONE_ORDER || history.len() != TONE_ORDER {
        return false;
    }
    // Exact integer sums: 16-bit squares over a frame fit an i64 with room to spare.
    let dot = |a: &[i16], b: &[i16]| -> f64 {
        a.iter()
            .zip(b)
            .map(|(&p, &q)| i64::from(p) * i64::from(q))
            .sum::<i64>() as f64
    };
    let energy = dot(x, x);
    let mean_power = energy / n as f64 / (FULL_SCALE * FULL_SCALE);
    if mean_power <= 0.0 || 10.0 * mean_power.log10() < TONE_FLOOR_DBFS {
        return false;
    }
    // Level across the frame.
    let quarter = n / 4;
    let mut lo = f64::INFINITY;
    let mut hi = 0.0f64;
    for q in x.chunks_exact(quarter).take(4) {
        let e = dot(q, q);
        lo = lo.min(e);
        hi = hi.max(e);
    }
    if lo <= 0.0 || 10.0 * (hi / lo).log10() > TONE_FLATNESS_DB {
        return false;
    }
    // Sample `i` of the frame (negative: of the history).
    let at = |i: isize| -> f64 {
        buf.get((TONE_ORDER as isize + i) as usize)
            .map_or(0.0, |&s| f64::from(s))
    };
    // phi[i][j] = sum over the frame of x[t-i] x[t-j]; each diagonal from its first element.
    let mut phi = [[0.0f64; TONE_ORDER + 1]; TONE_ORDER + 1];
    for (j, cell) in phi[0].iter_mut().enumerate() {
        let lagged = buf.get(TONE_ORDER - j..TONE_ORDER - j + n).unwrap_or(&[]);
        *cell = dot(x, lagged);
    }
    let last = n as isize;
    for i in 1..=TONE_ORDER {
        for j in i..=TONE_ORDER {
            let (ii, jj) = (i as isize, j as isize);
            phi[i][j] = phi[i - 1][j - 1] + at(-ii) * at(-jj) - at(last - ii) * at(last - jj);
            phi[j][i] = phi[i][j];
        }
    }
    // Solve phi[1..][1..] a = phi[1..][0] by Cholesky, with a floor on the diagonal (white
    // noise 50 dB down) so a pure tone's singular matrix stays solvable.
    let mut m = [[0.0f64; TONE_ORDER]; TONE_ORDER];
    let mut rhs = [0.0f64; TONE_ORDER];
    for i in 0..TONE_ORDER {
        for j in 0..TONE_ORDER {
            m[i][j] = phi[i + 1][j + 1];
        }
        m[i][i] += energy * 1e-5;
        rhs[i] = phi[0][i + 1];
    }
    let mut l = [[0.0f64; TONE_ORDER]; TONE_ORDER];
    for i in 0..TONE_ORDER {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = m[i][i] - s;
                if d <= 0.0 {
                    return false;
                }
                l[i][i] = d.sqrt();
            } else {
                l[i][j] = (m[i][j] - s) / l[j][j];
            }
        }
    }
    // L y = rhs, then the error is energy - |y|^2 (no need for the coefficients themselves).
    let mut y = [0.0f64; TONE_ORDER];
    for i in 0..TONE_ORDER {
        let s: f64 = (0..i).map(|k| l[i][k] * y[k]).sum();
        y[i] = (rhs[i] - s) / l[i][i];
    }
    let error = energy - y.iter().map(|v| v * v).sum::<f64>();
    error <= 0.0 || 10.0 * (energy / error).log10() >= TONE_PREDICTION_DB
}

/// Where the limiter holds the peaks of what it lets through: 1 dB below full scale.
pub const LIMIT_DBFS: f64 = -1.0;

/// How far the limiter looks ahead (its added delay).
pub const LOOKAHEAD_MS: u32 = 1;

/// How fast the limiter's gain recovers after a peak (time constant).
pub const LIMITER_RELEASE_MS: f64 = 50.0;

/// A look-ahead peak limiter: the signal is delayed by [`LOOKAHEAD_MS`] while the gain ramps
/// down ahead of each peak, so no sample leaves above [`LIMIT_DBFS`], without clipping it.
///
/// The gain needed by each input sample (`limit / |x|`, at most 1) is held at its minimum over
/// the look-ahead window, then averaged over the window: at the moment a sample leaves, every
/// value in that average came from a window holding it, so the gain is at most what the sample
/// needs. The average turns the step into a ramp as long as the look-ahead.
#[derive(Debug, Clone)]
pub struct Limiter {
    limit: f32,
    /// Delay line of input samples and of the gain each needs, both `lookahead + 1` long.
    delay: Vec<f32>,
    need: Vec<f32>,
    /// Held minima awaiting the average (`lookahead` long) and their sum.
    held: Vec<f32>,
    held_sum: f64,
    at: usize,
    /// Samples since the last one that needed gain below 1 (the fast path's test).
    since_peak: usize,
    gain: f32,
    release: f32,
}

impl Limiter {
    pub fn new(rate: u32) -> Self {
        let lookahead = (rate / 1000 * LOOKAHEAD_MS).max(1) as usize;
        Limiter {
            limit: (FULL_SCALE * 10f64.powf(LIMIT_DBFS / 20.0)) as f32,
            delay: vec![0.0; lookahead + 1],
            need: vec![1.0; lookahead + 1],
            held: vec![1.0; lookahead],
            held_sum: lookahead as f64,
            at: 0,
            since_peak: usize::MAX,
            gain: 1.0,
            release: (1.0 - (-1000.0 / (LIMITER_RELEASE_MS * f64::from(rate))).exp()) as f32,
        }
    }

    /// Added delay in samples.
    pub fn delay(&self) -> usize {
        self.held.len()
    }

    /// Forget the signal (a new talk spurt starts from silence).
    pub fn reset(&mut self) {
        self.delay.fill(0.0);
        self.need.fill(1.0);
        self.held.fill(1.0);
        self.held_sum = self.held.len() as f64;
        self.since_peak = usize::MAX;
        self.gain = 1.0;
    }

    /// One sample in (any magnitude), the sample of [`delay`](Self::delay) ago out, limited.
    #[inline]
    pub fn run(&mut self, x: f32) -> i16 {
        let len = self.delay.len();
        let at = self.at;
        let need = if x.abs() > self.limit {
            self.since_peak = 0;
            self.limit / x.abs()
        } else {
            self.since_peak = self.since_peak.saturating_add(1);
            1.0
        };
        if let Some(d) = self.delay.get_mut(at) {
            *d = x;
        }
        if let Some(n) = self.need.get_mut(at) {
            *n = need;
        }
        // The oldest sample in the line leaves; `need` now covers it and everything after it.
        // A compare, not a modulo: a division per sample costs more than the rest.
        self.at = if at + 1 == len { 0 } else { at + 1 };
        let out = self.delay.get(self.at).copied().unwrap_or(0.0);
        if self.since_peak > 2 * len && self.gain >= 1.0 {
            // No peak in sight and none being released (the slow path has written every held
            // minimum back to 1 on its way here): a pure delay.
            return out.round().clamp(-32768.0, 32767.0) as i16;
        }
        let hold = self.need.iter().copied().fold(1.0f32, f32::min);
        let h = self.held.len();
        if let Some(old) = self.held.get_mut(if at == h { 0 } else { at }) {
            self.held_sum += f64::from(hold) - f64::from(*old);
            *old = hold;
        }
        let ramp = ((self.held_sum / h as f64) as f32).min(1.0);
        self.gain = (self.gain + (1.0 - self.gain) * self.release).min(ramp);
        if self.gain > 0.9999 && ramp >= 1.0 {
            self.gain = 1.0;
        }
        (out * self.gain).clamp(-self.limit, self.limit).round() as i16
    }
}

/// The normaliser's settings (node-wide, or a link's override).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormalizeSettings {
    /// Short-term loudness each voice is brought to.
    pub target_lufs: f64,
    /// The most it lifts a quiet voice, dB (it lowers a loud one as far as needed, down to
    /// [`MAX_CUT_DB`]).
    pub max_gain_db: f64,
}

/// The default target: a voice whose peaks reach ASL3's calibration level (1 kHz at 3 kHz
/// deviation, about 7000 peak, -13.4 dBFS: the AllStarLink audio-level guide and
/// chan_simpleusb's tune display) measures about -29 to -31 LUFS (espeak-ng speech: -31.5
/// aligned on its highest peak, -29.3 on its 99.9th percentile).
pub const DEFAULT_TARGET_LUFS: f64 = -30.0;

/// The default most a quiet voice is lifted.
pub const DEFAULT_MAX_GAIN_DB: f64 = 15.0;

impl Default for NormalizeSettings {
    fn default() -> Self {
        NormalizeSettings {
            target_lufs: DEFAULT_TARGET_LUFS,
            max_gain_db: DEFAULT_MAX_GAIN_DB,
        }
    }
}

/// The deepest cut the normaliser makes (a voice 30 dB over the target is a fault, not a level).
pub const MAX_CUT_DB: f64 = 30.0;

/// How fast the gain may move while it acquires a new voice (until its meter's window holds
/// [`ACQUIRE_BLOCKS`] of speech), dB per second of speech: a voice 12 dB off is at its first
/// estimate 0.3 s after the meter has heard 400 ms of it. The estimate is the mean of all the
/// speech heard so far, so it settles as the window fills rather than following syllables.
pub const ACQUIRE_DB_PER_S: f64 = 40.0;

/// Speech blocks the normaliser acquires for: the meter's whole window, 3 s.
pub const ACQUIRE_BLOCKS: u32 = SPEECH_BLOCKS as u32;

/// How fast the gain follows a known voice afterwards: seconds to move a few dB, never within a
/// syllable.
pub const TRACK_DB_PER_S: f64 = 1.5;

/// Consecutive tone frames before the normaliser stands aside. One: a tone's onset frame
/// already goes out with the voice's gain, and a DTMF digit lasts only a few frames.
const TONE_FRAMES: u8 = 1;

/// Frames of voice in a row that end standing aside for a tone.
const VOICE_FRAMES: u8 = 2;

/// One incoming voice brought to the target (see `docs/media.md`, "Loudness").
#[derive(Debug, Clone)]
pub struct Normalizer {
    settings: NormalizeSettings,
    rate: u32,
    meter: LoudnessMeter,
    limiter: Limiter,
    /// The voice's gain, dB: moved only during speech.
    gain_db: f64,
    /// The linear gain applied at the end of the last frame (ramps start from it).
    applied: f32,
    speech_blocks: u32,
    /// The tone detector's view: every `tone_step`-th sample (8 kHz), and its history.
    tone_step: usize,
    tone_view: Vec<i16>,
    history: [i16; TONE_ORDER],
    tone_run: u8,
    voice_run: u8,
    /// The last frame was a pause (or the voice had stopped).
    after_pause: bool,
}

impl Normalizer {
    pub fn new(rate: u32, settings: NormalizeSettings) -> Self {
        Normalizer {
            settings,
            rate,
            meter: LoudnessMeter::new(rate),
            limiter: Limiter::new(rate),
            gain_db: 0.0,
            applied: 1.0,
            speech_blocks: 0,
            tone_step: (rate / 8000).max(1) as usize,
            tone_view: Vec::with_capacity(160 + TONE_ORDER),
            history: [0; TONE_ORDER],
            tone_run: 0,
            voice_run: 0,
            after_pause: true,
        }
    }

    pub fn settings(&self) -> NormalizeSettings {
        self.settings
    }

    /// New settings; what was learnt of the voice stays.
    pub fn set_settings(&mut self, settings: NormalizeSettings) {
        self.settings = settings;
    }

    /// The voice's gain now, dB (0 while it stands aside for a tone is not reflected here).
    pub fn gain_db(&self) -> f64 {
        self.gain_db
    }

    /// The voice stopped (a talk spurt ended): the look-ahead starts empty next time, the
    /// learnt gain stays.
    pub fn pause(&mut self) {
        self.limiter.reset();
        self.history = [0; TONE_ORDER];
        self.tone_run = 0;
        self.voice_run = 0;
        self.after_pause = true;
    }

    /// Added delay in samples (the limiter's look-ahead).
    pub fn delay(&self) -> usize {
        self.limiter.delay()
    }

    /// One frame of the voice, normalised in place.
    pub fn process(&mut self, pcm: &mut [i16]) {
        // Tones are told at 8 kHz: at 16 kHz a predictor of a low tone grows large
        // coefficients that amplify the codec's noise (an 8 kHz µ-law leg's, resampled) past
        // the threshold. Taking every other sample aliases nothing below 4 kHz.
        self.tone_view.clear();
        self.tone_view.extend_from_slice(&self.history);
        self.tone_view
            .extend(pcm.iter().step_by(self.tone_step).copied());
        // After a pause the history is silence, which predicts nothing of a tone's onset: the
        // frame's own first samples stand in for it, so a digit is told from its first frame.
        let from = if self.after_pause { TONE_ORDER } else { 0 };
        let tone = is_tone(self.tone_view.get(from..).unwrap_or(&[]));
        let view = &self.tone_view;
        if let Some(tail) = view
            .len()
            .checked_sub(TONE_ORDER)
            .and_then(|at| view.get(at..))
        {
            self.history.copy_from_slice(tail);
        }
        // Unweighted, which is near enough to tell a pause from a voice.
        let power = pcm
            .iter()
            .map(|&s| f64::from(s) * f64::from(s))
            .sum::<f64>()
            / (pcm.len().max(1) as f64 * FULL_SCALE * FULL_SCALE);
        let pause = lufs(power) <= self.meter.gate_lufs();
        self.after_pause = pause;
        // A pause between the digits of a DTMF string (or a CW ID's gaps) keeps the normaliser
        // standing aside, and so do the frame a tone ends in and the one the next begins in:
        // only two frames of voice in a row bring its gain back.
        if tone {
            self.tone_run = self.tone_run.saturating_add(1);
            self.voice_run = 0;
        } else if pause {
            // A digit's onset frame after the gap is no voice's second frame.
            self.voice_run = 0;
        } else {
            self.voice_run = self.voice_run.saturating_add(1);
            if self.voice_run >= VOICE_FRAMES {
                self.tone_run = 0;
            }
        }
        if !tone {
            // Tones never teach the meter: a long DTMF string or a CW ID moves no gain.
            let closed = self.meter.feed(pcm);
            if closed > 0 && self.meter.speaking() {
                self.speech_blocks = self.speech_blocks.saturating_add(closed as u32);
            }
            // The gain moves a frame's worth while the voice speaks, and only then: the last
            // block was speech and this frame is above the gate, so it freezes from the first
            // frame of a pause.
            if self.meter.speaking() && !pause {
                let frame_s = pcm.len() as f64 / f64::from(self.rate);
                self.steer(frame_s);
            }
        }
        let standing_aside = self.tone_run >= TONE_FRAMES;
        let want = if standing_aside {
            1.0
        } else {
            crate::level::gain_from_db(self.gain_db)
        };
        let from = self.applied;
        let step = (want - from) / pcm.len().max(1) as f32;
        for (i, s) in pcm.iter_mut().enumerate() {
            let g = from + step * (i + 1) as f32;
            *s = self.limiter.run(f32::from(*s) * g);
        }
        self.applied = want;
    }

    /// Move the gain towards the target for `seconds` of speech.
    fn steer(&mut self, seconds: f64) {
        let Some(loudness) = self.meter.short_term() else {
            return;
        };
        let wanted = (self.settings.target_lufs - loudness)
            .clamp(-MAX_CUT_DB, self.settings.max_gain_db.max(0.0));
        let rate = if self.speech_blocks <= ACQUIRE_BLOCKS {
            ACQUIRE_DB_PER_S
        } else {
            TRACK_DB_PER_S
        };
        let step = rate * seconds;
        self.gain_db += (wanted - self.gain_db).clamp(-step, step);
    }
}
