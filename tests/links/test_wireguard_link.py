"""Two real `node serve` processes, each with its own userspace WireGuard tunnel (`[wireguard]`),
linked through them on loopback: the link comes up between the tunnel addresses, keying and
voice cross it, and a capture of the loopback interface shows WireGuard only (no IAX2 in the
clear, nothing at the nodes' IAX2 ports). With a wrong peer key no handshake ever completes, and
both snapshots say so.
"""

from __future__ import annotations

import base64
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from node.wireguard import encode_key, generate_private_key, public_key
from tests.interop.harness import (
    Capture,
    EventWatcher,
    free_udp_port,
    node_log,
    running_node,
    wait_until,
)
from tests.node_process import NodeProcess

NET = "10.77.0"
NODE_A, NODE_B = "1999", "1998"


def wireguard(
    last: int, peer_key: bytes, listen_port: int, endpoint: int | None, keepalive: int
) -> str:
    lines = [
        "[wireguard]",
        f'address = "{NET}.{last}/24"',
        'private_key_env = "WG_KEY"',
        f'peer_public_key = "{encode_key(peer_key)}"',
        f'allowed_ips = ["{NET}.0/24"]',
        f"listen_port = {listen_port}",
        f"persistent_keepalive = {keepalive}",
    ]
    if endpoint is not None:
        lines.append(f'endpoint = "localhost:{endpoint}"')
    return "\n".join(lines) + "\n\n"


@contextmanager
def tunnelled_node(
    tmp_path: Path,
    node_id: str,
    key: bytes,
    tunnel: str,
) -> Iterator[NodeProcess]:
    with running_node(
        tmp_path,
        f"node{node_id}",
        listener='auth = "off"',
        sections=(
            # The registrar is outside the tunnel's allowed IPs: REGREQs have no route.
            f'[register]\npeer = "127.0.0.1:9"\nnode_id = "{node_id}"\n\n'
            f"[links]\ndns = false\n\n{tunnel}"
        ),
        env={"NET_NODE": node_id, "NET_SECRET": "not-used-here", "WG_KEY": encode_key(key)},
    ) as node:
        yield node


def tunnel_of(node: NodeProcess) -> dict:
    tunnel = node.get("/status").json()["tunnel"]
    assert tunnel is not None
    return tunnel


def drops(stats_tunnel: dict) -> int:
    return stats_tunnel["dropped_outer"] + stats_tunnel["dropped_inner"] + stats_tunnel["no_route"]


def link_of(node: NodeProcess, peer: str) -> dict | None:
    return next((li for li in node.get("/status").json()["links"] if li["node"] == peer), None)


def inner_addr(node: NodeProcess, last: int) -> str:
    # The node's IAX2 port inside the tunnel is its [listener] bind port.
    return f"{NET}.{last}:{node.udp_addr[1]}"


