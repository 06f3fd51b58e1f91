//! Frames in and out: codecs, full and mini frames, control order, topology changes, shared encodes.

use super::*;

#[test]
fn mixed_codec_members_hear_each_other_and_not_themselves() {
    // A µ-law leg (8 kHz) and a slin16 leg in a 16 kHz conference, both talking.
    let mut st = station(16000, [spec(10, 5000, Ulaw), spec(11, 5001, Slin16)]);
    let mut out = TickOutput::default();
    let (mut heard_a, mut heard_b) = (Vec::new(), Vec::new());
    for (n, now) in frame_times(0..60) {
        feed_tone(&mut st, 10, Ulaw, 600.0, n, 2000);
        feed_tone(&mut st, 11, Slin16, 1500.0, n, 2000);
        tick(&mut st, &mut out, now);
        if let Some(p) = heard(&out, 10, addr(5000), Ulaw) {
            heard_a.extend(p);
        }
        if let Some(p) = heard(&out, 11, addr(5001), Slin16) {
            heard_b.extend(p);
        }
    }
    assert!(heard_a.len() >= 160 * 40, "µ-law leg received audio");
    assert!(heard_b.len() >= 320 * 40, "slin16 leg received audio");
    // Skip the jitter-buffer and filter start-up; look at the steady state.
    let a = &heard_a[heard_a.len() - 160 * 20..];
    let b = &heard_b[heard_b.len() - 320 * 20..];
    // (what was heard, at which rate, the other's tone, its own tone, who heard it)
    for (x, rate, other, own, who) in [
        (a, 8000, 1500.0, 600.0, "µ-law"),
        (b, 16000, 600.0, 1500.0, "slin16"),
    ] {
        let (heard, echo) = (tone_db(x, other, rate), tone_db(x, own, rate));
        assert!(heard > -1.5, "{who} hears the other tone: {heard:.1} dB");
        assert!(echo < -40.0, "{who} does not hear itself: {echo:.1} dB");
    }
}

#[test]
fn first_frame_of_a_spurt_is_full_then_minis_then_spurt_end() {
    let mut st = station(8000, [spec(20, 6000, Ulaw), spec(21, 6001, Ulaw)]);
    let mut out = TickOutput::default();
    let mut kinds = Vec::new();
    for (n, now) in frame_times(0..40) {
        if n < 20 {
            feed_tone(&mut st, 20, Ulaw, 1000.0, n, 100);
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            match e {
                MediaEvent::FullVoice { callno: 21, ts, .. } => kinds.push(("full", *ts)),
                MediaEvent::SpurtEnded { callno: 21, ts } => kinds.push(("end", *ts)),
                _ => {}
            }
        }
        for d in &out.datagrams {
            assert_eq!(d.to, addr(6001), "the talker hears nothing");
            if let Ok(Frame::Mini(m)) = parse(&out.wire(d)) {
                kinds.push(("mini", u32::from(m.ts16)));
            }
        }
    }
    assert_eq!(kinds.first().map(|k| k.0), Some("full"));
    assert_eq!(kinds.iter().filter(|k| k.0 == "full").count(), 1);
    assert_eq!(kinds.last().map(|k| k.0), Some("end"));
    let minis: Vec<u32> = kinds
        .iter()
        .filter(|k| k.0 == "mini")
        .map(|k| k.1)
        .collect();
    assert!(minis.len() >= 15);
    assert!(
        minis.windows(2).all(|w| w[1] == w[0] + 20),
        "steady 20 ms timestamps"
    );
    // Timestamps continue the call's clock given at add_leg (1000 ms at t=0).
    assert!(kinds.first().is_some_and(|k| k.1 >= 1000 && k.1 % 20 == 0));
}

#[test]
fn full_voice_frame_again_when_the_upper_timestamp_bits_change() {
    let mut st = station(
        8000,
        [
            // crosses a 32 768 ms boundary after five frames
            LegSpec {
                call_ts_ms: 32_768 - 100,
                ..spec(30, 7000, Ulaw)
            },
            spec(31, 7001, Ulaw),
        ],
    );
    let mut out = TickOutput::default();
    let mut fulls = Vec::new();
    for (n, now) in frame_times(0..20) {
        feed_tone(&mut st, 31, Ulaw, 800.0, n, 500);
        tick(&mut st, &mut out, now);
        for e in &out.events {
            if let MediaEvent::FullVoice { callno: 30, ts, .. } = e {
                fulls.push(*ts);
            }
        }
    }
    assert_eq!(fulls.len(), 2, "{fulls:?}");
    assert!(fulls[0] < 32_768 && fulls[1] >= 32_768);
}

