use super::*;
use crate::polyphase::{kaiser, sinc};
use crate::test_signal::{
    amplitude, assert_matches_reference, db, hash_noise, pieces, square_wave, tone,
};
use proptest::prelude::*;
use std::f64::consts::PI;

/// Re-runs the offline design in the module docs.
fn design() -> Vec<f64> {
    let (n_taps, beta) = (67usize, 7.8f64);
    let c = (n_taps - 1) / 2;
    let mut h: Vec<f64> = (0..n_taps)
        .map(|n| {
            let t = n as f64 - c as f64;
            let r = 2.0 * n as f64 / (n_taps - 1) as f64 - 1.0;
            0.5 * sinc(t / 2.0) * kaiser(r, beta)
        })
        .collect();
    let side: f64 = h.iter().step_by(2).sum();
    for v in h.iter_mut().step_by(2) {
        *v *= 0.5 / side;
    }
    h
}

#[test]
fn committed_taps_are_the_kaiser_halfband_design() {
    let h = design();
    assert_eq!(h[33], 0.5);
    for (i, &t) in TAPS.iter().enumerate() {
        let want = h[33 + 2 * i + 1];
        assert!((want - h[33 - 2 * i - 1]).abs() < 1e-15, "symmetry");
        assert!(
            (f64::from(t) - want).abs() <= 1e-7 * want.abs(),
            "tap {i}: {t} vs {want}"
        );
    }
    for k in (1..=16).map(|j| 2 * j) {
        assert!(h[33 + k].abs() < 1e-15, "halfband zero at offset {k}");
    }
    // Each polyphase branch has unity DC gain.
    let side: f64 = TAPS.iter().map(|&t| 2.0 * f64::from(t)).sum();
    assert!((side - 0.5).abs() < 1e-7, "{side}");
}

fn up(x: &[i16]) -> Vec<i16> {
    let mut out = Vec::new();
    Upsampler::new().process(x, &mut out);
    out
}

fn down(x: &[i16]) -> Vec<i16> {
    let mut out = Vec::new();
    Downsampler::new().process(x, &mut out);
    out
}

const AMP: f64 = 16000.0;

#[test]
fn rounding_is_to_nearest_even_and_saturating() {
    let cases = [
        (0.0, 0),
        (0.49, 0),
        (0.5, 0),
        (1.5, 2),
        (2.5, 2),
        (-0.5, 0),
        (-1.5, -2),
        (-2.51, -3),
        (32766.5, 32766),
        (32767.4, 32767),
        (40000.0, 32767),
        (-32768.6, -32768),
        (-1.0e9, -32768),
        (f32::INFINITY, 32767),
        (f32::NEG_INFINITY, -32768),
    ];
    for (v, want) in cases {
        assert_eq!(to_i16(v), want, "{v}");
    }
}

#[test]
fn passband_tones_survive_within_a_fraction_of_a_db() {
    for f in [100.0, 300.0, 1000.0, 2000.0, 3000.0, 3400.0] {
        // 8 kHz → 16 kHz: skip 0.1 s of warm-up, measure over 1 s.
        let y = up(&tone(f, 8000.0, AMP, 8800));
        let gain = db(amplitude(&y[1600..17600], f, 16000.0) / AMP);
        assert!(gain.abs() < 0.01, "up {f} Hz: {gain} dB");
        let y = down(&tone(f, 16000.0, AMP, 17600));
        let gain = db(amplitude(&y[800..8800], f, 8000.0) / AMP);
        assert!(gain.abs() < 0.01, "down {f} Hz: {gain} dB");
    }
}

#[test]
fn five_khz_is_rejected_when_going_down() {
    let y = down(&tone(5000.0, 16000.0, AMP, 17600));
    // 5 kHz at 16 kHz folds to 3 kHz at 8 kHz.
    let rejection = -db(amplitude(&y[800..8800], 3000.0, 8000.0) / AMP);
    assert!(rejection >= 60.0, "{rejection} dB");
}

#[test]
fn stopband_sweep_rejects_aliases_and_images_by_60_db() {
    let mut worst_down = f64::INFINITY;
    let mut worst_up = f64::INFINITY;
    for f in (4600..8000).step_by(100).map(f64::from) {
        let y = down(&tone(f, 16000.0, AMP, 17600));
        worst_down = worst_down.min(-db(amplitude(&y[800..8800], 8000.0 - f, 8000.0) / AMP));
        // Image of an 8 kHz tone at 8000 - f lands on f at 16 kHz.
        let x = tone(8000.0 - f, 8000.0, AMP, 8800);
        let y = up(&x);
        worst_up = worst_up.min(-db(amplitude(&y[1600..17600], f, 16000.0) / AMP));
    }
    assert!(worst_down >= 60.0, "alias rejection {worst_down} dB");
    assert!(worst_up >= 60.0, "image rejection {worst_up} dB");
}

