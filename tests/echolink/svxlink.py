"""SvxLink (Debian `svxlink-server`) as a headless EchoLink station for the tests, as
research/echolink.md runs it: its own 127.0.x.y (EchoLink's UDP ports are fixed), a UDP audio
device the test feeds and records (16 kHz, mono, native-endian S16), the squelch on a PTY (`O`
opens, `Z` closes), DTMF on a PTY (`<node>#` connects, `#` disconnects, while the squelch is
closed), GSM only, the directory stand-in as its server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from tests.node_process import free_ports

__all__ = ["TX_BLOCK", "SvxLink", "TxRecorder"]

#: 20 ms of its audio device's samples.
TX_BLOCK = 320

SVXLINK = "/usr/bin/svxlink"
#: Its audio device's rate (CARD_SAMPLE_RATE).
RATE = 16000


# The stock event script, with the tones that would land in a tone test muted: the 1 kHz
# "remote station stopped talking" beep and the roger beep.
_EVENTS = """
set script_path /usr/share/svxlink/events.tcl
source /usr/share/svxlink/events.tcl
namespace eval Logic {
  proc send_rgr_sound {} {}
  proc squelch_open {rx_id is_open} {}
}
namespace eval EchoLink {
  proc remote_timeout {} {}
  proc squelch_open {is_open} {}
}
"""


class SvxLink:
    """One SvxLink process; `start()` returns once it is logged in to the directory."""

    def __init__(
        self,
        workdir: Path,
        *,
        ip: str,
        callsign: str,
        password: str,
        directory_host: str,
        allow_ip: str | None = None,
    ) -> None:
        self.dir = workdir
        self.ip = ip
        self.callsign = callsign
        # We send audio to the first (its receiver); it sends its transmitter's to the second.
        self.rx_port, self.tx_port = free_ports(2)
        self.sql_pty = workdir / "sql"
        self.dtmf_pty = workdir / "dtmf"
        self.log = workdir / "svxlink.log"
        self.proc: subprocess.Popen[bytes] | None = None
        cfg = workdir / "svxlink.d"
        cfg.mkdir(parents=True, exist_ok=True)
        (workdir / "events.tcl").write_text(_EVENTS)
        (workdir / "svxlink.conf").write_text(
            f"""[GLOBAL]
LOGICS=SimplexLogic
CFG_DIR={cfg}
TIMESTAMP_FORMAT="%s.%f"
CARD_SAMPLE_RATE={RATE}
CARD_CHANNELS=1

[SimplexLogic]
TYPE=Simplex
RX=Rx1
TX=Tx1
MODULES=ModuleEchoLink
CALLSIGN={callsign.split("-")[0]}
EVENT_HANDLER={workdir}/events.tcl
DEFAULT_LANG=en_US
RGR_SOUND_DELAY=-1
DTMF_CTRL_PTY={self.dtmf_pty}
ACTIVATE_MODULE_ON_LONG_CMD=4:EchoLink

[Rx1]
TYPE=Local
AUDIO_DEV=udp:127.0.0.1:{self.rx_port}
AUDIO_CHANNEL=0
SQL_DET=PTY
PTY_PATH={self.sql_pty}
SQL_START_DELAY=0
SQL_DELAY=0
SQL_HANGTIME=0
DTMF_DEC_TYPE=INTERNAL
DTMF_MUTING=1
DEEMPHASIS=0

[Tx1]
TYPE=Local
AUDIO_DEV=udp:127.0.0.1:{self.tx_port}
AUDIO_CHANNEL=0
PTT_TYPE=NONE
TIMEOUT=300
TX_DELAY=0
PREEMPHASIS=0
"""
        )
        allow = f"ALLOW_IP={allow_ip}\n" if allow_ip else ""
        (cfg / "ModuleEchoLink.conf").write_text(
            f"""[ModuleEchoLink]
NAME=EchoLink
ID=2
TIMEOUT=0
SERVERS={directory_host}
CALLSIGN={callsign}
PASSWORD={password}
SYSOPNAME=Svx Test
LOCATION=Loopback
MAX_QSOS=10
MAX_CONNECTIONS=11
LINK_IDLE_TIMEOUT=0
BIND_ADDR={ip}
USE_GSM_ONLY=1
{allow}DESCRIPTION="SvxLink under test\\n"
"""
        )

    def start(self) -> None:
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                # Line-buffered: the tests read the log as it happens.
                ["stdbuf", "-oL", "-eL", SVXLINK, f"--config={self.dir / 'svxlink.conf'}"],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,
            )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"svxlink exited: {self.text()}")
            # Ready once its directory login went through (it dials nobody before).
            if self.sql_pty.exists() and "EchoLink directory status changed to ON" in self.text():
                return
            time.sleep(0.05)
        raise RuntimeError(f"svxlink did not start: {self.text()}")

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_log(self, needle: str, timeout: float = 10.0, since: int = 0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text()[since:]:
                return True
            time.sleep(0.05)
        return False

    def _write_pty(self, path: Path, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def squelch(self, open_: bool) -> None:
        self._write_pty(self.sql_pty, b"O" if open_ else b"Z")

    def dtmf(self, digits: str) -> None:
        self._write_pty(self.dtmf_pty, digits.encode())

    def talk(self, pcm: np.ndarray) -> None:
        """Open the squelch, feed `pcm` (int16 at `RATE`) to its receiver in real time, 20 ms a
        datagram, close the squelch."""
        self.squelch(True)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            start = time.monotonic()
            for i in range(0, len(pcm), TX_BLOCK):
                block = np.ascontiguousarray(pcm[i : i + TX_BLOCK], dtype=np.int16)
                out.sendto(block.tobytes(), ("127.0.0.1", self.rx_port))
                ahead = start + (i + TX_BLOCK) / RATE - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
        self.squelch(False)

    def recorder(self) -> TxRecorder:
        """What its transmitter sends, from now on."""
        return TxRecorder(self.tx_port)

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        # SIGTERM with a QSO up makes 19.09 crash on its way out (harmless); wait either way.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


class TxRecorder:
    """Collects what SvxLink's transmitter sends (int16 at `RATE`), in a thread."""

    def __init__(self, port: int) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", port))
        self._sock.settimeout(0.1)
        self._chunks: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._chunks.append(data)

    def pcm(self) -> np.ndarray:
        with self._lock:
            return np.frombuffer(b"".join(self._chunks), dtype=np.int16).copy()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()

    def __enter__(self) -> TxRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def available() -> bool:
    return shutil.which(SVXLINK) is not None or Path(SVXLINK).exists()
