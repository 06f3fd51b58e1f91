"""The I/O the link machine asks for: where a node is, a web-transceiver token, the parameters
of the call that dials it, and whether an inbound link's source address is the node's.

The links service asks (its `Dial` and `VerifySource` actions): lookups and tokens are awaited
in the work the service hands the router (`effects.Spawn`), and what they give goes back to the
machine by the service. This room never reaches into the machine, or up to the service.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from node.allstar.portal import GuestToken, TokenError, TokenSource
from node.config import NodeConfig
from node.context import NodeContext
from node.iax2 import call as c
from node.iax2.endpoint import LOCAL_PEER
from node.links.lookup import NodeResolver
from node.links.resolve import NodeAddress, same_ip

__all__ = ["DialFailed", "LinkDialer"]

log = logging.getLogger(__name__)

#: How a web-transceiver guest dials (the `[allstar-public]` user of every ASL3 node).
WT_USER = "allstar-public"
WT_SECRET = "allstar"  # published in ASL3's iax.conf: it is no secret
WT_EXTENSION = "s"


class DialFailed(Exception):
    """A node could not be looked up, or a guest token not minted: the reason, to show."""


class LinkDialer:
    """Lookups, tokens, link call parameters and source checks for the links service."""

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
        #: Whether a number is another node of this host (`IaxPort.hosts`): linked by a local
        #: call, never looked up.
        self.hosted: Callable[[str], bool] = lambda _node: False

    def reconfigure(self, config: NodeConfig) -> None:
        """SIGHUP, before `config` replaces the running one: a new nodes file or DNS setting
        takes a new resolver."""
        running = self._ctx.config
        if (config.nodes_file, config.dns) != (running.nodes_file, running.dns):
            self.resolver = NodeResolver.from_config(config)

    def is_guest(self, node: str) -> bool:
        """`node` is dialled as a web-transceiver guest (a token is minted for each call)."""
        return node in self._guest_nodes

    async def lookup(self, node: str, addr: str | None) -> NodeAddress:
        """Where `node` is: `addr`, its `[links.<node>] addr`, else the nodes file, then DNS."""
        cfg = self._ctx.config.links.get(node)
        if addr is None and cfg is not None and cfg.addr is not None:
            addr = str(cfg.addr)
        if addr is None and self.hosted(node):
            return NodeAddress(node, *LOCAL_PEER)
        return await self.resolver.lookup(node, addr)

    def hold(self, node: str, target: NodeAddress) -> None:
        """`target` is where the connect being made dials `node` (looked up beforehand)."""
        self._targets[node] = target

    def release(self, node: str) -> None:
        self._targets.pop(node, None)

    def take_target(self, node: str) -> NodeAddress | None:
        """The address the connect being made looked up for `node`, once."""
        return self._targets.pop(node, None)

    async def resolve(
        self, node: str, target: NodeAddress | None
    ) -> tuple[NodeAddress, GuestToken | None]:
        """Where to dial `node` (`target`, else looked up) and, for a guest link, its token;
        DialFailed with the reason when either cannot be had."""
        guest: GuestToken | None = None
        try:
            if target is None:
                target = await self.lookup(node, None)
            if node in self._guest_nodes:
                if self.tokens is None:
                    raise TokenError("no web-transceiver token source ([portal])")
                guest = await self.tokens.mint(node)
        except (LookupError, ValueError, TokenError) as exc:
            raise DialFailed(str(exc)) from None
        return target, guest

    def params(
        self, node: str, target: NodeAddress, guest: GuestToken | None = None
    ) -> c.DialParams:
        """The NEW's parameters of a link call to `node`."""
        if guest is None:
            return self._link_params(node, target)
        # As the web transceiver dials (research/allstar.md §5.1): the public user and its
        # published secret, extension "s", the target node as CALLING_NUMBER and the token as
        # CALLING_NAME.
        self._ctx.secrets.remember_transient(guest.calling_name)
        return c.DialParams(
            called_number=WT_EXTENSION,
            calling_number=node,
            calling_name=guest.calling_name,
            username=WT_USER,
            secret=WT_SECRET,
            datetime=time.localtime()[:6],
        )

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

    async def source_matches(self, node: str, ip: str) -> bool | None:
        """Whether `ip` is where `node` is: True, False, or None when `node` cannot be
        resolved."""
        if self.hosted(node) and ip == LOCAL_PEER[0]:
            return True  # a local call: only the host itself makes one
        cfg = self._ctx.config.links.get(node)
        if cfg is not None and cfg.addr is not None:
            try:
                target = await self.lookup(node, None)
            except (LookupError, ValueError):
                return None
            return same_ip(target.host, ip)
        # app_rpt's check: the looked-up address or the extnodes 2nd field, NONE for none.
        return await self.resolver.source_ip_matches(node, ip)
