//! The talker's background level, so that "quiet" means the talker's own silence.
//!
//! A fixed threshold (-50 dBFS) finds the pauses of a clean talker, whose silence is digital
//! silence or a quiet room. A talker on a noisy phone, or a radio user whose receiver hiss
//! comes along, never drops below it: the buffer would then find no pause at all, grow only
//! where frames are missing and never shrink until the talk spurt ends. The floor is the
//! quietest pair of frames of the last few seconds (the minimum-statistics idea of noise
//! estimators: speech has gaps, and the minimum over a window longer than any word is the
//! background), and a frame within a few dB of it is quiet too.

use super::{LEVEL_UNKNOWN, QUIET_DBFS};

/// Frames per block of the minimum search (0.2 s of 20 ms frames). The floor is known after
/// the first block, so the silence or noise a talker sends before the first word (a PTT press,
/// a phone's first moments) already counts as a pause.
const BLOCK_FRAMES: u16 = 10;
/// Completed blocks whose minima are kept: the floor is the quietest frame of the last 4 to
/// 4.2 s, so a rise in the background is followed within that time and a drop at once.
const BLOCKS: usize = 20;
/// A frame less than this many dB above the floor is background. For steady noise the floor
/// (the quietest pair) lies within a dB of the noise's mean; 2 dB above it is the noise with
/// room for its own wobble. Speech that lifts a frame further is not quiet, even where it is
/// weaker than the noise: a word's weak fricative between two louder syllables counted as
/// quiet at 3 dB, and the buffer grew inside "brown fox" in the PESQ bench.
pub const FLOOR_MARGIN_DB: i16 = 2;
/// The highest level a frame may have and still count as quiet, whatever the floor. A louder
/// "background" is a sound in its own right (a tone, music, a carrier), which must not be cut.
pub const QUIET_CEILING_DBFS: i16 = -30;
/// The ceiling for the first [`EARLY_BLOCKS`] blocks (1 s). A talker who starts speaking at
/// once has shown no pause yet, so the floor may still be the weakest sound of a word.
pub const EARLY_CEILING_DBFS: i16 = -40;
const EARLY_BLOCKS: usize = 5;

/// Minimum of the recent frame levels, kept in blocks so that old minima expire.
#[derive(Debug, Clone)]
pub(super) struct NoiseFloor {
    /// Minima of the last completed blocks (`filled` of them are valid).
    blocks: [i16; BLOCKS],
    filled: usize,
    next: usize,
    /// The block being filled.
    current_min: i16,
    current_len: u16,
    /// The previous frame's level: the minimum is taken over the louder of each two frames in
    /// a row, so one stray frame of digital silence (a sender's filler between packets of
    /// noise) does not pull the floor to -120 for the whole window.
    prev: i16,
    /// [`Self::quiet_below`], kept current by `push`: the buffer asks for it several times a
    /// tick, and it changes only when a level arrives.
    quiet_below: i16,
}

impl NoiseFloor {
    pub(super) fn new() -> Self {
        Self {
            blocks: [0; BLOCKS],
            filled: 0,
            next: 0,
            current_min: i16::MAX,
            current_len: 0,
            prev: LEVEL_UNKNOWN,
            quiet_below: QUIET_DBFS,
        }
    }

    pub(super) fn clear(&mut self) {
        *self = Self::new();
    }

    /// Takes the level of a frame as it arrives; frames without one are not counted.
    pub(super) fn push(&mut self, level_dbfs: i16) {
        if level_dbfs == LEVEL_UNKNOWN {
            return;
        }
        let prev = std::mem::replace(&mut self.prev, level_dbfs);
        if prev == LEVEL_UNKNOWN {
            return;
        }
        self.current_min = self.current_min.min(level_dbfs.max(prev));
        self.current_len += 1;
        if self.current_len >= BLOCK_FRAMES {
            if let Some(cell) = self.blocks.get_mut(self.next) {
                *cell = self.current_min;
            }
            self.next = (self.next + 1) % BLOCKS;
            self.filled = (self.filled + 1).min(BLOCKS);
            self.current_min = i16::MAX;
            self.current_len = 0;
        }
        self.quiet_below = self.threshold();
    }

