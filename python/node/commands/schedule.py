"""app_rpt's scheduler: `[schedule]` runs macros at set minutes, cron style, in local time.

Once a minute (just after the wall clock's minute turns) the entries are matched against the
local time of that minute; each match runs its macro through the command runner, from a source
of its own, and becomes a `schedule` event and a log line. Only the current minute is looked at:
a minute the host slept through (suspend) is not made up. Local time comes from the C library,
so DST is the zone's: a wall-clock minute that does not exist does not run, one that happens
twice runs twice. `cop,16` stops the scheduler and `cop,15` starts it again.

The minute's turn is a deadline of the router's table (`next_deadline`, `timer`); the macros
run as `Spawn` work the router awaits, and their effects are its.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from node.config.functions import ScheduleEntry
from node.effects import NOTHING, Effects, Spawn
from node.events import EventBus, Scheduled

__all__ = ["Scheduler", "due"]

log = logging.getLogger(__name__)


def due(entries: Sequence[ScheduleEntry], local: time.struct_time) -> list[ScheduleEntry]:
    """The entries whose fields all match the local time `local` (cron's day rule: when both
    day of month and day of week are restricted, either may match)."""
    out = []
    # struct_time: tm_wday is Monday 0; cron's day of week is Sunday 0.
    dow = (local.tm_wday + 1) % 7
    for e in entries:
        if e.minute is not None and local.tm_min not in e.minute:
            continue
        if e.hour is not None and local.tm_hour not in e.hour:
            continue
        if e.month is not None and local.tm_mon not in e.month:
            continue
        dom_ok = e.dom is None or local.tm_mday in e.dom
        dow_ok = e.dow is None or dow in e.dow
        if e.dom is not None and e.dow is not None:
            if not (dom_ok or dow_ok):
                continue
        elif not (dom_ok and dow_ok):
            continue
        out.append(e)
    return out


class Scheduler:
    """Runs `[schedule]` entries; `wall` is the wall clock (seconds since the epoch), `local`
    turns it into local time (tests inject both). `run_macro(number, source)` runs a macro:
    what it did, and its effects."""

    def __init__(
        self,
        entries: Sequence[ScheduleEntry],
        run_macro: Callable[[str, str], Awaitable[tuple[str, Effects]]],
        bus: EventBus,
        *,
        wall: Callable[[], float] = time.time,
        local: Callable[[float], time.struct_time] = time.localtime,
        macros: dict[str, str] | None = None,
    ) -> None:
        self._entries, self._macros = tuple(entries), macros or {}
        self._run_macro, self._bus = run_macro, bus
        self._wall, self._local = wall, local
        #: cop 15/16.
        self.enabled = True
        #: The last minute (wall seconds // 60) looked at.
        self._last_minute: int | None = None
        #: When the next minute turns (monotonic), None before `start` or without entries.
        self._next_at: float | None = None
        self.runs = 0

    def start(self, now: float) -> None:
        """Begin (monotonic `now`): the first look is just after the next minute turns."""
        if self._entries:
            self._arm(now)

    def switch(self, on: bool) -> None:
        self.enabled = on
        log.info("scheduler %s", "enabled" if on else "disabled")

    def _arm(self, now: float) -> None:
        # Just after the next minute turns; measured again each time, so a suspended host wakes
        # into the current minute, not the ones it missed.
        self._next_at = now + 60 - self._wall() % 60 + 0.05

    def next_deadline(self) -> float | None:
        return self._next_at

    def timer(self, now: float) -> Effects:
        """The minute turned: the macros of this minute run (as work for the router)."""
        if self._next_at is None or now < self._next_at:
            return NOTHING
        self._arm(now)
        return Effects(events=(Spawn(self._tick_work(), "the scheduler"),))

    async def _tick_work(self) -> Effects:
        return (await self.tick())[1]

    async def tick(self) -> tuple[list[str], Effects]:
        """Look at the current minute (once); the macros that ran, and their effects."""
        now = self._wall()
        minute = int(now // 60)
        if minute == self._last_minute:
            return [], NOTHING
        self._last_minute = minute
        if not self.enabled:
            return [], NOTHING
        ran = []
        fx = NOTHING
        for entry in due(self._entries, self._local(minute * 60)):
            ran.append(entry.macro)
            self.runs += 1
            digits = self._macros.get(entry.macro, "")
            try:
                result, done = await self._run_macro(entry.macro, f"schedule {entry.macro}")
            except Exception as exc:
                result = f"refused: {exc}"
            else:
                fx = fx | done
            log.info("scheduled macro %s (%s) ran: %s", entry.macro, entry.text, result)
            self._bus.publish(Scheduled(macro=entry.macro, digits=digits, result=result))
        return ran, fx

    def close(self) -> None:
        self._next_at = None