def test_two_nodes_link_key_and_talk_through_their_tunnels(tmp_path: Path) -> None:
    key_a, key_b = generate_private_key(), generate_private_key()
    outer_a, outer_b = free_udp_port(), free_udp_port()
    with ExitStack() as stack:
        b = stack.enter_context(
            tunnelled_node(
                tmp_path, NODE_B, key_b, wireguard(2, public_key(key_a), outer_b, None, 0)
            )
        )
        capture = Capture(
            tmp_path / "wg.pcap", [outer_a, outer_b, b.udp_addr[1]], decode="wg"
        ).start()
        stack.callback(capture.stop)
        a = stack.enter_context(
            tunnelled_node(
                tmp_path, NODE_A, key_a, wireguard(1, public_key(key_b), outer_a, outer_b, 25)
            )
        )
        capture.ports.append(a.udp_addr[1])
        events_b = EventWatcher(b)
        # A's keepalive brings the tunnel up before any IAX2 is sent.
        wait_until("A's tunnel up", lambda: tunnel_of(a)["state"] == "up")
        wait_until("B's tunnel up", lambda: tunnel_of(b)["state"] == "up")
        ta, tb = tunnel_of(a), tunnel_of(b)
        assert ta["address"] == inner_addr(a, 1) and tb["address"] == inner_addr(b, 2)
        assert ta["public_key"] == encode_key(public_key(key_a))
        assert ta["listen"] == f"127.0.0.1:{outer_a}" and ta["endpoint"] == f"127.0.0.1:{outer_b}"
        # B learnt A's endpoint from the handshake.
        assert tb["endpoint"] == f"127.0.0.1:{outer_a}"
        assert ta["handshakes"] >= 1 and ta["last_handshake_s"] is not None
        # The snapshot event that came with the state change.
        events_b.wait_for(lambda e: e["event"] == "snapshot" and e["tunnel"]["state"] == "up")

        r = a.post("/link", json={"action": "connect", "node": NODE_B, "addr": inner_addr(b, 2)})
        assert r.status_code == 200, r.text
        wait_until("the link up on A", lambda: (link_of(a, NODE_B) or {}).get("state") == "up")
        wait_until("the newkey handshake", lambda: link_of(a, NODE_B)["newkey"] == "newkey1")
        link_b = wait_until("the link on B", lambda: link_of(b, NODE_A))
        assert link_b["direction"] == "inbound"
        # B sees the call coming from A's tunnel address.
        assert link_b["addr"] == inner_addr(a, 1)

        # Keying and voice: A's operator keys, B's link hears it keyed and receives voice.
        assert a.post("/key", json={}).status_code == 200
        keyed = events_b.wait_for(lambda e: e["event"] == "link" and e["kind"] == "keyed")
        assert (keyed["node"], keyed["keyed"]) == (NODE_A, True)
        wait_until("B's link keyed", lambda: link_of(b, NODE_A)["keyed"])
        call_b = link_of(b, NODE_A)["call"]
        wait_until(
            "voice on B's link leg",
            lambda: b.get("/stats").json()["legs"][str(call_b)]["frames_in"] >= 25,
        )
        assert a.post("/unkey", json={}).status_code == 200
        wait_until("B's link unkeyed", lambda: not link_of(b, NODE_A)["keyed"])

        # B keys back: A hears it.
        assert b.post("/key", json={}).status_code == 200
        wait_until("A's link keyed", lambda: link_of(a, NODE_B)["keyed"])
        assert b.post("/unkey", json={}).status_code == 200

        stats_a, stats_b = a.get("/stats").json(), b.get("/stats").json()
        # Every datagram either node received came out of a WireGuard data packet.
        inner_datagrams = stats_a["datagrams_in"] + stats_b["datagrams_in"]
        assert stats_a["malformed"] == stats_b["malformed"] == 0
        assert stats_a["mini_in"] > 0 and stats_b["mini_in"] > 0
        ta, tb = stats_a["tunnel"], stats_b["tunnel"]
        assert ta["dropped_outer"] == tb["dropped_outer"] == 0
        assert ta["dropped_inner"] == tb["dropped_inner"] == 0
        # A's registration to 127.0.0.1:9 is outside the allowed IPs: not sent, counted.
        assert ta["no_route"] > 0
        # The snapshot's `dropped` is the sum of the three drop counters. Registration retries
        # keep counting while we read, so read it between two /stats readings and bound it.
        dropped = tunnel_of(a)["dropped"]
        after = a.get("/stats").json()["tunnel"]
        assert drops(ta) <= dropped <= drops(after)

        r = a.post("/link", json={"action": "disconnect", "node": NODE_B})
        assert r.status_code == 200, r.text
        wait_until("the link gone on B", lambda: link_of(b, NODE_A) is None)
        capture.stop()

    assert "outside the tunnel's allowed IPs" in node_log(a)
    # On the wire: WireGuard between the two outer ports and nothing else; no IAX2 in clear.
    rows = capture.fields(["udp.srcport", "udp.dstport", "wg.type"], display_filter="udp")
    assert sum(r["wg.type"] == "4" for r in rows) >= inner_datagrams
    ports = {int(r["udp.srcport"]) for r in rows} | {int(r["udp.dstport"]) for r in rows}
    assert ports == {outer_a, outer_b}
    types = {r["wg.type"] for r in rows}
    assert {"1", "2", "4"} <= types and "" not in types
    assert capture.malformed() == []
    for text in ("NEWKEY", NODE_A, "radio"):
        assert capture.fields(["frame.number"], f'frame contains "{text}"') == []
    # tshark's own WireGuard dissector, given both public keys, matches every initiation's MAC1
    # to B's key: the handshake is WireGuard as an independent implementation reads it.
    keys = [
        f'uat:wg_keys:"Public","{base64.b64encode(public_key(k)).decode()}"' for k in (key_a, key_b)
    ]
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(capture.path),
            "-d",
            f"udp.port=={outer_b},wg",
            *(arg for k in keys for arg in ("-o", k)),
            "-Y",
            "wg.type == 1",
            "-T",
            "fields",
            "-e",
            "wg.receiver_pubkey",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert out and set(out) == {encode_key(public_key(key_b))}


def test_a_wrong_peer_key_never_completes_a_handshake(tmp_path: Path) -> None:
    key_a, key_b, stranger = (generate_private_key() for _ in range(3))
    outer_a, outer_b = free_udp_port(), free_udp_port()
    with (
        # B expects a stranger's key, so A's initiations never authenticate.
        tunnelled_node(
            tmp_path, NODE_B, key_b, wireguard(2, public_key(stranger), outer_b, None, 0)
        ) as b,
        tunnelled_node(
            tmp_path, NODE_A, key_a, wireguard(1, public_key(key_b), outer_a, outer_b, 25)
        ) as a,
    ):

        def refused() -> int:
            return b.get("/stats").json()["tunnel"]["dropped_outer"]

        wait_until("B dropping A's initiations", lambda: refused() >= 1)
        r = a.post("/link", json={"action": "connect", "node": NODE_B, "addr": inner_addr(b, 2)})
        assert r.status_code == 200, r.text
        # Initiations are retried every 5 s (REKEY_TIMEOUT); wait for a second one.
        wait_until("a retried initiation", lambda: refused() >= 2, timeout=20)
        ta, tb = tunnel_of(a), tunnel_of(b)
        assert ta["state"] == "handshaking" and ta["handshakes"] == 0
        assert ta["last_handshake_s"] is None and ta["rx_bytes"] == 0
        assert tb["state"] == "down" and tb["endpoint"] is None and tb["handshakes"] == 0
        assert a.get("/stats").json()["tunnel"]["handshake_attempts"] >= 2
        link = link_of(a, NODE_B)
        assert link is not None and link["state"] != "up"
        assert link_of(b, NODE_A) is None
        assert b.get("/stats").json()["datagrams_in"] == 0
        time.sleep(0.1)
