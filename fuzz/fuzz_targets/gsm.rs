//! The GSM 06.10 decoder on arbitrary frames, and the encoder on arbitrary PCM.
//!
//! Decoding must never panic; a frame is refused exactly when its signature nibble is not 0xD,
//! and a refused frame leaves the decoder as it was; an accepted frame's parameters repack to
//! the same 33 bytes; decoded samples have their three low bits clear (clause 4.3.7); what the
//! encoder makes always carries the signature and decodes.
#![no_main]

use _core::gsm::{Decoder, Encoder, Params, FRAME_BYTES, FRAME_SAMPLES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut dec = Decoder::default();
    let mut out = [0i16; FRAME_SAMPLES];
    for chunk in data.chunks_exact(FRAME_BYTES) {
        let frame: &[u8; FRAME_BYTES] = chunk.try_into().expect("33 bytes");
        let before = dec.clone();
        match dec.decode(frame, &mut out) {
            Ok(()) => {
                assert_eq!(frame[0] >> 4, 0xD);
                let p = Params::unpack(frame).expect("accepted");
                assert_eq!(&p.pack(), frame);
                assert!(out.iter().all(|&s| s & 7 == 0));
            }
            Err(_) => {
                assert_ne!(frame[0] >> 4, 0xD);
                assert_eq!(format!("{dec:?}"), format!("{before:?}"));
            }
        }
    }
    let mut enc = Encoder::default();
    let mut dec = Decoder::default();
    for chunk in data.chunks_exact(FRAME_SAMPLES * 2) {
        let pcm: [i16; FRAME_SAMPLES] =
            std::array::from_fn(|i| i16::from_le_bytes([chunk[2 * i], chunk[2 * i + 1]]));
        let frame = enc.encode(&pcm);
        assert_eq!(frame[0] >> 4, 0xD);
        assert!(dec.decode(&frame, &mut out).is_ok());
    }
});
