"""`NodeResolver` against a real DNS server on loopback UDP and real nodes files."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from node.config import Address, DnsConfig
from node.errors import NodeLookupError
from node.links.dns import MAX_POSITIVE_TTL, NEGATIVE_TTL
from node.links.lookup import NodeResolver
from node.links.resolve import NodeAddress
from tests.links.dnsserver import DnsServer

DOMAIN = "nodes.example.org"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[DnsServer]:
    with DnsServer() as srv:
        yield srv


def dns_config(server: DnsServer, **kw: object) -> DnsConfig:
    host, port = server.address.split(":")
    settings: dict = {"domain": DOMAIN, "servers": (Address(host, int(port)),), "timeout_ms": 2000}
    settings.update(kw)
    return DnsConfig(**settings)


def resolver(
    server: DnsServer, nodes_file: Path | None = None, clock: FakeClock | None = None, **kw: object
) -> NodeResolver:
    return NodeResolver(nodes_file, dns_config(server, **kw), clock=clock or FakeClock())


def lookup(res: NodeResolver, node: str, addr: str | None = None) -> NodeAddress:
    return asyncio.run(res.lookup(node, addr))


def failure(res: NodeResolver, node: str) -> str:
    with pytest.raises(NodeLookupError) as info:
        lookup(res, node)
    return str(info.value)


# --- DNS --------------------------------------------------------------------------------------


def test_srv_then_a_gives_the_address_and_the_srv_port(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", port=4570, domain=DOMAIN)
    found = lookup(resolver(server), "2000")
    assert found == NodeAddress("2000", "192.0.2.10", 4570, check_ip="192.0.2.10")
    assert server.queries == [
        (f"_iax._udp.2000.{DOMAIN}.", "SRV"),
        (f"2000.{DOMAIN}.", "A"),
    ]


def test_the_srv_target_may_be_any_name(server: DnsServer) -> None:
    server.add(f"_iax._udp.2001.{DOMAIN}", "SRV", 30, "10 10 4569 proxy.example.net.")
    server.add("proxy.example.net", "A", 60, "192.0.2.77", "192.0.2.78")
    found = lookup(resolver(server), "2001")
    # The first A record as received, as app_rpt takes it (servers rotate the order).
    assert found.host in ("192.0.2.77", "192.0.2.78") and found.port == 4569


def test_nxdomain_names_the_query(server: DnsServer) -> None:
    message = failure(resolver(server), "2999")
    assert message.startswith("node 2999 not found: ")
    assert f"_iax._udp.2999.{DOMAIN} does not exist (NXDOMAIN)" in message
    assert "no 'addr' given" in message and "no nodes file" in message


def test_a_name_without_srv_is_no_srv_record(server: DnsServer) -> None:
    server.add(f"_iax._udp.2002.{DOMAIN}", "TXT", 60, '"NN=2002"')
    assert f"_iax._udp.2002.{DOMAIN} has no SRV record" in failure(resolver(server), "2002")


def test_srv_pointing_at_a_name_without_an_a_record(server: DnsServer) -> None:
    server.add(f"_iax._udp.2003.{DOMAIN}", "SRV", 60, "10 10 4569 v6only.example.net.")
    server.add("v6only.example.net", "AAAA", 60, "2001:db8::1")
    message = failure(resolver(server), "2003")
    assert "points to v6only.example.net, which gives no address" in message
    assert "has no A record" in message


def test_srv_pointing_at_a_missing_name(server: DnsServer) -> None:
    server.add(f"_iax._udp.2004.{DOMAIN}", "SRV", 60, "10 10 4569 gone.example.net.")
    assert "gone.example.net does not exist (NXDOMAIN)" in failure(resolver(server), "2004")


@pytest.mark.parametrize(
    ("srv", "needle"),
    [
        ("10 10 0 2005.nodes.example.org.", "port 0"),
        ("0 0 0 .", "SRV target is '.'"),
    ],
)
def test_garbage_srv_records_are_refused_before_asking_for_a(
    server: DnsServer, srv: str, needle: str
) -> None:
    server.add(f"_iax._udp.2005.{DOMAIN}", "SRV", 60, srv)
    server.add(f"2005.{DOMAIN}", "A", 60, "192.0.2.5")
    assert needle in failure(resolver(server), "2005")
    assert server.count(f"2005.{DOMAIN}", "A") == 0


def test_servfail_is_a_clear_failure(server: DnsServer) -> None:
    server.servfail.add(f"_iax._udp.2006.{DOMAIN}.")
    assert "no DNS server gave an answer" in failure(resolver(server), "2006")


def test_three_digit_nodes_are_never_asked_in_dns(server: DnsServer) -> None:
    server.node("200", "192.0.2.1", domain=DOMAIN)
    message = failure(resolver(server), "200")
    assert "only node numbers of 4 or more digits" in message
    assert server.queries == []


def test_dns_off_asks_nothing(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", domain=DOMAIN)
    message = failure(resolver(server, enabled=False), "2000")
    assert "DNS lookup is off ([links] dns = false)" in message
    assert server.queries == []


def test_domain_is_configurable(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", domain="other.example")
    assert lookup(resolver(server, domain="other.example"), "2000").host == "192.0.2.10"


# --- caching ----------------------------------------------------------------------------------


def test_positive_answers_are_kept_for_their_ttl(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", ttl=60, domain=DOMAIN)
    clock = FakeClock()
    res = resolver(server, clock=clock)

    async def scenario() -> list[str]:
        hosts = [(await res.lookup("2000")).host]
        server.clear()
        server.node("2000", "192.0.2.99", ttl=60, domain=DOMAIN)
        clock.now += 59
        hosts.append((await res.lookup("2000")).host)
        clock.now += 1
        hosts.append((await res.lookup("2000")).host)
        return hosts

    assert asyncio.run(scenario()) == ["192.0.2.10", "192.0.2.10", "192.0.2.99"]
    assert server.count(f"_iax._udp.2000.{DOMAIN}") == 2


def test_huge_ttls_are_capped(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", ttl=2**31 - 1, domain=DOMAIN)
    clock = FakeClock()
    res = resolver(server, clock=clock)

    async def scenario() -> None:
        await res.lookup("2000")
        clock.now += MAX_POSITIVE_TTL - 1
        await res.lookup("2000")
        assert server.count(f"_iax._udp.2000.{DOMAIN}") == 1
        clock.now += 1
        await res.lookup("2000")
        assert server.count(f"_iax._udp.2000.{DOMAIN}") == 2

    asyncio.run(scenario())


def test_the_smaller_ttl_of_srv_and_a_counts(server: DnsServer) -> None:
    server.add(f"_iax._udp.2000.{DOMAIN}", "SRV", 300, f"10 10 4569 2000.{DOMAIN}.")
    server.add(f"2000.{DOMAIN}", "A", 5, "192.0.2.10")
    clock = FakeClock()
    res = resolver(server, clock=clock)

    async def scenario() -> None:
        await res.lookup("2000")
        clock.now += 5
        await res.lookup("2000")

    asyncio.run(scenario())
    assert server.count(f"_iax._udp.2000.{DOMAIN}") == 2


def test_negative_answers_are_kept_briefly(server: DnsServer) -> None:
    clock = FakeClock()
    res = resolver(server, clock=clock)

    async def scenario() -> None:
        for _ in range(3):
            with pytest.raises(NodeLookupError, match="NXDOMAIN"):
                await res.lookup("2999")
        assert server.count(f"_iax._udp.2999.{DOMAIN}") == 1
        server.node("2999", "192.0.2.29", domain=DOMAIN)
        clock.now += NEGATIVE_TTL
        assert (await res.lookup("2999")).host == "192.0.2.29"

    asyncio.run(scenario())


def test_zero_ttl_answers_are_not_kept(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", ttl=0, domain=DOMAIN)
    res = resolver(server)

    async def scenario() -> None:
        await res.lookup("2000")
        await res.lookup("2000")

    asyncio.run(scenario())
    assert server.count(f"_iax._udp.2000.{DOMAIN}") == 2


def test_concurrent_lookups_of_one_node_share_one_query(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", ttl=0, domain=DOMAIN)
    res = resolver(server)

    async def scenario() -> list[NodeAddress]:
        return list(await asyncio.gather(*(res.lookup("2000") for _ in range(5))))

    found = asyncio.run(scenario())
    assert {f.host for f in found} == {"192.0.2.10"}
    assert server.count(f"_iax._udp.2000.{DOMAIN}") == 1


# --- a server that never answers --------------------------------------------------------------


def test_a_silent_server_times_out_and_the_loop_keeps_running(server: DnsServer) -> None:
    server.silent.add(f"_iax._udp.2000.{DOMAIN}.")
    res = resolver(server, timeout_ms=500)

    async def echo_server() -> tuple[asyncio.DatagramTransport, int]:
        class Echo(asyncio.DatagramProtocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.transport = transport

            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                self.transport.sendto(data, addr)  # type: ignore[attr-defined]

        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        return transport, transport.get_extra_info("sockname")[1]

    async def scenario() -> str:
        transport, port = await echo_server()
        loop = asyncio.get_running_loop()
        pending = asyncio.create_task(res.lookup("2000"))
        while server.count(f"_iax._udp.2000.{DOMAIN}") == 0:
            await asyncio.sleep(0.01)
        # The lookup is waiting on DNS; the loop still serves other I/O meanwhile.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.setblocking(False)
            await loop.sock_connect(s, ("127.0.0.1", port))
            for i in range(3):
                await loop.sock_sendall(s, b"ping %d" % i)
                assert await loop.sock_recv(s, 64) == b"ping %d" % i
                assert not pending.done()
        transport.close()
        with pytest.raises(NodeLookupError) as info:
            await pending
        return str(info.value)

    message = asyncio.run(scenario())
    assert f"no answer from {server.address} within 500 ms" in message


def test_timeouts_are_not_cached(server: DnsServer) -> None:
    server.silent.add(f"_iax._udp.2000.{DOMAIN}.")
    res = resolver(server, timeout_ms=200)

    async def scenario() -> NodeAddress:
        with pytest.raises(NodeLookupError, match="within 200 ms"):
            await res.lookup("2000")
        server.silent.clear()
        server.node("2000", "192.0.2.10", domain=DOMAIN)
        return await res.lookup("2000")

    assert asyncio.run(scenario()).host == "192.0.2.10"


# --- order of precedence ----------------------------------------------------------------------


def test_explicit_address_then_file_then_dns(server: DnsServer, tmp_path: Path) -> None:
    server.node("2000", "192.0.2.30", domain=DOMAIN)
    server.node("2001", "192.0.2.31", domain=DOMAIN)
    file = tmp_path / "extnodes"
    file.write_text("[extnodes]\n2000=radio@192.0.2.20:4569/2000,192.0.2.20\n")
    res = resolver(server, nodes_file=file)
    assert lookup(res, "2000", "192.0.2.10:4570").addr == ("192.0.2.10", 4570)
    assert lookup(res, "2000").host == "192.0.2.20"
    assert server.queries == []
    assert lookup(res, "2001").host == "192.0.2.31"


def test_the_file_is_re_read_on_every_lookup(server: DnsServer, tmp_path: Path) -> None:
    file = tmp_path / "extnodes"
    file.write_text("2000=radio@192.0.2.20:4569/2000,192.0.2.20\n")
    res = resolver(server, nodes_file=file, enabled=False)
    assert lookup(res, "2000").host == "192.0.2.20"
    file.write_text("2000=radio@192.0.2.21:4569/2000,192.0.2.21\n")
    assert lookup(res, "2000").host == "192.0.2.21"
    file.unlink()
    message = failure(res, "2000")
    assert f"cannot read the nodes file {file}" in message


def test_a_three_digit_node_from_the_file(server: DnsServer, tmp_path: Path) -> None:
    file = tmp_path / "extnodes"
    file.write_text("200=radio@192.0.2.2:4569/200,192.0.2.2\n")
    assert lookup(resolver(server, nodes_file=file), "200").host == "192.0.2.2"
    message = failure(resolver(server, nodes_file=file), "201")
    assert f"not in the nodes file {file}" in message
    assert "only node numbers of 4 or more digits" in message
    assert server.queries == []


def test_a_bad_explicit_address_is_a_lookup_error(server: DnsServer) -> None:
    with pytest.raises(NodeLookupError, match="node 2000: address 'x:1': the host must be an IP"):
        lookup(resolver(server), "2000", "x:1")


# --- the inbound source check -----------------------------------------------------------------


def test_source_ip_matches(server: DnsServer, tmp_path: Path) -> None:
    server.node("2000", "192.0.2.10", domain=DOMAIN)
    server.add("checker.example.org", "A", 60, "192.0.2.50")
    file = tmp_path / "extnodes"
    file.write_text(
        "2001=radio@192.0.2.11:4569/2001,NONE\n"
        "2002=radio@192.0.2.12:4569/2002,192.0.2.99\n"
        "2003=radio@192.0.2.13:4569/2003\n"
        "2004=radio@192.0.2.14:4569/2004,checker.example.org\n"
    )
    res = resolver(server, nodes_file=file)

    async def check(node: str, ip: str) -> bool | None:
        return await res.source_ip_matches(node, ip)

    cases = [
        ("2000", "192.0.2.10", True),  # the DNS address
        ("2000", "::ffff:192.0.2.10", True),  # the same, from a dual-stack socket
        ("2000", "192.0.2.11", False),
        ("2001", "203.0.113.1", True),  # NONE: no check
        ("2002", "192.0.2.99", True),  # the check field
        ("2002", "192.0.2.12", True),  # the dial address (app_rpt's second chance)
        ("2002", "192.0.2.13", False),
        ("2003", "192.0.2.13", None),  # no 2nd field: app_rpt refuses the entry
        ("2004", "192.0.2.50", True),  # a check field naming a host: its A record
        ("2004", "192.0.2.51", False),
        ("2999", "192.0.2.10", None),  # unknown node
    ]
    for node, ip, expected in cases:
        assert asyncio.run(check(node, ip)) is expected, (node, ip)


def test_a_silent_first_server_leaves_time_for_the_next(server: DnsServer) -> None:
    server.node("2000", "192.0.2.10", domain=DOMAIN)
    with DnsServer() as stalled:
        stalled.silent.update({f"_iax._udp.2000.{DOMAIN}.", f"2000.{DOMAIN}."})
        servers = tuple(
            Address(s.address.split(":")[0], int(s.address.split(":")[1]))
            for s in (stalled, server)
        )
        res = NodeResolver(
            None, DnsConfig(domain=DOMAIN, servers=servers, timeout_ms=3000), clock=FakeClock()
        )
        assert lookup(res, "2000").host == "192.0.2.10"
        assert stalled.count(f"_iax._udp.2000.{DOMAIN}") >= 1
