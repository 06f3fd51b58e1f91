"""AMI on two real `node serve` processes linked on loopback, read by clients that parse as
Allmon3 and Supermon do: links made and dropped with `rpt cmd ... ilink`, a softphone on B
talking so that A's link keys, and every XStat/SawStat answer checked against `/status`.

    AMI clients -> node A (2001) <--link--> node B (2002) <- softphone Q (keyed, 1500 Hz)
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tests.control.ami_clients import Allmon3, Supermon
from tests.interop.harness import (
    NODE_A,
    NODE_B,
    NODE_SECRETS,
    EventWatcher,
    node_log,
    register_section,
    running_node,
    wait_until,
)
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, free_port

PHONE_Q = "3002"
AMI_PASS = "ami-pass-0b9d-canary"
LINK_SECRET = "link-secret-ab"


def sections(registrar: Registrar, node: str, ami_port: int, extra: str = "") -> str:
    # Nothing but loopback: no node-number lookups in DNS.
    return register_section(registrar, node) + (
        f'[ami]\nenabled = true\nbind = "127.0.0.1:{ami_port}"\n\n[links]\ndns = false\n\n{extra}'
    )


def env(node: str, other: str) -> dict[str, str]:
    return {
        "NET_NODE": node,
        "NET_SECRET": NODE_SECRETS[node],
        f"NET_PEER_{other}": LINK_SECRET,
        "NET_AMI_SECRET": AMI_PASS,
    }


def link_of(node: NodeProcess, peer: str) -> dict[str, Any] | None:
    return next((li for li in node.get("/status").json()["links"] if li["node"] == peer), None)


def up(node: NodeProcess, peer: str) -> dict[str, Any] | None:
    link = link_of(node, peer)
    return link if link is not None and link["state"] == "up" else None


def seconds(hms: str) -> int:
    h, m, s = (int(x) for x in hms.split(":"))
    return h * 3600 + m * 60 + s


def poll(port: int, node: str) -> dict[str, Any]:
    """One Allmon3 poll (XStat, uptime, SawStat) on a fresh connection."""

    async def go() -> dict[str, Any]:
        client = Allmon3("127.0.0.1", port, "admin", AMI_PASS)
        assert await client.connect()
        try:
            return await client.poll(node)
        finally:
            await client.logoff()

    return asyncio.run(go())


def command(port: int, cmd: str) -> str:
    """What Allmon3's command websocket answers for `cmd`."""
    return asyncio.run(Allmon3("127.0.0.1", port, "admin", AMI_PASS).command(cmd))