#[test]
fn latency_is_the_stated_delay() {
    // An impulse at 8 kHz sample 0 comes out of the centre phase at 16 kHz sample 33.
    let mut x = vec![0i16; 64];
    x[0] = 10000;
    let y = up(&x);
    let peak = (0..y.len()).max_by_key(|&k| y[k]).unwrap();
    assert_eq!(peak, DELAY_16K);
    assert_eq!(y[DELAY_16K], 10000);
    assert_eq!(Upsampler::new().delay(), 33.0);
    assert_eq!(Downsampler::new().delay(), 16.5);
    // Up then down: an 8 kHz signal comes back delayed by exactly 33 samples.
    let x = tone(1000.0, 8000.0, AMP, 800);
    let back = down(&up(&x));
    for k in 100..800 {
        let d = (i32::from(back[k]) - i32::from(x[k - 33])).abs();
        assert!(d <= 2, "k={k}: {} vs {}", back[k], x[k - 33]);
    }
}

#[test]
fn dc_passes_at_unity_gain() {
    let y = up(&[1000i16; 400]);
    assert!(
        y[100..].iter().all(|&v| (v - 1000).abs() <= 1),
        "{:?}",
        &y[100..110]
    );
    let y = down(&[-1000i16; 400]);
    assert!(
        y[50..].iter().all(|&v| (v + 1000).abs() <= 1),
        "{:?}",
        &y[50..60]
    );
}

/// Textbook definitions in f64: zero-stuff and filter, or filter and keep every other.
fn reference_up(x: &[i16]) -> Vec<f64> {
    let h = design();
    (0..2 * x.len())
        .map(|n| {
            let mut acc = 0.0;
            for (k, &hk) in h.iter().enumerate() {
                if k <= n && (n - k) % 2 == 0 {
                    acc += 2.0 * hk * f64::from(x[(n - k) / 2]);
                }
            }
            acc
        })
        .collect()
}

fn reference_down(x: &[i16]) -> Vec<f64> {
    let h = design();
    (0..x.len() / 2)
        .map(|m| {
            let mut acc = 0.0;
            for (k, &hk) in h.iter().enumerate() {
                if k <= 2 * m {
                    acc += hk * f64::from(x[2 * m - k]);
                }
            }
            acc
        })
        .collect()
}

#[test]
fn polyphase_equals_direct_convolution_and_saturates() {
    // A full-scale square wave rings past ±32767 (Gibbs): the output must sit on the rail
    // there rather than wrap.
    let square = square_wave(640, 8);
    let want = reference_up(&square);
    assert!(want.iter().any(|&w| w > 32767.5) && want.iter().any(|&w| w < -32768.5));
    assert_matches_reference(&up(&square), &want);
    let want = reference_down(&square);
    assert!(want.iter().any(|&w| w > 32767.5));
    assert_matches_reference(&down(&square), &want);
    let noise = hash_noise(700);
    assert_matches_reference(&up(&noise), &reference_up(&noise));
    assert_matches_reference(&down(&noise), &reference_down(&noise));
}

/// Feeds `x` to `rs` in calls of `frame` samples and checks every output from `skip` on
/// against the ideal 1 kHz sine of amplitude AMP, output k lying at `at(k)` seconds.
fn assert_tracks_1khz(
    rs: &mut impl Resample,
    x: &[i16],
    frame: usize,
    skip: usize,
    at: impl Fn(usize) -> f64,
) {
    let mut y = Vec::new();
    for frame in x.chunks(frame) {
        rs.process(frame, &mut y);
    }
    for (k, &v) in y.iter().enumerate().skip(skip) {
        let ideal = AMP * (2.0 * PI * 1000.0 * at(k)).sin();
        assert!((f64::from(v) - ideal).abs() < 3.0, "k={k}: {v} vs {ideal}");
    }
}

