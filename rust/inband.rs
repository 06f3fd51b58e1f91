//! In-band DTMF on one conference member's received audio: digits out, tones muted.
//!
//! app_rpt never relays DTMF it decodes: the tones are muted out of the conference while they are
//! being decoded, so typing `*3 2000` on a link does not send the tones on to every other node
//! (research/allstar.md §3). [`InbandDtmf`] runs the streaming detector of `dtmf.rs` on each
//! 20 ms frame a member delivers, before the frame is mixed, and says whether the frame holds part
//! of a tone: the frame in which the detector's first hit lands is muted, and every frame after
//! it until the digit is released (or the hits stop short of a press).
//!
//! Muting starts at the first hit, not at the press, and there is no delay line: the tone's
//! first frames, mixed before any window had seen enough of it, still go out. Measured (rust/media/tests.rs
//! test `inband_tones_are_muted_and_what_leaks_is_measured`, every digit, onsets at 20 positions
//! in the frame, 50 ms tones): at most 18.9 ms of tone leaks (its 2 ms ramp included), 6.6 ms
//! on average, at 8 and 16 kHz. A detector needs more than that to see a digit (ours 32 ms,
//! Asterisk's two whole 12.75 ms blocks, 25.5 ms; Q.24 asks to accept from 40 ms), and the test
//! runs our detector on what the far end hears and finds no digit. A delay line of one frame
//! would bring the leak to zero at the cost of 20 ms more latency on every member, always.
//!
//! A member that delivered nothing in a tick (not talking) costs nothing while the detector is
//! idle; while it is busy it is fed one frame of silence, so a digit whose sender simply stopped
//! sending is still released.

use crate::dtmf::{DtmfDetector, DtmfError, DtmfEvent};

/// The in-band DTMF state of one member.
#[derive(Debug, Clone)]
pub struct InbandDtmf {
    detector: DtmfDetector,
}

impl InbandDtmf {
    /// Detection at the station rate (8000 or 16000).
    pub fn new(rate: u32) -> Result<Self, DtmfError> {
        Ok(InbandDtmf {
            detector: DtmfDetector::new(rate)?,
        })
    }

    /// One tick of the member's audio: `pcm` is what it delivered (`None` when it delivered
    /// nothing), `silence` a frame of zeros of the same length. Every digit pressed in this
    /// frame goes to `on_digit`. Returns true when the frame holds part of a tone, which the
    /// caller mutes.
    pub fn frame(
        &mut self,
        pcm: Option<&[i16]>,
        silence: &[i16],
        mut on_digit: impl FnMut(char),
    ) -> bool {
        let input = match pcm {
            Some(pcm) => pcm,
            None if self.detector.busy() => silence,
            None => return false,
        };
        let hits = self.detector.stats().hits;
        let mut event = self.detector.process(input);
        while let Some(e) = event {
            if let DtmfEvent::Pressed(d) = e {
                on_digit(d);
            }
            event = self.detector.next_event();
        }
        self.detector.stats().hits != hits || self.detector.current().is_some()
    }

    /// The detector's counters (windows, hits, presses, rejections by test).
    pub fn stats(&self) -> crate::dtmf::DtmfStats {
        self.detector.stats()
    }

    /// Elements held by the detector's buffers (for the no-growth test).
    pub fn capacity_samples(&self) -> usize {
        self.detector.capacity_samples()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtmf::DtmfGenerator;

    fn frames_of(rate: u32, signal: &[i16]) -> Vec<Vec<i16>> {
        let n = (rate / 50) as usize;
        signal
            .chunks(n)
            .map(|c| {
                let mut f = c.to_vec();
                f.resize(n, 0);
                f
            })
            .collect()
    }

    fn digits_signal(rate: u32, digits: &str, on_ms: u32, off_ms: u32) -> Vec<i16> {
        let mut g = DtmfGenerator::new(rate).expect("generator");
        let per = |ms: u32| (rate * ms / 1000) as usize;
        let mut out = vec![0i16; per(60)];
        for d in digits.chars() {
            g.start(d, on_ms, -10.0).expect("digit");
            let mut tone = vec![0i16; per(on_ms + 5)];
            let _ = g.fill(&mut tone);
            out.extend_from_slice(&tone);
            out.extend(std::iter::repeat_n(0, per(off_ms)));
        }
        out
    }

    #[test]
    fn digits_are_reported_once_and_their_frames_muted() {
        for rate in [8000, 16000] {
            let mut ib = InbandDtmf::new(rate).expect("detector");
            let signal = digits_signal(rate, "*32000#", 60, 60);
            let silence = vec![0i16; (rate / 50) as usize];
            let mut got = String::new();
            let mut muted = 0;
            for f in frames_of(rate, &signal) {
                if ib.frame(Some(&f), &silence, |d| got.push(d)) {
                    muted += 1;
                }
            }
            assert_eq!(got, "*32000#", "{rate}");
            // Seven tones of 60 ms: every one is muted for most of its length and its release.
            assert!((7 * 3..=7 * 6).contains(&muted), "{muted} frames muted");
        }
    }

    #[test]
    fn a_sender_that_stops_mid_digit_is_released_on_silence() {
        let rate = 8000;
        let mut ib = InbandDtmf::new(rate).expect("detector");
        let silence = vec![0i16; 160];
        let signal = digits_signal(rate, "5", 200, 0);
        let mut got = String::new();
        // Half the tone arrives, then the member sends nothing at all.
        for f in frames_of(rate, &signal).iter().take(7) {
            let _ = ib.frame(Some(f), &silence, |d| got.push(d));
        }
        assert_eq!(got, "5");
        assert!(ib.frame(None, &silence, |_| {}), "still inside the tone");
        let mut quiet_after = None;
        for n in 0..5 {
            if !ib.frame(None, &silence, |_| {}) {
                quiet_after = Some(n);
                break;
            }
        }
        assert!(
            quiet_after.is_some(),
            "released after the sender went quiet"
        );
        let windows = ib.stats().windows;
        assert!(!ib.frame(None, &silence, |_| {}));
        assert_eq!(ib.stats().windows, windows, "an idle detector is not fed");
    }
}
