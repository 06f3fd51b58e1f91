//! What goes into a buffer and what comes out of it.

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
    ///
    /// [`RESYNC_AFTER`]: super::RESYNC_AFTER
    Discontinuity,
    /// Queueing it would hold more than `max_jitterbuf_ms` of audio.
    TooFar,
    /// Every slot of its kind is in use.
    Full,
    /// Its payload is larger than `max_payload`.
    Oversize,
}

/// Outcome of [`JitterBuffer::put_voice`] and [`JitterBuffer::put_control`].
///
/// [`JitterBuffer::put_voice`]: super::JitterBuffer::put_voice
/// [`JitterBuffer::put_control`]: super::JitterBuffer::put_control
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
///
/// [`JitterBuffer::get`]: super::JitterBuffer::get
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
    ///
    /// [`conceal`]: super::conceal
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
