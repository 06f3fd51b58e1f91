"""Serial modem-control lines and GPIO lines: the PTT outputs and carrier inputs that are not
CM108 pins.

Serial: a port's RTS or DTR output, and its CTS, DSR or CD input, through the kernel's TIOCM
ioctls (no serial library: there is nothing to configure but the lines). GPIO: one line of a
chip through the kernel's GPIO character device, with the `gpiod` bindings (libgpiod 2.x), an
optional dependency imported only when a GPIO backend is configured. Inversion is the kernel's
own on a GPIO line (`active_low`), and ours on a serial line.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import termios
from collections.abc import Callable
from typing import Any

from node.errors import RadioError

__all__ = ["GpioLine", "SerialLines", "gpio_chip_path", "import_gpiod", "open_device"]

#: TIOCM bits of the lines `[radio] ptt_pin` and `carrier_pin` name.
SERIAL_BITS = {
    "rts": termios.TIOCM_RTS,
    "dtr": termios.TIOCM_DTR,
    "cts": termios.TIOCM_CTS,
    "dsr": termios.TIOCM_DSR,
    "cd": termios.TIOCM_CAR,
}

Ioctl = Callable[[int, int, bytes], bytes]


def open_device(path: str, what: str, permission_hint: str) -> int:
    """Open a character device read-write, non-blocking, never as a controlling terminal; a
    RadioError naming `what` and `path` (with `permission_hint` when access is denied)."""
    try:
        return os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        hint = f"; {permission_hint}" if exc.errno == errno.EACCES else ""
        raise RadioError(f"cannot open {what} {path}: {exc.strerror}{hint}") from None


def _os_ioctl(fd: int, request: int, arg: bytes) -> bytes:
    return fcntl.ioctl(fd, request, arg)


class SerialLines:
    """A serial port opened for its modem-control lines only.

    Opening a port raises RTS and DTR (the tty driver does, before we can act), so a PTT wired
    to them keys for the instant between open and the first `set`. On close the kernel drops
    both lines when HUPCL is set (the default): that releases a normal PTT even when the
    process is killed, but it would key an inverted one, so for an inverted PTT HUPCL is cleared
    and the released level stays after close.
    """

    def __init__(self, path: str, *, keep_on_close: bool = False, ioctl: Ioctl = _os_ioctl):
        self.path = path
        self._ioctl = ioctl
        self._fd = open_device(
            path, "serial port", "the node's user needs the port's group (dialout on Debian)"
        )
        if keep_on_close:
            try:
                attrs = termios.tcgetattr(self._fd)
                attrs[2] &= ~termios.HUPCL
                termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
            except termios.error as exc:
                self.close()
                raise RadioError(f"serial port {path}: cannot clear HUPCL: {exc}") from None

    def _call(self, request: int, bits: int, what: str) -> int:
        try:
            out = self._ioctl(self._fd, request, struct.pack("i", bits))
        except OSError as exc:
            raise RadioError(
                f"serial port {self.path}: {what} failed: {exc.strerror} (the device has no "
                "modem-control lines: a pseudo-terminal, or a USB serial adapter without them)"
            ) from None
        return int(struct.unpack("i", out)[0])

    def set_line(self, line: str, on: bool) -> None:
        """Set (`on`) or clear RTS or DTR."""
        request = termios.TIOCMBIS if on else termios.TIOCMBIC
        self._call(request, SERIAL_BITS[line], f"{'setting' if on else 'clearing'} {line.upper()}")

    def get_line(self, line: str) -> bool:
        """Whether CTS, DSR or CD is asserted."""
        return bool(self._call(termios.TIOCMGET, 0, "reading the modem lines") & SERIAL_BITS[line])

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def import_gpiod() -> Any:
    """The `gpiod` module (libgpiod 2.x bindings), or a RadioError saying how to get it."""
    try:
        import gpiod
    except ImportError:
        raise RadioError(
            "a GPIO backend needs the gpiod Python bindings (libgpiod 2.x): "
            "pip install 'iax-node[gpio]' in the node's venv"
        ) from None
    return gpiod


def gpio_chip_path(chip: str) -> str:
    """`gpiochip0` or `/dev/gpiochip0` as the character device's path."""
    return chip if "/" in chip else f"/dev/{chip}"


class GpioLine:
    """One GPIO line requested from the kernel: an output (PTT) or an input with edge events
    (carrier). `invert` makes the line active low, so `ACTIVE` means keyed / carrier present
    either way. `request_lines` is `gpiod.request_lines` (the chip boundary)."""

    def __init__(
        self,
        chip: str,
        line: int | str,
        *,
        output: bool,
        invert: bool,
        consumer: str = "iax-node",
        gpiod: Any = None,
    ) -> None:
        self._gpiod = gpiod if gpiod is not None else import_gpiod()
        g = self._gpiod
        self.line = line
        self.path = gpio_chip_path(chip)
        if output:
            settings = g.LineSettings(
                direction=g.line.Direction.OUTPUT,
                active_low=invert,
                output_value=g.line.Value.INACTIVE,
            )
        else:
            settings = g.LineSettings(
                direction=g.line.Direction.INPUT,
                active_low=invert,
                edge_detection=g.line.Edge.BOTH,
            )
        try:
            self._request = g.request_lines(self.path, {line: settings}, consumer=consumer)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise RadioError(
                f"cannot request GPIO line {line!r} of {self.path}: {reason}"
            ) from None

    def fileno(self) -> int:
        """Readable when edge events are waiting (an input line)."""
        return int(self._request.fd)

    def set(self, active: bool) -> None:
        v = self._gpiod.line.Value
        try:
            self._request.set_value(self.line, v.ACTIVE if active else v.INACTIVE)
        except OSError as exc:
            raise RadioError(f"GPIO line {self.line!r} of {self.path}: {exc.strerror}") from None

    def active(self) -> bool:
        """Drain waiting edge events, then read the line."""
        try:
            if self._request.wait_edge_events(0):
                self._request.read_edge_events()
            return bool(self._request.get_value(self.line) == self._gpiod.line.Value.ACTIVE)
        except OSError as exc:
            raise RadioError(f"GPIO line {self.line!r} of {self.path}: {exc.strerror}") from None

    def close(self) -> None:
        if self._request is not None:
            self._request.release()
            self._request = None
