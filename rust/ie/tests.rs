use super::*;
use proptest::prelude::*;

#[test]
fn codec_pref_chars_match_asterisk() {
    // The values iax2.md lists, derived from Asterisk's table (and seen on the wire).
    let expected = [
        (format::G723, b'B'),
        (format::GSM, b'C'),
        (format::ULAW, b'D'),
        (format::ALAW, b'E'),
        (format::G726, b'F'),
        (format::ADPCM, b'G'),
        (format::SLIN, b'H'),
        (format::G729, b'J'),
        (format::G722, b'O'),
        (format::SLIN16, b'P'),
        (format::G719, b']'),
        (format::OPUS, b'f'),
        (format::VP8, b'g'),
    ];
    for (f, c) in expected {
        assert_eq!(codec_pref_char(f), Some(c), "format {f:#x}");
        assert_eq!(codec_pref_format(c), Some(f), "char {}", char::from(c));
    }
    assert_eq!(codec_pref_char(0), None);
    assert_eq!(codec_pref_char(format::CODEC2), None);
    assert_eq!(codec_pref_char(format::ULAW | format::ALAW), None);
    assert_eq!(codec_pref_format(b'A'), None);
    assert_eq!(codec_pref_format(b'^'), None, "placeholder slot");
    assert_eq!(codec_pref_format(b'h'), None);
    assert_eq!(codec_pref_format(0), None);
}

#[test]
fn codec_prefs_string_round_trip() {
    let prefs = [format::SLIN16, format::ULAW, format::ALAW, format::G722];
    let s = encode_codec_prefs(&prefs).unwrap();
    assert_eq!(s, "PDEO");
    assert_eq!(decode_codec_prefs(s.as_bytes()), prefs);
    assert_eq!(decode_codec_prefs(b"D^zE"), [format::ULAW, format::ALAW]);
    assert_eq!(
        encode_codec_prefs(&[format::ULAW, 3]),
        Err(FrameError::UnknownFormat { bits: 3 })
    );
}

#[test]
fn every_table_entry_round_trips() {
    for (i, &f) in CODEC_PREF_TABLE.iter().enumerate() {
        if f == 0 {
            continue;
        }
        let c = codec_pref_char(f).unwrap();
        assert_eq!(usize::from(c - b'A'), i + 1);
        assert_eq!(codec_pref_format(c), Some(f));
        assert!(format::format_name(f).is_some());
    }
}

#[test]
fn kinds_of_named_ies() {
    assert_eq!(ie_kind(CALLED_NUMBER), IeKind::Str);
    assert_eq!(ie_kind(CALLTOKEN), IeKind::Str);
    assert_eq!(ie_kind(VERSION), IeKind::U16);
    assert_eq!(ie_kind(RR_DELAY), IeKind::U16);
    assert_eq!(ie_kind(RR_LOSS), IeKind::U32);
    assert_eq!(ie_kind(CAUSECODE), IeKind::U8);
    assert_eq!(ie_kind(FORMAT2), IeKind::Versioned);
    assert_eq!(ie_kind(APPARENT_ADDR), IeKind::Addr);
    assert_eq!(ie_kind(DATETIME), IeKind::DateTime);
    assert_eq!(ie_kind(AUTOANSWER), IeKind::Empty);
    assert_eq!(ie_kind(ENCKEY), IeKind::Raw);
    assert_eq!(ie_kind(OSPTOKEN), IeKind::Raw);
    assert_eq!(ie_kind(58), IeKind::Raw);
    assert_eq!(ie_kind(255), IeKind::Raw);
    for id in 1..=57u8 {
        assert!(ie_name(id).is_some(), "id {id}");
    }
    assert_eq!(ie_name(0), None);
    assert_eq!(ie_name(58), None);
    assert_eq!(ie_name(CALLINGANI2), Some("CALLINGANI2"));
}

