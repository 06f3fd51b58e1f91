"""`node tui` in a real terminal: tmux runs it in an 80x24 pane, keys go in with `send-keys`, and
`capture-pane` reads what an operator over SSH would see. The control channel of the same process
answers meanwhile: one node, one controller, two faces."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from node.config import load_config
from tests.conftest import require_tool
from tests.in_process import node_config
from tests.node_process import NodeProcess


class Pane:
    """One tmux session on a private server socket (never the user's own tmux)."""

    def __init__(self, tmp_path: Path, command: list[str]) -> None:
        self.socket = f"iax-node-test-{os.getpid()}"
        self.name = "tui"
        self._tmux(
            "new-session", "-d", "-s", self.name, "-x", "80", "-y", "24",
            "-e", f"PYTHONPATH={os.pathsep.join(sys.path)}",
            # The shell reports the exit status (tmux's own #{pane_dead_status} is not reliable).
            " ".join([*command, ";", "echo", "exit status $?"]),
            ";", "set-option", "-t", self.name, "remain-on-exit", "on",
        )  # fmt: skip

    def _tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        if result.returncode != 0:
            raise AssertionError(f"tmux {args[0]}: {result.stderr.strip()}")
        return result.stdout

    def lines(self) -> list[str]:
        return self._tmux("capture-pane", "-p", "-t", self.name).splitlines()

    def text(self) -> str:
        return "\n".join(self.lines())

    def joined(self) -> str:
        """The pane with lines the terminal wrapped joined back (for plain program output)."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def exit_status(self) -> int | None:
        """The program's exit status once it has ended, else None."""
        for line in self.lines():
            if line.startswith("exit status "):
                return int(line.removeprefix("exit status "))
        return None

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def wait(what: str, predicate: Callable[[], object], timeout: float = 20.0) -> object:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[tuple[Pane, str]]:
    require_tool("tmux")
    config = node_config(tmp_path / "node.toml")
    port = load_config(config).control.bind.port
    p = Pane(tmp_path, [sys.executable, "-m", "node", "tui", "--config", str(config)])
    try:
        yield p, f"http://127.0.0.1:{port}"
    finally:
        p.kill()


def test_tui_in_an_80x24_terminal(pane: tuple[Pane, str]) -> None:
    p, base = pane
    wait("the menu", lambda: "Inbound: ON" in p.text())
    lines = p.lines()
    assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
    assert lines[0].strip().startswith("Node (no node number) · Inbound: ON")
    assert lines[-1].strip().startswith("k Key…") and lines[-1].strip().endswith("q Quit")
    assert httpx.get(base + "/status", timeout=5).json()["listening"] is True

    p.keys("i")
    wait("Inbound: OFF", lambda: "Inbound: OFF" in p.text())
    assert httpx.get(base + "/status", timeout=5).json()["listening"] is False

    p.keys("k")
    wait("the key dialog", lambda: "Key the transmitter?" in p.text())
    p.keys("Enter")  # the default answer: no
    wait("the dialog gone", lambda: "Key the transmitter?" not in p.text())
    assert httpx.get(base + "/status", timeout=5).json()["tx"]["keyed"] is False
    assert "TX: idle" in p.text()

    p.keys("q")
    wait("the program to end", lambda: p.exit_status() is not None)
    assert p.exit_status() == 0
    with pytest.raises(httpx.TransportError):
        httpx.get(base + "/status", timeout=2)


def test_tui_refuses_to_start_beside_a_running_node(tmp_path: Path) -> None:
    """Two nodes cannot share a configuration's ports: the second one says so and exits 1."""
    require_tool("tmux")
    config = node_config(tmp_path / "node.toml")
    loaded = load_config(config)
    serve = NodeProcess(config, loaded.listener.bind.port, loaded.control.bind.port)
    p = None
    try:
        serve.wait_ready()
        p = Pane(tmp_path, [sys.executable, "-m", "node", "tui", "--config", str(config)])
        wait("the program to end", lambda: p.exit_status() is not None)
        assert p.exit_status() == 1
        text = " ".join(p.joined().split())
        assert "listener.bind" in text and "already running with this configuration" in text
        assert serve.get("/status").status_code == 200  # the running node is untouched
    finally:
        if p is not None:
            p.kill()
        serve.kill()
