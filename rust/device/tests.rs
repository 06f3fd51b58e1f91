use super::*;
use crate::test_signal::{amplitude, db, tone};
use std::collections::VecDeque;

fn bytes(x: &[i16]) -> Vec<u8> {
    x.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn samples(b: &[u8]) -> Vec<i16> {
    b.chunks_exact(2)
        .map(|c| i16::from_ne_bytes([c[0], c[1]]))
        .collect()
}

/// Captures `x` in blocks of the given sizes (cycled); returns the frames delivered.
fn capture_all(edge: &mut DeviceEdge, x: &[i16], sizes: &[usize]) -> Vec<Vec<i16>> {
    let mut frames = Vec::new();
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at >= x.len() {
            break;
        }
        let end = (at + n).min(x.len());
        edge.capture(&bytes(&x[at..end]), |f| frames.push(f.to_vec()))
            .unwrap();
        at = end;
    }
    frames
}

/// Plays blocks of the given sizes, pulling frames from `next` (None: not ready).
fn play_all(
    edge: &mut DeviceEdge,
    mut next: impl FnMut() -> Option<Vec<i16>>,
    sizes: &[usize],
) -> Vec<i16> {
    let mut out = Vec::new();
    for &n in sizes {
        let mut block = vec![0u8; 2 * n];
        edge.playback(&mut block, |dst| match next() {
            Some(f) => {
                dst.copy_from_slice(&f);
                true
            }
            None => false,
        })
        .unwrap();
        out.extend(samples(&block));
    }
    out
}

#[test]
fn rates_are_the_station_rate_or_48k() {
    assert_eq!(DeviceEdge::new(8000, 8000).unwrap().factor(), 1);
    assert_eq!(DeviceEdge::new(16000, 16000).unwrap().factor(), 1);
    assert_eq!(DeviceEdge::new(48000, 8000).unwrap().factor(), 6);
    assert_eq!(DeviceEdge::new(48000, 16000).unwrap().factor(), 3);
    let err = DeviceEdge::new(44100, 8000).unwrap_err();
    assert_eq!(
        err,
        DeviceError::Rate {
            device: 44100,
            station: 8000
        }
    );
    assert!(err.to_string().contains("8000, 48000"), "{err}");
    assert!(DeviceEdge::new(16000, 8000).is_err());
    assert_eq!(
        DeviceEdge::new(48000, 11025).unwrap_err(),
        DeviceError::StationRate(11025)
    );
    let e = DeviceEdge::new(48000, 8000).unwrap();
    assert!((e.filter_delay_ms() - 119.5 / 48.0).abs() < 1e-12);
    let e = DeviceEdge::new(48000, 16000).unwrap();
    assert!((e.filter_delay_ms() - 71.5 / 48.0).abs() < 1e-12);
    assert_eq!(DeviceEdge::new(8000, 8000).unwrap().filter_delay_ms(), 0.0);
}

#[test]
fn capture_in_any_blocks_delivers_the_decimated_signal_in_whole_frames() {
    for (station, factor) in [(8000u32, 6u32), (16000, 3)] {
        let x = tone(1000.0, 48000.0, 12000.0, 48000);
        let mut want = Vec::new();
        Decimator::new(factor).unwrap().process(&x, &mut want);
        for sizes in [&[240usize][..], &[480], &[239, 241, 1, 700, 13]] {
            let mut edge = DeviceEdge::new(48000, station).unwrap();
            let frames = capture_all(&mut edge, &x, sizes);
            let flen = edge.frame_len();
            assert!(frames.iter().all(|f| f.len() == flen));
            let got: Vec<i16> = frames.concat();
            assert_eq!(got.len(), want.len() / flen * flen);
            assert_eq!(got, want[..got.len()], "{station} {sizes:?}");
        }
    }
}

#[test]
fn playback_in_any_blocks_plays_the_interpolated_frames() {
    for (station, factor) in [(8000u32, 6u32), (16000, 3)] {
        let x = tone(700.0, f64::from(station), 12000.0, station as usize);
        let mut want = Vec::new();
        Interpolator::new(factor).unwrap().process(&x, &mut want);
        let flen = (station / 50) as usize;
        for sizes in [
            vec![240usize; 200],
            vec![480; 100],
            [241, 239, 1, 719].repeat(40),
        ] {
            let mut edge = DeviceEdge::new(48000, station).unwrap();
            let mut frames: VecDeque<Vec<i16>> = x.chunks(flen).map(<[i16]>::to_vec).collect();
            let got = play_all(&mut edge, || frames.pop_front(), &sizes);
            assert_eq!(got.len(), 48000);
            assert_eq!(got, want, "{station} {:?}", &sizes[..4]);
        }
    }
}

