"""The parts every sans-I/O machine is built from: transition table, deadline table, outbox."""

from __future__ import annotations

from enum import Enum

import pytest

from node.errors import LocalProtocolError
from node.machine import DeadlineTable, Outbox, TransitionTable


class Door(Enum):
    SHUT = "shut"
    OPEN = "open"
    GONE = "gone"


class Push(Enum):
    OPEN = "open"
    SHUT = "shut"
    BREAK = "break"


TABLE: TransitionTable[Door, Push] = TransitionTable(
    {
        Door.SHUT: {Push.OPEN: Door.OPEN, Push.BREAK: Door.GONE},
        Door.OPEN: {Push.SHUT: Door.SHUT},
        Door.GONE: {},
    }
)


def test_a_listed_move_gives_the_next_state() -> None:
    assert TABLE.move(Door.SHUT, Push.OPEN, "door 1") is Door.OPEN
    assert TABLE.move(Door.OPEN, Push.SHUT, "door 1") is Door.SHUT


def test_a_move_the_table_does_not_list_is_our_own_misuse() -> None:
    with pytest.raises(LocalProtocolError, match="door 1: cannot open in state open"):
        TABLE.move(Door.OPEN, Push.OPEN, "door 1")
    with pytest.raises(LocalProtocolError, match="cannot shut in state gone"):
        TABLE.move(Door.GONE, Push.SHUT, "door 1")


def test_the_table_reads_as_a_mapping_of_rows() -> None:
    assert set(TABLE) == set(Door)
    assert len(TABLE) == 3
    assert TABLE[Door.GONE] == {}
    assert dict(TABLE[Door.SHUT]) == {Push.OPEN: Door.OPEN, Push.BREAK: Door.GONE}


def test_deadlines_earliest_and_due_in_the_order_first_armed() -> None:
    table: DeadlineTable[str] = DeadlineTable()
    assert not table
    assert table.earliest() is None
    assert table.due(1e9) == []
    table.set("ping", 21.0)
    table.set("lagrq", 10.0)
    table.set("setup", 30.0)
    assert table.earliest() == 10.0
    assert table.due(25.0) == ["ping", "lagrq"]  # armed order, not deadline order
    table.set("ping", 42.0)  # re-arming keeps its place
    assert table.due(100.0) == ["ping", "lagrq", "setup"]
    assert table["ping"] == 42.0 and table.get("linger") is None
    assert "ping" in table and "linger" not in table


def test_cancel_and_clear_disarm() -> None:
    table: DeadlineTable[str] = DeadlineTable()
    table.set("a", 1.0)
    table.set("b", 2.0)
    table.cancel("a", "not armed")
    assert table.due(5.0) == ["b"]
    table.clear()
    assert table.earliest() is None
    other: DeadlineTable[str] = DeadlineTable()
    assert table == other


def test_outbox_keeps_order_and_is_empty_after_take() -> None:
    box: Outbox[str, int] = Outbox()
    box.send("NEW")
    box.report(1)
    box.send("ACK")
    assert box.take() == (("NEW", "ACK"), (1,))
    assert box.take() == ((), ())
    box.send("PING")
    assert box.take() == (("PING",), ())
