use super::*;
use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

const KEY_A: [u8; 32] = [1; 32];
const KEY_B: [u8; 32] = [2; 32];
const KEY_C: [u8; 32] = [3; 32];

fn inner(last: u8, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, last), port)
}

fn net(spec: &str) -> Ipv4Net {
    let (addr, prefix) = spec.split_once('/').expect("cidr");
    Ipv4Net::new(addr.parse().expect("addr"), prefix.parse().expect("prefix")).expect("net")
}

fn tunnel(
    key: [u8; 32],
    peer: [u8; 32],
    address: SocketAddrV4,
    endpoint: Option<SocketAddr>,
    keepalive: Option<u16>,
) -> WgTransport {
    WgTransport::bind(
        WgConfig {
            private_key: StaticSecret::from(key),
            peer_public_key: PublicKey::from(public_key(peer)),
            preshared_key: None,
            address,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            endpoint,
            allowed_ips: vec![net("10.9.0.0/24")],
            persistent_keepalive: keepalive,
        },
        4,
    )
    .expect("bind")
}

/// A (10.9.0.1:4569) knows B's endpoint; B (10.9.0.2:4570) waits to be contacted.
fn pair() -> (WgTransport, WgTransport) {
    let b = tunnel(KEY_B, KEY_A, inner(2, 4570), None, None);
    let a = tunnel(KEY_A, KEY_B, inner(1, 4569), Some(b.outer_addr()), None);
    (a, b)
}

