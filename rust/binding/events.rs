//! `node._core`'s engine events: what `Engine.drain_events()` returns, one frozen class per
//! kind, all subclasses of the frozen `EngineEvent`.
//!
//! An event is one Python object and nothing more: its fields stay Rust values until read (a
//! payload is moved in as the `Vec` the engine made, and becomes `bytes` when `payload` is
//! read), so draining a batch costs one allocation per event. Each class has a constructor
//! taking its fields in order (tests build events by hand), read-only attributes,
//! `__match_args__`, `__eq__` (same class and equal fields; no `__hash__`) and a `__repr__`
//! that reads like the constructor call.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use pyo3::{BoundObject, PyClassInitializer};

/// How an event's field is kept, read, compared and adopted from a constructor argument.
trait Field: Sized {
    /// The attribute's value.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
    /// Whether two events' values are equal.
    fn same(&self, other: &Self, py: Python<'_>) -> PyResult<bool>;
    /// The value kept from a constructor argument (a mutable object is copied).
    fn adopt(self, _py: Python<'_>) -> PyResult<Self> {
        Ok(self)
    }
}

/// Plain values: converted on each read, compared in Rust.
macro_rules! plain_fields {
    ($($ty:ty),*) => {$(
        impl Field for $ty {
            fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                Ok(self.into_pyobject(py)?.into_bound().into_any())
            }

            fn same(&self, other: &Self, _py: Python<'_>) -> PyResult<bool> {
                Ok(self == other)
            }
        }
    )*};
}

plain_fields!(bool, u16, u32, u64, char, String, Option<u16>, Option<i64>);

/// A payload: the engine's buffer, `bytes` when read.
impl Field for Vec<u8> {
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyBytes::new(py, self).into_any())
    }

    fn same(&self, other: &Self, _py: Python<'_>) -> PyResult<bool> {
        Ok(self == other)
    }
}

/// A string the engine names from a fixed set (interned, so creating one costs a reference).
impl Field for Py<PyString> {
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.bind(py).clone().into_any())
    }

    fn same(&self, other: &Self, py: Python<'_>) -> PyResult<bool> {
        PyAnyMethods::eq(self.bind(py).as_any(), other.bind(py))
    }
}

/// A dict: copied when adopted and when read, so the event stays as it was made.
impl Field for Py<PyDict> {
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.bind(py).copy()?.into_any())
    }

    fn same(&self, other: &Self, py: Python<'_>) -> PyResult<bool> {
        PyAnyMethods::eq(self.bind(py).as_any(), other.bind(py))
    }

    fn adopt(self, py: Python<'_>) -> PyResult<Self> {
        Ok(self.bind(py).copy()?.unbind())
    }
}

/// The base class of every engine event (never made itself).
#[pyclass(frozen, subclass, name = "EngineEvent", module = "node._core")]
pub struct PyEngineEvent;

/// One event class: its struct, `with_base` (its initializer, with the base), and the
/// constructor, attributes, `__eq__`, `__repr__` and `__match_args__`.
macro_rules! engine_event {
    ($(#[$doc:meta])* $class:ident { $($field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[pyclass(frozen, extends = PyEngineEvent, module = "node._core")]
        pub struct $class {
            $($field: $ty,)*
        }

        impl $class {
            fn with_base(self) -> PyClassInitializer<Self> {
                PyClassInitializer::from(PyEngineEvent).add_subclass(self)
            }
        }

        #[pymethods]
        impl $class {
            #[new]
            #[allow(unused_variables)]
            fn new(py: Python<'_>, $($field: $ty),*) -> PyResult<PyClassInitializer<Self>> {
                Ok($class { $($field: Field::adopt($field, py)?,)* }.with_base())
            }

            $(
                #[getter]
                fn $field<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                    self.$field.get(py)
                }
            )*

            #[classattr]
            fn __match_args__(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
                let names: &[&str] = &[$(stringify!($field)),*];
                PyTuple::new(py, names)
            }

            #[allow(unused_variables)]
            fn __eq__(&self, other: PyRef<'_, Self>, py: Python<'_>) -> PyResult<bool> {
                Ok(true $(&& self.$field.same(&other.$field, py)?)*)
            }

            #[allow(unused_mut, unused_variables)]
            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let mut fields: Vec<String> = Vec::new();
                $(fields.push(format!(
                    "{}={}",
                    stringify!($field),
                    self.$field.get(py)?.repr()?
                ));)*
                Ok(format!("{}({})", stringify!($class), fields.join(", ")))
            }
        }
    };
}

