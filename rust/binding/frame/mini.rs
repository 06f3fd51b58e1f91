//! `MiniFrame`: the voice frame of an established call.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::args::{frame_err, BytesArg, IntArg, MAX_CALLNO};
use crate::frame::MiniFrame;

/// A mini voice frame (`MiniFrame(scall, ts16, payload)`).
#[pyclass(module = "node._core", name = "MiniFrame", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyMiniFrame {
    pub(super) inner: MiniFrame,
}

frame_methods! {
    fields { scall: u16, ts16: u16 }
    bytes { payload }
    impl PyMiniFrame {
        #[new]
        fn new(scall: IntArg, ts16: IntArg, payload: BytesArg) -> PyResult<Self> {
            let inner = MiniFrame::new(
                scall.check("mini frame scall", 1, MAX_CALLNO)?,
                ts16.check("ts16", 0, 0xFFFF)?,
                payload.0,
            )
            .map_err(frame_err)?;
            Ok(PyMiniFrame { inner })
        }

        fn __repr__(&self) -> String {
            let m = &self.inner;
            format!(
                "MiniFrame(scall={}, ts16={}, payload=<{} bytes>)",
                m.scall,
                m.ts16,
                m.payload.len()
            )
        }
    }
}
