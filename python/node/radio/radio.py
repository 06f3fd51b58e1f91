"""The radio edge on the asyncio loop: the PTT line, the carrier detector and their timing.

The transmit service drives one `Radio` and is its only caller: it passes on the engine's
`local_tx` edges (the conference has audio for the local radio) and `vox` edges, and the carrier
detector's edges the router receives (`start` names where they go); every input returns the
`RadioChange` it caused (a PTT change, the squelch opening or closing). A squelch change is not
keying: the transmit service keys the local source on it, behind the D-Star guard, as POST /key
does. The hang time, the TX time-out and the carrier's on-delay are deadlines of the router's
table (`next_deadline`, `timer`); only the carrier detector's own device polling keeps a loop
timer of its own (the hardware edge, `carrier.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from node.config import RadioConfig, UsrpConfig
from node.errors import RadioError
from node.radio.carrier import CarrierInput, open_carrier
from node.radio.cm108 import Cm108
from node.radio.ptt import PttLine, open_ptt
from node.radio.squelch import Squelch
from node.radio.transmitter import PttChange, Transmitter
from node.radio.usrp import UsrpPtt

__all__ = ["NO_CHANGE", "Radio", "RadioChange"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RadioChange:
    """What one input to the radio changed: the transmitter (`ptt`) and the squelch (`squelch`:
    True opened, False closed); None: unchanged."""

    ptt: PttChange | None = None
    squelch: bool | None = None


NO_CHANGE = RadioChange()


class Radio:
    """PTT, carrier detect, hang time, TX time-out and the carrier's on-delay."""

    def __init__(
        self,
        cfg: RadioConfig,
        tx_timeout_s: float,
        ptt: PttLine,
        carrier: CarrierInput | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg, self.ptt, self.carrier = cfg, ptt, carrier
        self.transmitter = Transmitter(cfg.hang_time_ms / 1000, tx_timeout_s)
        self.squelch = Squelch(cfg.rx_on_delay_ms / 1000)
        #: TX time-outs of the transmitter since start.
        self.timeouts = 0
        self._clock = clock
        self._closed = False

    @classmethod
    def open(
        cls,
        cfg: RadioConfig,
        tx_timeout_s: float,
        *,
        gpiod: Any = None,
        usrp: UsrpConfig | None = None,
    ) -> Radio:
        """Open the configured hardware, PTT released. RadioError names what failed. With a
        USRP radio (`usrp`), its keyup bit is the PTT and its keyup voice the carrier."""
        if usrp is not None:
            return cls(cfg, tx_timeout_s, UsrpPtt(usrp.network), None)
        shared = None
        if cfg.ptt == "cm108" and cfg.carrier == "cm108" and cfg.carrier_device == cfg.ptt_device:
            shared = Cm108(cfg.ptt_device)
        ptt = open_ptt(cfg, shared, gpiod=gpiod)
        try:
            carrier = open_carrier(cfg, shared, gpiod=gpiod)
        except BaseException:
            ptt.close()
            raise
        return cls(cfg, tx_timeout_s, ptt, carrier)

    @property
    def gated(self) -> bool:
        """The receiver has a carrier detector: its audio counts only while the squelch is open."""
        return self.cfg.carrier != "none" or self.usrp

    @property
    def usrp(self) -> bool:
        """The radio is a USRP stream (its PTT and carrier are the keyup bit)."""
        return self.ptt.backend == "usrp"

    @property
    def vox(self) -> tuple[float, int, int] | None:
        """VOX settings for the device edge (threshold dBFS, attack ms, release ms)."""
        c = self.cfg
        if c.carrier != "vox":
            return None
        return (c.vox_threshold_db, c.vox_attack_ms, c.vox_release_ms)

    def start(self, on_carrier: Callable[[bool], None]) -> None:
        """Start the carrier detector: its edges go to `on_carrier` (the router, which hands
        them to the transmit service's `carrier_changed`)."""
        if self.carrier is not None:
            self.carrier.start(asyncio.get_running_loop(), on_carrier)

    def now(self) -> float:
        return self._clock()

    # --- inputs ------------------------------------------------------------------------------

    def tx_demand(self, on: bool) -> RadioChange:
        """The engine's `local_tx` edge."""
        if self._closed:
            return NO_CHANGE
        if self.ptt.backend == "none":
            # No transmitter: nothing keys, nothing is timed, no event; the snapshot still
            # shows whether the conference has audio for the radio.
            self.transmitter.demanded = on
            return NO_CHANGE
        return RadioChange(ptt=self._ptt(self.transmitter.demand(on, self.now())))

    def carrier_changed(self, active: bool) -> RadioChange:
        """A hardware detector's edge, or VOX's (`vox_changed`)."""
        if self._closed:
            return NO_CHANGE
        return RadioChange(squelch=self.squelch.carrier(active, self.now()))

    def vox_changed(self, open: bool) -> RadioChange:
        """The engine's `vox` edge: the carrier when `carrier = "vox"`."""
        if self.cfg.carrier == "vox":
            return self.carrier_changed(open)
        return NO_CHANGE

    def next_deadline(self) -> float | None:
        """The next hang-time, time-out or on-delay deadline (None: none pending)."""
        if self._closed:
            return None
        deadlines = [
            d for d in (self.transmitter.next_deadline(), self.squelch.next_deadline()) if d
        ]
        return min(deadlines) if deadlines else None

    def timer(self, now: float) -> RadioChange:
        if self._closed:
            return NO_CHANGE
        squelch = self.squelch.timer(now)
        return RadioChange(ptt=self._ptt(self.transmitter.timer(now)), squelch=squelch)

    # --- outputs -----------------------------------------------------------------------------

    def _ptt(self, change: PttChange | None) -> PttChange | None:
        if change is None:
            return None
        try:
            self.ptt.set(change.keyed)
        except RadioError as exc:
            log.error("PTT: %s", exc)
        if change.timed_out:
            self.timeouts += 1
        return change

    # --- status and shutdown -----------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The snapshot's `radio` object."""
        now, tx = self.now(), self.transmitter
        remaining = tx.timeout_remaining(now)
        carrier = (
            self.carrier.describe()
            if self.carrier is not None
            else {"backend": "usrp" if self.usrp else self.cfg.carrier}
        )
        return {
            "ptt": {
                **self.ptt.describe(),
                "keyed": tx.keyed,
                "hang_ms": self.cfg.hang_time_ms,
                "timeout_s": tx.timeout_s,
                "timeout_remaining_s": None if remaining is None else round(remaining, 1),
                "timed_out": tx.timed_out,
                "timeouts": self.timeouts,
            },
            "tx_audio": tx.demanded,
            "carrier": {
                **carrier,
                "present": self.squelch.carrier_present,
                "open": self.squelch.open,
                "rx_on_delay_ms": self.cfg.rx_on_delay_ms,
                "rx_audio_delay_ms": self.cfg.rx_audio_delay_ms,
            },
        }

    def close(self, reason: str = "node shutting down") -> PttChange | None:
        """Release the PTT (whatever else fails) and let the devices go; the release, if the
        transmitter was keyed. Idempotent."""
        if self._closed:
            return None
        self._closed = True
        change = self.transmitter.release(reason)
        try:
            if self.carrier is not None:
                self.carrier.close()
        except Exception:
            log.exception("closing the carrier detector failed")
        finally:
            # The line goes released whatever the state machine thought or the detector did.
            self.ptt.close()
        return change
