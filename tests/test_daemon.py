"""`node serve` end to end: a real subprocess, real HTTP, real UDP on loopback."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from node._core import FrameError, FullFrame, parse
from node.iax2.constants import FrameType, IaxSubclass
from tests.interop.harness import start_failure
from tests.node_process import NodeProcess, free_port, write_config

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def node(tmp_path: Path):
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    proc = NodeProcess(
        write_config(tmp_path / "node.toml", udp_port=udp, http_port=http), udp, http
    )
    proc.wait_ready()
    yield proc
    proc.kill()


def poke(scall: int = 0x1234, ts: int = 4242, oseq: int = 0) -> FullFrame:
    return FullFrame(FrameType.IAX, IaxSubclass.POKE, scall=scall, dcall=0, ts=ts, oseq=oseq)


def test_status_snapshot_has_the_spec_fields(node: NodeProcess) -> None:
    r = node.get("/status")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    snap = r.json()
    spec_fields = {k: snap.pop(k) for k in ("node_id", "listening", "registered", "calls", "links")}
    assert spec_fields == {
        "node_id": None,
        "listening": True,
        "registered": False,
        "calls": [],
        "links": [],
    }
    # Extensions beyond the spec (documented in the README): the operator's TX, the bridge, the
    # audio device, the radio and the tunnel.
    assert snap.pop("tx") == {"keyed": False, "timeout_s": 180, "timeout_remaining_s": None}
    assert snap.pop("bridge") == {"mode": "bridge", "mix_minus": True, "include_local_radio": False}
    audio = snap.pop("audio")
    assert audio["backend"] == "none" and audio["running"] is True and audio["rate"] == 16000
    # The radio (no [radio]: no PTT, no carrier).
    assert snap.pop("radio") == {
        "ptt": {
            "backend": "none",
            "keyed": False,
            "hang_ms": 500,
            "timeout_s": 180,
            "timeout_remaining_s": None,
            "timed_out": False,
            "timeouts": 0,
        },
        "tx_audio": False,
        "carrier": {
            "backend": "none",
            "present": False,
            "open": False,
            "rx_on_delay_ms": 0,
            "rx_audio_delay_ms": 0,
        },
    }
    # The link contract's registration object: no [register], so no method.
    assert snap.pop("registration") == {
        "method": None,
        "state": "unregistered",
        "perceived_addr": None,
        "last_failure": None,
        "warning": None,
    }
    # No [wireguard]: plain UDP, no tunnel.
    assert snap.pop("tunnel") is None
    # No links: the graph is this node alone (it has no node number here).
    assert snap.pop("network") == {
        "nodes": [{"node": None, "hops": 0, "mode": None, "via": None}],
        "edges": [],
        "lists": {"entries_dropped": 0, "cut": 0, "expired": 0},
    }
    # Nothing connected and no radio on the null backend: nothing to meter.
    assert snap.pop("levels") == {"calls": [], "links": [], "radio": None}
    assert snap == {}


def test_poke_is_answered_with_pong_statelessly(node: NodeProcess) -> None:
    reply = node.iax_exchange(poke(scall=0x1234, ts=4242, oseq=0))
    assert reply is not None
    assert (reply.ftype, reply.subclass) == (FrameType.IAX, IaxSubclass.PONG)
    assert reply.scall == 1  # Asterisk's apathetic call number: no call is created
    assert reply.dcall == 0x1234
    assert reply.ts == 4242  # PONG echoes the POKE's timestamp
    assert (reply.oseq, reply.iseq) == (0, 1)
    # The prober's ACK of the PONG (to call 1) is absorbed: no reply, no call.
    ack = FullFrame(FrameType.IAX, IaxSubclass.ACK, scall=0x1234, dcall=1, ts=4242, oseq=1, iseq=1)
    assert node.iax_exchange(ack, timeout=0.3) is None
    assert node.get("/status").json()["calls"] == []


def test_garbage_burst_is_counted_and_survived(node: NodeProcess) -> None:
    rng = random.Random(5456)
    junk = [
        bytes(
            rng.getrandbits(8)
            for _ in range(rng.choice([0, 1, 2, 3, 4, 11, 12, 13, 40, 200, 1400]))
        )
        for _ in range(5000)
    ]
    # Hand-made malformed frames: full header cut short, IE overrunning its frame.
    junk += [
        bytes.fromhex("8002000000000003000006"),
        bytes.fromhex("8002000000000003000006010b0400"),
    ]
    expected_malformed = 0
    for data in junk:
        try:
            parse(data)
        except FrameError:
            expected_malformed += 1
    assert expected_malformed > 1000
    before = node.get("/stats").json()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for i, data in enumerate(junk):
            s.sendto(data, node.udp_addr)
            if i % 50 == 49:
                time.sleep(0.002)  # stay under the socket buffer: every datagram must arrive
    # The node is alive and still answers.
    reply = node.iax_exchange(poke(scall=77))
    assert reply is not None and reply.subclass == IaxSubclass.PONG
    stats = node.get("/stats").json()
    # On a loaded host the kernel may still drop some of the burst; those are counted too
    # (SO_RXQ_OVFL), so every datagram is accounted for, and with none dropped the malformed
    # count is exact.
    dropped = stats["kernel_drops"] - before["kernel_drops"]
    assert stats["datagrams_in"] - before["datagrams_in"] + dropped == len(junk) + 1
    malformed = stats["malformed"] - before["malformed"]
    if dropped == 0:
        assert malformed == expected_malformed
    else:
        assert expected_malformed - dropped <= malformed <= expected_malformed
    assert node.get("/status").status_code == 200


def test_unknown_paths_and_methods_answer_json_errors(node: NodeProcess) -> None:
    r = node.get("/no/such/thing")
    assert r.status_code == 404 and r.json() == {"error": "not found"}
    r = node.post("/no-such-command", json={})
    assert r.status_code == 404 and r.json() == {"error": "not found"}
    r = node.post("/status", json={})
    assert r.status_code == 405 and "error" in r.json()


def test_bad_body_is_a_400(node: NodeProcess) -> None:
    r = node.post("/shutdown", content=b"{not json")
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    r = node.post("/shutdown", content=b"[1, 2]")
    assert r.status_code == 400
    assert node.get("/status").status_code == 200  # still running


def test_post_shutdown_exits_zero(node: NodeProcess) -> None:
    r = node.post("/shutdown")
    assert r.status_code == 200 and r.json() == {"ok": True}
    assert node.wait() == 0
    _, err = node.communicate()
    assert "stopped" in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_exit_zero_after_cleanup(node: NodeProcess, sig: signal.Signals) -> None:
    node.signal(sig)
    assert node.wait() == 0
    _, err = node.communicate()
    assert "stopped" in err  # the cleanup after the HTTP server returned did run
    assert "Traceback" not in err


def test_sse_first_event_is_a_snapshot_and_shutdown_ends_the_stream(node: NodeProcess) -> None:
    received: list[dict] = []
    ready = threading.Event()

    def listen() -> None:
        with (
            httpx.Client(timeout=10) as client,
            connect_sse(client, "GET", node.base_url + "/events") as source,
        ):
            for sse in source.iter_sse():
                received.append(json.loads(sse.data))
                ready.set()

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert ready.wait(10)
    node.signal(signal.SIGTERM)
    t.join(10)
    assert not t.is_alive(), "the SSE stream must end when the node stops"
    assert node.wait() == 0
    assert received[0]["event"] == "snapshot"
    assert received[0]["listening"] is True
    assert received[-1] == {"event": "shutdown"}


#: Set in the child that runs the default-port test inside a network namespace of its own.
_OWN_NETNS = "IAX_NODE_TEST_OWN_NETNS"


def test_missing_config_writes_template_and_runs_on_defaults(tmp_path: Path) -> None:
    # The template's defaults are the documented ports (UDP 4569, TCP 8730), which another IAX2
    # peer on this machine may hold: the test runs itself again in a network namespace of its
    # own (a fresh loopback where both are free), so it proves the same wherever it runs.
    if os.environ.get(_OWN_NETNS) != "1":
        test = "tests/test_daemon.py::test_missing_config_writes_template_and_runs_on_defaults"
        child = subprocess.run(
            [
                "unshare",
                "--map-root-user",
                "--net",
                "sh",
                "-c",
                'ip link set lo up && exec "$0" -m pytest -q -p no:cacheprovider '
                '--basetemp "$2" "$1"',
                sys.executable,
                test,
                # A base of its own: in the shared one the child's clean-up of old numbered
                # directories races the parent's, and a warning that race raises fails the child.
                str(tmp_path / "child"),
            ],
            cwd=ROOT,
            env={**os.environ, _OWN_NETNS: "1"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
        assert "1 passed" in child.stdout
        return
    path = tmp_path / "etc" / "node.toml"
    proc = NodeProcess(path, 4569, 8730)
    try:
        proc.wait_ready()
        assert path.exists()
        text = path.read_text()
        assert "[listener]" in text and "[control]" in text and "[secrets]" in text
        assert proc.get("/status").json()["listening"] is True
        reply = proc.iax_exchange(poke())
        assert reply is not None and reply.subclass == IaxSubclass.PONG
        proc.signal(signal.SIGTERM)
        assert proc.wait() == 0
        _, err = proc.communicate()
        assert "template" in err and str(path) in err
    finally:
        proc.kill()


def test_config_error_names_file_and_key_and_exits_78(tmp_path: Path) -> None:
    _, err = start_failure(tmp_path, '[bridge]\nmode = "party"\n')
    assert str(tmp_path / "node.toml") in err and "bridge.mode" in err and "conference" in err


def test_template_that_cannot_be_written_is_a_config_error(tmp_path: Path) -> None:
    # What a read-only /etc under systemd's ProtectSystem=strict looks like to the node: exit
    # 78, which the unit does not restart, and a message saying what to do.
    blocker = tmp_path / "etc"
    blocker.write_text("a file where the config directory should be")
    path = blocker / "iax-node" / "node.toml"
    proc = NodeProcess(path, 0, 0)
    assert proc.wait() == 78
    _, err = proc.communicate()
    assert str(path) in err
    assert "template cannot be written there" in err
    assert "Traceback" not in err


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        udp = taken.getsockname()[1]
        path = write_config(tmp_path / "node.toml", udp_port=udp, http_port=free_port())
        proc = NodeProcess(path, udp, 0)
        assert proc.wait() == 1
        _, err = proc.communicate()
    assert "listener.bind" in err and str(udp) in err


def test_ami_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        extra = f'[ami]\nenabled = true\nbind = "127.0.0.1:{port}"\n'
        env = {"NET_AMI_SECRET": "ami-secret-in-use"}
        _, err = start_failure(tmp_path, extra, env, code=1)
    assert "ami.bind" in err and str(port) in err and "ami-secret-in-use" not in err


def test_ami_without_its_password_is_a_config_error(tmp_path: Path) -> None:
    _, err = start_failure(tmp_path, "[ami]\nenabled = true\n")
    assert "NET_AMI_SECRET" in err
