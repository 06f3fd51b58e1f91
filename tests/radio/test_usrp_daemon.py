"""The USRP radio against the real daemon, with a USRP peer of our own on loopback: its keyup
voice is the carrier, its DTMF packets a digit source, its metadata the caller on the status;
garbage and bursts are counted; POST /key keys it as a real transmitter (keyup-1 voice, then one
keyup-0); a `dstar` USRP radio refuses every key command."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.node_process import EventLog, NodeProcess, free_port

HEADER = struct.Struct(">4s7I")


def packet(seq: int, *, keyup: int = 0, kind: int = 0, payload: bytes = b"", tg: int = 0) -> bytes:
    return HEADER.pack(b"USRP", seq, 0, keyup, tg, kind, 0, 0) + payload


def voice(seq: int, level: int = 3000) -> bytes:
    return packet(seq, keyup=1, payload=struct.pack("<160h", *([level, -level] * 80)))


def meta(seq: int, callsign: str, source_id: int, talkgroup: int) -> bytes:
    value = (
        source_id.to_bytes(3, "big")
        + (311200).to_bytes(4, "big")
        + talkgroup.to_bytes(3, "big")
        + bytes([2, 1])
        + callsign.encode()
        + b"\0"
    )
    return packet(seq, kind=2, payload=bytes([8, len(value)]) + value)


def wait_for(what: Callable[[], Any], timeout: float = 15.0) -> Any:
    for _ in range(int(timeout / 0.05)):
        if value := what():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


class Peer:
    """Analog_Bridge's side of the stream: a socket the node sends to."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.node_port = free_port(socket.SOCK_DGRAM)

    def send(self, data: bytes) -> None:
        self.sock.sendto(data, ("127.0.0.1", self.node_port))

    def talk(self, frames: int, start: int = 0) -> None:
        """A transmission at real time, ended by its keyup-0 packet."""
        for i in range(frames):
            self.send(voice(start + i))
            time.sleep(0.02)
        self.send(packet(start + frames))

    def receive(self, until: Callable[[list[tuple]], bool], timeout: float = 15.0) -> list[tuple]:
        """Packets from the node as (seq, keyup, type, payload length) until `until` holds."""
        got: list[tuple] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not until(got):
            try:
                data, _ = self.sock.recvfrom(2048)
            except TimeoutError:
                continue
            magic, seq, _mem, keyup, _tg, kind, _mpx, _res = HEADER.unpack_from(data)
            assert magic == b"USRP"
            got.append((seq, keyup, kind, len(data) - HEADER.size))
        return got


def start(tmp_path: Path, peer: Peer, network: str = "analog") -> NodeProcess:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    cfg = tmp_path / "node.toml"
    cfg.write_text(
        f"""
[listener]
bind = "127.0.0.1:{udp}"

[control]
bind = "127.0.0.1:{http}"

[audio]
backend = "usrp"

[usrp]
listen = "127.0.0.1:{peer.node_port}"
peer = "127.0.0.1:{peer.port}"
network = "{network}"
buffer_ms = 400

[bridge]
mode = "conference"
include_local_radio = true

[dtmf]
enabled = true

[radio]
hang_time_ms = 100
courtesy_tone = [[880, 0, 200]]
"""
    )
    node = NodeProcess(cfg, udp, http)
    node.wait_ready()
    return node


@pytest.fixture
def peer() -> Iterator[Peer]:
    p = Peer()
    yield p
    p.sock.close()


def usrp_stats(node: NodeProcess) -> dict[str, Any]:
    return node.get("/status").json()["audio"]