#[test]
fn native_rate_passes_samples_through_with_only_the_gain() {
    let x = tone(440.0, 8000.0, 10000.0, 800);
    let mut edge = DeviceEdge::new(8000, 8000).unwrap();
    let frames = capture_all(&mut edge, &x, &[40, 77]);
    assert_eq!(frames.concat(), x[..800]);
    let mut q: VecDeque<Vec<i16>> = frames.into_iter().collect();
    assert_eq!(play_all(&mut edge, || q.pop_front(), &[40; 20]), x);
    edge.set_rx_gain_db(-6.0206).unwrap();
    let half = capture_all(&mut edge, &x, &[40]).concat();
    for (h, o) in half.iter().zip(&x) {
        assert!(
            (f64::from(*h) - f64::from(*o) / 2.0).abs() <= 0.51,
            "{h} vs {o}"
        );
    }
}

#[test]
fn a_late_frame_leaves_a_gap_of_silence_and_plays_after_it() {
    let mut edge = DeviceEdge::new(8000, 8000).unwrap();
    let frame: Vec<i16> = (1..=160).collect();
    let mut ready = vec![Some(frame.clone()), None, Some(frame.clone())].into_iter();
    // 5 ms blocks: 40 samples at 8 kHz.
    let out = play_all(&mut edge, || ready.next().flatten(), &[40; 12]);
    // The first frame, 5 ms of silence where the second was due, then the late one whole.
    assert_eq!(out[..160], frame[..]);
    assert!(out[160..200].iter().all(|&s| s == 0));
    assert_eq!(out[200..360], frame[..]);
    assert!(out[360..].iter().all(|&s| s == 0));
}

#[test]
fn gains_scale_the_audio_and_the_meters_read_it() {
    let mut edge = DeviceEdge::new(48000, 8000).unwrap();
    // ASL's calibration tone: 1 kHz at 3 kHz deviation, about 7000 peak (-13.4 dBFS).
    let x = tone(1000.0, 48000.0, 7000.0, 48000);
    capture_all(&mut edge, &x, &[240]);
    let nominal = db(7000.0 / 32768.0);
    let r = edge.rx_level();
    assert!((r.peak_dbfs - nominal).abs() < 0.05, "{r:?}");
    assert!((r.rms_dbfs - nominal).abs() < 0.05, "{r:?}");
    edge.set_rx_gain_db(6.0).unwrap();
    let frames = capture_all(&mut edge, &x, &[240]);
    let r = edge.rx_level();
    assert!((r.peak_dbfs - nominal - 6.0).abs() < 0.05, "{r:?}");
    let last = frames.concat();
    let level = db(amplitude(&last[last.len() - 8000..], 1000.0, 8000.0) / 7000.0);
    assert!((level - 6.0).abs() < 0.01, "{level}");

    edge.set_tx_gain_db(-10.0).unwrap();
    let mut q: VecDeque<Vec<i16>> = tone(1000.0, 8000.0, 7000.0, 8000)
        .chunks(160)
        .map(<[i16]>::to_vec)
        .collect();
    let played = play_all(&mut edge, || q.pop_front(), &[240; 200]);
    let r = edge.tx_level();
    assert!((r.peak_dbfs - (nominal - 10.0)).abs() < 0.05, "{r:?}");
    let level = db(amplitude(&played[4800..], 1000.0, 48000.0) / 7000.0);
    assert!((level + 10.0).abs() < 0.01, "{level}");
    assert_eq!((edge.rx_gain_db(), edge.tx_gain_db()), (6.0, -10.0));
}

#[test]
fn bad_gains_and_odd_blocks_are_refused_without_changing_anything() {
    let mut edge = DeviceEdge::new(48000, 16000).unwrap();
    for db in [-40.5, 20.01, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            edge.set_rx_gain_db(db),
            Err(DeviceError::Gain { .. })
        ));
        assert!(edge.set_tx_gain_db(db).is_err());
    }
    assert!(edge
        .set_rx_gain_db(30.0)
        .unwrap_err()
        .to_string()
        .contains("-40 to +20 dB"));
    assert_eq!((edge.rx_gain_db(), edge.tx_gain_db()), (0.0, 0.0));
    assert_eq!(
        edge.capture(&[0; 3], |_| {}),
        Err(DeviceError::OddLength { len: 3 })
    );
    assert_eq!(
        edge.playback(&mut [0; 5], |_| false),
        Err(DeviceError::OddLength { len: 5 })
    );
    assert_eq!(edge.buffered(), (0, 0, 0));
}

