//! Per-leg adaptive jitter buffer keyed by IAX2 timestamps.
//!
//! The design follows the behaviour of Asterisk's `main/jitterbuf.c` (Steve Kann's adaptive
//! buffer) re-stated for a tick-driven engine; docs/jitter.md has the full algorithm. In short:
//!
//! * every voice frame's *delay* (`now - adjusted ts`) goes into a 500-entry history; the 3rd
//!   and 97th percentiles of that history give `min` and `jitter`, and the playout delay aims
//!   at `target = min + jitter + target_extra`;
//! * [`JitterBuffer::get`] is called once per frame tick; it grows the delay by one
//!   interpolated frame when the target rises and shrinks it by dropping a frame when the
//!   delay is well above the target;
//! * control events (radio KEY/UNKEY, hangup, text, DTMF, CNG) travel in the same
//!   timestamp-ordered queue as the audio, so they come out after the audio sent before them,
//!   and they are never dropped as late;
//! * a run of four timestamp discontinuities (the peer restarted or jumped its clock)
//!   resynchronises the timeline.
//!
//! The buffer never reads a clock: every call takes `now_ms` from the engine's monotonic
//! clock. All storage is allocated in [`JitterBuffer::new`]; puts and gets never allocate.

use std::collections::VecDeque;
use std::fmt;

/// Number of voice-frame delays kept for the estimate (10 s of 20 ms frames).
pub const HISTORY_LEN: usize = 500;
/// Percentage of the history ignored at each end as outliers: `min` is the delay at the
/// 3rd percentile and `jitter` the spread up to the 97th.
pub const HISTORY_DROP_PCT: usize = 3;
/// A voice frame whose delay jumps this many times in a row resynchronises the timeline
/// (the earlier ones are dropped).
pub const RESYNC_AFTER: u32 = 4;
/// Slots reserved for control frames, on top of the voice slots.
pub const CONTROL_SLOTS: usize = 16;
/// Half-width of the window [`unwrap_mini`] accepts around the last timestamp.
pub const MINI_TS_WINDOW_MS: i32 = 50_000;
/// Frames over which [`conceal`] fades the repeated frame out to silence.
pub const CONCEAL_FADE_FRAMES: u32 = 3;

/// Recently accepted voice timestamps remembered for duplicate detection (2.5 s at 20 ms).
const SEEN_LEN: usize = 128;
/// Recently concealed slots remembered so a late arrival can be moved from `lost` to `late`.
const LOST_LEN: usize = 64;
/// Upper bound on the voice slots a configuration may ask for (memory guard).
const MAX_VOICE_SLOTS: usize = 4096;
/// Upper bound on `max_payload` (slin16 at 60 ms is 1 920 bytes; this leaves room).
const MAX_PAYLOAD_LIMIT: usize = 8192;
/// `now_ms` is clamped here so that no timestamp arithmetic can approach `i64` limits.
const MAX_NOW_MS: u64 = 1 << 52;

/// Rebuilds the 32-bit timestamp of a mini frame from its low 16 bits.
///
/// `last_ts` is the most recent unwrapped timestamp received from the peer. The candidate
/// `(last_ts & 0xFFFF_0000) | ts16` is moved one 65 536 ms period forward when it is more
/// than 50 000 ms behind `last_ts` (the low bits wrapped before a full frame told us so) and
/// one period back when it is more than 50 000 ms ahead (a stray frame from before the wrap).
/// All arithmetic wraps, so the rule also holds across the 32-bit wrap.
///
/// The result is exact whenever the true timestamp lies within ±15 535 ms of `last_ts`
/// (no other value with the same low 16 bits then lies inside the ±50 000 ms window).
/// Feeding every accepted frame's timestamp back as `last_ts`, not only full frames', keeps
/// it there; with full frames alone a mini frame more than 15 535 ms past the next 65 536 ms
/// boundary would be unwrapped one period short.
pub fn unwrap_mini(last_ts: u32, ts16: u16) -> u32 {
    let candidate = (last_ts & 0xFFFF_0000) | u32::from(ts16);
    // Both values share the upper 16 bits, so the difference fits easily in an i32.
    let diff = candidate.wrapping_sub(last_ts) as i32;
    if diff < -MINI_TS_WINDOW_MS {
        candidate.wrapping_add(0x1_0000)
    } else if diff > MINI_TS_WINDOW_MS {
        candidate.wrapping_sub(0x1_0000)
    } else {
        candidate
    }
}

/// Packet-loss concealment for one 20 ms (or any length) frame of linear PCM.
///
/// Repeats `last` (the last frame actually played, cyclically if `out` is longer) and fades
/// it linearly to zero over [`CONCEAL_FADE_FRAMES`] frames; `nth` is the 0-based index of
/// this frame in the run of concealed frames (as given by [`GetResult::Interpolate`]).
/// From frame `CONCEAL_FADE_FRAMES` on, and when `last` is empty, `out` is silence.
pub fn conceal(last: &[i16], out: &mut [i16], nth: u32) {
    if last.is_empty() || out.is_empty() || nth >= CONCEAL_FADE_FRAMES {
        out.fill(0);
        return;
    }
    let n = out.len() as i64;
    let span = i64::from(CONCEAL_FADE_FRAMES) * n;
    let start = i64::from(nth) * n;
    for (i, (o, &s)) in out.iter_mut().zip(last.iter().cycle()).enumerate() {
        // `remaining` runs from `span` (full level) down towards 0 over the whole fade.
        let remaining = span - (start + i as i64);
        let v = i64::from(s) * remaining / span;
        *o = i16::try_from(v).unwrap_or(0);
    }
}

/// Errors of the jitter buffer module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JitterError {
    /// A configuration field is outside its allowed range.
    InvalidConfig {
        /// The offending [`JitterConfig`] field.
        field: &'static str,
        /// The allowed range, in words.
        allowed: &'static str,
    },
}

impl fmt::Display for JitterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidConfig { field, allowed } => {
                write!(f, "invalid jitter buffer config: {field} must be {allowed}")
            }
        }
    }
}

impl std::error::Error for JitterError {}

/// Tuning of one [`JitterBuffer`]. The defaults are chan_iax2's (`maxjitterbuffer=1000`,
/// `resyncthreshold=1000`, `maxjitterinterps=10`, `jittertargetextra=40`) and jitterbuf.c's
/// adjustment pacing (grow at most every 40 ms, shrink every 500 ms, or 80 ms when empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitterConfig {
    /// Duration of one voice frame and of one `get` tick, in ms (1..=1000).
    pub frame_ms: u32,
    /// Largest playout delay above `min`, and largest span of queued audio (frame_ms..=60 000,
    /// at most 4 000 frames).
    pub max_jitterbuf_ms: u32,
    /// A delay jump larger than `2 * jitter + resync_threshold_ms` is a discontinuity;
    /// 0 disables discontinuity detection and resync (0..=600 000).
    pub resync_threshold_ms: u32,
    /// After this many interpolated frames in a row the buffer assumes the talker stopped and
    /// reports silence; 0 means never (0..=100 000).
    pub max_contig_interp: u32,
    /// Safety margin added to `min + jitter` (0..=10 000).
    pub target_extra_ms: u32,
    /// Largest payload accepted, in bytes; every slot reserves this much (1..=8 192).
    /// 640 holds 20 ms of slin16.
    pub max_payload: usize,
    /// Least time between two growth steps (0..=60 000).
    pub grow_interval_ms: u32,
    /// Least time between two shrink steps that drop a real frame (0..=60 000).
    pub shrink_interval_ms: u32,
    /// Least time between two shrink steps that skip an empty slot (0..=60 000).
    pub shrink_empty_interval_ms: u32,
}

impl Default for JitterConfig {
    fn default() -> Self {
        Self {
            frame_ms: 20,
            max_jitterbuf_ms: 1000,
            resync_threshold_ms: 1000,
            max_contig_interp: 10,
            target_extra_ms: 40,
            max_payload: 640,
            grow_interval_ms: 40,
            shrink_interval_ms: 500,
            shrink_empty_interval_ms: 80,
        }
    }
}

impl JitterConfig {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<(), JitterError> {
        fn check(ok: bool, field: &'static str, allowed: &'static str) -> Result<(), JitterError> {
            if ok {
                Ok(())
            } else {
                Err(JitterError::InvalidConfig { field, allowed })
            }
        }
        check((1..=1000).contains(&self.frame_ms), "frame_ms", "1..=1000")?;
        check(
            self.max_jitterbuf_ms >= self.frame_ms
                && self.max_jitterbuf_ms <= 60_000
                && self.max_jitterbuf_ms / self.frame_ms <= 4000,
            "max_jitterbuf_ms",
            "at least frame_ms, at most 60000 and at most 4000 frames",
        )?;
        check(
            self.resync_threshold_ms <= 600_000,
            "resync_threshold_ms",
            "0..=600000",
        )?;
        check(
            self.max_contig_interp <= 100_000,
            "max_contig_interp",
            "0..=100000",
        )?;
        check(
            self.target_extra_ms <= 10_000,
            "target_extra_ms",
            "0..=10000",
        )?;
        check(
            (1..=MAX_PAYLOAD_LIMIT).contains(&self.max_payload),
            "max_payload",
            "1..=8192",
        )?;
        check(
            self.grow_interval_ms <= 60_000,
            "grow_interval_ms",
            "0..=60000",
        )?;
        check(
            self.shrink_interval_ms <= 60_000,
            "shrink_interval_ms",
            "0..=60000",
        )?;
        check(
            self.shrink_empty_interval_ms <= 60_000,
            "shrink_empty_interval_ms",
            "0..=60000",
        )?;
        Ok(())
    }

    /// Voice slots: a full `max_jitterbuf_ms` of frames plus a little room for timestamps that
    /// are not exact multiples of the frame length.
    fn voice_slots(&self) -> usize {
        let frames = (self.max_jitterbuf_ms / self.frame_ms.max(1)) as usize;
        (frames + 4).min(MAX_VOICE_SLOTS)
    }
}

/// A non-audio event carried in timestamp order with the audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlKind {
    /// Radio key-up (control subclass 12).
    Key,
    /// Radio unkey (control subclass 13); ends the talk spurt.
    Unkey,
    /// Hangup; ends the talk spurt.
    Hangup,
    /// Comfort noise / silence start (frame type CNG); ends the talk spurt.
    Cng,
    /// A DTMF digit (the ASCII character).
    Dtmf(u8),
    /// A text frame; the text is the payload.
    Text,
    /// Any other frame the caller wants kept in order with the audio.
    Other {
        /// IAX2 frame type.
        frametype: u8,
        /// IAX2 subclass.
        subclass: u32,
    },
}

impl ControlKind {
    /// True for events after which no more audio of the current talk spurt is expected, so
    /// the buffer reports silence instead of concealing missing frames.
    pub fn ends_spurt(self) -> bool {
        matches!(self, Self::Unkey | Self::Hangup | Self::Cng)
    }
}

