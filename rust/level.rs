//! Gains in dB and a peak/RMS level meter, for setting the radio's audio levels without a scope.
//!
//! Levels are in dBFS: 0 dBFS is a sample at full scale (32768). RMS follows AES17, so a sine
//! reads the same peak and RMS level (a full-scale sine is 0 dBFS RMS; a full-scale square wave
//! +3 dBFS). Silence reads [`SILENCE_DBFS`].
//!
//! The meter counts time in samples, not wall-clock time: it reads the signal that went through
//! it, at whatever pace the sound card delivered it.

/// Reading of a window without signal (the floor of every reading).
pub const SILENCE_DBFS: f64 = -100.0;

/// Length of one metering window.
pub const WINDOW_MS: u32 = 100;

/// Windows a new peak is held before it starts to fall (1 s).
pub const HOLD_WINDOWS: u32 = 10;

/// How fast a held peak falls once the hold time is over, per window (20 dB/s).
pub const DECAY_DB_PER_WINDOW: f64 = 2.0;

/// Gains accepted at the device edge, in dB.
pub const GAIN_DB_MIN: f64 = -40.0;
pub const GAIN_DB_MAX: f64 = 20.0;

const FULL_SCALE: f64 = 32768.0;

/// The linear factor for `db` decibels.
pub fn gain_from_db(db: f64) -> f32 {
    10f64.powf(db / 20.0) as f32
}

/// Whether `db` is a gain the device edge takes.
pub fn gain_db_valid(db: f64) -> bool {
    (GAIN_DB_MIN..=GAIN_DB_MAX).contains(&db)
}

fn dbfs(amplitude: f64) -> f64 {
    if amplitude <= 0.0 {
        SILENCE_DBFS
    } else {
        (20.0 * (amplitude / FULL_SCALE).log10()).max(SILENCE_DBFS)
    }
}

/// What the meter shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Highest sample magnitude in the last complete window.
    pub peak_dbfs: f64,
    /// RMS of the last complete window (AES17: a sine reads its peak level).
    pub rms_dbfs: f64,
    /// The highest recent window peak, held for [`HOLD_WINDOWS`] windows, then falling by
    /// [`DECAY_DB_PER_WINDOW`] per window.
    pub peak_hold_dbfs: f64,
    /// Samples at full scale (±32767 or −32768) since the meter started: the signal clipped.
    pub clipped: u64,
}

/// Peak and RMS over consecutive windows, with a decaying peak hold.
#[derive(Debug, Clone)]
pub struct LevelMeter {
    window: usize,
    /// The window being filled.
    n: usize,
    sum_sq: u64,
    peak: u32,
    /// The last complete window.
    last: Reading,
    hold_age: u32,
    clipped: u64,
}

impl LevelMeter {
    /// A meter for a signal sampled at `rate` Hz (windows of [`WINDOW_MS`]).
    pub fn new(rate: u32) -> Self {
        let window = (rate / 1000 * WINDOW_MS).max(1) as usize;
        LevelMeter {
            window,
            n: 0,
            sum_sq: 0,
            peak: 0,
            last: Reading {
                peak_dbfs: SILENCE_DBFS,
                rms_dbfs: SILENCE_DBFS,
                peak_hold_dbfs: SILENCE_DBFS,
                clipped: 0,
            },
            hold_age: 0,
            clipped: 0,
        }
    }

    /// Samples per window.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Measures `x`, the next samples of the signal.
    pub fn feed(&mut self, mut x: &[i16]) {
        while !x.is_empty() {
            let take = (self.window - self.n).min(x.len());
            let (now, rest) = x.split_at(take);
            let mut sum = 0u64;
            let mut peak = 0u32;
            let mut clipped = 0u64;
            for &s in now {
                let a = u32::from(s.unsigned_abs());
                sum += u64::from(a * a);
                peak = peak.max(a);
                clipped += u64::from(a >= 32767);
            }
            self.sum_sq += sum;
            self.peak = self.peak.max(peak);
            self.clipped += clipped;
            self.n += take;
            if self.n == self.window {
                self.close_window();
            }
            x = rest;
        }
    }

    fn close_window(&mut self) {
        let peak = dbfs(f64::from(self.peak));
        let rms = (self.sum_sq as f64 / self.n as f64).sqrt() * std::f64::consts::SQRT_2;
        let mut hold = self.last.peak_hold_dbfs;
        if peak >= hold {
            hold = peak;
            self.hold_age = 0;
        } else if self.hold_age < HOLD_WINDOWS {
            self.hold_age += 1;
        } else {
            hold = (hold - DECAY_DB_PER_WINDOW).max(peak);
        }
        self.last = Reading {
            peak_dbfs: peak,
            rms_dbfs: dbfs(rms),
            peak_hold_dbfs: hold,
            clipped: self.clipped,
        };
        self.n = 0;
        self.sum_sq = 0;
        self.peak = 0;
    }

