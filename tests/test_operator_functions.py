"""The function table's status, cop and macro functions through a real controller (no engine):
what runs, what is refused, what is said and to whom."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from node import config as cfg
from node.config.functions import RptConfig, parse_function
from node.controller import Controller
from node.errors import CommandError
from node.events import EventBus
from node.links.commands import Command
from node.secrets import SecretStore


class Said:
    """Stands in for the announcements' player (the engine's edge): what would be said."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def say(self, phrase: Any, destination: str, *, keys: bool = False) -> None:
        self.items.append((phrase.speech, destination))


def controller(**rpt: Any) -> tuple[Controller, Said]:
    config = cfg.NodeConfig(
        register=cfg.RegisterConfig(peer=cfg.Address("127.0.0.1", 9), node_id="2000"),
        dns=cfg.DnsConfig(enabled=False),
        secrets=cfg.SecretsConfig(source="control"),
        dtmf=cfg.DtmfConfig(enabled=True),
        links={"2001": cfg.LinkConfig(addr=cfg.Address("127.0.0.1", 14569))},
        functions=(
            parse_function("3", "ilink,3"),
            parse_function("5", "macro"),
            parse_function("70", "ilink,5"),
            parse_function("722", "status,2"),
            parse_function("712", "status,12"),
            parse_function("723", "status,3"),
            parse_function("830", "cop,34"),
            parse_function("831", "cop,33"),
            parse_function("832", "cop,35"),
            parse_function("812", "cop,12"),
            parse_function("811", "cop,11"),
        ),
        macro={"1": "*722*712"},
        rpt=RptConfig(**rpt),
    )
    ctl = Controller(config, EventBus(), SecretStore(config, {}))
    said = Said()
    ctl._announcements.say = said.say  # type: ignore[method-assign]
    return ctl, said


def run(scenario: Callable[[Controller, Said], Awaitable[None]], **rpt: Any) -> None:
    async def main() -> None:
        ctl, said = controller(**rpt)
        try:
            await asyncio.wait_for(scenario(ctl, said), 10)
        finally:
            ctl.close()

    asyncio.run(main())


def test_status_messages_global_and_local() -> None:
    async def scenario(ctl: Controller, said: Said) -> None:
        await ctl.dtmf_command("ami", "*722*712*723")
        (time_g, to_g), (time_l, to_l), (version, to_v) = said.items
        assert time_g.startswith("good ") and ", the time is " in time_g
        assert to_g == "to_air_and_links" and to_l == "to_monitor"
        assert time_l == time_g or time_l.startswith("good ")
        assert version.startswith("version ") and to_v == "to_air_and_links"

    run(scenario)


def test_a_macro_runs_its_digits_through_the_table() -> None:
    async def scenario(ctl: Controller, said: Said) -> None:
        (outcome,) = await ctl.dtmf_command("ami", "*51")
        assert outcome[0] == Command("macro", "*51", arg="1")
        assert isinstance(outcome[1], str) and outcome[1].startswith("macro 1: *722: status 2:")
        assert [d for _, d in said.items] == ["to_air_and_links", "to_monitor"]

    run(scenario)


def test_telemetry_modes_change_live() -> None:
    async def scenario(ctl: Controller, said: Said) -> None:
        ann = ctl._announcements
        assert ann.telemetry_mode == "timed" and not ann.telemetry_on()
        await ctl.dtmf_command("ami", "*722")  # any command: on for a while
        assert ann.telemetry_on()
        await ctl.dtmf_command("ami", "*830")
        assert ann.telemetry_mode == "off" and not ann.telemetry_on()
        await ctl.dtmf_command("ami", "*831")
        assert ann.telemetry_on()

    run(scenario, telemdefault=2)


def test_telemdynamic_off_fixes_the_mode() -> None:
    async def scenario(ctl: Controller, said: Said) -> None:
        ((_, result),) = await ctl.dtmf_command("ami", "*830")
        assert isinstance(result, CommandError) and result.status == 403
        assert ctl._announcements.telemetry_mode == "on"

    run(scenario, telemdynamic=False)


def test_cop_12_disables_link_commands_and_cop_11_enables_them() -> None:
    async def scenario(ctl: Controller, said: Said) -> None:
        await ctl.dtmf_command("ami", "*812")
        ((_, result),) = await ctl.dtmf_command("ami", "*32001")
        assert isinstance(result, CommandError) and "disabled" in str(result)
        assert dict(ctl._links.network.links) == {}
        await ctl.dtmf_command("ami", "*811")
        ((_, result),) = await ctl.dtmf_command("ami", "*32001")
        assert result == "linking node 2001"

    run(scenario)


@pytest.mark.parametrize(
    ("source", "call", "spoken"), [("call 7", 7, True), ("remote 2002", None, False)]
)
def test_what_another_node_asks_is_not_said_here(
    source: str, call: int | None, spoken: bool
) -> None:
    async def scenario(ctl: Controller, said: Said) -> None:
        for d in "*722":
            ctl._commit(ctl._commands.digit(source, call, d))
        await asyncio.sleep(0.05)
        assert ctl.command_stats().total == 1
        assert bool(said.items) is spoken

    run(scenario)
