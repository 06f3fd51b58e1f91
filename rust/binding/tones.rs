//! `node._core` tone rendering and DTMF detection: the CW keyer, tones and DTMF digits rendered
//! to PCM for the announcement player, and the streaming DTMF detector for tests and tools.
//!
//! PCM is native-endian 16-bit bytes at the rate given, as everywhere in `node._core`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::codec::with_bytes;
use super::errors::{CodecError as PyCodecError, ToneError as PyToneError};
use crate::dtmf::{DtmfDetector, DtmfEvent, DtmfGenerator};
use crate::ratio::resample_clip;
use crate::tone::{CwKeyer, ToneGenerator, ToneSequence, ToneStep};

/// Longest rendering accepted, in ms: an announcement is seconds long, never minutes.
const MAX_RENDER_MS: u64 = 600_000;

fn check_length(ms: u64) -> PyResult<()> {
    if ms > MAX_RENDER_MS {
        return Err(PyToneError::new_err(format!(
            "{ms} ms is longer than the {MAX_RENDER_MS} ms a rendering may last"
        )));
    }
    Ok(())
}

fn pcm_bytes<'py>(py: Python<'py>, pcm: &[i16]) -> Bound<'py, PyBytes> {
    PyBytes::new_with(py, pcm.len() * 2, |out| {
        for (dst, s) in out.chunks_exact_mut(2).zip(pcm) {
            dst.copy_from_slice(&s.to_ne_bytes());
        }
        Ok(())
    })
    .unwrap_or_else(|_| PyBytes::new(py, &[]))
}

fn samples(rate: u32, ms: u64) -> usize {
    usize::try_from(u64::from(rate) * ms / 1000).unwrap_or(0)
}

/// Morse of `text` at `wpm` (PARIS timing: a dot is 1200/wpm ms), a `tone_hz` sine peaking at
/// `level_dbfs`, with 5 ms raised-cosine keying. Characters CW cannot send are skipped.
#[pyfunction]
#[pyo3(signature = (rate, text, wpm, tone_hz, level_dbfs))]
fn cw_pcm<'py>(
    py: Python<'py>,
    rate: u32,
    text: &str,
    wpm: u32,
    tone_hz: f64,
    level_dbfs: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut keyer = CwKeyer::new(rate, wpm, tone_hz, level_dbfs, text)?;
    check_length(keyer.duration_ms())?;
    let mut pcm = vec![0i16; usize::try_from(keyer.duration_samples()).unwrap_or(0)];
    let _ = keyer.fill(&mut pcm);
    Ok(pcm_bytes(py, &pcm))
}

/// A `freq_hz` tone of `duration_ms` (at half amplitude) peaking at `level_dbfs`, with 5 ms
/// raised-cosine ramps.
#[pyfunction]
fn tone_pcm<'py>(
    py: Python<'py>,
    rate: u32,
    freq_hz: f64,
    duration_ms: u64,
    level_dbfs: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    check_length(duration_ms)?;
    let mut tone = ToneGenerator::new(rate, freq_hz, level_dbfs)?;
    let mut pcm = vec![0i16; samples(rate, duration_ms) + crate::tone::ramp_samples(rate)];
    let (on, tail) = pcm.split_at_mut(samples(rate, duration_ms));
    let _ = tone.fill(on);
    tone.stop();
    let _ = tone.fill(tail);
    Ok(pcm_bytes(py, &pcm))
}

/// A sequence of `(freq1_hz, freq2_hz, ms)` steps (0 Hz for none; both 0 is a pause), each
/// tone peaking at `level_dbfs`, click-free: a repeater's courtesy tone.
#[pyfunction]
fn tone_sequence_pcm<'py>(
    py: Python<'py>,
    rate: u32,
    steps: Vec<(f64, f64, u32)>,
    level_dbfs: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let steps: Vec<ToneStep> = steps
        .into_iter()
        .map(|(freq1_hz, freq2_hz, ms)| ToneStep {
            freq1_hz,
            freq2_hz,
            ms,
        })
        .collect();
    check_length(steps.iter().map(|s| u64::from(s.ms)).sum())?;
    let mut sequence = ToneSequence::new(rate, &steps, level_dbfs)?;
    let mut pcm = vec![0i16; usize::try_from(sequence.duration_samples()).unwrap_or(0)];
    let _ = sequence.fill(&mut pcm);
    Ok(pcm_bytes(py, &pcm))
}

