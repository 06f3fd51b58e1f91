"""The I/O the link machine asks for: where a node is, a web-transceiver token, the call that
dials it, and whether an inbound link's source address is the node's.

The link machine's `Dial` and `VerifySource` actions come here (from the links service). Lookups
and tokens are awaited in tasks; what they give goes back to the machine through `DialResults`
(the links service), wired at start-up, so this room never reaches into the machine itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any, Protocol

from node.allstar.portal import GuestToken, TokenError, TokenSource
from node.config import NodeConfig
from node.context import NodeContext
from node.errors import LocalProtocolError
from node.iax2 import call as c
from node.iax2.endpoint import Endpoint, EndpointOutput
from node.iax2.transport import Address
from node.links.lookup import NodeResolver
from node.links.resolve import NodeAddress, same_ip

__all__ = ["CallPort", "DialResults", "LinkDialer"]

log = logging.getLogger(__name__)

#: How a web-transceiver guest dials (the `[allstar-public]` user of every ASL3 node).
WT_USER = "allstar-public"
WT_SECRET = "allstar"  # published in ASL3's iax.conf: it is no secret
WT_EXTENSION = "s"


class CallPort(Protocol):
    """The calls service as the links see it: the endpoint, and where its output goes."""

    endpoint: Endpoint

    def apply(self, out: EndpointOutput) -> None: ...


class DialResults(Protocol):
    """Where the outcome of a dial or a source check goes (the links service, to its machine)."""

    def wanted(self, node: str) -> bool: ...

    def dialled(self, node: str, callno: int, addr: Address) -> None: ...

    def dial_failed(self, node: str, reason: str) -> None: ...

    def source_checked(self, callno: int, matches: bool | None) -> None: ...


class LinkDialer:
    """Lookups, tokens, link calls and source checks for the links service."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx
        config = ctx.config
        self._guest_nodes = frozenset(
            node for node, cfg in config.links.items() if cfg.shape == "wt-guest"
        )
        #: Node number -> address: explicit, nodes file, DNS.
        self.resolver = NodeResolver.from_config(config)
        #: `[portal]`: mints web-transceiver tokens for `wt-guest` links.
        self.tokens: TokenSource | None = None
        #: Addresses resolved for a link connect, used by the Dial that follows it.
        self._targets: dict[str, NodeAddress] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # Wired at start-up (`wire`).
        self._calls: CallPort | None = None
        self._results: DialResults | None = None

    def wire(self, calls: CallPort, results: DialResults) -> None:
        self._calls = calls
        self._results = results

    def reconfigure(self, config: NodeConfig) -> None:
        """SIGHUP, before `config` replaces the running one: a new nodes file or DNS setting
        takes a new resolver."""
        running = self._ctx.config
        if (config.nodes_file, config.dns) != (running.nodes_file, running.dns):
            self.resolver = NodeResolver.from_config(config)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def lookup(self, node: str, addr: str | None) -> NodeAddress:
        """Where `node` is: `addr`, its `[links.<node>] addr`, else the nodes file, then DNS."""
        cfg = self._ctx.config.links.get(node)
        if addr is None and cfg is not None and cfg.addr is not None:
            addr = str(cfg.addr)
        return await self.resolver.lookup(node, addr)

    def hold(self, node: str, target: NodeAddress) -> None:
        """`target` is where the connect being made dials `node` (looked up beforehand)."""
        self._targets[node] = target

    def release(self, node: str) -> None:
        self._targets.pop(node, None)

    # --- the machine's actions ----------------------------------------------------------------

    def dial(self, node: str) -> None:
        """The machine's `Dial`: at once when the connect looked `node` up, else after the
        lookup (and a token, for a web-transceiver guest link)."""
        target = self._targets.pop(node, None)
        if target is not None and node not in self._guest_nodes:
            self._dial(node, target)
        else:
            self._spawn(self._resolve_and_dial(node, target))

    def verify_source(self, node: str, ip: str, callno: int) -> None:
        """The machine's `VerifySource`: is `ip` where `node` is?"""
        self._spawn(self._verify_source(node, ip, callno))

    async def _resolve_and_dial(self, node: str, target: NodeAddress | None = None) -> None:
        guest: GuestToken | None = None
        try:
            if target is None:
                target = await self.lookup(node, None)
            if node in self._guest_nodes:
                if self.tokens is None:
                    raise TokenError("no web-transceiver token source ([portal])")
                guest = await self.tokens.mint(node)
        except (LookupError, ValueError, TokenError) as exc:
            self._result().dial_failed(node, str(exc))
            return
        self._dial(node, target, guest)

    def _result(self) -> DialResults:
        assert self._results is not None, "wire() first"
        return self._results

    def _dial(self, node: str, target: NodeAddress, guest: GuestToken | None = None) -> None:
        results = self._result()
        if not results.wanted(node):
            return  # disconnected (or dialled) while being resolved
        if guest is not None:
            # As the web transceiver dials (research/allstar.md §5.1): the public user and its
            # published secret, extension "s", the target node as CALLING_NUMBER and the token
            # as CALLING_NAME.
            self._ctx.secrets.remember_transient(guest.calling_name)
            params = c.DialParams(
                called_number=WT_EXTENSION,
                calling_number=node,
                calling_name=guest.calling_name,
                username=WT_USER,
                secret=WT_SECRET,
                datetime=time.localtime()[:6],
            )
        else:
            params = self._link_params(node, target)
        assert self._calls is not None, "wire() first"
        try:
            callno, out = self._calls.endpoint.dial(self._ctx.clock(), target.addr, params)
        except LocalProtocolError as exc:
            results.dial_failed(node, str(exc))
            return
        results.dialled(node, callno, target.addr)
        self._calls.apply(out)

    def _link_params(self, node: str, target: NodeAddress) -> c.DialParams:
        """A link call as ASL3 places one: user `radio` (or the configured or peer-secret
        user), our number calling, the target called."""
        cfg = self._ctx.config.links.get(node)
        peer_secret = self._ctx.secrets.peer_secret(node)
        me = self._ctx.config.node_id
        if cfg is not None and cfg.username is not None:
            username = cfg.username
        elif peer_secret is not None and me:
            username = me
        else:
            username = target.username
        return c.DialParams(
            called_number=node,
            calling_number=me,
            username=username,
            secret=peer_secret,
            datetime=time.localtime()[:6],
        )

    async def _verify_source(self, node: str, ip: str, callno: int) -> None:
        cfg = self._ctx.config.links.get(node)
        matches: bool | None
        if cfg is not None and cfg.addr is not None:
            try:
                target = await self.lookup(node, None)
            except (LookupError, ValueError):
                matches = None
            else:
                matches = same_ip(target.host, ip)
        else:
            # app_rpt's check: the looked-up address or the extnodes 2nd field, NONE for none.
            matches = await self.resolver.source_ip_matches(node, ip)
        self._result().source_checked(callno, matches)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
