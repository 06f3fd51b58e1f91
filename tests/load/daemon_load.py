"""The real daemon (`node serve`) under call load: start it, run `callers_proc.py`, sample it.

Shared by the end-to-end call-setup test, the hub benchmark (`benches/load_legs.py --daemon`)
and the soak (`benches/soak.py`). The daemon runs through `daemon_probe.py`, which starts a
thread that writes the process's RSS, open descriptors, Python objects and the engine's queue
depths to a JSON-lines file every few seconds, then runs `node serve` unchanged. Its log goes
to a file (a pipe nobody reads would fill and stall the daemon at ~1,000 calls).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.load.harness import cpu_seconds
from tests.node_process import free_port

HERE = Path(__file__).resolve().parent
CALLERS = HERE / "callers_proc.py"
PROBE = HERE / "daemon_probe.py"
STARTUP_S = 30.0


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    udp_port: int
    http_port: int
    workdir: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def probe_file(self) -> Path:
        return self.workdir / "probe.jsonl"

    @property
    def log_file(self) -> Path:
        return self.workdir / "node.log"

    def stats(self) -> dict[str, Any]:
        # Generous: an overloaded daemon (an older build at 1,000 calls) still gets measured.
        return httpx.get(self.base_url + "/stats", timeout=30).json()

    def status(self) -> dict[str, Any]:
        return httpx.get(self.base_url + "/status", timeout=30).json()

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def probes(self) -> list[dict[str, Any]]:
        if not self.probe_file.exists():
            return []
        return [json.loads(line) for line in self.probe_file.read_text().splitlines() if line]

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_file.read_text(errors="replace")[-chars:] if self.log_file.exists() else ""

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(5)


def start_daemon(
    max_calls: int,
    *,
    probe_every: float = 5.0,
    workdir: Path | None = None,
    calltoken: str = "auto",
    top: str = "",
    wrapper: list[str] | None = None,
    audio: str = 'backend = "none"',
    sections: str = "",
) -> Daemon:
    """`node serve` on free loopback ports: µ-law only (an 8 kHz station), no authentication,
    call tokens on (`calltoken`, "auto" unless asked), up to `max_calls` inbound calls. `top`
    adds top-level keys (`node_id = "1999"`), `audio` is the `[audio]` section's body and
    `sections` more sections; `wrapper` is a command the daemon's is appended to (it must exec
    it: e.g. one that enters a cgroup first)."""
    work = workdir or Path(tempfile.mkdtemp(prefix="iax-load-"))
    # A port picked free can be taken by a parallel test before the node binds it; the node
    # then exits naming the port in use, and it starts again on other ports.
    for attempt in range(PORT_ATTEMPTS):
        try:
            return _start_once(
                max_calls, work, probe_every, calltoken, top, wrapper, audio, sections
            )
        except PortTaken:
            if attempt == PORT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


#: Starts tried when a free port is taken before the node binds it.
PORT_ATTEMPTS = 3


class PortTaken(RuntimeError):
    """The node exited because a port it was given was taken meanwhile."""


def _start_once(
    max_calls: int,
    work: Path,
    probe_every: float,
    calltoken: str,
    top: str,
    wrapper: list[str] | None,
    audio: str,
    sections: str,
) -> Daemon:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    config = work / "node.toml"
    config.write_text(
        f"""
codec_policy = "ulaw_only"
{top}

[listener]
bind = "127.0.0.1:{udp}"
max_calls = {max_calls}
auth = "off"
calltoken = "{calltoken}"

[control]
bind = "127.0.0.1:{http}"

[audio]
{audio}
{sections}
"""
    )
    env = dict(os.environ)
    env["IAX_PROBE_FILE"] = str(work / "probe.jsonl")
    env["IAX_PROBE_EVERY"] = str(probe_every)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    log = (work / "node.log").open("wb")
    proc = subprocess.Popen(
        [*(wrapper or []), sys.executable, str(PROBE), "serve", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    log.close()
    daemon = Daemon(proc, udp, http, work)
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = daemon.log_tail()
            error = PortTaken if "in use" in tail else RuntimeError
            raise error(f"node exited with {proc.returncode}:\n{tail}")
        try:
            httpx.get(daemon.base_url + "/status", timeout=0.5)
            return daemon
        except httpx.TransportError:
            time.sleep(0.05)
    daemon.stop()
    raise RuntimeError(f"node did not answer /status in time:\n{daemon.log_tail()}")


def callers(daemon: Daemon, mode: str, *args: str) -> subprocess.Popen[str]:
    """Start `callers_proc.py` against the daemon; its JSON lines come on stdout."""
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The callers always run this tree's endpoint, whichever daemon they call (measuring an
    # older build must not change the load generator).
    root = HERE.parent.parent
    paths = [str(root / "python"), str(root), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return subprocess.Popen(
        [sys.executable, str(CALLERS), "--node", f"127.0.0.1:{daemon.udp_port}", mode, *args],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def final_line(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """Wait for the callers and return their final summary."""
    out, _ = proc.communicate(timeout=timeout)
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    finals = [x for x in lines if x.get("final")]
    if not finals:
        raise RuntimeError(f"callers gave no summary (exit {proc.returncode}): {out[-2000:]}")
    return finals[-1]
