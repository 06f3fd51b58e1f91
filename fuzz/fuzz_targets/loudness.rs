//! The loudness meter and the normaliser on arbitrary PCM (what any peer may send a leg), in
//! 20 ms frames at either station rate, with arbitrary settings in their accepted ranges; the
//! input is played 16 times over.
//!
//! They must never panic; the meter reads finite values within their floors and counts clips
//! without ever going back; the normaliser's gain stays within its bounds and nothing it lets
//! out exceeds the limiter's ceiling.
#![no_main]

use _core::loudness::{
    LoudnessMeter, NormalizeSettings, Normalizer, LIMIT_DBFS, MAX_CUT_DB, SILENCE_LUFS,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some((&target, rest)) = rest.split_first() else {
        return;
    };
    let rate = if mode & 1 == 0 { 8000 } else { 16000 };
    let settings = NormalizeSettings {
        // -60 to -10 LUFS, 0 to 30 dB: the ranges the configuration accepts.
        target_lufs: -60.0 + f64::from(target) * 50.0 / 255.0,
        max_gain_db: f64::from(mode >> 1) * 30.0 / 127.0,
    };
    let mut meter = LoudnessMeter::new(rate);
    let mut norm = Normalizer::new(rate, settings);
    let limit = 32768.0 * 10f64.powf(LIMIT_DBFS / 20.0);
    let frame = rate as usize / 50;
    let mut clipped = 0;
    // Short inputs (the runs cap them at 2 KB, about six frames) played over and over, so the
    // meter's window fills and the gain steers: 16 times round is 2 s of an 8 kHz input.
    for chunk in std::iter::repeat_n(rest.chunks(frame * 2), 16).flatten() {
        let mut pcm: Vec<i16> = chunk
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        pcm.resize(frame, 0);
        meter.feed(&pcm);
        let r = meter.reading();
        assert!(
            r.short_term_lufs.is_finite() && r.short_term_lufs >= SILENCE_LUFS,
            "{r:?}"
        );
        assert!(r.peak_dbfs.is_finite() && r.peak_dbfs <= 0.0, "{r:?}");
        assert!(r.clipped >= clipped, "{r:?}");
        clipped = r.clipped;
        if chunk.first() == Some(&0xFF) {
            norm.pause();
        }
        norm.process(&mut pcm);
        let g = norm.gain_db();
        assert!(
            g >= -MAX_CUT_DB - 1e-9 && g <= settings.max_gain_db + 1e-9,
            "{g}"
        );
        assert!(pcm
            .iter()
            .all(|&s| f64::from(s.unsigned_abs()) <= limit + 0.5));
    }
});
