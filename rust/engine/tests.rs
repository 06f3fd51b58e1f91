use super::*;
use crate::frame::Frame;
use std::net::UdpSocket;
use std::time::Instant;

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
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

fn poke(scall: u16) -> Vec<u8> {
    let mut f = FullFrame::new(6, 30).expect("POKE is encodable");
    f.scall = scall;
    f.ts = 1234;
    Frame::Full(f).to_bytes()
}

#[test]
fn queues_full_frames_and_counts_garbage() {
    let mut engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let peer = UdpSocket::bind(loopback()).expect("peer");
    let to = engine.local_addr();
    peer.send_to(&[0xff], to).expect("send garbage");
    peer.send_to(&[0x80, 0x01, 0, 0, 0], to)
        .expect("send truncated full");
    peer.send_to(&poke(7), to).expect("send poke");
    assert!(wait_for(|| engine.counters().datagrams_in == 3));
    let got = engine.drain();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].from, peer.local_addr().expect("addr"));
    assert_eq!(got[0].frame.scall, 7);
    assert_eq!(got[0].frame.ts, 1234);
    let c = engine.counters();
    assert_eq!(c.malformed, 2);
    assert_eq!(c.full_in, 1);
    engine.stop();
    assert!(!engine.is_running());
    assert!(matches!(
        engine.send_to(b"x", to),
        Err(EngineError::Stopped)
    ));
}

#[test]
fn wakeup_fd_signals_once_per_batch() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let peer = UdpSocket::bind(loopback()).expect("peer");
    for i in 2..12 {
        peer.send_to(&poke(i), engine.local_addr()).expect("send");
    }
    assert!(wait_for(|| engine.counters().full_in == 10));
    // Exactly one wakeup byte is pending for the whole burst.
    let mut probe = [0u8; 16];
    assert_eq!((&engine.wake_rx).read(&mut probe).ok(), Some(1));
    assert_eq!(engine.drain().len(), 10);
    assert!(
        (&engine.wake_rx).read(&mut probe).is_err(),
        "no stale wakeup after drain"
    );
    assert!(engine.drain().is_empty());
}

#[test]
fn queue_is_bounded() {
    let mut cfg = EngineConfig::new(loopback());
    cfg.queue_limit = 3;
    let engine = Engine::start(cfg).expect("bind");
    let peer = UdpSocket::bind(loopback()).expect("peer");
    for i in 2..10 {
        peer.send_to(&poke(i), engine.local_addr()).expect("send");
    }
    assert!(wait_for(|| engine.counters().datagrams_in == 8));
    assert_eq!(engine.drain().len(), 3);
    assert_eq!(engine.counters().queue_overflow, 5);
}

#[test]
fn media_frames_stay_in_rust() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let peer = UdpSocket::bind(loopback()).expect("peer");
    let mini = [0x00, 0x05, 0x00, 0x3c, 0xff, 0xff];
    peer.send_to(&mini, engine.local_addr()).expect("send");
    assert!(wait_for(|| engine.counters().mini_in == 1));
    assert!(engine.drain().is_empty());
    assert_eq!(engine.counters().media_unrouted, 1);
}

