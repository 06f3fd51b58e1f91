use super::*;
use crate::resample::Resample;
use crate::test_signal::tone;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Deterministic noise in [-1, 1) (xorshift), `len` samples.
fn noise(seed: u32, len: usize) -> Vec<f64> {
    let mut s = seed.max(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            f64::from(s) / f64::from(u32::MAX) * 2.0 - 1.0
        })
        .collect()
}

/// Speech-shaped test signal: noise through a crude vocal-tract resonance, in syllables of
/// 200 ms at 4 per second... then `pause_ms` of `floor` (amplitude) between phrases of 1 s.
fn talker(rate: u32, seconds: f64, amp: f64, pause_ms: u32, floor: f64) -> Vec<i16> {
    let n = (f64::from(rate) * seconds) as usize;
    let w = noise(7, n);
    let phrase = rate as usize; // 1 s of talk
    let pause = (rate / 1000 * pause_ms) as usize;
    let (mut y1, mut y2) = (0.0, 0.0);
    let f = 700.0 / f64::from(rate);
    let r = 0.97f64;
    let c1 = 2.0 * r * (2.0 * std::f64::consts::PI * f).cos();
    let c2 = -r * r;
    (0..n)
        .map(|i| {
            let y = w[i] + c1 * y1 + c2 * y2;
            y2 = y1;
            y1 = y;
            let at = i % (phrase + pause);
            let v = if at < phrase {
                // Syllables: a raised-sine envelope, 4 per second.
                let ph = (at as f64 / f64::from(rate) * 4.0).fract();
                y * 0.1 * (std::f64::consts::PI * ph).sin().powi(2)
            } else {
                w[(i * 7) % n] * floor / amp
            };
            (v * amp).round().clamp(-32768.0, 32767.0) as i16
        })
        .collect()
}

fn loudness_of(rate: u32, x: &[i16]) -> f64 {
    let mut m = LoudnessMeter::new(rate);
    m.feed(x);
    m.reading().short_term_lufs
}

#[test]
fn at_48_khz_the_design_gives_the_standards_coefficients() {
    // ITU-R BS.1770-4, tables 1 and 2.
    let k = KWeighting::new(48000);
    let shelf_b = [
        1.535_124_859_586_97,
        -2.691_696_189_406_38,
        1.198_392_810_852_85,
    ];
    let shelf_a = [1.0, -1.690_659_293_182_41, 0.732_480_774_215_85];
    let hp_a = [1.0, -1.990_047_454_833_98, 0.990_072_250_366_21];
    for (got, want) in k.shelf.b.iter().zip(shelf_b) {
        assert!(close(*got, want, 1e-9), "{got} {want}");
    }
    for (got, want) in k.shelf.a.iter().zip(shelf_a) {
        assert!(close(*got, want, 1e-9), "{got} {want}");
    }
    assert_eq!(k.highpass.b, [1.0, -2.0, 1.0]);
    for (got, want) in k.highpass.a.iter().zip(hp_a) {
        assert!(close(*got, want, 1e-9), "{got} {want}");
    }
}

#[test]
fn a_full_scale_997_hz_sine_reads_minus_3_lufs_at_every_rate() {
    for rate in [8000u32, 16000, 48000] {
        let x = tone(997.0, f64::from(rate), 32767.0, rate as usize * 4);
        let l = loudness_of(rate, &x);
        // The standard's check is at 48 kHz; at 8 and 16 kHz the same analogue design is
        // warped a little differently near 1 kHz.
        let tol = if rate == 48000 { 0.02 } else { 0.1 };
        assert!(close(l, -3.01, tol), "{rate} Hz: {l}");
        // And 20 dB down reads 20 LU less.
        let quiet = tone(997.0, f64::from(rate), 3276.7, rate as usize * 4);
        assert!(close(loudness_of(rate, &quiet), l - 20.0, 0.01));
    }
}

#[test]
fn the_weighting_lifts_the_highs_and_cuts_the_lows() {
    for rate in [8000u32, 16000, 48000] {
        let fs = f64::from(rate);
        let mid = loudness_of(rate, &tone(997.0, fs, 10000.0, rate as usize * 4));
        let high = loudness_of(rate, &tone(3000.0, fs, 10000.0, rate as usize * 4));
        let low = loudness_of(rate, &tone(20.0, fs, 10000.0, rate as usize * 4));
        assert!(
            high > mid + 3.0 && high < mid + 4.5,
            "{rate}: {high} vs {mid}"
        );
        assert!(low < mid - 10.0, "{rate}: {low} vs {mid}");
    }
}

