//! The local radio's frames between the device thread and the engine thread.

use std::collections::VecDeque;

use super::{LocalCounters, LOCAL_QUEUE_FRAMES};

/// The local radio's audio between the device thread and the engine (station rate, i16).
#[derive(Debug, Default)]
pub(super) struct LocalPort {
    mic: VecDeque<Vec<i16>>,
    pub(super) speaker: VecDeque<Vec<i16>>,
    /// Frame buffers to reuse, so steady state allocates nothing.
    spare: Vec<Vec<i16>>,
    /// Devices attached (a device switch overlaps the old and the new one briefly).
    pub(super) attached: u32,
    /// Whether the local radio was a conference member at the last tick.
    local_on: bool,
    /// A frame has gone each way since the device attached: only then can one be late.
    mic_seen: bool,
    speaker_seen: bool,
    pub(super) counters: LocalCounters,
}

impl LocalPort {
    pub(super) fn recycle(&mut self, buf: Vec<i16>) {
        recycle(&mut self.spare, buf);
    }

    pub(super) fn clear(&mut self) {
        while let Some(b) = self.mic.pop_front() {
            self.recycle(b);
        }
        while let Some(b) = self.speaker.pop_front() {
            self.recycle(b);
        }
        self.mic_seen = false;
        self.speaker_seen = false;
    }

    /// A captured frame from the device.
    pub(super) fn push_mic(&mut self, frame: &[i16]) {
        if push_bounded(&mut self.mic, &mut self.spare, frame) {
            self.counters.rx_dropped += 1;
        }
        self.mic_seen = true;
        self.counters.rx_frames += 1;
    }

    /// The next frame for the device to play, into `dst`; false when none is ready.
    pub(super) fn pull_speaker(&mut self, dst: &mut [i16]) -> bool {
        match self.speaker.pop_front() {
            Some(frame) => {
                let fits = frame.len() == dst.len();
                if fits {
                    dst.copy_from_slice(&frame);
                    self.counters.tx_frames += 1;
                }
                self.recycle(frame);
                fits
            }
            None => {
                if self.local_on && self.speaker_seen && self.attached > 0 {
                    self.counters.tx_late += 1;
                }
                false
            }
        }
    }

    /// The engine's side of a tick: the captured frame for it, if any.
    pub(super) fn take_mic(&mut self, wanted: bool) -> Option<Vec<i16>> {
        let frame = self.mic.pop_front();
        if frame.is_none() && wanted && self.mic_seen && self.attached > 0 {
            self.counters.rx_late += 1;
        }
        frame
    }

    /// The engine's side of a tick: what the local radio hears, for the device to play.
    pub(super) fn put_speaker(&mut self, local_on: bool, frame: &[i16]) {
        self.local_on = local_on;
        if !local_on || self.attached == 0 {
            return;
        }
        if push_bounded(&mut self.speaker, &mut self.spare, frame) {
            self.counters.tx_dropped += 1;
        }
        self.speaker_seen = true;
    }
}

/// Keep a used frame buffer for reuse (a few are enough for both queues).
fn recycle(spare: &mut Vec<Vec<i16>>, buf: Vec<i16>) {
    if spare.len() < 2 * LOCAL_QUEUE_FRAMES + 2 {
        spare.push(buf);
    }
}

/// Queue a copy of `frame` in a reused buffer, first dropping the oldest frame when the queue
/// is full (the other side has fallen behind); true when one was dropped.
fn push_bounded(queue: &mut VecDeque<Vec<i16>>, spare: &mut Vec<Vec<i16>>, frame: &[i16]) -> bool {
    let full = queue.len() >= LOCAL_QUEUE_FRAMES;
    if full {
        if let Some(old) = queue.pop_front() {
            recycle(spare, old);
        }
    }
    let mut buf = spare.pop().unwrap_or_default();
    buf.clear();
    buf.extend_from_slice(frame);
    queue.push_back(buf);
    full
}
