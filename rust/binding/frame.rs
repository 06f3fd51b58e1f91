//! Python face of the IAX2 wire core (`crate::frame`, `crate::ie`).
//!
//! Parsed frames keep the Rust struct and build Python objects only when an attribute is read,
//! so `parse()` costs one allocation of the wrapper plus the Rust parse. Every invalid input,
//! whether undecodable bytes or a value that cannot be encoded, raises `FrameError` (a
//! `ValueError`); only a non-bytes argument to `parse()` raises `TypeError`.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyList, PyString, PyTuple};

use super::errors::FrameError as PyFrameError;
use crate::frame::{
    self as wire, control_subclass_name, frame_type, frame_type_name, iax_subclass_name, Frame,
    FullFrame, MiniFrame, TrunkEntry, TrunkFrame, VideoFrame,
};
use crate::ie::{self, ie_kind, ie_name, is_secret, IaxDateTime, Ie, IeKind, IeValue};

fn frame_err(e: wire::FrameError) -> PyErr {
    PyFrameError::new_err(e.to_string())
}

fn invalid(msg: String) -> PyErr {
    PyFrameError::new_err(msg)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// An int in `min..=max`. Bools are refused: `True` as a call number is a bug, not a 1.
fn int_in(obj: &Bound<'_, PyAny>, what: &str, min: i64, max: i64) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(invalid(format!(
            "{what} must be an int, not {}",
            type_name(obj)
        )));
    }
    match obj.extract::<i64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(invalid(format!("{what} is out of range {min}..={max}"))),
    }
}

/// An int in `0..=u64::MAX` (FORMAT2 / CAPABILITY2 values).
fn u64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(invalid(format!(
            "{what} must be an int, not {}",
            type_name(obj)
        )));
    }
    obj.extract::<u64>()
        .map_err(|_| invalid(format!("{what} is out of range 0..={}", u64::MAX)))
}

/// Narrowing helper: `int_in` has already checked the range, so the conversion cannot fail;
/// it still goes through `try_from` so that a wrong bound can never wrap silently.
fn narrow<T: TryFrom<i64>>(v: i64, what: &str) -> PyResult<T> {
    T::try_from(v).map_err(|_| invalid(format!("{what} is out of range")))
}

fn bytes_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        Ok(b.as_bytes().to_vec())
    } else if let Ok(b) = obj.cast::<PyByteArray>() {
        Ok(b.to_vec())
    } else {
        Err(invalid(format!(
            "{what} must be bytes, not {}",
            type_name(obj)
        )))
    }
}

/// An int argument whose type and range errors become `FrameError`.
struct IntArg(i64);

impl<'a, 'py> FromPyObject<'a, 'py> for IntArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        int_in(&obj, "value", i64::MIN, i64::MAX).map(IntArg)
    }
}

impl IntArg {
    fn check<T: TryFrom<i64>>(&self, what: &str, min: i64, max: i64) -> PyResult<T> {
        if (min..=max).contains(&self.0) {
            narrow(self.0, what)
        } else {
            Err(invalid(format!("{what} is out of range {min}..={max}")))
        }
    }
}

/// A bytes (or bytearray) argument whose type errors become `FrameError`.
struct BytesArg(Vec<u8>);

impl<'a, 'py> FromPyObject<'a, 'py> for BytesArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        bytes_of(&obj, "payload").map(BytesArg)
    }
}

/// A strict bool argument whose type errors become `FrameError`.
struct BoolArg(bool);

impl<'a, 'py> FromPyObject<'a, 'py> for BoolArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        obj.cast::<PyBool>()
            .map(|b| BoolArg(b.is_true()))
            .map_err(|_| invalid(format!("flag must be a bool, not {}", type_name(&obj))))
    }
}

const MAX_CALLNO: i64 = wire::CALLNO_MASK as i64;

fn ie_label(id: u8) -> String {
    ie_name(id).map_or_else(|| format!("IE {id}"), str::to_owned)
}

/// Converts a decoded IE value to its Python form (see the module stub for the mapping).
fn value_to_py<'py>(py: Python<'py>, value: IeValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        IeValue::Str(s) => PyString::new(py, &s).into_any(),
        IeValue::U8(v) => v.into_pyobject(py)?.into_any(),
        IeValue::U16(v) => v.into_pyobject(py)?.into_any(),
        IeValue::U32(v) => v.into_pyobject(py)?.into_any(),
        IeValue::Versioned { version, value } => (version, value).into_pyobject(py)?.into_any(),
        IeValue::Addr(addr) => (addr.ip().to_string(), addr.port())
            .into_pyobject(py)?
            .into_any(),
        IeValue::DateTime(d) => (d.year, d.month, d.day, d.hour, d.minute, d.second)
            .into_pyobject(py)?
            .into_any(),
        IeValue::Empty => PyBool::new(py, true).to_owned().into_any(),
        IeValue::Raw(d) => PyBytes::new(py, &d).into_any(),
    })
}