#[test]
fn pauses_neither_dilute_nor_age_the_reading() {
    let rate = 8000;
    let continuous = talker(rate, 6.0, 8000.0, 0, 0.0);
    let with_pauses = talker(rate, 12.0, 8000.0, 1000, 0.0);
    let a = loudness_of(rate, &continuous);
    let b = loudness_of(rate, &with_pauses);
    assert!(a > -40.0 && close(a, b, 0.5), "{a} {b}");
    // Silence after the talk holds the reading; so does a noise floor 30 dB down.
    let mut m = LoudnessMeter::new(rate);
    m.feed(&continuous);
    let held = m.reading().short_term_lufs;
    m.feed(&vec![0; rate as usize * 5]);
    assert_eq!(m.reading().short_term_lufs, held);
    assert!(!m.reading().speech);
    let hiss: Vec<i16> = noise(3, rate as usize * 5)
        .iter()
        .map(|v| (v * 8000.0 * 0.1 * 0.03 * 0.5) as i16)
        .collect();
    m.feed(&hiss);
    assert_eq!(m.reading().short_term_lufs, held);
}

#[test]
fn nothing_is_read_before_400_ms_of_speech_and_a_long_silence_frees_the_gate() {
    let rate = 16000;
    let mut m = LoudnessMeter::new(rate);
    let loud = tone(500.0, f64::from(rate), 20000.0, rate as usize / 10 * 3);
    m.feed(&loud);
    assert_eq!(m.short_term(), None);
    assert_eq!(m.reading().short_term_lufs, SILENCE_LUFS);
    m.feed(&loud);
    let before = m.short_term().expect("600 ms of speech");
    // A talker 30 dB quieter right after is a pause of the loud one...
    let quiet = tone(500.0, f64::from(rate), 632.0, rate as usize);
    m.feed(&quiet);
    assert_eq!(m.short_term(), Some(before));
    // ...but after 10 s without speech the gate lets go and it is heard.
    m.feed(&vec![0; rate as usize * 10]);
    m.feed(&quiet);
    m.feed(&quiet);
    m.feed(&quiet);
    let after = m.short_term().expect("quiet speech");
    assert!(after < before - 25.0, "{before} {after}");
}

#[test]
fn peak_and_clips_are_counted_and_the_peak_forgets_after_3_s() {
    let rate = 8000;
    let mut m = LoudnessMeter::new(rate);
    let mut x = tone(1000.0, 8000.0, 16384.0, 800);
    x[100] = i16::MAX;
    x[200] = i16::MIN;
    x[300] = -32767;
    // µ-law's top code, and one step below it.
    x[400] = 32124;
    x[500] = -32123;
    m.feed(&x);
    let r = m.reading();
    assert!(close(r.peak_dbfs, 0.0, 0.001), "{r:?}");
    assert_eq!(r.clipped, 4);
    m.feed(&tone(1000.0, 8000.0, 1638.0, 8000 * 3));
    let r = m.reading();
    assert!(close(r.peak_dbfs, -26.0, 0.1), "{r:?}");
    assert_eq!(r.clipped, 4);
}

#[test]
fn the_reading_does_not_depend_on_how_the_signal_is_cut() {
    let x = talker(16000, 5.0, 12000.0, 300, 50.0);
    let mut a = LoudnessMeter::new(16000);
    let mut b = LoudnessMeter::new(16000);
    a.feed(&x);
    for piece in x.chunks(97) {
        b.feed(piece);
    }
    let (ra, rb) = (a.reading(), b.reading());
    assert!(close(ra.short_term_lufs, rb.short_term_lufs, 1e-9));
    assert_eq!(
        (ra.peak_dbfs, ra.clipped, ra.speech),
        (rb.peak_dbfs, rb.clipped, rb.speech)
    );
}

/// Frames the normaliser stands aside for (its gain well above 0 dB, so that a frame that
/// passes at unity shows), and the frames after the first (an onset from silence is never
/// predictable).
fn frames_are_tones(rate: u32, x: &[i16]) -> (usize, usize) {
    let frame = rate as usize / 50;
    let mut n = Normalizer::new(rate, settings(-24.0));
    let mut tones = 0;
    let mut total = 0;
    for (i, f) in x.chunks_exact(frame).enumerate() {
        n.process(&mut f.to_vec());
        if i > 0 {
            tones += usize::from(n.tone_run > 0);
            total += 1;
        }
    }
    (tones, total)
}

fn sum(parts: &[Vec<i16>]) -> Vec<i16> {
    (0..parts[0].len())
        .map(|i| parts.iter().map(|p| i32::from(p[i])).sum::<i32>() as i16)
        .collect()
}

