"""Per-call IAX2 timestamps (sans-I/O).

Each side of a call stamps its full frames with milliseconds since the call's first
transmission (RFC 5456 §8.1.1). Full frames must carry strictly increasing timestamps, and a 0
must never go out in a frame the peer echoes: Asterisk and libiax2 treat a 0 as "compute one
for me" and would answer with their own clock (research/iax2.md §1.10). Voice timestamps come
from the media clock (the Rust engine), so they are taken as given and only raise the floor.
"""

from __future__ import annotations

__all__ = ["NON_VOICE_STEP", "CallClock"]

#: How far a non-voice frame is pushed past the last timestamp when the clock has not moved
#: (Asterisk's `lastsent + 3`).
NON_VOICE_STEP = 3

_MASK = 0xFFFFFFFF


class CallClock:
    """The millisecond clock of one call, started by the first transmission."""

    __slots__ = ("_last", "origin")

    def __init__(self) -> None:
        #: `now` of the first transmission, or None before it. The engine stamps mini frames
        #: from the same origin so mini and full frames share one clock.
        self.origin: float | None = None
        self._last = 0

    @property
    def last_sent(self) -> int:
        """The highest timestamp put in a full frame so far (0 before any)."""
        return self._last

    def elapsed_ms(self, now: float) -> int:
        """Milliseconds since the origin (0 before the first transmission)."""
        if self.origin is None:
            return 0
        return max(0, int((now - self.origin) * 1000)) & _MASK

    def stamp(self, now: float) -> int:
        """The timestamp for a non-voice full frame sent at `now`: never 0, strictly rising."""
        if self.origin is None:
            self.origin = now
        ts = self.elapsed_ms(now)
        floor = self._last + NON_VOICE_STEP if self._last else 1
        ts = max(ts, floor) & _MASK
        self._last = ts
        return ts

    def note_voice(self, now: float, ts: int) -> None:
        """Record a voice timestamp chosen by the media clock (it may lag `stamp`'s)."""
        if self.origin is None:
            self.origin = now
        self._last = max(self._last, ts & _MASK)
