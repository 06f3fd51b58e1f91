"""SIGHUP against a real `node serve`: the peers file is re-read and no call is dropped.

Callers authenticate with MD5 (the softphone answers the node's challenge with the secret it is
given). The test waits for the reload through the sd_notify protocol the systemd unit uses
(RELOADING=1, then READY=1 with a STATUS line), so no sleep decides the outcome.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from node.iax2.call import CallAnswered, CallHungUp, CallLost, CallRejected
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, NotifySocket, free_port, write_config

OLD = "canary-reload-old-5e21"
NEW = "canary-reload-new-9b07"
GONE = "canary-reload-gone-c3d4"
ADDED = "canary-reload-added-77f0"
BROKEN = "canary-reload-broken-a1b2"


def write_peers(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


@pytest.fixture
def notify() -> Iterator[NotifySocket]:
    sock = NotifySocket()
    yield sock
    sock.close()


def start(tmp_path: Path, notify: NotifySocket) -> tuple[NodeProcess, Path, Path]:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    peers = tmp_path / "peers"
    write_peers(peers, f"# peers\n2001={OLD}\n2002={GONE}\n")
    path = write_config(
        tmp_path / "node.toml",
        udp_port=udp,
        http_port=http,
        extra='[secrets]\npeers_file = "peers"\n',
    )
    path.write_text(
        'codec_policy = "ulaw_only"\n'
        + path.read_text().replace("[listener]\n", '[listener]\nauth = "required"\n')
    )
    node = NodeProcess(path, udp, http, env=notify.env)
    node.wait_ready()
    notify.wait("READY")
    return node, path, peers


def dial(phone: Softphone, node: NodeProcess, who: str, secret: str) -> int:
    return phone.dial(node.udp_addr, "1999", calling_number=who, username=who, secret=secret)


def answered(phone: Softphone, callno: int) -> bool:
    phone.wait_for(lambda p: p.answered(callno) or p.ended(callno))
    return phone.answered(callno) and not phone.ended(callno)


def refused(phone: Softphone, callno: int) -> bool:
    phone.wait_for(lambda p: p.ended(callno))
    return bool(phone.events_of(CallRejected, callno)) and not phone.answered(callno)


def reload(node: NodeProcess, notify: NotifySocket) -> str:
    node.signal(signal.SIGHUP)
    notify.wait("RELOADING")
    return notify.wait("READY")["STATUS"]


def test_sighup_swaps_peer_secrets_and_keeps_calls_up(tmp_path: Path, notify: NotifySocket) -> None:
    node, config, peers = start(tmp_path, notify)
    try:
        with (
            Softphone(name="A", tone_hz=600.0) as a,
            Softphone(name="B", tone_hz=900.0) as b,
            Softphone(name="C", codec_policy="prefer_slin") as c,
        ):
            first = dial(a, node, "2001", OLD)
            assert answered(a, first)
            gone_before = dial(b, node, "2002", GONE)
            assert answered(b, gone_before)
            assert refused(b, dial(b, node, "2001", "not-the-secret"))

            # 2001 gets a new secret, 2002 is removed, 2003 is added; a restart-only key changes.
            write_peers(peers, f"2001={NEW}\n2003={ADDED}\n")
            config.write_text(config.read_text().replace("ulaw_only", "prefer_slin"))
            status = reload(node, notify)
            assert "added 2003" in status and "changed 2001" in status
            assert "removed 2002" in status
            assert "needs a restart: codec_policy" in status

            # New calls meet the new secrets.
            assert refused(b, dial(b, node, "2001", OLD))
            assert refused(b, dial(b, node, "2002", GONE))
            fresh = dial(b, node, "2001", NEW)
            assert answered(b, fresh)
            added = dial(c, node, "2003", ADDED)
            assert answered(c, added)

            # The calls admitted with the old secrets are still up and still carry audio:
            # A hears B's tone, which B started sending only after the reload.
            assert not a.ended(first) and not b.ended(gone_before)
            heard = a.heard_ms(first)
            assert a.wait_for(lambda p: p.heard_ms(first) >= heard + 400)
            calls = node.get("/status").json()["calls"]
            assert sorted(c["peer"] for c in calls if c["state"] == "up") == [
                "2001",
                "2001",
                "2002",
                "2003",
            ]
            # The codec_policy change waits for a restart: C asked for slin, which prefer_slin
            # would have granted, and still got µ-law.
            assert {call["codec"] for call in calls} == {"ulaw"}

            # A peers file that does not load changes nothing and the node runs on.
            write_peers(peers, f"2001={BROKEN}\n{BROKEN}\n")
            assert "reload failed" in reload(node, notify)
            assert refused(b, dial(b, node, "2001", BROKEN))
            again = dial(b, node, "2001", NEW)
            assert answered(b, again)

            for phone, callno in ((b, again), (c, added), (b, fresh), (b, gone_before)):
                phone.hangup(callno)
            a.hangup(first)
            assert a.wait_for(lambda p: p.ended(first))
            # Ended by us, not lost and not by the node: it kept every call until hung up.
            for phone in (a, b, c):
                assert not phone.events_of(CallLost)
                assert not [e for e in phone.events_of(CallHungUp) if e.by_peer]
            assert len(b.events_of(CallAnswered)) == 3
            assert len(c.events_of(CallAnswered)) == 1
        node.signal(signal.SIGTERM)
        assert node.wait() == 0
    finally:
        node.kill()
    out, err = node.communicate()
    assert "changed 2001" in err
    assert "codec_policy changed in" in err and "needs a restart" in err
    assert "reload failed, nothing changed" in err and "line 2" in err
    for text in (out, err, *notify.datagrams):
        for secret in (OLD, NEW, GONE, ADDED, BROKEN):
            assert secret not in text
