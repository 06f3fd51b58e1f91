"""The receiver's carrier detect (COS): one class per hardware backend, read on the asyncio loop.

Each detector calls `on_change(active)` when the carrier appears or goes; `active` already
accounts for `carrier_invert`. CM108 input reports and GPIO edge events wake the loop through
their file descriptors; a serial port's modem lines cannot (TIOCMIWAIT blocks a thread), so they
are polled every 20 ms, one media frame. VOX is not here: the engine measures the received audio
and reports `VoxChanged` events, which the radio takes as its carrier.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from node.config import RadioConfig
from node.errors import RadioError
from node.radio.cm108 import Cm108, input_active
from node.radio.lines import GpioLine, SerialLines

__all__ = [
    "CarrierInput",
    "Cm108Carrier",
    "GpioCarrier",
    "SerialCarrier",
    "open_carrier",
]

log = logging.getLogger(__name__)

#: The COS pin of a CM108 interface when `carrier_pin` is unset (the usual wiring).
DEFAULT_CM108_PIN = "vol_down"

#: How often a serial port's modem lines are read.
SERIAL_POLL_S = 0.02

OnChange = Callable[[bool], None]


class CarrierInput(Protocol):
    """A hardware carrier detector."""

    backend: str

    def start(self, loop: asyncio.AbstractEventLoop, on_change: OnChange) -> None: ...

    def close(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class _Watched:
    """State shared by the detectors: the last level reported, and failure handling."""

    backend = ""

    def __init__(self) -> None:
        self._active = False
        self._on_change: OnChange | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _level(self, active: bool) -> None:
        if active != self._active:
            self._active = active
            if self._on_change is not None:
                self._on_change(active)

    def _failed(self, exc: RadioError) -> None:
        # An interface unplugged mid-transmission: its carrier is gone, not stuck on.
        log.error("carrier detect stopped: %s", exc)
        self._stop_watching()
        self._level(False)

    def _stop_watching(self) -> None:
        pass


class _FdWatched(_Watched):
    """A detector whose device wakes the loop through a file descriptor."""

    def _fileno(self) -> int:
        raise NotImplementedError

    def _levels(self) -> Iterable[bool]:
        """The levels the device reports now (RadioError when it failed)."""
        raise NotImplementedError

    def start(self, loop: asyncio.AbstractEventLoop, on_change: OnChange) -> None:
        self._loop, self._on_change = loop, on_change
        loop.add_reader(self._fileno(), self._readable)

    def _readable(self) -> None:
        try:
            levels = self._levels()
        except RadioError as exc:
            self._failed(exc)
            return
        for active in levels:
            self._level(active)

    def _stop_watching(self) -> None:
        if self._loop is not None and self._fileno() >= 0:
            self._loop.remove_reader(self._fileno())
        self._loop = None


class Cm108Carrier(_FdWatched):
    """A CM108 input pin (volume down by default) from the interface's input reports."""

    backend = "cm108"

    def __init__(self, device: Cm108, pin: int | str, invert: bool, *, owns_device: bool) -> None:
        super().__init__()
        self.device, self.pin, self.invert = device, pin, invert
        self._owns = owns_device

    def _fileno(self) -> int:
        return self.device.fileno()

    def _levels(self) -> Iterable[bool]:
        return [input_active(r, self.pin) != self.invert for r in self.device.read_reports()]

    def close(self) -> None:
        self._stop_watching()
        if self._owns:
            self.device.close()

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "device": self.device.path, "pin": self.pin}


class SerialCarrier(_Watched):
    """A serial port's CTS, DSR or CD, polled."""

    backend = "serial"

    def __init__(self, lines: SerialLines, pin: str, invert: bool) -> None:
        super().__init__()
        self.lines, self.pin, self.invert = lines, pin, invert
        self._poll: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop, on_change: OnChange) -> None:
        self._loop, self._on_change = loop, on_change
        self._read()

    def _read(self) -> None:
        self._poll = None
        try:
            active = self.lines.get_line(self.pin) != self.invert
        except RadioError as exc:
            self._failed(exc)
            return
        self._level(active)
        if self._loop is not None:
            self._poll = self._loop.call_later(SERIAL_POLL_S, self._read)

    def _stop_watching(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        self._loop = None

    def close(self) -> None:
        self._stop_watching()
        self.lines.close()

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "device": self.lines.path, "pin": self.pin}


class GpioCarrier(_FdWatched):
    """A GPIO input line with edge events (active low with `carrier_invert`)."""

    backend = "gpio"

    def __init__(self, line: GpioLine) -> None:
        super().__init__()
        self.gpio = line

    def start(self, loop: asyncio.AbstractEventLoop, on_change: OnChange) -> None:
        super().start(loop, on_change)
        self._readable()  # a carrier already present at start counts

    def _fileno(self) -> int:
        return self.gpio.fileno()

    def _levels(self) -> Iterable[bool]:
        return (self.gpio.active(),)

    def close(self) -> None:
        self._stop_watching()
        self.gpio.close()

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "device": self.gpio.path, "pin": self.gpio.line}


def open_carrier(
    cfg: RadioConfig, cm108: Cm108 | None = None, *, gpiod: Any = None
) -> CarrierInput | None:
    """The configured hardware detector (None for "none" and "vox"). `cm108` is the PTT's
    hidraw node when the detector shares it (the detector then leaves closing it to the PTT).
    Raises RadioError naming the device."""
    invert = cfg.carrier_invert
    if cfg.carrier == "cm108":
        pin = cfg.carrier_pin if cfg.carrier_pin is not None else DEFAULT_CM108_PIN
        if cm108 is not None:
            return Cm108Carrier(cm108, pin, invert, owns_device=False)
        return Cm108Carrier(Cm108(cfg.carrier_device), pin, invert, owns_device=True)
    if cfg.carrier == "serial":
        assert isinstance(cfg.carrier_pin, str)  # the loader requires one
        return SerialCarrier(SerialLines(cfg.carrier_device), cfg.carrier_pin, invert)
    if cfg.carrier == "gpio":
        assert cfg.carrier_pin is not None  # the loader requires one
        line = GpioLine(
            cfg.carrier_device, cfg.carrier_pin, output=False, invert=invert, gpiod=gpiod
        )
        return GpioCarrier(line)
    return None
