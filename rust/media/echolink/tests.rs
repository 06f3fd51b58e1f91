use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::codec::Codec;
use crate::echolink::{self as packet, GsmFrame, FRAMES_PER_PACKET};
use crate::frame::{parse, Frame};
use crate::gsm::{self, FRAME_SAMPLES};
use crate::test_signal::{amplitude, db, tone};

use super::super::*;

const STATION_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 41));
const LEG: u16 = FIRST_LEG + 5;
const IAX: u16 = 7;

fn station_to() -> SocketAddr {
    SocketAddr::new(STATION_IP, 5198)
}

fn iax_peer() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 4569))
}

fn el_spec(leg: u16, ip: IpAddr) -> EchoLinkLegSpec {
    EchoLinkLegSpec {
        leg,
        ip,
        to: SocketAddr::new(ip, 5198),
        mode: LegMode::Transceive,
        keying: RxKeying::Voice,
        dtmf: false,
    }
}

/// A station at `rate` with EchoLink leg [`LEG`] and a µ-law IAX2 leg [`IAX`].
fn station(rate: u32) -> Station {
    let mut st = Station::new(rate, true);
    st.add_echolink_leg(el_spec(LEG, STATION_IP), 0)
        .expect("EchoLink leg");
    st.add_leg(
        LegSpec {
            callno: IAX,
            peer_callno: 1007,
            peer: iax_peer(),
            codec: Codec::Ulaw,
            mode: LegMode::Transceive,
            keying: RxKeying::Always,
            call_ts_ms: 0,
            dtmf: false,
            link: true,
            normalize: None,
        },
        0,
    )
    .expect("IAX2 leg");
    st
}

/// The station's packets of a tone: packet `n` holds frames `4n..4n+4` of `freq` at 8 kHz.
struct Talker {
    enc: gsm::Encoder,
    freq: f64,
    frame: usize,
    seq: u16,
}

impl Talker {
    fn new(freq: f64) -> Self {
        Talker {
            enc: gsm::Encoder::default(),
            freq,
            frame: 0,
            seq: 0,
        }
    }

    fn packet(&mut self) -> Vec<u8> {
        let frames: [GsmFrame; FRAMES_PER_PACKET] = std::array::from_fn(|_| {
            let all = tone(self.freq, 8000.0, 8000.0, (self.frame + 1) * FRAME_SAMPLES);
            let pcm: [i16; FRAME_SAMPLES] = all[self.frame * FRAME_SAMPLES..]
                .try_into()
                .expect("one frame");
            self.frame += 1;
            self.enc.encode(&pcm)
        });
        let mut out = Vec::new();
        packet::build(self.seq, &frames, &mut out);
        self.seq = self.seq.wrapping_add(1);
        out
    }
}

/// What the IAX2 leg heard this tick (µ-law, full voice or mini frame), decoded.
fn iax_heard(out: &TickOutput) -> Option<Vec<i16>> {
    let mut pcm = Vec::new();
    for e in &out.events {
        if let MediaEvent::FullVoice {
            callno: IAX,
            payload,
            ..
        } = e
        {
            Codec::Ulaw.decode(payload, &mut pcm).ok()?;
            return Some(pcm);
        }
    }
    let d = out.datagrams.iter().find(|d| d.to == iax_peer())?;
    match parse(&out.wire(d)) {
        Ok(Frame::Mini(m)) => {
            Codec::Ulaw.decode(&m.payload, &mut pcm).ok()?;
            Some(pcm)
        }
        _ => None,
    }
}

