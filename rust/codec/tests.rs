use super::*;
use proptest::prelude::*;

/// FNV-1a 64 over a byte stream: a compact fingerprint of a whole table.
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn all_inputs() -> impl Iterator<Item = i16> {
    i16::MIN..=i16::MAX
}

// The fingerprints and spot values below were produced by CPython 3.11 `audioop`
// (`lin2ulaw`, `lin2alaw` over all 65 536 little-endian samples -32768..=32767 in order;
// `ulaw2lin`, `alaw2lin` over codes 0..=255, each result as little-endian bytes).
const AUDIOOP_LIN2ULAW_FNV: u64 = 0xd5ee_23f7_d0ff_ae91;
const AUDIOOP_LIN2ALAW_FNV: u64 = 0xf030_666e_b780_cf25;
const AUDIOOP_ULAW2LIN_FNV: u64 = 0xb91e_65d6_8481_a1a8;
const AUDIOOP_ALAW2LIN_FNV: u64 = 0x693a_40ca_62a3_d2a5;

#[test]
fn ulaw_encode_matches_audioop_for_all_65536_inputs() {
    let h = fnv1a(all_inputs().map(ulaw_encode_sample));
    assert_eq!(h, AUDIOOP_LIN2ULAW_FNV, "{h:#x}");
}

#[test]
fn alaw_encode_matches_audioop_for_all_65536_inputs() {
    let h = fnv1a(all_inputs().map(alaw_encode_sample));
    assert_eq!(h, AUDIOOP_LIN2ALAW_FNV, "{h:#x}");
}

#[test]
fn ulaw_decode_matches_audioop_for_all_256_codes() {
    let h = fnv1a((0..=255u8).flat_map(|c| ulaw_decode_sample(c).to_le_bytes()));
    assert_eq!(h, AUDIOOP_ULAW2LIN_FNV, "{h:#x}");
}

#[test]
fn alaw_decode_matches_audioop_for_all_256_codes() {
    let h = fnv1a((0..=255u8).flat_map(|c| alaw_decode_sample(c).to_le_bytes()));
    assert_eq!(h, AUDIOOP_ALAW2LIN_FNV, "{h:#x}");
}

#[test]
fn arithmetic_decoders_equal_the_tables() {
    for c in 0..=255u8 {
        assert_eq!(ulaw_decode_formula(c), ulaw_decode_sample(c), "ulaw {c:#x}");
        assert_eq!(alaw_decode_formula(c), alaw_decode_sample(c), "alaw {c:#x}");
    }
}

#[test]
fn dispatched_and_portable_decoders_agree() {
    let codes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    for law in [Law::Ulaw, Law::Alaw] {
        let (mut a, mut b) = (vec![0i16; codes.len()], vec![0i16; codes.len()]);
        decode_g711(law, &codes, a.as_mut_slice());
        decode_g711_portable(law, &codes, b.as_mut_slice());
        assert_eq!(a, b);
        let (mut a, mut b) = (vec![0u8; 2 * codes.len()], vec![0u8; 2 * codes.len()]);
        decode_g711(law, &codes, NeOut(&mut a));
        decode_g711_portable(law, &codes, NeOut(&mut b));
        assert_eq!(a, b);
    }
}

#[test]
fn spot_values_match_audioop() {
    // (sample, µ-law, A-law) as printed by audioop.lin2ulaw / lin2alaw.
    let cases: [(i16, u8, u8); 20] = [
        (-32768, 0x00, 0x2a),
        (-8192, 0x1f, 0x0a),
        (-100, 0x72, 0x53),
        (-33, 0x7a, 0x57),
        (-32, 0x7b, 0x54),
        (-5, 0x7e, 0x55),
        (-1, 0x7e, 0x55),
        (0, 0xff, 0xd5),
        (3, 0xff, 0xd5),
        (4, 0xfe, 0xd5),
        (8, 0xfe, 0xd5),
        (31, 0xfb, 0xd4),
        (32, 0xfb, 0xd7),
        (100, 0xf2, 0xd3),
        (8159, 0x9f, 0x8a),
        (8160, 0x9f, 0x8a),
        (32124, 0x80, 0xaa),
        (32767, 0x80, 0xaa),
        (-32124, 0x00, 0x2a),
        (-31, 0x7b, 0x54),
    ];
    for (x, u, a) in cases {
        assert_eq!(ulaw_encode_sample(x), u, "ulaw({x})");
        assert_eq!(alaw_encode_sample(x), a, "alaw({x})");
    }
    // Every 17th code, from audioop.ulaw2lin / alaw2lin.
    let ulaw: [i16; 16] = [
        -32124, -15484, -7420, -3516, -1628, -716, -276, -64, 23932, 11388, 5372, 2492, 1116, 460,
        148, 0,
    ];
    let alaw: [i16; 16] = [
        -5504, -2624, -24064, -11520, -280, -8, -1248, -592, 7552, 3648, 32256, 15616, 408, 136,
        1760, 848,
    ];
    for (k, (&u, &a)) in ulaw.iter().zip(&alaw).enumerate() {
        let code = (k * 17) as u8;
        assert_eq!(ulaw_decode_sample(code), u, "ulaw2lin({code})");
        assert_eq!(alaw_decode_sample(code), a, "alaw2lin({code})");
    }
}

