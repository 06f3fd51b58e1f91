//! The USRP radio on arbitrary datagrams and ticks.
//!
//! Parsing must never panic; what parses and is rebuilt parses the same; the radio fed any
//! mix of datagrams and ticks never panics, never holds more frames than its bound, counts
//! every datagram as a packet or as garbage, and reports carrier edges that alternate.
#![no_main]

use _core::usrp::{self, UsrpConfig, UsrpEvent, UsrpRadio, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = usrp::parse(data) {
        let mut h = [0u8; HEADER_LEN];
        usrp::write_header(&mut h, &p.header);
        let mut again = h.to_vec();
        again.extend_from_slice(&data[HEADER_LEN..]);
        assert_eq!(usrp::parse(&again).map(|q| q.header), Ok(p.header));
    }
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let cfg = UsrpConfig {
        station_rate: if mode & 1 == 0 { 8000 } else { 16000 },
        queue_frames: 8,
        ..UsrpConfig::default()
    };
    let mut radio = UsrpRadio::new(cfg).expect("a valid config");
    let mut now = 0u64;
    let mut datagrams = 0u64;
    let mut carrier = false;
    // Each chunk: a length byte, then that many bytes as a datagram; a zero length ticks.
    let mut rest = rest;
    while let Some((&n, tail)) = rest.split_first() {
        let take = usize::from(n).min(tail.len());
        let (chunk, tail) = tail.split_at(take);
        rest = tail;
        if n == 0 {
            radio.set_keyed(mode & 2 != 0 && now % 60 == 0);
            let out = radio.tick(now, |f| {
                f.fill(i16::from(mode));
                true
            });
            if let Some(v) = out.voice {
                assert!(usrp::parse(v).is_ok());
            }
            now += 20;
        } else {
            // A datagram shorter than a voice packet can be widened to one with the magic.
            let mut buf = chunk.to_vec();
            if mode & 4 != 0 && buf.len() >= 4 {
                buf[..4].copy_from_slice(b"USRP");
                buf.resize(usrp::VOICE_PACKET_LEN, 0);
            }
            let _ = radio.receive(&buf, now);
            datagrams += 1;
        }
        assert!(radio.buffered() <= cfg.queue_frames);
        let c = radio.counters();
        assert_eq!(c.rx_packets + c.rx_garbage, datagrams);
        while let Some(e) = radio.next_event() {
            if let UsrpEvent::Carrier(on) = e {
                assert_ne!(on, carrier, "carrier edges alternate");
                carrier = on;
            }
        }
    }
});
