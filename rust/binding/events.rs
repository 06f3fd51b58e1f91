//! `node._core`'s engine events: what `Engine.drain_events()` returns, one frozen class per
//! kind, all subclasses of the frozen `EngineEvent`.
//!
//! An event costs about what the tuple it replaced did: one object holding its fields as Python
//! objects, made once as it is drained (the payload's `bytes` included). The fields are read-only
//! struct members, which Python reads directly, without a getter call. Each class has a constructor
//! taking its fields in order (tests build events by hand; its argument types check the values
//! as the engine's types would), `__match_args__`, `__eq__` (same class and equal fields; no
//! `__hash__`) and a `__repr__` that reads like the constructor call.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use pyo3::{intern, BoundObject, PyClassInitializer};

use super::usrp::meta_dict;
use crate::engine::EngineEvent;
use crate::jitter::ControlKind;
use crate::media::MediaEvent;
use crate::player::PlayerEvent;
use crate::usrp::UsrpEvent;

/// IAX2 CONTROL subclasses and frame types the engine keeps in order with the audio.
pub(super) const CONTROL_HANGUP: i64 = 1;
pub(super) const CONTROL_RADIO_KEY: i64 = 12;
pub(super) const CONTROL_RADIO_UNKEY: i64 = 13;
const FRAME_CNG: i64 = 10;

/// A field's value as the Python object the event keeps.
fn obj<'py, T>(py: Python<'py>, value: T) -> PyResult<Py<PyAny>>
where
    T: IntoPyObject<'py>,
    T::Error: Into<PyErr>,
{
    let bound = value.into_pyobject(py).map_err(Into::into)?.into_bound();
    Ok(bound.into_any().unbind())
}

/// The base class of every engine event (never made itself).
#[pyclass(frozen, subclass, name = "EngineEvent", module = "node._core")]
pub struct PyEngineEvent;

