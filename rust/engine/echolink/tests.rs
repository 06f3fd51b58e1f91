use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::echolink::{build, PACKET_LEN};
use crate::engine::{Engine, EngineConfig, EngineError, EngineEvent};

use super::{EchoLinkDatagram, EchoLinkKind};

const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn engine() -> Engine {
    Engine::start(EngineConfig::new(SocketAddr::new(LO, 0))).expect("bind")
}

fn wait_for<F: FnMut() -> bool>(mut cond: F) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// The EchoLink records drained so far, waiting until there are `n`.
fn drain_echolink(engine: &Engine, n: usize) -> Vec<EchoLinkDatagram> {
    let mut got = Vec::new();
    wait_for(|| {
        got.extend(engine.drain_events().into_iter().filter_map(|e| match e {
            EngineEvent::EchoLink(d) => Some(d),
            _ => None,
        }));
        got.len() >= n
    });
    got
}

#[test]
fn control_and_text_reach_python_audio_does_not() {
    let engine = engine();
    let (audio, control) = engine.echolink_open(LO, 0, 0).expect("open");
    let peer = UdpSocket::bind(SocketAddr::new(LO, 0)).expect("peer");
    let from = peer.local_addr().expect("addr");
    // The engine sleeps without a clock (no legs): each of these must wake it.
    std::thread::sleep(Duration::from_millis(30));
    peer.send_to(b"\xc0\xc9\x00\x01\x00\x00\x00\x00", control)
        .expect("send RR");
    let mut packet = Vec::new();
    build(7, &[[0xD0; 33]; 4], &mut packet);
    peer.send_to(&packet, audio).expect("send audio");
    peer.send_to(b"oNDATA\rhello\0", audio).expect("send text");
    let mut got = drain_echolink(&engine, 2);
    // Each port keeps its order; which port is read first depends on when the thread woke.
    got.sort_by_key(|d| d.kind == EchoLinkKind::Text);
    assert_eq!(
        got,
        vec![
            EchoLinkDatagram {
                kind: EchoLinkKind::Control,
                data: b"\xc0\xc9\x00\x01\x00\x00\x00\x00".to_vec(),
                from
            },
            EchoLinkDatagram {
                kind: EchoLinkKind::Text,
                data: b"oNDATA\rhello\0".to_vec(),
                from
            },
        ]
    );
    let c = engine.echolink_counters();
    assert_eq!(
        (c.datagrams_in, c.audio_in, c.text_in, c.control_in),
        (3, 1, 1, 1)
    );
    assert_eq!(c.audio_unrouted, 1, "no leg has this address");
    assert_eq!(c.bytes_in, (8 + PACKET_LEN + 13) as u64);
    assert_eq!(
        engine.counters().datagrams_in,
        0,
        "the IAX2 socket saw none of it"
    );
}

#[test]
fn sends_control_from_the_control_port_and_text_from_the_audio_port() {
    let engine = engine();
    let (audio, control) = engine.echolink_open(LO, 0, 0).expect("open");
    assert_eq!(engine.echolink_addrs(), Some((audio, control)));
    let peer = UdpSocket::bind(SocketAddr::new(LO, 0)).expect("peer");
    peer.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let to = peer.local_addr().expect("addr");
    let mut buf = [0u8; 64];
    engine
        .echolink_send(EchoLinkKind::Control, b"bye", to)
        .expect("send control");
    let (n, src) = peer.recv_from(&mut buf).expect("control arrives");
    assert_eq!((&buf[..n], src), (&b"bye"[..], control));
    engine
        .echolink_send(EchoLinkKind::Text, b"oNDATA\rhi\0", to)
        .expect("send text");
    let (n, src) = peer.recv_from(&mut buf).expect("text arrives");
    assert_eq!((&buf[..n], src), (&b"oNDATA\rhi\0"[..], audio));
    let c = engine.echolink_counters();
    assert_eq!((c.datagrams_out, c.bytes_out), (2, 13));
}