#[test]
fn no_click_at_frame_edges() {
    // A 1 kHz tone fed in 20 ms frames stays within a couple of LSB of the ideal delayed
    // tone at every sample, frame edges included.
    let x = tone(1000.0, 8000.0, AMP, 1600);
    assert_tracks_1khz(&mut Upsampler::new(), &x, 160, 200, |k| {
        (k as f64 - 33.0) / 16000.0
    });
    let x = tone(1000.0, 16000.0, AMP, 3200);
    assert_tracks_1khz(&mut Downsampler::new(), &x, 320, 100, |k| {
        (2.0 * k as f64 - 33.0) / 16000.0
    });
}

#[test]
fn reset_restores_a_fresh_state() {
    let x = tone(700.0, 8000.0, AMP, 500);
    let mut u = Upsampler::new();
    let mut d = Downsampler::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    u.process(&x, &mut a);
    d.process(&x[..33], &mut b);
    u.reset();
    d.reset();
    let (mut a2, mut b2) = (Vec::new(), Vec::new());
    u.process(&x, &mut a2);
    d.process(&x, &mut b2);
    assert_eq!(a2, up(&x));
    assert_eq!(b2, down(&x));
}

#[test]
fn odd_input_leaves_a_pending_sample() {
    let mut d = Downsampler::new();
    let mut out = Vec::new();
    d.process(&[1, 2, 3], &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(d.output_len(1), 1);
    d.process(&[], &mut out);
    assert_eq!(out.len(), 1);
    d.process(&[4], &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out, down(&[1, 2, 3, 4]));
}

#[test]
fn slice_and_byte_variants_check_sizes() {
    let mut u = Upsampler::new();
    let mut d = Downsampler::new();
    let mut small = [0i16; 5];
    assert_eq!(
        u.process_into(&[0; 3], &mut small),
        Err(ResampleError::OutputTooSmall {
            needed: 6,
            available: 5
        })
    );
    assert_eq!(d.process_into(&[0; 10], &mut small), Ok(5));
    let mut bytes = [0u8; 16];
    assert_eq!(
        u.process_ne_bytes_into(&[0; 3], &mut bytes),
        Err(ResampleError::OddLength { len: 3 })
    );
    assert_eq!(
        d.process_ne_bytes_into(&[0; 5], &mut bytes),
        Err(ResampleError::OddLength { len: 5 })
    );
    assert_eq!(u.process_ne_bytes_into(&[0; 8], &mut bytes), Ok(16));
    assert!(ResampleError::OddLength { len: 5 }
        .to_string()
        .contains('5'));
}

proptest! {
    #[test]
    fn streaming_in_pieces_equals_one_call(
        x in proptest::collection::vec(any::<i16>(), 0..900),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole_up = up(&x);
        let whole_down = down(&x);
        let mut u = Upsampler::new();
        let mut d = Downsampler::new();
        let (mut ys, mut zs) = (Vec::new(), Vec::new());
        for p in pieces(&x, &cuts) {
            u.process(p, &mut ys);
            // Alternate between the i16 and the byte API: they must agree too.
            let bytes: Vec<u8> = p.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let mut buf = vec![0u8; d.output_len(p.len()) * 2];
            let written = d.process_ne_bytes_into(&bytes, &mut buf).unwrap();
            prop_assert_eq!(written, buf.len());
            zs.extend(buf.chunks_exact(2).map(|c| i16::from_ne_bytes([c[0], c[1]])));
        }
        prop_assert_eq!(ys, whole_up);
        prop_assert_eq!(zs, whole_down);
    }

    #[test]
    fn byte_api_equals_sample_api(x in proptest::collection::vec(any::<i16>(), 0..400)) {
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut buf = vec![0u8; bytes.len() * 2];
        Upsampler::new().process_ne_bytes_into(&bytes, &mut buf).unwrap();
        let got: Vec<i16> =
            buf.chunks_exact(2).map(|c| i16::from_ne_bytes([c[0], c[1]])).collect();
        prop_assert_eq!(got, up(&x));
    }
}

#[test]
fn twenty_ms_frames_equal_one_block() {
    let x: Vec<i16> = (0..16000u32)
        .map(|n| ((n.wrapping_mul(2_654_435_761) >> 16) as i16) / 2)
        .collect();
    let mut u = Upsampler::new();
    let mut y = Vec::new();
    for f in x[..8000].chunks(160) {
        u.process(f, &mut y);
    }
    assert_eq!(y, up(&x[..8000]));
    let mut d = Downsampler::new();
    let mut z = Vec::new();
    for f in x.chunks(320) {
        d.process(f, &mut z);
    }
    assert_eq!(z, down(&x));
}
