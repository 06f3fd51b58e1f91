"""The router alone: whose each call event and engine edge is (the owner of its call number on
the port, an inbound caller claimed by the links when it is a node), with recording owners in
place of the plain calls and the links; no engine, no socket."""

from __future__ import annotations

import asyncio
import calendar
import time
from typing import Any

import pytest

from node._core import RxKeyed, SpurtEnded
from node.calls import service as plain
from node.config import NodeConfig
from node.config.station import DtmfConfig
from node.controller import Controller, TimerKind
from node.effects import NOTHING, DigitReceived, Effects
from node.events import Dtmf, EventBus
from node.iax2 import call as c
from node.iax2.constants import Format
from node.links import service as links
from node.secrets import SecretStore


class Owner:
    """Records what the router hands it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_call_event(self, event: c.CallEvent, now: float) -> Effects:
        self.seen.append(("event", type(event).__name__))
        return NOTHING

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> Effects:
        self.seen.append(("rx_keyed", (callno, keyed)))
        return NOTHING

    def spurt(self, callno: int, started: bool, now: float) -> Effects:
        self.seen.append(("spurt", (callno, started)))
        return NOTHING


def router() -> tuple[Controller, Owner, Owner]:
    config = NodeConfig(node_id="2000")
    ctl = Controller(config, EventBus(), SecretStore(config, {}), clock=lambda: 50.0)
    calls, link_calls = Owner(), Owner()
    ctl._owners[plain.OWNER] = calls  # type: ignore[assignment]
    ctl._owners[links.OWNER] = link_calls  # type: ignore[assignment]
    return ctl, calls, link_calls


def incoming(callno: int, number: str, user: str = "radio") -> c.CallIncoming:
    return c.CallIncoming(callno, number, "", "2000", user, int(Format.ULAW), authenticated=False)


def test_a_node_calling_is_the_links_and_so_are_its_calls_events() -> None:
    ctl, calls, link_calls = router()
    ctl._take(Effects(events=(incoming(9, "2001"), c.TextReceived(9, "L 2001", 0))))
    ctl._take(Effects(events=(c.CallAnswered(9),)))
    assert link_calls.seen == [
        ("event", "CallIncoming"),
        ("event", "TextReceived"),
        ("event", "CallAnswered"),
    ]
    assert calls.seen == []
    # A caller that is no node is a plain call; an event of nobody's call goes nowhere.
    ctl._take(Effects(events=(incoming(4, "5550100", "phone"), c.CallAnswered(77))))
    assert calls.seen == [("event", "CallIncoming")]
    assert ctl._port.owner(9) == links.OWNER and ctl._port.owner(4) == plain.OWNER
    # Once a call ended, its number is nobody's.
    ctl._take(Effects(events=(c.CallHungUp(9, "bye", 16, by_peer=True),)))
    assert link_calls.seen[-1] == ("event", "CallHungUp")
    assert ctl._port.owner(9) is None


def test_engine_edges_go_to_the_owner_of_the_call() -> None:
    ctl, calls, link_calls = router()
    ctl._take(Effects(events=(incoming(9, "2001"), incoming(4, "5550100", "phone"))))
    ctl.on_engine_events([RxKeyed(9, True), RxKeyed(4, True), SpurtEnded(9, 0), SpurtEnded(4, 0)])
    assert link_calls.seen[1:] == [("rx_keyed", (9, True)), ("spurt", (9, False))]
    assert calls.seen[1:] == [("rx_keyed", (4, True))]


def test_routed_events_reach_their_consumer_in_order() -> None:
    ctl, _, _ = router()
    typed: list[tuple[str, str]] = []
    ctl._commands.digit = lambda source, call, digit, inband=False: (  # type: ignore[method-assign]
        typed.append((source, digit)) or NOTHING
    )
    ctl._take(Effects(events=(DigitReceived("call 4", 4, "*"), DigitReceived("local", None, "3"))))
    assert typed == [("call 4", "*"), ("local", "3")]


def test_the_deadline_table_names_every_kind_and_arms_nothing_idle() -> None:
    ctl, _, _ = router()
    assert {kind.value for kind in TimerKind} >= {
        "endpoint",
        "registration",
        "links",
        "link health",
        "TX time-out",
        "DTMF inter-digit",
        "IDs",
        "announcements",
        "schedule",
    }
    assert set(ctl._timer_kinds) == set(TimerKind)
    for deadline, _ in ctl._timer_kinds.values():
        assert deadline() is None


def test_the_deadline_table_keeps_to_the_injected_clock_when_the_wall_clock_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Pi's wall clock stepped by NTP, years forward, then back: a DTMF inter-digit time-out
    # stays where the router's (monotonic) clock put it, and fires there, once. (The TX
    # time-out, IDs, registration, links and the scheduler against a running node whose wall
    # clock jumps: tests/test_clock_jump.py.)
    wall = [calendar.timegm((2031, 5, 5, 10, 0, 0, 0, 0, 0))]
    monkeypatch.setattr(time, "time", lambda: wall[0])
    now = [100.0]
    config = NodeConfig(node_id="2000", dtmf=DtmfConfig(enabled=True, inter_digit_timeout_ms=3000))
    bus = EventBus()
    ctl = Controller(config, bus, SecretStore(config, {}), clock=lambda: now[0])
    typed = bus.subscribe()
    inter_digit = ctl._timer_kinds[TimerKind.DTMF][0]

    async def scenario() -> None:
        ctl._commit(Effects(events=(DigitReceived("local", None, "*"),)))
        assert inter_digit() == 103.0
        wall[0] += 1096 * 86400  # three years forward
        now[0] = 102.9
        ctl._on_timer()
        assert inter_digit() == 103.0  # not years early
        wall[0] -= 3287 * 86400  # nine years back
        now[0] = 103.0
        ctl._on_timer()
        assert inter_digit() is None  # not years late
        ctl.close()

    asyncio.run(scenario())
    events = []
    while not typed.queue.empty():
        events.append(typed.queue.get_nowait())
    # The digit once; the sequence it began ended by the time-out (nothing to run).
    assert [e.digit for e in events if isinstance(e, Dtmf)] == ["*"]