#[test]
fn a_station_is_heard_by_an_iax2_link_and_keys_like_a_link() {
    for rate in [8000, 16000] {
        let mut st = station(rate);
        let mut talker = Talker::new(700.0);
        let mut out = TickOutput::default();
        let mut heard = Vec::new();
        let mut events = Vec::new();
        for n in 0..100u64 {
            let now = n * 20;
            // A packet every 80 ms, as a station sends them.
            if n % 4 == 0 && n < 80 {
                let p = talker.packet();
                assert_eq!(
                    st.on_echolink_audio(station_to(), &p, now),
                    EchoLinkRoute::Played
                );
            }
            out.clear();
            st.tick(now, &mut out);
            events.extend(out.events.iter().cloned());
            if let Some(pcm) = iax_heard(&out) {
                heard.extend(pcm);
            }
            assert!(
                out.echolink.is_empty(),
                "mix-minus: the station hears nobody"
            );
        }
        assert!(
            heard.len() >= 60 * 160,
            "rate {rate}: heard {}",
            heard.len()
        );
        let steady = &heard[20 * 160..60 * 160];
        let at = |f: f64| db(amplitude(steady, f, 8000.0) / 8000.0);
        assert!(
            at(700.0) > -3.0,
            "rate {rate}: 700 Hz at {:.1} dB",
            at(700.0)
        );
        assert!(at(700.0) - at(1400.0) > 25.0);
        let keyed: Vec<bool> = events
            .iter()
            .filter_map(|e| match e {
                MediaEvent::RxKey { callno: LEG, keyed } => Some(*keyed),
                _ => None,
            })
            .collect();
        assert_eq!(keyed, [true, false], "rate {rate}: keys then unkeys");
        assert!(events.contains(&MediaEvent::Activity { active: true }));
        let stats = st.jitter_stats(LEG).expect("jitter stats");
        assert_eq!(stats.frames_in, 80);
        let mut el = Vec::new();
        st.fill_echolink_stats(&mut el);
        let s = el[0].1;
        assert_eq!((s.packets_in, s.frames_in, s.frames_bad), (20, 80, 0));
    }
}

#[test]
fn the_conference_reaches_the_station_in_whole_packets_only_while_it_has_audio() {
    for rate in [8000, 16000] {
        let mut st = station(rate);
        let mut out = TickOutput::default();
        let mut dec = gsm::Decoder::default();
        let mut heard = Vec::new();
        let mut seqs = Vec::new();
        let talk = 0..50usize;
        for n in 0..80usize {
            let now = n as u64 * 20;
            if talk.contains(&n) {
                let pcm = tone(1200.0, 8000.0, 8000.0, (n + 1) * 160);
                let mut wire = Vec::new();
                Codec::Ulaw.encode(&pcm[n * 160..], &mut wire);
                st.push_full_voice(IAX, Codec::Ulaw, n as u32 * 20, &wire, now)
                    .expect("voice");
            }
            out.clear();
            st.tick(now, &mut out);
            for (p, to) in out.echolink.packets() {
                assert_eq!(to, station_to());
                let parsed = packet::parse(p).expect("our packet parses");
                seqs.push(parsed.seq);
                for f in parsed.frames {
                    let mut pcm = [0i16; FRAME_SAMPLES];
                    dec.decode(f, &mut pcm).expect("our frame decodes");
                    heard.extend(pcm);
                }
            }
        }
        let n = seqs.len();
        assert_eq!(seqs, (0..n as u16).collect::<Vec<_>>(), "rate {rate}");
        // 50 frames of talk (after the jitter buffer's delay) plus the hang, in whole packets.
        assert!((13..=16).contains(&n), "rate {rate}: {n} packets");
        let steady = &heard[20 * 160..45 * 160];
        let at = |f: f64| db(amplitude(steady, f, 8000.0) / 8000.0);
        assert!(
            at(1200.0) > -3.0,
            "rate {rate}: 1200 Hz at {:.1} dB",
            at(1200.0)
        );
        let mut el = Vec::new();
        st.fill_echolink_stats(&mut el);
        assert_eq!(el[0].1.packets_out, n as u64);
        assert_eq!(el[0].1.frames_out, 4 * n as u64);
    }
}

