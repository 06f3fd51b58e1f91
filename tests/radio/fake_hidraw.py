"""A hidraw node faked at the OS boundary: a pseudo-terminal in raw mode.

The node opens the pty's slave path exactly as it opens `/dev/hidrawN` (a character device,
read-write, non-blocking), writes its output reports to it and reads input reports from it. The
test holds the master side: every byte the node writes is recorded in order (5-byte CM108 GPIO
reports), and `send_input` feeds a 4-byte input report as the interface does when a pin moves.
A pty is a byte stream where hidraw keeps report boundaries; the reports here have fixed
lengths, so nothing is lost. The slave stays open in the test (raw mode set on it) so the fake
device outlives the node using it, as the real one outlives a killed daemon.
"""

from __future__ import annotations

import os
import pty
import select
import time
import tty

#: One CM108 output report as written to hidraw (report ID + 4 bytes).
OUTPUT_REPORT_LEN = 5
KEY_GPIO3 = bytes.fromhex("0000040400")
UNKEY_GPIO3 = bytes.fromhex("0000000400")


class FakeHidraw:
    def __init__(self) -> None:
        self.master, self._slave = pty.openpty()
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        os.set_blocking(self.master, False)
        self._written = b""

    def written(self) -> bytes:
        """Everything the node wrote so far."""
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._written += chunk
        return self._written

    def reports(self) -> list[bytes]:
        data = self.written()
        assert len(data) % OUTPUT_REPORT_LEN == 0, data.hex()
        return [data[i : i + OUTPUT_REPORT_LEN] for i in range(0, len(data), OUTPUT_REPORT_LEN)]

    def wait_reports(self, n: int, timeout: float = 15.0) -> list[bytes]:
        """The reports once there are at least `n` of them."""
        deadline = time.monotonic() + timeout
        while len(self.reports()) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"waited for {n} reports, got {self.reports()}")
            time.sleep(0.02)
        return self.reports()

    def send_input(self, buttons: int = 0, gpio: int = 0) -> None:
        """An input report: byte 0 the buttons (0x02 volume down), byte 1 the GPIO inputs."""
        os.write(self.master, bytes((buttons, gpio, 0, 0)))

    def close(self) -> None:
        os.close(self.master)
        os.close(self._slave)

    def __enter__(self) -> FakeHidraw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
