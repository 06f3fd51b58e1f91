//! The announcement player: PCM clips mixed into the station's outputs, one 20 ms frame a tick.
//!
//! Python renders an announcement (CW from `tone.rs`, speech from a TTS binary resampled by
//! `ratio.rs`, a courtesy tone) at the station rate and hands it over with a destination; the
//! engine's tick takes the next frame of every clip playing and adds it to what the destination
//! hears:
//!
//! | destination | local radio's output | calls | transceive links |
//! |---|---|---|---|
//! | [`Destination::Monitor`] | yes | | |
//! | [`Destination::Air`] | yes | yes | |
//! | [`Destination::AirAndLinks`] | yes | yes | yes |
//!
//! Clips are not conference members: they never count as a talker, so an announcement does not
//! make the station "active" (and cannot trigger another ID), and a member never hears a clip
//! back through the conference. Several clips may play at once (a courtesy tone need not wait
//! behind a spoken announcement); they are summed with saturation.
//!
//! Keying: a clip reaches a call or a link by making that leg send audio while it plays, which
//! starts a talk spurt, so [`Destination::AirAndLinks`] keys the links and is used only when the
//! operator asked for it. On the local radio a clip is mixed into the output but does not key
//! the transmitter (`Station::local_hears_audio`), unless it was played with `keys_local`, which
//! Python sets only for the station ID under `[announce] cw_keys_when_idle`.
//!
//! Pure `&mut self` logic: no clock, no thread.

/// Clips playing or queued at once; more are refused.
pub const MAX_CLIPS: usize = 16;

/// Longest clip accepted, in ms (memory: 2 minutes at 16 kHz is 3.8 MB).
pub const MAX_CLIP_MS: u64 = 120_000;

/// Where a clip is heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// The local radio's output only (the operator's speaker).
    Monitor,
    /// The local radio's output and every call; never the links.
    Air,
    /// The local radio's output, every call and every transceive link.
    AirAndLinks,
}

/// Errors of [`Player::play`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlayerError {
    /// [`MAX_CLIPS`] clips are playing already.
    Busy,
    /// The clip is longer than [`MAX_CLIP_MS`].
    TooLong { ms: u64 },
    /// A clip with this id is playing.
    DuplicateId(u32),
}

impl std::fmt::Display for PlayerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlayerError::Busy => write!(f, "{MAX_CLIPS} announcements are playing already"),
            PlayerError::TooLong { ms } => {
                write!(f, "a {ms} ms announcement is longer than {MAX_CLIP_MS} ms")
            }
            PlayerError::DuplicateId(id) => write!(f, "announcement {id} is playing already"),
        }
    }
}

impl std::error::Error for PlayerError {}

/// A clip's start or end, for Python's `announcement_*` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayerEvent {
    /// The clip's first frame went out this tick.
    Started { id: u32 },
    /// The clip's last frame went out this tick (`completed`), or it was stopped, or refused.
    Finished { id: u32, completed: bool },
}

#[derive(Debug)]
struct Clip {
    id: u32,
    pcm: Vec<i16>,
    pos: usize,
    destination: Destination,
    keys_local: bool,
}

/// The clips playing, and this tick's mix for each destination.
#[derive(Debug)]
pub struct Player {
    rate: u32,
    frame_len: usize,
    clips: Vec<Clip>,
    /// This tick's sums: everything (local output), air (calls), air and links (links).
    local: Vec<i32>,
    air: Vec<i32>,
    links: Vec<i32>,
    /// The same, saturated, as the legs and the local output take them.
    local_out: Vec<i16>,
    air_out: Vec<i16>,
    links_out: Vec<i16>,
    has_local: bool,
    has_air: bool,
    has_links: bool,
    keys_local: bool,
}

