//! Argument conversion of the frame classes: every type or range error becomes `FrameError`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyTuple};

use super::super::errors::FrameError as PyFrameError;
use crate::frame::FrameError;

pub(super) fn frame_err(e: FrameError) -> PyErr {
    PyFrameError::new_err(e.to_string())
}

pub(super) fn invalid(msg: String) -> PyErr {
    PyFrameError::new_err(msg)
}

pub(super) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// Refuses anything but an int. Bools are refused: `True` as a call number is a bug, not a 1.
fn require_int(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(invalid(format!(
            "{what} must be an int, not {}",
            type_name(obj)
        )));
    }
    Ok(())
}

/// An int in `min..=max`.
fn int_in(obj: &Bound<'_, PyAny>, what: &str, min: i64, max: i64) -> PyResult<i64> {
    require_int(obj, what)?;
    match obj.extract::<i64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(invalid(format!("{what} is out of range {min}..={max}"))),
    }
}

/// An int in `0..=u64::MAX` (FORMAT2 / CAPABILITY2 values).
pub(super) fn u64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    require_int(obj, what)?;
    obj.extract::<u64>()
        .map_err(|_| invalid(format!("{what} is out of range 0..={}", u64::MAX)))
}

/// Narrowing helper: `int_in` has already checked the range, so the conversion cannot fail;
/// it still goes through `try_from` so that a wrong bound can never wrap silently.
fn narrow<T: TryFrom<i64>>(v: i64, what: &str) -> PyResult<T> {
    T::try_from(v).map_err(|_| invalid(format!("{what} is out of range")))
}

/// An int in `0..=max`, narrowed to the field's type.
pub(super) fn uint<T: TryFrom<i64>>(obj: &Bound<'_, PyAny>, what: &str, max: i64) -> PyResult<T> {
    narrow(int_in(obj, what, 0, max)?, what)
}

pub(super) fn bytes_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
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

/// The items of a tuple of exactly `N` items.
pub(super) fn tuple_items<'py, const N: usize>(
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<[Bound<'py, PyAny>; N]> {
    obj.cast::<PyTuple>()
        .ok()
        .and_then(|t| <[Bound<'py, PyAny>; N]>::try_from(t.iter().collect::<Vec<_>>()).ok())
        .ok_or_else(|| invalid(format!("{what} must be a tuple of {N} items")))
}

/// Every item of an iterable of `N`-tuples, converted by `f`. The errors name the argument
/// (`list`), the tuple's fields (`shape`, such as "(id, value)") and one item (`each`).
pub(super) fn map_tuples<'py, const N: usize, T>(
    obj: &Bound<'py, PyAny>,
    (list, shape, each): (&str, &str, &str),
    mut f: impl FnMut([Bound<'py, PyAny>; N]) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    let iter = obj.try_iter().map_err(|_| {
        invalid(format!(
            "{list} must be a list of {shape}, not {}",
            type_name(obj)
        ))
    })?;
    let what = format!("{each} {shape}");
    iter.map(|item| f(tuple_items(&item?, &what)?)).collect()
}

/// An int argument whose type and range errors become `FrameError`.
pub(super) struct IntArg(pub(super) i64);

impl<'a, 'py> FromPyObject<'a, 'py> for IntArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        int_in(&obj, "value", i64::MIN, i64::MAX).map(IntArg)
    }
}

impl IntArg {
    pub(super) fn check<T: TryFrom<i64>>(&self, what: &str, min: i64, max: i64) -> PyResult<T> {
        if (min..=max).contains(&self.0) {
            narrow(self.0, what)
        } else {
            Err(invalid(format!("{what} is out of range {min}..={max}")))
        }
    }
}

/// A bytes (or bytearray) argument whose type errors become `FrameError`.
pub(super) struct BytesArg(pub(super) Vec<u8>);

impl<'a, 'py> FromPyObject<'a, 'py> for BytesArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        bytes_of(&obj, "payload").map(BytesArg)
    }
}

/// A strict bool argument whose type errors become `FrameError`.
pub(super) struct BoolArg(pub(super) bool);

impl<'a, 'py> FromPyObject<'a, 'py> for BoolArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        obj.cast::<PyBool>()
            .map(|b| BoolArg(b.is_true()))
            .map_err(|_| invalid(format!("flag must be a bool, not {}", type_name(&obj))))
    }
}

/// Call numbers are 15 bits.
pub(super) const MAX_CALLNO: i64 = crate::frame::CALLNO_MASK as i64;
