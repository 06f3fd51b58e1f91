//! `node._core.conceal_frames`: the media path's packet-loss concealment on a recording, so a
//! benchmark can score what concealment alone does to speech (the "bound" of a perfect jitter
//! buffer).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::jitter::{Concealer, Concealment};

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
/// conceals them. A short last frame is kept as it is.
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
    let frame = rate as usize / 50;
    let mut plc = Concealer::new(rate, frame, mode);
    let mut out = Vec::with_capacity(samples.len() * 2);
    let mut buf = vec![0i16; frame];
    for (i, chunk) in samples.chunks(frame).enumerate() {
        if chunk.len() == frame {
            buf.copy_from_slice(chunk);
            if lost.get(i).copied().unwrap_or(false) {
                plc.conceal(&mut buf);
            } else {
                plc.good(&mut buf);
            }
        } else {
            buf.truncate(chunk.len());
            buf.copy_from_slice(chunk);
        }
        out.extend(buf.iter().flat_map(|s| s.to_ne_bytes()));
    }
    Ok(PyBytes::new(py, &out))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conceal_frames, m)?)
}
