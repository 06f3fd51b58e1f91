"""The DTMF command mapper, driven digit by digit on a fake clock."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.links.commands import MAX_NODE_DIGITS, Command, CommandMapper, LastNode

TIMEOUT = 3.0
TICK = 0.2


def typed(mapper: CommandMapper, digits: str, now: float = 0.0) -> tuple[list[Command], float]:
    """Feed `digits` TICK apart; every command they complete, and the clock after them."""
    out = []
    for d in digits:
        now += TICK
        command = mapper.feed(d, now)
        if command is not None:
            out.append(command)
    return out, now


def one(mapper: CommandMapper, digits: str) -> Command:
    commands, _ = typed(mapper, digits)
    assert len(commands) == 1, commands
    return commands[0]


def known(**by_kind: Collection[str]) -> CommandMapper:
    return CommandMapper(TIMEOUT, nodes=lambda kind: by_kind.get(kind, ()))


# --- the table ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("digits", "kind", "text"),
    [
        ("*12000#", "disconnect", "*12000 disconnect 2000"),
        ("*22000#", "monitor", "*22000 monitor 2000"),
        ("*32000#", "connect", "*32000 connect 2000"),
        ("*42000#", "remote", "*42000 remote command mode 2000"),
        ("*70", "status", "*70 status"),
        ("*73", "full_status", "*73 full status"),
        ("*74", "restore", "*74 restore links"),
        ("*752000#", "local_monitor", "*752000 local monitor 2000"),
        ("*76", "disconnect_all", "*76 disconnect all"),
    ],
)
def test_every_table_entry(digits: str, kind: str, text: str) -> None:
    command = one(CommandMapper(TIMEOUT), digits)
    assert command.kind == kind
    assert str(command) == text
    assert command.digits == digits.rstrip("#")


def test_commands_without_a_node_complete_on_their_last_digit() -> None:
    mapper = CommandMapper(TIMEOUT)
    assert mapper.feed("*", 0.0) is None
    assert mapper.feed("7", 0.1) is None
    assert mapper.feed("0", 0.2) == Command("status", "*70")
    assert not mapper.collecting and mapper.next_deadline() is None


def test_a_known_node_completes_the_number_at_once() -> None:
    mapper = known(connect={"2000", "2001"}, disconnect={"2001"})
    assert one(mapper, "*32000") == Command("connect", "*32000", node="2000")
    assert one(mapper, "*12001") == Command("disconnect", "*12001", node="2001")
    assert not mapper.collecting


def test_a_known_node_that_starts_a_longer_one_waits() -> None:
    # app_rpt would stop at 2000 and never reach 20001 (issue #372); here the number goes on.
    mapper = known(connect={"2000", "20001"})
    commands, _ = typed(mapper, "*32000")
    assert commands == [] and mapper.collecting
    assert one(mapper, "1") == Command("connect", "*320001", node="20001")
    # ... and 2000 itself is typed with # or left to the time-out.
    commands, _ = typed(mapper, "*32000#")
    assert commands == [Command("connect", "*32000", node="2000")]


def test_disconnect_uses_the_linked_nodes_not_the_nodes_file() -> None:
    mapper = known(connect={"2000"}, disconnect={"2001"})
    commands, _ = typed(mapper, "*12000")
    assert commands == [] and mapper.collecting


def test_an_echolink_station_number_has_seven_digits() -> None:
    """With `[echolink]`, `*3` + `3` + six digits is ASL3's EchoLink connect; other numbers keep
    six digits."""
    mapper = CommandMapper(TIMEOUT, echolink=True)
    commands, _ = typed(mapper, "*33123456")
    assert commands == [Command("connect", "*33123456", node="3123456")]
    commands, _ = typed(mapper, "*1312345")
    assert commands == [] and mapper.collecting
    commands, _ = typed(CommandMapper(TIMEOUT, echolink=True), "*3212345")
    assert commands == [Command("connect", "*3212345", node="212345")]


def test_six_digits_end_the_number() -> None:
    mapper = CommandMapper(TIMEOUT)
    commands, _ = typed(mapper, "*3123456")
    assert commands == [Command("connect", "*3123456", node="123456")]
    assert len("123456") == MAX_NODE_DIGITS
    # the digit after it is outside any sequence
    assert mapper.feed("7", 10.0) is None


# --- terminators --------------------------------------------------------------------------------


def test_the_inter_digit_time_out_ends_a_node_number() -> None:
    mapper = CommandMapper(TIMEOUT)
    commands, now = typed(mapper, "*22001")
    assert commands == []
    deadline = mapper.next_deadline()
    assert deadline == pytest.approx(now + TIMEOUT)
    assert mapper.timer(deadline - 0.01) is None
    assert mapper.timer(deadline) == Command("monitor", "*22001", node="2001")
    assert mapper.next_deadline() is None and not mapper.collecting


def test_each_digit_restarts_the_time_out() -> None:
    mapper = CommandMapper(TIMEOUT)
    mapper.feed("*", 0.0)
    mapper.feed("3", 2.9)
    assert mapper.timer(3.0) is None
    mapper.feed("2", 5.8)
    assert mapper.next_deadline() == pytest.approx(8.8)


def test_a_time_out_after_a_bare_star_is_silent() -> None:
    mapper = CommandMapper(TIMEOUT)
    mapper.feed("*", 0.0)
    assert mapper.timer(TIMEOUT) is None
    assert not mapper.collecting


def test_hash_ends_or_clears() -> None:
    mapper = CommandMapper(TIMEOUT)
    assert one(mapper, "*32000#") == Command("connect", "*32000", node="2000")
    commands, _ = typed(mapper, "*#")
    assert commands == [] and not mapper.collecting
    assert one(mapper, "*3#") == Command("unknown", "*3", reason="no node number")
    assert one(mapper, "*7#") == Command("unknown", "*7", reason="no such command")


def test_a_star_restarts_the_sequence() -> None:
    mapper = CommandMapper(TIMEOUT)
    assert one(mapper, "*320*12001#") == Command("disconnect", "*12001", node="2001")


def test_digits_outside_a_sequence_are_ignored() -> None:
    mapper = CommandMapper(TIMEOUT)
    commands, _ = typed(mapper, "32000#1#")
    assert commands == [] and not mapper.collecting and mapper.next_deadline() is None


# --- last node ----------------------------------------------------------------------------------


def test_zero_means_the_last_node_named() -> None:
    mapper = CommandMapper(TIMEOUT)
    assert one(mapper, "*30") == Command("unknown", "*30", reason="no last node yet")
    one(mapper, "*32000#")
    assert one(mapper, "*10") == Command("disconnect", "*10", node="2000")
    assert one(mapper, "*20") == Command("monitor", "*20", node="2000")
    one(mapper, "*22001#")
    assert one(mapper, "*30") == Command("connect", "*30", node="2001")


def test_the_last_node_is_shared_between_sources() -> None:
    last = LastNode()
    a = CommandMapper(TIMEOUT, last=last)
    b = CommandMapper(TIMEOUT, last=last)
    one(a, "*32000#")
    assert one(b, "*10") == Command("disconnect", "*10", node="2000")


# --- garbage ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("digits", "expected"),
    [
        # ASL3's table: *5 is the macro function (a number must follow), *71 begins *711.
        ("*5#", Command("unknown", "*5", reason="no macro number")),
        ("*59#", Command("unknown", "*59", reason="macro 9 not found")),
        ("*9#", Command("unknown", "*9", reason="no such command")),
        ("*0", Command("unknown", "*0", reason="no such command")),
        ("*A", Command("unknown", "*A", reason="no such command")),
        ("*71#", Command("unknown", "*71", reason="no such command")),
        ("*8", Command("unknown", "*8", reason="no such command")),
        ("*3A", Command("unknown", "*3A", reason="a node number has only digits")),
    ],
)
def test_unknown_sequences_are_reported_not_guessed(digits: str, expected: Command) -> None:
    mapper = CommandMapper(TIMEOUT)
    assert one(mapper, digits) == expected
    assert str(expected).endswith("unknown")
    assert not mapper.collecting


def test_non_dtmf_input_is_ignored() -> None:
    mapper = CommandMapper(TIMEOUT)
    mapper.feed("*", 0.0)
    for junk in ("", "x", "12", "\x00", " "):
        assert mapper.feed(junk, 0.1) is None
    assert mapper.feed("3", 0.2) is None
    assert one(mapper, "2000#") == Command("connect", "*32000", node="2000")


def test_lower_case_letters_are_dtmf_letters() -> None:
    mapper = CommandMapper(TIMEOUT)
    assert one(mapper, "*a") == Command("unknown", "*A", reason="no such command")


def test_permanent_commands_say_so() -> None:
    assert str(Command("connect", node="2001", permanent=True)) == "connect 2001 (permanent)"


def test_the_time_out_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        CommandMapper(0)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(list("0123456789*#ABCD")), max_size=60))
def test_any_digit_stream_yields_well_formed_commands(digits: list[str]) -> None:
    mapper = known(connect={"2000", "20001", "1999"}, disconnect={"2000"})
    now = 0.0
    for d in digits:
        now += TICK
        command = mapper.feed(d, now)
        if command is not None:
            assert command.digits.startswith("*")
            assert command.kind in (
                "disconnect",
                "monitor",
                "connect",
                "remote",
                "status",
                "full_status",
                "restore",
                "local_monitor",
                "disconnect_all",
                "unknown",
                # ASL3's shipped table: status messages, cop,6 (unavailable), macros.
                "announce",
                "unavailable",
                "macro",
            )
            if command.kind in ("disconnect", "monitor", "connect", "remote", "local_monitor"):
                assert command.node is not None and command.node.isdigit()
                assert 1 <= len(command.node) <= MAX_NODE_DIGITS
            assert (command.reason is not None) == (command.kind in ("unknown", "unavailable"))
    deadline = mapper.next_deadline()
    if deadline is not None:
        mapper.timer(deadline)
    assert not mapper.collecting and mapper.next_deadline() is None
