"""The radio edge on the asyncio loop: the PTT line, the carrier detector and their timing.

The controller owns one `Radio` and is its only caller: it passes on the engine's `local_tx`
edges (the conference has audio for the local radio) and `vox` edges, and receives PTT changes
and squelch changes through the callbacks given to `start`. A squelch change is not keying: the
controller keys the local source on it through `Controller.key`, behind the D-Star guard, as
POST /key does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from node.config import RadioConfig, UsrpConfig
from node.errors import RadioError
from node.loop_timer import DeadlineTimer
from node.radio.carrier import CarrierInput, open_carrier
from node.radio.cm108 import Cm108
from node.radio.ptt import PttLine, open_ptt
from node.radio.squelch import Squelch
from node.radio.transmitter import PttChange, Transmitter
from node.radio.usrp import UsrpPtt

__all__ = ["Radio"]

log = logging.getLogger(__name__)


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
        self._on_ptt: Callable[[PttChange], None] | None = None
        self._on_squelch: Callable[[bool], None] | None = None
        # loop.time() and the clock are both CLOCK_MONOTONIC.
        self._timer = DeadlineTimer(self._on_timer)
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

    def start(
        self, on_ptt: Callable[[PttChange], None], on_squelch: Callable[[bool], None]
    ) -> None:
        self._on_ptt, self._on_squelch = on_ptt, on_squelch
        if self.carrier is not None:
            self.carrier.start(asyncio.get_running_loop(), self.carrier_changed)

    def now(self) -> float:
        return self._clock()

    # --- inputs ------------------------------------------------------------------------------

    def tx_demand(self, on: bool) -> None:
        """The engine's `local_tx` edge."""
        if self._closed:
            return
        if self.ptt.backend == "none":
            # No transmitter: nothing keys, nothing is timed, no event; the snapshot still
            # shows whether the conference has audio for the radio.
            self.transmitter.demanded = on
            return
        self._ptt(self.transmitter.demand(on, self.now()))
        self._arm()

    def carrier_changed(self, active: bool) -> None:
        """A hardware detector's edge, or VOX's (`vox_changed`)."""
        if self._closed:
            return
        self._squelch(self.squelch.carrier(active, self.now()))
        self._arm()

    def vox_changed(self, open: bool) -> None:
        """The engine's `vox` edge: the carrier when `carrier = "vox"`."""
        if self.cfg.carrier == "vox":
            self.carrier_changed(open)

    def _on_timer(self) -> None:
        now = self.now()
        self._squelch(self.squelch.timer(now))
        self._ptt(self.transmitter.timer(now))
        self._arm()

    # --- outputs -----------------------------------------------------------------------------

    def _ptt(self, change: PttChange | None) -> None:
        if change is None:
            return
        try:
            self.ptt.set(change.keyed)
        except RadioError as exc:
            log.error("PTT: %s", exc)
        if change.timed_out:
            self.timeouts += 1
        if self._on_ptt is not None:
            self._on_ptt(change)

    def _squelch(self, opened: bool | None) -> None:
        if opened is not None and self._on_squelch is not None:
            self._on_squelch(opened)

    def _arm(self) -> None:
        deadlines = [
            d for d in (self.transmitter.next_deadline(), self.squelch.next_deadline()) if d
        ]
        self._timer.arm(min(deadlines) if deadlines else None)

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

    def close(self, reason: str = "node shutting down") -> None:
        """Release the PTT (whatever else fails) and let the devices go. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._timer.cancel()
        change = self.transmitter.release(reason)
        try:
            if self.carrier is not None:
                self.carrier.close()
        except Exception:
            log.exception("closing the carrier detector failed")
        finally:
            # The line goes released whatever the state machine thought or the detector did.
            self.ptt.close()
        if change is not None and self._on_ptt is not None:
            self._on_ptt(change)
