"""The engine's EchoLink ports on real loopback UDP: control and text reach Python as
`EchoLinkReceived` records through the drain, audio never does, and `echolink_send` leaves from
the right port."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from node._core import EchoLinkReceived, Engine, EngineError

#: A loopback address of its own, away from the 127.0.0.2/.3 the SvxLink tests use.
STATION = "127.0.0.41"
PEER = "127.0.0.42"


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine("127.0.0.1:0")
    yield e
    e.stop()


def wait_records(engine: Engine, n: int) -> list[EchoLinkReceived]:
    got: list[EchoLinkReceived] = []
    deadline = time.monotonic() + 5
    while len(got) < n and time.monotonic() < deadline:
        got += [e for e in engine.drain_events() if isinstance(e, EchoLinkReceived)]
        time.sleep(0.005)
    return got


def test_control_and_text_are_drained_as_records_and_audio_is_not(engine: Engine) -> None:
    (ip, audio_port), (_, control_port) = engine.echolink_open(STATION, 0, 0)
    assert ip == STATION
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind((PEER, 0))
    source = (PEER, peer.getsockname()[1])
    try:
        peer.sendto(b"\xc0\xc9\x00\x01\x00\x00\x00\x00", (STATION, control_port))
        peer.sendto(b"\xc0\x03\x00\x00" + bytes(8) + b"\xd0" * 132, (STATION, audio_port))
        peer.sendto(b"oNDATA\rN0CALL>hi\r\n\x00", (STATION, audio_port))
        got = wait_records(engine, 2)
    finally:
        peer.close()
    assert sorted(got, key=lambda r: r.kind) == [
        EchoLinkReceived("control", b"\xc0\xc9\x00\x01\x00\x00\x00\x00", source),
        EchoLinkReceived("text", b"oNDATA\rN0CALL>hi\r\n\x00", source),
    ]
    c = engine.echolink_counters()
    assert (c["audio_in"], c["audio_unrouted"], c["text_in"], c["control_in"]) == (1, 1, 1, 1)


def test_sends_leave_from_our_port_of_their_kind(engine: Engine) -> None:
    audio, control = engine.echolink_open(STATION, 0, 0)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind((PEER, 0))
    peer.settimeout(2)
    try:
        port = peer.getsockname()[1]
        engine.echolink_send("control", b"\xe1\xcb\x00\x03", PEER, port)
        assert peer.recvfrom(64) == (b"\xe1\xcb\x00\x03", control)
        engine.echolink_send("text", b"oNDATA\rhi\x00", PEER, port)
        assert peer.recvfrom(64) == (b"oNDATA\rhi\x00", audio)
    finally:
        peer.close()
    with pytest.raises(ValueError, match="accepted: control, text"):
        engine.echolink_send("audio", b"x", PEER, 1)


def test_the_protocol_ports_by_default_and_close(engine: Engine) -> None:
    try:
        addrs = engine.echolink_open(STATION)
    except EngineError as e:  # another run holds them on this host
        pytest.skip(str(e))
    assert addrs == ((STATION, 5198), (STATION, 5199))
    engine.echolink_close()
    with pytest.raises(EngineError, match="not open"):
        engine.echolink_send("control", b"x", PEER)