#[test]
fn under_load_it_reads_in_batches_on_the_clock() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    // The clock must run: an idle engine (nothing to mix) reads whatever is waiting each time
    // the socket wakes it, so how many datagrams one read gets would depend on how quickly
    // this host schedules the engine thread against the sender. Keyed, the local source gives
    // the clock work, and under load the engine drains only every BUSY_DRAIN.
    engine.command(Command::SetLocalKeyed(true)).expect("cmd");
    assert!(wait_for(|| ticks(&engine) >= 3));
    let peer = UdpSocket::bind(loopback()).expect("peer");
    let to = engine.local_addr();
    // 200 datagrams every 5 ms for 0.4 s: far above BUSY_DATAGRAMS per tick.
    for _ in 0..80 {
        for _ in 0..200 {
            peer.send_to(&[0xff], to).expect("send");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Every datagram is read, or counted by the kernel as dropped (a host that stalls the
    // engine thread for long enough overflows the buffer); the last one carries the count.
    std::thread::sleep(Duration::from_millis(50));
    peer.send_to(&[0xff], to).expect("send");
    assert!(wait_for(|| {
        let c = engine.counters();
        c.datagrams_in + c.kernel_drops == 16_001
    }));
    let c = engine.counters();
    assert_eq!(c.malformed, c.datagrams_in);
    // Read per datagram (the old loop) this would be one read per datagram; in batches of
    // up to 64 while busy, a small fraction of that.
    assert!(c.recv_calls < c.datagrams_in / 4, "{c:?}");
}

#[test]
fn send_reaches_peer() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let peer = UdpSocket::bind(loopback()).expect("peer");
    peer.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let pkt = poke(9);
    engine
        .send_to(&pkt, peer.local_addr().expect("addr"))
        .expect("send");
    let mut buf = [0u8; 64];
    let (n, from) = peer.recv_from(&mut buf).expect("recv");
    assert_eq!(&buf[..n], &pkt[..]);
    assert_eq!(from, engine.local_addr());
    assert_eq!(engine.counters().datagrams_out, 1);
}

fn ticks(engine: &Engine) -> u64 {
    engine.tick_stats().ticks
}

#[test]
fn a_device_counts_frames_each_way_only_while_attached() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    engine.command(Command::SetLocalRadio(true)).expect("cmd");
    // Keyed, so the clock runs with nothing attached (an idle engine sleeps).
    engine.command(Command::SetLocalKeyed(true)).expect("cmd");
    // Nothing attached: the conference's output for the radio is not queued or counted.
    let t0 = ticks(&engine);
    assert!(wait_for(|| ticks(&engine) >= t0 + 8));
    assert_eq!(engine.local_counters(), LocalCounters::default());

    let mut link = engine
        .attach_device(DeviceEdge::new(48000, 8000).expect("edge"))
        .expect("attach");
    // Nobody plays: after four frames wait, each new one drops the oldest.
    assert!(wait_for(|| link.counters().tx_dropped >= 3));
    // 5 ms blocks: 240 samples at 48 kHz are 40 at 8 kHz, so four blocks per frame.
    let mic = vec![0u8; 480];
    let mut out = vec![0u8; 480];
    for _ in 0..8 {
        link.exchange(&mic, &mut out).expect("exchange");
    }
    let c = link.counters();
    assert_eq!(c.rx_frames, 2);
    assert_eq!(c.tx_frames, 2);
    // Capture faster than the engine ticks: the queue holds four and drops the oldest.
    let before = ticks(&engine);
    for _ in 0..4 * 12 {
        link.exchange(&mic, &mut out).expect("exchange");
    }
    let c = link.counters();
    assert_eq!(c.rx_frames, 14);
    let ticked = ticks(&engine) - before;
    assert!(c.rx_dropped + ticked >= 14 - 4 - 2, "{c:?}, {ticked} ticks");
    // The queue drained, then the engine ticked without a frame: the device was late.
    assert!(wait_for(|| link.counters().rx_late >= 1));
    drop(link);
    let after = engine.local_counters();
    let t1 = ticks(&engine);
    assert!(wait_for(|| ticks(&engine) >= t1 + 5));
    assert_eq!(engine.local_counters(), after);
}

#[test]
fn a_keyed_local_source_wants_the_microphone_but_feeds_no_speaker() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let mut link = engine
        .attach_device(DeviceEdge::new(8000, 8000).expect("edge"))
        .expect("attach");
    // The operator keys with the local radio out of the conference.
    engine.command(Command::SetLocalKeyed(true)).expect("cmd");
    let mut out = vec![0u8; 320];
    link.exchange(&[0u8; 320], &mut out).expect("exchange");
    assert!(wait_for(|| link.counters().rx_late >= 2));
    let c = link.counters();
    assert_eq!(
        (c.rx_frames, c.tx_frames, c.tx_dropped, c.tx_late),
        (1, 0, 0, 0)
    );
}

#[test]
fn vox_edges_on_the_captured_audio_are_engine_events() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let mut edge = DeviceEdge::new(8000, 8000).expect("edge");
    edge.set_vox(Some(crate::vox::VoxConfig {
        threshold_dbfs: -30.0,
        attack_ms: 20,
        release_ms: 20,
    }))
    .expect("vox");
    let mut link = engine.attach_device(edge).expect("attach");
    let loud: Vec<u8> = (0..160)
        .flat_map(|n| if n % 2 == 0 { 8000i16 } else { -8000 }.to_ne_bytes())
        .collect();
    let mut out = vec![0u8; 320];
    link.exchange(&loud, &mut out).expect("exchange");
    link.exchange(&[0u8; 320], &mut out).expect("exchange");
    let mut vox = Vec::new();
    assert!(wait_for(|| {
        vox.extend(engine.drain_events().into_iter().filter_map(|e| match e {
            EngineEvent::Vox(open) => Some(open),
            _ => None,
        }));
        vox.len() >= 2
    }));
    assert_eq!(vox, vec![true, false]);
}

