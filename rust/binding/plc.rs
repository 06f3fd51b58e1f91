//! `node._core.conceal_frames`: the media path's packet-loss concealment on a recording, so a
//! benchmark can score what concealment alone does to speech (the "bound" of a perfect jitter
//! buffer), and `node._core.jitter_replay`: a leg's whole receive path (jitter buffer and
//! concealment) replayed on frames with their arrival times.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::jitter::{
    conceal_lost, replay, Arrival, Concealment, JitterConfig, Played, LOOKAHEAD_SLOTS,
};

use super::engine::jitter_to_py;

use super::codec::with_bytes;

/// The concealment named `name` ("pitch" or "fade"), or a ValueError naming the choices.
pub(super) fn concealment(name: &str) -> PyResult<Concealment> {
    Concealment::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "concealment {name:?} (accepted: \"pitch\", \"fade\")"
        ))
    })
}

/// Native-endian 16-bit PCM at `rate` (8000 or 16000) in 20 ms frames, with the frames where
/// `lost` is true replaced by the concealment `method` ("pitch" or "fade") exactly as a leg
/// conceals them when the frame after a gap of up to `LOOKAHEAD_SLOTS` lost frames is already
/// in its buffer (as in a buffer that holds every frame in time). A short last frame is kept
/// as it is.
#[pyfunction]
#[pyo3(signature = (pcm, lost, rate = 8000, method = "pitch"))]
fn conceal_frames<'py>(
    py: Python<'py>,
    pcm: &Bound<'py, PyAny>,
    lost: Vec<bool>,
    rate: u32,
    method: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let mode = concealment(method)?;
    if rate != 8000 && rate != 16000 {
        return Err(PyValueError::new_err(format!(
            "rate {rate} (accepted: 8000, 16000)"
        )));
    }
    let samples: Vec<i16> = with_bytes(pcm, |b| {
        Ok(b.chunks_exact(2)
            .map(|c| i16::from_ne_bytes([c[0], c[1]]))
            .collect())
    })?;
    let out = conceal_lost(&samples, rate, mode, LOOKAHEAD_SLOTS, |i| {
        lost.get(i).copied().unwrap_or(false)
    });
    let out: Vec<u8> = out.iter().flat_map(|s| s.to_ne_bytes()).collect();
    Ok(PyBytes::new(py, &out))
}

/// The audio a leg would mix over `ticks` ticks (the first at `first_tick_ms`, then every
/// 20 ms) when the frames `arrivals` (timestamp, arrival ms, native 16-bit PCM of one 20 ms
/// frame) reach it, through the media path's jitter buffer (defaults, with
/// `target_extra_ms`) and concealment `method`; the buffer's counters; and what each tick
/// played (the frame's timestamp, -1 concealment, -2 silence).
#[pyfunction]
#[pyo3(signature = (arrivals, first_tick_ms, ticks, rate = 8000, method = "pitch", target_extra_ms = 40))]
fn jitter_replay<'py>(
    py: Python<'py>,
    arrivals: Vec<(u32, u64, Vec<u8>)>,
    first_tick_ms: u64,
    ticks: usize,
    rate: u32,
    method: &str,
    target_extra_ms: u32,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyDict>, Vec<i64>)> {
    let mode = concealment(method)?;
    if rate != 8000 && rate != 16000 {
        return Err(PyValueError::new_err(format!(
            "rate {rate} (accepted: 8000, 16000)"
        )));
    }
    if ticks > 1_000_000 {
        return Err(PyValueError::new_err(format!(
            "ticks {ticks} (accepted: up to 1000000)"
        )));
    }
    let frame = rate as usize / 50;
    let arrivals: Vec<Arrival> = arrivals
        .into_iter()
        .map(|(ts, at_ms, pcm)| Arrival {
            ts,
            at_ms,
            pcm: pcm
                .chunks_exact(2)
                .take(frame)
                .map(|c| i16::from_ne_bytes([c[0], c[1]]))
                .collect(),
        })
        .collect();
    let cfg = JitterConfig {
        target_extra_ms,
        ..JitterConfig::default()
    };
    let r = replay(cfg, mode, rate, frame, &arrivals, first_tick_ms, ticks)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let bytes: Vec<u8> = r.pcm.iter().flat_map(|s| s.to_ne_bytes()).collect();
    let played = r
        .played
        .iter()
        .map(|p| match p {
            Played::Voice(ts) => i64::from(*ts),
            Played::Concealed => -1,
            Played::Silence => -2,
        })
        .collect();
    Ok((
        PyBytes::new(py, &bytes),
        jitter_to_py(py, &r.stats)?,
        played,
    ))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conceal_frames, m)?)?;
    m.add_function(wrap_pyfunction!(jitter_replay, m)?)
}
