//! `node._core.LoudnessMeter` and `normalize_pcm`: the media path's BS.1770 meter and
//! normaliser on a recording, for the tests that hold them against an independent meter and
//! for the bench; and the readings' Python form, shared with `Engine.levels`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::loudness::{LoudnessMeter, LoudnessReading, NormalizeSettings, Normalizer};

use super::codec::with_bytes;

/// Target loudness accepted, LUFS.
pub const TARGET_LUFS: std::ops::RangeInclusive<f64> = -60.0..=-10.0;
/// Most gain accepted, dB.
pub const MAX_GAIN_DB: std::ops::RangeInclusive<f64> = 0.0..=30.0;

/// The settings, or a ValueError naming the accepted ranges.
pub(super) fn settings(target_lufs: f64, max_gain_db: f64) -> PyResult<NormalizeSettings> {
    if !TARGET_LUFS.contains(&target_lufs) {
        return Err(PyValueError::new_err(format!(
            "loudness_target {target_lufs} (accepted: -60.0 to -10.0 LUFS)"
        )));
    }
    if !MAX_GAIN_DB.contains(&max_gain_db) {
        return Err(PyValueError::new_err(format!(
            "normalize_max_gain_db {max_gain_db} (accepted: 0.0 to 30.0 dB)"
        )));
    }
    Ok(NormalizeSettings {
        target_lufs,
        max_gain_db,
    })
}

/// A reading as a dict: `lufs` (None before 400 ms of speech), `peak_dbfs`, `clipped`,
/// `speech`.
pub(super) fn reading_to_py<'py>(
    py: Python<'py>,
    r: &LoudnessReading,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let lufs = (r.short_term_lufs > crate::loudness::SILENCE_LUFS)
        .then(|| (r.short_term_lufs * 100.0).round() / 100.0);
    d.set_item("lufs", lufs)?;
    d.set_item("peak_dbfs", (r.peak_dbfs * 100.0).round() / 100.0)?;
    d.set_item("clipped", r.clipped)?;
    d.set_item("speech", r.speech)?;
    Ok(d)
}

fn check_rate(rate: u32) -> PyResult<()> {
    if matches!(rate, 8000 | 16000 | 48000) {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "rate {rate} (accepted: 8000, 16000, 48000)"
        )))
    }
}

fn samples(pcm: &Bound<'_, PyAny>) -> PyResult<Vec<i16>> {
    with_bytes(pcm, |b| {
        Ok(b.chunks_exact(2)
            .map(|c| i16::from_ne_bytes([c[0], c[1]]))
            .collect())
    })
}

/// The media path's loudness meter over native-endian int16 PCM at `rate` (8000, 16000 or
/// 48000): short-term loudness of the last 3 s of speech, peak, clipped samples.
#[pyclass(name = "LoudnessMeter", module = "node._core")]
pub struct PyLoudnessMeter {
    inner: LoudnessMeter,
}

#[pymethods]
impl PyLoudnessMeter {
    #[new]
    fn new(rate: u32) -> PyResult<Self> {
        check_rate(rate)?;
        Ok(PyLoudnessMeter {
            inner: LoudnessMeter::new(rate),
        })
    }

    /// Measure the next samples (bytes-like, native-endian int16).
    fn feed(&mut self, pcm: &Bound<'_, PyAny>) -> PyResult<()> {
        with_bytes(pcm, |b| {
            let mut frame = [0i16; 960];
            for chunk in b.chunks(frame.len() * 2) {
                let n = chunk.len() / 2;
                for (s, c) in frame.iter_mut().zip(chunk.chunks_exact(2)) {
                    *s = i16::from_ne_bytes([c[0], c[1]]);
                }
                self.inner.feed(frame.get(..n).unwrap_or(&[]));
            }
            Ok(())
        })
    }

    /// The reading: dict of `lufs` (None before 400 ms of speech), `peak_dbfs`, `clipped`,
    /// `speech` (the last 100 ms block was speech).
    fn reading<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = reading_to_py(py, &self.inner.reading())?;
        // Unrounded, for the comparisons against another meter.
        r.set_item("lufs", self.inner.short_term())?;
        Ok(r)
    }
}

/// `pcm` (native-endian int16 at `rate`, 8000 or 16000) through a leg's normaliser in 20 ms
/// frames, as the media path runs it on a voice it receives (a short last frame is dropped).
/// `target_lufs` and `max_gain_db` default (None) to `[bridge]`'s defaults. Returns the output
/// (delayed by the limiter's look-ahead) and the gain at the end, dB.
#[pyfunction]
#[pyo3(signature = (pcm, rate = 8000, target_lufs = None, max_gain_db = None))]
fn normalize_pcm<'py>(
    py: Python<'py>,
    pcm: &Bound<'py, PyAny>,
    rate: u32,
    target_lufs: Option<f64>,
    max_gain_db: Option<f64>,
) -> PyResult<(Bound<'py, PyBytes>, f64)> {
    let defaults = NormalizeSettings::default();
    let target_lufs = target_lufs.unwrap_or(defaults.target_lufs);
    let max_gain_db = max_gain_db.unwrap_or(defaults.max_gain_db);
    if rate != 8000 && rate != 16000 {
        return Err(PyValueError::new_err(format!(
            "rate {rate} (accepted: 8000, 16000)"
        )));
    }
    let mut n = Normalizer::new(rate, settings(target_lufs, max_gain_db)?);
    let mut x = samples(pcm)?;
    let frame = rate as usize / 50;
    let whole = x.len() / frame * frame;
    x.truncate(whole);
    for f in x.chunks_exact_mut(frame) {
        n.process(f);
    }
    let out: Vec<u8> = x.iter().flat_map(|s| s.to_ne_bytes()).collect();
    Ok((PyBytes::new(py, &out), n.gain_db()))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register!(m, classes: [PyLoudnessMeter], functions: [normalize_pcm])
}
