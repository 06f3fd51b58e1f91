//! IAX2 media framing: mini frames, meta video frames and meta trunk frames.
//!
//! The first input byte picks the path (so every input reaches one of them); the rest is the
//! datagram. A parsed frame must write back to the same bytes and be accepted by its
//! constructor, and a trunk frame's mini frames must carry its entries intact.
#![no_main]

use _core::frame::{self, Frame, MiniFrame, TrunkFrame, VideoFrame, CALLNO_MASK};
use _core::jitter::{unwrap_mini, MINI_TS_WINDOW_MS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut buf = rest.to_vec();
    match (mode & 1, buf.get_mut(..2)) {
        // Meta: the first word is zero (the F bit and call number clear).
        (1, Some(word0)) => word0.fill(0),
        // Mini: the F bit clear.
        (_, Some(word0)) => word0[0] &= 0x7F,
        (_, None) => {}
    }
    let Ok(parsed) = frame::parse(&buf) else {
        return;
    };
    assert_eq!(parsed.encoded_len(), buf.len(), "encoded_len");
    assert_eq!(parsed.to_bytes(), buf, "round trip");
    match parsed {
        Frame::Full(f) => panic!("F bit clear but parsed as a full frame: {f:?}"),
        Frame::Mini(m) => {
            let again = MiniFrame::new(m.scall, m.ts16, m.payload.clone());
            assert_eq!(again.as_ref().ok(), Some(&m), "mini constructor");
            // The engine rebuilds the 32-bit timestamp from the low 16 bits.
            let last = u32::from_be_bytes([mode, m.ts16 as u8, (m.ts16 >> 8) as u8, mode]);
            let ts = unwrap_mini(last, m.ts16);
            assert_eq!(ts & 0xFFFF, u32::from(m.ts16));
            let d = ts.wrapping_sub(last) as i32;
            assert!((-MINI_TS_WINDOW_MS..=MINI_TS_WINDOW_MS).contains(&d));
        }
        Frame::Video(v) => {
            let again = VideoFrame::new(v.scall, v.marker, v.ts15, v.payload.clone());
            assert_eq!(again.as_ref().ok(), Some(&v), "video constructor");
        }
        Frame::Trunk(t) => {
            let again = TrunkFrame::new(t.ts, t.timestamps, t.entries.clone());
            assert_eq!(again.as_ref().ok(), Some(&t), "trunk constructor");
            let minis: Vec<MiniFrame> = t.minis().collect();
            let live: Vec<_> = t
                .entries
                .iter()
                .filter(|e| e.callno & CALLNO_MASK != 0)
                .collect();
            assert_eq!(minis.len(), live.len(), "one mini frame per live entry");
            for (m, e) in minis.iter().zip(live) {
                assert_eq!(m.scall, e.callno & CALLNO_MASK);
                assert_eq!(m.payload, e.payload);
                if let Some(ts16) = e.ts16 {
                    assert_eq!(m.ts16, ts16);
                }
                // Each one is a valid mini frame on its own.
                let bytes = Frame::Mini(m.clone()).to_bytes();
                assert_eq!(frame::parse(&bytes).ok(), Some(Frame::Mini(m.clone())));
            }
        }
    }
});
