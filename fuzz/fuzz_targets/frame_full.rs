//! IAX2 full frames and their information elements.
//!
//! Any datagram with the F bit set must parse as a full frame or fail with a `FrameError`;
//! a parsed frame must write back to exactly the bytes it came from, every IE's typed value
//! must survive an encode/decode round trip, and a secret IE's body never reaches `Debug`.
#![no_main]

use _core::frame::{self, Frame};
use _core::ie::{self, Ie};
use libfuzzer_sys::fuzz_target;

fn check_ie(ie: &Ie) {
    let shown = format!("{ie:?}");
    if ie::is_secret(ie.id) && !ie.data.is_empty() {
        assert!(shown.contains("<redacted>"), "secret IE shown: {shown}");
    }
    if let Some(value) = ie.value() {
        // Encoding may refuse a value (a lossy string grown past 255 bytes, a date out of
        // range); what it accepts must read back as the same value.
        if let Ok(again) = Ie::from_value(ie.id, &value) {
            assert_eq!(again.value(), Some(value), "IE {} value round trip", ie.id);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The same bytes as a bare IE list (an IAX frame's body).
    if let Ok(ies) = ie::parse_ies(data, 0) {
        let mut out = Vec::new();
        ie::write_ies(&ies, &mut out);
        assert_eq!(out, data, "IE list round trip");
        ies.iter().for_each(check_ie);
    }

    // And as a datagram with the F bit forced, so every input exercises the full-frame path.
    let mut buf = data.to_vec();
    if let Some(first) = buf.first_mut() {
        *first |= 0x80;
    }
    match frame::parse(&buf) {
        Ok(Frame::Full(f)) => {
            assert_eq!(f.encoded_len(), buf.len(), "encoded_len");
            assert_eq!(
                Frame::Full(f.clone()).to_bytes(),
                buf,
                "full frame round trip"
            );
            if f.is_iax() {
                assert!(f.payload.is_empty(), "an IAX frame's body is all IEs");
            } else {
                assert!(f.ies.is_empty(), "only IAX frames carry IEs");
            }
            let _ = f.subclass();
            let _ = f.video_marker();
            let _ = frame::frame_type_name(f.ftype);
            f.ies.iter().for_each(check_ie);
        }
        Ok(other) => panic!("F bit set but parsed as {other:?}"),
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