#[test]
fn control_events_come_out_in_order_after_the_audio_before_them() {
    let mut st = station(8000, [spec(40, 8000, Ulaw)]);
    let mut out = TickOutput::default();
    let mut order = Vec::new();
    for (n, now) in frame_times(0..30) {
        if n < 10 {
            feed_tone(&mut st, 40, Ulaw, 1000.0, n, 100);
        }
        if n == 9 {
            // UNKEY stamped right after the last audio frame, arriving with it.
            st.push_control(40, ControlKind::Unkey, 100 + 10 * 20, &[], now)
                .expect("control");
        }
        tick(&mut st, &mut out, now);
        for e in &out.events {
            if let MediaEvent::Control { kind, ts, .. } = e {
                order.push((*kind, *ts, n));
            }
        }
    }
    assert_eq!(order.len(), 1);
    assert_eq!(order[0].0, ControlKind::Unkey);
    assert!(
        order[0].2 >= 10,
        "UNKEY is played out after the ten audio frames"
    );
}

#[test]
fn a_mini_frame_before_any_full_voice_frame_asks_for_vnak_once() {
    let mut st = station(8000, [spec(50, 9000, Ulaw)]);
    let mini = MiniFrame {
        scall: 1050,
        ts16: 40,
        payload: vec![0xFF; 160],
    };
    let mut events = Vec::new();
    assert!(st.on_mini(addr(9000), &mini, 0, &mut events));
    assert!(st.on_mini(addr(9000), &mini, 20, &mut events));
    assert_eq!(events, vec![MediaEvent::MiniBeforeFull { callno: 50 }]);
    // Unknown peer or call number: not routed.
    assert!(!st.on_mini(addr(9001), &mini, 40, &mut events));
}

#[test]
fn mini_frames_route_to_their_leg_and_unwrap_timestamps() {
    let mut st = station(8000, [spec(60, 9100, Ulaw), spec(61, 9101, Ulaw)]);
    let mut out = TickOutput::default();
    let mut got = 0;
    // The peer's clock is just below a 16-bit wrap: minis must unwrap past it.
    let base = 0x0001_FFC0u32;
    feed(&mut st, 60, Ulaw, &tone(1000.0, 8000, 0), base, 0);
    for (n, now) in frame_times(1..30) {
        let ts = base.wrapping_add(n as u32 * 20);
        let mut wire = Vec::new();
        Ulaw.encode(&tone(1000.0, 8000, n), &mut wire);
        let mini = MiniFrame {
            scall: 1060,
            ts16: (ts & 0xFFFF) as u16,
            payload: wire,
        };
        let mut ev = Vec::new();
        assert!(st.on_mini(addr(9100), &mini, now, &mut ev));
        tick(&mut st, &mut out, now);
        if heard(&out, 61, addr(9101), Ulaw).is_some() {
            got += 1;
        }
    }
    assert!(got >= 25, "listener heard {got} frames");
    let stats = st.jitter_stats(60).expect("stats");
    assert_eq!(stats.lost, 0);
}

#[test]
fn topology_changes_live_without_dropping_legs() {
    let mut st = station(8000, [spec(70, 9200, Ulaw), spec(71, 9201, Ulaw)]);
    let mut out = TickOutput::default();
    let mut a_heard_itself = false;
    for (n, now) in frame_times(0..60) {
        feed_tone(&mut st, 70, Ulaw, 1000.0, n, 100);
        match n {
            20 => st.set_mix_minus(false),
            30 => st.set_local_radio(true),
            40 => {
                st.set_local_radio(false);
                st.set_mix_minus(true);
            }
            _ => {}
        }
        if (31..40).contains(&n) {
            st.put_local(&tone(400.0, 8000, n));
        }
        tick(&mut st, &mut out, now);
        if (24..30).contains(&n) && heard(&out, 70, addr(9200), Ulaw).is_some() {
            a_heard_itself = true; // full mix: the talker hears itself
        }
        if (35..40).contains(&n) {
            assert!(st.local_hears_audio());
            assert!(tone_db(st.local_output(), 1000.0, 8000) > -2.0);
            // b hears both the talker and the local radio.
            let b = heard(&out, 71, addr(9201), Ulaw).expect("b hears");
            assert!(tone_db(&b, 400.0, 8000) > -3.0);
        }
        if n > 45 {
            assert!(
                heard(&out, 70, addr(9200), Ulaw).is_none(),
                "mix-minus again"
            );
            assert!(
                heard(&out, 71, addr(9201), Ulaw).is_some(),
                "b never lost audio"
            );
        }
    }
    assert!(a_heard_itself);
    assert_eq!(st.leg_count(), 2);
}

#[test]
fn receive_only_and_transmit_only_legs() {
    let mut st = station(
        8000,
        [
            // we monitor it: it is heard, hears nothing
            in_mode(spec(80, 9300, Ulaw), LegMode::ReceiveOnly),
            // it monitors us: hears, is not heard
            in_mode(spec(81, 9301, Ulaw), LegMode::TransmitOnly),
            spec(82, 9302, Ulaw),
        ],
    );
    let mut out = TickOutput::default();
    for (n, now) in frame_times(0..30) {
        feed_tone(&mut st, 80, Ulaw, 700.0, n, 100);
        feed_tone(&mut st, 81, Ulaw, 1200.0, n, 100);
        tick(&mut st, &mut out, now);
        assert!(heard(&out, 80, addr(9300), Ulaw).is_none());
        if n > 10 {
            let normal = heard(&out, 82, addr(9302), Ulaw).expect("normal hears");
            assert!(tone_db(&normal, 700.0, 8000) > -2.0);
            assert!(tone_db(&normal, 1200.0, 8000) < -40.0);
            assert!(heard(&out, 81, addr(9301), Ulaw).is_some());
        }
    }
}

