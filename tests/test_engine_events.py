"""The engine's events at the binding edge: frozen records, one class per kind, that compare
by value and read like their constructor; a real engine drains them."""

from __future__ import annotations

import time
from typing import Any

import pytest

from node._core import (
    ActivityChanged,
    CommandFailed,
    ControlPlayed,
    DtmfDecoded,
    EchoLinkReceived,
    Engine,
    EngineEvent,
    FullVoiceNeeded,
    LocalTxChanged,
    MiniBeforeFull,
    PlayFinished,
    PlayStarted,
    RxKeyed,
    SpurtEnded,
    TunnelChanged,
    UsrpCarrierChanged,
    UsrpDtmfReceived,
    UsrpMetaReceived,
    UsrpPeerChanged,
    VoxChanged,
    tone_pcm,
)

META = {"callsign": "N0CALL", "source_id": 3112345, "talkgroup": 91}

#: Every event class with its fields' names and a value for each, in constructor order.
SAMPLES: list[tuple[type[EngineEvent], dict[str, Any]]] = [
    (
        FullVoiceNeeded,
        {"callno": 7, "format": 4, "ts": 65530, "payload": b"\xff\x7f", "spurt_start": True},
    ),
    (SpurtEnded, {"callno": 7, "ts": 1200}),
    (ControlPlayed, {"callno": 7, "kind": "control", "value": 12, "ts": 30, "payload": b""}),
    (MiniBeforeFull, {"callno": 7}),
    (RxKeyed, {"callno": 7, "keyed": False}),
    (DtmfDecoded, {"callno": None, "digit": "#"}),
    (PlayStarted, {"id": 3}),
    (PlayFinished, {"id": 3, "completed": False}),
    (ActivityChanged, {"active": True}),
    (LocalTxChanged, {"on": True}),
    (VoxChanged, {"open": False}),
    (CommandFailed, {"message": "no leg 9"}),
    (TunnelChanged, {}),
    (UsrpCarrierChanged, {"on": True}),
    (UsrpDtmfReceived, {"digit": "*"}),
    (UsrpMetaReceived, {"meta": META}),
    (UsrpPeerChanged, {"heard": False}),
    (EchoLinkReceived, {"kind": "text", "data": b"oNDATA\r", "source": ("127.0.0.2", 5198)}),
]
IDS = [cls.__name__ for cls, _ in SAMPLES]


def other(value: Any) -> Any:
    """A different value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, bytes):
        return value + b"x"
    if isinstance(value, str):
        return "0" if value != "0" else "1"
    if isinstance(value, dict):
        return {**value, "slot": 2}
    if isinstance(value, tuple):
        return (value[0], value[1] + 1)
    assert value is None
    return 1


@pytest.mark.parametrize(("cls", "fields"), SAMPLES, ids=IDS)
def test_an_event_holds_its_fields_in_order(cls: type[EngineEvent], fields: dict[str, Any]) -> None:
    event = cls(*fields.values())
    assert isinstance(event, EngineEvent)
    assert cls.__match_args__ == tuple(fields)  # type: ignore[attr-defined]
    assert {name: getattr(event, name) for name in fields} == fields
    assert cls(**fields) == event


@pytest.mark.parametrize(("cls", "fields"), SAMPLES, ids=IDS)
def test_an_event_is_frozen(cls: type[EngineEvent], fields: dict[str, Any]) -> None:
    event = cls(*fields.values())
    for name, value in fields.items():
        with pytest.raises(AttributeError):
            setattr(event, name, other(value))
        with pytest.raises(AttributeError):
            delattr(event, name)
        assert getattr(event, name) == value
    with pytest.raises(AttributeError):
        event.note = "x"  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="unhashable"):
        hash(event)


@pytest.mark.parametrize(("cls", "fields"), SAMPLES, ids=IDS)
def test_events_compare_by_class_and_value(cls: type[EngineEvent], fields: dict[str, Any]) -> None:
    event = cls(*fields.values())
    assert event == cls(*fields.values())
    assert (event != cls(*fields.values())) is False
    for name in fields:
        changed = cls(**{**fields, name: other(fields[name])})
        assert event != changed, name
    assert event != tuple(fields.values())
    assert event != object()


def test_events_of_other_classes_with_the_same_fields_differ() -> None:
    assert LocalTxChanged(True) != UsrpCarrierChanged(True)
    assert PlayStarted(3) != MiniBeforeFull(3)
    assert TunnelChanged() == TunnelChanged()


@pytest.mark.parametrize(("cls", "fields"), SAMPLES, ids=IDS)
def test_the_repr_reads_like_the_constructor(
    cls: type[EngineEvent], fields: dict[str, Any]
) -> None:
    event = cls(*fields.values())
    inner = ", ".join(f"{name}={value!r}" for name, value in fields.items())
    assert repr(event) == f"{cls.__name__}({inner})"
    assert repr(PlayFinished(3, False)) == "PlayFinished(id=3, completed=False)"


def test_events_take_a_match_statement() -> None:
    def describe(event: EngineEvent) -> str:
        match event:
            case FullVoiceNeeded(callno, _, ts, payload, True):
                return f"spurt on {callno} at {ts}, {len(payload)} bytes"
            case PlayFinished(clip, completed=False):
                return f"clip {clip} cut short"
            case DtmfDecoded(None, digit):
                return f"local {digit}"
            case _:
                return "other"

    assert describe(FullVoiceNeeded(7, 4, 160, b"ab", True)) == "spurt on 7 at 160, 2 bytes"
    assert describe(PlayFinished(3, False)) == "clip 3 cut short"
    assert describe(DtmfDecoded(None, "5")) == "local 5"
    assert describe(DtmfDecoded(2, "5")) == "other"


def test_the_constructor_checks_values_as_the_engine_types_them() -> None:
    with pytest.raises(OverflowError):
        SpurtEnded(70000, 0)  # call numbers are 15 bits, sent as u16
    with pytest.raises(OverflowError):
        PlayStarted(-1)
    with pytest.raises(TypeError):
        PlayFinished(1, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FullVoiceNeeded(1, 4, 0, "ab", True)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        DtmfDecoded(None, "12")
    with pytest.raises(TypeError):
        EngineEvent()


def test_the_engine_drains_typed_events() -> None:
    engine = Engine("127.0.0.1:0")
    try:
        engine.remove_leg(9)  # no such leg: the command fails
        engine.play(5, tone_pcm(engine.rate, 1000.0, 100, -20.0), "to_monitor")
        events: list[EngineEvent] = []
        deadline = time.monotonic() + 10
        while not any(isinstance(e, PlayFinished) for e in events):
            assert time.monotonic() < deadline, events
            events += engine.drain_events()
            time.sleep(0.01)
    finally:
        engine.stop()
    assert all(isinstance(e, EngineEvent) for e in events)
    plays = [e for e in events if isinstance(e, (PlayStarted, PlayFinished))]
    assert plays == [PlayStarted(5), PlayFinished(5, True)]
    failed = [e for e in events if isinstance(e, CommandFailed)]
    assert len(failed) == 1 and "9" in failed[0].message