#[test]
fn tones_and_dtmf_are_tones_and_voices_are_not() {
    for rate in [8000u32, 16000] {
        let fs = f64::from(rate);
        let n = rate as usize;
        let single = tone(1000.0, fs, 8000.0, n);
        let dtmf = sum(&[tone(697.0, fs, 6000.0, n), tone(1209.0, fs, 6000.0, n)]);
        let second = sum(&[tone(1336.0, fs, 6000.0, n), tone(1633.0, fs, 3000.0, n)]);
        for (name, x) in [("1 kHz", &single), ("DTMF 1", &dtmf), ("DTMF B", &second)] {
            let (t, all) = frames_are_tones(rate, x);
            assert_eq!(t, all, "{rate} Hz {name}");
        }
        // Through µ-law at 8 kHz, as a link delivers them, and resampled to the station rate.
        let dtmf8 = sum(&[
            tone(697.0, 8000.0, 6000.0, 8000),
            tone(1209.0, 8000.0, 6000.0, 8000),
        ]);
        let coded8: Vec<i16> = dtmf8
            .iter()
            .map(|&s| crate::codec::ulaw_decode_sample(crate::codec::ulaw_encode_sample(s)))
            .collect();
        let mut coded = Vec::new();
        if rate == 8000 {
            coded = coded8;
        } else {
            crate::resample::Upsampler::new().process(&coded8, &mut coded);
        }
        let (t, all) = frames_are_tones(rate, &coded);
        assert_eq!(t, all, "{rate} Hz µ-law DTMF");
        let voice = talker(rate, 4.0, 12000.0, 0, 0.0);
        let (t, all) = frames_are_tones(rate, &voice);
        assert_eq!(t, 0, "{rate} Hz voice: {t} of {all}");
        // A harmonic-rich vowel (a pulse train at 120 Hz through a resonance).
        let period = rate as usize / 120;
        let vowel: Vec<i16> = {
            let mut y = (0.0f64, 0.0f64);
            let f = 2.0 * std::f64::consts::PI * 700.0 / fs;
            (0..n)
                .map(|i| {
                    let pulse = if i % period == 0 { 3000.0 } else { 0.0 };
                    let v = pulse + 2.0 * 0.95 * f.cos() * y.0 - 0.95 * 0.95 * y.1;
                    y = (v, y.0);
                    v.clamp(-32768.0, 32767.0) as i16
                })
                .collect()
        };
        let (t, _) = frames_are_tones(rate, &vowel);
        assert_eq!(t, 0, "{rate} Hz vowel");
        // Quiet tones and silence are not tones.
        let (t, _) = frames_are_tones(rate, &tone(1000.0, fs, 20.0, n));
        assert_eq!(t, 0);
        let (t, _) = frames_are_tones(rate, &vec![0; n]);
        assert_eq!(t, 0);
    }
}

#[test]
fn the_limiter_delays_and_never_lets_a_peak_through() {
    for rate in [8000u32, 16000] {
        let mut lim = Limiter::new(rate);
        let d = lim.delay();
        assert_eq!(d, rate as usize / 1000);
        let limit = 32768.0 * 10f64.powf(LIMIT_DBFS / 20.0);
        // Below the limit: the input, `d` samples late.
        let x = tone(300.0, f64::from(rate), 20000.0, 4000);
        let y: Vec<i16> = x.iter().map(|&s| lim.run(f32::from(s))).collect();
        assert_eq!(&y[d..], &x[..x.len() - d]);
        // 12 dB over full scale, with single-sample spikes: nothing leaves above the limit,
        // and the gain is back near 1 within a few release times.
        let mut lim = Limiter::new(rate);
        let n = rate as usize;
        let mut hot: Vec<f32> = tone(300.0, f64::from(rate), 32767.0, n)
            .iter()
            .map(|&s| f32::from(s) * 4.0)
            .collect();
        hot[1234] = 200_000.0;
        hot.extend(std::iter::repeat_n(0.0, 40));
        let quiet = tone(300.0, f64::from(rate), 20000.0, n);
        hot.extend(quiet.iter().map(|&s| f32::from(s)));
        let y: Vec<i16> = hot.iter().map(|&s| lim.run(s)).collect();
        let peak = y.iter().map(|s| i32::from(*s).abs()).max().unwrap_or(0);
        assert!(f64::from(peak) <= limit + 0.5, "{peak}");
        assert!(f64::from(peak) > limit - 2.0, "{peak}");
        // The quiet part after it comes back whole (the release is 50 ms).
        let tail = &y[y.len() - 2000..];
        let want = &quiet[n - 2000 - d..n - d];
        assert_eq!(tail, want);
    }
}

fn settings(target: f64) -> NormalizeSettings {
    NormalizeSettings {
        target_lufs: target,
        max_gain_db: 18.0,
    }
}

fn normalise(n: &mut Normalizer, x: &[i16], rate: u32) -> Vec<i16> {
    let frame = rate as usize / 50;
    let mut out = Vec::with_capacity(x.len());
    for f in x.chunks_exact(frame) {
        let mut f = f.to_vec();
        n.process(&mut f);
        out.extend_from_slice(&f);
    }
    out
}

