use super::*;
use crate::codec::Codec::{Alaw, Slin, Slin16, Ulaw};
use crate::frame::{parse, Frame, MiniFrame};
use std::f64::consts::PI;

mod announce;
mod dtmf;
mod keying;
mod levels;
mod parrot;
mod routing;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn spec(callno: u16, port: u16, codec: Codec) -> LegSpec {
    LegSpec {
        callno,
        peer_callno: callno + 1000,
        peer: addr(port),
        codec,
        mode: LegMode::Transceive,
        keying: RxKeying::Always,
        call_ts_ms: 1000,
        dtmf: false,
        link: false,
        normalize: None,
    }
}

/// `n`-th 20 ms frame of a tone at `rate`, amplitude 8000.
fn tone(freq: f64, rate: u32, n: usize) -> Vec<i16> {
    let len = (rate / 50) as usize;
    (0..len)
        .map(|i| {
            let t = (n * len + i) as f64 / f64::from(rate);
            (8000.0 * (2.0 * PI * freq * t).sin()).round() as i16
        })
        .collect()
}

/// Power of `freq` in `x` relative to a full-amplitude-8000 tone (Goertzel), in dB.
fn tone_db(x: &[i16], freq: f64, rate: u32) -> f64 {
    let w = 2.0 * PI * freq / f64::from(rate);
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &v in x {
        let s = f64::from(v) + 2.0 * w.cos() * s1 - s2;
        s2 = s1;
        s1 = s;
    }
    let power = s1 * s1 + s2 * s2 - 2.0 * w.cos() * s1 * s2;
    let amp = 2.0 * power.sqrt() / x.len() as f64;
    20.0 * (amp / 8000.0).log10()
}

/// Feed leg `callno` one encoded frame of its codec as a full voice frame.
fn feed(st: &mut Station, callno: u16, codec: Codec, pcm: &[i16], ts: u32, now: u64) {
    let mut wire = Vec::new();
    codec.encode(pcm, &mut wire);
    assert_eq!(st.push_full_voice(callno, codec, ts, &wire, now), Ok(()));
}

/// `spec` with the receiver keyed by `keying`.
fn keyed(spec: LegSpec, keying: RxKeying) -> LegSpec {
    LegSpec { keying, ..spec }
}

/// `spec` taking part as `mode`.
fn in_mode(spec: LegSpec, mode: LegMode) -> LegSpec {
    LegSpec { mode, ..spec }
}

/// An 8 kHz station with µ-law leg `callno` (port `9400 + callno`) keyed by `keying`, and a
/// plain listener `callno + 1` on the next port.
fn keyed_pair(callno: u16, keying: RxKeying) -> Station {
    let port = 9400 + callno;
    let link = keyed(spec(callno, port, Ulaw), keying);
    station(8000, [link, spec(callno + 1, port + 1, Ulaw)])
}

/// A station at `rate` (mix-minus) with these legs, added at 0 ms.
fn station(rate: u32, legs: impl IntoIterator<Item = LegSpec>) -> Station {
    let mut st = Station::new(rate, true);
    for leg in legs {
        let callno = leg.callno;
        st.add_leg(leg, 0)
            .unwrap_or_else(|e| panic!("leg {callno}: {e}"));
    }
    st
}

/// Feed leg `callno` the `n`-th 20 ms frame of a `freq` tone in its codec as a full voice
/// frame, stamped `ts0 + 20 n` and arriving at `20 n` ms.
fn feed_tone(st: &mut Station, callno: u16, codec: Codec, freq: f64, n: usize, ts0: u32) {
    let pcm = tone(freq, codec.rate(), n);
    feed(st, callno, codec, &pcm, ts0 + n as u32 * 20, n as u64 * 20);
}

/// Frame numbers `n` of a run with their times (`20 n` ms).
fn frame_times(range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, u64)> {
    range.map(|n| (n, n as u64 * 20))
}

/// One tick at `now`, its output in the cleared `out`.
fn tick(st: &mut Station, out: &mut TickOutput, now: u64) {
    out.clear();
    st.tick(now, out);
}

/// Decode what went to `to` this tick (full voice event or mini frame) with `codec`.
fn heard(out: &TickOutput, callno: u16, to: SocketAddr, codec: Codec) -> Option<Vec<i16>> {
    let mut pcm = Vec::new();
    for e in &out.events {
        if let MediaEvent::FullVoice {
            callno: c, payload, ..
        } = e
        {
            if *c == callno {
                codec.decode(payload, &mut pcm).ok()?;
                return Some(pcm);
            }
        }
    }
    for d in &out.datagrams {
        if d.to == to {
            if let Ok(Frame::Mini(m)) = parse(&out.wire(d)) {
                assert_eq!(m.scall, callno);
                codec.decode(&m.payload, &mut pcm).ok()?;
                return Some(pcm);
            }
        }
    }
    None
}

