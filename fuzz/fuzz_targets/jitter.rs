//! The jitter buffer driven by an arbitrary sequence of puts, gets and clock moves.
//!
//! Every frame put carries a unique id in its payload, so what comes out can be traced to
//! what went in: nothing comes out that was not queued, nothing comes out twice (so never
//! more than was given), payloads and timestamps are intact, two voice frames of one timeline
//! that were queued together come out in timestamp order and less than `max_jitterbuf_ms`
//! apart, and one tick never takes more items than were queued. Half the voice frames carry a
//! level, so the pause rules and the background estimate run too; the quiet threshold must
//! stay within `QUIET_DBFS..=QUIET_CEILING_DBFS`.
#![no_main]

use std::collections::HashMap;

use _core::jitter::{
    ControlKind, DropReason, GetResult, JitterBuffer, JitterConfig, PutResult, LEVEL_UNKNOWN,
    QUIET_CEILING_DBFS, QUIET_DBFS,
};
use libfuzzer_sys::fuzz_target;

/// Reads the input front to back; an exhausted input reads as zeros.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
}

const KINDS: [ControlKind; 8] = [
    ControlKind::Key,
    ControlKind::Unkey,
    ControlKind::Hangup,
    ControlKind::Cng,
    ControlKind::Dtmf(b'5'),
    ControlKind::Text,
    ControlKind::Other {
        frametype: 4,
        subclass: 20,
    },
    ControlKind::Key,
];

/// A frame the buffer accepted.
#[derive(Clone, Copy)]
struct Put {
    ts: u32,
    len: usize,
    /// Resyncs and resets start a new timeline; order holds only within one.
    epoch: u32,
    /// Step of the input at which it went in (or, for the last frame out, came out).
    at: u32,
}

/// What was queued and not yet seen coming out, by id.
type Pending = HashMap<u32, Put>;

fn payload(id: u32, len: usize) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    p.resize(len.max(4), 0xA5);
    p
}