/// Why a frame offered to the buffer was not queued (see [`PutResult::Dropped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// Its delay jumped by more than the resync threshold; after [`RESYNC_AFTER`] such
    /// frames in a row the buffer resynchronises instead.
    Discontinuity,
    /// Queueing it would hold more than `max_jitterbuf_ms` of audio.
    TooFar,
    /// Every slot of its kind is in use.
    Full,
    /// Its payload is larger than `max_payload`.
    Oversize,
}

/// Outcome of [`JitterBuffer::put_voice`] and [`JitterBuffer::put_control`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PutResult {
    /// Queued for playout.
    Queued,
    /// Queued, after the timeline was resynchronised on this frame.
    Resynced,
    /// Same timestamp as a frame already received; discarded.
    Duplicate,
    /// Its playout slot has already passed; discarded (voice only).
    Late,
    /// Discarded for the given reason.
    Dropped(DropReason),
}

/// One item of a tick's output from [`JitterBuffer::get`].
///
/// Per tick the caller calls `get` until [`GetResult::ends_tick`] is true: zero or more
/// `Control` / `Dropped` items come first, then exactly one `Voice`, `Interpolate` or
/// `Silence` fills the tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetResult<'a> {
    /// Play this frame.
    Voice {
        /// The peer's timestamp of the frame.
        ts: u32,
        /// The payload as given to `put_voice`, valid until the next call on the buffer.
        payload: &'a [u8],
    },
    /// Audio is expected but missing (loss, or the buffer is growing): conceal it, e.g. with
    /// [`conceal`]. `nth` counts the concealed frames in a row from 0.
    Interpolate {
        /// Position of this frame in the current run of concealed frames, from 0.
        nth: u32,
    },
    /// Nothing to play: the peer is not talking.
    Silence,
    /// A control event due before this tick's audio.
    Control {
        /// The peer's timestamp of the event.
        ts: u32,
        /// What happened.
        kind: ControlKind,
        /// The payload as given to `put_control` (text frames), valid until the next call.
        payload: &'a [u8],
    },
    /// A queued voice frame was discarded (too late, or dropped to shrink the delay).
    Dropped {
        /// The peer's timestamp of the discarded frame.
        ts: u32,
    },
}

impl GetResult<'_> {
    /// True for the results that fill the tick (`Voice`, `Interpolate`, `Silence`).
    pub fn ends_tick(&self) -> bool {
        matches!(
            self,
            Self::Voice { .. } | Self::Interpolate { .. } | Self::Silence
        )
    }
}

/// Counters and current estimates of one buffer. Delays are in ms.
///
/// `current_ms`, `target_ms` and `min_ms` are measured against the first frame's transit
/// time (which counts as 0), so only their differences are meaningful; `delay_ms` is the
/// playout delay above the fastest frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JitterStats {
    /// Voice frames offered to `put_voice` (including duplicates, late and dropped ones).
    pub frames_in: u64,
    /// Voice frames returned as `Voice`.
    pub frames_out: u64,
    /// Control frames offered to `put_control`.
    pub control_in: u64,
    /// Control frames returned as `Control`.
    pub control_out: u64,
    /// Control frames refused (queue full or oversize).
    pub control_dropped: u64,
    /// Playout slots of a talk spurt that no frame ever filled (concealed or skipped);
    /// a frame that turns up after its slot moves from `lost` to `late`.
    pub lost: u64,
    /// Voice frames that arrived after their playout slot.
    pub late: u64,
    /// Voice frames discarded for other reasons: shrinking, discontinuity, overfull queue,
    /// no free slot, oversize.
    pub dropped: u64,
    /// Voice frames with a timestamp already received.
    pub duplicate: u64,
    /// Voice frames that arrived after a frame with a higher timestamp.
    pub reordered: u64,
    /// `Interpolate` results (losses plus growth steps).
    pub interpolated: u64,
    /// Timeline resynchronisations.
    pub resyncs: u64,
    /// Current playout delay.
    pub current_ms: i64,
    /// Target playout delay.
    pub target_ms: i64,
    /// Jitter estimate (97th minus 3rd percentile of the delay history).
    pub jitter_ms: i64,
    /// Delay of the fastest frames (3rd percentile of the history).
    pub min_ms: i64,
    /// `current_ms - min_ms`: how long audio waits in the buffer.
    pub delay_ms: i64,
    /// Frames (voice and control) now queued.
    pub queued: usize,
    /// True while a talk spurt is being played out.
    pub talking: bool,
}

/// Values for the receiver-report information elements of an IAX2 PONG.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RrValues {
    /// RR_JITTER (IE 46): jitter estimate in ms.
    pub jitter: u32,
    /// RR_LOSS (IE 47): loss percentage over the last interval in the top byte, total lost
    /// frames (mod 2^24) in the low 24 bits.
    pub loss: u32,
    /// RR_PKTS (IE 48): voice frames received.
    pub pkts: u32,
    /// RR_DELAY (IE 49): playout delay above `min`, in ms.
    pub delay: u16,
    /// RR_DROPPED (IE 50): voice frames dropped by the buffer (not counting late ones).
    pub dropped: u32,
    /// RR_OOO (IE 51): voice frames received out of order.
    pub ooo: u32,
}

impl RrValues {
    /// The loss percentage in the top byte of `loss`.
    pub fn loss_percent(&self) -> u8 {
        self.loss.to_be_bytes()[0]
    }

    /// The lost-frame count in the low 24 bits of `loss`.
    pub fn lost_frames(&self) -> u32 {
        self.loss & 0x00FF_FFFF
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Voice,
    Control(ControlKind),
}

/// A queued frame; its payload lives in `JitterBuffer::data` at `index * max_payload`.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Adjusted timestamp: the peer's timestamp moved onto our clock (`ext - offset`).
    ats: i64,
    ts: u32,
    len: usize,
    entry: Entry,
}

/// Maps the peer's 32-bit timestamps onto a continuous i64 line and onto our clock.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    /// The highest timestamp accepted so far and its extended value: new timestamps are
    /// extended by their wrap-safe (i32) distance from it.
    ref_ts: u32,
    ref_ext: i64,
    /// `ats = ext - offset`; chosen so that the first frame has delay 0.
    offset: i64,
}

impl Timeline {
    fn start(ts: u32, now: i64) -> Self {
        Self {
            ref_ts: ts,
            ref_ext: 0,
            offset: -now,
        }
    }

    fn extend(&self, ts: u32) -> i64 {
        let step = ts.wrapping_sub(self.ref_ts) as i32;
        self.ref_ext.saturating_add(i64::from(step))
    }

    fn advance(&mut self, ts: u32, ext: i64) {
        if ext > self.ref_ext {
            self.ref_ts = ts;
            self.ref_ext = ext;
        }
    }
}

/// The delay history: a ring in arrival order plus the same values kept sorted.
///
/// Each push replaces the evicted delay by the new one in the sorted copy with one shift of
/// the entries between their two positions (usually a few, at most the whole window), so the
/// percentiles are plain lookups. Asterisk keeps only the top and bottom 20 sorted and
/// rebuilds them from the whole history whenever an evicted delay was one of them, which
/// with steady delays (all equal) happens on every frame.
#[derive(Debug, Clone)]
struct DelayHistory {
    ring: Box<[i64]>,
    sorted: Box<[i64]>,
    len: usize,
    next: usize,
}

impl DelayHistory {
    fn new() -> Self {
        Self {
            ring: vec![0; HISTORY_LEN].into_boxed_slice(),
            sorted: vec![0; HISTORY_LEN].into_boxed_slice(),
            len: 0,
            next: 0,
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.next = 0;
    }

    fn push(&mut self, delay: i64) {
        let len = self.len;
        let Some(cell) = self.ring.get_mut(self.next) else {
            return;
        };
        let evicted = std::mem::replace(cell, delay);
        self.next = (self.next + 1) % HISTORY_LEN;
        if len < HISTORY_LEN {
            let Some(sorted) = self.sorted.get_mut(..=len) else {
                return;
            };
            let pos = sorted
                .get(..len)
                .map_or(0, |s| s.partition_point(|&x| x < delay));
            sorted.copy_within(pos..len, pos + 1);
            if let Some(c) = sorted.get_mut(pos) {
                *c = delay;
            }
            self.len = len + 1;
            return;
        }
        if evicted == delay {
            return; // the sorted multiset does not change
        }
        let sorted = &mut self.sorted[..];
        // Take the copy of the evicted delay nearest to where the new one goes, so the shift
        // only spans the values in between (none when the delays are steady).
        let (old, at) = if delay > evicted {
            let old = sorted.partition_point(|&x| x <= evicted).saturating_sub(1);
            let new = sorted.partition_point(|&x| x < delay);
            (old, new.saturating_sub(1))
        } else {
            let old = sorted.partition_point(|&x| x < evicted);
            let new = sorted.partition_point(|&x| x <= delay);
            (old, new)
        };
        if sorted.get(old) != Some(&evicted) {
            // Cannot happen while ring and sorted hold the same values; recover anyway.
            sorted.copy_from_slice(&self.ring);
            sorted.sort_unstable();
            return;
        }
        if at > old {
            sorted.copy_within(old + 1..=at, old);
        } else {
            sorted.copy_within(at..old, at + 1);
        }
        if let Some(c) = sorted.get_mut(at) {
            *c = delay;
        }
    }

    /// `(min, jitter)`: the delay at the 3rd percentile and the spread to the 97th.
    fn estimate(&self) -> (i64, i64) {
        let idx = self.len * HISTORY_DROP_PCT / 100;
        let lo = self.sorted.get(idx).copied();
        let hi = self
            .len
            .checked_sub(idx + 1)
            .and_then(|i| self.sorted.get(i))
            .copied();
        match (lo, hi) {
            (Some(lo), Some(hi)) if self.len > 0 => (lo, hi.saturating_sub(lo).max(0)),
            _ => (0, 0),
        }
    }
}

/// A fixed ring of recent values.
#[derive(Debug, Clone)]
struct Recent<const N: usize> {
    vals: [Option<i64>; N],
    next: usize,
}

impl<const N: usize> Recent<N> {
    fn new() -> Self {
        Self {
            vals: [None; N],
            next: 0,
        }
    }

    fn clear(&mut self) {
        self.vals = [None; N];
        self.next = 0;
    }

    fn push(&mut self, v: i64) {
        if let Some(cell) = self.vals.get_mut(self.next) {
            *cell = Some(v);
        }
        self.next = (self.next + 1) % N;
    }

    fn contains(&self, v: i64) -> bool {
        self.vals.contains(&Some(v))
    }

    /// Forgets one value within `tol` of `v`; true if there was one.
    fn take_near(&mut self, v: i64, tol: i64) -> bool {
        let tol = tol.unsigned_abs();
        match self
            .vals
            .iter_mut()
            .find(|x| x.is_some_and(|x| x.abs_diff(v) <= tol))
        {
            Some(cell) => {
                *cell = None;
                true
            }
            None => false,
        }
    }
}

/// What one `get` step decided, before payloads are borrowed for the caller.
enum Step {
    Voice(u16),
    Control(u16),
    Dropped(u32),
    Interpolate(u32),
    Silence,
}

/// Event counters (the estimates live in the buffer itself).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    frames_in: u64,
    frames_out: u64,
    control_in: u64,
    control_out: u64,
    control_dropped: u64,
    lost: u64,
    late: u64,
    dropped: u64,
    duplicate: u64,
    reordered: u64,
    interpolated: u64,
    resyncs: u64,
}

