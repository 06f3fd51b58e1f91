"""Run the real `node serve` as a subprocess on free loopback ports, for end-to-end tests."""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from httpx_sse import connect_sse

from node._core import FullFrame, parse

STARTUP_SECONDS = 30.0


#: Ports are picked at random from here up to just below the kernel's ephemeral range. A port
#: the kernel gives out for `bind(0)` and that is closed again is just the kind it hands to the
#: next socket that binds port 0 or sends unbound (a softphone, an HTTP client, a node's
#: outgoing call) in a parallel test, before the process it was picked for binds it; below
#: the ephemeral range only another explicit pick can take it.
PICK_LOW = 20000
_picks = random.Random()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port free on 127.0.0.1 for TCP or UDP (as asked), outside the ephemeral range."""
    high = _ephemeral_low() - 1
    for _ in range(100 if high > PICK_LOW else 0):
        port = _picks.randint(PICK_LOW, high)
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    # A host whose ephemeral range starts this low: the kernel's pick.
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int, kind: int = socket.SOCK_DGRAM) -> list[int]:
    """`n` distinct free ports (UDP unless asked)."""
    ports: list[int] = []
    while len(ports) < n:
        port = free_port(kind)
        if port not in ports:
            ports.append(port)
    return ports


def write_config(path: Path, *, udp_port: int, http_port: int, extra: str = "") -> Path:
    path.write_text(
        f"""
[listener]
bind = "127.0.0.1:{udp_port}"

[control]
bind = "127.0.0.1:{http_port}"

[audio]
backend = "none"
{extra}
"""
    )
    return path


class NodeProcess:
    """One `node serve` child process; stop it with `terminate()` or a control command."""

    def __init__(
        self,
        config: Path,
        udp_port: int,
        http_port: int,
        env: dict[str, str] | None = None,
        program: list[str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        """`program` replaces `python -m node` (e.g. the `node` script of another install)."""
        self.config = config
        self.udp_addr = ("127.0.0.1", udp_port)
        self.base_url = f"http://127.0.0.1:{http_port}"
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("NET_")}
        child_env.update(env or {})
        self.proc = subprocess.Popen(
            [*(program or [sys.executable, "-m", "node"]), "serve", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env,
            cwd=cwd,
        )
        self._output: tuple[str, str] | None = None

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                _, err = self.communicate()
                raise AssertionError(f"node exited early with {self.proc.returncode}:\n{err}")
            try:
                httpx.get(self.base_url + "/status", timeout=0.5)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        self.kill()
        raise AssertionError("node did not answer /status in time:\n" + self.communicate()[1])

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.base_url + path, timeout=5)

    def post(
        self, path: str, json: object | None = None, content: bytes | None = None
    ) -> httpx.Response:
        """POST a command as the control channel requires: `application/json`, even when the
        body is empty or (to test refusals of bad bodies) not JSON at all."""
        return httpx.post(
            self.base_url + path,
            json=json,
            content=content,
            headers={"Content-Type": "application/json"},
            timeout=5,
        )

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 15.0) -> int:
        return self.proc.wait(timeout=timeout)

    def communicate(self) -> tuple[str, str]:
        if self._output is None:
            out, err = self.proc.communicate(timeout=15)
            self._output = (out, err)
        return self._output

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.communicate()  # reaps the child and closes its pipes

    def iax_exchange(self, frame: FullFrame | bytes, timeout: float = 2.0) -> FullFrame | None:
        """Send one datagram to the node from a fresh socket; return the parsed reply, if any."""
        data = frame if isinstance(frame, bytes) else frame.to_bytes()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            s.settimeout(timeout)
            s.sendto(data, self.udp_addr)
            try:
                reply, _ = s.recvfrom(4096)
            except TimeoutError:
                return None
        parsed = parse(reply)
        assert isinstance(parsed, FullFrame)
        return parsed


class EventLog:
    """Collects the SSE stream of a node in a thread."""

    def __init__(self, node: NodeProcess) -> None:
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(node,), daemon=True)
        self._thread.start()

    def _run(self, node: NodeProcess) -> None:
        try:
            with (
                httpx.Client(timeout=30) as c,
                connect_sse(c, "GET", node.base_url + "/events") as src,
            ):
                for sse in src.iter_sse():
                    if not sse.data:
                        continue  # a message cut short as the node shut down: no event
                    with self._cond:
                        self.events.append(json.loads(sse.data))
                        self._cond.notify_all()
        except httpx.HTTPError:
            return

    def wait(self, name: str, timeout: float = 15.0) -> dict:
        with self._cond:
            ok = self._cond.wait_for(
                lambda: any(e["event"] == name for e in self.events), timeout=timeout
            )
            assert ok, f"no {name!r} event; got {[e['event'] for e in self.events]}"
            return next(e for e in self.events if e["event"] == name)


class NotifySocket:
    """Plays systemd's side of sd_notify: an abstract AF_UNIX datagram socket (`NOTIFY_SOCKET`)."""

    def __init__(self) -> None:
        self.name = f"@iax-node-test-{os.getpid()}-{secrets.token_hex(6)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name[1:])
        #: Every datagram received so far, raw.
        self.datagrams: list[str] = []

    @property
    def env(self) -> dict[str, str]:
        return {"NOTIFY_SOCKET": self.name}

    def wait(self, key: str, timeout: float = 15.0) -> dict[str, str]:
        """The next datagram that sets `key` (e.g. READY), as a dict; fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {key}= notification; got {self.datagrams}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536).decode()
            except TimeoutError:
                continue
            self.datagrams.append(data)
            fields = dict(line.split("=", 1) for line in data.split("\n") if "=" in line)
            if key in fields:
                return fields

    def close(self) -> None:
        self.sock.close()
