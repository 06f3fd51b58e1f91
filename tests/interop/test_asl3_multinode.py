"""Two of our nodes in one process on one IAX2 port against a real ASL3 node.

ASL3's node list is changed in the test's copy so that our 1000 and 1001 are at the same
address and port (one `node serve` with `[nodes.1001]`). ASL3 links its 1999 to our 1000 and its
1998 to our 1001: each keyed ASL3 node is heard only in the conference of the node it is linked
to. Then our two nodes link locally, and ASL3 1999's audio reaches ASL3 1998 (its USRP
transmitter) through both of ours.
"""

from __future__ import annotations

import re
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.interop.asl3 import Asl3Node, require_asl3
from tests.interop.harness import running_node, wait_until
from tests.interop.softphone import Softphone, band_levels_db
from tests.interop.test_asl3_live import key_asl3_receiver
from tests.node_process import NodeProcess

FURTHER = """
[links]
dns = false

[nodes.1001]
[nodes.1001.audio]
backend = "none"
[nodes.1001.links]
dns = false
"""


@pytest.fixture(scope="module")
def asl3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Asl3Node]:
    node = Asl3Node.install(tmp_path_factory.mktemp("asl3"), require_asl3())
    # Our 1001 lives where our 1000 does: one address and port for both.
    rpt = node.root / "etc" / "asterisk" / "rpt.conf"
    port = node.node_ports["1000"]
    rpt.write_text(
        re.sub(
            r"(?m)^1001 = radio@127\.0\.0\.1:\d+/1001,NONE",
            f"1001 = radio@127.0.0.1:{port}/1001,NONE",
            rpt.read_text(),
        )
    )
    node.node_ports["1001"] = port
    node.start()
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture
def ours(tmp_path: Path, asl3: Asl3Node) -> Iterator[NodeProcess]:
    with running_node(
        tmp_path,
        "host",
        codec_policy="ulaw_only",
        listener='auth = "off"',
        top='node_id = "1000"',
        sections=FURTHER,
        udp_port=asl3.node_ports["1000"],
    ) as node:
        yield node


class UsrpListener:
    """Stands where an ASL3 node's USRP radio transmits: the keyup-1 voice it sends."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.1)

    def voice(self, seconds: float) -> np.ndarray:
        frames: list[bytes] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                data, _ = self.sock.recvfrom(2048)
            except TimeoutError:
                continue
            keyup = struct.unpack_from(">I", data, 12)[0]
            if data[:4] == b"USRP" and keyup and len(data) == 32 + 320:
                frames.append(data[32:])
        return np.frombuffer(b"".join(frames), dtype="<i2")

    def close(self) -> None:
        self.sock.close()


def tone_db(pcm: np.ndarray, hz: float = 1000) -> float:
    return band_levels_db(pcm, 8000, [hz])[0] if len(pcm) else -200.0


def established(asl3: Asl3Node, theirs: str, ours: str) -> bool:
    return asl3.links(theirs).get(ours) == "ESTABLISHED"


def test_two_of_our_nodes_on_one_port_each_hear_only_their_asl3_node(
    asl3: Asl3Node, ours: NodeProcess
) -> None:
    asl3.mark()
    asl3.cli("rpt fun 1999 *31000")
    asl3.cli("rpt fun 1998 *31001")
    try:
        wait_until("1999 - 1000", lambda: established(asl3, "1999", "1000"), 30)
        wait_until("1998 - 1001", lambda: established(asl3, "1998", "1001"), 30)
        for number, other in (("1000", "1999"), ("1001", "1998")):
            links = ours.get(f"/nodes/{number}/status").json()["links"]
            assert [li["node"] for li in links] == [other], (number, links)
        with Softphone(name="P") as p, Softphone(name="Q") as q:
            cp = p.dial(ours.udp_addr, "1000")
            cq = q.dial(ours.udp_addr, "1001")
            wait_until("answered", lambda: p.answered(cp) and q.answered(cq))
            key_asl3_receiver(asl3, "1999", 2.0)
            wait_until("1000's caller hears 1999", lambda: p.heard_ms(cp) >= 1000, 20)
            assert tone_db(p.recording(cp).pcm()) > -30
            assert q.heard_ms(cq) == 0, "1001's conference stays quiet"
            heard_p = p.heard_ms(cp)
            key_asl3_receiver(asl3, "1998", 2.0)
            wait_until("1001's caller hears 1998", lambda: q.heard_ms(cq) >= 1000, 20)
            assert tone_db(q.recording(cq).pcm()) > -30
            # What 1000's caller heard since is 1999's tail at most, never 1998's tone.
            assert p.heard_ms(cp) - heard_p < 500
        assert not asl3.warnings("iax2")
    finally:
        asl3.cli("rpt fun 1999 *11000")
        asl3.cli("rpt fun 1998 *11001")


def test_asl3_1999_reaches_asl3_1998_through_both_of_ours_linked_locally(
    asl3: Asl3Node, ours: NodeProcess
) -> None:
    asl3.cli("rpt fun 1999 *31000")
    asl3.cli("rpt fun 1998 *31001")
    listener = UsrpListener(asl3.usrp["1998"][1])
    try:
        wait_until("1999 - 1000", lambda: established(asl3, "1999", "1000"), 30)
        wait_until("1998 - 1001", lambda: established(asl3, "1998", "1001"), 30)
        r = ours.post("/nodes/1000/link", {"action": "connect", "node": "1001"})
        assert r.status_code == 200, r.text
        wait_until(
            "the local link up at both ends",
            lambda: all(
                any(li["node"] == other and li["state"] == "up" for li in links)
                for links, other in (
                    (ours.get("/nodes/1000/status").json()["links"], "1001"),
                    (ours.get("/nodes/1001/status").json()["links"], "1000"),
                )
            ),
            15,
        )
        # ASL3 learns the network through our lists: 1998 sees 1999 behind our nodes.
        wait_until("1998 knows 1999", lambda: "1999" in asl3.cli("rpt nodes 1998"), 60)
        listener.voice(3.0)  # whatever 1998 sent on its own (telemetry) is not 1999's
        key_asl3_receiver(asl3, "1999", 2.5)
        got = listener.voice(6.0)
        assert len(got) >= 8000, f"{len(got)} samples from 1998's transmitter"
        assert tone_db(got) > -30, "1999's 1 kHz tone, through 1000 and 1001"
    finally:
        listener.close()
        asl3.cli("rpt fun 1999 *11000")
        asl3.cli("rpt fun 1998 *11001")
