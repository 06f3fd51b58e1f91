//! IPv4/UDP packets: what the tunnel carries around each IAX2 datagram.
//!
//! A WireGuard tunnel moves IP packets, while the engine speaks UDP datagrams, so the tunnel
//! transport wraps each outgoing datagram in a 28-byte IPv4 and UDP header ([`write_udp`]) and
//! unwraps what the peer sent ([`parse_udp`]). The parser is strict: a packet that a kernel's IP
//! stack would refuse (bad checksum, a fragment, lengths that disagree) is refused here too,
//! with a typed reason the transport counts.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

/// IPv4 header without options, then the UDP header.
pub const HEADER_LEN: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN;
const IPV4_HEADER_LEN: usize = 20;
const UDP_HEADER_LEN: usize = 8;
const PROTO_UDP: u8 = 17;
/// Hop limit of the packets we build; the peer's stack decrements it when it routes them on.
const TTL: u8 = 64;
/// Largest IPv4 packet (the total length is a 16-bit field).
pub const MAX_PACKET: usize = 65_535;

/// Why a packet from the tunnel is not a UDP datagram for us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PacketError {
    /// Shorter than the headers it claims.
    Truncated,
    /// Not IPv4 (the tunnel carries IPv4 only).
    NotIpv4,
    /// The header length field is below 5 words or past the packet.
    BadHeaderLength,
    /// The total length disagrees with the packet.
    BadTotalLength,
    BadHeaderChecksum,
    /// A fragment: IAX2 datagrams are never fragmented inside the tunnel.
    Fragment,
    /// Another protocol than UDP.
    NotUdp,
    /// The UDP length disagrees with the IP packet.
    BadUdpLength,
    BadUdpChecksum,
    /// A datagram too long for one IPv4 packet (when building).
    TooLong,
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            PacketError::Truncated => "truncated IPv4/UDP packet",
            PacketError::NotIpv4 => "not an IPv4 packet",
            PacketError::BadHeaderLength => "bad IPv4 header length",
            PacketError::BadTotalLength => "IPv4 total length disagrees with the packet",
            PacketError::BadHeaderChecksum => "bad IPv4 header checksum",
            PacketError::Fragment => "IPv4 fragment",
            PacketError::NotUdp => "not a UDP packet",
            PacketError::BadUdpLength => "UDP length disagrees with the packet",
            PacketError::BadUdpChecksum => "bad UDP checksum",
            PacketError::TooLong => "datagram too long for an IPv4 packet",
        };
        f.write_str(text)
    }
}

impl std::error::Error for PacketError {}

/// A UDP datagram found in an IPv4 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram<'a> {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub payload: &'a [u8],
}

/// The bytes `write_udp` produces for a payload of `payload_len` bytes.
pub fn packet_len(payload_len: usize) -> usize {
    HEADER_LEN + payload_len
}

/// Write an IPv4/UDP packet carrying `head` then `body` (either may be empty) into the front of
/// `out`; returns its length. `id` is the IPv4 identification (any value: never fragmented).
pub fn write_udp(
    out: &mut [u8],
    src: SocketAddrV4,
    dst: SocketAddrV4,
    id: u16,
    head: &[u8],
    body: &[u8],
) -> Result<usize, PacketError> {
    let payload_len = head.len() + body.len();
    let total = packet_len(payload_len);
    let total16 = u16::try_from(total).map_err(|_| PacketError::TooLong)?;
    let udp_len = total16 - IPV4_HEADER_LEN as u16;
    let packet = out.get_mut(..total).ok_or(PacketError::TooLong)?;
    let (ip, rest) = packet.split_at_mut(IPV4_HEADER_LEN);
    let (udp, payload) = rest.split_at_mut(UDP_HEADER_LEN);
    let (p_head, p_body) = payload.split_at_mut(head.len());
    p_head.copy_from_slice(head);
    p_body.copy_from_slice(body);

    ip.copy_from_slice(&[
        0x45, // version 4, 5 header words
        0,    // DSCP/ECN
        0, 0, // total length
        0, 0, // identification
        0, 0, // flags and fragment offset: none
        TTL, PROTO_UDP, 0, 0, // header checksum
        0, 0, 0, 0, // source
        0, 0, 0, 0, // destination
    ]);
    put16(ip, 2, total16);
    put16(ip, 4, id);
    put_addr(ip, 12, *src.ip());
    put_addr(ip, 16, *dst.ip());
    let csum = !fold(sum(ip, 0));
    put16(ip, 10, csum);

    put16(udp, 0, src.port());
    put16(udp, 2, dst.port());
    put16(udp, 4, udp_len);
    put16(udp, 6, 0);
    let csum = udp_checksum(*src.ip(), *dst.ip(), udp_len, udp, payload_sum(head, body));
    put16(udp, 6, csum);
    Ok(total)
}

