"""Control commands against the real daemon: validation, state changes, refusals."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from node._core import FullFrame
from node.iax2.constants import IE, FrameType, IaxSubclass
from tests.node_process import NodeProcess, free_port, write_config

CANARY = "canary-control-secret-55e0"


def start(tmp_path: Path, extra: str = "", env: dict[str, str] | None = None) -> NodeProcess:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    path = write_config(tmp_path / "node.toml", udp_port=udp, http_port=http, extra=extra)
    path.chmod(0o600)
    node = NodeProcess(path, udp, http, env=env)
    node.wait_ready()
    return node


#: Lookups without an address would otherwise ask the system's DNS: tests reach loopback only.
NO_DNS = "[links]\ndns = false\n"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    proc = start(tmp_path, NO_DNS)
    yield proc
    proc.kill()


def new_frame(scall: int = 0x321) -> FullFrame:
    return FullFrame(
        FrameType.IAX,
        IaxSubclass.NEW,
        scall=scall,
        ts=3,
        ies=[
            (IE.VERSION, 2),
            (IE.CALLED_NUMBER, "1999"),
            (IE.CALLING_NUMBER, "2000"),
            (IE.USERNAME, "radio"),
            (IE.FORMAT, 0x4),
            (IE.CAPABILITY, 0x4),
        ],
    )


def test_disabling_inbound_refuses_callers_and_is_reported(node: NodeProcess) -> None:
    events: list[dict] = []
    subscribed, got_two = threading.Event(), threading.Event()

    def listen() -> None:
        with httpx.Client(timeout=10) as c, connect_sse(c, "GET", node.base_url + "/events") as src:
            for sse in src.iter_sse():
                events.append(json.loads(sse.data))
                subscribed.set()
                if len(events) >= 2:
                    got_two.set()
                    return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert subscribed.wait(10)  # the first snapshot arrived: later changes reach this client
    r = node.post("/disable_inbound")
    assert r.status_code == 200 and r.json()["listening"] is False
    assert got_two.wait(10)
    assert events[0]["event"] == "snapshot"
    assert events[1]["event"] == "snapshot" and events[1]["listening"] is False

    reply = node.iax_exchange(new_frame())
    assert reply is not None and reply.subclass == IaxSubclass.REJECT
    assert reply.ie(IE.CAUSE)  # a clear cause, not a silent drop
    assert node.get("/status").json()["calls"] == []

    assert node.post("/enable_inbound").json()["listening"] is True


@pytest.mark.parametrize(
    ("path", "body", "status", "needle"),
    [
        ("/dial", {}, 400, "node"),
        ("/dial", {"node": 2000}, 400, "node"),
        ("/dial", {"node": "2000"}, 400, "addr"),
        ("/dial", {"node": "2000"}, 400, "DNS lookup is off ([links] dns = false)"),
        ("/dial", {"node": "2000", "addr": "not-an-ip:4569"}, 400, "IP address"),
        ("/dial", {"node": "2000", "addr": "127.0.0.1:99999"}, 400, "port"),
        ("/hangup", {}, 409, "no active call"),
        ("/hangup", {"call": 1234}, 404, "no call 1234"),
        ("/hangup", {"call": "1234"}, 400, "call"),
        ("/answer", {}, 409, "ringing"),
        ("/reject", {}, 409, "ringing"),
        ("/register", {}, 409, "[register]"),
        ("/deregister", {}, 409, "not registered"),
        ("/bridge", {"mode": "party"}, 400, "handset, bridge, conference"),
        ("/bridge", {"mix_minus": "yes"}, 400, "mix_minus"),
        ("/levels", {"rx_gain_db": 25}, 400, "rx_gain_db must be a number from -40 to 20"),
        ("/levels", {"tx_gain_db": "loud"}, 400, "'tx_gain_db' must be a number"),
        ("/levels", {"tx_gain_db": True}, 400, "'tx_gain_db' must be a number"),
        ("/secrets", {"username": "1999"}, 400, "secret"),
    ],
)
def test_bad_commands_get_a_clear_error(
    node: NodeProcess, path: str, body: dict, status: int, needle: str
) -> None:
    r = node.post(path, json=body)
    assert r.status_code == status, r.text
    assert needle in r.json()["error"]
    assert node.get("/status").status_code == 200


def test_bridge_changes_live_and_keeps_omitted_fields(node: NodeProcess) -> None:
    snap = node.post("/bridge", json={"mode": "conference", "include_local_radio": True}).json()
    assert snap["bridge"] == {"mode": "conference", "mix_minus": True, "include_local_radio": True}
    snap = node.post("/bridge", json={"mix_minus": False}).json()
    assert snap["bridge"] == {"mode": "conference", "mix_minus": False, "include_local_radio": True}
    snap = node.post("/devices", json={}).json()
    assert snap["audio"]["running"] is True


def test_levels_change_live_and_the_status_meters_both_directions(node: NodeProcess) -> None:
    audio = node.get("/status").json()["audio"]
    assert audio["rx"]["gain_db"] == 0.0 and audio["tx"]["gain_db"] == 0.0
    for direction in ("rx", "tx"):
        for key in ("peak_dbfs", "rms_dbfs", "peak_hold_dbfs", "clipped", "late", "dropped"):
            assert key in audio[direction], (direction, key)
    snap = node.post("/levels", json={"rx_gain_db": -6.5}).json()
    assert snap["audio"]["rx"]["gain_db"] == -6.5 and snap["audio"]["tx"]["gain_db"] == 0.0
    snap = node.post("/levels", json={"tx_gain_db": 3}).json()
    assert snap["audio"]["rx"]["gain_db"] == -6.5 and snap["audio"]["tx"]["gain_db"] == 3.0


def test_secrets_are_accepted_only_under_the_control_source(tmp_path: Path) -> None:
    registrar = free_port(socket.SOCK_DGRAM)
    extra = (
        f'[register]\npeer = "127.0.0.1:{registrar}"\nnode_id = "1999"\n\n'
        '[secrets]\nsource = "control"\n'
    )
    node = start(tmp_path, extra)
    try:
        r = node.post("/secrets", json={"username": "1999", "secret": CANARY})
        assert r.status_code == 200 and r.json() == {"ok": True}
        # With the credential known, registration started (nothing answers: not yet registered).
        assert node.get("/status").json()["registered"] is False
        wrong = node.post("/secrets", json={"username": "2000", "secret": CANARY})
        assert wrong.status_code == 400 and CANARY not in wrong.text
    finally:
        node.kill()
    _, err = node.communicate()
    assert CANARY not in err


def test_secrets_refused_under_env_source(node: NodeProcess) -> None:
    r = node.post("/secrets", json={"username": "1999", "secret": CANARY})
    assert r.status_code in (400, 409)
    assert CANARY not in r.text