    /// The reading as of the last complete window (the clip count is always current).
    pub fn reading(&self) -> Reading {
        Reading {
            clipped: self.clipped,
            ..self.last
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_signal::tone;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn a_sine_reads_its_peak_level_both_ways() {
        let mut m = LevelMeter::new(8000);
        assert_eq!(m.window(), 800);
        // ASL's calibration level: 3 kHz deviation ≈ 7000 peak, about -13.4 dBFS.
        m.feed(&tone(1000.0, 8000.0, 7000.0, 800));
        let r = m.reading();
        let want = 20.0 * (7000.0f64 / 32768.0).log10();
        assert!(close(r.peak_dbfs, want, 0.01), "{r:?}");
        assert!(close(r.rms_dbfs, want, 0.01), "{r:?}");
        assert!(close(r.peak_hold_dbfs, want, 0.01), "{r:?}");
        assert_eq!(r.clipped, 0);
    }

    #[test]
    fn a_full_scale_square_wave_reads_plus_3_db_rms_and_counts_clips() {
        let mut m = LevelMeter::new(8000);
        let x: Vec<i16> = (0..800)
            .map(|n| if n % 2 == 0 { i16::MAX } else { i16::MIN })
            .collect();
        m.feed(&x);
        let r = m.reading();
        assert!(close(r.peak_dbfs, 0.0, 0.001), "{r:?}");
        assert!(close(r.rms_dbfs, 3.01, 0.01), "{r:?}");
        assert_eq!(r.clipped, 800);
    }

    #[test]
    fn silence_reads_the_floor_and_readings_wait_for_a_whole_window() {
        let mut m = LevelMeter::new(48000);
        m.feed(&[0; 4800]);
        assert_eq!(m.reading().peak_dbfs, SILENCE_DBFS);
        assert_eq!(m.reading().rms_dbfs, SILENCE_DBFS);
        // Half a window of signal does not show yet; the rest of the window does.
        m.feed(&[1000; 2400]);
        assert_eq!(m.reading().peak_dbfs, SILENCE_DBFS);
        m.feed(&[1000; 2400]);
        assert!(close(m.reading().peak_dbfs, dbfs(1000.0), 1e-9));
        // Split anywhere, the windows are the same.
        let mut a = LevelMeter::new(8000);
        let mut b = LevelMeter::new(8000);
        let x = tone(300.0, 8000.0, 12000.0, 2400);
        a.feed(&x);
        for piece in x.chunks(77) {
            b.feed(piece);
        }
        assert_eq!(a.reading(), b.reading());
    }

    #[test]
    fn the_peak_is_held_for_a_second_then_falls_20_db_per_second() {
        let mut m = LevelMeter::new(8000);
        m.feed(&tone(1000.0, 8000.0, 16384.0, 800)); // -6.02 dBFS
        let top = m.reading().peak_hold_dbfs;
        assert!(close(top, -6.02, 0.01));
        let quiet = tone(1000.0, 8000.0, 164.0, 800); // about -46 dBFS
        for _ in 0..HOLD_WINDOWS {
            m.feed(&quiet);
            assert_eq!(m.reading().peak_hold_dbfs, top);
        }
        for k in 1..=5 {
            m.feed(&quiet);
            let want = top - DECAY_DB_PER_WINDOW * f64::from(k);
            assert!(close(m.reading().peak_hold_dbfs, want, 1e-9));
        }
        // It never falls below the current peak, and a louder peak takes over at once.
        for _ in 0..100 {
            m.feed(&quiet);
        }
        assert!(close(
            m.reading().peak_hold_dbfs,
            m.reading().peak_dbfs,
            1e-9
        ));
        m.feed(&tone(1000.0, 8000.0, 32000.0, 800));
        assert!(close(m.reading().peak_hold_dbfs, dbfs(32000.0), 0.01));
    }

    #[test]
    fn gains_convert_from_db() {
        assert_eq!(gain_from_db(0.0), 1.0);
        assert!((gain_from_db(-6.0206) - 0.5).abs() < 1e-4);
        assert!((gain_from_db(20.0) - 10.0).abs() < 1e-5);
        assert!(gain_db_valid(GAIN_DB_MIN) && gain_db_valid(GAIN_DB_MAX));
        assert!(!gain_db_valid(-40.01) && !gain_db_valid(20.5) && !gain_db_valid(f64::NAN));
    }
}