/// The UDP datagram in an IPv4 packet, checked as an IP stack would check it. Bytes past the
/// total length (a tunnel's padding) are ignored.
pub fn parse_udp(packet: &[u8]) -> Result<UdpDatagram<'_>, PacketError> {
    let first = *packet.first().ok_or(PacketError::Truncated)?;
    if first >> 4 != 4 {
        return Err(PacketError::NotIpv4);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < IPV4_HEADER_LEN {
        return Err(PacketError::BadHeaderLength);
    }
    let header = packet.get(..ihl).ok_or(PacketError::BadHeaderLength)?;
    let total = usize::from(get16(header, 2));
    if total < ihl || total > packet.len() {
        return Err(PacketError::BadTotalLength);
    }
    if fold(sum(header, 0)) != 0xffff {
        return Err(PacketError::BadHeaderChecksum);
    }
    // More-fragments flag or a fragment offset: part of a larger datagram.
    if get16(header, 6) & 0x3fff != 0 {
        return Err(PacketError::Fragment);
    }
    if header.get(9) != Some(&PROTO_UDP) {
        return Err(PacketError::NotUdp);
    }
    let src_ip = get_addr(header, 12);
    let dst_ip = get_addr(header, 16);
    let udp_all = packet.get(ihl..total).ok_or(PacketError::BadTotalLength)?;
    let udp = udp_all
        .get(..UDP_HEADER_LEN)
        .ok_or(PacketError::Truncated)?;
    let udp_len = get16(udp, 4);
    if usize::from(udp_len) < UDP_HEADER_LEN || usize::from(udp_len) > udp_all.len() {
        return Err(PacketError::BadUdpLength);
    }
    let datagram = udp_all
        .get(..usize::from(udp_len))
        .ok_or(PacketError::BadUdpLength)?;
    let payload = datagram.get(UDP_HEADER_LEN..).unwrap_or(&[]);
    // Zero means the sender did not compute one (allowed over IPv4).
    if get16(udp, 6) != 0 {
        let mut acc = pseudo_sum(src_ip, dst_ip, udp_len);
        acc = sum(datagram, acc);
        if fold(acc) != 0xffff {
            return Err(PacketError::BadUdpChecksum);
        }
    }
    Ok(UdpDatagram {
        src: SocketAddrV4::new(src_ip, get16(udp, 0)),
        dst: SocketAddrV4::new(dst_ip, get16(udp, 2)),
        payload,
    })
}

/// An IPv4 network (`address/prefix`), as WireGuard's allowed IPs list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Net {
    network: u32,
    prefix: u8,
}

impl Ipv4Net {
    /// `addr/prefix`; host bits are cleared (wg(8) accepts `10.0.0.1/24` as `10.0.0.0/24`).
    /// None for a prefix over 32.
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Option<Ipv4Net> {
        if prefix > 32 {
            return None;
        }
        Some(Ipv4Net {
            network: u32::from(addr) & mask(prefix),
            prefix,
        })
    }

    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & mask(self.prefix) == self.network
    }

    pub fn addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network)
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.prefix)
    }
}

fn mask(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn put16(buf: &mut [u8], at: usize, value: u16) {
    if let Some(dst) = buf.get_mut(at..at + 2) {
        dst.copy_from_slice(&value.to_be_bytes());
    }
}

fn put_addr(buf: &mut [u8], at: usize, addr: Ipv4Addr) {
    if let Some(dst) = buf.get_mut(at..at + 4) {
        dst.copy_from_slice(&addr.octets());
    }
}

fn get16(buf: &[u8], at: usize) -> u16 {
    match buf.get(at..at + 2) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

fn get_addr(buf: &[u8], at: usize) -> Ipv4Addr {
    match buf.get(at..at + 4) {
        Some(&[a, b, c, d]) => Ipv4Addr::new(a, b, c, d),
        _ => Ipv4Addr::UNSPECIFIED,
    }
}

/// The Internet checksum's running sum (RFC 1071) of `data` from offset 0, added to `acc`.
/// An odd length is padded with a zero byte.
fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        if let &[a, b] = w {
            acc += u64::from(u16::from_be_bytes([a, b]));
        }
    }
    if let &[last] = words.remainder() {
        acc += u64::from(u16::from_be_bytes([last, 0]));
    }
    acc
}

