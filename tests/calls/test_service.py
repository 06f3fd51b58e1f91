"""The plain calls alone: what a plain call's events do to its row, its media and what it says
(bus events published, announcements and digits returned for the router), on a real port with
no engine and no socket."""

from __future__ import annotations

from node.calls.service import CallInfo, CallService
from node.config import NodeConfig
from node.effects import Announce, DigitReceived, DigitSourceGone, Effects
from node.events import Hangup, IncomingCall
from node.iax2 import call as c
from node.iax2.constants import Format
from node.port import IaxPort
from tests.port import make_port
from tests.service_context import recording_context


class Setup:
    def __init__(self) -> None:
        self.rec = recording_context(NodeConfig(), lambda: 50.0)
        self.published = self.rec.published
        self.port: IaxPort = make_port(self.rec.ctx)
        self.calls = CallService(self.rec.ctx, self.port)
        #: What every event returned, in order.
        self.effects: list[Effects] = []

    def events(self, *events: c.CallEvent) -> None:
        for event in events:
            self.effects.append(self.calls.on_call_event(event, 50.0))

    @property
    def changes(self) -> int:
        return sum(fx.changed for fx in self.effects)

    @property
    def routed(self) -> list[object]:
        return [event for fx in self.effects for event in fx.events]


def incoming(callno: int, number: str) -> c.CallIncoming:
    return c.CallIncoming(
        callno, number, "", "2000", "radio", int(Format.ULAW), authenticated=False
    )


def test_a_plain_call_is_shown_announced_and_ended() -> None:
    s = Setup()
    s.events(incoming(4, "5550100"))
    assert s.calls.calls[4] == CallInfo(4, "inbound", "5550100", ("", 0), 50.0, codec="ulaw")
    assert s.published == [IncomingCall(from_="5550100")]
    assert s.routed == [Announce("incoming_call", peer="5550100")]
    s.events(c.CallHungUp(4, "bye", 16, by_peer=True))
    assert s.calls.calls == {}
    assert s.published[-1] == Hangup(reason="hung up by peer: bye")
    # Its digit source goes (a later call on the same number starts clean), then the
    # announcement.
    assert s.routed[1:] == [DigitSourceGone("call 4"), Announce("hangup")]
    assert s.changes == 2


def test_digits_of_a_plain_call_are_commands_of_unknown_calls_dropped() -> None:
    s = Setup()
    s.events(incoming(4, "5550100"))
    s.events(c.DtmfReceived(4, "*", 0), c.DtmfReceived(77, "1", 0))
    assert s.routed[1:] == [DigitReceived("call 4", 4, "*")]


def test_a_plain_calls_vox_shows_in_its_row_once_per_edge() -> None:
    s = Setup()
    s.events(incoming(4, "5550100"))
    assert s.calls.rx_keyed(4, True, 51.0).changed
    assert not s.calls.rx_keyed(4, True, 51.5).changed  # no edge: nothing changed
    assert not s.calls.rx_keyed(9, True, 51.0).changed  # not a plain call
    assert s.calls.calls[4].keyed
    assert s.calls.snapshot(60.0)[0]["keyed"] is True
