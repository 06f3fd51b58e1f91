use super::*;
use crate::test_signal::{
    amplitude, assert_matches_reference, db, hash_noise, pieces, square_wave, tone,
};
use proptest::prelude::*;
use std::f64::consts::PI;

const AMP: f64 = 16000.0;
const FS: f64 = DEVICE_RATE as f64;

/// One conversion: factor, low rate, passband edge, stopband edge (Hz).
#[derive(Clone, Copy)]
struct Case {
    factor: u32,
    low: f64,
    pass: f64,
    stop: f64,
}

const CASES: [Case; 2] = [
    Case {
        factor: 6,
        low: 8000.0,
        pass: 3400.0,
        stop: 4600.0,
    },
    Case {
        factor: 3,
        low: 16000.0,
        pass: 7000.0,
        stop: 9000.0,
    },
];

fn down(factor: u32, x: &[i16]) -> Vec<i16> {
    let mut out = Vec::new();
    Decimator::new(factor).unwrap().process(x, &mut out);
    out
}

fn up(factor: u32, x: &[i16]) -> Vec<i16> {
    let mut out = Vec::new();
    Interpolator::new(factor).unwrap().process(x, &mut out);
    out
}

/// |H(f)| in dB of the taps as the converters store them (f32), by direct evaluation.
fn response_db(h: &[f32], f: f64) -> f64 {
    let w = 2.0 * PI * f / FS;
    let (mut re, mut im) = (0.0, 0.0);
    for (n, &v) in h.iter().enumerate() {
        re += f64::from(v) * (w * n as f64).cos();
        im -= f64::from(v) * (w * n as f64).sin();
    }
    db(re.hypot(im))
}

fn taps32(factor: u32) -> Vec<f32> {
    prototype(factor)
        .unwrap()
        .iter()
        .map(|&v| v as f32)
        .collect()
}

/// Frequency an input tone at `f` (48 kHz) lands on after sampling at `low`.
fn alias_of(f: f64, low: f64) -> f64 {
    let a = f % low;
    if a > low / 2.0 {
        low - a
    } else {
        a
    }
}

#[test]
fn design_meets_its_band_edges() {
    for c in CASES {
        let h = taps32(c.factor);
        let ripple = (0..=(c.pass as usize / 5))
            .map(|i| response_db(&h, 5.0 * i as f64).abs())
            .fold(0.0, f64::max);
        let stop = ((c.stop as usize / 5)..=4800)
            .map(|i| -response_db(&h, 5.0 * i as f64))
            .fold(f64::INFINITY, f64::min);
        let half = response_db(&h, c.low / 2.0);
        eprintln!(
            "factor {}: {} taps, ripple ±{ripple:.5} dB to {} Hz, stopband ≥ {stop:.1} dB \
                 from {} Hz, {half:.2} dB at {} Hz",
            c.factor,
            h.len(),
            c.pass,
            c.stop,
            c.low / 2.0
        );
        // At least as good as the 8 <-> 16 kHz halfband (±0.0011 dB, 78.1 dB).
        assert!(ripple <= 0.0004, "factor {}: ripple {ripple}", c.factor);
        assert!(stop >= 90.0, "factor {}: stopband {stop}", c.factor);
    }
}

#[test]
fn prototype_is_symmetric_with_unity_dc_in_every_branch() {
    for &factor in FACTORS {
        let h = prototype(factor).unwrap();
        let m = factor as usize;
        assert_eq!(h.len(), m * branch_len(m));
        for (a, b) in h.iter().zip(h.iter().rev()) {
            assert_eq!(a, b);
        }
        for p in 0..m {
            let sum: f64 = h.iter().skip(p).step_by(m).sum();
            assert!((sum * m as f64 - 1.0).abs() < 1e-12, "branch {p}: {sum}");
        }
    }
}

#[test]
fn unsupported_factors_are_refused() {
    for f in [0, 1, 2, 4, 5, 7, 12] {
        let err = Decimator::new(f).unwrap_err();
        assert_eq!(
            err,
            ResampleError::UnsupportedFactor {
                factor: f,
                accepted: FACTORS
            }
        );
        assert!(err.to_string().contains("[3, 6]"), "{err}");
        assert!(Interpolator::new(f).is_err());
    }
}

