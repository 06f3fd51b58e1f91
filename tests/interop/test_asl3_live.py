"""Against a real ASL3 node (Asterisk 22 + app_rpt), live: linking both ways, keying both ways.

ASL3 runs from a temporary copy of the shared build (`tests/interop/asl3.py`); our `node serve`
takes the place of node 1000 in its node list. What ASL3 thinks is read from its own CLI
(`rpt lstats`, `rpt show variables`), and its log must hold no warning about our frames.
"""

from __future__ import annotations

import math
import signal
import struct
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from socket import AF_INET, SOCK_DGRAM, socket

import pytest

from tests.interop.asl3 import Asl3Node, require_asl3
from tests.interop.harness import free_udp_port, running_node, wait_until
from tests.interop.relay import LossyRelay
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
def our_node(tmp_path: Path, node_id: str, udp_port: int, extra: str = "") -> Iterator[NodeProcess]:
    """Our node as `node_id` on `udp_port`; `extra` adds config sections."""
    with running_node(
        tmp_path,
        f"node{node_id}",
        listener='auth = "off"',
        sections=f'[register]\npeer = "127.0.0.1:9"\nnode_id = "{node_id}"\n\n'
        f"[links]\ndns = false\n{extra}",
        env={"NET_NODE": node_id, "NET_SECRET": "not-used-here"},
        udp_port=udp_port,
    ) as node:
        yield node


def node_1000(
    tmp_path: Path, asl3: Asl3Node, extra: str = ""
) -> AbstractContextManager[NodeProcess]:
    """Our node as 1000, where ASL3's node list expects it."""
    return our_node(tmp_path, "1000", asl3.node_ports["1000"], extra)


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
        wait_until("our link keyed by ASL3", lambda: link_of(ours, "1999")["keyed"])
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


#: How long app_rpt keeps a link it takes for lost (its DISC_TIME) is 10 s; a disconnect it
#: honours drops the link at once (0.1-0.4 s measured here). Waiting this long tells the two apart
#: on a loaded host without timing anything.
HONOURED = 5.0


def link_1999(ours: NodeProcess, asl3: Asl3Node, dialled_by: str) -> None:
    """Bring up the link between our 1000 and ASL3's 1999, dialled by `dialled_by`."""
    if dialled_by == "us":
        r = ours.post("/link", json={"action": "connect", "node": "1999", "addr": asl3.iax_addr})
        assert r.status_code == 200, r.text
    else:
        asl3.cli("rpt fun 1999 *31000")
    wait_until("ASL3 lists 1000", lambda: asl3.links("1999").get("1000") == "ESTABLISHED")
    wait_until("our link up", lambda: (link_of(ours, "1999") or {}).get("state") == "up")


@pytest.mark.parametrize("dialled_by", ["us", "asl3"])
@pytest.mark.parametrize("how", ["disconnect", "disconnect_all"])
def test_asl3_honours_our_disconnect_at_once(
    tmp_path: Path, asl3: Asl3Node, dialled_by: str, how: str
) -> None:
    asl3.mark()
    with node_1000(tmp_path, asl3) as ours:
        link_1999(ours, asl3, dialled_by)
        r = ours.post("/link", json={"action": how, "node": "1999"})
        assert r.status_code == 200, r.text
        wait_until("ASL3 drops 1000", lambda: "1000" not in asl3.links("1999"), HONOURED)
        wait_until("our side gone", lambda: link_of(ours, "1999") is None)
        # ASL3 read !!DISCONNECT!!: it does not take the link for lost and never redials it.
        time.sleep(1.0)
        assert "1000" not in asl3.links("1999")
    assert asl3.warnings("chan_iax2") == []


def test_asl3_permanent_link_to_us_stays_down_after_our_disconnect(
    tmp_path: Path, asl3: Asl3Node
) -> None:
    asl3.mark()
    with node_1000(tmp_path, asl3) as ours:
        asl3.cli("rpt cmd 1999 ilink 13 1000")
        wait_until("ASL3 lists 1000", lambda: asl3.links("1999").get("1000") == "ESTABLISHED")
        wait_until("our link up", lambda: (link_of(ours, "1999") or {}).get("state") == "up")
        assert ours.post("/link", json={"action": "disconnect", "node": "1999"}).status_code == 200
        wait_until("ASL3 drops 1000", lambda: "1000" not in asl3.links("1999"), HONOURED)
        # app_rpt redials a lost permanent link within seconds; one disconnected is left alone.
        time.sleep(8.0)
        assert "1000" not in asl3.links("1999")
        assert link_of(ours, "1999") is None
    assert asl3.warnings("chan_iax2") == []


