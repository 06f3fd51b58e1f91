"""The links service: the `LinkNetwork` machine and the I/O it asks for.

The machine (`links/network.py`) is sans-I/O: it takes link call events, texts and commands and
returns `LinkOutput` (actions and events). This service carries the actions out on the calls'
endpoint (texts, keying, answer, hang-up), the media legs, node lookups and dialling (with a
web-transceiver token for `wt-guest` links), source checks, and publishes the events: bus `link`
events, announcements, status-post triggers, and `D` digits to the commands service.

The calls service hands it every event of a link call and every inbound call from a node
(`on_call_event`); `link` is `POST /link` (and the DTMF and AMI link commands).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from node.allstar.portal import GuestToken, TokenError, TokenSource
from node.calls.service import CODEC_NAMES, Announce, Digits, end_reason
from node.config import NodeConfig
from node.errors import CommandError, LocalProtocolError
from node.events import EventBus, Link
from node.iax2 import call as c
from node.iax2.endpoint import Endpoint, EndpointOutput
from node.iax2.transport import Address
from node.links import network as ln
from node.links.lookup import NodeResolver
from node.links.resolve import NodeAddress, same_ip
from node.media.bridge import MediaBridge
from node.secrets import SecretStore

__all__ = ["LINK_ACTIONS", "CallPort", "LinkService", "Telemetry"]

log = logging.getLogger(__name__)

#: How a web-transceiver guest dials (the `[allstar-public]` user of every ASL3 node).
WT_USER = "allstar-public"
WT_SECRET = "allstar"  # published in ASL3's iax.conf: it is no secret
WT_EXTENSION = "s"

LINK_ACTIONS = {
    "connect": ln.LinkMode.TRANSCEIVE,
    "monitor": ln.LinkMode.MONITOR,
    "local_monitor": ln.LinkMode.LOCAL_MONITOR,
}


class CallPort(Protocol):
    """The calls service as the links see it: the endpoint, and where its output goes."""

    endpoint: Endpoint

    def apply(self, out: EndpointOutput) -> None: ...

    def send(self, frames: Iterable[tuple[Address, Any]]) -> None: ...


class Telemetry(Announce, Protocol):
    """The announcements, with the telemetry a linked node sends."""

    def telemetry(self, token: str, args: Any) -> None: ...


class LinkService:
    """The node's links: the machine, its legs, lookups, dialling and source checks."""

    def __init__(
        self,
        config: NodeConfig,
        secrets: SecretStore,
        bus: EventBus,
        clock: Callable[[], float],
        stopping: asyncio.Event,
    ) -> None:
        self.config = config
        self._secrets = secrets
        self._bus = bus
        self._clock = clock
        self._stopping = stopping
        self._guest_nodes = frozenset(
            node for node, cfg in config.links.items() if cfg.shape == "wt-guest"
        )
        self.network = ln.LinkNetwork(
            config.node_id,
            rand=random.SystemRandom().random,
            permanent=[
                ln.PermanentLink(node, ln.LinkMode(cfg.mode))
                for node, cfg in config.links.items()
                if cfg.permanent
            ],
            verify_source=config.verify_source_ip,
            dstar_nodes=[node for node, cfg in config.links.items() if cfg.network == "dstar"],
            guest_nodes=self._guest_nodes,
        )
        #: Node number -> address: explicit, nodes file, DNS.
        self.resolver = NodeResolver.from_config(config)
        #: `tokens` mints web-transceiver tokens for `wt-guest` links (`[portal]`).
        self.tokens: TokenSource | None = None
        #: Called when a link comes up or goes down (`[statpost]`).
        self.links_changed: Callable[[], None] | None = None
        self.bridge: MediaBridge | None = None
        #: Addresses resolved for a link connect, used by the Dial that follows it.
        self._targets: dict[str, NodeAddress] = {}
        #: Link calls that have a media leg.
        self._legs: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        # Wired at start-up (`wire`).
        self._calls: CallPort | None = None
        self._digits: Digits | None = None
        self._announce: Telemetry | None = None
        self._changed: Callable[[], None] = lambda: None
        self._rearm: Callable[[], None] = lambda: None

    def wire(
        self,
        calls: CallPort,
        digits: Digits,
        announce: Telemetry,
        changed: Callable[[], None],
        rearm: Callable[[], None],
    ) -> None:
        """Connect the calls' endpoint, the DTMF sink (remote `D` digits), the announcements,
        the snapshot publisher and the timer."""
        self._calls = calls
        self._digits = digits
        self._announce = announce
        self._changed = changed
        self._rearm = rearm

    def reconfigure(self, config: NodeConfig) -> None:
        if (config.nodes_file, config.dns) != (self.config.nodes_file, self.config.dns):
            self.resolver = NodeResolver.from_config(config)
        self.config = config

    def _port(self) -> CallPort:
        assert self._calls is not None, "wire() first"
        return self._calls

    def _bridge(self) -> MediaBridge:
        if self.bridge is None:
            raise CommandError("the media bridge is not running", 500)
        return self.bridge

    # --- link calls (from the calls service) --------------------------------------------------

    def is_link_caller(self, calling_number: str, username: str) -> bool:
        """An inbound call is a link when the caller presents a node number as an AllStarLink
        node does: user `radio` (or a username we link with, or its own number)."""
        if self.network.me is None or not calling_number.isdigit():
            return False
        if calling_number.startswith("0"):
            return False  # app_rpt: a caller id starting with 0 is no node
        cfg = self.config.links.get(calling_number)
        return username in ("radio", calling_number) or (
            cfg is not None and cfg.username == username
        )

    def is_link_call(self, callno: int) -> bool:
        return self.network.is_link_call(callno)

    def inbound(self, event: c.CallIncoming, now: float) -> None:
        """An inbound call from a node (`is_link_caller`)."""
        call = self._port().endpoint.call(event.callno)
        addr = call.peer_addr if call is not None else ("", 0)
        log.info("link call %d from node %s", event.callno, event.calling_number)
        self.apply(
            self.network.inbound(event.callno, event.calling_number, event.called_number, addr, now)
        )

    def on_call_event(self, event: Any, now: float) -> None:
        """One event of a link call."""
        call = self._port().endpoint.call(event.callno)
        link = self.network.link_for_call(event.callno)
        if isinstance(event, c.CallAnswered) and link is not None and link.guest:
            self.network.answered(event.callno, now)
        if isinstance(event, c.CallAnswered | c.CallRinging) and event.callno not in self._legs:
            # A guest link is up from its first ring (the web transceiver's rule); the others
            # from ANSWER.
            if isinstance(event, c.CallRinging) and (link is None or not link.guest):
                return
            if call is not None and call.format is not None and link is not None:
                self._bridge().add_call_leg(
                    call,
                    now,
                    mode=link.mode.leg,
                    keying="voice",
                    dtmf=self.config.dtmf.inband_on("links"),
                    link=True,
                )
                self._legs.add(event.callno)
                codec = CODEC_NAMES.get(call.format)
                self.apply(self.network.call_up(event.callno, codec, now))
        elif isinstance(event, c.TextReceived):
            self.apply(self.network.text(event.callno, event.text, now))
        elif isinstance(event, c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed):
            if event.callno in self._legs:
                self._bridge().push_received(event)
        elif isinstance(event, c.DtmfReceived):
            if self._digits is not None:
                self._digits.digit(f"call {event.callno}", event.callno, event.digit)
        elif isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            self._drop_leg(event.callno)
            refused = isinstance(event, c.CallRejected) and event.by_peer
            self.apply(
                self.network.call_ended(event.callno, end_reason(event), now, refused=refused)
            )

    def spurt(self, callno: int, started: bool, now: float) -> None:
        """Our talk spurt into a link call began or ended (RADIO_KEY / RADIO_UNKEY)."""
        self.apply(self.network.spurt(callno, started, now))

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> None:
        """A link's received voice keyed or unkeyed."""
        self.apply(self.network.rx_keyed(callno, keyed, now))

    def _drop_leg(self, callno: int) -> None:
        if callno in self._legs:
            self._legs.discard(callno)
            self._bridge().remove_leg(callno)

    # --- the machine's output -----------------------------------------------------------------

    def apply(self, out: ln.LinkOutput) -> None:
        """Carry out what the link machine asked for, in order, and publish its events."""
        now = self._clock()
        for action in out.actions:
            try:
                self._act(action, now)
            except LocalProtocolError as exc:
                # The call went away under the action (e.g. hung up meanwhile): nothing to do.
                log.debug("link action %s skipped: %s", type(action).__name__, exc)
        for event in out.events:
            self._publish(event)
        if out.changed or out.events:
            self._changed()
        self._rearm()

    def _act(self, action: ln.LinkAction, now: float) -> None:
        port = self._port()
        ep = port.endpoint
        if isinstance(action, ln.SendText):
            port.apply(ep.send_text(action.callno, now, action.text))
        elif isinstance(action, ln.SendKey):
            port.apply(ep.key(action.callno, now))
        elif isinstance(action, ln.SendUnkey):
            port.apply(ep.unkey(action.callno, now))
        elif isinstance(action, ln.SendCng):
            port.apply(ep.send_cng(action.callno, now))
        elif isinstance(action, ln.Answer):
            port.apply(ep.answer(action.callno, now))
        elif isinstance(action, ln.Hangup):
            self._drop_leg(action.callno)
            port.apply(ep.hangup(action.callno, now, None, action.causecode))
        elif isinstance(action, ln.SetLeg):
            if action.callno in self._legs:
                if action.mode is not None:
                    self._bridge().set_leg_mode(action.callno, action.mode)  # type: ignore[arg-type]
                if action.keying is not None:
                    self._bridge().set_leg_keying(action.callno, action.keying)  # type: ignore[arg-type]
        elif isinstance(action, ln.Dial):
            target = self._targets.pop(action.node, None)
            if target is not None and action.node not in self._guest_nodes:
                self._dial(action.node, target)
            else:
                self._spawn(self._resolve_and_dial(action.node, target))
        elif isinstance(action, ln.VerifySource):
            self._spawn(self._verify_source(action))

    def _publish(self, event: ln.LinkEvent) -> None:
        if self.links_changed is not None and isinstance(
            event, ln.LinkConnected | ln.LinkDisconnected
        ):
            self.links_changed()
        announce = self._announce
        if isinstance(event, ln.LinkConnected):
            log.info("link to node %s up (%s, %s)", event.node, event.mode.value, event.direction)
            if announce is not None:
                announce.event("link_connected", node=event.node)
            self._bus.publish(
                Link(
                    kind="connected",
                    node=event.node,
                    call=event.callno,
                    mode=event.mode.value,
                    direction=event.direction,
                )
            )
        elif isinstance(event, ln.LinkDisconnected):
            log.info("link to node %s down: %s", event.node, event.reason)
            if announce is not None and not self._stopping.is_set():
                announce.event("link_disconnected", node=event.node)
            self._bus.publish(
                Link(kind="disconnected", node=event.node, call=event.callno, reason=event.reason)
            )
        elif isinstance(event, ln.LinkKeyed):
            self._bus.publish(
                Link(kind="keyed", node=event.node, call=event.callno, keyed=event.keyed)
            )
        elif isinstance(event, ln.RemoteDigitReceived):
            if self._digits is not None:
                self._digits.digit(f"remote {event.node}", event.callno, event.digit)
        elif isinstance(event, ln.TelemetryReceived):
            tel = event.telemetry
            log.info("telemetry from node %s: %s %s", tel.source, tel.token, ",".join(tel.args))
            if announce is not None:
                announce.telemetry(tel.token, tel.args)

    # --- lookups, dialling and source checks --------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def lookup(self, node: str, addr: str | None) -> NodeAddress:
        """Where `node` is: `addr`, its `[links.<node>] addr`, else the nodes file, then DNS."""
        cfg = self.config.links.get(node)
        if addr is None and cfg is not None and cfg.addr is not None:
            addr = str(cfg.addr)
        return await self.resolver.lookup(node, addr)

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
            self.apply(self.network.dial_failed(node, str(exc), self._clock()))
            return
        self._dial(node, target, guest)

    def _dial(self, node: str, target: NodeAddress, guest: GuestToken | None = None) -> None:
        now = self._clock()
        link = self.network.links.get(node)
        if link is None or link.state is not ln.LinkState.CONNECTING or link.callno is not None:
            return  # disconnected (or dialled) while being resolved
        if guest is not None:
            # As the web transceiver dials (research/allstar.md §5.1): the public user and its
            # published secret, extension "s", the target node as CALLING_NUMBER and the token
            # as CALLING_NAME.
            self._secrets.remember_transient(guest.calling_name)
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
        port = self._port()
        try:
            callno, out = port.endpoint.dial(now, target.addr, params)
        except LocalProtocolError as exc:
            self.apply(self.network.dial_failed(node, str(exc), now))
            return
        self.apply(self.network.dialled(node, callno, target.addr, now))
        port.apply(out)

    def _link_params(self, node: str, target: NodeAddress) -> c.DialParams:
        """A link call as ASL3 places one: user `radio` (or the configured or peer-secret
        user), our number calling, the target called."""
        cfg = self.config.links.get(node)
        peer_secret = self._secrets.peer_secret(node)
        me = self.config.node_id
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

    async def _verify_source(self, action: ln.VerifySource) -> None:
        cfg = self.config.links.get(action.node)
        matches: bool | None
        if cfg is not None and cfg.addr is not None:
            try:
                target = await self.lookup(action.node, None)
            except (LookupError, ValueError):
                matches = None
            else:
                matches = same_ip(target.host, action.ip)
        else:
            # app_rpt's check: the looked-up address or the extnodes 2nd field, NONE for none.
            matches = await self.resolver.source_ip_matches(action.node, action.ip)
        self.apply(self.network.source_checked(action.callno, matches, self._clock()))

    # --- commands -----------------------------------------------------------------------------

    async def link(
        self, action: str, node: str, addr: str | None = None, *, permanent: bool = False
    ) -> None:
        """Connect (`*3`), monitor (`*2`), locally monitor or disconnect (`*1`) node `node`; or
        `disconnect_all` (app_rpt's `ilink 6`; `node` is not used). `permanent` links are
        redialled for ever once lost (AMI ilink 12/13)."""
        if action not in (*LINK_ACTIONS, "disconnect", "disconnect_all"):
            raise CommandError(
                f"unknown link action {action!r} "
                "(accepted: connect, monitor, local_monitor, disconnect, disconnect_all)",
                400,
            )
        if action == "disconnect_all":
            self.apply(self.network.disconnect_all(self._clock()))
            return
        if not node.isdigit():
            raise CommandError("node must be a node number (digits)", 400)
        if action == "disconnect":
            self.apply(self.network.disconnect(node, self._clock()))
            return
        mode = LINK_ACTIONS[action]
        if self.network.check_connect(node, mode, permanent=permanent) is None:
            try:
                target = await self.lookup(node, addr)
            except (LookupError, ValueError) as exc:
                raise CommandError(str(exc), 400) from None
            self._targets[node] = target
        try:
            self.apply(self.network.connect(node, mode, self._clock(), permanent=permanent))
        finally:
            self._targets.pop(node, None)

    def send_remote_digit(self, node: str, digit: str) -> None:
        """Remote command mode: one digit to `node` as a `D` text (CommandError when `node` is
        no longer in the network)."""
        self.apply(self.network.send_remote_digit(node, digit))

    def start(self, now: float) -> None:
        """Dial the permanent links."""
        self.apply(self.network.start(now))

    def timer(self, now: float) -> None:
        self.apply(self.network.timer(now))

    def close(self, now: float) -> None:
        """Shutdown: a plain HANGUP for every link call (frames only), no `!!DISCONNECT!!`:
        permanent links should come back when this node does."""
        for task in self._tasks:
            task.cancel()
        port = self._port()
        for link in list(self.network.links.values()):
            if link.callno is not None:
                with contextlib.suppress(LocalProtocolError):
                    port.send(port.endpoint.hangup(link.callno, now, None, 0).frames)
