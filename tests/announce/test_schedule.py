"""The polite station ID's schedule, on a stepped clock."""

from __future__ import annotations

import pytest

from node.announce.schedule import (
    POLITE_GAP_S,
    POLITE_WINDOW_S,
    TALKOVER_AFTER_S,
    IdTimer,
)


def test_an_idle_station_never_ids() -> None:
    timer = IdTimer(600, now=0.0)
    assert timer.next_deadline() is None
    assert not timer.timer(10_000.0)


def test_the_id_is_due_an_interval_after_the_last_one_once_the_station_transmitted() -> None:
    timer = IdTimer(600, now=0.0)
    timer.activity(True, 10.0)
    timer.activity(False, 20.0)
    # Quiet since long before the polite window: the due time it is.
    assert timer.next_deadline() == 600.0
    assert not timer.timer(599.9)
    assert timer.timer(600.0)
    assert timer.next_deadline() is None, "pending until it starts"
    timer.identified(600.5)
    # Nothing transmitted since: the next one is not owed.
    assert timer.next_deadline() is None
    timer.activity(True, 700.0)
    timer.activity(False, 710.0)
    assert timer.next_deadline() == 1200.5


def test_a_pause_inside_the_polite_window_takes_the_id_early() -> None:
    timer = IdTimer(600, now=0.0)
    timer.activity(True, 550.0)
    assert timer.next_deadline() == 600 + TALKOVER_AFTER_S
    # The over ends 20 s before the due time, inside the 30 s window: ID in the tail.
    timer.activity(False, 580.0)
    assert timer.next_deadline() == pytest.approx(580.0 + POLITE_GAP_S)
    assert timer.timer(580.0 + POLITE_GAP_S)


def test_a_due_id_waits_for_a_pause_then_plays_over_the_talk() -> None:
    timer = IdTimer(600, now=0.0)
    timer.activity(True, 590.0)
    assert not timer.timer(600.0), "someone is talking at the due time"
    timer.activity(False, 605.0)
    assert timer.next_deadline() == pytest.approx(605.0 + POLITE_GAP_S)
    timer.activity(True, 605.2)  # the next over starts within the gap
    assert not timer.timer(605.0 + POLITE_GAP_S)
    # Still talking at the bound: the ID plays over the talker, and the talk owes the next.
    assert timer.next_deadline() == 600 + TALKOVER_AFTER_S
    assert timer.timer(600 + TALKOVER_AFTER_S)
    timer.identified(600 + TALKOVER_AFTER_S)
    assert timer.owed and timer.next_deadline() == 1200 + 2 * TALKOVER_AFTER_S


def test_short_intervals_keep_the_window_inside_them() -> None:
    timer = IdTimer(4, now=100.0)
    assert timer.window_opens == pytest.approx(102.0)
    assert POLITE_WINDOW_S > 2
    timer.activity(True, 100.1)
    timer.activity(False, 100.5)
    assert timer.next_deadline() == 104.0
    with pytest.raises(ValueError):
        IdTimer(0, now=0.0)