#[test]
fn a_quiet_and_a_loud_voice_are_brought_to_the_target() {
    for rate in [8000u32, 16000] {
        let target = -24.0;
        for amp in [2000.0, 32000.0] {
            let x = talker(rate, 12.0, amp, 400, 0.0);
            let before = loudness_of(rate, &x);
            let mut n = Normalizer::new(rate, settings(target));
            let y = normalise(&mut n, &x, rate);
            let after = loudness_of(rate, &y);
            assert!((before - target).abs() > 5.0, "{before}");
            assert!(
                close(after, target, 0.5),
                "{rate} Hz amp {amp}: {before} -> {after}"
            );
            assert_eq!(LoudnessMeter::new(rate).reading().clipped, 0);
            let mut m = LoudnessMeter::new(rate);
            m.feed(&y);
            assert_eq!(m.reading().clipped, 0);
        }
    }
}

#[test]
fn the_gain_is_capped_moves_in_seconds_and_freezes_in_pauses() {
    let rate = 8000;
    let x = talker(rate, 10.0, 300.0, 0, 0.0);
    let mut n = Normalizer::new(rate, settings(-24.0));
    let _ = normalise(&mut n, &x, rate);
    assert!(close(n.gain_db(), 18.0, 1e-9), "{}", n.gain_db());
    // Acquisition is at most 40 dB per second of speech, and starts after 400 ms of it: after
    // 0.6 s of a voice 15 dB down the gain has not got there yet.
    let mut n = Normalizer::new(rate, settings(-24.0));
    let _ = normalise(&mut n, &talker(rate, 0.6, 1000.0, 0, 0.0), rate);
    let g = n.gain_db();
    assert!(g > 0.0 && g <= ACQUIRE_DB_PER_S * 0.2 + 1e-9, "{g}");
    // Once known, the gain follows at 1.5 dB per second of speech: a voice that drops 6 dB
    // after 10 s is followed over seconds, not syllables.
    let mut n = Normalizer::new(rate, settings(-24.0));
    let _ = normalise(&mut n, &talker(rate, 10.0, 8000.0, 0, 0.0), rate);
    let settled = n.gain_db();
    let _ = normalise(&mut n, &talker(rate, 1.0, 4000.0, 0, 0.0), rate);
    let moved = n.gain_db() - settled;
    assert!(moved > 0.0 && moved <= 1.5 + 1e-9, "{settled} {moved}");
    let mut n = Normalizer::new(rate, settings(-24.0));
    let _ = normalise(&mut n, &talker(rate, 1.0, 2000.0, 0, 0.0), rate);
    // Afterwards, 10 s of a noise floor (pause) or silence move nothing.
    let g = n.gain_db();
    let hiss: Vec<i16> = noise(5, rate as usize * 10)
        .iter()
        .map(|v| (v * 20.0) as i16)
        .collect();
    let _ = normalise(&mut n, &hiss, rate);
    assert_eq!(n.gain_db(), g);
}

#[test]
fn tones_pass_at_their_own_level_and_teach_nothing() {
    let rate = 8000;
    let fs = f64::from(rate);
    let mut n = Normalizer::new(rate, settings(-24.0));
    let _ = normalise(&mut n, &talker(rate, 8.0, 2500.0, 0, 0.0), rate);
    let g = n.gain_db();
    assert!(g > 8.0, "{g}");
    let dtmf = sum(&[
        tone(770.0, fs, 5000.0, 8000),
        tone(1336.0, fs, 5000.0, 8000),
    ]);
    let y = normalise(&mut n, &dtmf, rate);
    // Only the digit's onset frame, not yet told from the voice, may move it (by one frame's
    // worth at 1.5 dB/s).
    assert!(
        (n.gain_db() - g).abs() <= 0.03 + 1e-9,
        "{g} {}",
        n.gain_db()
    );
    // After the onset frame, the ramp of the next and the limiter's release (the onset went
    // out with the voice's gain) the tone is untouched, delayed by the look-ahead.
    let d = n.delay();
    let skip = 15 * 160;
    for (a, b) in y[skip..].iter().zip(&dtmf[skip - d..]) {
        let tol = 1 + i32::from(*b).abs() / 200;
        assert!((i32::from(*a) - i32::from(*b)).abs() <= tol, "{a} {b}");
    }
    // The digit's first 60 ms carried the voice's gain at most (held under the limit).
    let limit = 32768.0 * 10f64.powf(LIMIT_DBFS / 20.0);
    assert!(y.iter().all(|s| f64::from(s.unsigned_abs()) <= limit + 0.5));
}
