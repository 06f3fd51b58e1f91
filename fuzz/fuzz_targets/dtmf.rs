//! The DTMF detector on arbitrary PCM, fed in arbitrary chunk sizes at either rate.
//!
//! It must never panic, report only keypad digits, alternate presses and releases of the
//! same digit, agree with `current()` once its events are drained, and never grow its buffers.
#![no_main]

use _core::dtmf::{DtmfDetector, DtmfEvent, KEYS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let rate = if mode & 1 == 0 { 8000 } else { 16000 };
    let mut det = DtmfDetector::new(rate).expect("a supported rate");
    let capacity = det.capacity_samples();
    let mut held: Option<char> = None;
    let mut rest = rest;
    while let Some((&n, tail)) = rest.split_first() {
        // A chunk of up to 255 samples; the bytes are shifted so the samples reach full scale.
        let take = (usize::from(n) * 2).min(tail.len() & !1);
        let (chunk, tail) = tail.split_at(take);
        rest = tail;
        let pcm: Vec<i16> = chunk
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        let mut event = det.process(&pcm);
        while let Some(e) = event {
            assert!(KEYS.iter().flatten().any(|&k| k == e.digit()), "{e:?}");
            match e {
                DtmfEvent::Pressed(c) => {
                    assert_eq!(held, None, "pressed {c} while another digit was held");
                    held = Some(c);
                }
                DtmfEvent::Released(c) => {
                    assert_eq!(held, Some(c), "released {c} that was not held");
                    held = None;
                }
            }
            event = det.next_event();
        }
        assert_eq!(det.current(), held, "current() disagrees with the events");
        if held.is_some() {
            assert!(det.busy());
        }
        if n == 0xFF && mode & 2 != 0 {
            det.reset();
            held = None;
        }
    }
    assert_eq!(
        det.capacity_samples(),
        capacity,
        "the detector's buffers grew"
    );
});
