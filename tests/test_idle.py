"""An idle node sleeps: with nothing connected the engine stops its 20 ms clock and its thread
waits without waking, and the null audio backend runs no thread; a call starts the clock, and
once it is gone the node sleeps again (docs/performance.md, "Idle"). Counts, not timings: the
ticks and wake-ups the engine reports in `/stats`, and the threads the process has."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, free_port, write_config


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    config = write_config(
        tmp_path / "node.toml", udp_port=udp, http_port=http, extra="\n[dtmf]\nenabled = false\n"
    )
    config.write_text(config.read_text().replace("[listener]\n", '[listener]\nauth = "off"\n'))
    proc = NodeProcess(config, udp, http)
    proc.wait_ready()
    yield proc
    proc.kill()


def engine(node: NodeProcess) -> tuple[int, int]:
    """The engine's ticks and its thread's wake-ups so far."""
    stats = node.get("/stats").json()
    return stats["tick"]["ticks"], stats["wakeups"]


def settled(node: NodeProcess) -> tuple[int, int]:
    """The engine's counters once its clock has stopped (after a call's last tick and the
    conference's activity hang)."""
    deadline = time.monotonic() + 30
    last = engine(node)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = engine(node)
        if now[0] == last[0]:
            return now
        last = now
    raise AssertionError(f"the engine kept ticking: {last}")


def test_an_idle_node_sleeps_without_a_clock_or_a_device_thread(node: NodeProcess) -> None:
    names = sorted(
        (t / "comm").read_text().strip() for t in Path(f"/proc/{node.proc.pid}/task").iterdir()
    )
    assert "iax-engine" in names and "null-audio" not in names and len(names) == 2, names
    ticks, wakeups = settled(node)
    time.sleep(1.0)
    # A second with nothing to do: not one tick; the thread woke only for `/stats`' requests,
    # which do not reach it (at most a stray wake-up).
    later_ticks, later_wakeups = engine(node)
    assert later_ticks == ticks
    assert later_wakeups - wakeups <= 1


def test_a_call_starts_the_clock_and_the_node_sleeps_again_after_it(node: NodeProcess) -> None:
    ticks, _ = settled(node)
    with Softphone(name="idle") as phone:
        callno = phone.dial(node.udp_addr, "1")
        assert phone.wait_for(lambda s: s.answered(callno))
        time.sleep(0.5)
        assert engine(node)[0] > ticks, "a call's media needs the clock"
        phone.hangup(callno)
        assert phone.wait_for(lambda s: s.ended(callno))
    ended, _ = settled(node)
    time.sleep(1.0)
    assert engine(node)[0] == ended
