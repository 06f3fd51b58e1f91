//! `node._core` codec and resampler functions: bytes in, bytes out.
//!
//! PCM is native-endian 16-bit (the `audioop` width-2 convention). Inputs may be `bytes` (read
//! in place) or any other buffer-protocol object (copied once; for 16-bit buffers such as
//! `array('h')` the items are taken as samples). Outputs are new `bytes`, written in place.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyMemoryView};

use super::errors::CodecError as PyCodecError;
use crate::codec::{Codec, CodecError};
use crate::resample::{Downsampler, Resample, ResampleError, Upsampler};

impl From<CodecError> for PyErr {
    fn from(e: CodecError) -> PyErr {
        PyCodecError::new_err(e.to_string())
    }
}

impl From<ResampleError> for PyErr {
    fn from(e: ResampleError) -> PyErr {
        PyCodecError::new_err(e.to_string())
    }
}

/// Runs `f` on the raw bytes of a bytes-like object.
///
/// `bytes` is read in place. Any other buffer-protocol object (bytearray, memoryview,
/// `array('h')`, a numpy array) is copied once through `memoryview(obj).tobytes()`, which yields
/// its items' memory in order: for 16-bit buffers that is native-endian samples. (The abi3
/// build for Python 3.10 has no direct buffer access; only these slower paths pay the copy.)
#[inline(always)]
pub(super) fn with_bytes<T>(
    obj: &Bound<'_, PyAny>,
    f: impl FnOnce(&[u8]) -> PyResult<T>,
) -> PyResult<T> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    let view = PyMemoryView::from(obj).map_err(|_| {
        let name = obj
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        PyTypeError::new_err(format!("expected a bytes-like object, got {name}"))
    })?;
    let copy = view.call_method0("tobytes")?.cast_into::<PyBytes>()?;
    f(copy.as_bytes())
}

/// `process(pcm)` of every resampler class: bytes-like in, a new `bytes` with the output.
pub(super) fn resample<'py>(
    py: Python<'py>,
    rs: &mut impl Resample,
    pcm: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(pcm, |pcm| {
        if pcm.len() % 2 != 0 {
            return Err(ResampleError::OddLength { len: pcm.len() }.into());
        }
        let n = rs.output_len(pcm.len() / 2).saturating_mul(2);
        PyBytes::new_with(py, n, |out| {
            rs.process_ne_bytes_into(pcm, out)?;
            Ok(())
        })
    })
}

fn encode<'py>(py: Python<'py>, codec: Codec, pcm: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let n = codec.wire_len_for_ne_bytes(pcm.len())?;
    PyBytes::new_with(py, n, |out| {
        codec.encode_ne_bytes_into(pcm, out)?;
        Ok(())
    })
}

fn decode<'py>(py: Python<'py>, codec: Codec, wire: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let n = codec.ne_bytes_len_for_wire(wire.len())?;
    PyBytes::new_with(py, n, |out| {
        codec.decode_to_ne_bytes_into(wire, out)?;
        Ok(())
    })
}

fn decode_many<'py>(
    py: Python<'py>,
    codec: Codec,
    frames: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    // A list is the product's call shape; other iterables take the generic path.
    let decoded: Vec<Bound<'py, PyBytes>> = if let Ok(list) = frames.cast::<PyList>() {
        let mut v = Vec::with_capacity(list.len());
        for item in list.iter() {
            v.push(with_bytes(&item, |b| decode(py, codec, b))?);
        }
        v
    } else {
        frames
            .try_iter()?
            .map(|item| with_bytes(&item?, |b| decode(py, codec, b)))
            .collect::<PyResult<_>>()?
    };
    PyList::new(py, decoded)
}

/// Encode native-endian 16-bit PCM to G.711 µ-law (as `audioop.lin2ulaw(pcm, 2)`).
#[pyfunction]
fn ulaw_encode<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(pcm, |b| encode(py, Codec::Ulaw, b))
}

/// Decode G.711 µ-law to native-endian 16-bit PCM (as `audioop.ulaw2lin(data, 2)`).
#[pyfunction]
fn ulaw_decode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(data, |b| decode(py, Codec::Ulaw, b))
}