#[test]
fn decode_then_encode_is_identity_except_negative_zero() {
    for c in 0..=255u8 {
        let back = ulaw_encode_sample(ulaw_decode_sample(c));
        // 0x7F decodes to 0 (the µ-law "negative zero"), which encodes as 0xFF.
        let want = if c == 0x7F { 0xFF } else { c };
        assert_eq!(back, want, "ulaw code {c:#x}");
        assert_eq!(
            alaw_encode_sample(alaw_decode_sample(c)),
            c,
            "alaw code {c:#x}"
        );
    }
}

#[test]
fn encode_is_monotonic_in_the_decoded_value() {
    // A larger input never decodes to a smaller value: the quantiser is order-preserving.
    type Pair = (fn(i16) -> u8, fn(u8) -> i16);
    let pairs: [Pair; 2] = [
        (ulaw_encode_sample, ulaw_decode_sample),
        (alaw_encode_sample, alaw_decode_sample),
    ];
    for (enc, dec) in pairs {
        let mut prev = i16::MIN;
        for x in all_inputs() {
            let y = dec(enc(x));
            assert!(y >= prev, "x={x}");
            prev = y;
        }
    }
}

#[test]
fn format_bits_and_rates() {
    let want = [
        (Codec::Ulaw, 0x4, 8000, 160),
        (Codec::Alaw, 0x8, 8000, 160),
        (Codec::Slin, 0x40, 8000, 320),
        (Codec::Slin16, 0x8000, 16000, 640),
    ];
    for (c, bit, rate, frame20) in want {
        assert_eq!(c.format_bit(), bit);
        assert_eq!(Codec::from_format_bit(bit), Ok(c));
        assert_eq!(c.rate(), rate);
        assert_eq!(c.samples_per_ms() as u32 * 1000, rate);
        assert_eq!(c.bytes_for_samples(c.samples_per_ms() * 20), frame20);
    }
    for bad in [0, 0x1, 0x2, 0xC, 0x10, 0x4 | 0x40, 1 << 40] {
        assert_eq!(
            Codec::from_format_bit(bad),
            Err(CodecError::UnsupportedFormat { bits: bad })
        );
    }
}

#[test]
fn slin_is_big_endian_and_slin16_little_endian_on_the_wire() {
    let pcm = [0x0102i16, -2];
    let mut wire = Vec::new();
    Codec::Slin.encode(&pcm, &mut wire);
    assert_eq!(wire, [0x01, 0x02, 0xFF, 0xFE]);
    wire.clear();
    Codec::Slin16.encode(&pcm, &mut wire);
    assert_eq!(wire, [0x02, 0x01, 0xFE, 0xFF]);
    let mut back = Vec::new();
    Codec::Slin16.decode(&wire, &mut back).unwrap();
    assert_eq!(back, pcm);
    back.clear();
    Codec::Slin
        .decode(&[0x80, 0x00, 0x7F, 0xFF], &mut back)
        .unwrap();
    assert_eq!(back, [i16::MIN, i16::MAX]);
}

