use super::*;
use crate::ie::{self, format, Ie, IeValue};
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

fn full(buf: &[u8]) -> FullFrame {
    match parse(buf).unwrap() {
        Frame::Full(f) => f,
        other => panic!("not a full frame: {other:?}"),
    }
}

/// A frame of `ftype` and `subclass` with the header fields `(scall, dcall, ts, oseq, iseq)`.
fn with_header(ftype: u8, subclass: i64, header: (u16, u16, u32, u8, u8)) -> FullFrame {
    let mut f = FullFrame::new(ftype, subclass).unwrap();
    (f.scall, f.dcall, f.ts, f.oseq, f.iseq) = header;
    f
}

/// `f` builds to exactly `bytes`, and `bytes` parses back to `f`.
fn assert_round_trip(f: &FullFrame, bytes: &[u8]) {
    assert_eq!(Frame::from(f.clone()).to_bytes(), bytes);
    assert_eq!(full(bytes), *f);
}

fn golden_new() -> Vec<u8> {
    hex(
        "80 02 00 00 00 00 00 03 00 00 06 01 0b 02 00 02 01 04 31 30 30 30
             09 04 00 00 00 04 08 04 00 00 00 0c 36 00",
    )
}

fn golden_reject() -> Vec<u8> {
    let mut v = hex("80 06 00 03 00 00 00 08 00 01 06 06 16 19");
    v.extend_from_slice(b"Unable to negotiate codec");
    v.extend_from_slice(&hex("2a 01 3a"));
    v
}

fn golden_trunk() -> Vec<u8> {
    hex("00 00 01 01 00 00 03 e8  00 03 00 02 00 14 aa bb cc  00 00 00 07 00 28")
}

#[test]
fn golden_new_builds_and_parses() {
    let mut f = FullFrame::new(frame_type::IAX, iax_subclass::NEW).unwrap();
    f.scall = 2;
    f.ts = 3;
    f.ies = vec![
        Ie::from_value(ie::VERSION, &IeValue::U16(2)).unwrap(),
        Ie::from_value(ie::CALLED_NUMBER, &IeValue::Str("1000".into())).unwrap(),
        Ie::from_value(ie::FORMAT, &IeValue::U32(format::ULAW as u32)).unwrap(),
        Ie::from_value(
            ie::CAPABILITY,
            &IeValue::U32((format::ULAW | format::ALAW) as u32),
        )
        .unwrap(),
        Ie::from_value(ie::CALLTOKEN, &IeValue::Str(String::new())).unwrap(),
    ];
    assert_eq!(Frame::Full(f.clone()).to_bytes(), golden_new());
    let p = full(&golden_new());
    assert_eq!(p, f);
    assert_eq!(p.subclass(), iax_subclass::NEW);
    assert_eq!(
        p.ie(ie::CALLED_NUMBER).unwrap().value(),
        Some(IeValue::Str("1000".into()))
    );
    assert_eq!(p.ie(ie::CALLTOKEN).unwrap().data, b"");
    assert!(p.payload.is_empty());
}

#[test]
fn golden_ack() {
    let bytes = hex("80 02 00 05 00 00 00 0c 02 02 06 04");
    let f = with_header(frame_type::IAX, iax_subclass::ACK, (2, 5, 12, 2, 2));
    assert_round_trip(&f, &bytes);
    assert!(f.ies.is_empty());
}

#[test]
fn golden_voice_and_mini() {
    let mut bytes = hex("80 05 00 02 00 00 00 28 04 02 02 04");
    bytes.extend_from_slice(&[0xFF; 160]);
    let mut f = with_header(frame_type::VOICE, format::ULAW as i64, (5, 2, 40, 4, 2));
    f.payload = vec![0xFF; 160];
    assert_eq!(f.csub, 0x04, "Asterisk sends ulaw raw, not 0x82");
    assert_round_trip(&f, &bytes);

    let mut mini_bytes = hex("00 05 00 3c");
    mini_bytes.extend_from_slice(&[0x7F; 160]);
    let m = MiniFrame::new(5, 60, vec![0x7F; 160]).unwrap();
    assert_eq!(Frame::from(m.clone()).to_bytes(), mini_bytes);
    assert_eq!(parse(&mini_bytes).unwrap(), Frame::Mini(m));
}

