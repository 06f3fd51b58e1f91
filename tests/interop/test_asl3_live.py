"""Against a real ASL3 node (Asterisk 22 + app_rpt), live: linking both ways, keying both ways.

ASL3 runs from a temporary copy of the shared build (`tests/interop/asl3.py`); our `node serve`
takes the place of node 1000 in its node list. What ASL3 thinks is read from its own CLI
(`rpt lstats`, `rpt show variables`), and its log must hold no warning about our frames.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from socket import AF_INET, SOCK_DGRAM, socket

import pytest

from tests.interop.asl3 import Asl3Node, require_asl3
from tests.interop.harness import running_node, wait_until
from tests.node_process import NodeProcess


@pytest.fixture(scope="module")
def asl3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Asl3Node]:
    node = Asl3Node.install(tmp_path_factory.mktemp("asl3"), require_asl3())
    node.start()
    try:
        yield node
    finally:
        node.stop()


@contextmanager
def node_1000(tmp_path: Path, asl3: Asl3Node) -> Iterator[NodeProcess]:
    """Our node as 1000, where ASL3's node list expects it."""
    with running_node(
        tmp_path,
        "node1000",
        listener='auth = "off"',
        sections='[register]\npeer = "127.0.0.1:9"\nnode_id = "1000"\n\n[links]\ndns = false\n',
        env={"NET_NODE": "1000", "NET_SECRET": "not-used-here"},
        udp_port=asl3.node_ports["1000"],
    ) as node:
        yield node


def link_of(node: NodeProcess, peer: str) -> dict | None:
    return next((li for li in node.get("/status").json()["links"] if li["node"] == peer), None)


def usrp_voice(seq: int, keyup: bool, pcm: bytes = b"\0" * 320) -> bytes:
    """One USRP packet as chan_usrp reads it: `USRP`, seven big-endian u32 (sequence, memory,
    keyup, talkgroup, type 0 = voice, mpxid, reserved), 160 little-endian samples."""
    return b"USRP" + struct.pack(">7I", seq, 0, int(keyup), 0, 0, 0, 0) + pcm


def tone_frames(seconds: float) -> list[bytes]:
    n = int(seconds * 50)
    return [
        struct.pack(
            "<160h",
            *(
                round(8000 * math.sin(2 * math.pi * 1000 * (k * 160 + i) / 8000))
                for i in range(160)
            ),
        )
        for k in range(n)
    ]


def key_asl3_receiver(asl3: Asl3Node, node: str, seconds: float) -> None:
    """Key ASL3's node receiver through its USRP radio: a tone, then an unkey packet."""
    rx_port, _ = asl3.usrp[node]
    with socket(AF_INET, SOCK_DGRAM) as s:
        start = time.monotonic()
        seq = 0
        for k, pcm in enumerate(tone_frames(seconds)):
            s.sendto(usrp_voice(seq, True, pcm), ("127.0.0.1", rx_port))
            seq += 1
            time.sleep(max(0.0, start + (k + 1) * 0.02 - time.monotonic()))
        s.sendto(usrp_voice(seq, False), ("127.0.0.1", rx_port))


def test_we_link_to_asl3_and_key_both_ways(tmp_path: Path, asl3: Asl3Node) -> None:
    asl3.mark()
    with node_1000(tmp_path, asl3) as ours:
        r = ours.post("/link", json={"action": "connect", "node": "1999", "addr": asl3.iax_addr})
        assert r.status_code == 200, r.text
        wait_until(
            "ASL3 lists 1000 established", lambda: asl3.links("1999").get("1000") == "ESTABLISHED"
        )
        wait_until(
            "our newkey handshake", lambda: (link_of(ours, "1999") or {}).get("newkey") == "newkey1"
        )
        link = link_of(ours, "1999")
        assert link["direction"] == "outbound" and link["mode"] == "transceive"

        # Our operator keys: ASL3 sees link 1000 transceive and keyed, then unkeyed.
        assert ours.post("/key", json={}).status_code == 200
        wait_until(
            "1000TK on ASL3", lambda: "1000TK" in asl3.variables("1999").get("RPT_ALINKS", "")
        )
        assert ours.post("/unkey", json={}).status_code == 200
        wait_until(
            "1000TU on ASL3", lambda: "1000TU" in asl3.variables("1999").get("RPT_ALINKS", "")
        )

        # ASL3's receiver keyed through its USRP radio: our link hears it keyed, with voice.
        call = link_of(ours, "1999")["call"]
        before = ours.get("/stats").json()["legs"][str(call)]["frames_in"]
        key_asl3_receiver(asl3, "1999", 1.5)
        assert link_of(ours, "1999")["keyed"] or wait_until(
            "our link keyed by ASL3", lambda: link_of(ours, "1999")["keyed"]
        )
        assert ours.get("/stats").json()["legs"][str(call)]["frames_in"] - before >= 25
        # ASL3 holds its transmitter for the hang time and telemetry, then unkeys the link.
        wait_until("our link unkeyed", lambda: not link_of(ours, "1999")["keyed"], timeout=20)

        r = ours.post("/link", json={"action": "disconnect", "node": "1999"})
        assert r.status_code == 200, r.text
        wait_until("the link gone on our side", lambda: link_of(ours, "1999") is None)
    wait_until("ASL3 drops 1000", lambda: "1000" not in asl3.links("1999"), timeout=20)


def test_asl3_links_to_us_and_disconnects(tmp_path: Path, asl3: Asl3Node) -> None:
    with node_1000(tmp_path, asl3) as ours:
        asl3.cli("rpt fun 1999 *31000")
        wait_until(
            "ASL3 lists 1000 established", lambda: asl3.links("1999").get("1000") == "ESTABLISHED"
        )
        link = wait_until("the inbound link on our side", lambda: link_of(ours, "1999"))
        assert link["direction"] == "inbound"
        wait_until("our link up", lambda: link_of(ours, "1999")["state"] == "up")
        assert ours.post("/key", json={}).status_code == 200
        wait_until(
            "1000TK on ASL3", lambda: "1000TK" in asl3.variables("1999").get("RPT_ALINKS", "")
        )
        assert ours.post("/unkey", json={}).status_code == 200
        asl3.cli("rpt fun 1999 *11000")
        wait_until("the link gone on our side", lambda: link_of(ours, "1999") is None, timeout=20)
        assert "1000" not in asl3.links("1999")