def test_shutdown_ends_links_cleanly_and_they_come_back_with_us(
    tmp_path: Path, asl3: Asl3Node
) -> None:
    """Stopping the node: our permanent link to 1999 is ended with !!DISCONNECT!! (ASL3 drops it
    at once), ASL3's permanent link to us with a plain HANGUP (it drops it at once and redials);
    when the node starts again both are up without anyone asking."""
    asl3.mark()
    permanent = f'\n[links.1999]\npermanent = true\naddr = "{asl3.iax_addr}"\n'
    with node_1000(tmp_path, asl3, permanent) as ours:
        wait_until(
            "our permanent link up", lambda: (link_of(ours, "1999") or {}).get("state") == "up"
        )
        asl3.cli("rpt cmd 1998 ilink 13 1000")
        wait_until("1998's link to us", lambda: asl3.links("1998").get("1000") == "ESTABLISHED")
        ours.proc.send_signal(signal.SIGTERM)
        assert ours.proc.wait(timeout=20) == 0
    wait_until("ASL3 drops 1999-1000", lambda: "1000" not in asl3.links("1999"), HONOURED)
    wait_until(
        "ASL3 drops 1998-1000", lambda: asl3.links("1998").get("1000") != "ESTABLISHED", HONOURED
    )
    with node_1000(tmp_path, asl3, permanent) as ours:
        wait_until(
            "both links back",
            lambda: (
                {"1998", "1999"}
                <= {li["node"] for li in ours.get("/status").json()["links"] if li["state"] == "up"}
            ),
            60,
        )
        assert asl3.links("1999").get("1000") == "ESTABLISHED"
    asl3.cli("rpt cmd 1998 ilink 6 0")
    assert asl3.warnings("chan_iax2") == []


def up_links(node: NodeProcess) -> set[str]:
    return {li["node"] for li in node.get("/status").json()["links"] if li["state"] == "up"}


def test_permanent_links_both_ways_survive_a_dead_path(tmp_path: Path, asl3: Asl3Node) -> None:
    """Our node as 1001 behind two relays (ASL3's node list has 1001 on the first relay's
    port): our permanent link to 1999, and 1998's permanent link to us (app_rpt's ilink 13).
    The path goes dead for 30 s or until both sides have noticed (a LAGRQ or PING goes
    unanswered through its retransmissions: up to about 30 s), and once it is back both links
    come up again by themselves."""
    port = free_udp_port()
    iax = ("127.0.0.1", asl3.iax_port)
    with (
        LossyRelay(
            ("127.0.0.1", port), seed=0, impair=False, front_port=asl3.node_ports["1001"]
        ) as into_us,
        LossyRelay(iax, seed=0, impair=False) as into_asl3,
    ):
        permanent = (
            f'\n[links.1999]\npermanent = true\naddr = "127.0.0.1:{into_asl3.front_addr[1]}"\n'
        )
        with our_node(tmp_path, "1001", port, permanent) as ours:
            asl3.cli("rpt cmd 1998 ilink 13 1001")
            wait_until("both links up", lambda: up_links(ours) == {"1998", "1999"}, 30)
            asl3.mark()
            into_us.blackout = into_asl3.blackout = True
            dead_at = time.monotonic()
            wait_until("our side notices", lambda: not up_links(ours), 60)
            wait_until(
                "ASL3 notices",
                lambda: all(asl3.links(n).get("1001") != "ESTABLISHED" for n in ("1998", "1999")),
                60,
            )
            time.sleep(max(0.0, dead_at + 30.0 - time.monotonic()))
            into_us.blackout = into_asl3.blackout = False
            back_at = time.monotonic()
            wait_until("both links up again", lambda: up_links(ours) == {"1998", "1999"}, 30)
            relinked = time.monotonic() - back_at
            wait_until(
                "ASL3 lists both",
                lambda: all(asl3.links(n).get("1001") == "ESTABLISHED" for n in ("1998", "1999")),
            )
            print(f"relinked {relinked:.1f} s after the path came back")
            # Ending both from our side sticks: neither permanent link comes back.
            r = ours.post("/link", json={"action": "disconnect_all", "node": ""})
            assert r.status_code == 200, r.text
            wait_until(
                "ASL3 drops both",
                lambda: all("1001" not in asl3.links(n) for n in ("1998", "1999")),
                HONOURED,
            )
            time.sleep(8.0)
            assert not up_links(ours)
            assert all("1001" not in asl3.links(n) for n in ("1998", "1999"))


def test_a_node_joining_behind_asl3_is_seen_connected_soon(tmp_path: Path, asl3: Asl3Node) -> None:
    """A (our 1000) - ASL3's 1999 - C (our 1001): when C links to 1999, A's tree shows 1001
    linked in transceive mode with ASL3's next list after the change (app_rpt kicks its lists
    out on a change), not 30 s later with its periodic one; C's tree shows 1000 likewise."""
    with (
        node_1000(tmp_path, asl3) as a,
        our_node(tmp_path, "1001", asl3.node_ports["1001"]) as c,
    ):
        link_1999(a, asl3, "us")
        r = c.post("/link", json={"action": "connect", "node": "1999", "addr": asl3.iax_addr})
        assert r.status_code == 200, r.text
        wait_until("ASL3 lists 1001", lambda: asl3.links("1999").get("1001") == "ESTABLISHED")
        joined = time.monotonic()

        def mode_of(node: NodeProcess, other: str) -> str | None:
            nodes = node.get("/status").json()["network"]["nodes"]
            return next((n["mode"] for n in nodes if n["node"] == other), None)

        wait_until("A sees 1001 transceive", lambda: mode_of(a, "1001") == "transceive", 20)
        wait_until("C sees 1000 transceive", lambda: mode_of(c, "1000") == "transceive", 20)
        print(f"A saw 1001 linked {time.monotonic() - joined:.1f} s after it joined")
        for node in (a, c):
            assert (
                node.post("/link", json={"action": "disconnect", "node": "1999"}).status_code == 200
            )
        wait_until("ASL3 drops both", lambda: not {"1000", "1001"} & asl3.links("1999").keys())
