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

mod config;
mod floor;
mod history;
mod item;
mod plc;
#[cfg(test)]
mod plc_tests;
mod queue;
mod replay;
mod stats;
#[cfg(test)]
mod tests;

pub use config::{JitterConfig, JitterError};
pub use floor::{EARLY_CEILING_DBFS, FLOOR_MARGIN_DB, QUIET_CEILING_DBFS};
pub use item::{ControlKind, DropReason, GetResult, PutResult};
pub use plc::{conceal_lost, Concealer, Concealment, CONCEAL_MAX_FRAMES};
pub use replay::{replay, Arrival, Played, Replayed};
pub use stats::{JitterStats, RrValues};

use floor::NoiseFloor;
use history::{DelayHistory, Recent, Timeline};
use queue::{Entry, Slot};

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
/// A missing frame inside speech grows the buffer (a 20 ms move of the timeline inside the
/// utterance) only when the target is this many `target_extra_ms` margins above the delay.
/// On the broad replay bench (benches/pesq_replay.py, 3 speakers x 40 seeds) 1 margin cost
/// harsh networks 0.006 PESQ on average and 0.1 on the worst run against 3: a move inside an
/// utterance costs PESQ more than the frame it saves.
pub const STRETCH_DEFICIT_MARGINS: i64 = 3;
/// Lost slots a concealed frame may look across to a queued frame ([`JitterBuffer::next_voice`]):
/// a gap of up to four frames is interpolated between both sides. On the concealment's own
/// bound (benches/plc_bounds.py) blending toward the next frame gained most for gaps of up to
/// three or four frames; a longer one is silent by its end anyway.
pub const LOOKAHEAD_SLOTS: usize = 3;
/// Frames over which [`conceal`] fades the repeated frame out to silence.
pub const CONCEAL_FADE_FRAMES: u32 = 3;
/// The level of a voice frame offered without one ([`JitterBuffer::put_voice`]): it counts as
/// quiet, so such a stream adapts wherever it must.
pub const LEVEL_UNKNOWN: i16 = i16::MIN;
/// Voice frames below this mean power (dBFS) are a pause: inside a talk spurt the delay grows
/// and shrinks only there, where inserting or dropping 20 ms is not heard. Where the talker's
/// background is louder, frames close to it are quiet too (see [`FLOOR_MARGIN_DB`]).
pub const QUIET_DBFS: i16 = -50;
/// Quiet frames in a row that make a pause long enough to change the delay in at leisure. A
/// shorter quiet stretch is a gap between words: listeners and PESQ alike hear the words on
/// either side as one utterance, so the delay changes there only when the margin is half gone.
pub const PAUSE_FRAMES: u16 = 3;

/// Mean power of linear PCM in whole dBFS (a full-scale sine is -3), clamped to -120..=0; the
/// level [`JitterBuffer::put_voice_level`] takes.
pub fn level_dbfs(pcm: &[i16]) -> i16 {
    if pcm.is_empty() {
        return -120;
    }
    let energy: i64 = pcm.iter().map(|&s| i64::from(s) * i64::from(s)).sum();
    let ms = energy as f64 / pcm.len() as f64 / (32768.0 * 32768.0);
    if ms <= 1e-12 {
        return -120;
    }
    // Clamped before the cast, so it cannot saturate.
    (10.0 * ms.log10()).round().clamp(-120.0, 0.0) as i16
}

