"""`NodeResolver`: a node number -> the address to dial, without ever blocking the event loop.

Order (the first that answers wins):

1. an explicit address given with the command (`addr`);
2. the extnodes-format `[links] nodes_file`, re-read on every lookup as app_rpt re-reads its
   extnodes file, in a worker thread (ASL's file is megabytes);
3. DNS, as ASL3 does it (`node.links.dns`): SRV `_iax._udp.<node>.<domain>`, then the target's
   A record. Only for node numbers of 4 or more digits, and only when `[links] dns` is on.

DNS queries go through dnspython's asyncio resolver under one deadline per lookup
(`[links] dns_timeout_ms`): app_rpt once hung channels for 18 s on a slow SRV query (app_rpt
issue #390). Positive answers are cached for their TTL (capped), "no such node" briefly, and a
lookup already under way for a node is shared by every caller asking for it meanwhile. Timeouts
and server failures are not cached: the next lookup asks again.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from node.errors import NodeLookupError
from node.links.dns import (
    CACHE_SIZE,
    MIN_DNS_DIGITS,
    NEGATIVE_TTL,
    AnswerCache,
    SrvRecord,
    dns_eligible,
    pick_srv,
    positive_ttl,
    srv_name,
    srv_problem,
)
from node.links.resolve import NO_CHECK, NodeAddress, find_extnode, parse_address, same_ip

if TYPE_CHECKING:
    from node.config import DnsConfig, NodeConfig

__all__ = ["NodeResolver"]

log = logging.getLogger(__name__)


class _Miss(Exception):
    """DNS gave no usable answer; `cacheable` when that answer itself was definite."""

    def __init__(self, reason: str, *, cacheable: bool) -> None:
        super().__init__(reason)
        self.cacheable = cacheable


def _shown(name: str) -> str:
    return name.rstrip(".") or "."


class _DnsClient:
    """dnspython's asyncio resolver, built on first use with the configured servers."""

    def __init__(self, config: DnsConfig) -> None:
        self._config = config
        self._resolver: Any = None
        self.timeout = config.timeout_ms / 1000
        servers = ", ".join(str(s) for s in config.servers)
        self.servers = servers or "the system resolver"

    def _get(self) -> Any:
        # dnspython is loaded on the first lookup, not at start: a node that never looks a
        # node number up in DNS never pays its import (about 10 MB).
        import dns.asyncresolver
        import dns.nameserver
        import dns.resolver

        if self._resolver is None:
            if self._config.servers:
                resolver = dns.asyncresolver.Resolver(configure=False)
                resolver.nameservers = [
                    dns.nameserver.Do53Nameserver(s.host, s.port) for s in self._config.servers
                ]
            else:
                try:
                    resolver = dns.asyncresolver.Resolver()
                except dns.resolver.NoResolverConfiguration:
                    raise _Miss(
                        "the system has no DNS configuration (/etc/resolv.conf); set "
                        "[links] dns_servers",
                        cacheable=False,
                    ) from None
            # One silent server must not use up the budget of both queries (SRV, then A; each
            # starts with the first server again) before the next server is asked. The lookup
            # as a whole is bounded by `timeout` in NodeResolver.
            resolver.timeout = self.timeout / (2 * max(1, len(resolver.nameservers)))
            resolver.lifetime = self.timeout
            self._resolver = resolver
        return self._resolver

    async def query(self, name: str, rdtype: str) -> tuple[list[Any], float]:
        """The records of `name`/`rdtype` and their TTL. Raises `_Miss`."""
        resolver = self._get()
        import dns.exception
        import dns.resolver

        try:
            answer = await resolver.resolve(name, rdtype, search=False, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN:
            raise _Miss(f"{_shown(name)} does not exist (NXDOMAIN)", cacheable=True) from None
        except dns.exception.Timeout:
            raise _Miss(self.timeout_text(), cacheable=False) from None
        except dns.resolver.NoNameservers:
            raise _Miss(
                f"no DNS server gave an answer for {_shown(name)} (SERVFAIL or refused)",
                cacheable=False,
            ) from None
        except dns.exception.DNSException as exc:
            raise _Miss(f"{_shown(name)}: {exc}", cacheable=False) from None
        if answer.rrset is None or len(answer.rrset) == 0:
            raise _Miss(f"{_shown(name)} has no {rdtype} record", cacheable=True)
        return list(answer.rrset), float(answer.rrset.ttl)

    def timeout_text(self) -> str:
        return f"no answer from {self.servers} within {self._config.timeout_ms} ms"


class NodeResolver:
    """Looks node numbers up: explicit address, nodes file, then DNS (see the module doc).

    `clock` (monotonic seconds) only ages the DNS cache; tests pass a fake one.
    """

    def __init__(
        self,
        nodes_file: Path | None,
        dns_config: DnsConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.nodes_file = nodes_file
        self.dns = dns_config
        self._clock = clock
        self._client = _DnsClient(dns_config)
        self._cache: AnswerCache[NodeAddress | str] = AnswerCache(cache_size)
        self._pending: dict[str, asyncio.Future[NodeAddress]] = {}

    @classmethod
    def from_config(cls, config: NodeConfig) -> NodeResolver:
        return cls(config.nodes_file, config.dns)

    def __repr__(self) -> str:
        dns_state = f"{self.dns.domain} via {self._client.servers}" if self.dns.enabled else "off"
        return f"NodeResolver(nodes_file={self.nodes_file}, dns={dns_state})"

    # --- lookups ------------------------------------------------------------------------------

    async def lookup(self, node: str, addr: str | None = None) -> NodeAddress:
        """Where to dial `node`. Raises `NodeLookupError` naming every source tried."""
        if addr:
            try:
                return parse_address(addr, node)
            except ValueError as exc:
                raise NodeLookupError(f"node {node}: {exc}") from None
        tried = ["no 'addr' given"]
        if self.nodes_file is not None:
            found, why = await asyncio.to_thread(self._from_file, node)
            if found is not None:
                return found
            tried.append(why)
        else:
            tried.append("no nodes file ([links] nodes_file)")
        if not self.dns.enabled:
            tried.append("DNS lookup is off ([links] dns = false)")
        elif not dns_eligible(node):
            tried.append(
                f"not looked up in DNS (only node numbers of {MIN_DNS_DIGITS} or more digits are)"
            )
        else:
            try:
                return await self._from_dns(node)
            except _Miss as miss:
                tried.append(f"DNS: {miss}")
        raise NodeLookupError(f"node {node} not found: {'; '.join(tried)}")

    async def source_ip_matches(self, node: str, ip: str) -> bool | None:
        """app_rpt's inbound check: whether a call claiming to be `node` may come from `ip`.

        True when `ip` is the address the lookup gives for `node` (its extnodes 2nd field, else
        the address we would dial, as app_rpt's `parse_caller` allows both) or when that field
        is `NONE`; False on a mismatch; None when `node` cannot be resolved (or its extnodes
        entry lacks the 2nd field, which app_rpt refuses as "not in correct format").
        """
        try:
            entry = await self.lookup(node)
        except NodeLookupError as exc:
            log.info("inbound check for node %s: %s", node, exc)
            return None
        check = entry.check_ip
        if check == NO_CHECK:
            return True
        if check is None:
            log.info("inbound check for node %s: its nodes-file entry has no 2nd field", node)
            return None
        check_ip = check if _is_ip(check) else await self._host_ip(check)
        if check_ip is None:
            log.info("inbound check for node %s: cannot resolve %s", node, check)
            return None
        return same_ip(ip, check_ip) or same_ip(ip, entry.host)

    # --- sources ------------------------------------------------------------------------------

    def _from_file(self, node: str) -> tuple[NodeAddress | None, str]:
        """Runs in a worker thread."""
        path = self.nodes_file
        assert path is not None
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            # app_rpt skips an extnodes file it cannot read and goes on.
            return None, f"cannot read the nodes file {path}: {exc.strerror}"
        found = find_extnode(text, node)
        return found, "" if found else f"not in the nodes file {path}"

    async def _from_dns(self, node: str) -> NodeAddress:
        cached = self._cache.get(node, self._clock())
        if isinstance(cached, NodeAddress):
            return cached
        if isinstance(cached, str):
            raise _Miss(cached, cacheable=True)
        pending = self._pending.get(node)
        if pending is None:
            pending = asyncio.ensure_future(self._query_node(node))
            self._pending[node] = pending
            pending.add_done_callback(lambda f: self._query_done(node, f))
        # A caller that gives up (a dropped HTTP request) must not cancel the others' answer.
        return await asyncio.shield(pending)

    def _query_done(self, node: str, future: asyncio.Future[NodeAddress]) -> None:
        if self._pending.get(node) is future:
            del self._pending[node]
        if not future.cancelled():
            future.exception()  # retrieved: nobody may be left waiting for it

    async def _query_node(self, node: str) -> NodeAddress:
        name = srv_name(node, self.dns.domain)
        try:
            found, ttl = await asyncio.wait_for(self._srv_then_a(node, name), self._client.timeout)
        except asyncio.TimeoutError:
            raise _Miss(self._client.timeout_text(), cacheable=False) from None
        except _Miss as miss:
            if miss.cacheable:
                self._cache.put(node, str(miss), self._clock(), NEGATIVE_TTL)
            raise
        self._cache.put(node, found, self._clock(), ttl)
        log.debug("node %s: DNS gives %s:%d (kept %.0f s)", node, found.host, found.port, ttl)
        return found

    async def _srv_then_a(self, node: str, name: str) -> tuple[NodeAddress, float]:
        records, srv_ttl = await self._client.query(name, "SRV")
        rec = pick_srv(
            [SrvRecord(r.priority, r.weight, r.port, r.target.to_text()) for r in records]
        )
        assert rec is not None  # query() never returns an empty record set
        problem = srv_problem(rec)
        if problem is not None:
            raise _Miss(f"{_shown(name)}: {problem}", cacheable=True)
        try:
            addresses, a_ttl = await self._client.query(rec.target, "A")
        except _Miss as miss:
            raise _Miss(
                f"{_shown(name)} points to {_shown(rec.target)}, which gives no address: {miss}",
                cacheable=miss.cacheable,
            ) from None
        ip = str(addresses[0].address)
        return NodeAddress(node, ip, rec.port, check_ip=ip), positive_ttl(srv_ttl, a_ttl)

    async def _host_ip(self, host: str) -> str | None:
        """An extnodes check field that names a host (app_rpt resolves it): its A record."""
        if not self.dns.enabled:
            return None
        with contextlib.suppress(_Miss, asyncio.TimeoutError):
            records, _ = await asyncio.wait_for(
                self._client.query(host.rstrip(".") + ".", "A"), self._client.timeout
            )
            return str(records[0].address)
        return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
