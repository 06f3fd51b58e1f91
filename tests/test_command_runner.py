"""The controller's DTMF command sources, in process with a real controller (no engine): what
each digit publishes, what runs, and what is refused."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from node.config import (
    Address,
    DnsConfig,
    DtmfConfig,
    LinkConfig,
    NodeConfig,
    RegisterConfig,
    SecretsConfig,
)
from node.controller import Controller
from node.errors import CommandError
from node.events import EventBus, Subscription
from node.links.commands import Command
from node.links.network import LinkMode, LinkNetwork
from node.secrets import SecretStore


def controller(
    *, enabled: bool = True, timeout_ms: int = 3000, permanent: bool = False
) -> Controller:
    config = NodeConfig(
        register=RegisterConfig(peer=Address("127.0.0.1", 9), node_id="2000"),
        # Nothing but loopback: no node-number lookups in DNS.
        dns=DnsConfig(enabled=False),
        secrets=SecretsConfig(source="control"),
        dtmf=DtmfConfig(enabled=enabled, inter_digit_timeout_ms=timeout_ms),
        links={
            "2001": LinkConfig(addr=Address("127.0.0.1", 14569), permanent=permanent),
            "2002": LinkConfig(addr=Address("127.0.0.1", 14570)),
        },
    )
    return Controller(config, EventBus(), SecretStore(config, {}))


def run(scenario: Callable[[Controller, Subscription], Awaitable[None]], **options: Any) -> None:
    async def main() -> None:
        ctl = controller(**options)
        sub = ctl.bus.subscribe()
        try:
            await asyncio.wait_for(scenario(ctl, sub), 10)
        finally:
            ctl.close()

    asyncio.run(main())


def dtmf_events(sub: Subscription) -> list[dict[str, Any]]:
    out = []
    while not sub.queue.empty():
        event = sub.queue.get_nowait()
        if event is not None and event.name == "dtmf":
            out.append(event.to_json())
    return out


async def link_up(ctl: Controller) -> float:
    """Connect node 2001 and bring its link up as call 41; returns the time it came up."""
    await ctl.link("connect", "2001")
    now = ctl.now()
    network(ctl).dialled("2001", 41, ("127.0.0.1", 14569), now)
    network(ctl).call_up(41, "ulaw", now)
    return now


def network(ctl: Controller) -> LinkNetwork:
    """The link machine (read, and fed directly where a test stands in for a peer)."""
    return ctl._links.network


def digit(ctl: Controller, source: str, call: int | None, d: str, *, inband: bool = False) -> None:
    """One digit from `source`, as the router hands it to the commands."""
    ctl._commit(ctl._commands.digit(source, call, d, inband=inband))


async def settle(predicate: Callable[[], bool]) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


def test_disabled_digits_are_events_without_commands() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        for d in "*32001":
            digit(ctl, "call 7", 7, d)
        await asyncio.sleep(0.05)
        assert dtmf_events(sub) == [{"event": "dtmf", "call": 7, "digit": d} for d in "*32001"]
        assert dict(network(ctl).links) == {}

    run(scenario, enabled=False)


def test_a_completed_sequence_runs_through_the_link_command() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        for d in "*32001":
            digit(ctl, "call 7", 7, d)
        events = dtmf_events(sub)
        assert events[-1] == {
            "event": "dtmf",
            "call": 7,
            "digit": "1",
            "command": "*32001 connect 2001",
        }
        assert all("command" not in e for e in events[:-1])
        await settle(lambda: "2001" in network(ctl).links)
        assert network(ctl).links["2001"].direction == "outbound"
        assert ctl.command_stats().total == 1 and ctl.command_stats().last == "*32001"

    run(scenario)


def test_two_sources_never_mix() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        for a, b in zip("*3200", "*7000", strict=True):
            digit(ctl, "call 1", 1, a)
            digit(ctl, "call 2", 2, b)
        digit(ctl, "call 1", 1, "2")
        commands = [e["command"] for e in dtmf_events(sub) if "command" in e]
        assert commands == ["*70 status", "*32002 connect 2002"]

    run(scenario)


def test_the_time_out_completes_a_number_and_a_refusal_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[dict[str, Any]] = []

    async def scenario(ctl: Controller, sub: Subscription) -> None:
        for d in "*3199":
            digit(ctl, "call 3", 3, d)
        while not any("command" in e for e in events):
            await asyncio.sleep(0.01)
            events.extend(dtmf_events(sub))
        await settle(lambda: "refused" in caplog.text)

    with caplog.at_level(logging.WARNING, logger="node.commands.runner"):
        run(scenario, timeout_ms=100)
    # No digit completed it: the time-out's event has an empty digit.
    assert events[-1] == {"event": "dtmf", "call": 3, "digit": "", "command": "*3199 connect 199"}
    assert "DTMF *3199 connect 199 from call 3 refused: node 199 not found" in caplog.text


def test_a_permanent_link_needs_the_permanent_disconnect() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        ctl.start()
        assert network(ctl).links["2001"].permanent
        with pytest.raises(Exception, match="permanent link"):
            await ctl.run_command(Command("disconnect", node="2001"))
        assert "2001" in network(ctl).links
        assert await ctl.run_command(Command("disconnect", node="2001", permanent=True)) == (
            "disconnected node 2001"
        )
        assert "2001" not in network(ctl).links

    run(scenario, permanent=True)


def test_disconnect_all_drops_permanent_links_too_and_status_lists_them() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        ctl.start()
        await ctl.link("monitor", "2002")
        assert await ctl.run_command(Command("status")) == "links: C2001, C2002"
        outcomes = await ctl.dtmf_command("ami", "*76")
        assert outcomes == [(Command("disconnect_all", "*76"), "disconnected 2001, 2002")]
        assert dict(network(ctl).links) == {}
        assert await ctl.run_command(Command("disconnect_all")) == "no links"

    run(scenario, permanent=True)


def test_whole_strings_run_only_when_enabled_or_authorized() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        assert await ctl.dtmf_command("test", "*32001") == [
            (Command("connect", "*32001", node="2001"), "not executed")
        ]
        assert dict(network(ctl).links) == {}
        ((command, result),) = await ctl.dtmf_command("ami", "*32001", authorized=True)
        assert result == "linking node 2001"
        # The end of the string ends a sequence as # does; 0 is the last node named.
        ((command, result),) = await ctl.dtmf_command("ami", "*10", authorized=True)
        assert command == Command("disconnect", "*10", node="2001")
        assert [e.get("command") for e in dtmf_events(sub)][-3:] == [
            None,
            None,
            "*10 disconnect 2001",
        ]

    run(scenario, enabled=False)


def test_a_digit_heard_both_as_a_frame_and_as_tones_counts_once() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        # A phone that sends IAX2 DTMF frames and leaves the tones in its audio: each key
        # press arrives twice, the tones about 100 ms after the frame (or before it).
        for d in "*70":
            digit(ctl, "call 4", 4, d)
            digit(ctl, "call 4", 4, d, inband=True)
        digit(ctl, "local", None, "5", inband=True)
        digit(ctl, "local", None, "5")
        # Repeated digits from one path are all kept.
        for d in "*1*1":
            digit(ctl, "call 5", 5, d, inband=True)
        events = dtmf_events(sub)
        assert [(e["call"], e["digit"]) for e in events] == [
            (4, "*"),
            (4, "7"),
            (4, "0"),
            (None, "5"),
            *((5, d) for d in "*1*1"),
        ]
        assert events[2]["command"] == "*70 status"

    run(scenario)


def test_restore_brings_back_what_disconnect_all_dropped_each_in_its_mode() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        ctl.start()
        await ctl.link("monitor", "2002")
        assert await ctl.run_command(Command("restore")) == "nothing to restore"
        await ctl.run_command(Command("disconnect_all"))
        assert dict(network(ctl).links) == {}
        outcomes = await ctl.dtmf_command("ami", "*74", authorized=True)
        assert outcomes == [(Command("restore", "*74"), "restoring 2001, 2002")]
        assert network(ctl).links["2001"].permanent
        assert network(ctl).links["2001"].mode is LinkMode.TRANSCEIVE
        assert not network(ctl).links["2002"].permanent
        assert network(ctl).links["2002"].mode is LinkMode.MONITOR
        # The list is kept (app_rpt's savednodes): again, and both are linked already.
        result = await ctl.run_command(Command("restore"))
        assert result.startswith("restored none; refused 2001 (node 2001 is already linked")

    run(scenario, permanent=True)


def test_status_says_our_links_and_full_status_the_network_behind_them() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        net = network(ctl)
        now = await link_up(ctl)
        net.text(41, "L T2005,R2006", now)
        assert await ctl.run_command(Command("status")) == "links: T2001"
        assert await ctl.run_command(Command("full_status")) == ("links: T2001, T2005, R2006")
        assert await ctl.run_command(Command("last_keyed")) == "no node has keyed"
        net.rx_keyed(41, True, now + 1)
        assert await ctl.run_command(Command("last_keyed")) == "last keyed by node 2001"

    run(scenario)


def test_remote_command_mode_needs_the_node_in_the_network_and_a_local_source() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        runner = ctl._commands
        for d in "*42001":
            digit(ctl, "call 7", 7, d)
        assert runner.remote_node("call 7") is None
        # The digits after a refused *4 are commands again.
        for d in "*70":
            digit(ctl, "call 7", 7, d)
        assert dtmf_events(sub)[-1]["command"] == "*70 status"

        await link_up(ctl)
        # Digits from a link (its D texts, or DTMF frames on its call) never enter it.
        for source, call in (("remote 2001", 41), ("call 41", 41)):
            for d in "*42001":
                digit(ctl, source, call, d)
            assert runner.remote_node(source) is None
        for d in "*42001":
            digit(ctl, "local", None, d)
        assert runner.remote_node("local") == "2001"
        assert runner.remote_node("call 7") is None
        # `#` leaves it, with an event that says so.
        digit(ctl, "local", None, "#")
        assert runner.remote_node("local") is None
        assert dtmf_events(sub)[-1] == {
            "event": "dtmf",
            "call": None,
            "digit": "#",
            "command": "# end remote command mode 2001",
        }
        with pytest.raises(CommandError, match="needs a DTMF source"):
            await ctl.run_command(Command("remote", node="2001"))

    run(scenario)


def test_remote_command_mode_ends_by_itself_after_ten_silent_time_outs() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        await link_up(ctl)
        for d in "*42001":
            digit(ctl, "local", None, d)
        assert ctl._commands.remote_node("local") == "2001"
        await settle(lambda: ctl._commands.remote_node("local") is None)
        assert dtmf_events(sub)[-1] == {
            "event": "dtmf",
            "call": None,
            "digit": "",
            "command": "end remote command mode 2001",
        }

    run(scenario, timeout_ms=50)


def test_a_call_that_ends_takes_its_sequence_and_remote_mode_with_it() -> None:
    async def scenario(ctl: Controller, sub: Subscription) -> None:
        await link_up(ctl)
        for d in "*42001":
            digit(ctl, "call 7", 7, d)
        for d in "*3":
            digit(ctl, "call 8", 8, d)
        assert ctl._commands.remote_node("call 7") == "2001"
        ctl._commands.forget("call 7")
        ctl._commands.forget("call 8")
        assert ctl._commands.remote_node("call 7") is None
        # A new call 8 starts from nothing: "2002" alone is no command.
        for d in "2002":
            digit(ctl, "call 8", 8, d)
        assert all("command" not in e for e in dtmf_events(sub)[-4:])

    run(scenario)
