"""The node's IAX2 port: owners of call numbers, and what it logs of refused callers."""

from __future__ import annotations

import logging
import random

import pytest

from node.config import NodeConfig
from node.iax2 import call as c
from node.iax2.call import DialParams
from node.iax2.constants import IE
from node.iax2.endpoint import LOCAL_PEER, EndpointOutput, InboundPolicy, InboundRejected
from node.port import REFUSAL_LOG_INTERVAL, IaxPort
from tests.port import make_port
from tests.service_context import recording_context


def test_refused_calls_are_logged_at_most_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A flood of NEW frames from spoofed sources is refused frame by frame: the log says so
    # once per interval, with the count of the others, not once per datagram.
    clock = [100.0]
    rec = recording_context(NodeConfig(), lambda: clock[0])
    port = make_port(rec.ctx)
    refused = InboundRejected(("192.0.2.1", 4569), "", "", "call token required", 0)
    with caplog.at_level(logging.INFO, logger="node.port"):
        port._take(EndpointOutput(events=tuple([refused] * 1000)))
        clock[0] += REFUSAL_LOG_INTERVAL
        port._take(EndpointOutput(events=(refused,)))
    lines = [r.getMessage() for r in caplog.records if "refused inbound call" in r.getMessage()]
    assert lines == [
        "refused inbound call from 192.0.2.1: call token required",
        "refused inbound call from 192.0.2.1: call token required (999 more refused since the "
        "last report)",
    ]
    # Refusals are the port's own: nothing goes up to an owner.
    assert port.take_events() == []


def test_owners_are_recorded_by_number_and_forgotten_when_released() -> None:
    rec = recording_context(NodeConfig(), lambda: 5.0)
    port = make_port(rec.ctx)
    callno = port.allocate_callno("registration", 5.0)
    assert port.owner(callno) == "registration"
    port.release_callno(callno, 5.0)
    assert port.owner(callno) is None
    port.claim(42, "links")
    assert port.owner(42) == "links"
    port.disown(42)
    assert port.owner(42) is None


class _Sent:
    """The engine transport as the port sees it: records what goes to the socket."""

    def __init__(self) -> None:
        self.frames: list[tuple[object, tuple[str, int]]] = []

    def send(self, frame: object, addr: tuple[str, int]) -> None:
        self.frames.append((frame, addr))

    def leg_jitter_stats(self, callno: int) -> None:
        return None

    def jitter_stats(self) -> list[tuple[int, dict[str, int]]]:
        return []


def _host_port() -> tuple[IaxPort, IaxPort, _Sent, list[int]]:
    port = IaxPort(
        InboundPolicy(auth="off", calltoken="off", numbers=("1000", "1001")),
        "ulaw_only",
        token_key=bytes(32),
        randbelow=random.Random(1).randrange,
        peer_secret=lambda _node: None,
        holds=lambda _number, _user: False,
        clock=lambda: 5.0,
    )
    sent, pending = _Sent(), []
    port.attach(sent)
    port.route_inbound({"1000": 0, "1001": 1}, pending.append)
    return port, port.lane(1), sent, pending


def test_a_local_call_goes_through_the_loopback_to_the_lane_of_the_number_it_calls() -> None:
    first, second, sent, pending = _host_port()
    assert first.hosts("1001") and not first.hosts("2000")
    callno = second.dial("links", 5.0, LOCAL_PEER, DialParams("1000", calling_number="1001"))
    # Nothing for the socket: the NEW waits in the loopback for the host to hand it back.
    assert sent.frames == [] and first.has_loopback()
    # The host hands the frames back until the exchange settles (NEW, ACCEPT, ACK, ...).
    while first.has_loopback():
        for addr, frame in first.take_loopback():
            second.receive(addr, frame, 5.0)
    assert sent.frames == []
    incoming = [e for e in first.take_events() if isinstance(e, c.CallIncoming)]
    assert [(e.called_number, e.calling_number) for e in incoming] == [("1000", "1001")]
    assert set(pending) == {0}, "the first node is told: its events came in the second's input"
    assert incoming[0].callno != callno
    assert not any(isinstance(e, c.CallIncoming) for e in second.take_events())


def test_a_number_the_host_does_not_serve_is_refused_as_chan_iax2_refuses_it() -> None:
    first, _second, sent, _pending = _host_port()
    peer = IaxPort(
        InboundPolicy(auth="off", calltoken="off"),
        "ulaw_only",
        token_key=bytes(32),
        randbelow=random.Random(2).randrange,
        peer_secret=lambda _node: None,
        holds=lambda _number, _user: False,
        clock=lambda: 5.0,
    )
    theirs = _Sent()
    peer.attach(theirs)
    peer.dial("test", 5.0, ("192.0.2.9", 4569), DialParams("2000", calling_number="3000"))
    ((new, _addr),) = theirs.frames
    first.receive(("192.0.2.7", 4569), new, 5.0)  # type: ignore[arg-type]
    ((reject, to),) = sent.frames
    assert to == ("192.0.2.7", 4569)
    assert (reject.ie(IE.CAUSE), reject.ie(IE.CAUSECODE)) == ("No such context/extension", 3)
    assert first.take_events() == []
