//! The inner IPv4/UDP packets of the WireGuard tunnel.
//!
//! Arbitrary bytes must parse or fail with a `PacketError`; an accepted packet's payload lies
//! inside the packet, and re-writing the datagram it carried gives a packet that parses back
//! to the same addresses and payload. Independently, a datagram built from the input must
//! survive write then parse, and any single corrupted byte of it must not panic the parser.
#![no_main]

use std::net::{Ipv4Addr, SocketAddrV4};

use _core::ipv4::{self, Ipv4Net, HEADER_LEN, MAX_PACKET};
use libfuzzer_sys::fuzz_target;

fn rewrite_and_check(src: SocketAddrV4, dst: SocketAddrV4, id: u16, payload: &[u8], split: usize) {
    let split = split.min(payload.len());
    let (head, body) = payload.split_at(split);
    let mut out = vec![0u8; ipv4::packet_len(payload.len())];
    let written = ipv4::write_udp(&mut out, src, dst, id, head, body);
    if payload.len() + HEADER_LEN > MAX_PACKET {
        assert!(written.is_err(), "an over-long datagram must be refused");
        return;
    }
    let n = written.expect("a datagram that fits is written");
    assert_eq!(n, out.len());
    let back = ipv4::parse_udp(&out).expect("a written packet parses");
    assert_eq!((back.src, back.dst, back.payload), (src, dst, payload));
}

fn addr(b: &[u8]) -> SocketAddrV4 {
    let mut a = [0u8; 6];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    SocketAddrV4::new(
        Ipv4Addr::new(a[0], a[1], a[2], a[3]),
        u16::from_be_bytes([a[4], a[5]]),
    )
}

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = ipv4::parse_udp(data) {
        let range = data.as_ptr_range();
        let p = d.payload.as_ptr_range();
        assert!(
            range.start <= p.start && p.end <= range.end,
            "payload inside the packet"
        );
        assert!(d.payload.len() + HEADER_LEN <= data.len());
        rewrite_and_check(d.src, d.dst, 0x1234, d.payload, d.payload.len() / 2);
    }

    // Build: src(6) dst(6) id(2) split(1) flip(2) payload(rest).
    if data.len() < 17 {
        return;
    }
    let (src, dst) = (addr(&data[0..6]), addr(&data[6..12]));
    let id = u16::from_be_bytes([data[12], data[13]]);
    let split = usize::from(data[14]);
    let flip = usize::from(u16::from_be_bytes([data[15], data[16]]));
    let payload = &data[17..];
    rewrite_and_check(src, dst, id, payload, split);

    // One corrupted byte: the parser may accept or refuse it, never panic.
    let mut out = vec![0u8; ipv4::packet_len(payload.len())];
    if ipv4::write_udp(&mut out, src, dst, id, payload, &[]).is_ok() {
        let at = flip % out.len();
        out[at] ^= data[14] | 1;
        let _ = ipv4::parse_udp(&out);
        let _ = ipv4::parse_udp(&out[..at]);
    }

    if let Some(net) = Ipv4Net::new(*src.ip(), data[14] % 40) {
        assert!(net.contains(*src.ip()));
        assert!(net.contains(net.addr()));
        let _ = net.to_string();
    }
});
