"""Tail messages (app_rpt `tailmessagetime`, `tailsquashedtime`, `tailmessagelist`).

Once `interval` has passed since the last one, the next message of the list plays at the next
tail: when the conference has just gone quiet after a transmission. A talker who keys during it
cuts it short ("squashed"); the same message is then tried again after `squashed` instead of the
whole interval. No I/O and no clock of its own: inputs take `now` (monotonic seconds).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["TailMessages"]


class TailMessages:
    """Which tail message is due, and when."""

    def __init__(self, messages: Sequence[str], interval: float, squashed: float, now: float):
        self._messages = tuple(messages)
        self._interval = interval
        self._squashed = squashed if squashed > 0 else interval
        self._next = 0
        self._due = now + interval
        #: The message playing now (between `tail` and `ended` / `squash`).
        self.playing: str | None = None

    @property
    def enabled(self) -> bool:
        return bool(self._messages) and self._interval > 0

    def due_at(self) -> float | None:
        return self._due if self.enabled else None

    def tail(self, now: float) -> str | None:
        """The conference went quiet: the message to play now, if one is due."""
        if not self.enabled or now < self._due or self.playing is not None:
            return None
        self.playing = self._messages[self._next]
        return self.playing

    def ended(self, now: float) -> None:
        """The message played out: the next one is due after the interval."""
        if self.playing is None:
            return
        self.playing = None
        self._next = (self._next + 1) % len(self._messages)
        self._due = now + self._interval

    def squash(self, now: float) -> None:
        """A talker keyed over it: the same message is tried again after `squashed`."""
        if self.playing is None:
            return
        self.playing = None
        self._due = now + self._squashed
