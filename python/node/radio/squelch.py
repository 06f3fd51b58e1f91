"""The carrier's on-delay: a carrier keys the node only once it has lasted `on_delay_s`
(simpleusb `rxondelay`), so a short kerchunk or a noise burst on COS does not.

Sans-I/O: `carrier(active, now)` and `timer(now)` return the new open state when it changes.
"""

from __future__ import annotations

__all__ = ["Squelch"]


class Squelch:
    def __init__(self, on_delay_s: float) -> None:
        self.on_delay_s = on_delay_s
        #: The carrier is present now (after `carrier_invert`).
        self.carrier_present = False
        #: The squelch is open: the carrier has lasted the on-delay and not dropped since.
        self.open = False
        self._open_at: float | None = None

    def carrier(self, active: bool, now: float) -> bool | None:
        self.carrier_present = active
        if not active:
            self._open_at = None
            if self.open:
                self.open = False
                return False
            return None
        if self.open or self._open_at is not None:
            return None
        if self.on_delay_s <= 0:
            self.open = True
            return True
        self._open_at = now + self.on_delay_s
        return None

    def next_deadline(self) -> float | None:
        return self._open_at

    def timer(self, now: float) -> bool | None:
        if self._open_at is not None and now >= self._open_at:
            self._open_at = None
            self.open = True
            return True
        return None