/// Encode native-endian 16-bit PCM to G.711 A-law (as `audioop.lin2alaw(pcm, 2)`).
#[pyfunction]
fn alaw_encode<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(pcm, |b| encode(py, Codec::Alaw, b))
}

/// Decode G.711 A-law to native-endian 16-bit PCM (as `audioop.alaw2lin(data, 2)`).
#[pyfunction]
fn alaw_decode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(data, |b| decode(py, Codec::Alaw, b))
}

/// Decode many µ-law frames in one call; returns one PCM `bytes` per frame.
#[pyfunction]
fn ulaw_decode_many<'py>(
    py: Python<'py>,
    frames: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    decode_many(py, Codec::Ulaw, frames)
}

/// Decode many A-law frames in one call; returns one PCM `bytes` per frame.
#[pyfunction]
fn alaw_decode_many<'py>(
    py: Python<'py>,
    frames: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    decode_many(py, Codec::Alaw, frames)
}

/// Native-endian PCM to slin wire bytes (8 kHz, big-endian).
#[pyfunction]
fn slin_to_wire<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(pcm, |b| encode(py, Codec::Slin, b))
}

/// slin wire bytes (big-endian) to native-endian PCM.
#[pyfunction]
fn slin_from_wire<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(data, |b| decode(py, Codec::Slin, b))
}

/// Native-endian PCM to slin16 wire bytes (16 kHz, little-endian).
#[pyfunction]
fn slin16_to_wire<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(pcm, |b| encode(py, Codec::Slin16, b))
}

/// slin16 wire bytes (little-endian) to native-endian PCM.
#[pyfunction]
fn slin16_from_wire<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(data, |b| decode(py, Codec::Slin16, b))
}

/// Streaming 8 kHz -> 16 kHz resampler (halfband FIR, state kept between calls).
#[pyclass(name = "Upsampler", module = "node._core")]
#[derive(Default)]
pub struct PyUpsampler {
    inner: Upsampler,
}

#[pymethods]
impl PyUpsampler {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Resample native-endian 16-bit PCM at 8 kHz; returns twice as many samples at 16 kHz.
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        resample(py, &mut self.inner, pcm)
    }

    /// Forget the filter history.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// Group delay in output (16 kHz) samples.
    #[getter]
    fn delay(&self) -> f64 {
        self.inner.delay()
    }

    fn __repr__(&self) -> String {
        format!("Upsampler(8000 -> 16000, delay={})", self.inner.delay())
    }
}

/// Streaming 16 kHz -> 8 kHz resampler (halfband FIR, state kept between calls).
#[pyclass(name = "Downsampler", module = "node._core")]
#[derive(Default)]
pub struct PyDownsampler {
    inner: Downsampler,
}

#[pymethods]
impl PyDownsampler {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Resample native-endian 16-bit PCM at 16 kHz; returns half as many samples at 8 kHz
    /// (an odd sample count keeps one sample for the next call).
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        resample(py, &mut self.inner, pcm)
    }

    /// Forget the filter history and any pending sample.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// Group delay in output (8 kHz) samples.
    #[getter]
    fn delay(&self) -> f64 {
        self.inner.delay()
    }

    fn __repr__(&self) -> String {
        format!("Downsampler(16000 -> 8000, delay={})", self.inner.delay())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ulaw_encode, m)?)?;
    m.add_function(wrap_pyfunction!(ulaw_decode, m)?)?;
    m.add_function(wrap_pyfunction!(alaw_encode, m)?)?;
    m.add_function(wrap_pyfunction!(alaw_decode, m)?)?;
    m.add_function(wrap_pyfunction!(ulaw_decode_many, m)?)?;
    m.add_function(wrap_pyfunction!(alaw_decode_many, m)?)?;
    m.add_function(wrap_pyfunction!(slin_to_wire, m)?)?;
    m.add_function(wrap_pyfunction!(slin_from_wire, m)?)?;
    m.add_function(wrap_pyfunction!(slin16_to_wire, m)?)?;
    m.add_function(wrap_pyfunction!(slin16_from_wire, m)?)?;
    m.add_class::<PyUpsampler>()?;
    m.add_class::<PyDownsampler>()?;
    Ok(())
}
