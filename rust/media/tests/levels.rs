//! Loudness meters on every leg and the normaliser.

use super::*;

#[test]
fn legs_carry_meters_and_a_normalised_voice_reaches_the_target() {
    use crate::loudness::{LoudnessMeter, NormalizeSettings};
    let settings = NormalizeSettings {
        target_lufs: -24.0,
        max_gain_db: 18.0,
    };
    // A quiet talker (leg 10, normalised by the station's default), a loud one (leg 11, its
    // own override keeps it as it comes), and a listener (leg 12) on a link.
    let quiet = spec(10, 9810, Slin);
    let loud = LegSpec {
        normalize: Some(false),
        ..spec(11, 9811, Slin)
    };
    let listener = LegSpec {
        link: true,
        ..spec(12, 9812, Slin)
    };
    let mut st = station(8000, [quiet, loud, listener]);
    st.set_normalize(true, settings);
    let mut out = TickOutput::default();
    let mut heard_quiet = LoudnessMeter::new(8000);
    // 8 s of the quiet talker, then 8 s of the loud one.
    for (n, now) in frame_times(0..800) {
        let (callno, amp) = if n < 400 { (10, 1500.0) } else { (11, 24000.0) };
        feed(
            &mut st,
            callno,
            Slin,
            &voice_frame(8000, n, amp),
            2000 + now as u32,
            now,
        );
        tick(&mut st, &mut out, now);
        if let Some(pcm) = heard(&out, 12, addr(9812), Slin) {
            if (200..400).contains(&n) {
                heard_quiet.feed(&pcm);
            }
        }
    }
    let mut levels = Levels::default();
    st.fill_levels(&mut levels);
    let by = |c: u16| levels.legs.iter().find(|l| l.callno == c).copied();
    let (q, l, li) = (by(10).unwrap(), by(11).unwrap(), by(12).unwrap());
    let arrived_quiet = q.rx.short_term_lufs;
    // What arrives is metered as it came, and the gain is what brings it to the target.
    assert!(arrived_quiet < -35.0, "{q:?}");
    let gain = q.gain_db.expect("normalised");
    assert!((arrived_quiet + gain - -24.0).abs() < 0.5, "{q:?}");
    assert!(l.gain_db.is_none() && l.rx.short_term_lufs > -20.0, "{l:?}");
    // The listener heard the quiet talker (its last 4 s, once learnt) at the target.
    let heard = heard_quiet.reading().short_term_lufs;
    assert!((heard - -24.0).abs() < 0.5, "{heard}");
    // Each talker hears the other: its own mix, its own meter; the listener's reading is
    // what it was sent last, the loud talker as it came.
    assert!(
        (li.tx.short_term_lufs - l.rx.short_term_lufs).abs() < 0.5,
        "{li:?} {l:?}"
    );
    assert!(levels.local.is_some());
    // Normalisation off again: no leg keeps a normaliser.
    st.set_normalize(false, settings);
    st.fill_levels(&mut levels);
    assert!(levels.legs.iter().all(|l| l.gain_db.is_none()));
}