/// Adaptive jitter buffer for one leg. See the module documentation and docs/jitter.md.
#[derive(Debug, Clone)]
pub struct JitterBuffer {
    cfg: JitterConfig,
    frame: i64,
    /// Frames whose adjusted ts is within `[p - half, p + frame - half)` fill slot `p`.
    half: i64,
    voice_cap: usize,

    slots: Vec<Slot>,
    data: Vec<u8>,
    /// Slot indices sorted by adjusted timestamp; equal timestamps keep arrival order.
    order: VecDeque<u16>,
    free: Vec<u16>,
    voice_queued: usize,
    control_queued: usize,

    timeline: Option<Timeline>,
    history: DelayHistory,
    min: i64,
    jitter: i64,
    target: i64,
    current: i64,
    last_delay: i64,
    discontinuities: u32,

    talking: bool,
    /// Adjusted timestamp of the next slot to play; in silence, the end of the last spurt.
    play: Option<i64>,
    last_adjust: Option<i64>,
    contig_interp: u32,
    highest_voice: Option<i64>,
    seen: Recent<SEEN_LEN>,
    lost_slots: Recent<LOST_LEN>,

    counters: Counters,
    rr_mark_lost: u64,
    rr_mark_out: u64,
}

fn clamp_now(now_ms: u64) -> i64 {
    // Lossless: the value is at most 2^52.
    now_ms.min(MAX_NOW_MS) as i64
}

fn low32(v: u64) -> u32 {
    (v & 0xFFFF_FFFF) as u32
}

impl JitterBuffer {
    /// Builds a buffer; all of its storage is allocated here.
    pub fn new(cfg: JitterConfig) -> Result<Self, JitterError> {
        cfg.validate()?;
        let voice_cap = cfg.voice_slots();
        let total = voice_cap + CONTROL_SLOTS;
        let total_u16 = u16::try_from(total).map_err(|_| JitterError::InvalidConfig {
            field: "max_jitterbuf_ms",
            allowed: "at most 4000 frames",
        })?;
        let blank = Slot {
            ats: 0,
            ts: 0,
            len: 0,
            entry: Entry::Voice,
        };
        let frame = i64::from(cfg.frame_ms);
        let extra = i64::from(cfg.target_extra_ms);
        Ok(Self {
            cfg,
            frame,
            half: frame / 2,
            voice_cap,
            slots: vec![blank; total],
            data: vec![0; total * cfg.max_payload],
            order: VecDeque::with_capacity(total),
            free: (0..total_u16).rev().collect(),
            voice_queued: 0,
            control_queued: 0,
            timeline: None,
            history: DelayHistory::new(),
            min: 0,
            jitter: 0,
            target: extra,
            current: extra,
            last_delay: 0,
            discontinuities: 0,
            talking: false,
            play: None,
            last_adjust: None,
            contig_interp: 0,
            highest_voice: None,
            seen: Recent::new(),
            lost_slots: Recent::new(),
            counters: Counters::default(),
            rr_mark_lost: 0,
            rr_mark_out: 0,
        })
    }

    /// The configuration the buffer was built with.
    pub fn config(&self) -> &JitterConfig {
        &self.cfg
    }

    /// Forgets every frame, estimate and counter (a new call on the same leg).
    pub fn reset(&mut self) {
        while let Some(idx) = self.order.pop_front() {
            self.free.push(idx);
        }
        self.voice_queued = 0;
        self.control_queued = 0;
        self.timeline = None;
        self.history.clear();
        self.min = 0;
        self.jitter = 0;
        self.target = i64::from(self.cfg.target_extra_ms);
        self.current = self.target;
        self.last_delay = 0;
        self.discontinuities = 0;
        self.talking = false;
        self.play = None;
        self.last_adjust = None;
        self.contig_interp = 0;
        self.highest_voice = None;
        self.seen.clear();
        self.lost_slots.clear();
        self.counters = Counters::default();
        self.rr_mark_lost = 0;
        self.rr_mark_out = 0;
    }

    /// Offers a voice frame with the peer's (unwrapped) timestamp `ts`, received at `now_ms`.
    pub fn put_voice(&mut self, ts: u32, payload: &[u8], now_ms: u64) -> PutResult {
        let now = clamp_now(now_ms);
        self.counters.frames_in += 1;
        if payload.len() > self.cfg.max_payload {
            self.counters.dropped += 1;
            return PutResult::Dropped(DropReason::Oversize);
        }
        // The first voice frame has no delay to be continuous with, even if control frames
        // started the timeline.
        let fresh = self.history.len == 0;
        let tl = *self.timeline.get_or_insert(Timeline::start(ts, now));
        let ext = tl.extend(ts);
        if self.highest_voice.is_some_and(|h| ext <= h) && self.seen.contains(ext) {
            self.counters.duplicate += 1;
            return PutResult::Duplicate;
        }

        let mut offset = tl.offset;
        let mut delay = now.saturating_sub(ext.saturating_sub(offset));
        let mut resynced = false;
        if !fresh && self.is_discontinuous(delay) {
            self.discontinuities += 1;
            if self.discontinuities < RESYNC_AFTER {
                self.counters.dropped += 1;
                return PutResult::Dropped(DropReason::Discontinuity);
            }
            // Put the new timeline where the old one left off: this frame gets the delay
            // frames had before the jump, so playout continues without a gap.
            offset = ext.saturating_sub(now.saturating_sub(self.last_delay));
            delay = self.last_delay;
            self.timeline = Some(Timeline {
                ref_ts: ts,
                ref_ext: ext,
                offset,
            });
            self.history.clear();
            self.seen.clear();
            self.lost_slots.clear();
            self.highest_voice = None;
            self.counters.resyncs += 1;
            resynced = true;
        }
        self.discontinuities = 0;
        self.last_delay = delay;
        self.history.push(delay);
        if let Some(t) = self.timeline.as_mut() {
            t.advance(ts, ext);
        }
        match self.highest_voice {
            Some(h) if ext < h => self.counters.reordered += 1,
            _ => self.highest_voice = Some(ext),
        }
        self.seen.push(ext);

        let ats = ext.saturating_sub(offset);
        if let Some(p) = self.play {
            if ats < p.saturating_sub(self.half) {
                self.counters.late += 1;
                if self.lost_slots.take_near(ats, self.half) {
                    self.counters.lost = self.counters.lost.saturating_sub(1);
                }
                return PutResult::Late;
            }
        }
        if let Some((lo, hi)) = self.voice_bounds() {
            let span = hi.max(ats).saturating_sub(lo.min(ats));
            if span >= i64::from(self.cfg.max_jitterbuf_ms) {
                self.counters.dropped += 1;
                return PutResult::Dropped(DropReason::TooFar);
            }
        }
        if self.voice_queued >= self.voice_cap || !self.insert(ats, ts, Entry::Voice, payload) {
            self.counters.dropped += 1;
            return PutResult::Dropped(DropReason::Full);
        }
        if resynced {
            PutResult::Resynced
        } else {
            PutResult::Queued
        }
    }

    /// Offers a control event with the peer's timestamp `ts`, received at `now_ms`.
    ///
    /// Control events are never late: one whose time has passed comes out at the next `get`
    /// (after any audio with a lower timestamp, which has then been played). They do not feed
    /// the delay history and never trigger a resync, because retransmitted full frames carry
    /// old timestamps. One whose timestamp lies far in the future (a discontinuity) is placed
    /// right after the audio already queued.
    pub fn put_control(
        &mut self,
        ts: u32,
        kind: ControlKind,
        payload: &[u8],
        now_ms: u64,
    ) -> PutResult {
        let now = clamp_now(now_ms);
        self.counters.control_in += 1;
        if payload.len() > self.cfg.max_payload {
            self.counters.control_dropped += 1;
            return PutResult::Dropped(DropReason::Oversize);
        }
        if self.control_queued >= CONTROL_SLOTS {
            self.counters.control_dropped += 1;
            return PutResult::Dropped(DropReason::Full);
        }
        let tl = *self.timeline.get_or_insert(Timeline::start(ts, now));
        let ext = tl.extend(ts);
        let mut ats = ext.saturating_sub(tl.offset);
        let delay = now.saturating_sub(ats);
        if delay < self.last_delay && self.is_discontinuous(delay) {
            let playout = if self.talking {
                self.play.unwrap_or(now)
            } else {
                now.saturating_sub(self.target)
            };
            ats = self.back_ats().map_or(playout, |b| b.max(playout));
        } else if let Some(t) = self.timeline.as_mut() {
            t.advance(ts, ext);
        }
        if self.insert(ats, ts, Entry::Control(kind), payload) {
            PutResult::Queued
        } else {
            self.counters.control_dropped += 1;
            PutResult::Dropped(DropReason::Full)
        }
    }