#[test]
fn no_buffer_growth_over_100k_ticks() {
    let mut st = Station::new(16000, true);
    let codecs = [Ulaw, Alaw, Slin, Slin16];
    for c in 0..8u16 {
        let mut leg = spec(100 + c, 9500 + c, codecs[usize::from(c) % 4]);
        leg.dtmf = c % 2 == 0;
        st.add_leg(leg, 0).expect("leg");
    }
    st.set_local_radio(true);
    st.set_local_dtmf(true).expect("local dtmf");
    let wires: Vec<Vec<u8>> = codecs
        .iter()
        .map(|c| {
            let mut w = Vec::new();
            c.encode(&tone(500.0, c.rate(), 0), &mut w);
            w
        })
        .collect();
    let mut out = TickOutput::default();
    let mut cap = 0;
    for (n, now) in frame_times(0..100_000) {
        for c in 0..8u16 {
            // Half the legs talk in bursts, so spurts start and end all the time.
            if (n / 50 + usize::from(c)) % 2 == 0 {
                let i = usize::from(c) % 4;
                st.push_full_voice(100 + c, codecs[i], 100 + n as u32 * 20, &wires[i], now)
                    .expect("voice");
            }
        }
        tick(&mut st, &mut out, now);
        if n == 1000 {
            cap = st.buffer_capacity();
        }
    }
    assert_eq!(st.buffer_capacity(), cap);
    assert!(out.datagrams.capacity() < 64 && out.events.capacity() < 64);
    assert!(out.payloads.len() <= 8, "payload buffers are reused");
}

#[test]
fn removing_legs_keeps_the_others_routed() {
    let mut st = Station::new(8000, true);
    for c in 0..5u16 {
        st.add_leg(spec(90 + c, 9400 + c, Ulaw), 0).expect("leg");
    }
    assert_eq!(
        st.add_leg(spec(92, 1, Ulaw), 0),
        Err(MediaError::LegExists(92))
    );
    st.remove_leg(90).expect("remove first");
    st.remove_leg(92).expect("remove middle");
    assert_eq!(st.remove_leg(92), Err(MediaError::NoSuchLeg(92)));
    assert_eq!(st.leg_count(), 3);
    let mini = MiniFrame {
        scall: 1094,
        ts16: 0,
        payload: vec![0xFF; 160],
    };
    let mut ev = Vec::new();
    assert!(
        st.on_mini(addr(9404), &mini, 0, &mut ev),
        "moved leg still routed"
    );
    assert!(!st.on_mini(addr(9400), &mini, 0, &mut ev));
}

#[test]
fn listeners_hearing_the_same_mix_share_one_encode_and_payload() {
    let mut st = station(8000, [spec(300, 9700, Ulaw), spec(301, 9701, Ulaw)]);
    for c in 0..10u16 {
        st.add_leg(spec(310 + c, 9710 + c, Ulaw), 0)
            .expect("µ-law listener");
    }
    st.add_leg(spec(320, 9720, Alaw), 0).expect("A-law");
    st.add_leg(spec(321, 9721, Slin16), 0).expect("slin16");
    let mut out = TickOutput::default();
    for (n, now) in frame_times(0..20) {
        feed_tone(&mut st, 300, Ulaw, 500.0, n, 100);
        feed_tone(&mut st, 301, Ulaw, 1300.0, n, 100);
        tick(&mut st, &mut out, now);
    }
    // Steady state: every leg sends a mini frame.
    assert_eq!(out.datagrams.len(), 14);
    // Two talkers (each its own mix-minus), one µ-law and one A-law payload shared by the
    // listeners, and the resampled slin16 leg's own.
    assert_eq!(out.payload_count(), 5);
    let shared: Vec<usize> = out
        .datagrams
        .iter()
        .filter(|d| (9710..9720).contains(&d.to.port()))
        .map(|d| d.payload)
        .collect();
    assert_eq!(shared.len(), 10);
    assert!(shared.iter().all(|&p| p == shared[0]));
    // Same payload, own header: the mini frame names each listener's call.
    for d in &out.datagrams {
        let Ok(Frame::Mini(m)) = parse(&out.wire(d)) else {
            panic!("not a mini frame")
        };
        assert_eq!(m.scall, d.to.port() - 9700 + 300);
    }
    // The shared payload is the plain mix: both talkers.
    let heard = heard(&out, 310, addr(9710), Ulaw).expect("listener hears");
    assert!(tone_db(&heard, 500.0, 8000) > -2.0);
    assert!(tone_db(&heard, 1300.0, 8000) > -2.0);
    let a = heard_at(&out, addr(9700), Ulaw);
    assert!(
        tone_db(&a, 500.0, 8000) < -30.0,
        "mix-minus: a does not hear itself"
    );
}