/// The items of a tuple of exactly `N` items.
fn tuple_items<'py, const N: usize>(
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<[Bound<'py, PyAny>; N]> {
    obj.cast::<PyTuple>()
        .ok()
        .and_then(|t| <[Bound<'py, PyAny>; N]>::try_from(t.iter().collect::<Vec<_>>()).ok())
        .ok_or_else(|| invalid(format!("{what} must be a tuple of {N} items")))
}

/// An int in `0..=max`, narrowed to the field's type.
fn uint<T: TryFrom<i64>>(obj: &Bound<'_, PyAny>, what: &str, max: i64) -> PyResult<T> {
    narrow(int_in(obj, what, 0, max)?, what)
}

/// Builds IE `id` from a Python value typed by the id's kind; bytes are always taken raw.
fn ie_from_py(id: u8, obj: &Bound<'_, PyAny>) -> PyResult<Ie> {
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
        return Ie::new(id, bytes_of(obj, "IE body")?).map_err(frame_err);
    }
    let label = ie_label(id);
    let kind = ie_kind(id);
    let value = match kind {
        IeKind::Str => {
            let s = obj.cast::<PyString>().map_err(|_| {
                invalid(format!(
                    "{label} takes str or bytes, not {}",
                    type_name(obj)
                ))
            })?;
            // Lone surrogates cannot be encoded as UTF-8.
            let s = s
                .to_str()
                .map_err(|_| invalid(format!("{label} is not valid Unicode")))?;
            IeValue::Str(s.to_owned())
        }
        IeKind::U8 => IeValue::U8(uint(obj, &label, 0xFF)?),
        IeKind::U16 => IeValue::U16(uint(obj, &label, 0xFFFF)?),
        IeKind::U32 => IeValue::U32(uint(obj, &label, 0xFFFF_FFFF)?),
        IeKind::Versioned => {
            if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
                IeValue::Versioned {
                    version: 0,
                    value: u64_arg(obj, &label)?,
                }
            } else {
                let [version, value] = tuple_items(obj, &format!("{label} (version, value)"))?;
                IeValue::Versioned {
                    version: uint(&version, &format!("{label} version"), 0xFF)?,
                    value: u64_arg(&value, &label)?,
                }
            }
        }
        IeKind::Addr => {
            let [host, port] = tuple_items(obj, &format!("{label} (host, port)"))?;
            let host = host
                .cast::<PyString>()
                .ok()
                .and_then(|s| s.to_str().ok().map(str::to_owned))
                .ok_or_else(|| invalid(format!("{label} host must be a str")))?;
            let ip: IpAddr = host
                .parse()
                .map_err(|_| invalid(format!("{label} host {host:?} is not an IP address")))?;
            let port = uint(&port, &format!("{label} port"), 0xFFFF)?;
            IeValue::Addr(SocketAddr::new(ip, port))
        }
        IeKind::DateTime => {
            let [year, month, day, hour, minute, second] = tuple_items(
                obj,
                &format!("{label} (year, month, day, hour, minute, second)"),
            )?;
            // Calendar ranges are checked by IaxDateTime::pack; here only the field widths.
            IeValue::DateTime(IaxDateTime {
                year: uint(&year, &label, 0xFFFF)?,
                month: uint(&month, &label, 0xFF)?,
                day: uint(&day, &label, 0xFF)?,
                hour: uint(&hour, &label, 0xFF)?,
                minute: uint(&minute, &label, 0xFF)?,
                second: uint(&second, &label, 0xFF)?,
            })
        }
        IeKind::Empty => {
            if obj.cast::<PyBool>().is_ok_and(|b| b.is_true()) {
                IeValue::Empty
            } else {
                return Err(invalid(format!("{label} takes True or bytes")));
            }
        }
        IeKind::Raw => {
            return Err(invalid(format!(
                "{label} takes bytes, not {}",
                type_name(obj)
            )))
        }
    };
    Ie::from_value(id, &value).map_err(frame_err)
}

fn ies_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Ie>> {
    let iter = obj.try_iter().map_err(|_| {
        invalid(format!(
            "ies must be a list of (id, value), not {}",
            type_name(obj)
        ))
    })?;
    let mut ies = Vec::new();
    for item in iter {
        let item = item?;
        let [id, value] = tuple_items(&item, "each IE (id, value)")?;
        let id: u8 = uint(&id, "IE id", 0xFF)?;
        ies.push(ie_from_py(id, &value)?);
    }
    Ok(ies)
}

