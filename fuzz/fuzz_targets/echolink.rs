//! EchoLink's audio packet parser on arbitrary datagrams.
//!
//! Parsing must never panic; a datagram parses exactly when it is 144 bytes starting with 0xC0
//! and payload type 3; a parsed packet rebuilds to the same bytes but for the marker bit, the
//! timestamp and the SSRC (which EchoLink leaves zero and we do not read), and its frames are
//! the datagram's own bytes.
#![no_main]

use _core::echolink::{self, AUDIO_MARKER, HEADER_LEN, PACKET_LEN, PAYLOAD_GSM};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = echolink::parse(data);
    let expected = data.len() == PACKET_LEN
        && data.first() == Some(&AUDIO_MARKER)
        && data.get(1).map(|b| b & 0x7F) == Some(PAYLOAD_GSM);
    assert_eq!(parsed.is_ok(), expected);
    if let Ok(p) = parsed {
        let frames = p.frames.map(|f| *f);
        let mut again = Vec::new();
        echolink::build(p.seq, &frames, &mut again);
        assert_eq!(again.len(), PACKET_LEN);
        assert_eq!(again[0], data[0]);
        assert_eq!(again[1], data[1] & 0x7F);
        assert_eq!(again[2..4], data[2..4]);
        assert_eq!(again[HEADER_LEN..], data[HEADER_LEN..]);
        assert_eq!(echolink::parse(&again).map(|q| q.seq), Ok(p.seq));
    }
});
