"""The transmitter's PTT line: one small interface, one class per backend.

`open_ptt(config)` opens the configured line released; `set(True)` keys it, `set(False)`
releases it, `close()` releases it and lets the device go. `release_ptt(config)` is
`node ptt-release`: open, release, close, for the service manager after the daemon died.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from node.config import RadioConfig
from node.errors import RadioError
from node.radio.cm108 import Cm108, output_report
from node.radio.lines import GpioLine, SerialLines

__all__ = ["Cm108Ptt", "GpioPtt", "NullPtt", "PttLine", "SerialPtt", "open_ptt", "release_ptt"]

#: The PTT pin of each backend when `ptt_pin` is unset (simpleusb keys GPIO3).
DEFAULT_CM108_GPIO = 3
DEFAULT_SERIAL_LINE = "rts"


class PttLine(Protocol):
    """A transmitter's PTT."""

    #: The backend's name as the config spells it.
    backend: str

    def set(self, keyed: bool) -> None: ...

    def close(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class NullPtt:
    """`ptt = "none"`: no transmitter to key."""

    backend = "none"

    def set(self, keyed: bool) -> None:
        pass

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend}


class _Device(Protocol):
    path: str

    def close(self) -> None: ...


class _PinPtt:
    """A PTT on one pin of a device: released before the device is let go."""

    backend = ""

    def __init__(self, device: _Device, pin: int | str, invert: bool = False) -> None:
        self.device, self.pin, self.invert = device, pin, invert

    def set(self, keyed: bool) -> None:
        raise NotImplementedError

    def close(self) -> None:
        try:
            self.set(False)
        finally:
            self.device.close()

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "device": self.device.path, "pin": self.pin}


class Cm108Ptt(_PinPtt):
    """A CM108/CM119 GPIO pin (GPIO3 by default), driven high to key (low with `invert`)."""

    backend = "cm108"
    device: Cm108
    pin: int

    def set(self, keyed: bool) -> None:
        self.device.write(output_report(self.pin, keyed != self.invert))


class SerialPtt(_PinPtt):
    """A serial port's RTS or DTR, set to key (cleared with `invert`)."""

    backend = "serial"
    device: SerialLines
    pin: str

    def set(self, keyed: bool) -> None:
        self.device.set_line(self.pin, keyed != self.invert)


class GpioPtt(_PinPtt):
    """A GPIO line, active high to key (active low with `invert`, the kernel's inversion)."""

    backend = "gpio"
    device: GpioLine

    def __init__(self, line: GpioLine) -> None:
        super().__init__(line, line.line)

    def set(self, keyed: bool) -> None:
        self.device.set(keyed)


def open_ptt(
    cfg: RadioConfig, cm108: Cm108 | None = None, *, gpiod: Any = None, release: bool = True
) -> PttLine:
    """The configured PTT, opened, and released unless `release` is false. `cm108` is the
    interface's hidraw node when the carrier detector shares it. Raises RadioError naming the
    device."""
    if cfg.ptt == "cm108":
        gpio = cfg.ptt_pin if isinstance(cfg.ptt_pin, int) else DEFAULT_CM108_GPIO
        ptt: PttLine = Cm108Ptt(cm108 or Cm108(cfg.ptt_device), gpio, cfg.ptt_invert)
    elif cfg.ptt == "serial":
        line = cfg.ptt_pin if isinstance(cfg.ptt_pin, str) else DEFAULT_SERIAL_LINE
        lines = SerialLines(cfg.ptt_device, keep_on_close=cfg.ptt_invert)
        ptt = SerialPtt(lines, line, cfg.ptt_invert)
    elif cfg.ptt == "gpio":
        assert cfg.ptt_pin is not None  # the loader requires it
        gpio_line = GpioLine(
            cfg.ptt_device, cfg.ptt_pin, output=True, invert=cfg.ptt_invert, gpiod=gpiod
        )
        ptt = GpioPtt(gpio_line)
    else:
        return NullPtt()
    if not release:
        return ptt
    try:
        ptt.set(False)
    except BaseException:
        with contextlib.suppress(RadioError):
            ptt.close()
        raise
    return ptt


def release_ptt(cfg: RadioConfig, *, gpiod: Any = None) -> PttLine:
    """Force the configured PTT off and let it go (after a crash: `node ptt-release`): one
    write of the released level."""
    ptt = open_ptt(cfg, gpiod=gpiod, release=False)
    ptt.close()
    return ptt