#[test]
fn buffers_stay_below_one_frame() {
    let mut edge = DeviceEdge::new(48000, 8000).unwrap();
    let x = tone(300.0, 48000.0, 8000.0, 479);
    let frame = vec![100i16; 160];
    for i in 0..2000 {
        let n = 239 + i % 3;
        edge.capture(&bytes(&x[..n]), |_| {}).unwrap();
        let mut block = vec![0u8; 2 * n];
        edge.playback(&mut block, |dst| {
            dst.copy_from_slice(&frame);
            true
        })
        .unwrap();
        let (mic, speaker, out) = edge.buffered();
        assert!(
            mic < 160 && speaker < 160 && out < 6,
            "{:?}",
            edge.buffered()
        );
    }
}

#[test]
fn the_rx_delay_holds_the_newest_audio_back_and_vox_hears_it_first() {
    let mut edge = DeviceEdge::new(8000, 8000).unwrap();
    edge.set_rx_delay_ms(100).unwrap();
    assert_eq!(edge.rx_delay_ms(), 100);
    edge.set_vox(Some(VoxConfig {
        threshold_dbfs: -30.0,
        attack_ms: 20,
        release_ms: 20,
    }))
    .unwrap();
    let x: Vec<i16> = (0..1600).map(|n| if n < 800 { 0 } else { 8000 }).collect();
    let mut delivered: Vec<i16> = Vec::new();
    let mut opened_at = None;
    for (i, block) in x.chunks(40).enumerate() {
        edge.capture(&bytes(block), |f| delivered.extend_from_slice(f))
            .unwrap();
        if edge.take_vox_change() == Some(true) {
            opened_at = Some((i + 1) * 40);
            // Whatever was delivered by then is older than the signal: all silence.
            assert!(delivered.iter().all(|&s| s == 0), "{i}");
        }
        // Never more than the delay plus a partial frame held back.
        assert!(edge.buffered().0 < 800 + 160);
    }
    assert_eq!(opened_at, Some(960), "VOX opens one window into the signal");
    // The stream is the input, 800 samples (100 ms) late, in whole frames.
    assert_eq!(delivered.len(), 800);
    assert_eq!(delivered, x[..800]);
    // A shorter delay skips what it no longer holds back, in no burst.
    edge.set_rx_delay_ms(0).unwrap();
    assert_eq!(edge.buffered().0, 0);
    assert_eq!(
        edge.set_rx_delay_ms(1001),
        Err(DeviceError::RxDelay { ms: 1001 })
    );
    assert!(matches!(
        edge.set_vox(Some(VoxConfig {
            threshold_dbfs: 3.0,
            attack_ms: 0,
            release_ms: 0
        })),
        Err(DeviceError::Vox(_))
    ));
    edge.set_vox(None).unwrap();
    assert_eq!(edge.take_vox_change(), None);
}

#[test]
fn the_capture_filter_delay_is_the_stated_one() {
    // A click at device sample t is centred at station sample (t + delay) / factor.
    for (station, factor) in [(8000u32, 6usize), (16000, 3)] {
        let mut edge = DeviceEdge::new(48000, station).unwrap();
        let delay = edge.filter_delay_ms() * 48.0;
        let mut x = vec![0i16; 48000];
        let t = 6000;
        x[t] = 30000;
        x[t + 1] = 30000;
        let y = capture_all(&mut edge, &x, &[240]).concat();
        // Energy centroid of the response (symmetric filter: exactly its centre).
        let (mut num, mut den) = (0.0, 0.0);
        for (k, &v) in y.iter().enumerate() {
            let e = f64::from(v) * f64::from(v);
            num += e * k as f64;
            den += e;
        }
        let centre = num / den * factor as f64;
        let want = t as f64 + 0.5 + delay;
        assert!(
            (centre - want).abs() < 0.5 * factor as f64,
            "{centre} vs {want}"
        );
    }
}