    /// Produces the next item of the tick at `now_ms`; see [`GetResult`] for the protocol.
    pub fn get(&mut self, now_ms: u64) -> GetResult<'_> {
        let now = clamp_now(now_ms);
        self.refresh_estimate();
        let step = if self.talking {
            self.step_talking(now)
        } else {
            self.step_silent(now)
        };
        match step {
            Step::Voice(idx) => {
                let slot = self.slot(idx);
                GetResult::Voice {
                    ts: slot.ts,
                    payload: self.payload(idx, slot.len),
                }
            }
            Step::Control(idx) => {
                let slot = self.slot(idx);
                let kind = match slot.entry {
                    Entry::Control(kind) => kind,
                    Entry::Voice => ControlKind::Other {
                        frametype: 0,
                        subclass: 0,
                    },
                };
                GetResult::Control {
                    ts: slot.ts,
                    kind,
                    payload: self.payload(idx, slot.len),
                }
            }
            Step::Dropped(ts) => GetResult::Dropped { ts },
            Step::Interpolate(nth) => GetResult::Interpolate { nth },
            Step::Silence => GetResult::Silence,
        }
    }

    /// Counters and the estimates as of the last `get`.
    pub fn stats(&self) -> JitterStats {
        let c = &self.counters;
        JitterStats {
            frames_in: c.frames_in,
            frames_out: c.frames_out,
            control_in: c.control_in,
            control_out: c.control_out,
            control_dropped: c.control_dropped,
            lost: c.lost,
            late: c.late,
            dropped: c.dropped,
            duplicate: c.duplicate,
            reordered: c.reordered,
            interpolated: c.interpolated,
            resyncs: c.resyncs,
            current_ms: self.current,
            target_ms: self.target,
            jitter_ms: self.jitter,
            min_ms: self.min,
            delay_ms: self.current.saturating_sub(self.min),
            queued: self.order.len(),
            talking: self.talking,
        }
    }

    /// Values for a PONG's RR information elements. The loss percentage covers the slots
    /// played or lost since the previous call, so call this once per PONG.
    pub fn rr_values(&mut self) -> RrValues {
        let c = self.counters;
        let interval_lost = c.lost.saturating_sub(self.rr_mark_lost);
        let interval_out = c.frames_out.saturating_sub(self.rr_mark_out);
        self.rr_mark_lost = c.lost;
        self.rr_mark_out = c.frames_out;
        let expected = interval_lost.saturating_add(interval_out);
        let pct = interval_lost
            .saturating_mul(100)
            .saturating_add(expected / 2)
            .checked_div(expected)
            .unwrap_or(0);
        let pct = u32::try_from(pct.min(100)).unwrap_or(100);
        RrValues {
            jitter: u32::try_from(self.jitter.max(0)).unwrap_or(u32::MAX),
            loss: (pct << 24) | (low32(c.lost) & 0x00FF_FFFF),
            pkts: low32(c.frames_in),
            delay: u16::try_from(self.current.saturating_sub(self.min).max(0)).unwrap_or(u16::MAX),
            dropped: low32(c.dropped),
            ooo: low32(c.reordered),
        }
    }

    fn is_discontinuous(&self, delay: i64) -> bool {
        if self.cfg.resync_threshold_ms == 0 {
            return false;
        }
        let threshold = self
            .jitter
            .saturating_mul(2)
            .saturating_add(i64::from(self.cfg.resync_threshold_ms))
            .max(0);
        delay.abs_diff(self.last_delay) > threshold.unsigned_abs()
    }

    fn refresh_estimate(&mut self) {
        let (min, jitter) = self.history.estimate();
        self.min = min;
        self.jitter = jitter;
        let spread = jitter
            .saturating_add(i64::from(self.cfg.target_extra_ms))
            .min(i64::from(self.cfg.max_jitterbuf_ms));
        self.target = min.saturating_add(spread);
    }

    fn step_talking(&mut self, now: i64) -> Step {
        let frame = self.frame;
        let half = self.half;
        let mut p = self
            .play
            .unwrap_or_else(|| now.saturating_sub(self.current));

        if let Some((_, head)) = self.front() {
            if let Entry::Control(kind) = head.entry {
                // A spurt-ending event with no audio left in the queue ends the spurt now
                // rather than concealing up to its timestamp: senders stamp voice with a
                // predicted clock and control frames with the real one, which may run ahead.
                // Audio older than the event that still turns up is then late.
                let ends_now = kind.ends_spurt() && self.voice_queued == 0;
                if ends_now {
                    self.play = Some(p.max(head.ats));
                }
                if ends_now || head.ats < p.saturating_add(frame) {
                    return self.pop_control(kind);
                }
            }
        }

        let diff = self.target.saturating_sub(self.current);
        let since = self.last_adjust.map_or(i64::MAX, |t| now.saturating_sub(t));
        if diff > 0 && (since >= i64::from(self.cfg.grow_interval_ms) || diff > self.queued_span())
        {
            self.current = self.current.saturating_add(frame);
            self.last_adjust = Some(now);
            return self.interpolate();
        }

        let mut offset = self.head_voice_offset(p);
        if let Some(d) = offset {
            if d < -half {
                return self.pop_late();
            }
        }
        let mut due = offset.is_some_and(|d| d < frame - half);

        let extra = i64::from(self.cfg.target_extra_ms);
        let shrink_due = since >= i64::from(self.cfg.shrink_interval_ms)
            || (!due && since >= i64::from(self.cfg.shrink_empty_interval_ms));
        if diff < -extra && shrink_due {
            self.last_adjust = Some(now);
            self.contig_interp = 0;
            if let (true, Some(d)) = (due, offset) {
                // Drop this slot's frame: the next slot plays in the same tick.
                if let Some((_, slot)) = self.pop_front() {
                    self.current = self.current.saturating_sub(frame.saturating_add(d));
                    self.play = Some(slot.ats.saturating_add(frame));
                    self.counters.dropped += 1;
                    return Step::Dropped(slot.ts);
                }
            }
            // Skip the empty slot instead of concealing it, then serve the next one.
            self.mark_lost(p);
            self.current = self.current.saturating_sub(frame);
            p = p.saturating_add(frame);
            self.play = Some(p);
            offset = self.head_voice_offset(p);
            due = offset.is_some_and(|d| d >= -half && d < frame - half);
        }

        if let (true, Some(d)) = (due, offset) {
            if let Some((idx, slot)) = self.pop_front() {
                // Follow the sender's timestamp grid; keep `play + current` = this tick.
                self.current = self.current.saturating_sub(d);
                self.play = Some(slot.ats.saturating_add(frame));
                self.contig_interp = 0;
                self.counters.frames_out += 1;
                return Step::Voice(idx);
            }
        }
        self.mark_lost(p);
        self.play = Some(p.saturating_add(frame));
        self.interpolate()
    }

    fn step_silent(&mut self, now: i64) -> Step {
        let Some((_, head)) = self.front() else {
            return Step::Silence;
        };
        if head.ats.saturating_add(self.target) > now {
            return Step::Silence;
        }
        match head.entry {
            Entry::Control(kind) => self.pop_control(kind),
            Entry::Voice => {
                if self
                    .play
                    .is_some_and(|p| head.ats < p.saturating_sub(self.half))
                {
                    return self.pop_late();
                }
                let Some((idx, slot)) = self.pop_front() else {
                    return Step::Silence;
                };
                // A new talk spurt starts at the delay it actually has now (at least the
                // target; more if the frame was already overdue).
                self.talking = true;
                self.contig_interp = 0;
                self.current = now.saturating_sub(slot.ats);
                self.play = Some(slot.ats.saturating_add(self.frame));
                self.counters.frames_out += 1;
                Step::Voice(idx)
            }
        }
    }

    fn interpolate(&mut self) -> Step {
        let nth = self.contig_interp;
        self.contig_interp = self.contig_interp.saturating_add(1);
        self.counters.interpolated += 1;
        if self.cfg.max_contig_interp > 0 && self.contig_interp >= self.cfg.max_contig_interp {
            self.talking = false;
        }
        Step::Interpolate(nth)
    }

    fn mark_lost(&mut self, slot_ats: i64) {
        self.counters.lost += 1;
        self.lost_slots.push(slot_ats);
    }

    fn pop_control(&mut self, kind: ControlKind) -> Step {
        match self.pop_front() {
            Some((idx, _)) => {
                self.counters.control_out += 1;
                if kind.ends_spurt() && self.talking {
                    self.talking = false;
                    self.contig_interp = 0;
                }
                Step::Control(idx)
            }
            None => Step::Silence,
        }
    }

    fn pop_late(&mut self) -> Step {
        match self.pop_front() {
            Some((_, slot)) => {
                self.counters.late += 1;
                Step::Dropped(slot.ts)
            }
            None => Step::Silence,
        }
    }

    /// Offset of the head from slot `p` if the head is a voice frame.
    fn head_voice_offset(&self, p: i64) -> Option<i64> {
        match self.front() {
            Some((_, slot)) if slot.entry == Entry::Voice => Some(slot.ats.saturating_sub(p)),
            _ => None,
        }
    }

    fn slot(&self, idx: u16) -> Slot {
        self.slots.get(usize::from(idx)).copied().unwrap_or(Slot {
            ats: 0,
            ts: 0,
            len: 0,
            entry: Entry::Voice,
        })
    }

    fn payload(&self, idx: u16, len: usize) -> &[u8] {
        let start = usize::from(idx) * self.cfg.max_payload;
        self.data.get(start..start + len).unwrap_or(&[])
    }

    fn front(&self) -> Option<(u16, Slot)> {
        self.order.front().map(|&idx| (idx, self.slot(idx)))
    }

    fn front_ats(&self) -> Option<i64> {
        self.front().map(|(_, s)| s.ats)
    }

    fn back_ats(&self) -> Option<i64> {
        self.order.back().map(|&idx| self.slot(idx).ats)
    }

    /// Adjusted timestamps of the first and last queued voice frames.
    fn voice_bounds(&self) -> Option<(i64, i64)> {
        let voice = |&&i: &&u16| self.slot(i).entry == Entry::Voice;
        let lo = self.order.iter().find(voice)?;
        let hi = self.order.iter().rev().find(voice)?;
        Some((self.slot(*lo).ats, self.slot(*hi).ats))
    }

    fn queued_span(&self) -> i64 {
        match (self.front_ats(), self.back_ats()) {
            (Some(lo), Some(hi)) => hi.saturating_sub(lo),
            _ => 0,
        }
    }

    fn pop_front(&mut self) -> Option<(u16, Slot)> {
        let idx = self.order.pop_front()?;
        let slot = self.slot(idx);
        self.free.push(idx);
        match slot.entry {
            Entry::Voice => self.voice_queued = self.voice_queued.saturating_sub(1),
            Entry::Control(_) => self.control_queued = self.control_queued.saturating_sub(1),
        }
        Some((idx, slot))
    }

    /// Copies the frame into a free slot and links it in timestamp order.
    fn insert(&mut self, ats: i64, ts: u32, entry: Entry, payload: &[u8]) -> bool {
        let Some(idx) = self.free.pop() else {
            return false;
        };
        let start = usize::from(idx) * self.cfg.max_payload;
        match self.data.get_mut(start..start + payload.len()) {
            Some(dst) => dst.copy_from_slice(payload),
            None => {
                self.free.push(idx);
                return false;
            }
        }
        if let Some(cell) = self.slots.get_mut(usize::from(idx)) {
            *cell = Slot {
                ats,
                ts,
                len: payload.len(),
                entry,
            };
        }
        // Frames mostly arrive in order, so search from the back.
        let mut pos = self.order.len();
        while pos > 0 {
            let prev = self
                .order
                .get(pos - 1)
                .map_or(i64::MIN, |&i| self.slot(i).ats);
            if prev <= ats {
                break;
            }
            pos -= 1;
        }
        self.order.insert(pos, idx);
        match entry {
            Entry::Voice => self.voice_queued += 1,
            Entry::Control(_) => self.control_queued += 1,
        }
        true
    }

    /// Internal consistency checks for the tests.
    #[cfg(test)]
    fn check_invariants(&self) {
        let total = self.voice_cap + CONTROL_SLOTS;
        assert_eq!(self.order.len() + self.free.len(), total);
        assert_eq!(self.voice_queued + self.control_queued, self.order.len());
        assert!(self.voice_queued <= self.voice_cap);
        assert!(self.control_queued <= CONTROL_SLOTS);
        let ats: Vec<i64> = self.order.iter().map(|&i| self.slot(i).ats).collect();
        assert!(ats.windows(2).all(|w| w[0] <= w[1]), "queue out of order");
        let h = &self.history;
        assert!(h.len <= HISTORY_LEN);
        assert!(h.sorted[..h.len].windows(2).all(|w| w[0] <= w[1]));
        if self.counters.frames_in % 61 != 0 {
            return; // the full comparison below is slow in long debug runs
        }
        let mut ring: Vec<i64> = if h.len < HISTORY_LEN {
            h.ring[..h.len].to_vec()
        } else {
            h.ring.to_vec()
        };
        ring.sort_unstable();
        assert_eq!(ring, h.sorted[..h.len], "sorted history out of step");
    }

    /// Capacities of every growable container, to prove steady state never allocates.
    #[cfg(test)]
    fn capacities(&self) -> [usize; 6] {
        [
            self.history.sorted.len(),
            self.slots.capacity(),
            self.data.capacity(),
            self.order.capacity(),
            self.free.capacity(),
            self.history.ring.len(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: u64 = 1_000;

    /// An owned copy of one `get` result.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Out {
        Voice(u32),
        Interp(u32),
        Silence,
        Control(ControlKind, u32),
        Dropped(u32),
    }

    #[derive(Debug, Clone, Copy)]
    enum Pkt {
        V(u32),
        C(u32, ControlKind),
    }

    fn payload_for(ts: u32) -> [u8; 8] {
        let b = ts.to_le_bytes();
        [b[0], b[1], b[2], b[3], !b[0], !b[1], !b[2], !b[3]]
    }

    fn jb() -> JitterBuffer {
        JitterBuffer::new(JitterConfig::default()).unwrap()
    }

    /// Calls `get` until the tick is filled; checks voice payloads on the way.
    fn tick(jb: &mut JitterBuffer, now: u64) -> Vec<Out> {
        let mut outs = Vec::new();
        for _ in 0..(CONTROL_SLOTS + MAX_VOICE_SLOTS + 4) {
            let r = jb.get(now);
            let end = r.ends_tick();
            outs.push(match r {
                GetResult::Voice { ts, payload } => {
                    assert_eq!(payload, &payload_for(ts)[..], "payload of {ts}");
                    Out::Voice(ts)
                }
                GetResult::Interpolate { nth } => Out::Interp(nth),
                GetResult::Silence => Out::Silence,
                GetResult::Control { ts, kind, .. } => Out::Control(kind, ts),
                GetResult::Dropped { ts } => Out::Dropped(ts),
            });
            if end {
                jb.check_invariants();
                return outs;
            }
        }
        panic!("get never filled the tick: {outs:?}");
    }

    fn put(jb: &mut JitterBuffer, pkt: Pkt, now: u64) -> PutResult {
        let r = match pkt {
            Pkt::V(ts) => jb.put_voice(ts, &payload_for(ts), now),
            Pkt::C(ts, kind) => jb.put_control(ts, kind, &[], now),
        };
        jb.check_invariants();
        r
    }

    /// Delivers `arrivals` (time, packet) and ticks every frame from `T0` to `until`
    /// (inclusive); packets due at a tick are put before that tick's `get`s.
    fn run(jb: &mut JitterBuffer, arrivals: &[(u64, Pkt)], until: u64) -> Vec<(u64, Vec<Out>)> {
        run_from(jb, arrivals, T0, until)
    }

    fn run_from(
        jb: &mut JitterBuffer,
        arrivals: &[(u64, Pkt)],
        from: u64,
        until: u64,
    ) -> Vec<(u64, Vec<Out>)> {
        let mut arrivals = arrivals.to_vec();
        arrivals.sort_by_key(|a| a.0);
        let mut next = 0;
        let mut log = Vec::new();
        let mut now = from;
        while now <= until {
            while let Some(&(at, pkt)) = arrivals.get(next) {
                if at > now {
                    break;
                }
                let _ = put(jb, pkt, at);
                next += 1;
            }
            log.push((now, tick(jb, now)));
            now += 20;
        }
        log
    }

    fn flat(log: &[(u64, Vec<Out>)]) -> Vec<Out> {
        log.iter().flat_map(|(_, o)| o.iter().cloned()).collect()
    }

    fn voices(log: &[(u64, Vec<Out>)]) -> Vec<u32> {
        flat(log)
            .into_iter()
            .filter_map(|o| match o {
                Out::Voice(ts) => Some(ts),
                _ => None,
            })
            .collect()
    }

    /// Frames `ts = base + 20 k` for k in `range`, each arriving at `T0 + 20 k`.
    fn stream(base: u32, range: std::ops::Range<u32>) -> Vec<(u64, Pkt)> {
        range
            .map(|k| (T0 + 20 * u64::from(k), Pkt::V(base.wrapping_add(20 * k))))
            .collect()
    }

    /// Deterministic generator for the jitter scenarios (splitmix64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            if n == 0 {
                0
            } else {
                self.next() % n
            }
        }
    }

    // ---------------------------------------------------------------- unwrap_mini

    #[test]
    fn unwrap_mini_inside_one_period_is_plain() {
        assert_eq!(unwrap_mini(0x0001_2000, 0x2010), 0x0001_2010);
        assert_eq!(unwrap_mini(0x0001_2000, 0x1FF0), 0x0001_1FF0);
        assert_eq!(unwrap_mini(0, 0), 0);
    }

    #[test]
    fn unwrap_mini_at_the_16_bit_edge() {
        // Low bits wrapped before a full frame raised `last`: pushed forward.
        assert_eq!(unwrap_mini(0x0000_FFF0, 0x0004), 0x0001_0004);
        assert_eq!(unwrap_mini(0x0000_FFEC, 0x0000), 0x0001_0000);
        // A straggler from before the wrap after `last` crossed it: pushed back.
        assert_eq!(unwrap_mini(0x0001_0005, 0xFFF0), 0x0000_FFF0);
        assert_eq!(unwrap_mini(0x0001_0000, 0xFFFF), 0x0000_FFFF);
        // Exactly 50 000 ms either side is kept as is; one more flips to the other period.
        assert_eq!(unwrap_mini(0x0000_0000, 50_000), 50_000);
        assert_eq!(
            unwrap_mini(0x0000_0000, 50_001),
            50_001u32.wrapping_sub(0x1_0000)
        );
        assert_eq!(unwrap_mini(0x0000_FFFF, 0xFFFF - 50_000), 0xFFFF - 50_000);
        assert_eq!(unwrap_mini(0x0000_FFFF, 0xFFFF - 50_001), 0x1_FFFF - 50_001);
    }

    #[test]
    fn unwrap_mini_at_the_32_bit_edge() {
        assert_eq!(unwrap_mini(0xFFFF_FFF0, 0x0005), 0x0000_0005);
        assert_eq!(unwrap_mini(0x0000_0005, 0xFFF0), 0xFFFF_FFF0);
        assert_eq!(unwrap_mini(u32::MAX, 0xFFFF), u32::MAX);
        assert_eq!(unwrap_mini(u32::MAX, 0x0000), 0);
    }

    proptest! {
        #[test]
        fn unwrap_mini_is_exact_near_last(last in any::<u32>(), delta in -15_535i32..=15_535) {
            let truth = last.wrapping_add(delta as u32);
            prop_assert_eq!(unwrap_mini(last, (truth & 0xFFFF) as u16), truth);
        }

        #[test]
        fn unwrap_mini_stays_within_the_window(last in any::<u32>(), ts16 in any::<u16>()) {
            let r = unwrap_mini(last, ts16);
            prop_assert_eq!(r & 0xFFFF, u32::from(ts16));
            let d = r.wrapping_sub(last) as i32;
            prop_assert!((-MINI_TS_WINDOW_MS..=MINI_TS_WINDOW_MS).contains(&d));
        }
    }

    // ---------------------------------------------------------------- delay history

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn history_matches_a_naive_window(
            delays in prop::collection::vec(prop_oneof![-300i64..300, Just(0i64), any::<i64>()], 0..1100),
        ) {
            let mut h = DelayHistory::new();
            for (n, &d) in delays.iter().enumerate() {
                h.push(d);
                let mut window: Vec<i64> = delays[(n + 1).saturating_sub(HISTORY_LEN)..=n].to_vec();
                window.sort_unstable();
                prop_assert_eq!(&h.sorted[..h.len], &window[..]);
                let idx = window.len() * HISTORY_DROP_PCT / 100;
                let lo = window[idx];
                let hi = window[window.len() - 1 - idx];
                prop_assert_eq!(h.estimate(), (lo, hi.saturating_sub(lo).max(0)));
            }
        }
    }

    #[test]
    fn history_percentiles_ignore_three_percent_outliers() {
        let mut h = DelayHistory::new();
        assert_eq!(h.estimate(), (0, 0));
        for k in 0..500 {
            // 15 very late and 15 very early frames among steady 30 ms delays.
            h.push(match k % 100 {
                50..=52 => 900,
                53..=55 => -900,
                _ => 30,
            });
        }
        assert_eq!(h.estimate(), (30, 0));
        h.push(900); // a 16th late one replaces a steady delay and now counts
        assert_eq!(h.estimate(), (30, 870));
        h.clear();
        assert_eq!(h.estimate(), (0, 0));
    }

    // ---------------------------------------------------------------- conceal

    #[test]
    fn conceal_repeats_then_fades_to_silence() {
        let last: Vec<i16> = (0..160)
            .map(|i| if i % 2 == 0 { 10_000 } else { -10_000 })
            .collect();
        let mut frames = Vec::new();
        for nth in 0..5 {
            let mut out = vec![7i16; 160];
            conceal(&last, &mut out, nth);
            frames.push(out);
        }
        assert_eq!(frames[0][0], 10_000, "the first sample is the last frame's");
        assert_eq!(frames[0][1], -9_979);
        let env: Vec<i32> = frames
            .iter()
            .flatten()
            .map(|&s| i32::from(s).abs())
            .collect();
        assert!(
            env.windows(2).all(|w| w[1] <= w[0]),
            "the envelope only falls"
        );
        assert!(
            frames[2].iter().any(|&s| s != 0),
            "still audible in the 3rd frame"
        );
        assert!(frames[3].iter().all(|&s| s == 0) && frames[4].iter().all(|&s| s == 0));
        // Same sign pattern as the repeated frame while audible.
        assert!(frames[1]
            .iter()
            .zip(&last)
            .all(|(&o, &l)| o == 0 || o.signum() == l.signum()));
    }

    #[test]
    fn conceal_handles_mismatched_and_empty_frames() {
        let mut out = [1i16; 8];
        conceal(&[], &mut out, 0);
        assert_eq!(out, [0; 8]);
        let mut out = [0i16; 6];
        conceal(&[100, -100], &mut out, 0);
        assert_eq!(out[..4], [100, -94, 88, -83]);
        let mut none: [i16; 0] = [];
        conceal(&[1, 2, 3], &mut none, 0);
        let mut out = [5i16; 3];
        conceal(&[i16::MIN, i16::MAX], &mut out, 0);
        assert_eq!(out[0], i16::MIN);
    }

    // ---------------------------------------------------------------- config

    #[test]
    fn config_defaults_and_validation() {
        let d = JitterConfig::default();
        assert_eq!(
            (
                d.frame_ms,
                d.max_jitterbuf_ms,
                d.resync_threshold_ms,
                d.max_contig_interp,
                d.target_extra_ms
            ),
            (20, 1000, 1000, 10, 40)
        );
        assert!(d.validate().is_ok());
        let bad = JitterConfig { frame_ms: 0, ..d };
        let err = JitterBuffer::new(bad).unwrap_err();
        assert_eq!(
            err,
            JitterError::InvalidConfig {
                field: "frame_ms",
                allowed: "1..=1000"
            }
        );
        assert_eq!(
            err.to_string(),
            "invalid jitter buffer config: frame_ms must be 1..=1000"
        );
        assert!(JitterBuffer::new(JitterConfig {
            max_jitterbuf_ms: 10,
            ..d
        })
        .is_err());
        assert!(JitterBuffer::new(JitterConfig {
            max_payload: 0,
            ..d
        })
        .is_err());
        assert!(JitterBuffer::new(JitterConfig {
            max_payload: 9000,
            ..d
        })
        .is_err());
        assert!(JitterBuffer::new(JitterConfig {
            frame_ms: 1,
            max_jitterbuf_ms: 60_000,
            ..d
        })
        .is_err());
        let big = JitterBuffer::new(JitterConfig {
            frame_ms: 10,
            max_jitterbuf_ms: 4000,
            ..d
        })
        .unwrap();
        assert_eq!(big.config().max_jitterbuf_ms, 4000);
    }

    // ---------------------------------------------------------------- playout

    #[test]
    fn clean_stream_plays_out_exactly() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..100);
        arrivals.push((T0 + 20 * 99, Pkt::C(20 * 99 + 3, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 110);
        for (i, (_, outs)) in log.iter().enumerate() {
            let want = match i {
                0 | 1 => vec![Out::Silence],
                2..=101 => vec![Out::Voice(20 * (i as u32 - 2))],
                102 => vec![Out::Control(ControlKind::Unkey, 1983), Out::Silence],
                _ => vec![Out::Silence],
            };
            assert_eq!(outs, &want, "tick {i}");
        }
        let s = jb.stats();
        assert_eq!(
            (s.frames_in, s.frames_out, s.lost, s.late, s.dropped),
            (100, 100, 0, 0, 0)
        );
        assert_eq!(
            (s.interpolated, s.reordered, s.duplicate, s.resyncs),
            (0, 0, 0, 0)
        );
        assert_eq!(
            (s.current_ms, s.target_ms, s.jitter_ms, s.min_ms, s.delay_ms),
            (40, 40, 0, 0, 40)
        );
        assert_eq!(
            (s.control_in, s.control_out, s.queued, s.talking),
            (1, 1, 0, false)
        );
    }

    #[test]
    fn single_loss_is_concealed_once_and_a_late_arrival_moves_it_to_late() {
        let mut jb = jb();
        let mut arrivals: Vec<_> = stream(0, 0..60)
            .into_iter()
            .filter(|a| !matches!(a.1, Pkt::V(400)))
            .collect();
        let log = run(&mut jb, &arrivals, T0 + 20 * 40);
        let f = flat(&log);
        let at = f.iter().position(|o| *o == Out::Voice(380)).unwrap();
        assert_eq!(f[at + 1..at + 3], [Out::Interp(0), Out::Voice(420)]);
        let s = jb.stats();
        assert_eq!((s.lost, s.interpolated, s.late), (1, 1, 0));

        // Frame 400 turns up after its slot: late, and no longer counted as lost.
        assert_eq!(put(&mut jb, Pkt::V(400), T0 + 20 * 41), PutResult::Late);
        let s = jb.stats();
        assert_eq!((s.lost, s.late), (0, 1));
        arrivals.clear();
    }

    #[test]
    fn burst_loss_interpolates_then_goes_silent_and_resumes_at_the_same_delay() {
        let mut jb = jb();
        let arrivals: Vec<_> = stream(0, 0..80)
            .into_iter()
            .filter(|a| !matches!(a.1, Pkt::V(ts) if (400..700).contains(&ts)))
            .collect();
        let log = run(&mut jb, &arrivals, T0 + 20 * 60);
        // Frame k plays at tick k + 2 while the delay is 40 ms.
        for (i, (_, outs)) in log.iter().enumerate() {
            let want = match i {
                0 | 1 => Out::Silence,
                2..=21 | 37.. => Out::Voice(20 * (i as u32 - 2)),
                22..=31 => Out::Interp(i as u32 - 22),
                _ => Out::Silence,
            };
            assert_eq!(outs, &vec![want], "tick {i}");
        }
        let s = jb.stats();
        assert_eq!((s.lost, s.interpolated, s.current_ms), (10, 10, 40));
    }

    #[test]
    fn off_grid_timestamps_and_a_wobbly_tick_still_play_every_frame() {
        // Sender timestamps 7 ms off the 20 ms grid with ±3 ms of rounding wobble, and an
        // engine timer that fires up to 8 ms late.
        let mut rng = Rng(3);
        let mut jb = jb();
        let mut played = Vec::new();
        let mut sent = Vec::new();
        for k in 0..500u64 {
            let tick_at = T0 + 20 * k + rng.below(9);
            let ts = 20 * k as u32 + 7 + rng.below(7) as u32 - 3;
            sent.push(ts);
            assert_eq!(put(&mut jb, Pkt::V(ts), T0 + 20 * k), PutResult::Queued);
            for o in tick(&mut jb, tick_at) {
                if let Out::Voice(ts) = o {
                    played.push(ts);
                }
            }
        }
        assert_eq!(played[..], sent[..played.len()]);
        assert!(played.len() >= 497);
        let s = jb.stats();
        assert_eq!((s.lost, s.late, s.dropped), (0, 0, 0));
    }

    #[test]
    fn max_contig_interp_zero_conceals_forever() {
        let cfg = JitterConfig {
            max_contig_interp: 0,
            ..JitterConfig::default()
        };
        let mut jb = JitterBuffer::new(cfg).unwrap();
        let log = run(&mut jb, &stream(0, 0..10), T0 + 20 * 40);
        let f = flat(&log);
        assert_eq!(f.last(), Some(&Out::Interp(28)));
        assert!(jb.stats().talking);
    }

    #[test]
    fn reordered_frames_come_out_in_order() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..100);
        // Frame 1000 (k = 50) arrives after frame 1020, still before its slot.
        arrivals.iter_mut().for_each(|a| {
            if matches!(a.1, Pkt::V(1000)) {
                a.0 += 25;
            }
        });
        arrivals.push((T0 + 20 * 99, Pkt::C(1983, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 101);
        assert_eq!(voices(&log), (0..100).map(|k| 20 * k).collect::<Vec<_>>());
        assert!(flat(&log)
            .iter()
            .all(|o| matches!(o, Out::Voice(_) | Out::Silence)));
        let s = jb.stats();
        assert_eq!((s.reordered, s.lost, s.late, s.interpolated), (1, 0, 0, 0));
    }

    #[test]
    fn early_reorder_grows_the_delay_instead_of_losing() {
        let mut jb = jb();
        // Frame 200 arrives right after frame 220, in the same millisecond.
        let mut arrivals: Vec<_> = stream(0, 0..40)
            .into_iter()
            .filter(|a| !matches!(a.1, Pkt::V(200)))
            .collect();
        arrivals.push((T0 + 220, Pkt::V(200)));
        arrivals.push((T0 + 20 * 39, Pkt::C(783, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 45);
        assert_eq!(voices(&log), (0..40).map(|k| 20 * k).collect::<Vec<_>>());
        // While the history is short one outlier counts: the delay grows by one frame,
        // concealed in the tick where the late frame 200 showed up.
        let f = flat(&log);
        let at = f.iter().position(|o| *o == Out::Voice(160)).unwrap();
        assert_eq!(f[at + 1..at + 3], [Out::Interp(0), Out::Voice(180)]);
        let s = jb.stats();
        assert_eq!((s.reordered, s.lost, s.late, s.interpolated), (1, 0, 0, 1));
        // With 40 delays in the history the single outlier is discarded again; the extra
        // frame of delay stays (shrinking needs a 40 ms excess).
        assert_eq!((s.jitter_ms, s.target_ms, s.current_ms), (0, 40, 60));
    }

    #[test]
    fn duplicates_are_counted_and_played_once() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..100);
        arrivals.push((T0 + 20 * 51, Pkt::V(1000))); // while still queued
        arrivals.push((T0 + 20 * 60, Pkt::V(1000))); // after it was played
        arrivals.push((T0 + 20 * 61, Pkt::V(1200))); // played as well
        let log = run(&mut jb, &arrivals, T0 + 20 * 101);
        assert_eq!(voices(&log), (0..100).map(|k| 20 * k).collect::<Vec<_>>());
        let s = jb.stats();
        assert_eq!(
            (s.duplicate, s.frames_in, s.frames_out, s.late, s.lost),
            (3, 103, 100, 0, 0)
        );
        assert_eq!(s.reordered, 0, "duplicates are not reorders");
    }

    // ---------------------------------------------------------------- control ordering

    #[test]
    fn unkey_arriving_before_the_last_audio_comes_out_after_it() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..50);
        arrivals.iter_mut().for_each(|a| {
            if matches!(a.1, Pkt::V(980)) {
                a.0 += 10;
            }
        });
        arrivals.push((T0 + 20 * 49 + 2, Pkt::C(983, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 60);
        let f = flat(&log);
        let at = f.iter().position(|o| *o == Out::Voice(980)).unwrap();
        assert_eq!(
            f[at + 1..at + 3],
            [Out::Control(ControlKind::Unkey, 983), Out::Silence]
        );
        assert!(f[at + 3..].iter().all(|o| *o == Out::Silence));
        assert_eq!(jb.stats().lost, 0);
    }

    #[test]
    fn unkey_arriving_ahead_of_several_frames_waits_for_them() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..50);
        // The UNKEY overtakes the last three frames.
        arrivals.push((T0 + 20 * 46 + 1, Pkt::C(983, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 60);
        let f = flat(&log);
        let unkey = f
            .iter()
            .position(|o| matches!(o, Out::Control(..)))
            .unwrap();
        assert_eq!(f[unkey - 1], Out::Voice(980));
        assert_eq!(voices(&log).len(), 50);
    }

    #[test]
    fn unkey_stamped_ahead_of_the_audio_ends_the_spurt_without_concealment() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..50);
        // Control frames carry the sender's real clock, here 150 ms ahead of its voice clock.
        arrivals.push((T0 + 20 * 49 + 1, Pkt::C(980 + 150, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 60);
        let f = flat(&log);
        let at = f.iter().position(|o| *o == Out::Voice(980)).unwrap();
        assert_eq!(
            f[at + 1..at + 3],
            [Out::Control(ControlKind::Unkey, 1130), Out::Silence]
        );
        assert_eq!((jb.stats().lost, jb.stats().interpolated), (0, 0));
        // Audio from before the UNKEY that still turns up is late, not a new spurt.
        assert_eq!(put(&mut jb, Pkt::V(1100), T0 + 20 * 61), PutResult::Late);
    }

    #[test]
    fn non_final_control_stamped_ahead_waits_for_its_time() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..50);
        arrivals.push((T0 + 20 * 49 + 1, Pkt::C(980 + 70, ControlKind::Dtmf(b'1'))));
        let log = run(&mut jb, &arrivals, T0 + 20 * 60);
        let f = flat(&log);
        let at = f.iter().position(|o| *o == Out::Voice(980)).unwrap();
        assert_eq!(
            f[at + 1..at + 5],
            [
                Out::Interp(0),
                Out::Interp(1),
                Out::Control(ControlKind::Dtmf(b'1'), 1050),
                Out::Interp(2)
            ]
        );
    }

    #[test]
    fn late_unkey_is_delivered_at_the_next_get() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..50);
        // A retransmitted UNKEY, 600 ms after the last audio.
        arrivals.push((T0 + 20 * 79, Pkt::C(983, ControlKind::Unkey)));
        let log = run(&mut jb, &arrivals, T0 + 20 * 90);
        assert_eq!(voices(&log).len(), 50);
        let (when, outs) = log
            .iter()
            .find(|(_, o)| o.iter().any(|x| matches!(x, Out::Control(..))))
            .unwrap();
        assert_eq!(*when, T0 + 20 * 79);
        assert_eq!(
            outs,
            &vec![Out::Control(ControlKind::Unkey, 983), Out::Silence]
        );
        let s = jb.stats();
        assert_eq!(
            (s.control_out, s.lost),
            (1, 10),
            "the end of the spurt was concealed"
        );
    }

    #[test]
    fn late_control_in_mid_stream_comes_before_the_current_audio() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..100);
        arrivals.push((T0 + 20 * 40 + 1, Pkt::C(503, ControlKind::Dtmf(b'5'))));
        let log = run(&mut jb, &arrivals, T0 + 20 * 102);
        let f = flat(&log);
        let at = f
            .iter()
            .position(|o| matches!(o, Out::Control(..)))
            .unwrap();
        assert_eq!(f[at], Out::Control(ControlKind::Dtmf(b'5'), 503));
        // The tick after arrival: the audio of slot 800 (k = 40 - 2 + 1 ... ) follows it.
        assert_eq!(f[at + 1], Out::Voice(780));
        assert_eq!(voices(&log).len(), 100);
    }

    #[test]
    fn key_at_spurt_start_precedes_its_audio_and_text_keeps_its_payload() {
        let mut jb = jb();
        assert_eq!(
            jb.put_control(0, ControlKind::Key, &[], T0),
            PutResult::Queued
        );
        assert_eq!(put(&mut jb, Pkt::V(0), T0), PutResult::Queued);
        assert_eq!(
            jb.put_control(5, ControlKind::Text, b"hello", T0 + 5),
            PutResult::Queued
        );
        assert_eq!(tick(&mut jb, T0), vec![Out::Silence]);
        assert_eq!(put(&mut jb, Pkt::V(20), T0 + 20), PutResult::Queued);
        assert_eq!(tick(&mut jb, T0 + 20), vec![Out::Silence]);
        assert_eq!(put(&mut jb, Pkt::V(40), T0 + 40), PutResult::Queued);
        assert_eq!(
            tick(&mut jb, T0 + 40),
            vec![Out::Control(ControlKind::Key, 0), Out::Voice(0)]
        );
        match jb.get(T0 + 60) {
            GetResult::Control { ts, kind, payload } => {
                assert_eq!((ts, kind, payload), (5, ControlKind::Text, &b"hello"[..]));
            }
            other => panic!("expected the text, got {other:?}"),
        }
        assert_eq!(tick(&mut jb, T0 + 60), vec![Out::Voice(20)]);
    }

    #[test]
    fn the_first_voice_frame_is_never_a_discontinuity() {
        let mut jb = jb();
        // A text frame starts the timeline; the voice that follows uses a base 3 s away.
        assert_eq!(
            jb.put_control(10, ControlKind::Text, b"!NEWKEY1!", T0),
            PutResult::Queued
        );
        assert_eq!(put(&mut jb, Pkt::V(3000), T0 + 10), PutResult::Queued);
        let log = run_from(&mut jb, &stream(3000, 1..10), T0 + 20, T0 + 20 * 12);
        let f = flat(&log);
        assert_eq!(f[0], Out::Control(ControlKind::Text, 10));
        assert_eq!(
            voices(&log),
            (0..10).map(|k| 3000 + 20 * k).collect::<Vec<_>>()
        );
        assert_eq!(jb.stats().dropped, 0);
    }

    #[test]
    fn control_far_in_the_future_is_placed_after_queued_audio() {
        let mut jb = jb();
        let log = run(&mut jb, &stream(0, 0..10), T0 + 20 * 9);
        assert_eq!(voices(&log).last(), Some(&140));
        // A clock jump on a control frame must not block or resync anything.
        assert_eq!(
            jb.put_control(500_000, ControlKind::Key, &[], T0 + 20 * 9 + 1),
            PutResult::Queued
        );
        let f: Vec<Out> = (10..13).flat_map(|k| tick(&mut jb, T0 + 20 * k)).collect();
        assert_eq!(
            f,
            vec![
                Out::Voice(160),
                Out::Voice(180),
                Out::Control(ControlKind::Key, 500_000),
                Out::Interp(0)
            ]
        );
        assert_eq!(jb.stats().resyncs, 0);
    }

    #[test]
    fn control_queue_is_bounded_but_never_drops_for_lateness() {
        let mut jb = jb();
        for i in 0..CONTROL_SLOTS as u32 {
            assert_eq!(
                jb.put_control(i, ControlKind::Dtmf(b'1'), &[], T0),
                PutResult::Queued
            );
        }
        assert_eq!(
            jb.put_control(99, ControlKind::Text, &[], T0),
            PutResult::Dropped(DropReason::Full)
        );
        assert_eq!(
            jb.put_control(99, ControlKind::Text, &[0; 641], T0),
            PutResult::Dropped(DropReason::Oversize)
        );
        assert_eq!(jb.stats().control_dropped, 2);
        let f = tick(&mut jb, T0 + 100);
        assert_eq!(f.len(), CONTROL_SLOTS + 1);
    }

    // ---------------------------------------------------------------- timestamps

    #[test]
    fn mini_frame_timestamps_across_the_16_bit_wrap() {
        let mut jb = jb();
        let base: u32 = 65_536 - 1_000;
        let mut last = base; // the full voice frame that started the call
        let mut arrivals = Vec::new();
        for k in 0..150u32 {
            let truth = base + 20 * k;
            let ts = unwrap_mini(last, (truth & 0xFFFF) as u16);
            assert_eq!(ts, truth);
            last = ts;
            arrivals.push((T0 + 20 * u64::from(k), Pkt::V(ts)));
        }
        let log = run(&mut jb, &arrivals, T0 + 20 * 151);
        assert_eq!(
            voices(&log),
            (0..150).map(|k| base + 20 * k).collect::<Vec<_>>()
        );
        assert_eq!(jb.stats().lost, 0);
    }

    #[test]
    fn timestamps_across_the_32_bit_wrap() {
        let mut jb = jb();
        let base = u32::MAX - 999;
        let log = run(&mut jb, &stream(base, 0..150), T0 + 20 * 151);
        let want: Vec<u32> = (0..150).map(|k| base.wrapping_add(20 * k)).collect();
        assert!(want.iter().any(|&t| t < 1000), "the stream wraps");
        assert_eq!(voices(&log), want);
        let s = jb.stats();
        assert_eq!((s.lost, s.late, s.resyncs, s.reordered), (0, 0, 0, 0));
    }

    fn clock_jump(new_base: u32) {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..200);
        arrivals.extend((200..400u32).map(|k| {
            (
                T0 + 20 * u64::from(k),
                Pkt::V(new_base.wrapping_add(20 * (k - 200))),
            )
        }));
        let mut results = Vec::new();
        let mut log = Vec::new();
        let mut now = T0;
        for (at, pkt) in &arrivals {
            results.push(put(&mut jb, *pkt, *at));
            log.push((now, tick(&mut jb, now)));
            now += 20;
        }
        assert!(results[..200].iter().all(|r| *r == PutResult::Queued));
        assert_eq!(
            results[200..203],
            [PutResult::Dropped(DropReason::Discontinuity); 3]
        );
        assert_eq!(results[203], PutResult::Resynced);
        assert!(results[204..].iter().all(|r| *r == PutResult::Queued));
        let f = flat(&log);
        let at = f.iter().position(|o| *o == Out::Voice(3980)).unwrap();
        assert_eq!(
            f[at + 1..at + 5],
            [
                Out::Interp(0),
                Out::Interp(1),
                Out::Interp(2),
                Out::Voice(new_base.wrapping_add(60))
            ]
        );
        let played = voices(&log);
        assert_eq!(
            played.len(),
            200 + 197 - 2,
            "all but the 3 dropped (and the last 2 still queued)"
        );
        let s = jb.stats();
        assert_eq!((s.resyncs, s.dropped, s.lost, s.late), (1, 3, 3, 0));
        assert_eq!(s.current_ms, 40);
    }

    #[test]
    fn peer_clock_jumping_forward_resyncs_after_four_discontinuities() {
        clock_jump(100_000);
    }

    #[test]
    fn peer_clock_restarting_resyncs_after_four_discontinuities() {
        clock_jump(0);
        clock_jump(u32::MAX - 30);
    }

    #[test]
    fn a_single_discontinuity_is_dropped_without_resync() {
        let mut jb = jb();
        let log = run(&mut jb, &stream(0, 0..20), T0 + 20 * 19);
        assert_eq!(voices(&log).len(), 18);
        assert_eq!(
            put(&mut jb, Pkt::V(900_000), T0 + 20 * 20),
            PutResult::Dropped(DropReason::Discontinuity)
        );
        assert_eq!(put(&mut jb, Pkt::V(400), T0 + 20 * 20), PutResult::Queued);
        assert_eq!(
            put(&mut jb, Pkt::V(900_020), T0 + 20 * 21),
            PutResult::Dropped(DropReason::Discontinuity)
        );
        assert_eq!(jb.stats().resyncs, 0);
    }

    #[test]
    fn resync_can_be_disabled() {
        let cfg = JitterConfig {
            resync_threshold_ms: 0,
            ..JitterConfig::default()
        };
        let mut jb = JitterBuffer::new(cfg).unwrap();
        let _ = run(&mut jb, &stream(0, 0..20), T0 + 20 * 19);
        for k in 20..30u32 {
            let r = put(&mut jb, Pkt::V(900_000 + 20 * k), T0 + 20 * u64::from(k));
            assert_eq!(r, PutResult::Dropped(DropReason::TooFar), "frame {k}");
        }
        assert_eq!(jb.stats().resyncs, 0);
    }

    // ---------------------------------------------------------------- limits

    #[test]
    fn oversize_and_too_far_frames_are_dropped() {
        let mut jb = jb();
        assert_eq!(
            jb.put_voice(0, &[0; 641], T0),
            PutResult::Dropped(DropReason::Oversize)
        );
        assert_eq!(put(&mut jb, Pkt::V(0), T0), PutResult::Queued);
        // 1 s ahead of the queued audio on the same timeline, but within the resync window.
        assert_eq!(
            put(&mut jb, Pkt::V(1000), T0 + 300),
            PutResult::Dropped(DropReason::TooFar)
        );
        assert_eq!(put(&mut jb, Pkt::V(980), T0 + 300), PutResult::Queued);
        assert_eq!(jb.stats().dropped, 2);
    }

    #[test]
    fn frames_played_past_are_late_in_silence_too() {
        let mut jb = jb();
        let mut arrivals = stream(0, 0..20);
        arrivals.push((T0 + 20 * 21, Pkt::C(383, ControlKind::Unkey)));
        let _ = run(&mut jb, &arrivals, T0 + 20 * 30);
        assert!(!jb.stats().talking);
        assert_eq!(
            put(&mut jb, Pkt::V(360), T0 + 20 * 31),
            PutResult::Duplicate
        );
        assert_eq!(put(&mut jb, Pkt::V(370), T0 + 20 * 31), PutResult::Late);
        assert_eq!(put(&mut jb, Pkt::V(2000), T0 + 2000), PutResult::Queued);
    }

    #[test]
    fn rr_values_follow_the_counters() {
        let mut jb = jb();
        assert_eq!(
            jb.rr_values(),
            RrValues {
                delay: 40,
                ..RrValues::default()
            }
        );
        // 100 frames, 4 of them never sent, 1 sent twice, 1 reordered.
        let mut arrivals: Vec<_> = stream(0, 0..100)
            .into_iter()
            .filter(|a| !matches!(a.1, Pkt::V(ts) if [400, 800, 1200, 1600].contains(&ts)))
            .collect();
        arrivals.push((T0 + 20 * 70, Pkt::V(1380)));
        arrivals.iter_mut().for_each(|a| {
            if matches!(a.1, Pkt::V(1800)) {
                a.0 += 25;
            }
        });
        arrivals.push((T0 + 20 * 99, Pkt::C(1983, ControlKind::Unkey)));
        let _ = run(&mut jb, &arrivals, T0 + 20 * 110);
        let s = jb.stats();
        assert_eq!(
            (s.lost, s.frames_out, s.duplicate, s.reordered),
            (4, 96, 1, 1)
        );
        let rr = jb.rr_values();
        assert_eq!(rr.loss_percent(), 4);
        assert_eq!(rr.lost_frames(), 4);
        assert_eq!(rr.loss, (4 << 24) | 4);
        assert_eq!((rr.pkts, rr.dropped, rr.ooo), (97, 0, 1));
        assert_eq!(u32::from(rr.delay), u32::try_from(s.delay_ms).unwrap());
        assert_eq!(i64::from(rr.jitter), s.jitter_ms);
        // A new interval without loss reports 0 % but keeps the running total.
        let mut more = stream(0, 120..140);
        more.push((T0 + 20 * 139, Pkt::C(20 * 139 + 3, ControlKind::Unkey)));
        let _ = run_from(&mut jb, &more, T0 + 20 * 111, T0 + 20 * 150);
        assert_eq!(jb.stats().frames_out, 116);
        let rr = jb.rr_values();
        assert_eq!((rr.loss_percent(), rr.lost_frames()), (0, 4));
    }

    #[test]
    fn reset_forgets_everything() {
        let mut jb = jb();
        let _ = run(&mut jb, &stream(0, 0..30), T0 + 20 * 20);
        let caps = jb.capacities();
        jb.reset();
        assert_eq!(
            jb.stats(),
            JitterStats {
                current_ms: 40,
                target_ms: 40,
                delay_ms: 40,
                ..JitterStats::default()
            }
        );
        jb.check_invariants();
        assert_eq!(jb.capacities(), caps);
        let log = run(&mut jb, &stream(777, 0..10), T0 + 20 * 11);
        assert_eq!(voices(&log).first(), Some(&777));
    }

    // ---------------------------------------------------------------- jitter

    /// Frames `k in 0..n` sent every 20 ms, each delayed by `delay(k)` ms.
    fn jittered(n: u32, mut delay: impl FnMut(u32) -> u64) -> Vec<(u64, Pkt)> {
        (0..n)
            .map(|k| (T0 + 20 * u64::from(k) + delay(k), Pkt::V(20 * k)))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// With uniform jitter below the target margin, once the history has warmed up no
        /// frame is lost, late or dropped.
        #[test]
        fn no_loss_once_the_delay_covers_the_jitter(seed in any::<u64>(), j in 0u64..=300) {
            let mut rng = Rng(seed);
            let n = 1500;
            let arrivals = jittered(n, |_| rng.below(j + 1));
            let mut jb = jb();
            let log = run(&mut jb, &arrivals, T0 + 20 * u64::from(n) + 2000);
            let played = voices(&log);
            prop_assert!(played.windows(2).all(|w| w[0] < w[1]), "played in order");
            let warm = 150;
            let after: Vec<u32> = played.into_iter().filter(|&t| t >= 20 * warm).collect();
            prop_assert_eq!(after, (warm..n).map(|k| 20 * k).collect::<Vec<_>>());
            let s = jb.stats();
            prop_assert!(s.jitter_ms <= j as i64);
        }
    }

    #[test]
    fn delay_adapts_up_under_jitter_and_back_down_when_it_calms() {
        let mut rng = Rng(7);
        let calm = |rng: &mut Rng| rng.below(11);
        let rough = |rng: &mut Rng| rng.below(201);
        let n = 3000; // 60 s: 10 s calm, 20 s rough, 30 s calm
        let arrivals = jittered(n, |k| {
            if (500..1500).contains(&k) {
                rough(&mut rng)
            } else {
                calm(&mut rng)
            }
        });
        let mut jb = jb();
        let mut now = T0;
        let mut next = 0;
        let mut at_10s = None;
        let mut at_30s = None;
        let mut late_at_25s = 0;
        while now <= T0 + 20 * u64::from(n) {
            while let Some(&(at, pkt)) = arrivals.get(next) {
                if at > now {
                    break;
                }
                let _ = put(&mut jb, pkt, at);
                next += 1;
            }
            let _ = tick(&mut jb, now);
            if now == T0 + 10_000 {
                at_10s = Some(jb.stats());
            }
            if now == T0 + 25_000 {
                late_at_25s = jb.stats().late + jb.stats().lost;
            }
            if now == T0 + 30_000 {
                at_30s = Some(jb.stats());
            }
            now += 20;
        }
        let (calm1, rough_s, calm2) = (at_10s.unwrap(), at_30s.unwrap(), jb.stats());
        assert!(calm1.jitter_ms <= 10 && calm1.delay_ms <= 70, "{calm1:?}");
        assert!(rough_s.jitter_ms >= 150, "{rough_s:?}");
        assert!(
            rough_s.delay_ms >= 190 && rough_s.target_ms >= calm1.target_ms + 150,
            "{rough_s:?}"
        );
        assert_eq!(
            rough_s.late + rough_s.lost,
            late_at_25s,
            "no loss once adapted"
        );
        assert!(calm2.jitter_ms <= 10, "{calm2:?}");
        assert!(
            calm2.delay_ms <= calm2.jitter_ms + 40 + 40 + 20,
            "shrunk back: {calm2:?}"
        );
        assert!(calm2.dropped > 0, "shrinking drops frames");
    }

    #[test]
    fn long_run_never_grows_storage() {
        let mut rng = Rng(42);
        let mut jb = jb();
        let caps = jb.capacities();
        let mut arrivals = Vec::new();
        let n: u32 = 100_000;
        for k in 0..n {
            let r = rng.below(1000);
            if r < 10 {
                continue; // 1 % loss
            }
            let at = T0 + 20 * u64::from(k) + rng.below(120);
            arrivals.push((at, Pkt::V(20 * k)));
            if r < 20 {
                arrivals.push((at + rng.below(200), Pkt::V(20 * k))); // 1 % duplicates
            }
            if k % 500 == 499 {
                arrivals.push((at + 1, Pkt::C(20 * k + 3, ControlKind::Unkey)));
            }
        }
        arrivals.sort_by_key(|a| a.0);
        let mut next = 0;
        let mut now = T0;
        let end = T0 + 20 * u64::from(n) + 1000;
        let mut played = 0u64;
        while now <= end {
            while let Some(&(at, pkt)) = arrivals.get(next) {
                if at > now {
                    break;
                }
                let _ = put(&mut jb, pkt, at);
                next += 1;
            }
            played += tick(&mut jb, now)
                .iter()
                .filter(|o| matches!(o, Out::Voice(_)))
                .count() as u64;
            now += 20;
        }
        assert_eq!(jb.capacities(), caps);
        let s = jb.stats();
        assert_eq!(s.frames_out, played);
        assert!(played > 95_000, "{s:?}");
        assert!(s.duplicate > 500 && s.reordered > 1000, "{s:?}");
    }

    // ---------------------------------------------------------------- robustness

    #[derive(Debug, Clone)]
    enum Op {
        Voice { ts: u32, len: usize },
        Control { ts: u32, kind: u8, len: usize },
        Get,
        Tick,
        Advance(u64),
        SetNow(u64),
        Rr,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (any::<u32>(), 0usize..700).prop_map(|(ts, len)| Op::Voice { ts, len }),
            4 => (0u32..4000, 0usize..700).prop_map(|(ts, len)| Op::Voice { ts: ts * 5, len }),
            2 => (any::<u32>(), 0u8..8, 0usize..700).prop_map(|(ts, kind, len)| Op::Control { ts, kind, len }),
            3 => Just(Op::Get),
            4 => Just(Op::Tick),
            3 => (0u64..3000).prop_map(Op::Advance),
            1 => any::<u64>().prop_map(Op::SetNow),
            1 => Just(Op::Rr),
        ]
    }

    fn config() -> impl Strategy<Value = JitterConfig> {
        (
            1u32..=60,
            1u32..=30,
            0u32..=2,
            0u32..=12,
            0u32..=100,
            0u32..=100,
        )
            .prop_map(
                |(frame_ms, frames, resync, max_contig_interp, target_extra_ms, intervals)| {
                    JitterConfig {
                        frame_ms,
                        max_jitterbuf_ms: frame_ms * frames,
                        resync_threshold_ms: resync * 500,
                        max_contig_interp,
                        target_extra_ms,
                        max_payload: 640,
                        grow_interval_ms: intervals,
                        shrink_interval_ms: intervals * 5,
                        shrink_empty_interval_ms: intervals / 2,
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_arbitrary_sequences(cfg in config(), ops in prop::collection::vec(op(), 0..300)) {
            let mut jb = JitterBuffer::new(cfg).unwrap();
            let caps = jb.capacities();
            let mut now = 0u64;
            let kinds = [
                ControlKind::Key, ControlKind::Unkey, ControlKind::Hangup, ControlKind::Cng,
                ControlKind::Dtmf(b'#'), ControlKind::Text,
                ControlKind::Other { frametype: 4, subclass: 20 }, ControlKind::Key,
            ];
            for op in ops {
                match op {
                    Op::Voice { ts, len } => { let _ = jb.put_voice(ts, &vec![1; len], now); }
                    Op::Control { ts, kind, len } => {
                        let _ = jb.put_control(ts, kinds[usize::from(kind)], &vec![2; len], now);
                    }
                    Op::Get => { let _ = jb.get(now); }
                    Op::Tick => {
                        let queued = jb.stats().queued;
                        let mut n = 0;
                        while !jb.get(now).ends_tick() {
                            n += 1;
                            prop_assert!(n <= queued, "a tick took more items than were queued");
                        }
                    }
                    Op::Advance(d) => now = now.saturating_add(d),
                    Op::SetNow(t) => now = t,
                    Op::Rr => {
                        let rr = jb.rr_values();
                        prop_assert!(rr.loss_percent() <= 100);
                    }
                }
                jb.check_invariants();
            }
            prop_assert_eq!(jb.capacities(), caps);
        }
    }
}