    /// The background level, once a whole block has been seen (before that, the first frames
    /// may all be speech).
    pub(super) fn floor(&self) -> Option<i16> {
        let done = self.blocks.get(..self.filled)?.iter().copied().min()?;
        Some(done.min(self.current_min))
    }

    /// Frames below this level are quiet: [`QUIET_DBFS`], or up to [`FLOOR_MARGIN_DB`] above
    /// the floor where the background is louder, but never above [`QUIET_CEILING_DBFS`]
    /// ([`EARLY_CEILING_DBFS`] in the first second).
    pub(super) fn quiet_below(&self) -> i16 {
        self.quiet_below
    }

    fn threshold(&self) -> i16 {
        let ceiling = if self.filled < EARLY_BLOCKS {
            EARLY_CEILING_DBFS
        } else {
            QUIET_CEILING_DBFS
        };
        self.floor().map_or(QUIET_DBFS, |f| {
            f.saturating_add(FLOOR_MARGIN_DB).clamp(QUIET_DBFS, ceiling)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(levels: impl IntoIterator<Item = i16>) -> NoiseFloor {
        let mut f = NoiseFloor::new();
        for l in levels {
            f.push(l);
        }
        f
    }

    #[test]
    fn no_floor_until_a_whole_block_has_been_seen() {
        // The first frame only starts the first pair.
        let f = fed(std::iter::repeat_n(-45, usize::from(BLOCK_FRAMES)));
        assert_eq!((f.floor(), f.quiet_below()), (None, QUIET_DBFS));
        let f = fed(std::iter::repeat_n(-45, usize::from(BLOCK_FRAMES) + 1));
        assert_eq!(
            (f.floor(), f.quiet_below()),
            (Some(-45), -45 + FLOOR_MARGIN_DB)
        );
    }

    #[test]
    fn a_talker_who_speaks_at_once_cannot_raise_the_threshold_far_in_the_first_second() {
        let first_second = usize::from(BLOCK_FRAMES) * EARLY_BLOCKS;
        let f = fed(std::iter::repeat_n(-25, first_second));
        assert_eq!(f.quiet_below(), EARLY_CEILING_DBFS);
        let f = fed(std::iter::repeat_n(-25, first_second + 1));
        assert_eq!(f.quiet_below(), QUIET_CEILING_DBFS);
    }

    #[test]
    fn one_stray_frame_of_digital_silence_does_not_lower_the_floor() {
        let mut levels = vec![-40; 100];
        levels[50] = -120;
        assert_eq!(fed(levels.clone()).floor(), Some(-40));
        // Two in a row are a pause of silence: the floor follows.
        levels[51] = -120;
        assert_eq!(fed(levels).floor(), Some(-120));
    }

    #[test]
    fn a_clean_talker_keeps_the_fixed_threshold() {
        // Digital silence between words: the floor is far below -50, which stays the line.
        let f = fed((0..200).map(|k| if k % 10 < 7 { -20 } else { -120 }));
        assert_eq!((f.floor(), f.quiet_below()), (Some(-120), QUIET_DBFS));
    }

    #[test]
    fn background_noise_raises_the_threshold_up_to_the_ceiling() {
        let f = fed((0..200).map(|k| if k % 10 < 7 { -20 } else { -40 }));
        assert_eq!(f.quiet_below(), -40 + FLOOR_MARGIN_DB);
        // A steady tone is not background: frames at its level are never quiet.
        let f = fed(std::iter::repeat_n(-20, 200));
        assert_eq!(f.quiet_below(), QUIET_CEILING_DBFS);
    }

    #[test]
    fn a_quieter_background_is_followed_at_once_a_louder_one_within_the_window() {
        let mut f = fed(std::iter::repeat_n(-40, 100));
        f.push(-60);
        f.push(-60);
        assert_eq!(f.floor(), Some(-60));
        let window = usize::from(BLOCK_FRAMES) * (BLOCKS + 1);
        for _ in 0..window {
            f.push(-36);
        }
        assert_eq!(f.floor(), Some(-36));
        // Frames without a level change nothing.
        f.push(LEVEL_UNKNOWN);
        assert_eq!(f.floor(), Some(-36));
    }
}
