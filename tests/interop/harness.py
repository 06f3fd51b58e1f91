"""Shared pieces of the interop tests: `node serve` processes with a given configuration, their
event stream, polling helpers, and live tshark captures on the loopback interface."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.conftest import require_tool
from tests.interop.softphone import Softphone
from tests.node_process import EventLog, NodeProcess, free_port, write_config

__all__ = [
    "LINK_SECRET",
    "NODE_A",
    "NODE_B",
    "NODE_SECRETS",
    "Capture",
    "EventWatcher",
    "answered_phone",
    "assert_registered",
    "assert_registration_fails",
    "configured_node",
    "free_udp_port",
    "link_state",
    "node_pair",
    "register_section",
    "running_node",
    "start_failure",
    "wait_until",
]


def free_udp_port() -> int:
    return free_port(socket.SOCK_DGRAM)


def configured_node(tmp_path: Path, extra: str, env: dict[str, str] | None = None) -> NodeProcess:
    """`node serve` on free loopback ports with the base configuration of tests/node_process.py
    plus `extra`, in `tmp_path/node.toml`; just started, not yet ready."""
    udp, http = free_udp_port(), free_port()
    path = write_config(tmp_path / "node.toml", udp_port=udp, http_port=http, extra=extra)
    return NodeProcess(path, udp, http, env=env)


def start_failure(
    tmp_path: Path, extra: str, env: dict[str, str] | None = None, *, code: int = 78
) -> tuple[str, str]:
    """Stdout and stderr of a `configured_node` that must exit with `code` while starting (78:
    its configuration is refused)."""
    node = configured_node(tmp_path, extra, env)
    try:
        assert node.wait() == code
    finally:
        node.kill()
    return node.communicate()


def assert_registered(node: NodeProcess, log: EventLog, method: str) -> None:
    """Wait for `node` to be registered (by `method`), and check its snapshot says so, with the
    address the registrar saw."""
    if not node.get("/status").json()["registered"]:
        log.wait("registered")
    status = node.get("/status").json()
    assert status["registered"] is True
    # The registrar's view of us is shown.
    assert status["registration"] == {
        "method": method,
        "state": "registered",
        "perceived_addr": f"127.0.0.1:{node.udp_addr[1]}",
        "last_failure": None,
        # The registrar saw our bound port: no NAT in between.
        "warning": None,
    }


def assert_registration_fails(node: NodeProcess) -> str:
    """Ask `node` to register, wait for its `register_failed` event and check its snapshot shows
    the failure for the event's reason, with no perceived address; returns the reason."""
    log = EventLog(node)
    log.wait("snapshot")  # subscribed: the start-up attempt's event may predate it
    r = node.post("/register")
    assert r.status_code == 200, r.text
    reason = log.wait("register_failed")["reason"]
    status = node.get("/status").json()
    assert status["registered"] is False
    assert status["registration"]["state"] == "failed"
    assert status["registration"]["last_failure"] == reason
    assert status["registration"]["perceived_addr"] is None
    return reason


