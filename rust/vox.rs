//! VOX: a carrier detector on the received audio, for radios without a COS line.
//!
//! The gate measures the signal in consecutive 20 ms windows (RMS per AES17, like the level
//! meter: a sine reads its peak level). It opens once the level has been at or above the
//! threshold for the attack time (so a click does not key the node) and closes once it has been
//! below for the release time (so the pauses between words do not unkey it). Time is counted in
//! samples of the signal, as the meter counts it.

use crate::level::SILENCE_DBFS;

/// Length of one VOX window.
pub const WINDOW_MS: u32 = 20;

/// Thresholds accepted, in dBFS.
pub const THRESHOLD_DBFS_MIN: f64 = -80.0;
pub const THRESHOLD_DBFS_MAX: f64 = 0.0;

/// Longest attack or release time accepted, in ms.
pub const TIME_MS_MAX: u32 = 10_000;

const FULL_SCALE: f64 = 32768.0;

/// A VOX setting outside the accepted ranges.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum VoxError {
    Threshold(f64),
    Time(u32),
}

impl std::fmt::Display for VoxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VoxError::Threshold(db) => write!(
                f,
                "VOX threshold {db} dBFS is out of range (accepted: {THRESHOLD_DBFS_MIN} to \
                 {THRESHOLD_DBFS_MAX})"
            ),
            VoxError::Time(ms) => write!(
                f,
                "VOX attack/release {ms} ms is out of range (accepted: 0 to {TIME_MS_MAX})"
            ),
        }
    }
}

impl std::error::Error for VoxError {}

/// The VOX gate's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VoxConfig {
    pub threshold_dbfs: f64,
    pub attack_ms: u32,
    pub release_ms: u32,
}

/// The gate: feed it the received signal, read whether it is open.
#[derive(Debug, Clone)]
pub struct VoxGate {
    window: usize,
    /// Sum of squares of a window at the threshold (compared without a log per window).
    threshold_sum_sq: f64,
    attack_windows: u32,
    release_windows: u32,
    n: usize,
    sum_sq: f64,
    /// Consecutive windows above (while closed) or below (while open) the threshold.
    run: u32,
    open: bool,
    /// The state as last taken with [`VoxGate::take_change`].
    reported: bool,
}

fn windows(ms: u32) -> u32 {
    ms.div_ceil(WINDOW_MS)
}

impl VoxGate {
    /// A gate for a signal at `rate` Hz.
    pub fn new(rate: u32, cfg: VoxConfig) -> Result<Self, VoxError> {
        let t = cfg.threshold_dbfs;
        if !(THRESHOLD_DBFS_MIN..=THRESHOLD_DBFS_MAX).contains(&t) {
            return Err(VoxError::Threshold(t));
        }
        for ms in [cfg.attack_ms, cfg.release_ms] {
            if ms > TIME_MS_MAX {
                return Err(VoxError::Time(ms));
            }
        }
        let window = (rate / 1000 * WINDOW_MS).max(1) as usize;
        // AES17 RMS reads a sine at its peak: the window's mean square at the threshold is
        // (10^(t/20) * full scale)^2 / 2.
        let amplitude = 10f64.powf(t.max(SILENCE_DBFS) / 20.0) * FULL_SCALE;
        Ok(VoxGate {
            window,
            threshold_sum_sq: amplitude * amplitude / 2.0 * window as f64,
            // An attack of 0 still needs one window above the threshold to open.
            attack_windows: windows(cfg.attack_ms).max(1),
            release_windows: windows(cfg.release_ms).max(1),
            n: 0,
            sum_sq: 0.0,
            run: 0,
            open: false,
            reported: false,
        })
    }

    /// Measures `x`, the next samples of the received signal.
    pub fn feed(&mut self, mut x: &[i16]) {
        while !x.is_empty() {
            let take = (self.window - self.n).min(x.len());
            let (now, rest) = x.split_at(take);
            self.sum_sq += now
                .iter()
                .map(|&s| f64::from(s) * f64::from(s))
                .sum::<f64>();
            self.n += take;
            if self.n == self.window {
                self.close_window();
            }
            x = rest;
        }
    }

    fn close_window(&mut self) {
        let above = self.sum_sq >= self.threshold_sum_sq;
        self.n = 0;
        self.sum_sq = 0.0;
        // A window on the open state's side resets the count toward the other state.
        if above == self.open {
            self.run = 0;
            return;
        }
        self.run += 1;
        let needed = if self.open {
            self.release_windows
        } else {
            self.attack_windows
        };
        if self.run >= needed {
            self.open = !self.open;
            self.run = 0;
        }
    }