/// Receive on every transport until `want` datagrams reached `on` (or 5 s passed).
fn pump(all: &[&WgTransport], on: &WgTransport, want: usize) -> Vec<(Vec<u8>, SocketAddr)> {
    let mut got = Vec::new();
    let mut batch = RecvBatch::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < want && Instant::now() < deadline {
        let mut any = false;
        for t in all {
            let n = t.recv_batch(&mut batch).expect("recv");
            any |= n > 0;
            if std::ptr::eq(*t, on) {
                got.extend(batch.iter().map(|(d, m)| (d.to_vec(), m.from)));
            }
        }
        if !any {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    got
}

/// Receive on every transport until nothing has arrived for 50 ms; how many datagrams
/// each one handed over.
fn settle(all: &[&WgTransport]) -> Vec<usize> {
    let mut batch = RecvBatch::new();
    let mut got = vec![0; all.len()];
    let mut quiet_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(5);
    while quiet_since.elapsed() < Duration::from_millis(50) && Instant::now() < deadline {
        for (t, n) in all.iter().zip(got.iter_mut()) {
            let k = t.recv_batch(&mut batch).expect("recv");
            if k > 0 {
                *n += k;
                quiet_since = Instant::now();
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    got
}

fn stats(t: &WgTransport) -> TunnelStats {
    t.tunnel().expect("a tunnel")
}

#[test]
fn two_tunnels_carry_datagrams_both_ways() {
    let (a, b) = pair();
    // No session yet: the datagram waits in the tunnel while the handshake runs.
    a.send_to(b"hello from a", SocketAddr::V4(inner(2, 4570)))
        .expect("queued");
    assert_eq!(stats(&a).state, TunnelState::Handshaking);
    let got = pump(&[&a, &b], &b, 1);
    assert_eq!(
        got,
        vec![(b"hello from a".to_vec(), SocketAddr::V4(inner(1, 4569)))]
    );

    // B learnt where A is from A's authenticated packets, and answers in a batch.
    let bodies: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100 + usize::from(i)]).collect();
    let out: Vec<OutDatagram<'_>> = bodies
        .iter()
        .map(|body| OutDatagram {
            to: SocketAddr::V4(inner(1, 4569)),
            head: b"mini",
            body,
        })
        .collect();
    let report = b.send_batch(&out);
    assert_eq!((report.sent, report.failed), (10, 0));
    let got = pump(&[&a, &b], &a, 10);
    assert_eq!(got.len(), 10);
    for ((data, from), body) in got.iter().zip(&bodies) {
        assert_eq!(from, &SocketAddr::V4(inner(2, 4570)));
        assert_eq!(&data[..4], b"mini");
        assert_eq!(&data[4..], &body[..]);
    }
    settle(&[&a, &b]);
    let (sa, sb) = (stats(&a), stats(&b));
    assert_eq!((sa.state, sb.state), (TunnelState::Up, TunnelState::Up));
    assert_eq!((sa.handshakes, sb.handshakes), (1, 1));
    assert_eq!(sa.handshake_attempts, 1);
    assert_eq!(sb.endpoint, Some(a.outer_addr()));
    assert!(sa.last_handshake.is_some() && sa.rx_bytes > 0 && sa.tx_bytes > 0);
    assert_eq!(
        sa.dropped_outer + sa.dropped_inner + sb.dropped_outer + sb.dropped_inner,
        0
    );
    assert_eq!(sa.public_key, public_key(KEY_A));
}

#[test]
fn a_wrong_peer_key_never_completes_a_handshake() {
    let b = tunnel(KEY_B, KEY_A, inner(2, 4570), None, None);
    // A expects C's key at B's endpoint, and B does not know A's key as C's.
    let a = tunnel(KEY_A, KEY_C, inner(1, 4569), Some(b.outer_addr()), None);
    a.send_to(b"x", SocketAddr::V4(inner(2, 4570)))
        .expect("queued");
    assert_eq!(settle(&[&a, &b]), vec![0, 0]);
    let (sa, sb) = (stats(&a), stats(&b));
    assert_eq!(sa.state, TunnelState::Handshaking);
    assert_eq!((sa.handshakes, sa.handshake_attempts), (0, 1));
    assert_eq!(sb.state, TunnelState::Down);
    assert_eq!((sb.dropped_outer, sb.endpoint), (1, None));
    assert!(sa.last_handshake.is_none());
}

#[test]
fn the_longest_datagram_crosses_and_a_longer_one_is_refused() {
    let (a, b) = pair();
    let to = SocketAddr::V4(inner(2, 4570));
    // Queued while the handshake runs, then flushed by it: boringtun's buffers hold it.
    let longest = vec![0x5a; MAX_DATAGRAM];
    a.send_to(&longest, to).expect("queued");
    let got = pump(&[&a, &b], &b, 1);
    assert_eq!(got.first().map(|g| g.0.len()), Some(MAX_DATAGRAM));
    // And once the session is up, sealed at once.
    a.send_to(&longest, to).expect("sent");
    assert_eq!(pump(&[&a, &b], &b, 1).len(), 1);
    let err = a
        .send_to(&vec![0u8; MAX_DATAGRAM + 1], to)
        .expect_err("too long");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert_eq!(stats(&b).dropped_outer, 0);
}

#[test]
fn destinations_outside_the_allowed_ips_have_no_route() {
    let (a, _b) = pair();
    let err = a
        .send_to(b"x", SocketAddr::from(([192, 0, 2, 1], 4569)))
        .expect_err("no route");
    assert_eq!(err.kind(), io::ErrorKind::HostUnreachable);
    let v6 = a
        .send_to(b"x", SocketAddr::from(([0u16, 0, 0, 0, 0, 0, 0, 1], 4569)))
        .expect_err("no route");
    assert_eq!(v6.kind(), io::ErrorKind::HostUnreachable);
    assert_eq!(stats(&a).no_route, 2);
    assert_eq!(stats(&a).handshake_attempts, 0);
}

/// A small deterministic generator for the garbage below.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn garbage_outer_datagrams_are_counted_and_dropped() {
    let (a, b) = pair();
    a.send_to(b"up", SocketAddr::V4(inner(2, 4570)))
        .expect("queued");
    assert_eq!(pump(&[&a, &b], &b, 1).len(), 1);
    settle(&[&a, &b]);
    let before = stats(&b).dropped_outer;
    let attacker = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut sent = 0u64;
    // Every WireGuard message type at its exact length (the parser's fast path), and random
    // lengths and types around them.
    for i in 0..600 {
        let len = match i % 6 {
            0 => 148,
            1 => 92,
            2 => 64,
            3 => 32 + (rng.next() % 200) as usize,
            4 => (rng.next() % 40) as usize,
            _ => (rng.next() % 1500) as usize,
        };
        let mut data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if let Some(first) = data.first_mut() {
            *first = (i % 5) as u8;
        }
        if data.len() >= 4 {
            data[1..4].fill(0);
        }
        attacker.send_to(&data, b.outer_addr()).expect("send");
        sent += 1;
        if i % 50 == 0 {
            settle(&[&a, &b]);
        }
    }
    attacker
        .send_to(&vec![4u8; SLOT + 10], b.outer_addr())
        .expect("send");
    sent += 1;
    settle(&[&a, &b]);
    let sb = stats(&b);
    assert_eq!(sb.dropped_outer - before, sent);
    // The session survived, and the endpoint did not move to the attacker.
    assert_eq!(sb.endpoint, Some(a.outer_addr()));
    a.send_to(b"still up", SocketAddr::V4(inner(2, 4570)))
        .expect("sent");
    let got = pump(&[&a, &b], &b, 1);
    assert_eq!(got.first().map(|g| g.0.as_slice()), Some(&b"still up"[..]));
}

/// A bare boringtun peer on a plain socket, to send inner packets our transport never would.
struct RawPeer {
    tunn: Tunn,
    socket: UdpSocket,
    to: SocketAddr,
    buf: Vec<u8>,
}

impl RawPeer {
    fn new(key: [u8; 32], peer: [u8; 32], to: SocketAddr) -> RawPeer {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        RawPeer {
            tunn: Tunn::new(
                StaticSecret::from(key),
                PublicKey::from(public_key(peer)),
                None,
                None,
                7,
                None,
            ),
            socket,
            to,
            buf: vec![0; 4096],
        }
    }

    fn send_ip(&mut self, packet: &[u8]) {
        if let TunnResult::WriteToNetwork(p) = self.tunn.encapsulate(packet, &mut self.buf) {
            self.socket.send_to(p, self.to).expect("send");
        }
    }

    /// Read what the transport sent and answer as boringtun asks.
    fn poll(&mut self) {
        let mut rx = [0u8; 4096];
        while let Ok((n, _)) = self.socket.recv_from(&mut rx) {
            let mut result = self.tunn.decapsulate(None, &rx[..n], &mut self.buf);
            while let TunnResult::WriteToNetwork(p) = result {
                self.socket.send_to(p, self.to).expect("send");
                result = self.tunn.decapsulate(None, &[], &mut self.buf);
            }
        }
    }
}

fn udp_packet(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; ipv4::packet_len(payload.len())];
    ipv4::write_udp(&mut p, src, dst, 1, payload, &[]).expect("fits");
    p
}

/// An IPv6 header and an 8-byte UDP header (the tunnel carries IPv4 only).
fn ipv6_udp() -> Vec<u8> {
    let mut p = vec![0u8; 48];
    p[0] = 0x60;
    p[5] = 8;
    p[6] = 17;
    p[7] = 64;
    p
}

#[test]
fn authenticated_packets_not_for_us_are_refused() {
    let ours = tunnel(KEY_B, KEY_A, inner(2, 4570), None, None);
    // The engine's upkeep keeps boringtun's clock current.
    ours.maintain();
    let mut peer = RawPeer::new(KEY_A, KEY_B, ours.outer_addr());
    let me = inner(2, 4570);
    let them = inner(1, 4569);
    // The handshake, carried by the first (good) packet.
    peer.send_ip(&udp_packet(them, me, b"first"));
    for _ in 0..20 {
        settle(&[&ours]);
        peer.poll();
    }
    let mut bad_checksum = udp_packet(them, me, b"sum");
    let last = bad_checksum.len() - 1;
    bad_checksum[last] ^= 1;
    let mut tcp = udp_packet(them, me, b"tcp");
    tcp[9] = 6;
    let refused = [
        udp_packet(inner(1, 4569), inner(2, 9999), b"wrong port"),
        udp_packet(inner(1, 4569), inner(3, 4570), b"wrong address"),
        udp_packet(
            SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 9), 4569),
            me,
            b"not allowed",
        ),
        bad_checksum,
        tcp,
        ipv6_udp(),
    ];
    for p in &refused {
        peer.send_ip(p);
    }
    peer.send_ip(&udp_packet(them, me, b"last"));
    let got = pump(&[&ours], &ours, 1);
    let s = stats(&ours);
    assert_eq!(s.dropped_inner, refused.len() as u64, "{s:?}");
    assert_eq!(s.dropped_outer, 0);
    assert_eq!(got, vec![(b"last".to_vec(), SocketAddr::V4(them))]);
}

