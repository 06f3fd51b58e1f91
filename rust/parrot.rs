//! Parrot: what a member says is recorded and played back to that member alone.
//!
//! The bridge's `parrot` mode gives every member (each call and link, and the local radio when
//! it is in the bridge) its own [`Parrot`] instead of the conference. Per 20 ms tick:
//!
//! 1. **Idle.** A frame whose power reaches the VOX threshold (`vox_threshold_db`, dBFS of mean
//!    power: a full-scale sine is −3 dBFS) starts a recording, with the [`PREROLL_FRAMES`]
//!    frames before it so the first syllable is not clipped by the VOX.
//! 2. **Recording** until `silence_gap_ms` of frames below the threshold (the gap is cut off the
//!    end but for its first [`TAIL_FRAMES`], where the last word fades), or until
//!    [`MAX_RECORDING_MS`].
//! 3. **Waiting** `playback_delay_ms` after the recording ended; what the member says meanwhile is
//!    not recorded.
//! 4. **Playing** the recording back to the member, frame by frame; then idle again. What the
//!    member says during playback is not recorded either (it would record its own echo).
//!
//! Memory is bounded: one recording per member, at most [`MAX_RECORDING_MS`] (30 s: 480 000
//! samples, 960 kB at 16 kHz), released after playback. Pure `&mut self` logic fed `now_ms`.

/// Longest recording kept; talk beyond it ends the recording (and plays it back).
pub const MAX_RECORDING_MS: u32 = 30_000;

/// Frames kept from before the VOX opens.
pub const PREROLL_FRAMES: usize = 2;

/// Frames of the closing quiet kept at the end, so the fading end of the last word (below the
/// VOX threshold) is not cut off.
pub const TAIL_FRAMES: usize = 5;

/// The `[parrot]` settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParrotSettings {
    /// Wait between the end of the recording and the playback.
    pub playback_delay_ms: u32,
    /// Quiet that ends a recording.
    pub silence_gap_ms: u32,
    /// Frame power (dBFS) that counts as talking.
    pub vox_threshold_db: f64,
}