#[test]
fn strangers_and_garbage_are_counted_and_dropped() {
    let mut st = station(8000);
    let mut talker = Talker::new(500.0);
    let p = talker.packet();
    let stranger = SocketAddr::from(([127, 0, 0, 99], 5198));
    assert_eq!(
        st.on_echolink_audio(stranger, &p, 0),
        EchoLinkRoute::Unrouted
    );
    // Another port of the station's address is still the station.
    let other_port = SocketAddr::new(STATION_IP, 40000);
    assert_eq!(
        st.on_echolink_audio(other_port, &p, 0),
        EchoLinkRoute::Played
    );
    assert_eq!(
        st.on_echolink_audio(station_to(), &p[..100], 0),
        EchoLinkRoute::Malformed
    );
    let mut unsigned = talker.packet();
    unsigned[12] = 0x0F;
    assert_eq!(
        st.on_echolink_audio(station_to(), &unsigned, 20),
        EchoLinkRoute::Played
    );
    let mut el = Vec::new();
    st.fill_echolink_stats(&mut el);
    let s = el[0].1;
    assert_eq!(
        (s.packets_in, s.packets_malformed, s.frames_in, s.frames_bad),
        (2, 1, 7, 1)
    );
}

#[test]
fn leg_ids_stay_outside_iax2_call_numbers_and_one_leg_per_station() {
    let mut st = Station::new(8000, true);
    assert_eq!(
        st.add_echolink_leg(el_spec(32767, STATION_IP), 0),
        Err(MediaError::EchoLinkLegId(32767))
    );
    st.add_echolink_leg(el_spec(FIRST_LEG, STATION_IP), 0)
        .expect("first");
    assert_eq!(
        st.add_echolink_leg(el_spec(FIRST_LEG + 1, STATION_IP), 0),
        Err(MediaError::EchoLinkStationExists(STATION_IP))
    );
    let other = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 42));
    assert_eq!(
        st.add_echolink_leg(el_spec(FIRST_LEG, other), 0),
        Err(MediaError::LegExists(FIRST_LEG))
    );
    st.add_echolink_leg(el_spec(FIRST_LEG + 1, other), 0)
        .expect("second station");
    st.remove_leg(FIRST_LEG).expect("remove");
    let p = Talker::new(400.0).packet();
    assert_eq!(
        st.on_echolink_audio(station_to(), &p, 0),
        EchoLinkRoute::Unrouted
    );
    assert_eq!(
        st.on_echolink_audio(SocketAddr::new(other, 5198), &p, 0),
        EchoLinkRoute::Played,
        "the leg that moved keeps its station"
    );
    st.add_echolink_leg(el_spec(FIRST_LEG, STATION_IP), 0)
        .expect("the address is free again");
}

#[test]
fn a_lost_packet_is_concealed_and_counted_as_a_gap() {
    let mut st = station(8000);
    let mut talker = Talker::new(600.0);
    let mut out = TickOutput::default();
    for n in 0..60u64 {
        if n % 4 == 0 && n < 48 {
            let p = talker.packet();
            if n != 20 {
                st.on_echolink_audio(station_to(), &p, n * 20);
            }
        }
        out.clear();
        st.tick(n * 20, &mut out);
    }
    let mut el = Vec::new();
    st.fill_echolink_stats(&mut el);
    assert_eq!(el[0].1.seq_gaps, 1);
    let j = st.jitter_stats(LEG).expect("stats");
    assert!(j.lost + j.interpolated >= 4, "{j:?}");
}

#[test]
fn an_over_after_a_pause_is_timed_by_its_arrival_not_by_its_sequence_number() {
    // A station sends nothing between overs and its sequence numbers go on from the last packet
    // (SvxLink, EchoLink clients): the second over's packets must not look 3 s late.
    let mut st = station(8000);
    let mut talker = Talker::new(500.0);
    let mut out = TickOutput::default();
    let mut heard = [0usize; 2];
    for n in 0..400u64 {
        let talking = matches!(n, 0..=99 | 250..=349);
        if talking && n % 4 == 0 {
            let p = talker.packet();
            st.on_echolink_audio(station_to(), &p, n * 20);
        }
        out.clear();
        st.tick(n * 20, &mut out);
        if let Some(pcm) = iax_heard(&out) {
            if db(amplitude(&pcm, 500.0, 8000.0) / 8000.0) > -6.0 {
                heard[usize::from(n >= 200)] += 1;
            }
        }
    }
    let j = st.jitter_stats(LEG).expect("stats");
    assert_eq!((j.late, j.dropped), (0, 0), "{j:?}");
    assert!(
        heard[1] + 5 >= heard[0] && heard[0] >= 90,
        "heard {heard:?}, {j:?}"
    );
}