/// Recently accepted voice timestamps remembered for duplicate detection (2.5 s at 20 ms).
const SEEN_LEN: usize = 128;
/// Recently concealed slots remembered so a late arrival can be moved from `lost` to `late`.
const LOST_LEN: usize = 64;
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
    stretched: u64,
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
    /// Level of the last voice frame played ([`LEVEL_UNKNOWN`] at the start of a spurt).
    last_level: i16,
    /// Quiet voice frames played in a row, up to the last one.
    quiet_run: u16,
    /// The talker's background, and with it the level below which a frame is quiet.
    floor: NoiseFloor,
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
            level: LEVEL_UNKNOWN,
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
            last_level: LEVEL_UNKNOWN,
            quiet_run: 0,
            floor: NoiseFloor::new(),
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
        self.last_level = LEVEL_UNKNOWN;
        self.quiet_run = 0;
        self.floor.clear();
        self.last_adjust = None;
        self.contig_interp = 0;
        self.highest_voice = None;
        self.seen.clear();
        self.lost_slots.clear();
        self.counters = Counters::default();
        self.rr_mark_lost = 0;
        self.rr_mark_out = 0;
    }

    /// Offers a voice frame with the peer's (unwrapped) timestamp `ts`, received at `now_ms`,
    /// without its level: the buffer may then grow or shrink at any frame.
    pub fn put_voice(&mut self, ts: u32, payload: &[u8], now_ms: u64) -> PutResult {
        self.put_voice_level(ts, payload, LEVEL_UNKNOWN, now_ms)
    }

    /// [`put_voice`](Self::put_voice) with the frame's level in dBFS ([`level_dbfs`] of its
    /// decoded audio). Inside a talk spurt the delay then changes only next to quiet frames
    /// (below [`QUIET_DBFS`], or close to the talker's louder background), or where a frame is
    /// missing and the whole `target_extra_ms` margin is gone, never by dropping or inserting a
    /// frame in the middle of speech.
    pub fn put_voice_level(
        &mut self,
        ts: u32,
        payload: &[u8],
        level_dbfs: i16,
        now_ms: u64,
    ) -> PutResult {
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
        self.floor.push(level_dbfs);

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
        if self.voice_queued >= self.voice_cap
            || !self.insert(ats, ts, Entry::Voice, payload, level_dbfs)
        {
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
        if self.insert(ats, ts, Entry::Control(kind), payload, LEVEL_UNKNOWN) {
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

    /// After an `Interpolate`: the next queued voice frame's payload and how many slots lie
    /// before it (0: it plays at the next tick), when it is at most [`LOOKAHEAD_SLOTS`] slots
    /// away. Concealment can blend toward it ([`Concealer::conceal_toward`]) at no added
    /// delay: it is already here.
    pub fn next_voice(&self) -> Option<(usize, &[u8])> {
        let p = self.play?;
        let (idx, head) = self.front()?;
        if head.entry != Entry::Voice {
            return None;
        }
        let ahead = head.ats.saturating_sub(p).saturating_add(self.half);
        if ahead < 0 {
            return None;
        }
        let gap = usize::try_from(ahead / self.frame.max(1)).ok()?;
        (gap <= LOOKAHEAD_SLOTS).then(|| (gap, self.payload(idx, head.len)))
    }

    /// Whether any of the next `n` queued voice frames is at or above `dbfs` (a VOX gate can
    /// open a little before a word whose first frames are weak).
    pub fn loud_ahead(&self, n: usize, dbfs: i16) -> bool {
        self.queued_levels()
            .take(n)
            .any(|l| l != LEVEL_UNKNOWN && l >= dbfs)
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
            stretched: c.stretched,
            current_ms: self.current,
            target_ms: self.target,
            jitter_ms: self.jitter,
            min_ms: self.min,
            delay_ms: self.current.saturating_sub(self.min),
            queued: self.order.len(),
            talking: self.talking,
            quiet_below_dbfs: self.floor.quiet_below(),
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
        // Inside speech the delay changes only in a pause (the last frame played was quiet).
        // A gap between words (fewer than PAUSE_FRAMES quiet frames) takes a growth step only
        // once half the margin is gone; a longer pause takes it as soon as the target is
        // above. Where this slot's frame is missing and the deficit is STRETCH_DEFICIT_MARGINS
        // margins deep, growing conceals the same 20 ms but keeps the slot, so a late frame
        // still plays (a talker who never pauses still gets a deeper buffer); with a smaller
        // deficit that 20 ms shift inside the utterance costs more than it saves.
        let in_pause = self.is_quiet(self.last_level);
        let long_pause =
            in_pause && (self.last_level == LEVEL_UNKNOWN || self.quiet_run >= PAUSE_FRAMES);
        let extra = i64::from(self.cfg.target_extra_ms);
        let head = self.front().filter(|(_, s)| s.entry == Entry::Voice);
        let head_in_slot = head.is_some_and(|(_, s)| {
            let d = s.ats.saturating_sub(p);
            d >= -half && d < frame - half
        });
        let head_quiet = head.is_some_and(|(_, s)| self.is_quiet(s.level));
        if diff > 0
            && (since >= i64::from(self.cfg.grow_interval_ms) || diff > self.queued_span())
            && (long_pause
                || (in_pause && diff > extra / 2)
                || (!head_in_slot && diff > extra * STRETCH_DEFICIT_MARGINS))
        {
            if !in_pause {
                self.counters.stretched += 1;
            }
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

        // Only a pause is shortened, never a gap between words: a quiet frame or an empty
        // slot after PAUSE_FRAMES quiet ones. Dropping silence is not heard, so it may go at
        // the faster pace.
        // Without levels (`put_voice`) the old pacing applies: a real frame every
        // `shrink_interval_ms`, an empty slot every `shrink_empty_interval_ms`.
        let pace = if due && self.last_level == LEVEL_UNKNOWN {
            self.cfg.shrink_interval_ms
        } else {
            self.cfg.shrink_empty_interval_ms
        };
        let shrink_due = long_pause && (!due || head_quiet) && since >= i64::from(pace);
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
                self.played_level(slot.level);
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
                self.played_level(slot.level);
                self.counters.frames_out += 1;
                Step::Voice(idx)
            }
        }
    }

    /// Whether a frame of this level is quiet for this talker: below [`QUIET_DBFS`], or close
    /// to a louder background.
    fn is_quiet(&self, level: i16) -> bool {
        level < self.floor.quiet_below()
    }

    fn played_level(&mut self, level: i16) {
        self.last_level = level;
        self.quiet_run = if self.is_quiet(level) {
            self.quiet_run.saturating_add(1)
        } else {
            0
        };
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
}