#[test]
fn golden_format2_slin16() {
    let ie = Ie::from_value(
        FORMAT2,
        &IeValue::Versioned {
            version: 0,
            value: format::SLIN16,
        },
    )
    .unwrap();
    let mut out = Vec::new();
    ie.write_to(&mut out);
    assert_eq!(out, [0x38, 0x09, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00]);
}

#[test]
fn golden_apparent_addr_v4() {
    let addr: SocketAddr = "127.0.0.1:4570".parse().unwrap();
    let ie = Ie::from_value(APPARENT_ADDR, &IeValue::Addr(addr)).unwrap();
    let mut out = Vec::new();
    ie.write_to(&mut out);
    assert_eq!(
        out,
        [0x12, 0x10, 0x02, 0x00, 0x11, 0xda, 0x7f, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(ie.value(), Some(IeValue::Addr(addr)));
}

#[test]
fn apparent_addr_v6_layout() {
    let addr = SocketAddr::V6(SocketAddrV6::new(
        "2001:db8::7".parse().unwrap(),
        4569,
        0x0102_0304,
        0x0506_0708,
    ));
    let ie = Ie::from_value(APPARENT_ADDR, &IeValue::Addr(addr)).unwrap();
    assert_eq!(ie.data.len(), 28);
    assert_eq!(&ie.data[0..2], &[10, 0]);
    assert_eq!(&ie.data[2..4], &[0x11, 0xd9]);
    assert_eq!(&ie.data[4..8], &[1, 2, 3, 4]);
    assert_eq!(&ie.data[8..10], &[0x20, 0x01]);
    assert_eq!(&ie.data[24..28], &[8, 7, 6, 5]);
    assert_eq!(ie.value(), Some(IeValue::Addr(addr)));
}

#[test]
fn apparent_addr_bad_images_are_ignored() {
    let big_endian_family = Ie::new(
        APPARENT_ADDR,
        [0, 2, 0x11, 0xd9, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    )
    .unwrap();
    assert_eq!(big_endian_family.value(), None);
    let short = Ie::new(APPARENT_ADDR, [2, 0, 0x11, 0xd9, 127, 0, 0, 1]).unwrap();
    assert_eq!(short.value(), None);
    let v6_family_v4_len = Ie::new(APPARENT_ADDR, [10u8; 16]).unwrap();
    assert_eq!(v6_family_v4_len.value(), None);
    assert_eq!(Ie::new(APPARENT_ADDR, []).unwrap().value(), None);
    // Non-zero IPv4 padding is tolerated, as the kernel and Asterisk ignore it.
    let padded = Ie::new(
        APPARENT_ADDR,
        [2, 0, 0, 80, 10, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9],
    )
    .unwrap();
    assert_eq!(
        padded.value(),
        Some(IeValue::Addr("10.0.0.1:80".parse().unwrap()))
    );
}

#[test]
fn wrong_size_fixed_ies_are_ignored() {
    for (id, good) in [
        (CAUSECODE, 1usize),
        (VERSION, 2),
        (FORMAT, 4),
        (DATETIME, 4),
        (FORMAT2, 9),
    ] {
        for len in 0..12 {
            let ie = Ie::new(id, vec![0u8; len]).unwrap();
            assert_eq!(ie.value().is_some(), len == good, "id {id} len {len}");
        }
    }
    // Presence is all that matters for AUTOANSWER, whatever its body.
    assert_eq!(
        Ie::new(AUTOANSWER, [1, 2]).unwrap().value(),
        Some(IeValue::Empty)
    );
}

#[test]
fn strings_decode_with_replacement() {
    let ie = Ie::new(CAUSE, b"bad \xff byte".to_vec()).unwrap();
    assert_eq!(ie.value(), Some(IeValue::Str("bad \u{fffd} byte".into())));
    assert_eq!(
        Ie::new(CALLTOKEN, []).unwrap().value(),
        Some(IeValue::Str(String::new()))
    );
}

#[test]
fn datetime_golden_and_limits() {
    let dt = IaxDateTime {
        year: 2026,
        month: 11,
        day: 22,
        hour: 3,
        minute: 51,
        second: 46,
    };
    let v = dt.pack().unwrap();
    assert_eq!(
        v,
        (26 << 25) | (11 << 21) | (22 << 16) | (3 << 11) | (51 << 5) | 23
    );
    assert_eq!(IaxDateTime::unpack(v), dt);
    let odd = IaxDateTime { second: 47, ..dt };
    assert_eq!(odd.pack().unwrap(), v, "odd seconds round down");
    assert_eq!(IaxDateTime::unpack(u32::MAX).year, 2127);
    assert_eq!(IaxDateTime::unpack(u32::MAX).second, 62);
    for bad in [
        IaxDateTime { year: 1999, ..dt },
        IaxDateTime { year: 2128, ..dt },
        IaxDateTime { month: 0, ..dt },
        IaxDateTime { month: 13, ..dt },
        IaxDateTime { day: 0, ..dt },
        IaxDateTime { day: 32, ..dt },
        IaxDateTime { hour: 24, ..dt },
        IaxDateTime { minute: 60, ..dt },
        IaxDateTime { second: 60, ..dt },
    ] {
        assert!(
            matches!(bad.pack(), Err(FrameError::OutOfRange { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn from_value_checks_kind_and_length() {
    assert_eq!(
        Ie::from_value(FORMAT, &IeValue::U16(4)),
        Err(FrameError::IeKindMismatch {
            id: FORMAT,
            expected: IeKind::U32,
            got: IeKind::U16
        })
    );
    // Raw bytes are accepted for any id.
    assert_eq!(
        Ie::from_value(FORMAT, &IeValue::Raw(vec![1])).unwrap().data,
        [1]
    );
    let long = "x".repeat(256);
    assert_eq!(
        Ie::from_value(CAUSE, &IeValue::Str(long)),
        Err(FrameError::IeTooLong {
            id: CAUSE,
            len: 256
        })
    );
    assert!(Ie::from_value(CAUSE, &IeValue::Str("y".repeat(255))).is_ok());
    assert_eq!(
        Ie::new(1, vec![0; 256]),
        Err(FrameError::IeTooLong { id: 1, len: 256 })
    );
    assert_eq!(
        Ie::from_value(AUTOANSWER, &IeValue::Empty).unwrap().data,
        Vec::<u8>::new()
    );
}

#[test]
fn write_clamps_an_oversized_literal() {
    let ie = Ie {
        id: 2,
        data: vec![7; 300],
    };
    let mut out = Vec::new();
    ie.write_to(&mut out);
    assert_eq!(out.len(), 257);
    assert_eq!(out[1], 255);
}

#[test]
fn debug_redacts_secrets() {
    let pw = Ie::new(PASSWORD, b"hunter2".to_vec()).unwrap();
    let s = format!("{pw:?}");
    assert!(!s.contains("68"), "{s}");
    assert!(s.contains("redacted"));
    let md5 = Ie::new(MD5_RESULT, b"821d4b0b8252f25b8324273857ef0fb4".to_vec()).unwrap();
    assert!(format!("{md5:?}").contains("redacted"));
    let plain = Ie::new(CALLED_NUMBER, b"1000".to_vec()).unwrap();
    assert!(format!("{plain:?}").contains("31"));
}

#[test]
fn parse_ies_errors() {
    assert_eq!(parse_ies(&[], 12).unwrap(), Vec::<Ie>::new());
    assert_eq!(
        parse_ies(&[1], 12),
        Err(FrameError::Truncated {
            what: "IE header",
            offset: 12,
            needed: 2,
            available: 1
        })
    );
    assert_eq!(
        parse_ies(&[1, 3, b'a', b'b'], 12),
        Err(FrameError::IeOverrun {
            id: 1,
            offset: 12,
            len: 3,
            available: 2
        })
    );
    assert_eq!(
        parse_ies(&[25, 0, 1, 1, b'x', 9], 12),
        Err(FrameError::Truncated {
            what: "IE header",
            offset: 17,
            needed: 2,
            available: 1
        })
    );
    let ok = parse_ies(&[25, 0, 1, 1, b'x'], 12).unwrap();
    assert_eq!(
        ok,
        [
            Ie {
                id: 25,
                data: vec![]
            },
            Ie {
                id: 1,
                data: b"x".to_vec()
            }
        ]
    );
}

pub(crate) fn arb_value_for(id: u8) -> BoxedStrategy<IeValue> {
    match ie_kind(id) {
        IeKind::Str => "\\PC{0,60}".prop_map(IeValue::Str).boxed(),
        IeKind::U8 => any::<u8>().prop_map(IeValue::U8).boxed(),
        IeKind::U16 => any::<u16>().prop_map(IeValue::U16).boxed(),
        IeKind::U32 => any::<u32>().prop_map(IeValue::U32).boxed(),
        IeKind::Versioned => (any::<u8>(), any::<u64>())
            .prop_map(|(version, value)| IeValue::Versioned { version, value })
            .boxed(),
        IeKind::Addr => prop_oneof![
            (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| IeValue::Addr(SocketAddr::V4(
                SocketAddrV4::new(ip.into(), port)
            ))),
            (any::<[u8; 16]>(), any::<u16>(), any::<u32>(), any::<u32>()).prop_map(
                |(ip, port, flow, scope)| IeValue::Addr(SocketAddr::V6(SocketAddrV6::new(
                    ip.into(),
                    port,
                    flow,
                    scope
                )))
            ),
        ]
        .boxed(),
        IeKind::DateTime => (
            2000u16..=2127,
            1u8..=12,
            1u8..=31,
            0u8..=23,
            0u8..=59,
            0u8..=29,
        )
            .prop_map(|(year, month, day, hour, minute, s)| {
                IeValue::DateTime(IaxDateTime {
                    year,
                    month,
                    day,
                    hour,
                    minute,
                    second: s * 2,
                })
            })
            .boxed(),
        IeKind::Empty => Just(IeValue::Empty).boxed(),
        IeKind::Raw => proptest::collection::vec(any::<u8>(), 0..=255)
            .prop_map(IeValue::Raw)
            .boxed(),
    }
}

pub(crate) fn arb_typed_ie() -> impl Strategy<Value = (u8, IeValue)> {
    any::<u8>().prop_flat_map(|id| arb_value_for(id).prop_map(move |v| (id, v)))
}

proptest! {
    #[test]
    fn typed_values_round_trip((id, value) in arb_typed_ie()) {
        let ie = Ie::from_value(id, &value).unwrap();
        prop_assert_eq!(ie.value(), Some(value));
        let mut out = Vec::new();
        ie.write_to(&mut out);
        prop_assert_eq!(parse_ies(&out, 0).unwrap(), vec![ie]);
    }

    #[test]
    fn raw_ies_round_trip(ies in proptest::collection::vec(
        (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..=255))
            .prop_map(|(id, data)| Ie { id, data }), 0..8)) {
        let mut out = Vec::new();
        write_ies(&ies, &mut out);
        prop_assert_eq!(parse_ies(&out, 0).unwrap(), ies);
    }

    #[test]
    fn ie_value_never_panics(id in any::<u8>(), data in proptest::collection::vec(any::<u8>(), 0..=40)) {
        let _ = Ie { id, data }.value();
    }

    #[test]
    fn datetime_pack_unpack(v in any::<u32>()) {
        let dt = IaxDateTime::unpack(v);
        if let Ok(packed) = dt.pack() {
            prop_assert_eq!(packed, v);
        }
    }
}
