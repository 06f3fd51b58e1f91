use super::*;

const VECTORS: &[u8] = include_bytes!("../../tests/data/gsm/vectors.bin");

/// Reads the vector file's sections (tests/data/gsm/make_vectors.py writes it).
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn count(&mut self) -> usize {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes")) as usize
    }
    fn pcm(&mut self) -> [i16; FRAME_SAMPLES] {
        let raw = self.take(FRAME_SAMPLES * 2);
        std::array::from_fn(|i| i16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]))
    }
    fn frame(&mut self) -> [u8; FRAME_BYTES] {
        self.take(FRAME_BYTES).try_into().expect("33 bytes")
    }
}

#[test]
fn encoder_matches_libgsm_on_speech_noise_and_silence() {
    let mut r = Reader(VECTORS);
    let n = r.count();
    assert!(n >= 80, "the vectors hold {n} frames");
    let mut enc = Encoder::default();
    for i in 0..n {
        let pcm = r.pcm();
        let want = r.frame();
        assert_eq!(enc.encode(&pcm), want, "frame {i}");
    }
}

#[test]
fn decoder_matches_libgsm_on_random_frames() {
    let mut r = Reader(VECTORS);
    let n = r.count();
    r.take(n * (FRAME_SAMPLES * 2 + FRAME_BYTES));
    let n = r.count();
    assert!(n >= 40);
    let mut dec = Decoder::default();
    let mut out = [0i16; FRAME_SAMPLES];
    for i in 0..n {
        let frame = r.frame();
        let want = r.pcm();
        dec.decode(&frame, &mut out).expect("signed frame");
        assert_eq!(out, want, "frame {i}");
    }
    assert!(r.0.is_empty());
}

#[test]
fn pack_and_unpack_are_inverse_and_the_signature_is_checked() {
    let mut r = Reader(VECTORS);
    let n = r.count();
    for _ in 0..n {
        r.pcm();
        let frame = r.frame();
        let p = Params::unpack(&frame).expect("libgsm frames carry the signature");
        assert_eq!(p.pack(), frame);
    }
    let mut bad = [0u8; FRAME_BYTES];
    bad[0] = 0xC5;
    let mut dec = Decoder::default();
    let mut out = [7i16; FRAME_SAMPLES];
    assert_eq!(dec.decode(&bad, &mut out), Err(BadFrame));
    assert!(
        out.iter().all(|&s| s == 7),
        "a refused frame writes nothing"
    );
}

#[test]
fn a_tone_survives_the_round_trip() {
    let mut enc = Encoder::default();
    let mut dec = Decoder::default();
    let mut out = [0i16; FRAME_SAMPLES];
    let (mut num, mut den) = (0f64, 0f64);
    for f in 0..25 {
        let pcm: [i16; FRAME_SAMPLES] = std::array::from_fn(|i| {
            let t = (f * FRAME_SAMPLES + i) as f64 / 8000.0;
            (8000.0 * (2.0 * std::f64::consts::PI * 440.0 * t).sin()) as i16
        });
        dec.decode(&enc.encode(&pcm), &mut out).expect("decodes");
        if f >= 5 {
            num += out.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>();
            den += pcm.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>();
        }
    }
    // A codec delay shifts the phase but keeps the power of a steady tone.
    let ratio_db = 10.0 * (num / den).log10();
    assert!(ratio_db.abs() < 1.5, "power ratio {ratio_db:.2} dB");
}

#[test]
fn the_basic_operators_saturate_and_wrap_as_the_recommendation_says() {
    use super::ops::*;
    assert_eq!(add(32000, 1000), MAX_WORD);
    assert_eq!(sub(-32000, 1000), MIN_WORD);
    assert_eq!(mult(MIN_WORD, MAX_WORD), -32767);
    assert_eq!(mult_r(MIN_WORD, MAX_WORD), -32767);
    assert_eq!(mult_r(16384, 3), 2);
    assert_eq!(abs(MIN_WORD), MAX_WORD);
    assert_eq!(norm(1), 30);
    assert_eq!(norm(-1), 31);
    assert_eq!(norm(-1_073_741_824), 0);
    assert_eq!(norm(0x4000_0000), 0);
    assert_eq!(div(1, 2), 16384);
    assert_eq!(div(5, 5), 32767);
    assert_eq!(asl(1, -1), 0);
    assert_eq!(asl(-5, -20), -1);
    assert_eq!(asr(0x4000, -1), MIN_WORD);
    assert_eq!(asr(-7, 20), -1);
}
