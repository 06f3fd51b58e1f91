//! `node._core.GsmEncoder` and `GsmDecoder`: the GSM 06.10 codec (`rust/gsm.rs`) on bytes,
//! one state per object (GSM predicts from the frames before, so a stream keeps its object).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::codec::with_bytes;
use crate::gsm::{Decoder, Encoder};

/// A GSM 06.10 encoder: native-endian int16 PCM at 8 kHz, whole 20 ms frames, to 33-byte
/// frames (libgsm's packing, bit-exact with it).
#[pyclass(name = "GsmEncoder", module = "node._core")]
#[derive(Default)]
pub struct PyGsmEncoder {
    inner: Encoder,
    out: Vec<u8>,
}

#[pymethods]
impl PyGsmEncoder {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Encode whole frames of PCM (320 bytes each) in order; returns 33 bytes per frame.
    fn encode<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (inner, out) = (&mut self.inner, &mut self.out);
        out.clear();
        with_bytes(pcm, |pcm| {
            inner.encode_ne_bytes(pcm, out)?;
            Ok(())
        })?;
        Ok(PyBytes::new(py, out))
    }
}

/// A GSM 06.10 decoder: 33-byte frames to native-endian int16 PCM at 8 kHz (bit-exact with
/// libgsm).
#[pyclass(name = "GsmDecoder", module = "node._core")]
#[derive(Default)]
pub struct PyGsmDecoder {
    inner: Decoder,
    out: Vec<u8>,
}

#[pymethods]
impl PyGsmDecoder {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Decode whole 33-byte frames in order; returns 320 bytes of PCM per frame. CodecError
    /// for a length that is not whole frames or a frame without the 0xD signature.
    fn decode<'py>(
        &mut self,
        py: Python<'py>,
        frames: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (inner, out) = (&mut self.inner, &mut self.out);
        out.clear();
        with_bytes(frames, |frames| {
            inner.decode_to_ne_bytes(frames, out)?;
            Ok(())
        })?;
        Ok(PyBytes::new(py, out))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register!(m, classes: [PyGsmEncoder, PyGsmDecoder], functions: [])
}