fn rx_keys(out: &TickOutput, callno: u16) -> Vec<bool> {
    out.events
        .iter()
        .filter_map(|e| match e {
            MediaEvent::RxKey { callno: c, keyed } if *c == callno => Some(*keyed),
            _ => None,
        })
        .collect()
}

fn silence(rate: u32) -> Vec<i16> {
    vec![0; (rate / 50) as usize]
}

fn heard_frame(out: &TickOutput, callno: u16, to: SocketAddr) -> bool {
    out.events
        .iter()
        .any(|e| matches!(e, MediaEvent::FullVoice { callno: c, .. } if *c == callno))
        || out.datagrams.iter().any(|d| d.to == to)
}

/// A frame of a 500 Hz tone whose mean power is `dbfs`.
fn tone_at(dbfs: f64, n: usize) -> Vec<i16> {
    // A sine's mean power is its peak's minus 3 dB; `tone` peaks at 8000.
    let gain = 32768.0 * 10f64.powf((dbfs + 3.0) / 20.0) / 8000.0;
    tone(500.0, 8000, n)
        .iter()
        .map(|&s| (f64::from(s) * gain).round() as i16)
        .collect()
}

fn heard_at(out: &TickOutput, to: SocketAddr, codec: Codec) -> Vec<i16> {
    let mut pcm = Vec::new();
    for d in out.datagrams.iter().filter(|d| d.to == to) {
        codec.decode(out.payload(d), &mut pcm).expect("decode");
    }
    pcm
}

fn dtmf_events(out: &TickOutput) -> Vec<(Option<u16>, char)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            MediaEvent::Dtmf { callno, digit } => Some((*callno, *digit)),
            _ => None,
        })
        .collect()
}

/// `digits` from the project's generator, `on_ms` tones and `off_ms` gaps, starting `lead`
/// samples into the first frame, then silence, cut into 20 ms frames.
fn dtmf_frames(rate: u32, digits: &str, on_ms: u32, off_ms: u32, lead: usize) -> Vec<Vec<i16>> {
    let mut g = crate::dtmf::DtmfGenerator::new(rate).expect("generator");
    let per = |ms: u32| (rate * ms / 1000) as usize;
    let mut sig = vec![0i16; per(40) + lead];
    for d in digits.chars() {
        g.start(d, on_ms, -10.0).expect("digit");
        let mut t = vec![0i16; per(on_ms + GENERATOR_TAIL_MS)];
        let _ = g.fill(&mut t);
        sig.extend_from_slice(&t);
        sig.extend(std::iter::repeat_n(0, per(off_ms)));
    }
    sig.extend(std::iter::repeat_n(0, per(200)));
    let n = (rate / 50) as usize;
    sig.chunks(n)
        .map(|c| {
            let mut f = c.to_vec();
            f.resize(n, 0);
            f
        })
        .collect()
}

/// The generator's envelope adds this much after the key-down time.
const GENERATOR_TAIL_MS: u32 = 5;

/// Runs of non-zero samples in `x`, in samples.
fn bursts(x: &[i16]) -> Vec<usize> {
    let mut runs = Vec::new();
    let (mut run, mut gap) = (0usize, 0usize);
    for &v in x {
        if v != 0 {
            // Two tones cross zero together now and then: a short zero run is not a gap.
            run += gap + 1;
            gap = 0;
        } else if run > 0 {
            gap += 1;
            if gap > 8 {
                runs.push(run);
                run = 0;
                gap = 0;
            }
        }
    }
    if run > 0 {
        runs.push(run);
    }
    runs
}

fn play_events(out: &TickOutput) -> Vec<PlayerEvent> {
    out.events
        .iter()
        .filter_map(|e| match e {
            MediaEvent::Play(p) => Some(*p),
            _ => None,
        })
        .collect()
}

fn parrot_settings() -> ParrotSettings {
    ParrotSettings {
        playback_delay_ms: 100,
        silence_gap_ms: 100,
        vox_threshold_db: -40.0,
    }
}

const PREROLL: usize = crate::parrot::PREROLL_FRAMES;

/// Frame `n` of a syllabic test voice at `rate`: the first 12 harmonics of 140 Hz (a voiced
/// sound, not a tone) under a 4 Hz envelope, about `amp` at its peaks.
fn voice_frame(rate: u32, n: usize, amp: f64) -> Vec<i16> {
    let len = (rate / 50) as usize;
    (0..len)
        .map(|i| {
            let t = (n * len + i) as f64 / f64::from(rate);
            let env = (PI * 4.0 * t).sin().powi(2);
            let x: f64 = (1..=12)
                .map(|h| {
                    (2.0 * PI * 140.0 * f64::from(h) * t + f64::from(h * h)).sin() / f64::from(h)
                })
                .sum();
            (amp / 3.0 * env * x).round() as i16
        })
        .collect()
}
