//! What a buffer remembers of the peer: its clock, its recent delays and timestamps.

use super::{HISTORY_DROP_PCT, HISTORY_LEN};

/// Maps the peer's 32-bit timestamps onto a continuous i64 line and onto our clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeline {
    /// The highest timestamp accepted so far and its extended value: new timestamps are
    /// extended by their wrap-safe (i32) distance from it.
    pub(super) ref_ts: u32,
    pub(super) ref_ext: i64,
    /// `ats = ext - offset`; chosen so that the first frame has delay 0.
    pub(super) offset: i64,
}

impl Timeline {
    pub(super) fn start(ts: u32, now: i64) -> Self {
        Self {
            ref_ts: ts,
            ref_ext: 0,
            offset: -now,
        }
    }

    pub(super) fn extend(&self, ts: u32) -> i64 {
        let step = ts.wrapping_sub(self.ref_ts) as i32;
        self.ref_ext.saturating_add(i64::from(step))
    }

    pub(super) fn advance(&mut self, ts: u32, ext: i64) {
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
pub(super) struct DelayHistory {
    pub(super) ring: Box<[i64]>,
    pub(super) sorted: Box<[i64]>,
    pub(super) len: usize,
    pub(super) next: usize,
}

impl DelayHistory {
    pub(super) fn new() -> Self {
        Self {
            ring: vec![0; HISTORY_LEN].into_boxed_slice(),
            sorted: vec![0; HISTORY_LEN].into_boxed_slice(),
            len: 0,
            next: 0,
        }
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.next = 0;
    }

    pub(super) fn push(&mut self, delay: i64) {
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
    pub(super) fn estimate(&self) -> (i64, i64) {
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
pub(super) struct Recent<const N: usize> {
    pub(super) vals: [Option<i64>; N],
    pub(super) next: usize,
}

impl<const N: usize> Recent<N> {
    pub(super) fn new() -> Self {
        Self {
            vals: [None; N],
            next: 0,
        }
    }

    pub(super) fn clear(&mut self) {
        self.vals = [None; N];
        self.next = 0;
    }

    pub(super) fn push(&mut self, v: i64) {
        if let Some(cell) = self.vals.get_mut(self.next) {
            *cell = Some(v);
        }
        self.next = (self.next + 1) % N;
    }

    pub(super) fn contains(&self, v: i64) -> bool {
        self.vals.contains(&Some(v))
    }

    /// Forgets one value within `tol` of `v`; true if there was one.
    pub(super) fn take_near(&mut self, v: i64, tol: i64) -> bool {
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