#[test]
fn odd_slin_payload_is_an_error_and_leaves_output_alone() {
    let mut out = vec![7i16];
    for c in [Codec::Slin, Codec::Slin16] {
        assert_eq!(
            c.decode(&[1, 2, 3], &mut out),
            Err(CodecError::OddLength { len: 3 })
        );
        assert_eq!(out, [7]);
        let mut buf = [0u8; 8];
        assert_eq!(
            c.decode_to_ne_bytes_into(&[1], &mut buf),
            Err(CodecError::OddLength { len: 1 })
        );
    }
    // G.711 has no odd/even constraint on the wire, but PCM bytes must be whole samples.
    let mut wire = [0u8; 4];
    assert_eq!(
        Codec::Ulaw.encode_ne_bytes_into(&[0, 0, 0], &mut wire),
        Err(CodecError::OddLength { len: 3 })
    );
}

#[test]
fn slice_variants_report_short_output() {
    let pcm = [0i16; 10];
    let mut small = [0u8; 9];
    assert_eq!(
        Codec::Ulaw.encode_into(&pcm, &mut small),
        Err(CodecError::OutputTooSmall {
            needed: 10,
            available: 9
        })
    );
    let mut out16 = [0i16; 4];
    assert_eq!(
        Codec::Slin.decode_into(&[0u8; 10], &mut out16),
        Err(CodecError::OutputTooSmall {
            needed: 5,
            available: 4
        })
    );
    let mut big = [0xAAu8; 12];
    assert_eq!(Codec::Ulaw.encode_into(&pcm, &mut big), Ok(10));
    assert_eq!(
        big[10..],
        [0xAA, 0xAA],
        "bytes past the result are untouched"
    );
}

#[test]
fn error_messages_are_informative() {
    assert!(CodecError::OddLength { len: 3 }.to_string().contains('3'));
    assert!(CodecError::UnsupportedFormat { bits: 0x10 }
        .to_string()
        .contains("0x10"));
}

proptest! {
    #[test]
    fn all_apis_agree(pcm in proptest::collection::vec(any::<i16>(), 0..400)) {
        let ne: Vec<u8> = pcm.iter().flat_map(|x| x.to_ne_bytes()).collect();
        for c in Codec::ALL {
            let mut wire = Vec::new();
            c.encode(&pcm, &mut wire);
            prop_assert_eq!(wire.len(), c.bytes_for_samples(pcm.len()));
            let mut wire2 = vec![0u8; wire.len() + 3];
            prop_assert_eq!(c.encode_into(&pcm, &mut wire2), Ok(wire.len()));
            prop_assert_eq!(&wire2[..wire.len()], &wire[..]);
            let mut wire3 = vec![0u8; wire.len()];
            prop_assert_eq!(c.encode_ne_bytes_into(&ne, &mut wire3), Ok(wire.len()));
            prop_assert_eq!(&wire3, &wire);

            let mut dec = Vec::new();
            c.decode(&wire, &mut dec).unwrap();
            let mut dec2 = vec![0i16; pcm.len()];
            prop_assert_eq!(c.decode_into(&wire, &mut dec2), Ok(pcm.len()));
            prop_assert_eq!(&dec2, &dec);
            let mut dec3 = vec![0u8; ne.len()];
            prop_assert_eq!(c.decode_to_ne_bytes_into(&wire, &mut dec3), Ok(ne.len()));
            let dec3: Vec<i16> = dec3.chunks_exact(2).map(ne_i16).collect();
            prop_assert_eq!(&dec3, &dec);
            match c {
                Codec::Slin | Codec::Slin16 => prop_assert_eq!(&dec, &pcm),
                Codec::Ulaw => for (&x, &y) in pcm.iter().zip(&dec) {
                    prop_assert_eq!(y, ulaw_decode_sample(ulaw_encode_sample(x)));
                },
                Codec::Alaw => for (&x, &y) in pcm.iter().zip(&dec) {
                    prop_assert_eq!(y, alaw_decode_sample(alaw_encode_sample(x)));
                },
            }
        }
    }

    #[test]
    fn g711_quantisation_error_is_bounded(x in any::<i16>()) {
        // The step in the top segment is 1024 (µ-law) / 1024 (A-law); clipping above
        // 32124 / 32256 adds at most 643 more for µ-law.
        let eu = (i32::from(ulaw_decode_sample(ulaw_encode_sample(x))) - i32::from(x)).abs();
        let ea = (i32::from(alaw_decode_sample(alaw_encode_sample(x))) - i32::from(x)).abs();
        prop_assert!(eu <= 1024, "ulaw err {}", eu);
        prop_assert!(ea <= 1024, "alaw err {}", ea);
    }
}
