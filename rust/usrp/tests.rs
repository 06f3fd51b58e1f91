use super::*;

fn voice_packet(seq: u32, keyup: bool, value: i16) -> Vec<u8> {
    let mut out = [0u8; VOICE_PACKET_LEN];
    write_voice(&mut out, seq, 0, &[value; VOICE_SAMPLES]);
    if !keyup {
        out[12..16].copy_from_slice(&0u32.to_be_bytes());
    }
    out.to_vec()
}

fn unkey_packet(seq: u32) -> Vec<u8> {
    let mut out = [0u8; HEADER_LEN];
    write_unkey(&mut out, seq, 0);
    out.to_vec()
}

fn radio(rate: u32) -> UsrpRadio {
    UsrpRadio::new(UsrpConfig {
        station_rate: rate,
        ..UsrpConfig::default()
    })
    .expect("valid config")
}

/// Ticks the radio `n` times from `now`, 20 ms apart; the first sample of each received frame.
fn ticks(r: &mut UsrpRadio, now: &mut u64, n: usize) -> Vec<Option<i16>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let t = r.tick(*now, |_| false);
        out.push(t.rx.map(|f| f[0]));
        *now += 20;
    }
    out
}

fn events(r: &mut UsrpRadio) -> Vec<UsrpEvent> {
    std::iter::from_fn(|| r.next_event()).collect()
}

#[test]
fn header_round_trips_big_endian() {
    let h = Header {
        seq: 0x0102_0304,
        memory: 5,
        keyup: true,
        talkgroup: 3100,
        kind: TYPE_VOICE,
        mpxid: 7,
        reserved: 9,
    };
    let mut buf = [0u8; HEADER_LEN];
    assert_eq!(write_header(&mut buf, &h), HEADER_LEN);
    assert_eq!(&buf[..8], b"USRP\x01\x02\x03\x04");
    assert_eq!(&buf[12..16], &[0, 0, 0, 1]);
    let p = parse(&buf).expect("a header");
    assert_eq!(p.header, h);
    assert_eq!(p.body, Body::Unkey);
    assert_eq!(write_header(&mut [0u8; 31], &h), 0);
}

#[test]
fn voice_is_little_endian_samples() {
    let mut out = [0u8; VOICE_PACKET_LEN];
    write_voice(&mut out, 1, 9, &[0x1234, -2]);
    assert_eq!(&out[HEADER_LEN..HEADER_LEN + 4], &[0x34, 0x12, 0xFE, 0xFF]);
    assert!(out[HEADER_LEN + 4..].iter().all(|&b| b == 0));
    let p = parse(&out).expect("voice");
    assert!(p.header.keyup);
    assert_eq!(p.header.talkgroup, 9);
    assert!(matches!(p.body, Body::Voice(b) if b.len() == VOICE_BYTES));
}

#[test]
fn garbage_is_refused() {
    assert_eq!(parse(b"USRP"), Err(UsrpError::Short { len: 4 }));
    assert_eq!(parse(&[0u8; 40]), Err(UsrpError::Magic));
    let mut odd = voice_packet(1, true, 0);
    odd.pop();
    assert_eq!(
        parse(&odd),
        Err(UsrpError::VoiceLength {
            len: VOICE_BYTES - 1
        })
    );
    let mut dtmf = build_dtmf(1, '5');
    dtmf[HEADER_LEN] = b'x';
    assert_eq!(parse(&dtmf), Err(UsrpError::Digit { byte: Some(b'x') }));
    dtmf.pop();
    assert_eq!(parse(&dtmf), Err(UsrpError::Digit { byte: None }));
}

#[test]
fn dtmf_and_text_parse() {
    for c in "0123456789*#ABCD".chars() {
        assert_eq!(parse(&build_dtmf(3, c)).expect("dtmf").body, Body::Dtmf(c));
    }
    let mut lower = build_dtmf(3, 'a');
    lower[HEADER_LEN] = b'a';
    assert_eq!(parse(&lower).expect("dtmf").body, Body::Dtmf('A'));
    let mut text = vec![0u8; HEADER_LEN];
    write_header(
        &mut text,
        &Header {
            kind: TYPE_TEXT,
            ..Header::default()
        },
    );
    text.extend_from_slice(b"hello\0junk");
    assert_eq!(parse(&text).expect("text").body, Body::Text(b"hello"));
}