/// Textbook definitions in f64: filter and keep every M-th output, or zero-stuff and filter.
fn reference_down(factor: u32, x: &[i16]) -> Vec<f64> {
    let h = prototype(factor).unwrap();
    let m = factor as usize;
    (0..x.len() / m)
        .map(|j| {
            h.iter()
                .enumerate()
                .filter(|&(n, _)| n <= m * j)
                .map(|(n, &hn)| hn * f64::from(x[m * j - n]))
                .sum()
        })
        .collect()
}

fn reference_up(factor: u32, x: &[i16]) -> Vec<f64> {
    let h = prototype(factor).unwrap();
    let m = factor as usize;
    (0..m * x.len())
        .map(|n| {
            h.iter()
                .enumerate()
                .filter(|&(k, _)| k <= n && (n - k) % m == 0)
                .map(|(k, &hk)| m as f64 * hk * f64::from(x[(n - k) / m]))
                .sum()
        })
        .collect()
}

#[test]
fn impulse_response_is_the_prototype() {
    for &factor in FACTORS {
        let m = factor as usize;
        let h = prototype(factor).unwrap();
        let mut x = vec![0i16; 100];
        x[0] = 10000;
        let y = up(factor, &x);
        for (n, &v) in y.iter().enumerate() {
            let want = h.get(n).map_or(0.0, |&t| 10000.0 * m as f64 * t);
            assert!(
                (f64::from(v) - want).abs() <= 0.5 + 1e-9,
                "up n={n}: {v} vs {want}"
            );
        }
        // Decimating an impulse at each input phase picks every M-th tap from that phase.
        for phase in 0..m {
            let mut x = vec![0i16; 2 * h.len()];
            x[phase] = 10000;
            assert_matches_reference(&down(factor, &x), &reference_down(factor, &x));
        }
    }
}

#[test]
fn polyphase_equals_direct_convolution_and_saturates() {
    // A full-scale square wave rings past ±32767 (Gibbs): the output must sit on the rail.
    for &factor in FACTORS {
        let square = square_wave(1200, 60);
        let want = reference_down(factor, &square);
        assert!(want.iter().any(|&w| w > 32767.5));
        assert_matches_reference(&down(factor, &square), &want);
        let slow = square_wave(200, 10);
        let want = reference_up(factor, &slow);
        assert!(want.iter().any(|&w| w > 32767.5) && want.iter().any(|&w| w < -32768.5));
        assert_matches_reference(&up(factor, &slow), &want);
        let noise = hash_noise(1500);
        assert_matches_reference(&down(factor, &noise), &reference_down(factor, &noise));
        let noise = &noise[..300];
        assert_matches_reference(&up(factor, noise), &reference_up(factor, noise));
    }
}

#[test]
fn dc_passes_at_unity_gain_in_every_phase() {
    for &factor in FACTORS {
        let y = up(factor, &[1000i16; 200]);
        assert!(y[400..].iter().all(|&v| v == 1000), "{:?}", &y[400..420]);
        let y = down(factor, &[-1000i16; 2400]);
        assert!(y[100..].iter().all(|&v| v == -1000), "{:?}", &y[100..110]);
    }
}

#[test]
fn passband_tones_keep_their_level() {
    for c in CASES {
        let low = c.low as usize;
        for f in [100.0, 300.0, 1000.0, 2000.0, 3000.0, c.pass] {
            // Skip 0.1 s of warm-up, measure over 1 s.
            let y = down(c.factor, &tone(f, FS, AMP, 57_600));
            let gain = db(amplitude(&y[low / 10..low / 10 + low], f, c.low) / AMP);
            assert!(gain.abs() < 0.01, "÷{} {f} Hz: {gain} dB", c.factor);
            let y = up(c.factor, &tone(f, c.low, AMP, low * 12 / 10));
            let gain = db(amplitude(&y[4800..52_800], f, FS) / AMP);
            assert!(gain.abs() < 0.01, "×{} {f} Hz: {gain} dB", c.factor);
        }
    }
}

