"""`POST /dial` without an address: `node serve` finds the node through DNS of our own."""

from __future__ import annotations

import socket
from pathlib import Path

from node._core import FullFrame, parse
from node.iax2.constants import IE, FrameType, IaxSubclass
from tests.links.dnsserver import DnsServer
from tests.node_process import NodeProcess, free_port, write_config

DOMAIN = "nodes.example.org"


def test_dial_by_node_number_goes_to_the_dns_address(tmp_path: Path) -> None:
    with (
        DnsServer() as dns,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer,
    ):
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(10)
        dns.node("2000", "127.0.0.1", port=peer.getsockname()[1], domain=DOMAIN)
        udp, http = free_port(socket.SOCK_DGRAM), free_port()
        extra = (
            f'[links]\ndns_domain = "{DOMAIN}"\ndns_servers = ["{dns.address}"]\n'
            "dns_timeout_ms = 2000\n"
        )
        path = write_config(tmp_path / "node.toml", udp_port=udp, http_port=http, extra=extra)
        node = NodeProcess(path, udp, http)
        try:
            node.wait_ready()
            r = node.post("/dial", json={"node": "2000"})
            assert r.status_code == 200, r.text
            (call,) = r.json()["calls"]
            assert call["addr"] == f"127.0.0.1:{peer.getsockname()[1]}"
            data, _ = peer.recvfrom(4096)
            new = parse(data)
            assert isinstance(new, FullFrame)
            assert (new.ftype, new.subclass) == (FrameType.IAX, IaxSubclass.NEW)
            assert new.ie(IE.CALLED_NUMBER) == "2000"

            r = node.post("/dial", json={"node": "2999"})
            assert r.status_code == 400
            assert "_iax._udp.2999.nodes.example.org does not exist (NXDOMAIN)" in r.json()["error"]
        finally:
            node.kill()
