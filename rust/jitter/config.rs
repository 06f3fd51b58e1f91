//! How a buffer is sized and what it refuses.

use std::fmt;

/// Upper bound on the voice slots a configuration may ask for (memory guard).
pub(super) const MAX_VOICE_SLOTS: usize = 4096;
/// Upper bound on `max_payload` (slin16 at 60 ms is 1 920 bytes; this leaves room).
const MAX_PAYLOAD_LIMIT: usize = 8192;

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
///
/// [`JitterBuffer`]: super::JitterBuffer
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
    pub(super) fn voice_slots(&self) -> usize {
        let frames = (self.max_jitterbuf_ms / self.frame_ms.max(1)) as usize;
        (frames + 4).min(MAX_VOICE_SLOTS)
    }
}
