"""Frames answered without call state: POKE -> PONG, and the ACK of that PONG."""

from __future__ import annotations

from node._core import FullFrame, parse
from node.iax2.constants import ControlSubclass, FrameType, IaxSubclass
from node.iax2.stateless import APATHETIC_CALLNO, stateless_reply


def test_poke_gets_pong_echoing_timestamp_from_call_one() -> None:
    poke = FullFrame(
        FrameType.IAX, IaxSubclass.POKE, scall=0x2ABC, dcall=0, ts=987654, oseq=3, iseq=0
    )
    reply = stateless_reply(poke)
    assert reply.handled
    pong = reply.frame
    assert pong is not None
    assert (pong.ftype, pong.subclass) == (FrameType.IAX, IaxSubclass.PONG)
    assert (pong.scall, pong.dcall) == (APATHETIC_CALLNO, 0x2ABC)
    assert pong.ts == 987654
    assert (pong.oseq, pong.iseq) == (0, 4)
    assert not pong.retrans
    # It survives the wire.
    assert parse(pong.to_bytes()) == pong


def test_iseq_wraps() -> None:
    poke = FullFrame(FrameType.IAX, IaxSubclass.POKE, scall=9, ts=1, oseq=255)
    pong = stateless_reply(poke).frame
    assert pong is not None and pong.iseq == 0


def test_ack_to_call_one_is_absorbed() -> None:
    ack = FullFrame(
        FrameType.IAX, IaxSubclass.ACK, scall=9, dcall=APATHETIC_CALLNO, ts=1, oseq=1, iseq=1
    )
    reply = stateless_reply(ack)
    assert reply.handled and reply.frame is None


def test_everything_else_is_left_to_calls() -> None:
    others = [
        FullFrame(FrameType.IAX, IaxSubclass.NEW, scall=5),
        FullFrame(FrameType.IAX, IaxSubclass.POKE, scall=5, dcall=77),  # POKE inside a call
        FullFrame(FrameType.IAX, IaxSubclass.ACK, scall=5, dcall=300),
        FullFrame(FrameType.CONTROL, ControlSubclass.ANSWER, scall=5, dcall=6),
        FullFrame(FrameType.VOICE, 4, scall=5, dcall=6, payload=b"\xff" * 160),
    ]
    for frame in others:
        reply = stateless_reply(frame)
        assert not reply.handled and reply.frame is None
