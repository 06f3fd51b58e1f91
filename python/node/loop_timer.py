"""The asyncio side of the sans-I/O machines' deadlines: one `loop.call_at` handle per owner.

Every machine (`node.machine.DeadlineTable`) says when it next needs `timer(now)`; its owner holds
one `DeadlineTimer` and re-arms it with that deadline after each input (aioquic's protocol and
quinn's connection driver do the same: re-arm only when the deadline changed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["DeadlineTimer"]


class DeadlineTimer:
    """One `loop.call_at` handle, re-armed only when the deadline changes. `clock` must be the
    loop's clock (both are CLOCK_MONOTONIC by default)."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None
        self._at: float | None = None

    def arm(self, at: float | None) -> None:
        if at == self._at:
            return
        self.cancel()
        self._at = at
        if at is not None:
            self._handle = asyncio.get_running_loop().call_at(at, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._at = None

    def _fire(self) -> None:
        self._handle = None
        self._at = None
        self._callback()