impl Default for ParrotSettings {
    fn default() -> Self {
        ParrotSettings {
            playback_delay_ms: 3000,
            silence_gap_ms: 800,
            vox_threshold_db: -40.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Recording { quiet_ms: u32 },
    Waiting { play_at_ms: u64 },
    Playing { pos: usize },
}

/// One member's parrot.
#[derive(Debug)]
pub struct Parrot {
    settings: ParrotSettings,
    rate: u32,
    frame_len: usize,
    max_samples: usize,
    state: State,
    recording: Vec<i16>,
    /// The last frames before the VOX opened, oldest first (`PREROLL_FRAMES` × `frame_len`).
    preroll: Vec<i16>,
    /// This tick's playback frame.
    out: Vec<i16>,
    playing: bool,
}

/// Mean power of a frame in dBFS (a full-scale sine is −3 dBFS); −inf for silence.
pub fn frame_dbfs(pcm: &[i16]) -> f64 {
    if pcm.is_empty() {
        return f64::NEG_INFINITY;
    }
    let energy: f64 = pcm.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    10.0 * (energy / pcm.len() as f64 / (32768.0 * 32768.0)).log10()
}

impl Parrot {
    /// A parrot for frames of `frame_len` samples at `rate`.
    pub fn new(rate: u32, frame_len: usize, settings: ParrotSettings) -> Parrot {
        Parrot {
            settings,
            rate,
            frame_len,
            max_samples: (rate as usize) * MAX_RECORDING_MS as usize / 1000,
            state: State::Idle,
            recording: Vec::new(),
            preroll: vec![0; PREROLL_FRAMES * frame_len],
            out: vec![0; frame_len],
            playing: false,
        }
    }

    pub fn settings(&self) -> ParrotSettings {
        self.settings
    }

    /// One tick: `input` is what the member said (`None`: nothing arrived). Afterwards
    /// [`output`](Self::output) holds the playback frame, if one plays this tick.
    pub fn tick(&mut self, now_ms: u64, input: Option<&[i16]>) {
        let frame_ms = u32::try_from(self.frame_len * 1000 / (self.rate.max(1) as usize))
            .unwrap_or(20)
            .max(1);
        let loud = input.is_some_and(|f| frame_dbfs(f) >= self.settings.vox_threshold_db);
        self.playing = false;
        match self.state {
            State::Idle => {
                if loud {
                    self.recording.clear();
                    self.recording.extend_from_slice(&self.preroll);
                    self.push(input);
                    self.preroll.fill(0);
                    self.state = State::Recording { quiet_ms: 0 };
                } else {
                    self.preroll.copy_within(self.frame_len.., 0);
                    let start = self.preroll.len().saturating_sub(self.frame_len);
                    if let Some(slot) = self.preroll.get_mut(start..) {
                        match input {
                            Some(f) if f.len() == slot.len() => slot.copy_from_slice(f),
                            _ => slot.fill(0),
                        }
                    }
                }
            }
            State::Recording { quiet_ms } => {
                self.push(input);
                let quiet_ms = if loud { 0 } else { quiet_ms + frame_ms };
                let full = self.recording.len() >= self.max_samples;
                if quiet_ms >= self.settings.silence_gap_ms || full {
                    if !full {
                        // The closing gap is silence: it is not played back, but for the fade of
                        // the last word at its start.
                        let quiet = (quiet_ms / frame_ms) as usize;
                        let gap = self.frame_len * quiet.saturating_sub(TAIL_FRAMES);
                        let keep = self.recording.len().saturating_sub(gap);
                        self.recording.truncate(keep);
                    }
                    let delay = u64::from(self.settings.playback_delay_ms);
                    self.state = State::Waiting {
                        play_at_ms: now_ms + delay,
                    };
                } else {
                    self.state = State::Recording { quiet_ms };
                }
            }
            State::Waiting { play_at_ms } => {
                if now_ms >= play_at_ms {
                    self.state = State::Playing { pos: 0 };
                    self.play();
                }
            }
            State::Playing { .. } => self.play(),
        }
    }

    fn push(&mut self, input: Option<&[i16]>) {
        let room = self.max_samples.saturating_sub(self.recording.len());
        match input {
            Some(f) => self
                .recording
                .extend_from_slice(f.get(..room.min(f.len())).unwrap_or(&[])),
            None => self
                .recording
                .resize(self.recording.len() + room.min(self.frame_len), 0),
        }
    }

    fn play(&mut self) {
        let State::Playing { pos } = self.state else {
            return;
        };
        let end = (pos + self.frame_len).min(self.recording.len());
        if pos >= end {
            self.state = State::Idle;
            // Release the recording: memory is held only while there is one to play.
            self.recording = Vec::new();
            return;
        }
        self.out.fill(0);
        if let (Some(dst), Some(src)) =
            (self.out.get_mut(..end - pos), self.recording.get(pos..end))
        {
            dst.copy_from_slice(src);
        }
        self.playing = true;
        self.state = State::Playing { pos: end };
    }

    /// The frame played back to the member this tick, if any.
    pub fn output(&self) -> Option<&[i16]> {
        self.playing.then_some(&self.out[..])
    }

    /// Samples held by the recording now (for the memory bound).
    pub fn recorded_samples(&self) -> usize {
        self.recording.len()
    }

    /// Elements held by the fixed buffers (the recording is counted by `recorded_samples`).
    pub fn capacity_samples(&self) -> usize {
        self.preroll.capacity() + self.out.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_signal::tone;

    const N: usize = 160;

    fn settings() -> ParrotSettings {
        ParrotSettings {
            playback_delay_ms: 200,
            silence_gap_ms: 100,
            vox_threshold_db: -40.0,
        }
    }

    /// Runs `frames` (None: nothing arrived) through a parrot from t = 0; returns the tick and
    /// content of every frame played back.
    fn run(p: &mut Parrot, frames: &[Option<Vec<i16>>]) -> Vec<(usize, Vec<i16>)> {
        let mut out = Vec::new();
        for (n, f) in frames.iter().enumerate() {
            p.tick(n as u64 * 20, f.as_deref());
            if let Some(o) = p.output() {
                out.push((n, o.to_vec()));
            }
        }
        out
    }

    #[test]
    fn a_phrase_comes_back_after_the_gap_and_the_delay() {
        let mut p = Parrot::new(8000, N, settings());
        let speech = tone(700.0, 8000.0, 6000.0, 10 * N);
        let mut frames: Vec<Option<Vec<i16>>> = vec![Some(vec![3; N]); 5];
        frames.extend(speech.chunks(N).map(|c| Some(c.to_vec())));
        frames.extend(std::iter::repeat_n(Some(vec![0; N]), 40));
        let played = run(&mut p, &frames);
        // Preroll (two quiet frames), the ten frames of speech, and the start of the gap.
        assert_eq!(played.len(), PREROLL_FRAMES + 10 + TAIL_FRAMES.min(5));
        let first = played[0].0;
        // Speech ends at frame 15; five quiet frames (100 ms) end the recording at frame 19;
        // playback starts 200 ms later.
        assert_eq!(first, 19 + 10);
        let back: Vec<i16> = played.iter().flat_map(|(_, f)| f.clone()).collect();
        assert_eq!(&back[..2 * N], &[3; 2 * N][..]);
        assert_eq!(&back[2 * N..12 * N], &speech[..]);
        assert!(back[12 * N..].iter().all(|&s| s == 0));
        assert_eq!(p.recorded_samples(), 0, "released after playback");
    }

    #[test]
    fn talk_during_the_wait_and_the_playback_is_not_recorded() {
        let mut p = Parrot::new(8000, N, settings());
        let loud = Some(tone(500.0, 8000.0, 8000.0, N));
        let mut frames = vec![loud.clone(); 4];
        frames.extend(vec![None; 5]); // nothing arrives: silence ends it
        frames.extend(vec![loud.clone(); 30]);
        frames.extend(vec![None; 30]);
        let played = run(&mut p, &frames);
        // One playback of preroll + 4 frames + the tail, then a second recording of what came
        // after it.
        let ticks: Vec<usize> = played.iter().map(|(n, _)| *n).collect();
        let first = 2 + 4 + TAIL_FRAMES;
        assert_eq!(&ticks[..first], &(18..18 + first).collect::<Vec<_>>()[..]);
        assert!(ticks.len() > first && ticks[first] > 40, "{ticks:?}");
    }

    #[test]
    fn recordings_are_bounded() {
        let mut p = Parrot::new(8000, N, settings());
        let loud = tone(500.0, 8000.0, 8000.0, N);
        let max = 8000 * MAX_RECORDING_MS as usize / 1000;
        let mut now = 0u64;
        let mut peak = 0;
        let mut played = 0;
        for _ in 0..(MAX_RECORDING_MS / 20 + 200) {
            p.tick(now, Some(&loud));
            peak = peak.max(p.recorded_samples());
            played += usize::from(p.output().is_some());
            now += 20;
        }
        assert_eq!(peak, max);
        assert!(
            played > 0,
            "a full recording plays back although talk goes on"
        );
        assert!(frame_dbfs(&[0; 10]).is_infinite() && frame_dbfs(&[]).is_infinite());
        assert!((frame_dbfs(&loud) - (-3.0 - 12.3)).abs() < 0.2);
    }
}
