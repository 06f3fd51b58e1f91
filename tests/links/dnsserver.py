"""A tiny authoritative DNS server on loopback UDP, written with dnspython's message API.

It answers from a record table: the records of the asked name and type, NODATA when the name
has records of other types only, NXDOMAIN otherwise. Names in `silent` get no reply at all (a
stalled server), names in `servfail` get SERVFAIL. Every query is recorded.
"""

from __future__ import annotations

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset

from tests.loopback import Address, UdpServer

__all__ = ["DnsServer"]


def _key(name: str) -> str:
    return name.lower().rstrip(".") + "."


class DnsServer(UdpServer):
    """Run with `with DnsServer() as server:`; `server.address` is `"127.0.0.1:<port>"`."""

    def __init__(self) -> None:
        super().__init__("dns-server", poll_s=0.1)
        self.records: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.silent: set[str] = set()
        self.servfail: set[str] = set()
        #: (name, type) of every query received, in order.
        self.queries: list[tuple[str, str]] = []

    @property
    def address(self) -> str:
        host, port = self.addr
        return f"{host}:{port}"

    def add(self, name: str, rdtype: str, ttl: int, *data: str) -> None:
        with self._lock:
            self.records.setdefault((_key(name), rdtype.upper()), []).extend((ttl, d) for d in data)

    def clear(self) -> None:
        with self._lock:
            self.records.clear()

    def node(self, node: str, ip: str, port: int = 4569, ttl: int = 60, domain: str = "") -> None:
        """The records ASL publishes for a node: SRV to `<node>.<domain>`, and its A."""
        domain = domain or "nodes.example.org"
        target = f"{node}.{domain}."
        self.add(f"_iax._udp.{node}.{domain}", "SRV", ttl, f"10 10 {port} {target}")
        self.add(target, "A", ttl, ip)

    def count(self, name: str, rdtype: str | None = None) -> int:
        with self._lock:
            return sum(1 for n, t in self.queries if n == _key(name) and rdtype in (None, t))

    def _on_datagram(self, data: bytes, addr: Address) -> None:
        try:
            query = dns.message.from_wire(data)
        except Exception:
            return
        reply = self._answer(query)
        if reply is not None:
            self.sock.sendto(reply.to_wire(), addr)

    def _answer(self, query: dns.message.Message) -> dns.message.Message | None:
        question = query.question[0]
        name = _key(question.name.to_text())
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries.append((name, rdtype))
            if name in self.silent:
                return None
            reply = dns.message.make_response(query)
            reply.flags |= dns.flags.AA
            if name in self.servfail:
                reply.set_rcode(dns.rcode.SERVFAIL)
                return reply
            found = self.records.get((name, rdtype))
            if found:
                rrset = dns.rrset.from_text_list(
                    name, min(t for t, _ in found), "IN", rdtype, [d for _, d in found]
                )
                reply.answer.append(rrset)
            elif not any(n == name for n, _ in self.records):
                reply.set_rcode(dns.rcode.NXDOMAIN)
        return reply