/// Checks a frame that came out against what was put; returns its id and how it went in.
fn take(pending: &mut Pending, ts: u32, bytes: &[u8]) -> (u32, Put) {
    let id_bytes: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .expect("a payload we put carries its id");
    let id = u32::from_le_bytes(id_bytes);
    let put = pending
        .remove(&id)
        .unwrap_or_else(|| panic!("frame {id} came out but was not queued (or came out twice)"));
    assert_eq!(ts, put.ts, "frame {id} timestamp");
    assert_eq!(bytes, payload(id, put.len).as_slice(), "frame {id} payload");
    (id, put)
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let frame_ms = u32::from(inp.u8() % 60) + 1;
    let frames = u32::from(inp.u8() % 50) + 1;
    let knobs = inp.u8();
    let cfg = JitterConfig {
        frame_ms,
        max_jitterbuf_ms: frame_ms * frames,
        resync_threshold_ms: u32::from(knobs & 3) * 500,
        max_contig_interp: u32::from(knobs >> 4),
        target_extra_ms: u32::from(inp.u8()),
        max_payload: 64,
        grow_interval_ms: u32::from(inp.u8()),
        shrink_interval_ms: u32::from(inp.u8()) * 4,
        shrink_empty_interval_ms: u32::from(inp.u8()),
    };
    let mut jb = JitterBuffer::new(cfg).expect("the ranges above are valid");

    let mut now = 0u64;
    let mut ts = 0u32;
    let mut next_id = 0u32;
    let mut epoch = 0u32;
    let mut seen_resyncs = 0u64;
    let mut voice: Pending = HashMap::new();
    let mut control: Pending = HashMap::new();
    let mut control_kind: HashMap<u32, ControlKind> = HashMap::new();
    // The last voice frame out, with `at` the step at which it came out.
    let mut last_voice: Option<Put> = None;

    for step in 0..2000u32 {
        if inp.0.is_empty() {
            break;
        }
        let op = inp.u8();
        match op % 8 {
            0..=3 => {
                ts = if op % 8 == 3 {
                    inp.u32()
                } else {
                    // Mostly a frame on, with some jitter either way.
                    let d = i32::from(inp.u8() as i8);
                    ts.wrapping_add(frame_ms).wrapping_add_signed(d)
                };
                let len = usize::from(inp.u8() % 80);
                let id = next_id;
                next_id += 1;
                let p = payload(id, len);
                // Half the frames carry a level (any value, not only -120..=0), so the pause
                // rules and the background estimate are driven too.
                let level = if op & 0x40 != 0 {
                    i16::from(inp.u8() as i8).saturating_mul(2)
                } else {
                    LEVEL_UNKNOWN
                };
                let put = jb.put_voice_level(ts, &p, level, now);
                let quiet = jb.stats().quiet_below_dbfs;
                assert!(
                    (QUIET_DBFS..=QUIET_CEILING_DBFS).contains(&quiet),
                    "quiet threshold {quiet} out of range"
                );
                // A resync starts a new timeline even when the frame that caused it is then
                // refused (too far from the frames still queued), so count them, not results.
                let resyncs = jb.stats().resyncs;
                if resyncs != seen_resyncs {
                    seen_resyncs = resyncs;
                    epoch += 1;
                }
                match put {
                    PutResult::Queued | PutResult::Resynced => {
                        let put = Put {
                            ts,
                            len: p.len(),
                            epoch,
                            at: step,
                        };
                        voice.insert(id, put);
                    }
                    PutResult::Dropped(DropReason::Oversize) => {
                        assert!(p.len() > cfg.max_payload)
                    }
                    _ => assert!(p.len() <= cfg.max_payload, "oversize frame not refused"),
                }
            }
            4 => {
                let cts = ts.wrapping_add_signed(i32::from(inp.u8() as i8));
                let kind = KINDS[usize::from(inp.u8() % 8)];
                let len = usize::from(inp.u8() % 80);
                let id = next_id;
                next_id += 1;
                let p = payload(id, len);
                if jb.put_control(cts, kind, &p, now) == PutResult::Queued {
                    let put = Put {
                        ts: cts,
                        len: p.len(),
                        epoch,
                        at: step,
                    };
                    control.insert(id, put);
                    control_kind.insert(id, kind);
                }
            }
            5 => {
                // One tick: items until one fills it.
                let queued = jb.stats().queued;
                let mut items = 0usize;
                loop {
                    let item = jb.get(now);
                    let ends = item.ends_tick();
                    match item {
                        GetResult::Voice { ts, payload } => {
                            let (_, put) = take(&mut voice, ts, payload);
                            if let Some(prev) = last_voice {
                                // Queued together: this one went in before the last one came out.
                                if put.epoch == prev.epoch && put.at < prev.at {
                                    let d = ts.wrapping_sub(prev.ts) as i32;
                                    assert!(
                                        (0..i64::from(cfg.max_jitterbuf_ms))
                                            .contains(&i64::from(d)),
                                        "voice out of order: {} then {ts}",
                                        prev.ts
                                    );
                                }
                            }
                            last_voice = Some(Put { at: step, ..put });
                        }
                        GetResult::Control { ts, kind, payload } => {
                            let (id, _) = take(&mut control, ts, payload);
                            assert_eq!(control_kind.remove(&id), Some(kind), "control kind");
                        }
                        GetResult::Dropped { .. }
                        | GetResult::Interpolate { .. }
                        | GetResult::Silence => {}
                    }
                    if ends {
                        break;
                    }
                    items += 1;
                    assert!(items <= queued, "a tick took more items than were queued");
                }
                now = now.saturating_add(u64::from(frame_ms));
            }
            6 => now = now.saturating_add(u64::from(inp.u16())),
            _ => match inp.u8() % 4 {
                0 => now = u64::from(inp.u32()) << (inp.u8() % 24),
                1 => {
                    let rr = jb.rr_values();
                    assert!(rr.loss_percent() <= 100);
                }
                2 => {
                    jb.reset();
                    voice.clear();
                    control.clear();
                    control_kind.clear();
                    epoch += 1;
                    seen_resyncs = 0;
                    assert_eq!(jb.stats().queued, 0);
                }
                _ => {
                    let s = jb.stats();
                    assert!(s.frames_out <= s.frames_in, "more frames out than in");
                    assert!(s.control_out <= s.control_in, "more control out than in");
                    assert!(
                        s.queued <= voice.len() + control.len(),
                        "queue holds unknown frames"
                    );
                }
            },
        }
    }
});