engine_event! {
    /// Send this payload as a full VOICE frame on call `callno` (in `format`, at `ts`): the
    /// first frame of a talk spurt towards the leg (`spurt_start`; a legacy link sends
    /// RADIO_KEY before it), or the frame the 16-bit mini timestamp's wrap asks for.
    FullVoiceNeeded { callno: u16, format: u64, ts: u32, payload: Vec<u8>, spurt_start: bool }
}

engine_event! {
    /// The conference went quiet towards call `callno` after a talk spurt (a radio link sends
    /// UNKEY, at `ts`).
    SpurtEnded { callno: u16, ts: u32 }
}

engine_event! {
    /// A control event pushed with `push_control` reached its playout point in call
    /// `callno`'s audio: `kind` "control" (`value` the CONTROL subclass), "dtmf" (`value` the
    /// digit's character code), "text" (`value` 0, `payload` the text) or "cng" (`value` 10).
    ControlPlayed { callno: u16, kind: Py<PyString>, value: Option<i64>, ts: u32, payload: Vec<u8> }
}

engine_event! {
    /// A mini frame arrived on call `callno` before any full voice frame: answer with VNAK.
    MiniBeforeFull { callno: u16 }
}

engine_event! {
    /// Call `callno`'s receiver keyed (`keyed`) or unkeyed, as its leg's keying defines it.
    RxKeyed { callno: u16, keyed: bool }
}

engine_event! {
    /// An in-band DTMF `digit` pressed in call `callno`'s received audio, or the local
    /// radio's (`callno` None); once per press, about 40 ms after the tone began.
    DtmfDecoded { callno: Option<u16>, digit: char }
}

engine_event! {
    /// Clip `id` (given to `Engine.play`) sent its first frame.
    PlayStarted { id: u32 }
}

engine_event! {
    /// Clip `id` sent its last frame (`completed`), or was stopped or refused.
    PlayFinished { id: u32, completed: bool }
}

engine_event! {
    /// Somebody started talking in the conference (`active`), or nobody has for a while.
    ActivityChanged { active: bool }
}

engine_event! {
    /// The local radio started (`on`) or stopped hearing audio from the conference: what its
    /// transmitter has to send.
    LocalTxChanged { on: bool }
}

engine_event! {
    /// VOX on the local receiver's audio opened (`open`) or closed.
    VoxChanged { open: bool }
}

engine_event! {
    /// A command could not be applied (e.g. it names a leg that is gone).
    CommandFailed { message: String }
}

engine_event! {
    /// The WireGuard tunnel changed state (read it with `Engine.tunnel()`).
    TunnelChanged {}
}

engine_event! {
    /// The USRP peer's transmission started (`on`: keyup-1 voice) or ended.
    UsrpCarrierChanged { on: bool }
}

engine_event! {
    /// A DTMF `digit` from the USRP peer.
    UsrpDtmfReceived { digit: char }
}

engine_event! {
    /// The USRP peer's digital caller: `meta` holds "callsign", "source_id", "talkgroup",
    /// "repeater_id", "slot" and "color_code" (a copy on every read).
    UsrpMetaReceived { meta: Py<PyDict> }
}

engine_event! {
    /// The USRP peer went quiet mid-transmission (`heard` False), or was heard again.
    UsrpPeerChanged { heard: bool }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register!(m, classes: [
        PyEngineEvent,
        FullVoiceNeeded,
        SpurtEnded,
        ControlPlayed,
        MiniBeforeFull,
        RxKeyed,
        DtmfDecoded,
        PlayStarted,
        PlayFinished,
        ActivityChanged,
        LocalTxChanged,
        VoxChanged,
        CommandFailed,
        TunnelChanged,
        UsrpCarrierChanged,
        UsrpDtmfReceived,
        UsrpMetaReceived,
        UsrpPeerChanged,
    ], functions: [])
}
