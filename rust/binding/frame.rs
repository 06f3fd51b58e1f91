//! Python face of the IAX2 wire core (`crate::frame`, `crate::ie`).
//!
//! Parsed frames keep the Rust struct and build Python objects only when an attribute is read,
//! so `parse()` costs one allocation of the wrapper plus the Rust parse. Every invalid input,
//! whether undecodable bytes or a value that cannot be encoded, raises `FrameError` (a
//! `ValueError`); only a non-bytes argument to `parse()` raises `TypeError`.
//!
//! One file per frame class, as in the core: `full` (full frames), `mini` (mini voice frames),
//! `meta` (video and trunk frames); `args` converts arguments and `ies` IE values.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

use crate::frame::{self as wire, Frame};
use crate::ie;

/// The part every frame class shares, generated as its one `#[pymethods]` block: its plain
/// `fields` and its `computed` ones (read through the Rust method of the same name) as
/// read-only properties, its `bytes` field (the payload) as `bytes`, its `settable` int
/// fields (`field / setter: type = max`: read-write, in `0..=max`) and `to_bytes()`. The
/// `impl` block holds the class's own methods.
macro_rules! frame_methods {
    (
        fields { $($field:ident: $ty:ty),* $(,)? }
        $(computed { $($method:ident: $method_ty:ty),* $(,)? })?
        $(bytes { $payload:ident })?
        $(settable { $($int:ident / $setter:ident: $int_ty:ty = $max:expr),* $(,)? })?
        impl $class:ident { $($rest:tt)* }
    ) => {
        #[pymethods]
        impl $class {
            $(
                #[getter]
                fn $field(&self) -> $ty {
                    self.inner.$field
                }
            )*

            $($(
                #[getter]
                fn $method(&self) -> $method_ty {
                    self.inner.$method()
                }
            )*)?

            $(
                #[getter]
                fn $payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                    PyBytes::new(py, &self.inner.$payload)
                }
            )?

            $($(
                #[getter]
                fn $int(&self) -> $int_ty {
                    self.inner.$int
                }

                #[setter]
                fn $setter(&mut self, v: IntArg) -> PyResult<()> {
                    self.inner.$int = v.check(stringify!($int), 0, $max)?;
                    Ok(())
                }
            )*)?

            fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                let mut out = Vec::with_capacity(self.inner.encoded_len());
                self.inner.write_to(&mut out);
                PyBytes::new(py, &out)
            }

            $($rest)*
        }
    };
}

mod args;
mod full;
mod ies;
mod meta;
mod mini;

use args::{bytes_of, frame_err, invalid, type_name, u64_arg, IntArg};
pub use full::full_frame_to_py;
use full::PyFullFrame;
use meta::{PyTrunkFrame, PyVideoFrame};
use mini::PyMiniFrame;

/// Parses one IAX2 datagram into a FullFrame, MiniFrame, TrunkFrame or VideoFrame.
#[pyfunction]
fn parse<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let frame = if let Ok(b) = data.cast::<PyBytes>() {
        wire::parse(b.as_bytes())
    } else if let Ok(b) = data.cast::<PyByteArray>() {
        wire::parse(&b.to_vec())
    } else {
        return Err(PyTypeError::new_err(format!(
            "parse() takes bytes, not {}",
            type_name(data)
        )));
    };
    Ok(match frame.map_err(frame_err)? {
        Frame::Full(inner) => full_frame_to_py(py, inner)?.into_any(),
        Frame::Mini(inner) => Bound::new(py, PyMiniFrame { inner })?.into_any(),
        Frame::Trunk(inner) => Bound::new(py, PyTrunkFrame { inner })?.into_any(),
        Frame::Video(inner) => Bound::new(py, PyVideoFrame { inner })?.into_any(),
    })
}

/// Encodes a subclass Asterisk-style (< 0x80 raw, power of two -> 0x80|log2, -1 -> 0xFF).
#[pyfunction]
fn compress_subclass(value: IntArg) -> PyResult<u8> {
    wire::compress_subclass(value.0).map_err(frame_err)
}

/// Decodes a subclass byte.
#[pyfunction]
fn uncompress_subclass(csub: IntArg) -> PyResult<i64> {
    Ok(wire::uncompress_subclass(csub.check("csub", 0, 0xFF)?))
}

/// Format bits in preference order -> CODEC_PREFS string (e.g. [SLIN16, ULAW] -> "PD").
#[pyfunction]
fn encode_codec_prefs(formats: &Bound<'_, PyAny>) -> PyResult<String> {
    let iter = formats
        .try_iter()
        .map_err(|_| invalid("formats must be a list of ints".to_owned()))?;
    let mut bits = Vec::new();
    for item in iter {
        bits.push(u64_arg(&item?, "format")?);
    }
    ie::encode_codec_prefs(&bits).map_err(frame_err)
}

/// CODEC_PREFS string or bytes -> format bits in preference order (unknown chars skipped).
#[pyfunction]
fn decode_codec_prefs(prefs: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(s) = prefs.cast::<PyString>() {
        let s = s
            .to_str()
            .map_err(|_| invalid("prefs is not valid Unicode".to_owned()))?;
        Ok(ie::decode_codec_prefs(s.as_bytes()))
    } else {
        Ok(ie::decode_codec_prefs(&bytes_of(prefs, "prefs")?))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register!(
        m,
        classes: [PyFullFrame, PyMiniFrame, PyVideoFrame, PyTrunkFrame],
        functions: [parse, compress_subclass, uncompress_subclass, encode_codec_prefs, decode_codec_prefs]
    )
}