def test_allmon3_and_supermon_follow_links_and_keying(tmp_path: Path, registrar: Registrar) -> None:
    ami_a, ami_b = free_port(), free_port()
    with running_node(
        tmp_path,
        "b",
        codec_policy="ulaw_only",
        listener='auth = "required"',
        sections=sections(registrar, NODE_B, ami_b),
        env={**env(NODE_B, NODE_A), f"NET_PEER_{PHONE_Q}": "phone-pass-q"},
    ) as b:
        b_host, b_port = b.udp_addr
        with (
            running_node(
                tmp_path,
                "a",
                codec_policy="ulaw_only",
                listener='auth = "required"',
                sections=sections(
                    registrar, NODE_A, ami_a, f'[links.{NODE_B}]\naddr = "{b_host}:{b_port}"\n'
                ),
                env=env(NODE_A, NODE_B),
            ) as a,
            Softphone(codec_policy="ulaw_only", tone_hz=1500.0, key=True, name="Q") as q,
        ):
            events_a = EventWatcher(a)
            for node in (a, b):
                wait_until(
                    "registration", lambda node=node: node.get("/status").json()["registered"]
                )

            # Nothing linked yet.
            status = poll(ami_a, NODE_A)
            assert status["CONNS"] == {} and not status["TXKEYED"] and not status["RXKEYED"]
            assert status["UPTIME"] >= 0

            # Allmon3's link form: connect (transceive).
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 3 {NODE_B}") == "OK:\r\n\r\n"
            wait_until("the link up on A", lambda: up(a, NODE_B))
            wait_until("the link up on B", lambda: up(b, NODE_A))
            wait_until("the handshake", lambda: up(a, NODE_B)["newkey"] == "newkey1")
            before = up(a, NODE_B)
            status = poll(ami_a, NODE_A)
            after = up(a, NODE_B)
            assert before is not None and after is not None
            conn = status["CONNS"][NODE_B]
            assert conn["DIR"] == "OUT" and conn["CSTATE"] == "ESTABLISHED"
            assert conn["MODE"] == "Transceive"
            assert re.fullmatch(r"\d\d:\d\d:\d\d", conn["CTIME"])
            assert int(before["connected_s"]) <= seconds(conn["CTIME"]) <= after["connected_s"] + 1
            assert conn["PTT"] == "0" and conn["SSK"] == "-1" and conn["SSU"] == "-1"
            assert not status["CONNKEYED"] and not status["TXKEYED"]
            # The other end sees an inbound link.
            status_b = poll(ami_b, NODE_B)
            assert status_b["CONNS"][NODE_A]["DIR"] == "IN"
            assert status_b["CONNS"][NODE_A]["MODE"] == "Transceive"

            # Supermon (both generations) sees the same, with the peer's IP.
            for ng in (False, True):
                sm = Supermon("127.0.0.1", ami_a, ng=ng)
                try:
                    assert sm.banner_ok() and sm.login("admin", AMI_PASS)
                    x = sm.xstat(NODE_A)
                    assert x["conns"][NODE_B]["ip"] == "127.0.0.1"
                    assert x["conns"][NODE_B]["dir"] == "OUT"
                    assert x["conns"][NODE_B]["state"] == "ESTABLISHED"
                    assert x["modes"] == {NODE_B: "T"}
                    assert x["vars"]["RPT_ALINKS"] == f"1,{NODE_B}TU"
                    assert sm.sawstat(NODE_A)[NODE_B]["keyed"] == "0"
                    ok, lines = sm.command(f"rpt lstats {NODE_A}")
                    assert ok and lines[2].startswith(f"{NODE_B}      127.0.0.1 ")
                    ok, lines = sm.command(f"rpt nodes {NODE_A}")
                    assert ok and lines[3] == f"T{NODE_B}"
                finally:
                    sm.close()

            registry = command(ami_a, "iax2 show registry")
            assert registry.startswith("OK:\r\nHost  ")
            assert f"127.0.0.1:{registrar.addr[1]}" in registry and "  Registered\r\n" in registry
            assert registry.endswith("1 IAX2 registrations.\r\n")
            channels = command(ami_a, "iax2 show channels")
            assert f"IAX2/{NODE_B}-" in channels and "ulaw" in channels
            assert channels.endswith("1 active IAX channel\r\n")

            # Q talks into B: the link keys on A ("Transmit - Network Source" in Allmon3).
            cq = q.dial(b.udp_addr, "1", username=PHONE_Q, secret="phone-pass-q")
            assert q.wait_for(lambda s: s.answered(cq))
            events_a.wait_for(
                lambda e: e["event"] == "link" and e["kind"] == "keyed" and e["keyed"]
            )
            wait_until("A's link keyed", lambda: up(a, NODE_B)["keyed"])
            status = poll(ami_a, NODE_A)
            assert status["CONNKEYED"] and status["CONNKEYEDNODE"] == NODE_B
            assert status["TXKEYED"] and not status["RXKEYED"]
            assert status["CONNS"][NODE_B]["PTT"] == "1"
            assert int(status["CONNS"][NODE_B]["SSK"]) >= 0
            assert status["CONNS"][NODE_B]["SSU"] == "-1"

            # Q stops: the link unkeys; SawStat now has both times.
            q.stop_talking(cq)
            wait_until("A's link unkeyed", lambda: not up(a, NODE_B)["keyed"])
            status = poll(ami_a, NODE_A)
            conn = status["CONNS"][NODE_B]
            assert conn["PTT"] == "0" and int(conn["SSK"]) >= int(conn["SSU"]) >= 0
            assert not status["CONNKEYED"] and not status["TXKEYED"]
            q.hangup(cq)

            # Monitor: the same link changes mode in place.
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 2 {NODE_B}") == "OK:\r\n\r\n"
            wait_until("monitor mode", lambda: up(a, NODE_B)["mode"] == "monitor")
            assert poll(ami_a, NODE_A)["CONNS"][NODE_B]["MODE"] == "Monitor"

            # Refusals come back as ERR with the reason.
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 2 {NODE_B}") == (
                f"ERR: node {NODE_B} is already linked (monitor)"
            )

            # Disconnect: gone on both ends, and from XStat.
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 1 {NODE_B}") == "OK:\r\n\r\n"
            assert link_of(a, NODE_B) is None
            wait_until("the link gone from B", lambda: link_of(b, NODE_A) is None)
            assert poll(ami_a, NODE_A)["CONNS"] == {}
            assert poll(ami_b, NODE_B)["CONNS"] == {}

            # A permanent link (ilink 13) survives ilink 1 and goes with ilink 11.
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 13 {NODE_B}") == "OK:\r\n\r\n"
            wait_until("the permanent link up", lambda: up(a, NODE_B))
            assert up(a, NODE_B)["permanent"] is True
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 1 {NODE_B}").startswith(
                f"ERR: node {NODE_B} is a permanent link"
            )
            assert up(a, NODE_B) is not None
            assert command(ami_a, f"rpt cmd {NODE_A} ilink 11 {NODE_B}") == "OK:\r\n\r\n"
            assert link_of(a, NODE_B) is None

            stats = command(ami_a, f"rpt stats {NODE_A}")
            assert "Keyups since system initialization...............: 1\r\n" in stats
            assert "Nodes currently connected to us..................: <NONE>\r\n" in stats

    for node in (a, b):
        log = node_log(node)
        assert "Traceback" not in log, log
        assert AMI_PASS not in log and LINK_SECRET not in log
