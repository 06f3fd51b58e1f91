//! IE values between Python and Rust: typed values in and out, and their part of a repr.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyString};

use super::args::{
    bytes_of, frame_err, invalid, map_tuples, tuple_items, type_name, u64_arg, uint,
};
use crate::ie::{self, ie_kind, ie_name, is_secret, IaxDateTime, Ie, IeKind, IeValue};

fn ie_label(id: u8) -> String {
    ie_name(id).map_or_else(|| format!("IE {id}"), str::to_owned)
}

/// Converts a decoded IE value to its Python form (see the module stub for the mapping).
pub(super) fn value_to_py<'py>(py: Python<'py>, value: IeValue) -> PyResult<Bound<'py, PyAny>> {
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

pub(super) fn ies_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Ie>> {
    map_tuples(obj, ("ies", "(id, value)", "each IE"), |[id, value]| {
        ie_from_py(uint(&id, "IE id", 0xFF)?, &value)
    })
}

pub(super) fn write_ie_repr(out: &mut String, ie: &Ie) {
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