#[test]
fn stopband_sweep_rejects_aliases_and_images_by_90_db() {
    for c in CASES {
        let low = c.low as usize;
        let mut worst_alias = (f64::INFINITY, 0.0);
        // Tones 25 Hz off the 50 Hz grid never alias onto DC or the Nyquist frequency.
        let mut f = c.stop + 25.0;
        while f < FS / 2.0 {
            let y = down(c.factor, &tone(f, FS, AMP, 57_600));
            let a = alias_of(f, c.low);
            let r = -db(amplitude(&y[low / 10..low / 10 + low], a, c.low) / AMP);
            if r < worst_alias.0 {
                worst_alias = (r, f);
            }
            f += 50.0;
        }
        let mut worst_image = (f64::INFINITY, 0.0);
        let mut f = 50.0;
        while f <= c.pass {
            let y = up(c.factor, &tone(f, c.low, AMP, low * 12 / 10));
            let mut centre = c.low;
            while centre - f < FS / 2.0 {
                for image in [centre - f, centre + f] {
                    if image < FS / 2.0 {
                        let r = -db(amplitude(&y[4800..52_800], image, FS) / AMP);
                        if r < worst_image.0 {
                            worst_image = (r, image);
                        }
                    }
                }
                centre += c.low;
            }
            f += 100.0;
        }
        eprintln!(
            "factor {}: worst alias {:.1} dB (tone {} Hz), worst image {:.1} dB (at {} Hz)",
            c.factor, worst_alias.0, worst_alias.1, worst_image.0, worst_image.1
        );
        assert!(worst_alias.0 >= 90.0, "÷{}: {worst_alias:?}", c.factor);
        assert!(worst_image.0 >= 90.0, "×{}: {worst_image:?}", c.factor);
    }
}

#[test]
fn five_khz_is_rejected_going_to_8k_by_more_than_the_halfband() {
    // The 2:1 halfband leaves 5 kHz at 16 kHz 84.8 dB down at its 3 kHz alias. Alone, the
    // alias here is under half an LSB and rounds away; a 1 kHz tone beside it keeps the
    // rounding busy, so the measurement sees the filter's leak plus the rounding noise.
    let x: Vec<i16> = tone(5000.0, FS, AMP, 57_600)
        .iter()
        .zip(tone(1000.0, FS, 8000.0, 57_600))
        .map(|(&a, b)| a + b)
        .collect();
    let y = down(6, &x);
    let rejection = -db(amplitude(&y[800..8800], 3000.0, 8000.0) / AMP);
    let design = -response_db(&taps32(6), 5000.0);
    eprintln!("5 kHz at 48 kHz -> 8 kHz: alias {rejection:.1} dB down (design {design:.1} dB)");
    assert!(rejection >= 90.0, "{rejection} dB");
}

#[test]
fn group_delay_is_half_the_prototype() {
    for &factor in FACTORS {
        let m = factor as usize;
        let n = m * branch_len(m);
        let d = Decimator::new(factor).unwrap();
        let u = Interpolator::new(factor).unwrap();
        assert_eq!(d.delay(), (n - 1) as f64 / 2.0 / m as f64);
        assert_eq!(u.delay(), (n - 1) as f64 / 2.0);
        // Down then up: a passband tone comes back delayed by exactly N - 1 samples.
        let x = tone(1000.0, FS, AMP, 9600);
        let back = up(factor, &down(factor, &x));
        for k in 2 * n..x.len() {
            let diff = (i32::from(back[k]) - i32::from(x[k - (n - 1)])).abs();
            assert!(
                diff <= 3,
                "÷×{factor} k={k}: {} vs {}",
                back[k],
                x[k - (n - 1)]
            );
        }
    }
}

#[test]
fn gain_scales_before_rounding_and_saturates() {
    for &factor in FACTORS {
        let m = factor as usize;
        let x = tone(1000.0, FS, AMP, 57_600);
        let mut d = Decimator::new(factor).unwrap();
        d.set_gain(0.5);
        let mut y = Vec::new();
        d.process(&x, &mut y);
        let low = 48_000 / m;
        let g = db(amplitude(&y[low / 10..low / 10 + low], 1000.0, low as f64) / AMP);
        assert!((g - db(0.5)).abs() < 0.01, "{g}");
        // +12 dB on a 16000 tone must clip at the rails, never wrap.
        let mut u = Interpolator::new(factor).unwrap();
        u.set_gain(4.0);
        let mut y = Vec::new();
        u.process(&tone(1000.0, low as f64, AMP, low), &mut y);
        assert_eq!(y.iter().max(), Some(&i16::MAX));
        assert_eq!(y.iter().min(), Some(&i16::MIN));
        assert!(y
            .windows(2)
            .all(|w| (i32::from(w[0]) - i32::from(w[1])).abs() < 20_000));
    }
}

