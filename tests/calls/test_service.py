"""The calls service alone: where each endpoint event goes (the links, the commands, the plain
calls) and what a plain call publishes, with fakes for the links, the commands and the
announcements (no engine, no socket)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from node.calls.service import REFUSAL_LOG_INTERVAL, CallInfo, CallService
from node.config import NodeConfig
from node.events import Hangup, IncomingCall
from node.iax2 import call as c
from node.iax2.constants import Format
from node.iax2.endpoint import EndpointOutput, InboundRejected
from tests.service_context import recording_context


class FakeLinks:
    """Node 2001 calls as a link; call 9 is a link call."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def is_link_caller(self, calling_number: str, username: str) -> bool:
        return calling_number == "2001"

    def is_link_call(self, callno: int) -> bool:
        return callno == 9

    def inbound(self, event: c.CallIncoming, now: float) -> None:
        self.seen.append(("inbound", event))

    def on_call_event(self, event: Any, now: float) -> None:
        self.seen.append(("event", event))

    def spurt(self, callno: int, started: bool, now: float) -> None:
        self.seen.append(("spurt", (callno, started)))

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> None:
        self.seen.append(("rx_keyed", (callno, keyed)))


class FakeCommands:
    def __init__(self) -> None:
        self.digits: list[tuple[str, int | None, str]] = []
        self.forgotten: list[str] = []

    def digit(self, source: str, call: int | None, digit: str, *, inband: bool = False) -> None:
        self.digits.append((source, call, digit))

    def forget(self, source: str) -> None:
        self.forgotten.append(source)


class FakeAnnounce:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def event(self, name: str, *, peer: str = "", node: str = "") -> None:
        self.said.append((name, peer))


class Setup:
    def __init__(self) -> None:
        self.rec = recording_context(NodeConfig(), lambda: 50.0)
        self.published = self.rec.published
        self.links, self.commands, self.announce = FakeLinks(), FakeCommands(), FakeAnnounce()
        self.calls = CallService(self.rec.ctx)
        self.calls.wire(self.links, self.commands, self.announce)

    def events(self, *events: Any) -> None:
        self.calls.apply(EndpointOutput(events=events))


def incoming(callno: int, number: str) -> c.CallIncoming:
    return c.CallIncoming(
        callno, number, "", "2000", "radio", int(Format.ULAW), authenticated=False
    )


def test_a_node_calling_is_the_links_and_so_are_its_calls_events() -> None:
    s = Setup()
    s.events(incoming(9, "2001"), c.TextReceived(9, "L 2001", 0), c.CallAnswered(9))
    assert [kind for kind, _ in s.links.seen] == ["inbound", "event", "event"]
    assert s.calls.calls == {} and s.published == []
    # Nothing of the snapshot's plain calls changed; the timer is re-armed once per output.
    assert (s.rec.changes, s.rec.rearms) == (0, 1)


def test_a_plain_call_is_shown_announced_and_ended() -> None:
    s = Setup()
    s.events(incoming(4, "5550100"))
    assert s.calls.calls[4] == CallInfo(4, "inbound", "5550100", ("", 0), 50.0, codec="ulaw")
    assert s.published == [IncomingCall(from_="5550100")]
    assert s.announce.said == [("incoming_call", "5550100")]
    s.events(c.CallHungUp(4, "bye", 16, by_peer=True))
    assert s.calls.calls == {}
    assert s.published[-1] == Hangup(reason="hung up by peer: bye")
    assert s.commands.forgotten == ["call 4"]
    assert s.announce.said[-1] == ("hangup", "")
    assert s.rec.changes == 2


def test_digits_of_an_owned_call_are_commands_others_are_dropped() -> None:
    s = Setup()
    s.events(incoming(4, "5550100"))
    s.events(c.DtmfReceived(4, "*", 0), c.DtmfReceived(9, "3", 0), c.DtmfReceived(77, "1", 0))
    assert s.commands.digits == [("call 4", 4, "*"), ("call 9", 9, "3")]


def test_engine_edges_of_a_link_call_go_to_the_links_a_plain_calls_vox_to_its_row() -> None:
    s = Setup()
    s.events(incoming(4, "5550100"))
    s.calls.rx_keyed(9, True, 51.0)
    s.calls.rx_keyed(4, True, 51.0)
    s.calls.spurt_ended(9, 52.0)
    s.calls.spurt_ended(4, 52.0)
    assert s.links.seen == [("rx_keyed", (9, True)), ("spurt", (9, False))]
    assert s.calls.calls[4].keyed
    assert s.calls.snapshot(60.0)[0]["keyed"] is True


def test_refused_calls_are_logged_at_most_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A flood of NEW frames from spoofed sources is refused frame by frame: the log says so
    # once per interval, with the count of the others, not once per datagram.
    clock = [100.0]
    rec = recording_context(NodeConfig(), lambda: clock[0])
    calls = CallService(rec.ctx)
    refused = InboundRejected(("192.0.2.1", 4569), "", "", "call token required", 0)
    with caplog.at_level(logging.INFO, logger="node.calls.service"):
        calls.apply(EndpointOutput(events=tuple([refused] * 1000)))
        clock[0] += REFUSAL_LOG_INTERVAL
        calls.apply(EndpointOutput(events=(refused,)))
    lines = [r.getMessage() for r in caplog.records if "refused inbound call" in r.getMessage()]
    assert lines == [
        "refused inbound call from 192.0.2.1: call token required",
        "refused inbound call from 192.0.2.1: call token required (999 more refused since the "
        "last report)",
    ]
