"""Run Debian's iaxmodem (libiax2) as an independent IAX2 peer, driven by AT commands on its pty.

iaxmodem reads its config from /etc/iaxmodem/<name>; a name that climbs out of that directory
reaches a file anywhere, so tests write their own config to a temporary directory and need no
system file. `server` takes host:port, which points its registration and outbound calls at the
node under test on loopback.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
import tty
from pathlib import Path

__all__ = ["IaxModem"]

#: Makes iaxmodem's stdout line-buffered; block-buffered, its log reaches the file only at exit.
LIBSTDBUF = Path("/usr/libexec/coreutils/libstdbuf.so")


class IaxModem:
    """One iaxmodem process on loopback."""

    def __init__(
        self,
        workdir: Path,
        *,
        port: int,
        server: str = "127.0.0.1:4569",
        peername: str = "iaxmodem",
        secret: str = "",
        codec: str = "ulaw",
        refresh: int = 0,
        cidnumber: str = "5550100",
        cidname: str = "Lab Modem",
    ) -> None:
        self.workdir = workdir
        self.port = port
        # iaxmodem silently truncates a long `device` path (pytest's tmp_path is long enough),
        # so the pty link lives in a short directory of its own.
        self._devdir = Path(tempfile.mkdtemp(prefix="iaxm", dir="/tmp"))
        self.device = self._devdir / "tty"
        self.config = workdir / "iaxmodem.cfg"
        lines = {
            "device": str(self.device),
            "owner": "root:root",
            "mode": "660",
            "port": str(port),
            "refresh": str(refresh),
            "server": server,
            "peername": peername,
            "secret": secret,
            "cidname": cidname,
            "cidnumber": cidnumber,
            "codec": codec,
        }
        self.config.write_text(
            "".join(f"{k}\t\t{v}\n" for k, v in lines.items() if v) + "iax2debug\n"
        )
        self.proc: subprocess.Popen[str] | None = None
        self._fd: int | None = None
        self.log_path = workdir / "iaxmodem.log"

    def start(self, timeout: float = 10.0) -> None:
        relative = "../../.." + str(self.config.resolve())
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            ["iaxmodem", relative], stdout=self._log, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + timeout
        while not self.device.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"iaxmodem did not create its pty:\n{self.log()}")
            time.sleep(0.05)
        self._fd = os.open(self.device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        # Raw mode: with the line discipline's echo on, everything iaxmodem writes comes back
        # to it as input, and it keeps answering its own "OK" lines as AT commands.
        tty.setraw(self._fd)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def at(self, command: str, expect: str = "OK", timeout: float = 10.0) -> str:
        """Send an AT command; return everything read until `expect` appears."""
        self.write(command + "\r")
        return self.read_until(expect, timeout)

    def write(self, text: str) -> None:
        assert self._fd is not None
        os.write(self._fd, text.encode())

    def read_until(self, expect: str, timeout: float = 10.0) -> str:
        assert self._fd is not None
        buf = ""
        deadline = time.monotonic() + timeout
        while expect not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"iaxmodem did not say {expect!r}; got {buf!r}\n{self.log()[-3000:]}"
                )
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                try:
                    buf += os.read(self._fd, 4096).decode(errors="replace")
                except BlockingIOError:
                    continue
        return buf

    def stop(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if getattr(self, "_log", None) is not None:
            self._log.close()
        shutil.rmtree(self._devdir, ignore_errors=True)

    def __enter__(self) -> IaxModem:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