#[test]
fn golden_key() {
    let bytes = hex("80 02 00 05 00 00 00 64 02 05 04 0c");
    let f = with_header(
        frame_type::CONTROL,
        control_subclass::RADIO_KEY,
        (2, 5, 100, 2, 5),
    );
    assert_round_trip(&f, &bytes);
}

#[test]
fn golden_reject_frame() {
    let mut f = with_header(frame_type::IAX, iax_subclass::REJECT, (6, 3, 8, 0, 1));
    f.ies = vec![
        Ie::from_value(ie::CAUSE, &IeValue::Str("Unable to negotiate codec".into())).unwrap(),
        Ie::from_value(ie::CAUSECODE, &IeValue::U8(58)).unwrap(),
    ];
    assert_round_trip(&f, &golden_reject());
}

#[test]
fn golden_ies_inside_a_frame() {
    let mut f = FullFrame::new(frame_type::IAX, iax_subclass::REGACK).unwrap();
    f.ies = vec![
        Ie::from_value(
            ie::FORMAT2,
            &IeValue::Versioned {
                version: 0,
                value: format::SLIN16,
            },
        )
        .unwrap(),
        Ie::from_value(
            ie::APPARENT_ADDR,
            &IeValue::Addr("127.0.0.1:4570".parse().unwrap()),
        )
        .unwrap(),
    ];
    let bytes = Frame::from(f.clone()).to_bytes();
    assert_eq!(
        &bytes[12..],
        hex("38 09 00 00 00 00 00 00 00 80 00
                 12 10 02 00 11 da 7f 00 00 01 00 00 00 00 00 00 00 00")
    );
    assert_eq!(full(&bytes), f);
}

#[test]
fn subclass_compression_like_asterisk() {
    assert_eq!(compress_subclass(format::ULAW as i64), Ok(0x04));
    assert_eq!(compress_subclass(format::ALAW as i64), Ok(0x08));
    assert_eq!(compress_subclass(format::GSM as i64), Ok(0x02));
    assert_eq!(compress_subclass(format::SLIN as i64), Ok(0x40));
    assert_eq!(compress_subclass(format::G722 as i64), Ok(0x8C));
    assert_eq!(compress_subclass(format::SLIN16 as i64), Ok(0x8F));
    assert_eq!(compress_subclass(format::G729 as i64), Ok(0x88));
    assert_eq!(compress_subclass(format::OPUS as i64), Ok(0xA2));
    assert_eq!(compress_subclass(0x80), Ok(0x87));
    assert_eq!(compress_subclass(0), Ok(0));
    assert_eq!(compress_subclass(0x7F), Ok(0x7F));
    assert_eq!(compress_subclass(-1), Ok(0xFF));
    assert_eq!(compress_subclass(i64::MIN), Ok(0xBF));
    for bad in [0x81, 0xC0, -2, i64::MAX, 0x8004] {
        assert_eq!(
            compress_subclass(bad),
            Err(FrameError::BadSubclass { value: bad })
        );
    }
    assert_eq!(uncompress_subclass(0x82), 4, "RFC-style ulaw");
    assert_eq!(uncompress_subclass(0x04), 4);
    assert_eq!(uncompress_subclass(0x8F), 0x8000);
    assert_eq!(uncompress_subclass(0xFF), -1);
    assert_eq!(
        uncompress_subclass(0xC2),
        4,
        "bit 6 is ignored like Asterisk's 0x3F mask"
    );
    assert_eq!(uncompress_subclass(0xBF), i64::MIN);
    for csub in 0..=255u8 {
        let v = uncompress_subclass(csub);
        let again = compress_subclass(v).unwrap();
        assert_eq!(uncompress_subclass(again), v, "csub {csub:#x}");
    }
}

#[test]
fn stop_sounds_and_video_marker() {
    let f = FullFrame::new(frame_type::CONTROL, control_subclass::STOP_SOUNDS).unwrap();
    assert_eq!(f.csub, 0xFF);
    assert_eq!(f.subclass(), -1);
    assert!(!f.video_marker());

    let mut v = FullFrame::new(frame_type::VIDEO, format::H263 as i64).unwrap();
    assert_eq!(v.csub, 0x93);
    assert!(!v.video_marker());
    v.csub |= 0x40;
    assert!(v.video_marker());
    assert_eq!(v.subclass(), format::H263 as i64);
    assert_eq!(full(&Frame::from(v.clone()).to_bytes()), v);
    for bad in [0x40, 0x7F, -1] {
        assert_eq!(
            FullFrame::new(frame_type::VIDEO, bad),
            Err(FrameError::BadSubclass { value: bad })
        );
    }
    // 0x44 on a voice frame is just a subclass; on video it is ulaw with the marker.
    let mut g = FullFrame::new(frame_type::VOICE, 0x44).unwrap();
    assert_eq!(g.subclass(), 0x44);
    g.ftype = frame_type::VIDEO;
    assert_eq!(g.subclass(), 4);
    assert!(g.video_marker());
}

#[test]
fn flags_and_masks() {
    let bytes = hex("ff ff ff ff 00 00 00 01 07 08 02 04");
    let f = full(&bytes);
    assert_eq!((f.scall, f.dcall, f.retrans), (0x7FFF, 0x7FFF, true));
    assert_eq!(Frame::from(f).to_bytes(), bytes);
    let f = full(&hex("80 00 00 00 00 00 00 00 00 00 02 04"));
    assert_eq!((f.scall, f.dcall, f.retrans), (0, 0, false));
    // Builders mask 15-bit fields rather than corrupting the flag bits.
    let mut g = FullFrame::new(frame_type::TEXT, 0).unwrap();
    g.scall = 0xFFFF;
    g.dcall = 0x8001;
    let b = Frame::from(g).to_bytes();
    assert_eq!(&b[..4], &hex("ff ff 00 01"));
    let m = parse(&hex("7f ff 12 34")).unwrap();
    assert_eq!(
        m,
        Frame::Mini(MiniFrame {
            scall: 0x7FFF,
            ts16: 0x1234,
            payload: vec![]
        })
    );
}

#[test]
fn video_mini_frames() {
    let bytes = hex("00 00 80 07 80 10 de ad");
    let v = VideoFrame::new(7, true, 0x10, vec![0xde, 0xad]).unwrap();
    assert_eq!(parse(&bytes).unwrap(), Frame::Video(v.clone()));
    assert_eq!(Frame::from(v).to_bytes(), bytes);
    let bytes = hex("00 00 ff ff 7f ff");
    let v = VideoFrame {
        scall: 0x7FFF,
        marker: false,
        ts15: 0x7FFF,
        payload: vec![],
    };
    assert_eq!(parse(&bytes).unwrap(), Frame::Video(v));
    assert!(VideoFrame::new(0x8000, false, 0, vec![]).is_err());
    assert!(VideoFrame::new(1, false, 0x8000, vec![]).is_err());
}

#[test]
fn trunk_with_timestamps() {
    let t = match parse(&golden_trunk()).unwrap() {
        Frame::Trunk(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(t.ts, 1000);
    assert!(t.timestamps);
    assert_eq!(
        t.entries,
        [
            TrunkEntry {
                callno: 2,
                ts16: Some(20),
                payload: vec![0xaa, 0xbb, 0xcc]
            },
            TrunkEntry {
                callno: 7,
                ts16: Some(40),
                payload: vec![]
            },
        ]
    );
    let minis: Vec<MiniFrame> = t.minis().collect();
    assert_eq!(
        minis,
        [
            MiniFrame {
                scall: 2,
                ts16: 20,
                payload: vec![0xaa, 0xbb, 0xcc]
            },
            MiniFrame {
                scall: 7,
                ts16: 40,
                payload: vec![]
            },
        ]
    );
    assert_eq!(Frame::from(t).to_bytes(), golden_trunk());
}

#[test]
fn trunk_without_timestamps() {
    let bytes = hex("00 00 01 00 00 01 23 45  00 09 00 02 11 22  80 00 00 01 33  00 00 00 00");
    let t = match parse(&bytes).unwrap() {
        Frame::Trunk(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(!t.timestamps);
    assert_eq!(t.entries.len(), 3);
    assert_eq!(
        t.entries[1],
        TrunkEntry {
            callno: 0x8000,
            ts16: None,
            payload: vec![0x33]
        }
    );
    // Call number 0 (0x8000 masked) is skipped; the rest take the trunk ts's low bits.
    let minis: Vec<MiniFrame> = t.minis().collect();
    assert_eq!(
        minis,
        [MiniFrame {
            scall: 9,
            ts16: 0x2345,
            payload: vec![0x11, 0x22]
        }]
    );
    assert_eq!(Frame::from(t).to_bytes(), bytes);
}

#[test]
fn trunk_new_checks_consistency() {
    let with = TrunkEntry {
        callno: 2,
        ts16: Some(1),
        payload: vec![],
    };
    let without = TrunkEntry {
        callno: 2,
        ts16: None,
        payload: vec![],
    };
    assert!(TrunkFrame::new(0, true, vec![with.clone()]).is_ok());
    assert!(TrunkFrame::new(0, false, vec![without.clone()]).is_ok());
    assert!(matches!(
        TrunkFrame::new(0, true, vec![without]),
        Err(FrameError::Inconsistent { .. })
    ));
    assert!(matches!(
        TrunkFrame::new(0, false, vec![with]),
        Err(FrameError::Inconsistent { .. })
    ));
    let big = TrunkEntry {
        callno: 2,
        ts16: None,
        payload: vec![0; 65536],
    };
    assert_eq!(
        TrunkFrame::new(0, false, vec![big]),
        Err(FrameError::TooLong {
            what: "trunk entry payload",
            len: 65536,
            max: 65535
        })
    );
    assert!(TrunkFrame::new(0, true, vec![]).is_ok());
}

#[test]
fn mini_new_refuses_call_zero() {
    assert!(MiniFrame::new(0, 0, vec![]).is_err());
    assert!(MiniFrame::new(0x8000, 0, vec![]).is_err());
    assert!(MiniFrame::new(1, 0, vec![]).is_ok());
}

#[test]
fn every_truncation_of_fixed_headers_fails() {
    let cases: [(Vec<u8>, usize); 4] = [
        (hex("80 02 00 05 00 00 00 0c 02 02 06 04"), 12),
        (hex("00 05 00 3c"), 4),
        (hex("00 00 80 07 80 10"), 6),
        (hex("00 00 01 01 00 00 03 e8"), 8),
    ];
    for (bytes, header) in cases {
        for cut in 0..header {
            let err = parse(&bytes[..cut]).unwrap_err();
            assert!(
                matches!(err, FrameError::Truncated { .. }),
                "{bytes:02x?} cut {cut}: {err}"
            );
        }
        assert!(parse(&bytes).is_ok());
    }
    assert_eq!(
        parse(&[]),
        Err(FrameError::Truncated {
            what: "frame header",
            offset: 0,
            needed: 2,
            available: 0
        })
    );
}

#[test]
fn every_truncation_inside_ies_fails_except_on_boundaries() {
    for bytes in [golden_new(), golden_reject()] {
        let mut boundaries = vec![FULL_HEADER_LEN];
        let mut pos = FULL_HEADER_LEN;
        while pos < bytes.len() {
            pos += 2 + usize::from(bytes[pos + 1]);
            boundaries.push(pos);
        }
        for cut in FULL_HEADER_LEN..=bytes.len() {
            let r = parse(&bytes[..cut]);
            if boundaries.contains(&cut) {
                let f = full(&bytes[..cut]);
                assert_eq!(Frame::from(f).to_bytes(), &bytes[..cut]);
            } else {
                let err = r.unwrap_err();
                assert!(
                    matches!(
                        err,
                        FrameError::Truncated { .. } | FrameError::IeOverrun { .. }
                    ),
                    "cut {cut}: {err}"
                );
            }
        }
    }
}

#[test]
fn ie_overrun_fails_the_frame() {
    let mut bytes = golden_reject();
    // CAUSE one byte too long swallows CAUSECODE's id; its length byte then reads as
    // the header of IE 1 with 0x3a bytes that are not there.
    bytes[13] = 0x1A;
    assert_eq!(
        parse(&bytes),
        Err(FrameError::IeOverrun {
            id: 1,
            offset: 40,
            len: 0x3a,
            available: 0
        })
    );
    bytes[13] = 0x40;
    assert_eq!(
        parse(&bytes),
        Err(FrameError::IeOverrun {
            id: 0x16,
            offset: 12,
            len: 0x40,
            available: 28
        })
    );
    let msg = parse(&bytes).unwrap_err().to_string();
    assert!(msg.contains("offset 12"), "{msg}");
}

#[test]
fn non_iax_bodies_are_not_split_into_ies() {
    let mut bytes = hex("80 02 00 05 00 00 00 0c 02 02 07 00");
    bytes.extend_from_slice(b"\x01\xff!NEWKEY!\x00");
    let f = full(&bytes);
    assert!(f.ies.is_empty());
    assert_eq!(f.payload, b"\x01\xff!NEWKEY!\x00");
}

#[test]
fn every_truncation_of_trunk_entries_fails() {
    let bytes = golden_trunk();
    let boundaries = [8usize, 17, 23];
    for cut in 8..=bytes.len() {
        let r = parse(&bytes[..cut]);
        if boundaries.contains(&cut) {
            assert!(r.is_ok(), "cut {cut}");
        } else {
            assert!(
                matches!(r, Err(FrameError::Truncated { .. })),
                "cut {cut}: {r:?}"
            );
        }
    }
    let nots = hex("00 00 01 00 00 00 00 00  00 09 00 02 11 22");
    for cut in 9..nots.len() {
        assert!(parse(&nots[..cut]).is_err(), "cut {cut}");
    }
}

#[test]
fn bad_meta_commands_and_flags() {
    for cmd in [0u8, 2, 3, 0x7F] {
        assert_eq!(
            parse(&[0, 0, cmd, 0, 0, 0, 0, 0]),
            Err(FrameError::BadMetaCommand { metacmd: cmd })
        );
    }
    assert_eq!(
        parse(&[0, 0, 2, 0]),
        Err(FrameError::BadMetaCommand { metacmd: 2 })
    );
    assert_eq!(
        parse(&[0, 0, 1, 2, 0, 0, 0, 0]),
        Err(FrameError::BadTrunkFlags { cmddata: 2 })
    );
    assert!(parse(&[0, 0, 1, 0, 0, 0, 0, 0]).is_ok());
}

#[test]
fn display_names_offset_and_what() {
    let e = parse(&[0x80, 1, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "truncated full frame header at offset 0: needs 12 bytes, 3 left"
    );
    assert!(FrameError::BadMetaCommand { metacmd: 9 }
        .to_string()
        .contains("offset 2"));
}

#[test]
fn names() {
    assert_eq!(frame_type_name(frame_type::IAX), Some("IAX"));
    assert_eq!(frame_type_name(frame_type::DTMF_BEGIN), Some("DTMF_BEGIN"));
    assert_eq!(frame_type_name(0), None);
    assert_eq!(frame_type_name(13), None);
    assert_eq!(
        iax_subclass_name(iax_subclass::CALLTOKEN),
        Some("CALLTOKEN")
    );
    assert_eq!(iax_subclass_name(iax_subclass::NEW), Some("NEW"));
    assert_eq!(iax_subclass_name(0), None);
    assert_eq!(iax_subclass_name(41), None);
    assert_eq!(iax_subclass_name(-1), None);
    assert_eq!(control_subclass_name(-1), Some("STOP_SOUNDS"));
    assert_eq!(control_subclass_name(12), Some("RADIO_KEY"));
    assert_eq!(control_subclass_name(19), None);
}

fn arb_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..=max)
}

fn arb_full() -> impl Strategy<Value = FullFrame> {
    let header = (
        0..=CALLNO_MASK,
        0..=CALLNO_MASK,
        any::<bool>(),
        any::<u32>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    );
    let ies = proptest::collection::vec(
        prop_oneof![
            crate::ie::tests::arb_typed_ie().prop_map(|(id, v)| Ie::from_value(id, &v).unwrap()),
            (any::<u8>(), arb_bytes(255)).prop_map(|(id, data)| Ie { id, data }),
        ],
        0..6,
    );
    (header, ies, arb_bytes(300)).prop_map(
        |((scall, dcall, retrans, ts, oseq, iseq, ftype, csub), ies, payload)| {
            let iax = ftype == frame_type::IAX;
            FullFrame {
                scall,
                dcall,
                retrans,
                ts,
                oseq,
                iseq,
                ftype,
                csub,
                ies: if iax { ies } else { Vec::new() },
                payload: if iax { Vec::new() } else { payload },
            }
        },
    )
}

fn arb_frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        arb_full().prop_map(Frame::Full),
        // Weighted so IAX frames (type 6, with IEs) are common.
        arb_full().prop_map(|mut f| {
            f.ftype = frame_type::IAX;
            f.payload.clear();
            Frame::Full(f)
        }),
        (1..=CALLNO_MASK, any::<u16>(), arb_bytes(300))
            .prop_map(|(s, t, p)| Frame::Mini(MiniFrame::new(s, t, p).unwrap())),
        (0..=MAX15, any::<bool>(), 0..=MAX15, arb_bytes(300))
            .prop_map(|(s, m, t, p)| { Frame::Video(VideoFrame::new(s, m, t, p).unwrap()) }),
        (any::<u32>(), any::<bool>()).prop_flat_map(|(ts, timestamps)| {
            proptest::collection::vec(
                (any::<u16>(), any::<u16>(), arb_bytes(200)).prop_map(move |(c, t, p)| {
                    TrunkEntry {
                        callno: c,
                        ts16: timestamps.then_some(t),
                        payload: p,
                    }
                }),
                0..5,
            )
            .prop_map(move |entries| {
                Frame::Trunk(TrunkFrame::new(ts, timestamps, entries).unwrap())
            })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn build_then_parse_is_identity(frame in arb_frame()) {
        let bytes = frame.to_bytes();
        prop_assert_eq!(bytes.len(), frame.encoded_len());
        prop_assert_eq!(parse(&bytes).unwrap(), frame);
    }

    #[test]
    fn parse_never_panics_and_accepted_bytes_rebuild_exactly(bytes in arb_bytes(400)) {
        if let Ok(frame) = parse(&bytes) {
            prop_assert_eq!(frame.to_bytes(), bytes);
        }
    }

    #[test]
    fn parse_never_panics_on_plausible_headers(
        head in prop_oneof![
            Just(vec![0u8, 0, 1, 0]),
            Just(vec![0u8, 0, 1, 1]),
            Just(vec![0x80u8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 1]),
        ],
        tail in arb_bytes(300),
    ) {
        let mut bytes = head;
        bytes.extend_from_slice(&tail);
        if let Ok(frame) = parse(&bytes) {
            prop_assert_eq!(frame.to_bytes(), bytes);
        }
    }

    #[test]
    fn minis_follow_entries(frame in arb_frame()) {
        if let Frame::Trunk(t) = frame {
            let minis: Vec<MiniFrame> = t.minis().collect();
            let live = t.entries.iter().filter(|e| e.callno & CALLNO_MASK != 0).count();
            prop_assert_eq!(minis.len(), live);
            for m in minis {
                prop_assert!(m.scall != 0);
                let again = parse(&Frame::Mini(m.clone()).to_bytes()).unwrap();
                prop_assert_eq!(again, Frame::Mini(m));
            }
        }
    }
}
