"""When the periodic station ID plays: app_rpt's polite ID as a sans-I/O timer.

The rules (research/allstar.md §4; docs/announce.md has the reasoning):

1. **Only after a transmission.** The ID is owed once the station has transmitted since the
   last ID: the conference had a talker (a call, a link, the local radio's receiver, the
   operator's key). An idle node never IDs (app_rpt's `mustid`). Announcements are not talkers,
   so an ID never makes the next one owed.
2. **Due** `interval` seconds after the last ID (or after start).
3. **Early in a pause.** From `POLITE_WINDOW_S` before it is due (app_rpt's `politeid`, 30 s;
   at most half the interval), a pause in the conversation that begins inside that window plays
   the ID at once, in the tail of the transmission, rather than waiting for the due time and
   perhaps landing on the next over.
4. **A pause, not a cut.** From the due time, the ID plays as soon as the conversation pauses:
   nobody has talked for `POLITE_GAP_S` (on top of the engine's 500 ms activity hang).
5. **Within a bound.** If the talk goes on `TALKOVER_AFTER_S` past the due time, the ID plays
   over it (app_rpt's `idtalkover`): it is never later than that.

No clock, no I/O: every input takes `now` (monotonic seconds), `next_deadline()` says when to call
`timer(now)` next, and `timer` answers whether the ID must start now.
"""

from __future__ import annotations

__all__ = ["POLITE_GAP_S", "POLITE_WINDOW_S", "TALKOVER_AFTER_S", "IdTimer"]

#: How long before the due time a pause may take the ID early (app_rpt `politeid`).
POLITE_WINDOW_S = 30.0
#: Quiet that makes a pause, beyond the engine's activity hang (`rust/media/`,
#: `ACTIVITY_HANG_MS`, 500 ms): one second without a talker in all.
POLITE_GAP_S = 0.5
#: How long past the due time an ID waits for a pause before it plays over the talk.
TALKOVER_AFTER_S = 30.0


class IdTimer:
    """The periodic ID's schedule for one station."""

    def __init__(self, interval: float, now: float) -> None:
        if interval <= 0:
            raise ValueError("the ID interval must be positive")
        self.interval = interval
        #: When the last ID started (the node's start counts as one).
        self.last_id = now
        #: The station transmitted since the last ID.
        self.owed = False
        self.talking = False
        #: When the conference last fell quiet (the start, before any talk).
        self.quiet_since = now
        #: `timer` said "now" and the ID has not started yet.
        self._pending = False

    def __repr__(self) -> str:
        return (
            f"IdTimer(interval={self.interval}, owed={self.owed}, talking={self.talking}, "
            f"pending={self._pending})"
        )

    @property
    def due_at(self) -> float:
        return self.last_id + self.interval

    @property
    def window_opens(self) -> float:
        return self.due_at - min(POLITE_WINDOW_S, self.interval / 2)

    def activity(self, active: bool, now: float) -> None:
        """The conference got a talker (`active`) or has been quiet for the engine's hang."""
        if active and not self.talking:
            self.owed = True
        elif not active and self.talking:
            self.quiet_since = now
        self.talking = active

    def identified(self, now: float) -> None:
        """The ID started playing now. Talk going on now is owed the next one."""
        self.last_id = now
        self._pending = False
        self.owed = self.talking

    def next_deadline(self) -> float | None:
        """When the ID starts if nothing changes meanwhile; None while none is owed (or one is
        starting). An `activity` change moves it."""
        if not self.owed or self._pending:
            return None
        if self.talking:
            return self.due_at + TALKOVER_AFTER_S
        gap_over = self.quiet_since + POLITE_GAP_S
        if gap_over < self.window_opens:
            # Quiet since before the window opened: no tail to use; the due time it is.
            return self.due_at
        return max(gap_over, self.window_opens)

    def timer(self, now: float) -> bool:
        """True when the ID must start now (the caller plays it and calls `identified`)."""
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return False
        self._pending = True
        return True
