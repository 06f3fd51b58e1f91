//! The queue's storage: fixed slots linked in timestamp order, payloads in one buffer.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    Voice,
    Control(ControlKind),
}

/// A queued frame; its payload lives in `JitterBuffer::data` at `index * max_payload`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// Adjusted timestamp: the peer's timestamp moved onto our clock (`ext - offset`).
    pub(super) ats: i64,
    pub(super) ts: u32,
    pub(super) len: usize,
    pub(super) entry: Entry,
    /// A voice frame's level in dBFS as the caller gave it ([`LEVEL_UNKNOWN`] if not).
    pub(super) level: i16,
}

impl JitterBuffer {
    /// Offset of the head from slot `p` if the head is a voice frame.
    pub(super) fn head_voice_offset(&self, p: i64) -> Option<i64> {
        match self.front() {
            Some((_, slot)) if slot.entry == Entry::Voice => Some(slot.ats.saturating_sub(p)),
            _ => None,
        }
    }

    pub(super) fn slot(&self, idx: u16) -> Slot {
        self.slots.get(usize::from(idx)).copied().unwrap_or(Slot {
            ats: 0,
            ts: 0,
            len: 0,
            entry: Entry::Voice,
            level: LEVEL_UNKNOWN,
        })
    }

    pub(super) fn payload(&self, idx: u16, len: usize) -> &[u8] {
        let start = usize::from(idx) * self.cfg.max_payload;
        self.data.get(start..start + len).unwrap_or(&[])
    }

    /// Levels of the queued voice frames, next to play first.
    pub(super) fn queued_levels(&self) -> impl Iterator<Item = i16> + '_ {
        self.order
            .iter()
            .map(|&i| self.slot(i))
            .filter(|s| s.entry == Entry::Voice)
            .map(|s| s.level)
    }

    pub(super) fn front(&self) -> Option<(u16, Slot)> {
        self.order.front().map(|&idx| (idx, self.slot(idx)))
    }

    pub(super) fn front_ats(&self) -> Option<i64> {
        self.front().map(|(_, s)| s.ats)
    }

    pub(super) fn back_ats(&self) -> Option<i64> {
        self.order.back().map(|&idx| self.slot(idx).ats)
    }

    /// Adjusted timestamps of the first and last queued voice frames.
    pub(super) fn voice_bounds(&self) -> Option<(i64, i64)> {
        let voice = |&&i: &&u16| self.slot(i).entry == Entry::Voice;
        let lo = self.order.iter().find(voice)?;
        let hi = self.order.iter().rev().find(voice)?;
        Some((self.slot(*lo).ats, self.slot(*hi).ats))
    }

    pub(super) fn queued_span(&self) -> i64 {
        match (self.front_ats(), self.back_ats()) {
            (Some(lo), Some(hi)) => hi.saturating_sub(lo),
            _ => 0,
        }
    }

    pub(super) fn pop_front(&mut self) -> Option<(u16, Slot)> {
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
    pub(super) fn insert(
        &mut self,
        ats: i64,
        ts: u32,
        entry: Entry,
        payload: &[u8],
        level: i16,
    ) -> bool {
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
                level,
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
    pub(super) fn check_invariants(&self) {
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
    pub(super) fn capacities(&self) -> [usize; 6] {
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
