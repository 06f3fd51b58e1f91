"""Serial and GPIO lines at their OS boundary (node.radio.lines, and the PTT / carrier classes
over them).

Serial: a pseudo-terminal is the serial device here, but the kernel's pty driver has no
modem-control lines (TIOCMGET/TIOCMBIS fail with ENOTTY), so on a pty we can assert only that
the port opens and that the missing lines are a clear error. What the node asks of the lines
(which TIOCM bit, set or clear, inverted or not) is checked at the ioctl boundary with a
recorder standing in for the UART; HUPCL handling is checked on the pty's real termios.

GPIO: gpio-sim (a kernel module with configfs) is not available on this machine, so the gpiod
backend runs against a fake chip at `gpiod.request_lines`, the one call that opens the
character device; the settings it is given are the real gpiod types.
"""

from __future__ import annotations

import asyncio
import os
import pty
import struct
import termios
import tty
from typing import Any

import gpiod
import pytest
from gpiod.line import Direction, Edge, Value

from node.config import RadioConfig
from node.errors import RadioError
from node.radio.carrier import open_carrier
from node.radio.lines import SerialLines
from node.radio.ptt import open_ptt


@pytest.fixture
def pty_port() -> Any:
    master, slave = pty.openpty()
    tty.setraw(slave)
    yield os.ttyname(slave)
    os.close(master)
    os.close(slave)


def test_a_pty_has_no_modem_lines_and_the_node_says_so(pty_port: str) -> None:
    cfg = RadioConfig(ptt="serial", ptt_device=pty_port)
    with pytest.raises(RadioError, match=r"clearing RTS failed: Inappropriate ioctl .*modem"):
        open_ptt(cfg)
    lines = SerialLines(pty_port)
    with pytest.raises(RadioError, match="reading the modem lines failed"):
        lines.get_line("cd")
    lines.close()


def test_an_inverted_serial_ptt_clears_hupcl_so_close_does_not_key(pty_port: str) -> None:
    # A UART has HUPCL set by default (a pty does not): set it as the port would have it.
    fd = os.open(pty_port, os.O_RDWR | os.O_NOCTTY)
    attrs = termios.tcgetattr(fd)
    attrs[2] |= termios.HUPCL
    termios.tcsetattr(fd, termios.TCSANOW, attrs)
    os.close(fd)
    plain = SerialLines(pty_port)
    assert termios.tcgetattr(plain._fd)[2] & termios.HUPCL
    plain.close()
    kept = SerialLines(pty_port, keep_on_close=True)
    assert not termios.tcgetattr(kept._fd)[2] & termios.HUPCL
    kept.close()


