"""The operator's function table, macros, schedule and [rpt] keys: loading, errors, warnings,
and how the mapper reads digits through a configured table."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from node.announce.phrases import link_phrase, time_phrase
from node.announce.tail import TailMessages
from node.config import load_config
from node.config.functions import DEFAULT_FUNCTIONS
from node.errors import ConfigError
from node.links.commands import Command, CommandMapper

BASE = "[listener]\n[control]\n"


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "node.toml"
    path.write_text(BASE + text)
    return load_config(path)


def mapper_for(tmp_path: Path, text: str) -> CommandMapper:
    config = load(tmp_path, text)
    return CommandMapper(3.0, table=config.function_table, macros=config.macro)


def typed(mapper: CommandMapper, digits: str) -> list[Command]:
    out = []
    for i, d in enumerate(digits):
        command = mapper.feed(d, i * 0.1)
        if command is not None:
            out.append(command)
    return out


def test_absent_functions_is_asl3s_shipped_table_plus_the_extensions(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    assert config.functions is None
    codes = [f.code for f in config.function_table]
    assert codes[:16] == [
        "1", "2", "3", "4", "70", "99", "5",
        "721", "722", "723", "724", "725", "711", "712", "713", "714",
    ]  # fmt: skip
    assert codes[16:] == ["73", "74", "75", "76"]
    assert config.function_table == DEFAULT_FUNCTIONS


def test_present_functions_is_exactly_what_is_written(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.WARNING, logger="node.config"):
        config = load(
            tmp_path,
            '[functions]\n"6" = "ilink,3"\n"81" = "status,2"\n"99" = "cop,6"\n'
            '"61" = "ilink,1"\n"9" = "autopatchup,noct=1"\n',
        )
    assert [(f.code, f.kind) for f in config.function_table] == [
        ("6", "connect"),
        ("81", "announce"),
        ("99", "unavailable"),
        ("61", "disconnect"),
        ("9", "unavailable"),
    ]
    text = caplog.text
    # One warning for every function not available here (a stock ASL 1.x table has 55).
    unavailable = [r for r in caplog.records if "not available on this node" in r.message]
    assert len(unavailable) == 1
    assert "2 functions are not available" in text
    assert "99 (cop,6), 9 (autopatchup,noct=1)" in text
    assert "functions.61 can never run: functions.6 comes first" in text
    # The first entry whose code begins the digits wins, as in app_rpt.
    m = CommandMapper(3.0, table=config.function_table)
    assert typed(m, "*612000#") == [Command("connect", "*612000", node="12000")]
    assert typed(m, "*81") == [Command("announce", "*81", arg="2")]
    (refused,) = typed(m, "*99")
    assert refused.kind == "unavailable" and "not available here" in (refused.reason or "")
    assert typed(m, "*32000#") == [Command("unknown", "*3", reason="no such command")]


#: (file text after [listener] and [control], the key the error names, what it accepts)
BAD: list[tuple[str, str, str]] = [
    ('[functions]\n"1" = "ilink,99"\n', "functions.1", "ilink,N"),
    ('[functions]\n"1" = "frobnicate"\n', "functions.1", "status,N"),
    ('[functions]\n"1" = "status,7"\n', "functions.1", "status,N"),
    ('[functions]\n"1" = 3\n', "functions.1", "ilink,N"),
    ('[functions]\n"1x" = "ilink,1"\n', "functions.1x", "0-9 and A-D"),
    ('[functions]\n"1" = "macro,x"\n', "functions.1", "macro"),
    ("[functions.1]\n", "functions.1", "ilink,N"),
    ('[macro]\n"a" = "*3"\n', "macro.a", "1-8 digits"),
    ('[macro]\n"1" = "*3x"\n', "macro.1", "DTMF"),
    ('[macro]\n"1" = "*51"\n', "macro.1", "macros that end"),
    ('[macro]\n"1" = "*52"\n"2" = "*3000*51"\n', "macro.1", "macros that end"),
    ('[rpt]\nstartup_macro = "*50"\n', "rpt.startup_macro", "macros that end"),
    ('[rpt]\nstartup_macro = "hello"\n', "rpt.startup_macro", "DTMF"),
    ("[rpt]\ntelemdefault = 3\n", "rpt.telemdefault", "0 to 2"),
    ('[rpt]\nlink_telemetry = "terse"\n', "rpt.link_telemetry", "short"),
    ('[rpt]\ntailmessagelist = "x"\n', "rpt.tailmessagelist", "array"),
    ('[macro]\n"1" = "*3"\n[schedule]\n"2" = "0 0 * * *"\n', "schedule.2", "[macro] 1"),
    ('[macro]\n"1" = "*3"\n[schedule]\n"1" = "61 0"\n', "schedule.1", "cron"),
    ('[macro]\n"1" = "*3"\n[schedule]\n"1" = "0 0 * * * *"\n', "schedule.1", "cron"),
    ('[macro]\n"1" = "*3"\n[schedule]\n"1" = "x"\n', "schedule.1", "cron"),
]


@pytest.mark.parametrize(("text", "key", "accepted"), BAD)
def test_errors_name_the_key_and_what_is_accepted(
    tmp_path: Path, text: str, key: str, accepted: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert f": {key}:" in message, message
    assert accepted in message, message


def test_macros_and_schedule_load(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        '[rpt]\nstartup_macro = "*32000"\n[macro]\n"1" = "*32000 *32001"\n"2" = "*51*722"\n'
        '[schedule]\n"2" = "30 7 * * 1-5,0"\n"1" = "15"\n',
    )
    assert dict(config.macro) == {"1": "*32000*32001", "2": "*51*722"}
    first, second = config.schedule
    assert (first.macro, first.minute, first.hour, first.dow) == (
        "2",
        frozenset({30}),
        frozenset({7}),
        frozenset({0, 1, 2, 3, 4, 5}),
    )
    assert second.text == "15 * * * *" and second.hour is None
    m = CommandMapper(3.0, table=config.function_table, macros=config.macro)
    assert typed(m, "*51") == [Command("macro", "*51", arg="1")]
    assert typed(m, "*50") == [Command("macro", "*50", arg="0")]
    assert [c.reason for c in typed(m, "*57")] == ["macro 7 not found"]


def test_macro_ignores_its_parameter_as_app_rpt_does(tmp_path: Path) -> None:
    """app_rpt's function_macro ignores the function's parameter: the digits typed after the
    code name the macro, `0` is the startup macro, and a number that names none is refused
    once it has as many digits as the longest macro number."""
    # HamVOIP's table: `5=macro,1`; *52 runs macro 2, not macro 1.
    hamvoip = mapper_for(
        tmp_path, '[functions]\n"5" = "macro,1"\n[macro]\n"1" = "*722"\n"2" = "*723"\n'
    )
    assert typed(hamvoip, "*52") == [Command("macro", "*52", arg="2")]
    assert typed(hamvoip, "*51") == [Command("macro", "*51", arg="1")]
    assert [c.reason for c in typed(hamvoip, "*59")] == ["macro 9 not found"]
    # app_rpt__ultra's: `50=macro,4` ("4 digits"); its startup macro *501000 names macro 1000.
    ultra = mapper_for(
        tmp_path,
        '[functions]\n"50" = "macro,4"\n"1" = "ilink,1"\n'
        '[macro]\n"1000" = "*722"\n"2" = "*723"\n[rpt]\nstartup_macro = "*501000"\n',
    )
    assert typed(ultra, "*501000") == [Command("macro", "*501000", arg="1000")]
    assert typed(ultra, "*502") == [Command("macro", "*502", arg="2")]  # found: done at once
    assert typed(ultra, "*500") == [Command("macro", "*500", arg="0")]
    assert typed(ultra, "*5099") == []  # waits: the longest macro number has 4 digits
    assert [c.reason for c in typed(ultra, "99")] == ["macro 9999 not found"]
    assert [c.reason for c in typed(ultra, "*507#")] == ["macro 7 not found"]


def test_macro_loops_are_refused_through_any_macro_entry(tmp_path: Path) -> None:
    """The loop rule reads macros the way they run: `50=macro,4` runs the macro typed."""
    with pytest.raises(ConfigError) as info:
        load(
            tmp_path,
            '[functions]\n"50" = "macro,4"\n[macro]\n"1000" = "*502000"\n"2000" = "*501000"\n',
        )
    assert "macros that end" in str(info.value)
    config = load(tmp_path, '[functions]\n"50" = "macro,4"\n[macro]\n"1000" = "*509000#"\n')
    assert dict(config.macro) == {"1000": "*509000#"}  # 9000 names no macro: no loop


def test_phrases_use_app_rpts_wording() -> None:
    assert time_phrase(9, 41).speech == "good morning, the time is 9 41 AM"
    assert time_phrase(12, 5).speech == "good afternoon, the time is 12 oh 5 PM"
    assert time_phrase(18, 0).speech == "good evening, the time is 6 PM"
    assert time_phrase(0, 30).speech == "good morning, the time is 12 30 AM"
    assert link_phrase("link_connected", "1999", short=True).speech == "1 9 9 9 connected"
    full = link_phrase("link_connected", "1999", "2000", short=False).speech
    assert full == "node 1 9 9 9 connected to node 2 0 0 0"


def test_tail_messages_rotate_and_a_squashed_one_comes_back_sooner() -> None:
    tail = TailMessages(["one", "two"], interval=600, squashed=60, now=0)
    assert tail.tail(100) is None  # not due yet
    assert tail.tail(600) == "one"
    assert tail.tail(601) is None  # one at a time
    tail.ended(610)
    assert tail.tail(1000) is None
    assert tail.tail(1210) == "two"
    tail.squash(1211)  # a talker keyed over it
    assert tail.tail(1250) is None
    assert tail.tail(1271) == "two"  # the same one again, after the squashed time
    tail.ended(1280)
    assert tail.tail(1880) == "one"
    assert not TailMessages([], 600, 0, 0).enabled