/// One event class: its struct (every field a read-only member), `create` (the Python object,
/// with its base) and the constructor, `__match_args__`, `__eq__` and `__repr__`. Each field is
/// given with the Rust type its value is made from.
macro_rules! engine_event {
    ($(#[$doc:meta])* $class:ident { $($field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[pyclass(frozen, extends = PyEngineEvent, module = "node._core")]
        pub struct $class {
            $(#[pyo3(get)] $field: Py<PyAny>,)*
        }

        impl $class {
            #[allow(unused_variables)]
            fn init(py: Python<'_>, $($field: $ty),*) -> PyResult<PyClassInitializer<Self>> {
                let event = $class { $($field: obj(py, $field)?,)* };
                Ok(PyClassInitializer::from(PyEngineEvent).add_subclass(event))
            }

            fn create(py: Python<'_>, $($field: $ty),*) -> PyResult<Bound<'_, PyAny>> {
                Ok(Bound::new(py, Self::init(py, $($field),*)?)?.into_any())
            }
        }

        #[pymethods]
        impl $class {
            #[new]
            fn new(py: Python<'_>, $($field: $ty),*) -> PyResult<PyClassInitializer<Self>> {
                Self::init(py, $($field),*)
            }

            #[classattr]
            fn __match_args__(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
                let names: &[&str] = &[$(stringify!($field)),*];
                PyTuple::new(py, names)
            }

            #[allow(unused_variables)]
            fn __eq__(&self, other: PyRef<'_, Self>, py: Python<'_>) -> PyResult<bool> {
                Ok(true $(&& self.$field.bind(py).eq(other.$field.bind(py))?)*)
            }

            #[allow(unused_mut, unused_variables)]
            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let mut fields: Vec<String> = Vec::new();
                $(fields.push(format!(
                    "{}={}",
                    stringify!($field),
                    self.$field.bind(py).repr()?
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
    FullVoiceNeeded {
        callno: u16,
        format: u64,
        ts: u32,
        payload: Py<PyBytes>,
        spurt_start: bool,
    }
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
    ControlPlayed {
        callno: u16,
        kind: Py<PyString>,
        value: Option<i64>,
        ts: u32,
        payload: Py<PyBytes>,
    }
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
    CommandFailed { message: Py<PyString> }
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
    /// "repeater_id", "slot" and "color_code".
    UsrpMetaReceived { meta: Py<PyDict> }
}

engine_event! {
    /// The USRP peer went quiet mid-transmission (`heard` False), or was heard again.
    UsrpPeerChanged { heard: bool }
}

engine_event! {
    /// `event` of station `station` (a further node's conference, radio or USRP radio): the
    /// first station's events come unwrapped, as a one-node engine's always did.
    StationEvent { station: usize, event: Py<PyAny> }
}

engine_event! {
    /// A datagram from an EchoLink station that is not audio: `kind` "control" (the control
    /// port: RTCP SDES, BYE, RR) or "text" (the audio port: chat, station info), its bytes and
    /// its `source` (ip, port).
    EchoLinkReceived {
        kind: Py<PyString>,
        data: Py<PyBytes>,
        source: (String, u16),
    }
}

/// A control kind as Python names it: ("control", subclass), ("dtmf", digit), ("text", 0),
/// ("cng", 10).
fn control_kind_to_py(py: Python<'_>, kind: ControlKind) -> (Py<PyString>, i64) {
    let (name, value) = match kind {
        ControlKind::Key => (intern!(py, "control"), CONTROL_RADIO_KEY),
        ControlKind::Unkey => (intern!(py, "control"), CONTROL_RADIO_UNKEY),
        ControlKind::Hangup => (intern!(py, "control"), CONTROL_HANGUP),
        ControlKind::Cng => (intern!(py, "cng"), FRAME_CNG),
        ControlKind::Dtmf(d) => (intern!(py, "dtmf"), i64::from(d)),
        ControlKind::Text => (intern!(py, "text"), 0),
        ControlKind::Other { subclass, .. } => (intern!(py, "control"), i64::from(subclass)),
    };
    (name.clone().unbind(), value)
}

/// One drained event as its Python object.
pub(super) fn event_to_py(py: Python<'_>, event: EngineEvent) -> PyResult<Bound<'_, PyAny>> {
    match event {
        EngineEvent::Media(m) => media_event_to_py(py, m),
        EngineEvent::Vox(open) => VoxChanged::create(py, open),
        EngineEvent::CommandFailed(message) => {
            CommandFailed::create(py, PyString::new(py, &message).unbind())
        }
        EngineEvent::TunnelChanged => TunnelChanged::create(py),
        EngineEvent::Usrp(UsrpEvent::Carrier(on)) => UsrpCarrierChanged::create(py, on),
        EngineEvent::Usrp(UsrpEvent::Dtmf(digit)) => UsrpDtmfReceived::create(py, digit),
        EngineEvent::Usrp(UsrpEvent::Meta(m)) => {
            UsrpMetaReceived::create(py, meta_dict(py, &m)?.unbind())
        }
        EngineEvent::Usrp(UsrpEvent::Peer(heard)) => UsrpPeerChanged::create(py, heard),
        EngineEvent::Station(station, inner) => {
            let inner = event_to_py(py, *inner)?.unbind();
            StationEvent::create(py, station, inner)
        }
        EngineEvent::EchoLink(d) => EchoLinkReceived::create(
            py,
            PyString::intern(py, d.kind.name()).unbind(),
            PyBytes::new(py, &d.data).unbind(),
            (d.from.ip().to_string(), d.from.port()),
        ),
    }
}

fn media_event_to_py(py: Python<'_>, event: MediaEvent) -> PyResult<Bound<'_, PyAny>> {
    let bytes = |payload: Vec<u8>| PyBytes::new(py, &payload).unbind();
    match event {
        MediaEvent::FullVoice {
            callno,
            format,
            ts,
            payload,
            spurt_start,
        } => FullVoiceNeeded::create(py, callno, format, ts, bytes(payload), spurt_start),
        MediaEvent::SpurtEnded { callno, ts } => SpurtEnded::create(py, callno, ts),
        MediaEvent::Control {
            callno,
            kind,
            ts,
            payload,
        } => {
            let (kind, value) = control_kind_to_py(py, kind);
            ControlPlayed::create(py, callno, kind, Some(value), ts, bytes(payload))
        }
        MediaEvent::MiniBeforeFull { callno } => MiniBeforeFull::create(py, callno),
        MediaEvent::RxKey { callno, keyed } => RxKeyed::create(py, callno, keyed),
        MediaEvent::Dtmf { callno, digit } => DtmfDecoded::create(py, callno, digit),
        MediaEvent::Play(PlayerEvent::Started { id }) => PlayStarted::create(py, id),
        MediaEvent::Play(PlayerEvent::Finished { id, completed }) => {
            PlayFinished::create(py, id, completed)
        }
        MediaEvent::Activity { active } => ActivityChanged::create(py, active),
        MediaEvent::LocalTx { on } => LocalTxChanged::create(py, on),
    }
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
        StationEvent,
        EchoLinkReceived,
    ], functions: [])
}