def test_receive_carrier_dtmf_meta_garbage_burst(tmp_path: Path, peer: Peer) -> None:
    node = start(tmp_path, peer)
    try:
        events = EventLog(node)
        time.sleep(0.3)  # the SSE stream is subscribed
        peer.send(meta(1, "N0CALL", 3112345, 91))
        peer.talk(20, start=2)
        carrier = [e for e in wait_for(lambda: [e for e in events.events if e["event"] == "radio"])]
        wait_for(
            lambda: any(e.get("kind") == "carrier" and e.get("on") is False for e in events.events)
        )
        kinds = [(e["kind"], e["on"]) for e in events.events if e["event"] == "radio"]
        assert ("caller", True) in kinds and ("carrier", True) in kinds, kinds
        caller = next(e for e in events.events if e.get("kind") == "caller")["caller"]
        assert caller["callsign"] == "N0CALL" and caller["talkgroup"] == 91
        assert carrier
        stats = usrp_stats(node)
        assert stats["backend"] == "usrp" and stats["rx"]["voice"] == 20
        assert stats["rx"]["peak_dbfs"] > -30

        # DTMF packets: a digit source of their own.
        for i, digit in enumerate("*1"):
            peer.send(packet(100 + i, kind=1, payload=digit.encode()))
        wait_for(lambda: sum(e["event"] == "dtmf" for e in events.events) >= 2)
        assert [e["digit"] for e in events.events if e["event"] == "dtmf"][:2] == ["*", "1"]

        # Garbage: counted, dropped, nothing keys.
        for junk in (b"hello", b"USRP" + b"\xff" * 10, b"\x00" * 400, packet(1, payload=b"x" * 7)):
            peer.send(junk)
        wait_for(lambda: usrp_stats(node)["rx"]["garbage"] >= 4)

        # A burst far faster than real time: bounded, the excess dropped and counted.
        for i in range(200):
            peer.send(voice(1000 + i))
        peer.send(packet(1200))
        wait_for(lambda: usrp_stats(node)["rx"]["overflow"] > 0)
        wait_for(lambda: not usrp_stats(node)["carrier"])
        assert usrp_stats(node)["buffered"] == 0
    finally:
        node.kill()


def test_lost_peer_never_leaves_the_node_keyed(tmp_path: Path, peer: Peer) -> None:
    node = start(tmp_path, peer)
    try:
        events = EventLog(node)
        time.sleep(0.3)
        for i in range(10):  # a transmission that just stops: no keyup-0
            peer.send(voice(i))
            time.sleep(0.02)
        wait_for(lambda: any(e.get("kind") == "peer" and not e["on"] for e in events.events))
        wait_for(lambda: not node.get("/status").json()["tx"]["keyed"])
        status = node.get("/status").json()
        assert status["radio"]["carrier"]["present"] is False
        assert status["audio"]["peer_lost"] >= 1
    finally:
        node.kill()


def test_courtesy_tone_keys_the_usrp_transmitter(tmp_path: Path, peer: Peer) -> None:
    # The PTT logic keys the USRP radio as a real transmitter: the received transmission ends,
    # the courtesy tone goes out as keyup-1 voice, and the hang time ends with one keyup-0.
    node = start(tmp_path, peer)
    try:
        assert node.post("/key").status_code == 200
        assert node.post("/unkey").status_code == 200
        peer.talk(10)
        got = peer.receive(lambda g: any(p[1] == 0 for p in g))
        assert sum(1 for p in got if p[1] == 1) >= 5, got
        assert all(p[2] == 0 and p[3] == 320 for p in got if p[1] == 1)
        end = [p for p in got if p[1] == 0]
        assert end and end[0][3] == 0, "one keyup-0 header ends the transmission"
        seqs = [p[0] for p in got]
        assert seqs == sorted(seqs)
        assert node.get("/status").json()["radio"]["ptt"]["backend"] == "usrp"
    finally:
        node.kill()


def test_dstar_usrp_refuses_every_key_command(tmp_path: Path, peer: Peer) -> None:
    node = start(tmp_path, peer, network="dstar")
    try:
        r = node.post("/key")
        assert r.status_code == 409
        assert "D-Star session is active" in r.text
        status = node.get("/status").json()
        assert status["tx"]["keyed"] is False
        assert status["radio"]["usrp"]["dstar_guard"] is True
        # The D-Star side's own voice still keys the node toward the links, but no courtesy
        # tone (an announcement to the air) keys D-Star back.
        events = EventLog(node)
        time.sleep(0.3)
        peer.talk(10)
        wait_for(lambda: any(e.get("kind") == "carrier" and not e["on"] for e in events.events))
        assert peer.receive(lambda g: False, timeout=1.0) == [], "nothing keyed D-Star"
        assert node.post("/key").status_code == 409
    finally:
        node.kill()
