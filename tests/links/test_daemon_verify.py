"""`[links] verify_source_ip` between two `node serve` processes: the callee looks the caller's
node number up (nodes file, or DNS of our own) and admits the link only from that address."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop.harness import free_udp_port, running_node, wait_until
from tests.links.dnsserver import DnsServer
from tests.node_process import NodeProcess

DOMAIN = "nodes.example.org"
NODE_A, NODE_B = "2000", "2001"


def sections(node_id: str, links: str = "") -> str:
    # Nothing listens at the registrar's port: registration fails, which these tests ignore.
    return (
        f'[register]\npeer = "127.0.0.1:{free_udp_port()}"\nnode_id = "{node_id}"\n\n'
        '[secrets]\nsource = "env"\n\n'
        f"[links]\n{links}\n"
    )


def env(node_id: str) -> dict[str, str]:
    return {"NET_NODE": node_id, "NET_SECRET": f"secret-{node_id}"}


def link_state(node: NodeProcess, peer: str) -> str | None:
    links = node.get("/status").json()["links"]
    return next((li["state"] for li in links if li["node"] == peer), None)


@pytest.mark.parametrize(
    ("how", "admitted"),
    [
        ("dns", True),  # DNS gives 127.0.0.1 for node 2000
        ("file-none", True),  # the nodes file exempts node 2000 with NONE
        ("file-mismatch", False),  # the nodes file puts node 2000 elsewhere
    ],
)
def test_inbound_links_are_checked_against_the_lookup(
    how: str, admitted: bool, tmp_path: Path
) -> None:
    with DnsServer() as dns:
        dns.node(NODE_A, "127.0.0.1", domain=DOMAIN)
        where = "192.0.2.1"
        check = "NONE" if how == "file-none" else where
        (tmp_path / "extnodes").write_text(f"{NODE_A}=radio@{where}:4569/{NODE_A},{check}\n")
        lookup = (
            f'verify_source_ip = true\ndns_domain = "{DOMAIN}"\ndns_servers = ["{dns.address}"]\n'
        )
        if how != "dns":
            lookup += 'nodes_file = "extnodes"\ndns = false\n'
        with (
            running_node(tmp_path, "a", sections=sections(NODE_A), env=env(NODE_A)) as a,
            running_node(
                tmp_path,
                "b",
                listener='auth = "off"',
                sections=sections(NODE_B, lookup),
                env=env(NODE_B),
            ) as b,
        ):
            host, port = b.udp_addr
            r = a.post(
                "/link", json={"action": "connect", "node": NODE_B, "addr": f"{host}:{port}"}
            )
            assert r.status_code == 200, r.text
            if admitted:
                wait_until("the link up on B", lambda: link_state(b, NODE_A) == "up")
                wait_until("the link up on A", lambda: link_state(a, NODE_B) == "up")
            else:
                # B hangs up without answering; A retries, B stays without the link.
                wait_until("A retrying", lambda: link_state(a, NODE_B) == "retrying")
                assert link_state(b, NODE_A) is None
        if how == "dns":
            assert dns.count(f"_iax._udp.{NODE_A}.{DOMAIN}", "SRV") >= 1
        else:
            assert dns.queries == []
    if not admitted:
        assert "source does not match its node's address" in b.communicate()[1]
