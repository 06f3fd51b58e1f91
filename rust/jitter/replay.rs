//! A leg's receive path replayed offline: frames with their arrival times go through a
//! [`JitterBuffer`] and a [`Concealer`] tick by tick, exactly as the media path pulls a leg,
//! and the audio that would have been mixed comes out. Benches use it to score the buffer on
//! many seeds without a real-time run (no host skew, a thousand times faster).

use super::{level_dbfs, Concealer, Concealment, GetResult, JitterBuffer, JitterConfig};
use super::{JitterError, JitterStats};

/// One received voice frame: its timestamp, when it arrived (ms on the replay's clock) and
/// its decoded audio.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub ts: u32,
    pub at_ms: u64,
    pub pcm: Vec<i16>,
}

/// What one tick of a replay played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Played {
    /// The frame of this timestamp.
    Voice(u32),
    /// Concealment (audible or faded out).
    Concealed,
    /// Nothing: the buffer is between talk spurts.
    Silence,
}

/// A replay's output: the audio, what each tick played, and the buffer's counters.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub pcm: Vec<i16>,
    pub played: Vec<Played>,
    pub stats: JitterStats,
}

/// The audio of `ticks` ticks, the first at `first_tick_ms` and then every `cfg.frame_ms`,
/// each `frame_len` samples (silence where nothing was mixed), what each tick played and the
/// buffer's counters.
/// `arrivals` may come in any order; each is offered at the first tick at or after it
/// arrives, in arrival order, before that tick's `get`.
pub fn replay(
    cfg: JitterConfig,
    mode: Concealment,
    rate: u32,
    frame_len: usize,
    arrivals: &[Arrival],
    first_tick_ms: u64,
    ticks: usize,
) -> Result<Replayed, JitterError> {
    let mut jb = JitterBuffer::new(cfg)?;
    let mut plc = Concealer::new(rate, frame_len, mode);
    let mut order: Vec<&Arrival> = arrivals.iter().collect();
    order.sort_by_key(|a| a.at_ms);
    let mut next = 0;
    let mut out = Vec::with_capacity(ticks * frame_len);
    let mut played = Vec::with_capacity(ticks);
    let mut pcm = vec![0i16; frame_len];
    let mut bytes = Vec::with_capacity(frame_len * 2);
    let mut ahead = Vec::with_capacity(frame_len);
    for k in 0..ticks {
        let now = first_tick_ms + k as u64 * u64::from(cfg.frame_ms);
        while let Some(a) = order.get(next).filter(|a| a.at_ms <= now) {
            bytes.clear();
            bytes.extend(a.pcm.iter().flat_map(|s| s.to_ne_bytes()));
            let _ = jb.put_voice_level(a.ts, &bytes, level_dbfs(&a.pcm), a.at_ms);
            next += 1;
        }
        let mut ready = false;
        let mut what = Played::Silence;
        loop {
            match jb.get(now) {
                GetResult::Control { .. } | GetResult::Dropped { .. } => continue,
                GetResult::Voice { ts, payload } => {
                    what = Played::Voice(ts);
                    pcm.fill(0);
                    for (s, c) in pcm.iter_mut().zip(payload.chunks_exact(2)) {
                        *s = i16::from_ne_bytes([c[0], c[1]]);
                    }
                    plc.good(&mut pcm);
                    ready = true;
                }
                GetResult::Interpolate { .. } => {
                    what = Played::Concealed;
                    ready = match jb.next_voice() {
                        Some((gap, payload)) => {
                            ahead.clear();
                            ahead.extend(
                                payload
                                    .chunks_exact(2)
                                    .map(|c| i16::from_ne_bytes([c[0], c[1]])),
                            );
                            plc.conceal_toward(&mut pcm, &ahead, gap)
                        }
                        None => plc.conceal(&mut pcm),
                    };
                }
                GetResult::Silence => plc.reset(),
            }
            break;
        }
        played.push(what);
        if ready {
            out.extend_from_slice(&pcm);
        } else {
            out.resize(out.len() + frame_len, 0);
        }
    }
    Ok(Replayed {
        pcm: out,
        played,
        stats: jb.stats(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(i: usize) -> Vec<i16> {
        (0..160)
            .map(|n| {
                let t = (i * 160 + n) as f32 / 8000.0;
                (8000.0 * (2.0 * std::f32::consts::PI * 300.0 * t).sin()) as i16
            })
            .collect()
    }

    fn sent(n: usize, delay: impl Fn(usize) -> Option<u64>) -> Vec<Arrival> {
        (0..n)
            .filter_map(|i| {
                delay(i).map(|d| Arrival {
                    ts: 1000 + 20 * i as u32,
                    at_ms: 20 * i as u64 + d,
                    pcm: tone(i),
                })
            })
            .collect()
    }

    /// 80 ticks of `arrivals` through a default buffer with pitch concealment at 8 kHz, and
    /// the tick that played the first frame.
    fn replay_8k(arrivals: &[Arrival]) -> (Replayed, usize) {
        let r = replay(
            JitterConfig::default(),
            Concealment::Pitch,
            8000,
            160,
            arrivals,
            5,
            80,
        )
        .expect("default config");
        let k = r
            .played
            .iter()
            .position(|p| *p == Played::Voice(1000))
            .expect("first frame played");
        (r, k)
    }

    #[test]
    fn a_steady_stream_plays_every_frame_in_order() {
        let arrivals = sent(50, |_| Some(30));
        let (r, k) = replay_8k(&arrivals);
        let voice: Vec<u32> = r
            .played
            .iter()
            .filter_map(|p| match p {
                Played::Voice(ts) => Some(*ts),
                _ => None,
            })
            .collect();
        assert_eq!(voice, (0..50).map(|i| 1000 + 20 * i).collect::<Vec<_>>());
        assert_eq!(r.pcm.len(), 80 * 160);
        // Each played tick carries its frame's audio unchanged.
        assert_eq!(&r.pcm[k * 160..(k + 50) * 160], &tone_run(50)[..]);
        assert_eq!(r.stats.late, 0);
        assert_eq!(r.stats.frames_out, 50);
    }

    fn tone_run(n: usize) -> Vec<i16> {
        (0..n).flat_map(tone).collect()
    }

    #[test]
    fn a_lost_frame_is_concealed_in_its_slot_and_a_late_one_is_dropped() {
        // Frame 20 never arrives; frame 30 arrives 400 ms after its slot.
        let arrivals = sent(50, |i| match i {
            20 => None,
            30 => Some(430),
            _ => Some(30),
        });
        let (r, k) = replay_8k(&arrivals);
        assert_eq!(r.played[k + 20], Played::Concealed);
        assert_eq!(r.played[k + 30], Played::Concealed);
        assert_eq!(r.played[k + 31], Played::Voice(1000 + 31 * 20));
        assert_eq!(r.stats.late, 1);
        // The concealment carries the tone on (pitch repetition), not silence.
        let slot = &r.pcm[(k + 20) * 160..(k + 21) * 160];
        assert!(slot.iter().map(|s| i32::from(*s).abs()).max() > Some(4000));
    }
}
