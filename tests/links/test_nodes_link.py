"""Our own nodes linked to each other speak exactly what the ASL3 captures show.

Three real `node serve` processes take the places of 1999, 1998 and 1997 of the ASL3 captures,
with recording relays between them; they link, monitor, key, unkey and disconnect as the real
nodes did, and what each sends to each other is compared with what the real node sent
(everything but ACKs, keep-alives and periodic lists; link texts spelled out).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.conftest import interop_dir
from tests.interop.harness import EventWatcher, running_node, wait_until
from tests.interop.relay import FORWARD, REVERSE, LossyRelay
from tests.links.replay import Operator, load_script, significant
from tests.node_process import NodeProcess

ASL3 = interop_dir() / "asl3"


def at(node: str) -> tuple[str, int]:
    return ("127.0.0.1", {"1999": 4569, "1998": 4570, "1997": 4573}[node])


@contextmanager
def our_node(
    tmp_path: Path, node_id: str, env: dict[str, str] | None = None, sections: str = ""
) -> Iterator[NodeProcess]:
    """Node `node_id` admitting link calls without a secret; `env` adds to its environment,
    `sections` to its configuration."""
    with running_node(
        tmp_path,
        f"node{node_id}",
        listener='auth = "off"',
        sections=(
            f'[register]\npeer = "127.0.0.1:9"\nnode_id = "{node_id}"\n\n[links]\ndns = false\n'
            f"{sections}"
        ),
        env={"NET_NODE": node_id, "NET_SECRET": "not-used-here", **(env or {})},
    ) as node:
        yield node


def sent(relay: LossyRelay, direction: str) -> list[str]:
    names = (significant(s.frame) for s in relay.frames(direction))
    return [n for n in names if n is not None and not n.startswith("TEXT L ")]


def lists(relay: LossyRelay, direction: str) -> list[str]:
    return [
        n
        for s in relay.frames(direction)
        if (n := significant(s.frame) or "").startswith("TEXT L ")
    ]


def expected(capture: str, us: str, peer: str, operators: list[Operator]) -> list[str]:
    script = load_script(ASL3 / capture, at(us), operators, spurts={})
    return [n for n in script.expected[at(peer)] if not n.startswith("TEXT L ")]


def link_to(node: NodeProcess, peer: str, peer_node: NodeProcess) -> None:
    """`node` links to `peer` (transceive), which is `peer_node` on loopback."""
    addr = f"127.0.0.1:{peer_node.udp_addr[1]}"
    r = node.post("/link", json={"action": "connect", "node": peer, "addr": addr})
    assert r.status_code == 200, r.text


def link_of(node: NodeProcess, peer: str) -> dict | None:
    return next((li for li in node.get("/status").json()["links"] if li["node"] == peer), None)


def test_link_key_unkey_disconnect_as_in_asl_2node(tmp_path: Path) -> None:
    with ExitStack() as stack:
        a = stack.enter_context(our_node(tmp_path, "1999"))
        b = stack.enter_context(our_node(tmp_path, "1998"))
        relay = stack.enter_context(LossyRelay(b.udp_addr, seed=0, impair=False))
        events_a = EventWatcher(a)
        front = f"127.0.0.1:{relay.front_addr[1]}"
        r = a.post("/link", json={"action": "connect", "node": "1998", "addr": front})
        assert r.status_code == 200, r.text
        wait_until(
            "the handshake on A", lambda: (link_of(a, "1998") or {}).get("newkey") == "newkey1"
        )
        wait_until(
            "the handshake on B", lambda: (link_of(b, "1999") or {}).get("newkey") == "newkey1"
        )
        for keyer, other, peer in ((a, b, "1999"), (b, a, "1998")):
            assert keyer.post("/key", json={}).status_code == 200
            wait_until("the far end keyed", lambda o=other, p=peer: link_of(o, p)["keyed"])
            time.sleep(1.0)
            assert keyer.post("/unkey", json={}).status_code == 200
            wait_until("the far end unkeyed", lambda o=other, p=peer: not link_of(o, p)["keyed"])
        keyed = [e for e in events_a.named("link") if e["kind"] == "keyed" and e["node"] == "1998"]
        assert [e["keyed"] for e in keyed] == [True, False]
        assert a.post("/link", json={"action": "disconnect", "node": "1998"}).status_code == 200
        wait_until("the link gone on B", lambda: b.get("/status").json()["links"] == [])
        time.sleep(0.5)

    ops = [
        Operator(0.0, "/link", {"action": "connect", "node": "1998"}),
        Operator(6.039, "/key"),
        Operator(9.099, "/unkey"),
        Operator(20.879, "/key"),
        Operator(22.920, "/unkey"),
        Operator(63.46, "/link", {"action": "disconnect", "node": "1998"}),
    ]
    capture = "asl_2node_noauth.pcap"
    assert sent(relay, FORWARD) == expected(capture, "1999", "1998", ops)
    assert sent(relay, REVERSE) == expected(capture, "1998", "1999", ops)
    # The lists: the caller's at answer and its kick, the callee's at answer (both empty).
    assert lists(relay, FORWARD) == ["TEXT L ", "TEXT L "]
    assert lists(relay, REVERSE) == ["TEXT L "]


def test_monitor_relay_and_disconnect_all_as_in_asl_3node_monitor(tmp_path: Path) -> None:
    with ExitStack() as stack:
        a = stack.enter_context(our_node(tmp_path, "1999"))
        b = stack.enter_context(our_node(tmp_path, "1998"))
        c = stack.enter_context(our_node(tmp_path, "1997"))
        ab = stack.enter_context(LossyRelay(b.udp_addr, seed=0, impair=False))
        ca = stack.enter_context(LossyRelay(a.udp_addr, seed=0, impair=False))
        events_a = EventWatcher(a)
        r = a.post(
            "/link",
            json={"action": "connect", "node": "1998", "addr": f"127.0.0.1:{ab.front_addr[1]}"},
        )
        assert r.status_code == 200, r.text
        wait_until("A-B up", lambda: (link_of(b, "1999") or {}).get("newkey") == "newkey1")
        r = c.post(
            "/link",
            json={"action": "monitor", "node": "1999", "addr": f"127.0.0.1:{ca.front_addr[1]}"},
        )
        assert r.status_code == 200, r.text
        wait_until("C-A up", lambda: (link_of(a, "1997") or {}).get("newkey") == "newkey1")
        assert link_of(c, "1999")["mode"] == "monitor"
        # A sees an ordinary link (app_rpt's callee cannot tell) and advertises it as such.
        assert link_of(a, "1997")["mode"] == "transceive"
        wait_until("B learns of 1997", lambda: link_of(b, "1999")["nodes"] == ["T1997"])
        assert link_of(c, "1999")["nodes"] == ["T1998"]

        # C keys while only monitoring: nothing goes out.
        before = len(ca.frames(FORWARD))
        assert c.post("/key", json={}).status_code == 200
        time.sleep(1.0)
        assert c.post("/unkey", json={}).status_code == 200
        assert ca.counters[FORWARD]["mini"] == 0
        keying = {"VOICE", "RADIO_KEY", "RADIO_UNKEY", "CNG"}
        assert not keying & {significant(s.frame) for s in ca.frames(FORWARD)[before:]}
        assert not link_of(a, "1997")["keyed"]

        # B keys: A hears it and passes it on to C.
        assert b.post("/key", json={}).status_code == 200
        wait_until("C hears B through A", lambda: link_of(c, "1999")["keyed"])
        time.sleep(1.5)
        assert b.post("/unkey", json={}).status_code == 200
        wait_until("C unkeyed", lambda: not link_of(c, "1999")["keyed"])
        assert ca.counters[REVERSE]["mini"] > 50

        assert a.post("/link", json={"action": "disconnect_all"}).status_code == 200
        wait_until("B and C unlinked", lambda: not link_of(b, "1999") and not link_of(c, "1999"))
        gone = [e["node"] for e in events_a.named("link") if e["kind"] == "disconnected"]
        assert sorted(gone) == ["1997", "1998"]
        time.sleep(0.5)

    ops = [
        Operator(0.0, "/link", {"action": "connect", "node": "1998"}),
        Operator(2.004, "/link", {"action": "monitor", "node": "1999"}),
        Operator(4.5, "/key"),
        Operator(5.5, "/unkey"),
        Operator(9.193, "/key"),
        Operator(10.733, "/unkey"),
        Operator(13.72, "/link", {"action": "disconnect_all"}),
    ]
    capture = "asl_3node_monitor.pcap"
    assert sent(ab, FORWARD) == expected(capture, "1999", "1998", ops)
    assert sent(ab, REVERSE) == expected(capture, "1998", "1999", ops)
    assert sent(ca, FORWARD) == expected(capture, "1997", "1999", ops)
    assert sent(ca, REVERSE) == expected(capture, "1999", "1997", ops)


def test_a_link_coming_up_behind_a_neighbour_reaches_us_within_a_kick(tmp_path: Path) -> None:
    """A-B-C of our own nodes: when B's link to C comes up, A sees C as linked (T), not
    connecting (C), with B's kick (150-250 ms), not with B's periodic list 30 s later."""
    with ExitStack() as stack:
        a = stack.enter_context(our_node(tmp_path, "1999"))
        b = stack.enter_context(our_node(tmp_path, "1998"))
        c = stack.enter_context(our_node(tmp_path, "1997"))
        link_to(a, "1998", b)
        wait_until("A-B up", lambda: (link_of(b, "1999") or {}).get("newkey") == "newkey1")
        link_to(b, "1997", c)
        wait_until("B-C up", lambda: (link_of(c, "1998") or {}).get("state") == "up")
        # Far below the 30 s of the periodic list.
        wait_until("A sees 1997 linked", lambda: link_of(a, "1998")["nodes"] == ["T1997"], 3.0)
        # The snapshot's graph says the same: 1997 stands behind 1998, transceiving.
        network = a.get("/status").json()["network"]
        edge = {"from": "1998", "to": "1997", "mode": "transceive", "adjacent": False}
        assert edge in network["edges"]
        # And C hears of A through B's list to it.
        wait_until("C sees 1999", lambda: link_of(c, "1998")["nodes"] == ["T1999"], 3.0)
