//! What a buffer reports: counters, estimates and the values of a PONG's RR elements.

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
    /// Growth steps taken inside speech because the slot's frame had not arrived yet: that
    /// 20 ms is concealed (as a loss would be) and the frame plays in the next slot.
    pub stretched: u64,
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
    /// Voice frames below this level (dBFS) count as a pause: -50, or a few dB above the
    /// talker's background where that is louder.
    pub quiet_below_dbfs: i16,
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
