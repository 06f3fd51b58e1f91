"""Two of our nodes in one `node serve` on one IAX2 port: inbound calls reach the node they
call, a number the host does not serve is refused as chan_iax2 refuses it, each node is its own
conference, and a local link joins the two without a datagram."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from node.iax2.call import CallRejected
from tests.control.ami_clients import Allmon3
from tests.interop.harness import EventWatcher, running_node, wait_until
from tests.interop.softphone import Softphone, band_levels_db
from tests.node_process import NodeProcess, free_port

FURTHER = """
[links]
dns = false

[nodes.1001]
[nodes.1001.audio]
backend = "none"
[nodes.1001.links]
dns = false
"""


@pytest.fixture
def host(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(
        tmp_path, "host", listener='auth = "off"', top='node_id = "1000"', sections=FURTHER
    ) as node:
        yield node


def calls_of(node: NodeProcess, number: str) -> list[dict]:
    return node.get(f"/nodes/{number}/status").json()["calls"]


def tone(hz: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * 8000)) / 8000
    return (8000 * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def heard_hz(phone: Softphone, callno: int, hz: float) -> float:
    """The level (dB) of `hz` in what the phone heard on the call."""
    pcm = phone.recording(callno).pcm()
    return band_levels_db(pcm, 8000, [hz])[0] if len(pcm) else -200.0


def test_calls_reach_the_node_they_call_and_no_other(host: NodeProcess) -> None:
    nodes = host.get("/nodes").json()["nodes"]
    assert [(n["node"], n["first"]) for n in nodes] == [("1000", True), ("1001", False)]
    # Each node's status page, which offers the others (the snapshot's `hosted`).
    page = host.get("/nodes/1001/")
    assert page.status_code == 200 and 'id="hosted"' in page.text
    assert host.get("/nodes/1001/status").json()["hosted"] == ["1000", "1001"]
    assert host.get("/nodes/2000/status").status_code == 404
    with (
        Softphone(name="A") as a,
        Softphone(name="B") as b,
        Softphone(name="C") as c,
        Softphone(name="X") as x,
    ):
        ca = a.dial(host.udp_addr, "1000")
        cb = b.dial(host.udp_addr, "1000")
        cc = c.dial(host.udp_addr, "1001")
        wait_until("three answered", lambda: a.answered(ca) and b.answered(cb) and c.answered(cc))
        assert len(calls_of(host, "1000")) == 2 and len(calls_of(host, "1001")) == 1
        # The top level is the first node's.
        assert len(host.get("/status").json()["calls"]) == 2
        # A number the host does not serve: chan_iax2's refusal of a missing extension.
        cx = x.dial(host.udp_addr, "2000")
        wait_until("refused", lambda: x.events_of(CallRejected, cx))
        rejected = x.events_of(CallRejected, cx)[0]
        assert (rejected.cause, rejected.causecode) == ("No such context/extension", 3)
        # A talks: B (the same node) hears it, C (the other node) does not.
        a.send_pcm(ca, tone(1000, 1.5))
        wait_until("B hears A", lambda: b.heard_ms(cb) >= 1000, 10)
        assert heard_hz(b, cb, 1000) > -30
        assert c.heard_ms(cc) == 0


def test_a_local_link_joins_the_two_conferences_without_the_network(host: NodeProcess) -> None:
    # Node 1001's own stream: its events carry its number (a link event's `node` is 1000).
    stream_1001 = SimpleNamespace(base_url=host.base_url + "/nodes/1001")
    events_1001 = EventWatcher(stream_1001)  # type: ignore[arg-type]
    before = host.get("/stats").json()["datagrams_out"]
    r = host.post("/nodes/1000/link", {"action": "connect", "node": "1001"})
    assert r.status_code == 200, r.text

    def linked(number: str, other: str) -> bool:
        links = host.get(f"/nodes/{number}/status").json()["links"]
        return any(li["node"] == other and li["state"] == "up" for li in links)

    wait_until("both ends up", lambda: linked("1000", "1001") and linked("1001", "1000"), 15)
    link = events_1001.wait_for(lambda e: e["event"] == "link" and e["kind"] == "connected")
    assert (link["node"], link["node_id"]) == ("1000", "1001")
    # The link's own traffic (its call set-up, handshake, lists) never reaches the socket.
    time.sleep(0.5)
    assert host.get("/stats").json()["datagrams_out"] == before
    with Softphone(name="A") as a, Softphone(name="C") as c:
        ca = a.dial(host.udp_addr, "1000")
        cc = c.dial(host.udp_addr, "1001")
        wait_until("answered", lambda: a.answered(ca) and c.answered(cc))
        a.send_pcm(ca, tone(700, 4.0))
        # 1001 sees the link keyed while A talks: A's voice keys its end of the local link.
        wait_until(
            "the far end keyed",
            lambda: any(
                li["node"] == "1000" and li["keyed"]
                for li in host.get("/nodes/1001/status").json()["links"]
            ),
        )
        wait_until("C hears A through the local link", lambda: c.heard_ms(cc) >= 1000, 10)
        assert heard_hz(c, cc, 700) > -30
    r = host.post("/nodes/1001/link", {"action": "disconnect", "node": "1000"})
    assert r.status_code == 200, r.text
    wait_until(
        "both ends gone",
        lambda: (
            not host.get("/nodes/1000/status").json()["links"]
            and not host.get("/nodes/1001/status").json()["links"]
        ),
        15,
    )


AMI_PASS = "ami-pass-host-canary"


def test_allmon3_polls_each_node_of_the_host_through_one_ami(tmp_path: Path) -> None:
    ami = free_port()
    with running_node(
        tmp_path,
        "host",
        listener='auth = "off"',
        top='node_id = "1000"',
        sections=f'[ami]\nenabled = true\nbind = "127.0.0.1:{ami}"\n' + FURTHER,
        env={"NET_AMI_SECRET": AMI_PASS},
    ) as host:
        client = Allmon3("127.0.0.1", ami, "admin", AMI_PASS)
        assert "1000" in asyncio.run(client.command("rpt localnodes"))
        assert "1001" in asyncio.run(client.command("rpt localnodes"))
        # A link made through the AMI on the second node, to the first: a local link.
        asyncio.run(client.command("rpt cmd 1001 ilink 3 1000"))
        wait_until(
            "linked",
            lambda: any(
                li["node"] == "1000" and li["state"] == "up"
                for li in host.get("/nodes/1001/status").json()["links"]
            ),
        )

        async def polls() -> tuple[dict, dict]:
            one = Allmon3("127.0.0.1", ami, "admin", AMI_PASS)
            assert await one.connect()
            try:
                return await one.poll("1000"), await one.poll("1001")
            finally:
                await one.logoff()

        wait_until(
            "both polls show the link", lambda: all(p["CONNS"] for p in asyncio.run(polls()))
        )
        first, second = asyncio.run(polls())
        assert list(first["CONNS"]) == ["1001"] and list(second["CONNS"]) == ["1000"]


def test_a_permanent_local_link_comes_up_at_start(tmp_path: Path) -> None:
    with running_node(
        tmp_path,
        "host",
        listener='auth = "off"',
        top='node_id = "1000"',
        sections=FURTHER + "[nodes.1001.links.1000]\npermanent = true\n",
    ) as host:

        def up(number: str, other: str) -> bool:
            links = host.get(f"/nodes/{number}/status").json()["links"]
            return any(li["node"] == other and li["state"] == "up" for li in links)

        wait_until("the permanent local link up", lambda: up("1001", "1000") and up("1000", "1001"))
        link = next(li for li in host.get("/nodes/1001/status").json()["links"])
        assert link["permanent"] and link["direction"] == "outbound"
        assert host.get("/stats").json()["datagrams_out"] == 0
