//! One file maps every Rust error to its Python exception.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _core,
    FrameError,
    PyValueError,
    "A datagram or frame that is not valid IAX2, or a value that cannot be encoded."
);
create_exception!(
    _core,
    CodecError,
    PyValueError,
    "Audio that a codec or resampler cannot take, such as 16-bit PCM with an odd byte count."
);
create_exception!(
    _core,
    MixerError,
    PyValueError,
    "A conference tick given the wrong number of frames or a frame of the wrong size."
);
create_exception!(
    _core,
    DeviceError,
    PyValueError,
    "A sound card rate the node cannot convert, a gain out of range, or an odd-sized block."
);
create_exception!(
    _core,
    ToneError,
    PyValueError,
    "A tone, CW or DTMF parameter out of range, or a rate a tone kernel does not run at."
);
create_exception!(
    _core,
    EngineError,
    PyOSError,
    "The engine thread or its socket failed (bind, send, or use after close)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FrameError", py.get_type::<FrameError>())?;
    m.add("EngineError", py.get_type::<EngineError>())?;
    m.add("CodecError", py.get_type::<CodecError>())?;
    m.add("MixerError", py.get_type::<MixerError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("ToneError", py.get_type::<ToneError>())?;
    Ok(())
}

/// Each Rust error becomes its Python exception, with the Rust error's message.
macro_rules! to_python {
    ($($rust:ty => $py:ident,)*) => {
        $(
            impl From<$rust> for PyErr {
                fn from(e: $rust) -> PyErr {
                    $py::new_err(e.to_string())
                }
            }
        )*
    };
}

to_python! {
    crate::codec::CodecError => CodecError,
    crate::gsm::GsmError => CodecError,
    crate::resample::ResampleError => CodecError,
    crate::ratio::RatioError => CodecError,
    crate::mixer::MixerError => MixerError,
    crate::device::DeviceError => DeviceError,
    crate::tone::ToneError => ToneError,
    crate::dtmf::DtmfError => ToneError,
}