#[test]
fn metadata_round_trips_and_survives_truncation() {
    let m = Metadata {
        source_id: 3_112_345,
        repeater_id: 311_200,
        talkgroup: 91,
        slot: 2,
        color_code: 1,
        callsign: "N0CALL".to_owned(),
    };
    let buf = build_meta(7, &m);
    assert_eq!(parse(&buf).expect("meta").body, Body::Meta(m.clone()));
    // Cut anywhere: a metadata packet never fails, fields past the end read as zero.
    for cut in HEADER_LEN + 1..buf.len() {
        let p = parse(&buf[..cut]).expect("a short TLV is still metadata");
        assert!(matches!(p.body, Body::Meta(_)));
    }
    // Unprintable bytes and an overlong callsign are trimmed.
    let mut long = m.clone();
    long.callsign = "A\u{7}BCDEFGHIJKLMNOPQRSTUVWXYZ".to_owned();
    match parse(&build_meta(1, &long)).expect("meta").body {
        Body::Meta(got) => {
            assert!(got.callsign.len() <= CALLSIGN_MAX);
            assert!(got.callsign.chars().all(|c| c.is_ascii_graphic()));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn config_is_checked() {
    assert_eq!(
        UsrpRadio::new(UsrpConfig {
            station_rate: 44100,
            ..UsrpConfig::default()
        })
        .err(),
        Some(UsrpConfigError::StationRate(44100))
    );
    assert!(UsrpRadio::new(UsrpConfig {
        prefill_frames: 5,
        queue_frames: 5,
        ..UsrpConfig::default()
    })
    .is_err());
    let mut r = radio(8000);
    assert!(r.set_rx_gain_db(f64::NAN).is_err());
    assert!(r.set_tx_gain_db(100.0).is_err());
    assert!(r.set_rx_gain_db(-6.0).is_ok());
}

#[test]
fn a_transmission_is_carrier_audio_then_unkey() {
    let mut r = radio(8000);
    let mut now = 0;
    for seq in 0..5u32 {
        r.receive(&voice_packet(seq, true, seq as i16 + 1), now)
            .expect("voice");
        let _ = ticks(&mut r, &mut now, 1);
    }
    assert!(r.carrier());
    assert_eq!(events(&mut r), vec![UsrpEvent::Carrier(true)]);
    r.receive(&unkey_packet(5), now).expect("unkey");
    let played = ticks(&mut r, &mut now, 6);
    assert!(!r.carrier());
    assert_eq!(events(&mut r), vec![UsrpEvent::Carrier(false)]);
    // Every frame plays once, in order, before the carrier drops.
    let all: Vec<i16> = played.into_iter().flatten().collect();
    assert!(all.ends_with(&[3, 4, 5]), "{all:?}");
    assert_eq!(r.counters().rx_voice, 5);
    assert_eq!(r.counters().peer_lost, 0);
}

#[test]
fn reorder_duplicates_and_gaps() {
    let mut r = radio(8000);
    let mut now = 0;
    for seq in [10u32, 12, 11, 11, 13, 15] {
        r.receive(&voice_packet(seq, true, seq as i16), now)
            .expect("voice");
    }
    r.receive(&unkey_packet(16), now).expect("unkey");
    let played: Vec<i16> = ticks(&mut r, &mut now, 8).into_iter().flatten().collect();
    assert_eq!(played, vec![10, 11, 12, 13, 15]);
    let c = r.counters();
    assert_eq!(c.rx_late, 1, "the duplicate");
    assert_eq!(c.rx_lost, 1, "14 never came");
    // A frame older than the one played is late.
    r.receive(&voice_packet(20, true, 0), now).expect("voice");
    let _ = ticks(&mut r, &mut now, 5);
    r.receive(&voice_packet(19, true, 0), now).expect("voice");
    assert!(r.counters().rx_late >= 1);
}

#[test]
fn a_burst_is_bounded_and_counted() {
    let mut r = UsrpRadio::new(UsrpConfig {
        queue_frames: 10,
        ..UsrpConfig::default()
    })
    .expect("config");
    for seq in 0..100u32 {
        r.receive(&voice_packet(seq, true, 1), 0).expect("voice");
    }
    assert_eq!(r.buffered(), 10);
    assert_eq!(r.counters().rx_overflow, 90);
}

#[test]
fn a_peer_that_goes_quiet_drops_the_carrier() {
    let mut r = radio(8000);
    let mut now = 0;
    for seq in 0..4u32 {
        r.receive(&voice_packet(seq, true, 1), now).expect("voice");
        let _ = ticks(&mut r, &mut now, 1);
    }
    // No unkey: the carrier goes once the buffer drained and the timeout passed.
    let _ = ticks(&mut r, &mut now, 30);
    assert!(!r.carrier());
    assert_eq!(
        events(&mut r),
        vec![
            UsrpEvent::Carrier(true),
            UsrpEvent::Peer(false),
            UsrpEvent::Carrier(false)
        ]
    );
    assert_eq!(r.counters().peer_lost, 1);
    r.receive(&build_dtmf(9, '1'), now).expect("dtmf");
    assert_eq!(
        events(&mut r),
        vec![UsrpEvent::Peer(true), UsrpEvent::Dtmf('1')]
    );
}

#[test]
fn garbage_is_counted_and_changes_nothing() {
    let mut r = radio(8000);
    assert!(r.receive(b"not usrp at all, definitely not", 0).is_err());
    assert!(r.receive(&[0xFF; 400], 0).is_err());
    assert_eq!(r.counters().rx_garbage, 2);
    assert_eq!(r.counters().rx_packets, 0);
    assert!(!r.carrier());
    assert!(events(&mut r).is_empty());
}

#[test]
fn keyed_sends_voice_then_one_unkey() {
    let mut r = radio(8000);
    r.set_keyed(true);
    let mut seqs = Vec::new();
    for _ in 0..3 {
        let t = r.tick(0, |f| {
            f.fill(1000);
            true
        });
        let v = t.voice.expect("voice while keyed");
        assert!(t.unkey.is_none());
        let p = parse(v).expect("our packet parses");
        assert!(p.header.keyup);
        seqs.push(p.header.seq);
        match p.body {
            Body::Voice(b) => assert_eq!(i16::from_le_bytes([b[0], b[1]]), 1000),
            other => panic!("{other:?}"),
        }
    }
    r.set_keyed(false);
    let t = r.tick(0, |_| true);
    assert!(t.voice.is_none());
    let u = parse(t.unkey.expect("one unkey")).expect("parses");
    assert!(!u.header.keyup);
    assert_eq!(u.body, Body::Unkey);
    seqs.push(u.header.seq);
    assert_eq!(seqs, vec![0, 1, 2, 3]);
    let t = r.tick(0, |_| true);
    assert!(t.voice.is_none() && t.unkey.is_none());
    // Keyed with nothing from the station: silence still goes (a keyed transmitter).
    r.set_keyed(true);
    assert!(r.tick(0, |_| false).voice.is_some());
}

#[test]
fn a_16k_station_gets_16k_frames_and_sends_8k() {
    let mut r = radio(16000);
    assert_eq!(r.frame_len(), 320);
    let mut now = 0;
    for seq in 0..6u32 {
        r.receive(&voice_packet(seq, true, 8000), now)
            .expect("voice");
    }
    let mut lens = Vec::new();
    for _ in 0..3 {
        let t = r.tick(now, |_| false);
        lens.push(t.rx.map(<[i16]>::len));
        now += 20;
    }
    assert_eq!(lens, vec![Some(320); 3]);
    r.set_keyed(true);
    let t = r.tick(now, |f| {
        f.fill(4000);
        true
    });
    assert_eq!(t.voice.map(<[u8]>::len), Some(VOICE_PACKET_LEN));
}

#[test]
fn gains_scale_and_meters_read() {
    let mut r = radio(8000);
    r.set_rx_gain_db(-6.0206).expect("gain");
    r.set_tx_gain_db(6.0206).expect("gain");
    let mut now = 0;
    for seq in 0..5u32 {
        r.receive(&voice_packet(seq, true, 10000), now)
            .expect("voice");
    }
    let played: Vec<i16> = ticks(&mut r, &mut now, 2).into_iter().flatten().collect();
    assert!(
        played.iter().all(|&v| (4990..=5010).contains(&v)),
        "{played:?}"
    );
    assert!(r.rx_level().peak_dbfs < -6.0);
    r.set_keyed(true);
    let t = r.tick(now, |f| {
        f.fill(30000);
        true
    });
    let p = parse(t.voice.expect("voice")).expect("parses");
    match p.body {
        Body::Voice(b) => assert_eq!(i16::from_le_bytes([b[0], b[1]]), i16::MAX),
        other => panic!("{other:?}"),
    }
    assert!(r.tx_level().clipped > 0 || r.tx_level().peak_dbfs > -0.1);
}

#[test]
fn sequence_numbers_wrap() {
    let mut r = radio(8000);
    let mut now = 0;
    for seq in [u32::MAX - 1, u32::MAX, 0, 1] {
        r.receive(&voice_packet(seq, true, (seq % 7) as i16), now)
            .expect("voice");
    }
    r.receive(&unkey_packet(2), now).expect("unkey");
    let played: Vec<i16> = ticks(&mut r, &mut now, 6).into_iter().flatten().collect();
    assert_eq!(played.len(), 4);
    assert_eq!(r.counters().rx_lost, 0);
    assert_eq!(r.counters().rx_late, 0);
}