#[test]
fn close_releases_the_ports_and_refuses_sends() {
    let engine = engine();
    let (audio, control) = engine.echolink_open(LO, 0, 0).expect("open");
    engine.echolink_close();
    assert_eq!(engine.echolink_addrs(), None);
    assert!(matches!(
        engine.echolink_send(EchoLinkKind::Control, b"x", control),
        Err(EngineError::EchoLinkClosed)
    ));
    // The engine thread lets go of its reference before it next waits: then the same ports
    // can be bound again.
    assert!(wait_for(|| engine
        .echolink_open(LO, audio.port(), control.port())
        .is_ok()));
    let taken = engine.echolink_open(LO, 0, 0).expect("fresh ports");
    let other = self::engine();
    match other.echolink_open(LO, taken.0.port(), 0) {
        Err(EngineError::Bind { addr, .. }) => assert_eq!(addr, taken.0),
        r => panic!("a taken port must not bind: {r:?}"),
    }
}

#[test]
fn a_flood_of_garbage_is_read_and_counted() {
    let engine = engine();
    let (audio, control) = engine.echolink_open(LO, 0, 0).expect("open");
    let peer = UdpSocket::bind(SocketAddr::new(LO, 0)).expect("peer");
    let big = vec![0xC0u8; 4000];
    peer.send_to(&big, audio).expect("send oversized");
    for i in 0..200u8 {
        peer.send_to(&[0xC0, i], audio).expect("send short audio");
    }
    peer.send_to(&[], control).expect("send empty control");
    assert!(wait_for(|| engine.echolink_counters().datagrams_in == 202));
    let c = engine.echolink_counters();
    assert_eq!(c.truncated, 1);
    assert_eq!(c.audio_in, 200);
    assert_eq!(c.control_in, 1);
}

#[test]
fn an_idle_engine_with_the_ports_open_still_sleeps_and_a_leg_starts_the_clock() {
    let engine = engine();
    let (audio, _) = engine.echolink_open(LO, 0, 0).expect("open");
    std::thread::sleep(Duration::from_millis(100));
    let w0 = engine.counters().wakeups;
    let t0 = engine.tick_stats().ticks;
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        engine.counters().wakeups - w0 <= 1,
        "{:?}",
        engine.counters()
    );
    assert_eq!(engine.tick_stats().ticks, t0, "no tick without a leg");
    // A leg is media that changes with time: the clock runs, and the station's audio plays.
    let station = UdpSocket::bind(SocketAddr::new(LO, 0)).expect("station");
    let spec = crate::media::EchoLinkLegSpec {
        leg: crate::media::FIRST_LEG,
        ip: LO,
        to: station.local_addr().expect("addr"),
        mode: crate::media::LegMode::Transceive,
        keying: crate::media::RxKeying::Voice,
        dtmf: false,
    };
    engine
        .command(crate::engine::Command::AddEchoLinkLeg(spec))
        .expect("add");
    let mut enc = crate::gsm::Encoder::default();
    let frames = std::array::from_fn(|i| {
        let pcm: [i16; 160] = std::array::from_fn(|n| (((i * 160 + n) % 16) as i16 - 8) * 800);
        enc.encode(&pcm)
    });
    let mut packet = Vec::new();
    build(0, &frames, &mut packet);
    station.send_to(&packet, audio).expect("send");
    assert!(wait_for(|| engine.tick_stats().ticks > t0 + 5));
    assert!(wait_for(|| engine.jitter_stats().iter().any(
        |(leg, s)| *leg == crate::media::FIRST_LEG && s.frames_in == 4
    )));
    assert!(wait_for(|| engine
        .echolink_leg_stats(crate::media::FIRST_LEG)
        .is_some_and(|s| s.packets_in == 1)));
    assert_eq!(engine.echolink_counters().audio_unrouted, 0);
}