fn write_ie_repr(out: &mut String, ie: &Ie) {
    let label = ie_label(ie.id);
    if is_secret(ie.id) {
        if ie.data.is_empty() {
            let _ = write!(out, "{label}=\"\"");
        } else {
            let _ = write!(out, "{label}=<redacted>");
        }
        return;
    }
    let _ = match ie.value() {
        None => write!(out, "{label}=<undecodable {} bytes>", ie.data.len()),
        Some(IeValue::Str(s)) => write!(out, "{label}={s:?}"),
        Some(IeValue::U8(v)) => write!(out, "{label}={v}"),
        Some(IeValue::U16(v)) => write!(out, "{label}={v}"),
        Some(IeValue::U32(v)) if matches!(ie.id, ie::FORMAT | ie::CAPABILITY) => {
            write!(out, "{label}={v:#x}")
        }
        Some(IeValue::U32(v)) => write!(out, "{label}={v}"),
        Some(IeValue::Versioned { version, value }) => {
            write!(out, "{label}=({version}, {value:#x})")
        }
        Some(IeValue::Addr(a)) => write!(out, "{label}={a}"),
        Some(IeValue::DateTime(d)) => write!(
            out,
            "{label}={:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            d.year, d.month, d.day, d.hour, d.minute, d.second
        ),
        Some(IeValue::Empty) => write!(out, "{label}"),
        Some(IeValue::Raw(d)) => write!(out, "{label}=<{} bytes>", d.len()),
    };
}

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
    inner: FullFrame,
}

#[pymethods]
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
        let mut f =
            FullFrame::new(ftype.check("ftype", 0, 0xFF)?, subclass.0).map_err(frame_err)?;
        f.scall = scall.check("scall", 0, MAX_CALLNO)?;
        f.dcall = dcall.check("dcall", 0, MAX_CALLNO)?;
        f.ts = ts.check("ts", 0, u32::MAX.into())?;
        f.oseq = oseq.check("oseq", 0, 0xFF)?;
        f.iseq = iseq.check("iseq", 0, 0xFF)?;
        f.retrans = retrans.0;
        if let Some(ies) = ies.filter(|o| !o.is_none()) {
            f.ies = ies_from_py(ies)?;
        }
        f.payload = payload.0;
        if f.is_iax() && !f.payload.is_empty() {
            return Err(invalid("IAX frames carry IEs, not a payload".to_owned()));
        }
        if !f.is_iax() && !f.ies.is_empty() {
            return Err(invalid("only IAX (type 6) frames carry IEs".to_owned()));
        }
        Ok(PyFullFrame { inner: f })
    }

    #[getter]
    fn ftype(&self) -> u8 {
        self.inner.ftype
    }

    #[getter]
    fn subclass(&self) -> i64 {
        self.inner.subclass()
    }

    #[getter]
    fn csub(&self) -> u8 {
        self.inner.csub
    }

    #[getter]
    fn video_marker(&self) -> bool {
        self.inner.video_marker()
    }

    #[getter]
    fn scall(&self) -> u16 {
        self.inner.scall
    }

    #[setter]
    fn set_scall(&mut self, v: IntArg) -> PyResult<()> {
        self.inner.scall = v.check("scall", 0, MAX_CALLNO)?;
        Ok(())
    }

    #[getter]
    fn dcall(&self) -> u16 {
        self.inner.dcall
    }

    #[setter]
    fn set_dcall(&mut self, v: IntArg) -> PyResult<()> {
        self.inner.dcall = v.check("dcall", 0, MAX_CALLNO)?;
        Ok(())
    }

    #[getter]
    fn ts(&self) -> u32 {
        self.inner.ts
    }

    #[setter]
    fn set_ts(&mut self, v: IntArg) -> PyResult<()> {
        self.inner.ts = v.check("ts", 0, u32::MAX.into())?;
        Ok(())
    }

    #[getter]
    fn oseq(&self) -> u8 {
        self.inner.oseq
    }

    #[setter]
    fn set_oseq(&mut self, v: IntArg) -> PyResult<()> {
        self.inner.oseq = v.check("oseq", 0, 0xFF)?;
        Ok(())
    }

    #[getter]
    fn iseq(&self) -> u8 {
        self.inner.iseq
    }

    #[setter]
    fn set_iseq(&mut self, v: IntArg) -> PyResult<()> {
        self.inner.iseq = v.check("iseq", 0, 0xFF)?;
        Ok(())
    }

    #[getter]
    fn retrans(&self) -> bool {
        self.inner.retrans
    }

    #[setter]
    fn set_retrans(&mut self, v: BoolArg) {
        self.inner.retrans = v.0;
    }

    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload)
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
        let items = self
            .inner
            .ies
            .iter()
            .map(|ie| (ie.id, PyBytes::new(py, &ie.data)).into_pyobject(py))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
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

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut out = Vec::with_capacity(self.inner.encoded_len());
        self.inner.write_to(&mut out);
        PyBytes::new(py, &out)
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

