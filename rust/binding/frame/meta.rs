//! The meta frames: `VideoFrame` (recognised so it can be dropped) and `TrunkFrame`.

use std::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::args::{bytes_of, frame_err, map_tuples, uint, BoolArg, BytesArg, IntArg, MAX_CALLNO};
use super::mini::PyMiniFrame;
use crate::frame::{TrunkEntry, TrunkFrame, VideoFrame};

/// A video mini frame (`VideoFrame(scall, ts15, marker, payload)`).
#[pyclass(module = "node._core", name = "VideoFrame", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyVideoFrame {
    pub(super) inner: VideoFrame,
}

frame_methods! {
    fields { scall: u16, ts15: u16, marker: bool }
    bytes { payload }
    impl PyVideoFrame {
        #[new]
        fn new(scall: IntArg, ts15: IntArg, marker: BoolArg, payload: BytesArg) -> PyResult<Self> {
            let inner = VideoFrame::new(
                scall.check("video frame scall", 0, MAX_CALLNO)?,
                marker.0,
                ts15.check("ts15", 0, 0x7FFF)?,
                payload.0,
            )
            .map_err(frame_err)?;
            Ok(PyVideoFrame { inner })
        }

        fn __repr__(&self) -> String {
            let v = &self.inner;
            format!(
                "VideoFrame(scall={}, ts15={}, marker={}, payload=<{} bytes>)",
                v.scall,
                v.ts15,
                if v.marker { "True" } else { "False" },
                v.payload.len()
            )
        }
    }
}

/// A meta trunk frame (`TrunkFrame(ts, entries, timestamps)`).
#[pyclass(module = "node._core", name = "TrunkFrame", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyTrunkFrame {
    pub(super) inner: TrunkFrame,
}

frame_methods! {
    fields { ts: u32, timestamps: bool }
    impl PyTrunkFrame {
        #[new]
        fn new(ts: IntArg, entries: &Bound<'_, PyAny>, timestamps: BoolArg) -> PyResult<Self> {
            let parsed = map_tuples(
                entries,
                ("entries", "(callno, ts16, payload)", "each trunk entry"),
                |[callno, ts16, payload]| {
                    Ok(TrunkEntry {
                        callno: uint(&callno, "trunk entry callno", 0xFFFF)?,
                        ts16: if ts16.is_none() {
                            None
                        } else {
                            Some(uint(&ts16, "trunk entry ts16", 0xFFFF)?)
                        },
                        payload: bytes_of(&payload, "trunk entry payload")?,
                    })
                },
            )?;
            let inner = TrunkFrame::new(ts.check("ts", 0, u32::MAX.into())?, timestamps.0, parsed)
                .map_err(frame_err)?;
            Ok(PyTrunkFrame { inner })
        }

        /// `(callno, ts16 or None, payload)` per entry, in wire order.
        #[getter]
        fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
            let entry = |e: &TrunkEntry| (e.callno, e.ts16, PyBytes::new(py, &e.payload));
            PyList::new(py, self.inner.entries.iter().map(entry))
        }

        /// The entries as per-call mini frames (call number 0 skipped; see the Rust docs).
        fn minis(&self, py: Python<'_>) -> PyResult<Vec<Py<PyMiniFrame>>> {
            self.inner
                .minis()
                .map(|m| Py::new(py, PyMiniFrame { inner: m }))
                .collect()
        }

        fn __repr__(&self) -> String {
            let t = &self.inner;
            let mut s = format!(
                "TrunkFrame(ts={}, timestamps={}, entries=[",
                t.ts,
                if t.timestamps { "True" } else { "False" }
            );
            for (i, e) in t.entries.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                let ts16 = e.ts16.map_or_else(|| "None".to_owned(), |v| v.to_string());
                let _ = write!(s, "({}, {ts16}, <{} bytes>)", e.callno, e.payload.len());
            }
            s.push_str("])");
            s
        }
    }
}
