"""The scheduler on an injected wall clock: cron matching, once a minute, missed minutes not
made up, DST in a real zone, cop 15/16, and the `schedule` event."""

from __future__ import annotations

import asyncio
import calendar
import os
import time
from collections.abc import Iterator

import pytest

from node.commands.schedule import Scheduler, due
from node.config.functions import parse_schedule
from node.effects import NOTHING, Effects, Spawn
from node.events import EventBus


@pytest.fixture
def new_york() -> Iterator[None]:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def utc(y: int, mo: int, d: int, h: int, mi: int) -> float:
    return float(calendar.timegm((y, mo, d, h, mi, 0, 0, 0, 0)))


def test_cron_fields_match_as_cron_does() -> None:
    weekday_7 = parse_schedule("1", "0 7 * * 1-5")
    first = parse_schedule("2", "30 * 1")
    both = parse_schedule("3", "0 0 13 * 5")  # the 13th, or any Friday
    entries = [weekday_7, first, both]

    def at(*when: int) -> list[str]:
        return [e.macro for e in due(entries, time.gmtime(utc(*when)))]

    assert at(2026, 11, 26, 7, 0) == ["1"]  # a Thursday
    assert at(2026, 11, 28, 7, 0) == []  # a Saturday
    assert at(2026, 12, 1, 5, 30) == ["2"]
    assert at(2026, 11, 27, 0, 0) == ["3"]  # a Friday
    assert at(2026, 12, 13, 0, 0) == ["3"]  # a Sunday, the 13th
    assert at(2026, 12, 14, 0, 0) == []


def run_ticks(scheduler: Scheduler, wall: list[float], times: list[float]) -> list[list[str]]:
    async def go() -> list[list[str]]:
        out = []
        for t in times:
            wall[0] = t
            ran, _ = await scheduler.tick()
            out.append(ran)
        return out

    return asyncio.run(go())


def test_once_a_minute_missed_minutes_not_replayed_and_cop_switches() -> None:
    ran: list[tuple[str, str]] = []

    async def run_macro(number: str, source: str) -> tuple[str, Effects]:
        ran.append((number, source))
        return "ok", NOTHING

    bus = EventBus()
    sub = bus.subscribe()
    wall = [0.0]
    entries = [parse_schedule("1", "*"), parse_schedule("2", "5 10")]
    scheduler = Scheduler(
        entries, run_macro, bus, wall=lambda: wall[0], local=time.gmtime, macros={"1": "*70"}
    )
    t0 = utc(2026, 11, 26, 10, 4)
    got = run_ticks(scheduler, wall, [t0 + 1, t0 + 30, t0 + 61, t0 + 3600 * 5])
    # 10:04 once (not again at 10:04:30); 10:05 both; after a 5-hour sleep, only 15:04.
    assert got == [["1"], [], ["1", "2"], ["1"]]
    assert ran[0] == ("1", "schedule 1")
    event = sub.queue.get_nowait()
    assert event is not None
    assert event.to_json() == {"event": "schedule", "macro": "1", "digits": "*70", "result": "ok"}
    scheduler.switch(False)  # cop,16
    assert run_ticks(scheduler, wall, [t0 + 3600 * 6]) == [[]]
    scheduler.switch(True)  # cop,15
    assert run_ticks(scheduler, wall, [t0 + 3600 * 7]) == [["1"]]


def test_local_time_and_dst(new_york: None) -> None:
    async def run_macro(number: str, source: str) -> tuple[str, Effects]:
        return "ok", NOTHING

    wall = [0.0]
    entries = [parse_schedule("1", "30 2"), parse_schedule("2", "30 1")]
    scheduler = Scheduler(entries, run_macro, EventBus(), wall=lambda: wall[0])
    # 2026-03-08: 02:00 EST becomes 03:00 EDT; 02:30 does not exist that day.
    spring = [utc(2026, 3, 8, 6, 30), utc(2026, 3, 8, 7, 30)]  # 01:30 EST, 03:30 EDT
    assert run_ticks(scheduler, wall, spring) == [["2"], []]
    # 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens twice.
    fall = [utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 7, 30)]
    assert run_ticks(scheduler, wall, fall) == [["2"], ["2"], ["1"]]
    # Any other day, 02:30 local runs.
    assert run_ticks(scheduler, wall, [utc(2026, 11, 26, 7, 30)]) == [["1"]]


def test_the_minute_turn_is_a_deadline_and_the_macros_run_as_work() -> None:
    async def run_macro(number: str, source: str) -> tuple[str, Effects]:
        return "ok", NOTHING

    wall = [utc(2026, 11, 26, 10, 4) + 20.0]
    entries = [parse_schedule("1", "*")]
    scheduler = Scheduler(entries, run_macro, EventBus(), wall=lambda: wall[0], local=time.gmtime)
    assert scheduler.next_deadline() is None  # not started
    scheduler.start(1000.0)
    # 40 s to the minute's turn, and a little after it.
    assert scheduler.next_deadline() == pytest.approx(1040.05)
    assert not scheduler.timer(1039.0)
    wall[0] += 40.05
    fx = scheduler.timer(1040.05)
    (work,) = fx.events
    assert isinstance(work, Spawn)
    assert asyncio.run(work.work) == NOTHING
    assert scheduler.runs == 1
    assert scheduler.next_deadline() == pytest.approx(1040.05 + 60.0)


def test_a_wall_clock_step_is_one_jump_not_years_of_minutes() -> None:
    # A Pi without a real-time clock: NTP steps the wall clock three years forward (and 17 s off
    # the minute), then 41 s back, later nine years back. Every turn is a monotonic deadline at
    # most a minute away; each looks at the minute the wall clock says then, once; nothing is
    # made up and nothing stalls until the old clock comes round again.
    async def run_macro(number: str, source: str) -> tuple[str, Effects]:
        return "ok", NOTHING

    looked: list[time.struct_time] = []

    def local(t: float) -> time.struct_time:
        looked.append(time.gmtime(t))
        return looked[-1]

    wall = [utc(2031, 5, 5, 10, 0) + 20.0]
    scheduler = Scheduler(
        [parse_schedule("1", "*")], run_macro, EventBus(), wall=lambda: wall[0], local=local
    )
    now = 1000.0
    scheduler.start(now)
    steps = {3: 1096 * 86400 + 5 * 3600 + 17.0, 6: -41.0, 8: -(3287 * 86400)}
    for turn in range(12):
        deadline = scheduler.next_deadline()
        assert deadline is not None and now < deadline <= now + 60.05 + 1e-6
        wall[0] += deadline - now
        now = deadline
        wall[0] += steps.get(turn, 0.0)
        (work,) = scheduler.timer(now).events
        assert isinstance(work, Spawn)
        before = len(looked)
        asyncio.run(work.work)
        # At most the one minute the wall clock says now, and only if not looked at already.
        assert len(looked) - before <= 1
        if len(looked) > before:
            assert looked[-1][:5] == time.gmtime(wall[0])[:5]
    assert [t.tm_year for t in looked] == [2031] * 3 + [2034] * 4 + [2025] * 4
    # The step back by 41 s landed in a minute already looked at: it ran once, not twice.
    minutes = [t[:5] for t in looked]
    assert len(minutes) == len(set(minutes)) == scheduler.runs == 11