class Uart:
    """Records the TIOCM ioctls and answers TIOCMGET with `status`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.status = 0

    def __call__(self, fd: int, request: int, arg: bytes) -> bytes:
        (bits,) = struct.unpack("i", arg)
        name = {termios.TIOCMBIS: "set", termios.TIOCMBIC: "clear", termios.TIOCMGET: "get"}
        self.calls.append((name[request], bits))
        return struct.pack("i", self.status if request == termios.TIOCMGET else bits)


@pytest.mark.parametrize(
    ("pin", "invert", "key", "unkey"),
    [
        ("rts", False, ("set", termios.TIOCM_RTS), ("clear", termios.TIOCM_RTS)),
        ("dtr", False, ("set", termios.TIOCM_DTR), ("clear", termios.TIOCM_DTR)),
        ("rts", True, ("clear", termios.TIOCM_RTS), ("set", termios.TIOCM_RTS)),
    ],
)
def test_serial_ptt_sets_and_clears_its_line(
    pty_port: str, pin: str, invert: bool, key: tuple[str, int], unkey: tuple[str, int]
) -> None:
    from node.radio.ptt import SerialPtt

    uart = Uart()
    ptt = SerialPtt(SerialLines(pty_port, ioctl=uart), pin, invert)
    ptt.set(True)
    ptt.close()
    assert uart.calls == [key, unkey]


def test_serial_carrier_reads_its_line_with_inversion(pty_port: str) -> None:
    from node.radio.carrier import SerialCarrier

    async def scenario() -> list[bool]:
        uart = Uart()
        seen: list[bool] = []
        carrier = SerialCarrier(SerialLines(pty_port, ioctl=uart), "cd", invert=True)
        uart.status = termios.TIOCM_CAR  # CD asserted: with the inversion, no carrier
        carrier.start(asyncio.get_running_loop(), seen.append)
        await asyncio.sleep(0.1)
        uart.status = termios.TIOCM_CTS  # CD dropped: carrier
        await asyncio.sleep(0.1)
        carrier.close()
        assert all(call == ("get", 0) for call in uart.calls)
        return seen

    assert asyncio.run(scenario()) == [True]


class FakeRequest:
    """A line request as gpiod returns it; `fd` is a pipe the test writes to as an edge."""

    def __init__(self, path: str, config: dict[Any, gpiod.LineSettings], consumer: str) -> None:
        self.path, self.consumer = path, consumer
        ((self.line, self.settings),) = config.items()
        self.values: list[Value] = []
        self.level = Value.INACTIVE
        self._r, self._w = os.pipe()
        self.released = False

    @property
    def fd(self) -> int:
        return self._r

    def set_value(self, line: int | str, value: Value) -> None:
        assert line == self.line
        self.values.append(value)

    def get_value(self, line: int | str) -> Value:
        return self.level

    def wait_edge_events(self, timeout: float) -> bool:
        import select

        return bool(select.select([self._r], [], [], timeout)[0])

    def read_edge_events(self) -> list[object]:
        return [os.read(self._r, 64)]

    def edge(self, level: Value) -> None:
        self.level = level
        os.write(self._w, b"e")

    def release(self) -> None:
        self.released = True
        os.close(self._r)
        os.close(self._w)


class FakeChip:
    """`gpiod` with `request_lines` answered by FakeRequest; every other name is gpiod's."""

    def __init__(self, error: OSError | None = None) -> None:
        self.requests: list[FakeRequest] = []
        self.error = error

    def __getattr__(self, name: str) -> Any:
        return getattr(gpiod, name)

    def request_lines(self, path: str, config: dict[Any, Any], consumer: str) -> FakeRequest:
        if self.error is not None:
            raise self.error
        req = FakeRequest(path, config, consumer)
        self.requests.append(req)
        return req


def test_gpio_ptt_requests_an_output_line_and_keys_it_active() -> None:
    chip = FakeChip()
    cfg = RadioConfig(ptt="gpio", ptt_device="gpiochip0", ptt_pin=17, ptt_invert=True)
    ptt = open_ptt(cfg, gpiod=chip)
    ptt.set(True)
    ptt.close()
    (req,) = chip.requests
    assert (req.path, req.line, req.consumer) == ("/dev/gpiochip0", 17, "iax-node")
    s = req.settings
    assert s.direction == Direction.OUTPUT and s.active_low is True
    assert s.output_value == Value.INACTIVE  # requested released
    assert req.values == [Value.INACTIVE, Value.ACTIVE, Value.INACTIVE] and req.released


def test_gpio_carrier_follows_edges_on_an_input_line() -> None:
    async def scenario(chip: FakeChip) -> list[bool]:
        cfg = RadioConfig(carrier="gpio", carrier_device="/dev/gpiochip1", carrier_pin="COS")
        carrier = open_carrier(cfg, gpiod=chip)
        assert carrier is not None
        seen: list[bool] = []
        carrier.start(asyncio.get_running_loop(), seen.append)
        (req,) = chip.requests
        for level in (Value.ACTIVE, Value.INACTIVE):
            req.edge(level)
            await asyncio.sleep(0.05)
        carrier.close()
        s = req.settings
        assert (req.line, s.direction, s.edge_detection) == ("COS", Direction.INPUT, Edge.BOTH)
        return seen

    assert asyncio.run(scenario(FakeChip())) == [True, False]


def test_a_gpio_line_the_kernel_refuses_is_a_clear_error() -> None:
    chip = FakeChip(OSError(16, "Device or resource busy"))
    cfg = RadioConfig(ptt="gpio", ptt_device="gpiochip0", ptt_pin=5)
    with pytest.raises(RadioError, match=r"GPIO line 5 of /dev/gpiochip0: Device or resource busy"):
        open_ptt(cfg, gpiod=chip)
