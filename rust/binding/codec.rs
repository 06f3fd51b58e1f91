//! `node._core` codec functions: bytes in, bytes out.
//!
//! PCM is native-endian 16-bit (the `audioop` width-2 convention). Inputs may be `bytes` (read
//! in place) or any other buffer-protocol object (copied once; for 16-bit buffers such as
//! `array('h')` the items are taken as samples). Outputs are new `bytes`, written in place.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyMemoryView};

use crate::codec::Codec;

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
    with_buffer(obj, "a bytes-like object", f)
}

/// [`with_bytes`] whose `TypeError` names what the caller `expected`.
#[inline(always)]
pub(super) fn with_buffer<T>(
    obj: &Bound<'_, PyAny>,
    expected: &str,
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
        PyTypeError::new_err(format!("expected {expected}, got {name}"))
    })?;
    let copy = view.call_method0("tobytes")?.cast_into::<PyBytes>()?;
    f(copy.as_bytes())
}

/// Which way a codec function converts.
#[derive(Clone, Copy)]
enum Way {
    /// Native-endian 16-bit PCM to wire bytes.
    Encode,
    /// Wire bytes to native-endian 16-bit PCM.
    Decode,
}

/// Bytes-like in, a new `bytes` with the conversion out.
#[inline(always)]
fn transcode<'py>(
    py: Python<'py>,
    codec: Codec,
    way: Way,
    input: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(input, |input| {
        let n = match way {
            Way::Encode => codec.wire_len_for_ne_bytes(input.len())?,
            Way::Decode => codec.ne_bytes_len_for_wire(input.len())?,
        };
        PyBytes::new_with(py, n, |out| {
            match way {
                Way::Encode => codec.encode_ne_bytes_into(input, out)?,
                Way::Decode => codec.decode_to_ne_bytes_into(input, out)?,
            };
            Ok(())
        })
    })
}

/// Decodes every frame of an iterable, one PCM `bytes` each.
fn decode_many<'py>(
    py: Python<'py>,
    codec: Codec,
    frames: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    // A list is the product's call shape; other iterables take the generic path.
    let decoded: Vec<Bound<'py, PyBytes>> = if let Ok(list) = frames.cast::<PyList>() {
        let mut v = Vec::with_capacity(list.len());
        for item in list.iter() {
            v.push(transcode(py, codec, Way::Decode, &item)?);
        }
        v
    } else {
        frames
            .try_iter()?
            .map(|item| transcode(py, codec, Way::Decode, &item?))
            .collect::<PyResult<_>>()?
    };
    PyList::new(py, decoded)
}

/// The codec functions, one a line: `name(argument) -> result type => operation(codec, way)`.
macro_rules! codec_functions {
    ($($(#[$doc:meta])* $name:ident($arg:ident) -> $out:ident => $op:ident($codec:ident $(, $way:ident)?);)*) => {
        $(
            $(#[$doc])*
            #[pyfunction]
            fn $name<'py>(py: Python<'py>, $arg: &Bound<'py, PyAny>) -> PyResult<Bound<'py, $out>> {
                $op(py, Codec::$codec, $(Way::$way,)? $arg)
            }
        )*

        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

codec_functions! {
    /// Encode native-endian 16-bit PCM to G.711 µ-law (as `audioop.lin2ulaw(pcm, 2)`).
    ulaw_encode(pcm) -> PyBytes => transcode(Ulaw, Encode);
    /// Decode G.711 µ-law to native-endian 16-bit PCM (as `audioop.ulaw2lin(data, 2)`).
    ulaw_decode(data) -> PyBytes => transcode(Ulaw, Decode);
    /// Encode native-endian 16-bit PCM to G.711 A-law (as `audioop.lin2alaw(pcm, 2)`).
    alaw_encode(pcm) -> PyBytes => transcode(Alaw, Encode);
    /// Decode G.711 A-law to native-endian 16-bit PCM (as `audioop.alaw2lin(data, 2)`).
    alaw_decode(data) -> PyBytes => transcode(Alaw, Decode);
    /// Decode many µ-law frames in one call; returns one PCM `bytes` per frame.
    ulaw_decode_many(frames) -> PyList => decode_many(Ulaw);
    /// Decode many A-law frames in one call; returns one PCM `bytes` per frame.
    alaw_decode_many(frames) -> PyList => decode_many(Alaw);
    /// Native-endian PCM to slin wire bytes (8 kHz, big-endian).
    slin_to_wire(pcm) -> PyBytes => transcode(Slin, Encode);
    /// slin wire bytes (big-endian) to native-endian PCM.
    slin_from_wire(data) -> PyBytes => transcode(Slin, Decode);
    /// Native-endian PCM to slin16 wire bytes (16 kHz, little-endian).
    slin16_to_wire(pcm) -> PyBytes => transcode(Slin16, Encode);
    /// slin16 wire bytes (little-endian) to native-endian PCM.
    slin16_from_wire(data) -> PyBytes => transcode(Slin16, Decode);
}
