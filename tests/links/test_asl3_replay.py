"""Each real ASL3 capture replayed against a real `node serve` (see `tests/links/replay.py`).

Our node takes the place of one node of a capture; the others are scripted peers doing what the
real nodes did. Per peer, the frames our node sends (everything but ACKs and keep-alives, link
texts spelled out) must be the ones the real AllStarLink node sent, in the same order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import interop_dir
from tests.interop.harness import running_node
from tests.links.replay import Operator, ScriptedNode, load_script
from tests.node_process import NodeProcess

ASL3 = interop_dir() / "asl3"
PORTS = {"1999": 4569, "1998": 4570, "1997": 4573}
MD5_USER, MD5_SECRET = "radiosec", "aslpeer-secret"


def at(node: str) -> tuple[str, int]:
    return ("127.0.0.1", PORTS[node])


@dataclass
class Case:
    capture: str
    #: The node our node plays.
    us: str
    operators: list[Operator] = field(default_factory=list)
    #: Per other node: capture times at which it started talking on its own.
    spurts: dict[str, list[float]] = field(default_factory=dict)
    #: Nodes that authenticate the link with MD5 (user radiosec), as 1997 does.
    md5: tuple[str, ...] = ()


def op(t: float, path: str, **body: str) -> Operator:
    return Operator(t, path, body)


CASES = {
    # 1999 links to 1998, keys for 3 s, 1998 keys for 2 s, 1999 unlinks.
    "2node-as-caller": Case(
        "asl_2node_noauth.pcap",
        "1999",
        [
            op(0.0, "/link", action="connect", node="1998"),
            op(6.039, "/key"),
            op(9.099, "/unkey"),
            op(63.46, "/link", action="disconnect", node="1998"),
        ],
        spurts={"1998": [20.879]},
    ),
    "2node-as-callee": Case(
        "asl_2node_noauth.pcap",
        "1998",
        [op(20.879, "/key"), op(22.920, "/unkey")],
        spurts={"1999": [6.039]},
    ),
    # 1999 links to 1998 and (MD5) to 1997, relays each one's voice to the other; 1998 unlinks
    # itself, then 1999 drops everything (ilink 6).
    "3node-as-hub": Case(
        "asl_3node_md5.pcap",
        "1999",
        [
            op(0.0, "/link", action="connect", node="1998"),
            op(3.001, "/link", action="connect", node="1997"),
            op(59.52, "/link", action="disconnect_all"),
        ],
        spurts={"1998": [8.433], "1997": [42.464]},
        md5=("1997",),
    ),
    "3node-as-leaf": Case("asl_3node_md5.pcap", "1998", [op(8.433, "/key"), op(10.493, "/unkey")]),
    "3node-as-md5-callee": Case(
        "asl_3node_md5.pcap", "1997", [op(42.464, "/key"), op(43.504, "/unkey")], md5=("1999",)
    ),
    # 1999 links to 1998; 1997 links to 1999 (its side says monitor); 1998's voice is relayed
    # to 1997; 1999 drops everything.
    "monitor-as-hub": Case(
        "asl_3node_monitor.pcap",
        "1999",
        [
            op(0.0, "/link", action="connect", node="1998"),
            op(13.72, "/link", action="disconnect_all"),
        ],
        spurts={"1998": [9.193]},
    ),
    # We are the monitoring node: keying while only monitoring sends nothing.
    "monitor-as-monitor": Case(
        "asl_3node_monitor.pcap",
        "1997",
        [op(2.004, "/link", action="monitor", node="1999"), op(4.5, "/key"), op(5.5, "/unkey")],
    ),
    # An unknown calling node is refused after ACCEPT (cause 0); a call to a node not hosted
    # here too (cause 16).
    "reject-unknown": Case("asl_reject_unknown_nodes.pcap", "1999"),
}


@contextmanager
def node_as(case: Case, tmp_path: Path, peers: dict[str, ScriptedNode]) -> Iterator[NodeProcess]:
    lines = []
    for node, peer in peers.items():
        user = MD5_USER if node in case.md5 else "radio"
        lines.append(f"{node}={user}@127.0.0.1:{peer.addr[1]}/{node},127.0.0.1")
    nodes_file = tmp_path / "rpt_extnodes"
    nodes_file.write_text("[extnodes]\n" + "\n".join(lines) + "\n")
    # The MD5 links present user radiosec and the secret both sides hold for each other.
    links = "".join(f'[links.{n}]\nusername = "{MD5_USER}"\n\n' for n in case.md5)
    env = {f"NET_PEER_{n}": MD5_SECRET for n in case.md5}
    # A node number needs [register]; nothing answers there, so the node stays unregistered.
    env.update(NET_NODE=case.us, NET_SECRET="not-used-here")
    auth = "required" if case.us == "1997" else "off"
    with running_node(
        tmp_path,
        f"node{case.us}",
        listener=f'auth = "{auth}"',
        sections=(
            f'[register]\npeer = "127.0.0.1:9"\nnode_id = "{case.us}"\n\n'
            f'[links]\nnodes_file = "{nodes_file}"\nverify_source_ip = true\n\n{links}'
        ),
        env=env,
    ) as node:
        yield node


@pytest.mark.parametrize("name", list(CASES))
def test_replay_gets_the_replies_asl3_sent(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    us = at(case.us)
    others = {n: at(n) for n in PORTS if n != case.us}
    script = load_script(
        ASL3 / case.capture,
        us,
        case.operators,
        spurts={others[n]: ts for n, ts in case.spurts.items()},
    )
    names = {
        addr: n for n, addr in others.items() if addr in script.steps or addr in script.expected
    }
    with ExitStack() as stack:
        peers = {
            n: stack.enter_context(
                ScriptedNode(n, auth=(MD5_USER, MD5_SECRET) if n in case.md5 else None)
            )
            for n in names.values()
        }
        node = stack.enter_context(node_as(case, tmp_path, peers))
        timeline = sorted(
            [
                (script.replay_time(s.t), 1, names[a], s)
                for a, seq in script.steps.items()
                for s in seq
            ]
            + [(script.replay_time(o.t), 0, "", o) for o in script.operators],
            key=lambda item: (item[0], item[1]),
        )
        start = time.monotonic()
        for when, _, peer_name, item in timeline:
            delay = start + when - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if isinstance(item, Operator):
                r = node.post(item.path, json=item.body)
                assert r.status_code == 200, (item, r.text)
            else:
                peers[peer_name].run(item, node.udp_addr)
        time.sleep(max(0.0, start + script.duration - time.monotonic()))
        for addr, n in names.items():
            peer = peers[n]
            assert not peer.errors, peer.errors
            assert peer.received == script.expected.get(addr, []), n
            expected_minis = script.expected_minis.get(addr, 0)
            # Mini frames follow the keyed time, not the frame count: within a few frames.
            assert abs(peer.minis - expected_minis) <= max(5, expected_minis // 10), (
                n,
                peer.minis,
                expected_minis,
            )
        status = node.get("/status").json()
        assert status["calls"] == []