#[test]
fn fewer_than_factor_trailing_samples_wait_for_the_next_call() {
    let x: Vec<i16> = (0..40).map(|n| n * 100).collect();
    let mut d = Decimator::new(6).unwrap();
    let mut out = Vec::new();
    d.process(&x[..5], &mut out);
    assert!(out.is_empty());
    assert_eq!(d.output_len(1), 1);
    d.process(&x[5..13], &mut out);
    assert_eq!(out.len(), 2);
    d.process(&x[13..], &mut out);
    assert_eq!(out, down(6, &x));
}

/// A fresh decimator and interpolator by `factor`.
fn converters(factor: u32) -> (Decimator, Interpolator) {
    (
        Decimator::new(factor).unwrap(),
        Interpolator::new(factor).unwrap(),
    )
}

#[test]
fn reset_restores_a_fresh_state() {
    for &factor in FACTORS {
        let x = tone(700.0, FS, AMP, 1000);
        let (mut d, mut u) = converters(factor);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        d.process(&x[..333], &mut a);
        u.process(&x[..77], &mut b);
        d.reset();
        u.reset();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        d.process(&x, &mut a);
        u.process(&x, &mut b);
        assert_eq!(a, down(factor, &x));
        assert_eq!(b, up(factor, &x));
    }
}

#[test]
fn byte_variants_check_sizes() {
    // The checks themselves are the `Resample` trait's, tested in resample.rs.
    let mut u = Interpolator::new(3).unwrap();
    let mut bytes = [0u8; 16];
    assert_eq!(u.process_ne_bytes_into(&[0; 4], &mut bytes), Ok(12));
    assert_eq!(
        Decimator::new(6)
            .unwrap()
            .process_ne_bytes(&[0; 7], &mut Vec::new()),
        Err(ResampleError::OddLength { len: 7 })
    );
}

#[test]
fn steady_streaming_does_not_grow() {
    for &factor in FACTORS {
        let x = tone(440.0, FS, AMP, 961);
        let (mut d, mut u) = converters(factor);
        let (mut y, mut z) = (Vec::with_capacity(200), Vec::with_capacity(3000));
        let mut run = |blocks: usize, d: &mut Decimator, u: &mut Interpolator| {
            for i in 0..blocks {
                // 10 ms device blocks with jitter of one sample either way.
                let n = 479 + i % 3;
                y.clear();
                d.process(&x[..n], &mut y);
                z.clear();
                u.process(&y, &mut z);
            }
        };
        run(10, &mut d, &mut u);
        let (cd, cu) = (d.capacity(), u.capacity());
        run(1000, &mut d, &mut u);
        assert_eq!((d.capacity(), u.capacity()), (cd, cu), "factor {factor}");
    }
}

proptest! {
    #[test]
    fn streaming_in_pieces_equals_one_call(
        x in proptest::collection::vec(any::<i16>(), 0..1500),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        six in any::<bool>(),
    ) {
        let factor = if six { 6 } else { 3 };
        let whole_down = down(factor, &x);
        let whole_up = up(factor, &x);
        let (mut d, mut u) = converters(factor);
        let (mut ys, mut zs) = (Vec::new(), Vec::new());
        for p in pieces(&x, &cuts) {
            // Alternate between the i16 and the byte APIs: they must agree too.
            let bytes: Vec<u8> = p.iter().flat_map(|v| v.to_ne_bytes()).collect();
            d.process_ne_bytes(&bytes, &mut ys).unwrap();
            let mut buf = vec![0u8; u.output_len(p.len()) * 2];
            let written = u.process_ne_bytes_into(&bytes, &mut buf).unwrap();
            prop_assert_eq!(written, buf.len());
            zs.extend(buf.chunks_exact(2).map(|c| i16::from_ne_bytes([c[0], c[1]])));
        }
        prop_assert_eq!(ys, whole_down);
        prop_assert_eq!(zs, whole_up);
    }
}