/// A mini voice frame (`MiniFrame(scall, ts16, payload)`).
#[pyclass(module = "node._core", name = "MiniFrame", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyMiniFrame {
    inner: MiniFrame,
}

#[pymethods]
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

    #[getter]
    fn scall(&self) -> u16 {
        self.inner.scall
    }

    #[getter]
    fn ts16(&self) -> u16 {
        self.inner.ts16
    }

    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload)
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut out = Vec::with_capacity(self.inner.encoded_len());
        self.inner.write_to(&mut out);
        PyBytes::new(py, &out)
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

/// A video mini frame (`VideoFrame(scall, ts15, marker, payload)`).
#[pyclass(module = "node._core", name = "VideoFrame", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyVideoFrame {
    inner: VideoFrame,
}

#[pymethods]
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

    #[getter]
    fn scall(&self) -> u16 {
        self.inner.scall
    }

    #[getter]
    fn ts15(&self) -> u16 {
        self.inner.ts15
    }

    #[getter]
    fn marker(&self) -> bool {
        self.inner.marker
    }

    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload)
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut out = Vec::with_capacity(self.inner.encoded_len());
        self.inner.write_to(&mut out);
        PyBytes::new(py, &out)
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

/// A meta trunk frame (`TrunkFrame(ts, entries, timestamps)`).
#[pyclass(module = "node._core", name = "TrunkFrame", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyTrunkFrame {
    inner: TrunkFrame,
}

#[pymethods]
impl PyTrunkFrame {
    #[new]
    fn new(ts: IntArg, entries: &Bound<'_, PyAny>, timestamps: BoolArg) -> PyResult<Self> {
        let iter = entries.try_iter().map_err(|_| {
            invalid(format!(
                "entries must be a list of (callno, ts16, payload), not {}",
                type_name(entries)
            ))
        })?;
        let mut parsed = Vec::new();
        for item in iter {
            let item = item?;
            let [callno, ts16, payload] =
                tuple_items(&item, "each trunk entry (callno, ts16, payload)")?;
            let callno = uint(&callno, "trunk entry callno", 0xFFFF)?;
            let ts16 = if ts16.is_none() {
                None
            } else {
                Some(uint(&ts16, "trunk entry ts16", 0xFFFF)?)
            };
            let payload = bytes_of(&payload, "trunk entry payload")?;
            parsed.push(TrunkEntry {
                callno,
                ts16,
                payload,
            });
        }
        let inner = TrunkFrame::new(ts.check("ts", 0, u32::MAX.into())?, timestamps.0, parsed)
            .map_err(frame_err)?;
        Ok(PyTrunkFrame { inner })
    }

    #[getter]
    fn ts(&self) -> u32 {
        self.inner.ts
    }

    #[getter]
    fn timestamps(&self) -> bool {
        self.inner.timestamps
    }

    /// `(callno, ts16 or None, payload)` per entry, in wire order.
    #[getter]
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .inner
            .entries
            .iter()
            .map(|e| (e.callno, e.ts16, PyBytes::new(py, &e.payload)).into_pyobject(py))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The entries as per-call mini frames (call number 0 skipped; see the Rust docs).
    fn minis(&self, py: Python<'_>) -> PyResult<Vec<Py<PyMiniFrame>>> {
        self.inner
            .minis()
            .map(|m| Py::new(py, PyMiniFrame { inner: m }))
            .collect()
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut out = Vec::with_capacity(self.inner.encoded_len());
        self.inner.write_to(&mut out);
        PyBytes::new(py, &out)
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

/// Wraps a Rust full frame (parsed by the engine thread) as a Python `FullFrame`.
pub fn full_frame_to_py(py: Python<'_>, frame: FullFrame) -> PyResult<Bound<'_, PyFullFrame>> {
    Bound::new(py, PyFullFrame { inner: frame })
}

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
    m.add_class::<PyFullFrame>()?;
    m.add_class::<PyMiniFrame>()?;
    m.add_class::<PyVideoFrame>()?;
    m.add_class::<PyTrunkFrame>()?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(compress_subclass, m)?)?;
    m.add_function(wrap_pyfunction!(uncompress_subclass, m)?)?;
    m.add_function(wrap_pyfunction!(encode_codec_prefs, m)?)?;
    m.add_function(wrap_pyfunction!(decode_codec_prefs, m)?)?;
    Ok(())
}