/// DTMF `digits` as `on_ms` tones separated by `off_ms` of silence, each digit peaking at
/// `level_dbfs` with the low tone `twist_db` above the high one.
#[pyfunction]
#[pyo3(signature = (rate, digits, level_dbfs, on_ms = 100, off_ms = 100, twist_db = 0.0))]
fn dtmf_pcm<'py>(
    py: Python<'py>,
    rate: u32,
    digits: &str,
    level_dbfs: f64,
    on_ms: u32,
    off_ms: u32,
    twist_db: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let count = u64::try_from(digits.chars().count()).unwrap_or(u64::MAX);
    check_length(count.saturating_mul(u64::from(on_ms) + u64::from(off_ms)))?;
    let mut generator = DtmfGenerator::new(rate)?;
    let mut pcm = Vec::new();
    for digit in digits.chars() {
        generator.start_with_twist(digit, on_ms, level_dbfs, twist_db)?;
        let start = pcm.len();
        pcm.resize(start + samples(rate, u64::from(on_ms)), 0);
        if let Some(out) = pcm.get_mut(start..) {
            let _ = generator.fill(out);
        }
        // The envelope's ramp-down runs into the gap.
        let gap = pcm.len();
        pcm.resize(gap + samples(rate, u64::from(off_ms)), 0);
        if let Some(out) = pcm.get_mut(gap..) {
            let _ = generator.fill(out);
        }
    }
    Ok(pcm_bytes(py, &pcm))
}

/// Native-endian 16-bit PCM bytes as samples (CodecError for an odd byte count).
pub(super) fn samples_of(raw: &[u8]) -> PyResult<Vec<i16>> {
    if raw.len() % 2 != 0 {
        return Err(PyCodecError::new_err(format!(
            "16-bit PCM has an even byte count, not {}",
            raw.len()
        )));
    }
    Ok(raw
        .chunks_exact(2)
        .map(|b| i16::from_ne_bytes([b[0], b[1]]))
        .collect())
}

/// A whole clip of PCM at `from_rate` converted to `to_rate` (rational polyphase, e.g. 160/441
/// for a TTS binary's 22050 Hz to 8000 Hz; docs/announce.md), scaled by `gain_db`.
#[pyfunction]
#[pyo3(signature = (pcm, from_rate, to_rate, gain_db = 0.0))]
fn resample_pcm<'py>(
    py: Python<'py>,
    pcm: &Bound<'py, PyAny>,
    from_rate: u32,
    to_rate: u32,
    gain_db: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let input = with_bytes(pcm, samples_of)?;
    let out = py.detach(|| resample_clip(&input, from_rate, to_rate, gain_db))?;
    Ok(pcm_bytes(py, &out))
}

/// The streaming DTMF detector of the media path (docs/dtmf.md), on PCM at 8000 or 16000 Hz.
#[pyclass(name = "DtmfDetector", module = "node._core")]
pub struct PyDtmfDetector {
    inner: DtmfDetector,
}

#[pymethods]
impl PyDtmfDetector {
    #[new]
    fn new(rate: u32) -> PyResult<Self> {
        Ok(PyDtmfDetector {
            inner: DtmfDetector::new(rate)?,
        })
    }

    /// Feed PCM (any length); the events it completes, oldest first, as ("pressed", digit) or
    /// ("released", digit).
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let events = PyList::empty(py);
        with_bytes(pcm, |raw| {
            let samples = samples_of(raw)?;
            let mut event = self.inner.process(&samples);
            while let Some(e) = event {
                match e {
                    DtmfEvent::Pressed(d) => events.append(("pressed", d.to_string()))?,
                    DtmfEvent::Released(d) => events.append(("released", d.to_string()))?,
                }
                event = self.inner.next_event();
            }
            Ok(())
        })?;
        Ok(events)
    }

    /// The digit held down now, or None.
    #[getter]
    fn current(&self) -> Option<String> {
        self.inner.current().map(|d| d.to_string())
    }

    #[getter]
    fn rate(&self) -> u32 {
        self.inner.rate()
    }

    /// Per-window verdict counters: windows, hits, presses, and rejections by test.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        counters_of! { py, self.inner.stats();
            windows hits presses quiet not_peaked low_fraction off_frequency too_weak twisted
            harmonic residual events_dropped
        }
    }

    /// Forget all audio and state (counters are kept).
    fn reset(&mut self) {
        self.inner.reset();
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register!(
        m,
        classes: [PyDtmfDetector],
        functions: [cw_pcm, tone_pcm, tone_sequence_pcm, dtmf_pcm, resample_pcm]
    )
}