    pub fn is_open(&self) -> bool {
        self.open
    }

    /// The new state when it differs from the one last taken (an edge to report), else None.
    pub fn take_change(&mut self) -> Option<bool> {
        if self.open == self.reported {
            return None;
        }
        self.reported = self.open;
        Some(self.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_signal::tone;

    fn cfg(threshold_dbfs: f64, attack_ms: u32, release_ms: u32) -> VoxConfig {
        VoxConfig {
            threshold_dbfs,
            attack_ms,
            release_ms,
        }
    }

    /// A gate fed at 8 kHz, with the window index of every change it reported.
    struct Rig {
        gate: VoxGate,
        changes: Vec<(usize, bool)>,
        at: usize,
    }

    impl Rig {
        fn new(config: VoxConfig) -> Self {
            Rig {
                gate: VoxGate::new(8000, config).unwrap(),
                changes: Vec::new(),
                at: 0,
            }
        }

        /// Feeds `ms` of `x` (repeated) in 5 ms blocks.
        fn run(&mut self, x: &[i16], ms: usize) {
            let block = 40; // 5 ms at 8 kHz
            for chunk in x
                .iter()
                .cycle()
                .take(ms * 8)
                .collect::<Vec<_>>()
                .chunks(block)
            {
                let c: Vec<i16> = chunk.iter().map(|&&s| s).collect();
                self.gate.feed(&c);
                self.at += c.len();
                if let Some(open) = self.gate.take_change() {
                    self.changes.push((self.at / 160, open));
                }
            }
        }
    }

    #[test]
    fn opens_after_the_attack_and_closes_after_the_release() {
        // -20 dBFS tone against a -30 dBFS threshold.
        let loud = tone(1000.0, 8000.0, 3277.0, 8000);
        let quiet = vec![0i16; 160];
        let mut r = Rig::new(cfg(-30.0, 60, 400));
        r.run(&quiet, 100);
        assert!(r.changes.is_empty());
        r.run(&loud, 500);
        // 5 windows of silence, then 3 windows (60 ms) above the threshold.
        assert_eq!(r.changes, vec![(5 + 3, true)]);
        r.run(&quiet, 1000);
        // 25 windows of tone end at window 30; 20 windows (400 ms) of silence close it.
        assert_eq!(r.changes, vec![(8, true), (30 + 20, false)]);
        assert!(!r.gate.is_open() && r.gate.take_change().is_none());
    }

    #[test]
    fn a_short_burst_does_not_open_and_a_short_pause_does_not_close() {
        let loud = tone(1000.0, 8000.0, 3277.0, 8000);
        let quiet = vec![0i16; 160];
        let mut r = Rig::new(cfg(-30.0, 60, 400));
        r.run(&loud, 40);
        r.run(&quiet, 20);
        r.run(&loud, 40);
        assert!(
            r.changes.is_empty(),
            "two 40 ms bursts are clicks: {:?}",
            r.changes
        );
        r.run(&loud, 200);
        assert!(r.gate.is_open());
        r.run(&quiet, 300);
        r.run(&loud, 100);
        assert!(
            r.gate.is_open(),
            "a 300 ms pause is shorter than the release"
        );
        assert_eq!(r.changes.len(), 1);
    }

    #[test]
    fn the_threshold_is_the_meters_rms_level() {
        // A sine 1 dB above the threshold opens the gate, 1 dB below does not.
        for (level_db, opens) in [(-29.0, true), (-31.0, false)] {
            let amp = 10f64.powf(level_db / 20.0) * 32768.0;
            let x = tone(1000.0, 8000.0, amp, 8000);
            let mut gate = VoxGate::new(8000, cfg(-30.0, 0, 100)).unwrap();
            gate.feed(&x);
            assert_eq!(gate.is_open(), opens, "{level_db}");
        }
    }

    #[test]
    fn settings_out_of_range_are_refused() {
        assert_eq!(
            VoxGate::new(8000, cfg(-81.0, 0, 0)).unwrap_err(),
            VoxError::Threshold(-81.0)
        );
        assert!(VoxGate::new(8000, cfg(f64::NAN, 0, 0)).is_err());
        assert_eq!(
            VoxGate::new(8000, cfg(-30.0, 10_001, 0)).unwrap_err(),
            VoxError::Time(10_001)
        );
        let e = VoxGate::new(8000, cfg(1.0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("-80 to 0"), "{e}");
    }
}