/// The sum of a payload given in two parts, as if they were one buffer.
fn payload_sum(head: &[u8], body: &[u8]) -> u64 {
    if head.len() % 2 == 0 {
        return sum(body, sum(head, 0));
    }
    // The head's last byte pairs with the body's first.
    let (even, last) = head.split_at(head.len() - 1);
    let mut acc = sum(even, 0);
    let next = body.first().copied().unwrap_or(0);
    acc += u64::from(u16::from_be_bytes([
        last.first().copied().unwrap_or(0),
        next,
    ]));
    sum(body.get(1..).unwrap_or(&[]), acc)
}

fn pseudo_sum(src: Ipv4Addr, dst: Ipv4Addr, udp_len: u16) -> u64 {
    let mut acc = sum(&src.octets(), 0);
    acc = sum(&dst.octets(), acc);
    acc + u64::from(PROTO_UDP) + u64::from(udp_len)
}

fn udp_checksum(src: Ipv4Addr, dst: Ipv4Addr, udp_len: u16, udp_header: &[u8], body: u64) -> u16 {
    let acc = sum(udp_header, pseudo_sum(src, dst, udp_len)) + body;
    match !fold(acc) {
        // Zero would mean "no checksum": RFC 768 sends all ones instead.
        0 => 0xffff,
        c => c,
    }
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(ip: [u8; 4], port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::from(ip), port)
    }

    fn build(head: &[u8], body: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; packet_len(head.len() + body.len())];
        let n = write_udp(
            &mut buf,
            a([10, 8, 0, 2], 4569),
            a([10, 8, 0, 1], 4570),
            7,
            head,
            body,
        )
        .expect("fits");
        assert_eq!(n, buf.len());
        buf
    }

    #[test]
    fn builds_what_an_ip_stack_expects() {
        let pkt = build(&[0x80, 0x01], &[0xde, 0xad, 0xbe]);
        assert_eq!(pkt.len(), 33);
        assert_eq!(&pkt[..4], &[0x45, 0, 0, 33]);
        assert_eq!(pkt[8], 64);
        assert_eq!(pkt[9], 17);
        assert_eq!(&pkt[12..16], &[10, 8, 0, 2]);
        assert_eq!(&pkt[16..20], &[10, 8, 0, 1]);
        assert_eq!(&pkt[20..26], &[0x11, 0xd9, 0x11, 0xda, 0, 13]);
        // The header checksum makes the header sum to all ones.
        assert_eq!(fold(sum(&pkt[..20], 0)), 0xffff);
        let d = parse_udp(&pkt).expect("parses");
        assert_eq!(d.src, a([10, 8, 0, 2], 4569));
        assert_eq!(d.dst, a([10, 8, 0, 1], 4570));
        assert_eq!(d.payload, &[0x80, 0x01, 0xde, 0xad, 0xbe]);
    }

    #[test]
    fn a_known_packet_has_the_known_checksums() {
        // Both values computed independently with Python's struct over the same headers.
        let pkt = build(b"hi", b"");
        assert_eq!(u16::from_be_bytes([pkt[10], pkt[11]]), 0x66b6);
        assert_eq!(u16::from_be_bytes([pkt[26], pkt[27]]), 0x5fab);
    }

    #[test]
    fn padding_after_the_total_length_is_ignored() {
        let mut pkt = build(b"abc", b"def");
        pkt.extend_from_slice(&[0; 10]);
        assert_eq!(parse_udp(&pkt).expect("parses").payload, b"abcdef");
    }

    #[test]
    fn a_zero_udp_checksum_is_not_checked() {
        let mut pkt = build(b"abc", b"");
        pkt[26] = 0;
        pkt[27] = 0;
        assert!(parse_udp(&pkt).is_ok());
    }

    #[test]
    fn damaged_packets_are_refused_with_their_reason() {
        let good = build(b"hello", b" world");
        let case = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut p = good.clone();
            f(&mut p);
            parse_udp(&p).map(|_| ())
        };
        assert_eq!(parse_udp(&[]).map(|_| ()), Err(PacketError::Truncated));
        assert_eq!(case(&|p| p[0] = 0x65), Err(PacketError::NotIpv4));
        assert_eq!(case(&|p| p[0] = 0x44), Err(PacketError::BadHeaderLength));
        assert_eq!(case(&|p| p[0] = 0x4f), Err(PacketError::BadHeaderLength));
        assert_eq!(case(&|p| p.truncate(30)), Err(PacketError::BadTotalLength));
        assert_eq!(case(&|p| p[15] ^= 1), Err(PacketError::BadHeaderChecksum));
        let refix = |p: &mut Vec<u8>| {
            p[10] = 0;
            p[11] = 0;
            let c = !fold(sum(&p[..20], 0));
            p[10..12].copy_from_slice(&c.to_be_bytes());
        };
        assert_eq!(
            case(&|p| {
                p[6] = 0x20; // more fragments
                refix(p);
            }),
            Err(PacketError::Fragment)
        );
        assert_eq!(
            case(&|p| {
                p[9] = 6;
                refix(p);
            }),
            Err(PacketError::NotUdp)
        );
        assert_eq!(case(&|p| p[25] = 200), Err(PacketError::BadUdpLength));
        assert_eq!(case(&|p| p[25] = 3), Err(PacketError::BadUdpLength));
        assert_eq!(case(&|p| p[30] ^= 0x40), Err(PacketError::BadUdpChecksum));
    }

    #[test]
    fn too_long_or_too_small_buffers_are_errors() {
        let mut small = [0u8; 20];
        let src = a([1, 2, 3, 4], 1);
        assert_eq!(
            write_udp(&mut small, src, src, 0, b"x", b""),
            Err(PacketError::TooLong)
        );
        let big = vec![0u8; MAX_PACKET];
        let mut out = vec![0u8; MAX_PACKET + 100];
        assert_eq!(
            write_udp(&mut out, src, src, 0, &big, b""),
            Err(PacketError::TooLong)
        );
    }

    #[test]
    fn networks_match_their_prefix() {
        let net = Ipv4Net::new(Ipv4Addr::new(10, 8, 0, 77), 24).expect("net");
        assert_eq!(net.to_string(), "10.8.0.0/24");
        assert!(net.contains(Ipv4Addr::new(10, 8, 0, 1)));
        assert!(!net.contains(Ipv4Addr::new(10, 8, 1, 1)));
        let all = Ipv4Net::new(Ipv4Addr::new(1, 2, 3, 4), 0).expect("net");
        assert!(all.contains(Ipv4Addr::new(192, 0, 2, 1)));
        let host = Ipv4Net::new(Ipv4Addr::new(10, 8, 0, 1), 32).expect("net");
        assert!(host.contains(Ipv4Addr::new(10, 8, 0, 1)));
        assert!(!host.contains(Ipv4Addr::new(10, 8, 0, 2)));
        assert!(Ipv4Net::new(Ipv4Addr::LOCALHOST, 33).is_none());
    }

    proptest! {
        #[test]
        fn round_trips_any_split_of_any_payload(
            payload in proptest::collection::vec(any::<u8>(), 0..1500),
            split in any::<prop::sample::Index>(),
            src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(),
            sport in any::<u16>(), dport in any::<u16>(), id in any::<u16>(),
        ) {
            let cut = if payload.is_empty() { 0 } else { split.index(payload.len() + 1) };
            let (head, body) = payload.split_at(cut);
            let mut buf = vec![0u8; packet_len(payload.len()) + 16];
            let n = write_udp(&mut buf, a(src, sport), a(dst, dport), id, head, body)
                .expect("fits");
            let d = parse_udp(&buf[..n]).expect("parses");
            prop_assert_eq!(d.src, a(src, sport));
            prop_assert_eq!(d.dst, a(dst, dport));
            prop_assert_eq!(d.payload, &payload[..]);
            // The checksum is the one computed over the payload as one buffer.
            let mut flat = vec![0u8; packet_len(payload.len())];
            write_udp(&mut flat, a(src, sport), a(dst, dport), id, &payload, &[]).expect("fits");
            prop_assert_eq!(&flat[..], &buf[..n]);
        }

        #[test]
        fn never_panics_on_garbage(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_udp(&data);
        }
    }
}
