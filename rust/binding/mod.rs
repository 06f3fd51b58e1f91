//! The PyO3 face of the core: the only place that knows about Python.
//!
//! Errors from the Rust modules are mapped to Python exceptions here and nowhere else.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A `register` body: adds the classes, then the functions, to the module `m`.
macro_rules! register {
    ($m:ident, classes: [$($class:ty),* $(,)?], functions: [$($function:ident),* $(,)?]) => {{
        $($m.add_class::<$class>()?;)*
        $($m.add_function(wrap_pyfunction!($function, $m)?)?;)*
        Ok(())
    }};
}

/// A dict of named counters, in the order given.
fn counters<'py>(py: Python<'py>, items: &[(&str, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for &(name, value) in items {
        d.set_item(name, value)?;
    }
    Ok(d)
}

/// [`counters`] of the fields of a stats struct, each under its field's name.
macro_rules! counters_of {
    ($py:expr, $stats:expr; $($field:ident)*) => {{
        let stats = $stats;
        $crate::binding::counters($py, &[$((stringify!($field), stats.$field)),*])
    }};
}

mod codec;
mod device;
mod echolink;
mod engine;
mod errors;
mod events;
mod frame;
mod gsm;
mod loudness;
mod mixer;
mod plc;
mod resampler;
mod tones;
mod usrp;
mod wireguard;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    frame::register(m)?;
    gsm::register(m)?;
    codec::register(m)?;
    engine::register(m)?;
    events::register(m)?;
    mixer::register(m)?;
    loudness::register(m)?;
    plc::register(m)?;
    resampler::register(m)?;
    device::register(m)?;
    tones::register(m)?;
    usrp::register(m)?;
    wireguard::register(m)?;
    Ok(())
}