fn saturate(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

impl Player {
    /// A player for frames of `frame_len` samples at `rate`.
    pub fn new(rate: u32, frame_len: usize) -> Player {
        Player {
            rate,
            frame_len,
            clips: Vec::with_capacity(MAX_CLIPS),
            local: vec![0; frame_len],
            air: vec![0; frame_len],
            links: vec![0; frame_len],
            local_out: vec![0; frame_len],
            air_out: vec![0; frame_len],
            links_out: vec![0; frame_len],
            has_local: false,
            has_air: false,
            has_links: false,
            keys_local: false,
        }
    }

    /// Queue `pcm` (station rate) to start at the next tick. An empty clip starts and finishes
    /// at the next tick.
    pub fn play(
        &mut self,
        id: u32,
        pcm: Vec<i16>,
        destination: Destination,
        keys_local: bool,
    ) -> Result<(), PlayerError> {
        let ms = pcm.len() as u64 * 1000 / u64::from(self.rate.max(1));
        if ms > MAX_CLIP_MS {
            return Err(PlayerError::TooLong { ms });
        }
        if self.clips.iter().any(|c| c.id == id) {
            return Err(PlayerError::DuplicateId(id));
        }
        if self.clips.len() >= MAX_CLIPS {
            return Err(PlayerError::Busy);
        }
        self.clips.push(Clip {
            id,
            pcm,
            pos: 0,
            destination,
            keys_local,
        });
        Ok(())
    }

    /// Stop a clip at once; false when no clip has that id. Its `Finished` event (not
    /// completed) goes to `events`.
    pub fn stop(&mut self, id: u32, events: &mut Vec<PlayerEvent>) -> bool {
        let Some(i) = self.clips.iter().position(|c| c.id == id) else {
            return false;
        };
        self.clips.swap_remove(i);
        events.push(PlayerEvent::Finished {
            id,
            completed: false,
        });
        true
    }

    /// Clips playing or about to start.
    pub fn playing(&self) -> usize {
        self.clips.len()
    }

    /// Take the next frame of every clip; afterwards `local()`, `air()` and `links()` hold this
    /// tick's mixes.
    pub fn tick(&mut self, events: &mut Vec<PlayerEvent>) {
        self.has_local = false;
        self.has_air = false;
        self.has_links = false;
        self.keys_local = false;
        if self.clips.is_empty() {
            return;
        }
        self.local.fill(0);
        self.air.fill(0);
        self.links.fill(0);
        let n = self.frame_len;
        for clip in &mut self.clips {
            if clip.pos == 0 {
                events.push(PlayerEvent::Started { id: clip.id });
            }
            let end = (clip.pos + n).min(clip.pcm.len());
            let frame = clip.pcm.get(clip.pos..end).unwrap_or(&[]);
            clip.pos = end.max(clip.pos + 1);
            let add = |sum: &mut Vec<i32>| {
                for (s, v) in sum.iter_mut().zip(frame) {
                    *s += i32::from(*v);
                }
            };
            add(&mut self.local);
            self.has_local = true;
            self.keys_local |= clip.keys_local;
            if clip.destination != Destination::Monitor {
                add(&mut self.air);
                self.has_air = true;
            }
            if clip.destination == Destination::AirAndLinks {
                add(&mut self.links);
                self.has_links = true;
            }
        }
        self.clips.retain(|c| {
            let done = c.pos >= c.pcm.len();
            if done {
                events.push(PlayerEvent::Finished {
                    id: c.id,
                    completed: true,
                });
            }
            !done
        });
        for (out, sum) in [
            (&mut self.local_out, &self.local),
            (&mut self.air_out, &self.air),
            (&mut self.links_out, &self.links),
        ] {
            for (o, s) in out.iter_mut().zip(sum) {
                *o = saturate(*s);
            }
        }
    }

    /// This tick's audio for the local radio's output (every clip), if any plays.
    pub fn local(&self) -> Option<&[i16]> {
        self.has_local.then_some(&self.local_out[..])
    }

    /// This tick's audio for the calls (`Air` and `AirAndLinks` clips), if any.
    pub fn air(&self) -> Option<&[i16]> {
        self.has_air.then_some(&self.air_out[..])
    }

    /// This tick's audio for the transceive links (`AirAndLinks` clips), if any.
    pub fn links(&self) -> Option<&[i16]> {
        self.has_links.then_some(&self.links_out[..])
    }

    /// Whether a clip playing this tick may key the local transmitter.
    pub fn keys_local(&self) -> bool {
        self.keys_local
    }

    /// Elements held by the mix buffers (for the no-growth test; clips are the caller's).
    pub fn capacity_samples(&self) -> usize {
        let sums = [&self.local, &self.air, &self.links];
        let outs = [&self.local_out, &self.air_out, &self.links_out];
        sums.iter().map(|v| v.capacity()).sum::<usize>()
            + outs.iter().map(|v| v.capacity()).sum::<usize>()
            + self.clips.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(len: usize, base: i16) -> Vec<i16> {
        (0..len).map(|i| base + (i % 100) as i16).collect()
    }

    #[test]
    fn a_clip_plays_frame_by_frame_to_its_destinations() {
        let mut p = Player::new(8000, 160);
        let clip = ramp(400, 1000);
        p.play(7, clip.clone(), Destination::Air, false)
            .expect("play");
        let mut events = Vec::new();
        let mut local = Vec::new();
        for tick in 0..4 {
            p.tick(&mut events);
            if tick < 3 {
                local.extend_from_slice(p.local().expect("local"));
                assert_eq!(p.air(), p.local());
                assert!(p.links().is_none() && !p.keys_local());
            } else {
                assert!(p.local().is_none() && p.air().is_none());
            }
        }
        // 400 samples: two whole frames and a last one padded with silence.
        assert_eq!(&local[..400], &clip[..]);
        assert!(local[400..].iter().all(|&s| s == 0));
        assert_eq!(
            events,
            vec![
                PlayerEvent::Started { id: 7 },
                PlayerEvent::Finished {
                    id: 7,
                    completed: true
                }
            ]
        );
    }

    #[test]
    fn clips_mix_with_saturation_and_each_destination_gets_its_own() {
        let mut p = Player::new(8000, 160);
        p.play(1, vec![20_000; 160], Destination::Monitor, false)
            .expect("monitor");
        p.play(2, vec![20_000; 160], Destination::AirAndLinks, true)
            .expect("links");
        p.play(3, vec![-5; 160], Destination::Air, false)
            .expect("air");
        let mut events = Vec::new();
        p.tick(&mut events);
        assert_eq!(p.local().expect("local")[0], i16::MAX);
        assert_eq!(p.air().expect("air")[0], 19_995);
        assert_eq!(p.links().expect("links")[0], 20_000);
        assert!(p.keys_local());
        assert_eq!(events.len(), 6);
        assert_eq!(p.playing(), 0);
    }

    #[test]
    fn stop_refusals_and_limits() {
        let mut p = Player::new(16000, 320);
        let mut events = Vec::new();
        p.play(1, vec![1; 3200], Destination::Air, false)
            .expect("play");
        assert_eq!(
            p.play(1, vec![1; 10], Destination::Air, false),
            Err(PlayerError::DuplicateId(1))
        );
        p.tick(&mut events);
        assert!(p.stop(1, &mut events));
        assert!(!p.stop(1, &mut events));
        assert_eq!(
            events,
            vec![
                PlayerEvent::Started { id: 1 },
                PlayerEvent::Finished {
                    id: 1,
                    completed: false
                }
            ]
        );
        let too_long = vec![0; 16 * (MAX_CLIP_MS as usize + 20)];
        assert!(matches!(
            p.play(2, too_long, Destination::Air, false),
            Err(PlayerError::TooLong { .. })
        ));
        for id in 0..MAX_CLIPS as u32 {
            p.play(10 + id, vec![0; 10], Destination::Monitor, false)
                .expect("room");
        }
        assert_eq!(
            p.play(99, vec![0; 10], Destination::Monitor, false),
            Err(PlayerError::Busy)
        );
        // An empty clip starts and finishes in one tick.
        let mut q = Player::new(8000, 160);
        q.play(5, Vec::new(), Destination::Air, false)
            .expect("empty");
        let mut ev = Vec::new();
        q.tick(&mut ev);
        assert_eq!(ev.len(), 2);
        assert_eq!(q.playing(), 0);
    }
}