#[test]
fn a_keepalive_brings_the_tunnel_up_by_itself() {
    let b = tunnel(KEY_B, KEY_A, inner(2, 4570), None, None);
    let a = tunnel(KEY_A, KEY_B, inner(1, 4569), Some(b.outer_addr()), Some(25));
    assert_eq!(stats(&a).state, TunnelState::Down);
    // The first upkeep starts the handshake; the state change is reported once.
    assert!(a.maintain());
    assert_eq!(stats(&a).state, TunnelState::Handshaking);
    assert!(!a.maintain());
    settle(&[&a, &b]);
    assert!(a.maintain());
    assert_eq!(stats(&a).state, TunnelState::Up);
    assert!(!b.maintain() || stats(&b).state == TunnelState::Up);
    assert_eq!(stats(&b).state, TunnelState::Up);
    assert_eq!(stats(&a).handshakes, 1);
}

#[test]
fn the_engine_runs_over_the_tunnel() {
    use crate::engine::{Engine, EngineConfig};
    use crate::frame::{Frame, FullFrame};
    let (a, b) = pair();
    let cfg = EngineConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    let ea = Engine::start_with(cfg.clone(), Box::new(a)).expect("engine a");
    let eb = Engine::start_with(cfg, Box::new(b)).expect("engine b");
    assert_eq!(ea.local_addr(), SocketAddr::V4(inner(1, 4569)));
    let mut poke = FullFrame::new(6, 30).expect("POKE");
    poke.scall = 5;
    ea.send_to(&Frame::Full(poke).to_bytes(), eb.local_addr())
        .expect("send");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.is_empty() && Instant::now() < deadline {
        got = eb.drain();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].from, SocketAddr::V4(inner(1, 4569)));
    assert_eq!(got[0].frame.scall, 5);
    let t = ea.tunnel().expect("tunnel");
    assert_eq!(t.handshakes, 1);
}