def wait_until(what: str, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll `predicate` until it returns something truthy (returned); fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


#: Starts tried when a port picked free is taken before the node binds it.
PORT_ATTEMPTS = 3


@contextmanager
def running_node(
    workdir: Path,
    name: str,
    *,
    codec_policy: str = "prefer_slin16",
    listener: str = "",
    sections: str = "",
    env: dict[str, str] | None = None,
    udp_port: int | None = None,
    top: str = "",
) -> Iterator[NodeProcess]:
    """A `node serve` on free loopback ports (IAX2 on `udp_port` when given); `listener` adds
    lines to `[listener]`, `sections` adds whole sections, `top` top-level keys. Killed on exit;
    its stderr is kept in `node.stderr`."""
    path = workdir / f"{name}.toml"
    # A port picked free can be taken by a parallel test before the node binds it; the node
    # then exits naming the port in use and starts again on other ports (a port the caller
    # chose is not changed).
    for attempt in range(PORT_ATTEMPTS):
        udp, http = udp_port or free_udp_port(), free_port()
        path.write_text(
            f'{top}\ncodec_policy = "{codec_policy}"\n\n'
            f'[listener]\nbind = "127.0.0.1:{udp}"\n{listener}\n\n'
            f'[control]\nbind = "127.0.0.1:{http}"\n\n'
            f'[audio]\nbackend = "none"\n\n{sections}\n'
        )
        path.chmod(0o600)
        node = NodeProcess(path, udp, http, env=env)
        try:
            node.wait_ready()
            break
        except AssertionError as exc:
            node.kill()
            taken = "in use" in str(exc) and (udp_port is None or f":{http}" in str(exc))
            if not taken or attempt == PORT_ATTEMPTS - 1:
                raise
    try:
        yield node
    finally:
        if node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                node.proc.wait(timeout=10)
        node.kill()


@contextmanager
def answered_phone(
    workdir: Path, sections: str = "", codec_policy: str = "ulaw_only"
) -> Iterator[tuple[NodeProcess, EventWatcher, Softphone, int]]:
    """A node with an open listener and `sections`, its event stream, and softphone P (of
    `codec_policy`) in an answered call to it; yields the node, the stream, P and P's call."""
    with (
        running_node(workdir, "a", listener='auth = "off"', sections=sections) as node,
        Softphone(codec_policy=codec_policy, name="P") as phone,
    ):
        events = EventWatcher(node)
        callno = phone.dial(node.udp_addr, "1")
        assert phone.wait_for(lambda s: s.answered(callno))
        yield node, events, phone, callno


#: Two nodes that register with a test registrar and link to each other (`node_pair`).
NODE_A, NODE_B = "2001", "2002"
NODE_SECRETS = {NODE_A: "reg-pass-a", NODE_B: "reg-pass-b"}
#: The peer secret A and B authenticate their link with.
LINK_SECRET = "link-secret-pair"


@contextmanager
def node_pair(
    workdir: Path,
    registrar: Any,
    *,
    a_sections: str = "",
    a_listener: str = "",
    a_env: dict[str, str] | None = None,
    b_sections: str = "",
    codec_policy: str = "prefer_slin16",
) -> Iterator[tuple[NodeProcess, NodeProcess]]:
    """Node B (`NODE_B`), then node A (`NODE_A`) with `[links.<NODE_B>]` at B's address; both
    registered with `registrar` (which must know `NODE_SECRETS`), both knowing the link secret,
    DNS off. `a_sections` / `b_sections` add sections to A / B (not `[links]`). Yields (a, b)."""
    with running_node(
        workdir,
        "b",
        codec_policy=codec_policy,
        sections=register_section(registrar, NODE_B) + b_sections + "[links]\ndns = false\n",
        env={
            "NET_NODE": NODE_B,
            "NET_SECRET": NODE_SECRETS[NODE_B],
            f"NET_PEER_{NODE_A}": LINK_SECRET,
        },
    ) as b:
        host, port = b.udp_addr
        links = f'[links]\ndns = false\n\n[links.{NODE_B}]\naddr = "{host}:{port}"\n'
        env = {
            "NET_NODE": NODE_A,
            "NET_SECRET": NODE_SECRETS[NODE_A],
            f"NET_PEER_{NODE_B}": LINK_SECRET,
            **(a_env or {}),
        }
        with running_node(
            workdir,
            "a",
            codec_policy=codec_policy,
            listener=a_listener,
            sections=register_section(registrar, NODE_A) + a_sections + links,
            env=env,
        ) as a:
            yield a, b


def link_state(node: NodeProcess, peer: str) -> str | None:
    """The state of `node`'s link to `peer` in its snapshot; None when there is none."""
    links = node.get("/status").json()["links"]
    return next((li["state"] for li in links if li["node"] == peer), None)


def register_section(registrar: Any, node_id: str) -> str:
    """A `[register]` section registering `node_id` with the test registrar (an object with
    `addr`, such as tests/interop/registrar.py's `Registrar`)."""
    host, port = registrar.addr
    return f'[register]\npeer = "{host}:{port}"\nnode_id = "{node_id}"\n\n'


def node_log(node: NodeProcess) -> str:
    """The node's stderr (only once it has exited)."""
    return node.communicate()[1]


class EventWatcher:
    """Collects every event of a node's `GET /events` stream from a background thread."""

    def __init__(self, node: NodeProcess) -> None:
        self.url = node.base_url + "/events"
        self.events: list[dict[str, Any]] = []
        #: Wall-clock arrival time (`time.time()`) of each event, beside `events`.
        self.arrivals: list[float] = []
        self._cond = threading.Condition()
        self._connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sse", daemon=True)
        self._thread.start()
        if not self._connected.wait(10):
            raise AssertionError("the event stream did not open")
        # The first event of every connection is the snapshot; after it we see everything.
        self.wait_for(lambda e: e["event"] == "snapshot")

    def _run(self) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(5, read=None)) as client,
                connect_sse(client, "GET", self.url) as source,
            ):
                self._connected.set()
                for sse in source.iter_sse():
                    if not sse.data.strip():
                        continue  # the keep-alive ping every 15 s carries no event
                    event = json.loads(sse.data)
                    arrived = time.time()
                    with self._cond:
                        self.events.append(event)
                        self.arrivals.append(arrived)
                        self._cond.notify_all()
        except httpx.HTTPError:
            pass  # the node went away; the test sees the missing events

    def arrival(self, event: dict[str, Any]) -> float:
        """When `event` (an object this watcher returned) arrived, as `time.time()`."""
        with self._cond:
            return next(t for e, t in zip(self.events, self.arrivals, strict=True) if e is event)

    def named(self, name: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["event"] == name]

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15.0, since: int = 0
    ) -> dict[str, Any]:
        """The first event from index `since` on that matches (waiting for it to arrive)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events[since:]:
                    if predicate(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no matching event; got {[e['event'] for e in self.events]}"
                    )
                self._cond.wait(left)


# --- tshark --------------------------------------------------------------------------------


class Capture:
    """`tshark -i lo` writing the traffic of some UDP ports to a file, decoded after as IAX2
    (or as the `decode` protocol, e.g. "wg" for WireGuard)."""

    def __init__(self, path: Path, ports: list[int], decode: str = "iax2") -> None:
        require_tool("tshark")
        self.path = path
        self.ports = ports
        self.decode = decode
        self._err = path.with_suffix(".log")
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> Capture:
        filt = " or ".join(f"udp port {p}" for p in self.ports)
        with self._err.open("wb") as err:
            self._proc = subprocess.Popen(
                ["tshark", "-i", "lo", "-f", filt, "-w", str(self.path)],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + timeout
        while b"Capture started" not in self._err.read_bytes():
            if self._proc.poll() is not None and not os.environ.get("CI"):
                # Capturing needs root (or dumpcap's capabilities); a developer's plain account
                # skips, CI (which runs as root) fails.
                pytest.skip(f"tshark cannot capture on lo here: {self._err.read_text()[-300:]}")
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"tshark did not start: {self._err.read_text()}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        # Let the packets of the last moment reach the capture before it is closed.
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _read(self, *args: str) -> str:
        decode = [a for p in self.ports for a in ("-d", f"udp.port=={p},{self.decode}")]
        out = subprocess.run(
            ["tshark", "-r", str(self.path), *decode, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return out.stdout

    def malformed(self) -> list[str]:
        """One summary line per frame tshark flags as malformed (or with an expert error)."""
        lines = self._read("-Y", "_ws.malformed || _ws.expert.severity == error").splitlines()
        return [line for line in lines if line.strip()]

    def fields(self, names: list[str], display_filter: str = "iax2") -> list[dict[str, str]]:
        """The given fields of every frame matching `display_filter`, one dict per frame."""
        args = ["-Y", display_filter, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a"]
        for name in names:
            args += ["-e", name]
        rows = []
        for line in self._read(*args).splitlines():
            values = line.split("\t")
            rows.append(dict(zip(names, values + [""] * (len(names) - len(values)), strict=True)))
        return rows
