//! `FullFrame`: the one frame class with setters (the call layer fills in call numbers,
//! timestamps and sequence numbers before sending).

use std::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::args::{frame_err, invalid, BoolArg, BytesArg, IntArg, MAX_CALLNO};
use super::ies::{ies_from_py, value_to_py, write_ie_repr};
use crate::frame::{
    self as wire, control_subclass_name, frame_type, frame_type_name, iax_subclass_name, FullFrame,
};
use crate::ie::{self, Ie};

fn kind_repr(f: &FullFrame) -> String {
    let sub = f.subclass();
    let name = frame_type_name(f.ftype).map_or_else(|| format!("type {}", f.ftype), str::to_owned);
    let sub_name = match f.ftype {
        frame_type::IAX => iax_subclass_name(sub).map(str::to_owned),
        frame_type::CONTROL => control_subclass_name(sub).map(str::to_owned),
        frame_type::VOICE | frame_type::VIDEO | frame_type::IMAGE => u64::try_from(sub)
            .ok()
            .and_then(ie::format::format_name)
            .map(str::to_owned),
        frame_type::DTMF | frame_type::DTMF_BEGIN => u8::try_from(sub)
            .ok()
            .filter(u8::is_ascii_graphic)
            .map(|c| format!("{:?}", char::from(c))),
        _ => None,
    };
    let mut s = format!("{name} {}", sub_name.unwrap_or_else(|| sub.to_string()));
    if f.video_marker() {
        s.push_str("+M");
    }
    if wire::compress_subclass(sub).ok() != Some(f.csub & !if f.video_marker() { 0x40 } else { 0 })
    {
        let _ = write!(s, " (csub {:#04x})", f.csub);
    }
    s
}

/// A full frame (`FullFrame(ftype, subclass, *, scall=0, ...)`).
#[pyclass(module = "node._core", name = "FullFrame", eq)]
#[derive(Clone, PartialEq)]
pub struct PyFullFrame {
    pub(super) inner: FullFrame,
}

/// Wraps a Rust full frame (parsed by the engine thread) as a Python `FullFrame`.
pub fn full_frame_to_py(py: Python<'_>, frame: FullFrame) -> PyResult<Bound<'_, PyFullFrame>> {
    Bound::new(py, PyFullFrame { inner: frame })
}

frame_methods! {
    fields { ftype: u8, csub: u8, retrans: bool }
    computed { subclass: i64, video_marker: bool }
    bytes { payload }
    settable {
        scall / set_scall: u16 = MAX_CALLNO,
        dcall / set_dcall: u16 = MAX_CALLNO,
        ts / set_ts: u32 = u32::MAX.into(),
        oseq / set_oseq: u8 = 0xFF,
        iseq / set_iseq: u8 = 0xFF,
    }
    impl PyFullFrame {
        #[new]
        #[pyo3(signature = (
            ftype, subclass, *, scall = IntArg(0), dcall = IntArg(0), ts = IntArg(0),
            oseq = IntArg(0), iseq = IntArg(0), retrans = BoolArg(false), ies = None,
            payload = BytesArg(Vec::new())
        ), text_signature = "(ftype, subclass, *, scall=0, dcall=0, ts=0, oseq=0, iseq=0, retrans=False, ies=None, payload=b'')")]
        #[allow(clippy::too_many_arguments)]
        fn new(
            ftype: IntArg,
            subclass: IntArg,
            scall: IntArg,
            dcall: IntArg,
            ts: IntArg,
            oseq: IntArg,
            iseq: IntArg,
            retrans: BoolArg,
            ies: Option<&Bound<'_, PyAny>>,
            payload: BytesArg,
        ) -> PyResult<Self> {
            let inner =
                FullFrame::new(ftype.check("ftype", 0, 0xFF)?, subclass.0).map_err(frame_err)?;
            // The setters' checks, in the order of the signature.
            let mut f = PyFullFrame { inner };
            f.set_scall(scall)?;
            f.set_dcall(dcall)?;
            f.set_ts(ts)?;
            f.set_oseq(oseq)?;
            f.set_iseq(iseq)?;
            f.set_retrans(retrans);
            if let Some(ies) = ies.filter(|o| !o.is_none()) {
                f.inner.ies = ies_from_py(ies)?;
            }
            f.set_payload(payload)?;
            if !f.inner.is_iax() && !f.inner.ies.is_empty() {
                return Err(invalid("only IAX (type 6) frames carry IEs".to_owned()));
            }
            Ok(f)
        }

        #[setter]
        fn set_retrans(&mut self, v: BoolArg) {
            self.inner.retrans = v.0;
        }

        #[setter]
        fn set_payload(&mut self, v: BytesArg) -> PyResult<()> {
            if self.inner.is_iax() && !v.0.is_empty() {
                return Err(invalid("IAX frames carry IEs, not a payload".to_owned()));
            }
            self.inner.payload = v.0;
            Ok(())
        }

        /// Every IE as `(id, raw bytes)`, in wire order.
        #[getter]
        fn ies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
            let ie = |ie: &Ie| (ie.id, PyBytes::new(py, &ie.data));
            PyList::new(py, self.inner.ies.iter().map(ie))
        }

        /// The typed value of the first IE `id`, or None if absent or undecodable.
        fn ie<'py>(&self, py: Python<'py>, id: IntArg) -> PyResult<Option<Bound<'py, PyAny>>> {
            let id: u8 = id.check("IE id", 0, 0xFF)?;
            match self.inner.ie(id).and_then(Ie::value) {
                Some(v) => value_to_py(py, v).map(Some),
                None => Ok(None),
            }
        }

        /// The typed values of every decodable IE `id`, in wire order.
        fn ie_all<'py>(&self, py: Python<'py>, id: IntArg) -> PyResult<Bound<'py, PyList>> {
            let id: u8 = id.check("IE id", 0, 0xFF)?;
            let values = self
                .inner
                .ies
                .iter()
                .filter(|ie| ie.id == id)
                .filter_map(Ie::value)
                .map(|v| value_to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, values)
        }

        /// Whether an IE `id` is present (whatever its body).
        fn has_ie(&self, id: IntArg) -> PyResult<bool> {
            let id: u8 = id.check("IE id", 0, 0xFF)?;
            Ok(self.inner.ie(id).is_some())
        }

        fn __repr__(&self) -> String {
            let f = &self.inner;
            let mut s = format!(
                "FullFrame({}, scall={}, dcall={}, ts={}, oseq={}, iseq={}",
                kind_repr(f),
                f.scall,
                f.dcall,
                f.ts,
                f.oseq,
                f.iseq
            );
            if f.retrans {
                s.push_str(", retrans=True");
            }
            if f.is_iax() {
                s.push_str(", ies=[");
                for (i, ie) in f.ies.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    write_ie_repr(&mut s, ie);
                }
                s.push(']');
            } else {
                let _ = write!(s, ", payload=<{} bytes>", f.payload.len());
            }
            s.push(')');
            s
        }
    }
}
