"""The CM108/CM119 USB audio chip's GPIO and button pins, over the kernel's hidraw node.

The chip has no HID report IDs, so a write to `/dev/hidrawN` is a zero report ID followed by the
chip's 4-byte output report (CM108 datasheet, "HID output report"):

    byte 0  report ID 0
    byte 1  HID_OR0: 0 (the report addresses the GPIOs)
    byte 2  HID_OR1: GPIO output data, bit n-1 = GPIOn (1 = high)
    byte 3  HID_OR2: GPIO direction, bit n-1 = GPIOn (1 = output)
    byte 4  HID_OR3: 0

This is what ASL3's chan_simpleusb sends by USB SET_REPORT (its buffer with `hid_gpio_loc = 1`,
`hid_gpio_ctl_loc = 2`), what Dire Wolf writes to hidraw (5 bytes; 4 fail with EPIPE) and what
SvxLink's hidraw PTT writes. Keying GPIO3, the usual PTT pin, writes `00 00 04 04 00`; unkeying
writes `00 00 00 04 00`.

A read returns one 4-byte input report: byte 0 holds the buttons (bit 0 volume up, bit 1 volume
down, bit 2 playback mute, bit 3 record mute; a bit is 1 while its pin is pulled low, i.e. the
button is pressed), byte 1 the GPIO inputs (bit n-1 = GPIOn). USB radio interfaces wire the
receiver's COS to volume down (simpleusb `carrierfrom = usb`) and a CTCSS decoder to volume up.
"""

from __future__ import annotations

import os

from node.errors import RadioError
from node.radio.lines import open_device

__all__ = ["BUTTONS", "INPUT_REPORT_LEN", "Cm108", "input_active", "output_report"]

#: Button pins and their bit in byte 0 of the input report.
BUTTONS = {"vol_up": 0x01, "vol_down": 0x02, "mute_play": 0x04, "mute_rec": 0x08}

#: Length of one input report.
INPUT_REPORT_LEN = 4


def _gpio_bit(gpio: int) -> int:
    if not 1 <= gpio <= 8:
        raise ValueError(f"CM108 GPIO {gpio} does not exist (accepted: 1-8)")
    return 1 << (gpio - 1)


def output_report(gpio: int, high: bool) -> bytes:
    """The hidraw write that makes `gpio` (1-8) an output driven high or low; the other GPIOs
    are left inputs."""
    bit = _gpio_bit(gpio)
    return bytes((0, 0, bit if high else 0, bit, 0))


def input_active(report: bytes, pin: int | str) -> bool:
    """Whether `pin` (a button name of `BUTTONS`, or GPIO number 1-8) is set in an input
    report."""
    if isinstance(pin, str):
        return bool(report[0] & BUTTONS[pin])
    return bool(report[1] & _gpio_bit(pin))


class Cm108:
    """One CM108-style interface's hidraw node, opened once for its PTT and its COS."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = open_device(
            path,
            "CM108 hidraw node",
            "give the interface's hidraw node to the node's user (packaging/udev/"
            "90-iax-node-cm108.rules puts C-Media hidraw nodes in group plugdev)",
        )
        self._partial = b""

    def fileno(self) -> int:
        return self._fd

    def write(self, report: bytes) -> None:
        try:
            written = os.write(self._fd, report)
        except OSError as exc:
            raise RadioError(
                f"CM108 {self.path}: writing the GPIO report failed: {exc.strerror}"
            ) from None
        if written != len(report):
            raise RadioError(f"CM108 {self.path}: the GPIO report was cut short ({written} bytes)")

    def read_reports(self) -> list[bytes]:
        """The input reports waiting (none when nothing is). A hidraw read is one whole report;
        pieces are joined so a byte-stream fake behaves the same."""
        data = self._partial
        while True:
            try:
                chunk = os.read(self._fd, 64)
            except BlockingIOError:
                break
            except OSError as exc:
                raise RadioError(
                    f"CM108 {self.path}: reading input reports failed: {exc.strerror}"
                ) from None
            if not chunk:
                break
            data += chunk
        whole = len(data) - len(data) % INPUT_REPORT_LEN
        self._partial = data[whole:]
        return [data[i : i + INPUT_REPORT_LEN] for i in range(0, whole, INPUT_REPORT_LEN)]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