#[test]
fn a_device_at_the_wrong_station_rate_is_refused() {
    let mut engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let edge = DeviceEdge::new(48000, 16000).expect("edge");
    match engine.attach_device(edge.clone()) {
        Err(EngineError::Device(DeviceError::Rate { device, station })) => {
            assert_eq!((device, station), (48000, 8000));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    engine.stop();
    assert!(matches!(
        engine.attach_device(edge),
        Err(EngineError::Stopped)
    ));
}

fn usrp_voice(seq: u32) -> Vec<u8> {
    let mut out = [0u8; crate::usrp::VOICE_PACKET_LEN];
    crate::usrp::write_voice(&mut out, seq, 0, &[4000; 160]);
    out.to_vec()
}

#[test]
fn a_usrp_radio_is_the_local_radio_on_its_own_thread() {
    let radio = crate::usrp::UsrpRadio::new(crate::usrp::UsrpConfig::default()).expect("radio");
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    let peer = UdpSocket::bind(loopback()).expect("peer");
    // Short reads: the test polls, the peer never blocks a wait_for long.
    peer.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let link = engine
        .attach_usrp(radio, loopback(), peer.local_addr().expect("addr"))
        .expect("attach");
    let to = link.local_addr();
    // Garbage is counted and dropped; keyup voice is the carrier and reaches the local port.
    peer.send_to(b"not a usrp packet", to).expect("send");
    for seq in 0..10 {
        peer.send_to(&usrp_voice(seq), to).expect("send");
    }
    let mut end = [0u8; crate::usrp::HEADER_LEN];
    crate::usrp::write_unkey(&mut end, 10, 0);
    peer.send_to(&end, to).expect("send");
    let mut carrier = Vec::new();
    assert!(wait_for(|| {
        carrier.extend(engine.drain_events().into_iter().filter_map(|e| match e {
            EngineEvent::Usrp(crate::usrp::UsrpEvent::Carrier(on)) => Some(on),
            _ => None,
        }));
        carrier.len() >= 2
    }));
    assert_eq!(carrier, vec![true, false]);
    assert_eq!(lock_usrp(&link).counters().rx_garbage, 1);
    assert!(engine.local_counters().rx_frames >= 10);
    // Keyed, a voice packet goes out every 20 ms; dropping the link sends the keyup-0.
    link.set_keyed(true);
    let mut buf = [0u8; 512];
    let mut keyed = 0;
    assert!(wait_for(|| {
        if let Ok((n, _)) = peer.recv_from(&mut buf) {
            let p = crate::usrp::parse(&buf[..n]).expect("our packet parses");
            keyed += usize::from(p.header.keyup);
        }
        keyed >= 5
    }));
    drop(link);
    let mut ended = false;
    assert!(wait_for(|| {
        if let Ok((n, _)) = peer.recv_from(&mut buf) {
            let p = crate::usrp::parse(&buf[..n]).expect("our packet parses");
            ended = !p.header.keyup;
        }
        ended
    }));
}

#[test]
fn an_idle_engine_sleeps_without_a_clock_and_wakes_for_commands_and_datagrams() {
    let mut engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    // Nothing to do: after start-up the thread waits without ticking.
    std::thread::sleep(Duration::from_millis(100));
    let (t0, w0) = (ticks(&engine), engine.counters().wakeups);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ticks(&engine), t0, "an idle engine does not tick");
    assert!(
        engine.counters().wakeups - w0 <= 1,
        "{:?}",
        engine.counters()
    );
    // A datagram wakes it (and is handled), without starting the clock.
    let peer = UdpSocket::bind(loopback()).expect("peer");
    peer.send_to(&poke(7), engine.local_addr()).expect("send");
    assert!(wait_for(|| engine.counters().full_in == 1));
    assert_eq!(engine.drain().len(), 1);
    // A command that gives the clock work wakes it: keyed, the local source ticks.
    engine.command(Command::SetLocalKeyed(true)).expect("cmd");
    assert!(wait_for(|| ticks(&engine) >= t0 + 5));
    // Unkeyed, with nothing else to do, it goes back to sleep once the conference's activity
    // hang (the key was a talker) has run out and been reported.
    engine.command(Command::SetLocalKeyed(false)).expect("cmd");
    assert!(wait_for(|| {
        let t = ticks(&engine);
        std::thread::sleep(Duration::from_millis(150));
        ticks(&engine) == t
    }));
    let events = engine.drain_events();
    assert!(events.iter().any(|e| matches!(
        e,
        EngineEvent::Media(MediaEvent::Activity { active: false })
    )));
    // A stop reaches a sleeping thread at once.
    let started = Instant::now();
    engine.stop();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(!engine.is_running());
}

#[test]
fn an_attached_device_keeps_the_clock_running() {
    let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
    std::thread::sleep(Duration::from_millis(50));
    let t0 = ticks(&engine);
    let link = engine
        .attach_device(DeviceEdge::new(8000, 8000).expect("edge"))
        .expect("attach");
    assert!(wait_for(|| ticks(&engine) >= t0 + 5));
    drop(link);
}

fn two_stations() -> Engine {
    let mut cfg = EngineConfig::new(loopback());
    cfg.stations = 2;
    Engine::start(cfg).expect("bind")
}

fn leg_to(peer: &UdpSocket, callno: u16) -> Command {
    Command::AddLeg(LegSpec {
        callno,
        peer_callno: callno + 1000,
        peer: peer.local_addr().expect("addr"),
        codec: Codec::Ulaw,
        mode: LegMode::Transceive,
        keying: RxKeying::Voice,
        call_ts_ms: 0,
        dtmf: false,
        link: true,
        normalize: None,
    })
}

/// Events drained until `done` holds for what was gathered (or five seconds pass).
fn gather(engine: &Engine, mut done: impl FnMut(&[EngineEvent]) -> bool) -> Vec<EngineEvent> {
    let mut got = Vec::new();
    wait_for(|| {
        got.extend(engine.drain_events());
        done(&got)
    });
    got
}

fn full_voice_on(events: &[EngineEvent], station: usize, callno: u16) -> bool {
    events.iter().any(|e| {
        let inner = match (station, e) {
            (0, e) => e,
            (s, EngineEvent::Station(at, e)) if *at == s => e,
            _ => return false,
        };
        matches!(inner, EngineEvent::Media(MediaEvent::FullVoice { callno: c, .. }) if *c == callno)
    })
}

#[test]
fn each_station_is_its_own_conference() {
    let engine = two_stations();
    let (p1, p2) = (
        UdpSocket::bind(loopback()).expect("p1"),
        UdpSocket::bind(loopback()).expect("p2"),
    );
    engine.command_at(0, leg_to(&p1, 10)).expect("leg");
    engine.command_at(1, leg_to(&p2, 20)).expect("leg");
    // The first station's operator keys: its leg hears it, the other station's does not.
    engine.command(Command::SetLocalKeyed(true)).expect("key");
    let events = gather(&engine, |e| full_voice_on(e, 0, 10));
    assert!(full_voice_on(&events, 0, 10), "{events:?}");
    std::thread::sleep(Duration::from_millis(100));
    let later = engine.drain_events();
    assert!(!full_voice_on(&events, 1, 20) && !full_voice_on(&later, 1, 20));
    // Station 1's events come marked with it; station 0's unmarked, as a one-node engine's.
    engine
        .command_at(1, Command::SetLocalKeyed(true))
        .expect("key");
    let events = gather(&engine, |e| full_voice_on(e, 1, 20));
    assert!(full_voice_on(&events, 1, 20), "{events:?}");
    assert!(!events.iter().any(|e| matches!(
        e,
        EngineEvent::Media(MediaEvent::FullVoice { callno: 20, .. })
    )));
}

#[test]
fn a_local_link_carries_audio_and_keying_between_stations_without_the_network() {
    let engine = two_stations();
    let p2 = UdpSocket::bind(loopback()).expect("p2");
    engine.command_at(1, leg_to(&p2, 20)).expect("leg");
    engine
        .command_at(
            0,
            Command::AddLocalLink {
                id: 30,
                mode: LegMode::Transceive,
                station: 1,
                peer_id: 31,
                peer_mode: LegMode::Transceive,
            },
        )
        .expect("local link");
    let sent_before = engine.counters().datagrams_out;
    // Station 0 talks: its end of the local link hears it, station 1's end keys and its
    // conference carries the audio to its network leg.
    engine.command(Command::SetLocalKeyed(true)).expect("key");
    let keyed = |e: &EngineEvent, on: bool| {
        matches!(e, EngineEvent::Station(1, inner)
            if matches!(**inner, EngineEvent::Media(MediaEvent::RxKey { callno: 31, keyed }) if keyed == on))
    };
    let events = gather(&engine, |e| {
        full_voice_on(e, 1, 20) && e.iter().any(|e| keyed(e, true))
    });
    assert!(full_voice_on(&events, 1, 20), "{events:?}");
    assert!(events.iter().any(|e| keyed(e, true)));
    // Nothing of the local link went on the wire: the only datagrams are the network leg's.
    assert!(wait_for(|| engine.counters().datagrams_out > sent_before));
    let mut buf = [0u8; 512];
    p2.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let (_, from) = p2
        .recv_from(&mut buf)
        .expect("mini frames reach the network leg");
    assert_eq!(from, engine.local_addr());
    // Unkeyed, the far end unkeys once the audio stops.
    engine
        .command(Command::SetLocalKeyed(false))
        .expect("unkey");
    let events = gather(&engine, |e| e.iter().any(|e| keyed(e, false)));
    assert!(events.iter().any(|e| keyed(e, false)), "{events:?}");
    // Removing one end ends the link: the other end hears nothing more.
    engine
        .command_at(0, Command::RemoveLeg(30))
        .expect("remove");
    engine.command(Command::SetLocalKeyed(true)).expect("key");
    std::thread::sleep(Duration::from_millis(150));
    assert!(!engine.drain_events().iter().any(|e| keyed(e, true)));
}

#[test]
fn a_station_the_engine_lacks_is_refused() {
    let engine = two_stations();
    assert_eq!(engine.stations(), 2);
    assert!(matches!(
        engine.command_at(2, Command::SetLocalKeyed(true)),
        Err(EngineError::NoStation {
            station: 2,
            count: 2
        })
    ));
    let far = Command::AddLocalLink {
        id: 1,
        mode: LegMode::Transceive,
        station: 5,
        peer_id: 2,
        peer_mode: LegMode::Transceive,
    };
    assert!(matches!(
        engine.command_at(0, far),
        Err(EngineError::NoStation { station: 5, .. })
    ));
    let mut cfg = EngineConfig::new(loopback());
    cfg.stations = 0;
    assert!(matches!(
        Engine::start(cfg),
        Err(EngineError::NoStation { .. })
    ));
}

#[test]
fn a_local_link_to_itself_is_refused_and_adds_nothing() {
    let engine = two_stations();
    let same = Command::AddLocalLink {
        id: 7,
        mode: LegMode::Transceive,
        station: 0,
        peer_id: 7,
        peer_mode: LegMode::Transceive,
    };
    engine.command_at(0, same).expect("queued");
    let events = gather(&engine, |e| !e.is_empty());
    assert!(
        matches!(events.first(), Some(EngineEvent::CommandFailed(_))),
        "{events:?}"
    );
    // A far leg that exists already: the near end is taken back.
    let p = UdpSocket::bind(loopback()).expect("p");
    engine.command_at(1, leg_to(&p, 9)).expect("leg");
    let clash = Command::AddLocalLink {
        id: 8,
        mode: LegMode::Transceive,
        station: 1,
        peer_id: 9,
        peer_mode: LegMode::Transceive,
    };
    engine.command_at(0, clash).expect("queued");
    let events = gather(&engine, |e| !e.is_empty());
    assert!(
        matches!(events.first(), Some(EngineEvent::CommandFailed(_))),
        "{events:?}"
    );
    engine.command_at(0, Command::RemoveLeg(8)).expect("queued");
    let events = gather(&engine, |e| !e.is_empty());
    assert!(
        matches!(events.first(), Some(EngineEvent::CommandFailed(m)) if m.contains("no media leg")),
        "{events:?}"
    );
}
