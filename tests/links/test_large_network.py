"""A hub of hubs behind a link: 1,000 nodes carried whole through a real `node serve`.

Node 1999 (ours) links to a scripted hub, 2000, whose list names 1,000 nodes; node 1998 (ours)
links to 1999. 1999 holds all 1,000 in its `/status` (the link's `nodes` and the `network`
graph); the list it sends 1998 stays within one TEXT frame a chan_iax2 peer takes in, keeping
its own links and as many of the hub's nodes as fit.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from node.iax2 import call as iax2_call
from node.links.network import MAX_LIST_BYTES
from tests.interop.harness import wait_until
from tests.links.replay import ScriptedNode, Step
from tests.links.test_nodes_link import link_of, link_to, our_node

HUB = [str(30000 + i) for i in range(1000)]


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedNode]:
    # The hub is no Asterisk: it sends its whole list (7,000 bytes) in one TEXT frame, which
    # our engine reads whole (datagrams up to 8,192 bytes). Our own Call would refuse it.
    monkeypatch.setattr(iax2_call, "MAX_TEXT_BYTES", 8000)
    with ScriptedNode("2000") as node:
        yield node


def test_a_thousand_nodes_behind_a_hub_are_carried_whole(tmp_path: Path, hub: ScriptedNode) -> None:
    with our_node(tmp_path, "1999") as a, our_node(tmp_path, "1998") as b:
        r = a.post(
            "/link",
            json={"action": "connect", "node": "2000", "addr": f"{hub.addr[0]}:{hub.addr[1]}"},
        )
        assert r.status_code == 200, r.text
        hub.run(Step(0.0, "text", "!NEWKEY1!"), a.udp_addr)
        hub.run(Step(0.0, "text", "L " + ",".join(f"T{n}" for n in HUB)), a.udp_addr)
        link_to(b, "1999", a)

        # 1999 holds all of them: the link's nodes, the graph, /status.
        wait_until("1999 holds the hub's list", lambda: len(link_of(a, "2000")["nodes"]) == 1000)
        status = a.get("/status").json()
        assert link_of(a, "2000")["nodes"] == [f"T{n}" for n in HUB]
        behind = [e["to"] for e in status["network"]["edges"] if e["from"] == "2000"]
        assert behind == HUB
        assert len(status["network"]["nodes"]) == 1 + 2 + 1000

        # 1998 gets 1999's list cut to what one frame carries: the links, then the hub's first.
        def seen_by_b() -> list[str]:
            return (link_of(b, "1999") or {}).get("nodes") or []

        wait_until("1998 has 1999's list", lambda: len(seen_by_b()) > 500)
        nodes = seen_by_b()
        assert nodes[0] == "T2000" and nodes[1:4] == ["T30000", "T30001", "T30002"]
        assert len(("L " + ",".join(nodes)).encode()) <= MAX_LIST_BYTES
        assert len(nodes) < 1001
        lists = a.get("/status").json()["network"]["lists"]
        assert lists["cut"] >= 1 and lists["entries_dropped"] >= 1001 - len(nodes)
        # The hub hears of 1998 (its own subtree left out of its list, as app_rpt does).
        wait_until("the hub has 1999's list", lambda: "TEXT L T1998" in hub.received)
