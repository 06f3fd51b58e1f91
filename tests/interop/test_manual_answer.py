"""`answer = "manual"` end to end: ring, incoming_call event, POST /answer or /reject, hangup."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from node.iax2.call import CallHungUp, CallRejected, CallRinging
from tests.interop.softphone import Softphone
from tests.node_process import EventLog, NodeProcess, free_port, write_config


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    path = write_config(tmp_path / "node.toml", udp_port=udp, http_port=http)
    text = path.read_text().replace(
        "[listener]\n",
        '[listener]\nanswer = "manual"\nauth = "off"\nmax_calls = 2\n',
    )
    path.write_text('codec_policy = "ulaw_only"\n' + text)
    proc = NodeProcess(path, udp, http)
    proc.wait_ready()
    yield proc
    proc.kill()


def wait_state(node: NodeProcess, state: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        calls = node.get("/status").json()["calls"]
        if calls and calls[-1]["state"] == state:
            return calls[-1]
        time.sleep(0.05)
    raise AssertionError(f"no call in state {state!r}: {node.get('/status').json()['calls']}")


def test_ring_then_answer_then_operator_hangup(node: NodeProcess) -> None:
    log = EventLog(node)
    log.wait("snapshot")
    with Softphone(name="caller", tone_hz=700.0) as phone:
        callno = phone.dial(node.udp_addr, "1999", calling_number="2000")
        assert phone.wait_for(lambda p: bool(p.events_of(CallRinging, callno)))
        assert log.wait("incoming_call")["from"] == "2000"
        ringing = wait_state(node, "ringing")
        assert ringing["direction"] == "inbound" and ringing["peer"] == "2000"
        assert not phone.answered(callno)

        r = node.post("/answer")
        assert r.status_code == 200
        assert phone.wait_for(lambda p: p.answered(callno))
        up = wait_state(node, "up")
        assert up["codec"] == "ulaw"
        # Answered calls are conference members: the node receives the caller's voice.
        deadline = time.monotonic() + 10
        while node.get("/stats").json()["mini_in"] < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert node.get("/stats").json()["mini_in"] >= 20

        assert node.post("/hangup", json={"call": up["id"]}).status_code == 200
        assert phone.wait_for(lambda p: bool(p.events_of(CallHungUp, callno)))
        assert log.wait("hangup")["reason"] == "hung up by operator"
        assert node.get("/status").json()["calls"] == []


def test_ring_then_reject_and_call_limit(node: NodeProcess) -> None:
    with Softphone(name="a") as a, Softphone(name="b") as b, Softphone(name="c") as c:
        first = a.dial(node.udp_addr, "1999", calling_number="2001")
        # One after the other, so that b's is the most recently started call whatever the
        # scheduling of the two call-token rounds.
        assert a.wait_for(lambda p: bool(p.events_of(CallRinging, first)))
        second = b.dial(node.udp_addr, "1999", calling_number="2002")
        assert b.wait_for(lambda p: bool(p.events_of(CallRinging, second)))
        # max_calls = 2: a third caller is refused at setup with a cause.
        third = c.dial(node.udp_addr, "1999", calling_number="2003")
        assert c.wait_for(lambda p: bool(p.events_of(CallRejected, third)))
        refusal = c.events_of(CallRejected, third)[0]
        assert refusal.cause and refusal.by_peer

        # /reject without an id takes the most recent ringing call (b's).
        assert node.post("/reject").status_code == 200
        assert b.wait_for(lambda p: p.ended(second))
        assert not a.ended(first)
        calls = node.get("/status").json()["calls"]
        assert [call["peer"] for call in calls] == ["2001"]
        assert node.post("/reject").status_code == 200
        assert a.wait_for(lambda p: p.ended(first))
        assert node.post("/reject").status_code == 409  # nothing is ringing any more
