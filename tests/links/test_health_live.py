"""Network health between two real `node serve` processes linked on loopback: the link's
`health` in the snapshot and in /stats fills in (the RTT once a LAGRQ round measured it, what
each side receives, the far end's RR figures from its PONG), and `health` events arrive.

The keep-alives and the health tick are made faster in the child processes (LAGRQ every 0.5 s,
PING every 1 s, a health check every 0.5 s instead of 10 s, 21 s and 5 s) by a `sitecustomize`
module on their PYTHONPATH, the out-of-process form of the monkeypatch the in-process tests use.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from tests.interop.harness import EventWatcher, wait_until
from tests.links.test_nodes_link import link_of, our_node
from tests.node_process import NodeProcess

FAST_KEEPALIVES = """\
import node.controller
import node.iax2.call

node.iax2.call.LAGRQ_INTERVAL = 0.5
node.iax2.call.PING_INTERVAL = 1.0
node.controller.HEALTH_INTERVAL = 0.5
"""


@contextmanager
def fast_node(tmp_path: Path, node_id: str, sections: str = "") -> Iterator[NodeProcess]:
    hooks = tmp_path / f"hooks{node_id}"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(FAST_KEEPALIVES)
    path = os.pathsep.join(p for p in (str(hooks), os.environ.get("PYTHONPATH", "")) if p)
    with our_node(tmp_path, node_id, env={"PYTHONPATH": path}, sections=sections) as node:
        yield node


def measured(node: NodeProcess, peer: str) -> dict[str, Any] | None:
    """The link's health once its RTT and the far end's RR figures are in."""
    link = link_of(node, peer) or {}
    health = link.get("health") or {}
    return health if health.get("rtt_ms") is not None and health.get("peer") else None


def test_linked_nodes_show_each_others_health(tmp_path: Path) -> None:
    with ExitStack() as stack:
        # A normalises the voice of node 1998 (its own override; [bridge] normalize is off).
        a = stack.enter_context(fast_node(tmp_path, "1999", "[links.1998]\nnormalize = true\n"))
        b = stack.enter_context(fast_node(tmp_path, "1998"))
        events_a = EventWatcher(a)
        b_addr = f"127.0.0.1:{b.udp_addr[1]}"
        r = a.post("/link", json={"action": "connect", "node": "1998", "addr": b_addr})
        assert r.status_code == 200, r.text
        # Just dialled: a link without figures yet, every other key as before.
        link = r.json()["links"][0]
        assert link["node"] == "1998" and "health" in link
        wait_until("the link up on A", lambda: (link_of(a, "1998") or {}).get("state") == "up")

        # A's LAGRQ every 0.5 s gives A an RTT; B's PING every second gives A B's RR figures.
        health = wait_until("A's RTT and B's RR figures", lambda: measured(a, "1998"))
        assert isinstance(health["rtt_ms"], int) and 0 <= health["rtt_ms"] < 1000
        assert health["degraded"] is False
        rx = health["rx"]
        assert rx is not None
        assert set(rx) == {
            "jitter_ms",
            "loss_pct",
            "lost",
            "late",
            "frames_in",
            "delay_ms",
            "target_ms",
        }
        peer = health["peer"]
        assert set(peer) == {
            "jitter_ms",
            "loss_pct",
            "lost",
            "packets",
            "delay_ms",
            "dropped",
            "out_of_order",
        }
        assert peer["loss_pct"] == 0 and peer["lost"] == 0
        # The other way round too: B answers our LAGRQs and PINGs, and measures its own.
        b_health = wait_until("B's RTT", lambda: measured(b, "1999"))
        assert b_health["rtt_ms"] is not None

        # The health event: the same figures, every tick while there are links.
        event = events_a.wait_for(
            lambda e: (
                e["event"] == "health"
                and any(
                    li["node"] == "1998" and li["health"]["rtt_ms"] is not None for li in e["links"]
                )
            )
        )
        assert event["calls"] == []
        (entry,) = event["links"]
        assert entry["call"] == link_of(a, "1998")["call"]
        assert set(entry["health"]) == {"rtt_ms", "rx", "peer", "degraded"}
        # /stats carries them as well.
        stats = a.get("/stats").json()["health"]
        assert [li["node"] for li in stats["links"]] == ["1998"] and stats["calls"] == []

        # The levels event: the link's meters, normalised on A by its override, not on B.
        event = events_a.wait_for(lambda e: e["event"] == "levels" and e["links"])
        (entry,) = event["links"]
        assert entry["node"] == "1998" and entry["call"] == link_of(a, "1998")["call"]
        assert set(entry["rx"]) == set(entry["tx"]) == {"lufs", "peak_dbfs", "clipped", "speech"}
        assert entry["gain_db"] is not None
        (b_entry,) = b.get("/stats").json()["levels"]["links"]
        assert b_entry["node"] == "1999" and b_entry["gain_db"] is None

        # Healthy on loopback: no link went degraded.
        assert not [e for e in events_a.named("link") if e["kind"] in ("degraded", "recovered")]
        assert a.post("/link", json={"action": "disconnect", "node": "1998"}).status_code == 200
        wait_until("the link gone on A", lambda: link_of(a, "1998") is None)
