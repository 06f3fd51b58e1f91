"""The links service: the `LinkNetwork` machine and the I/O it asks for.

The machine (`links/network.py`) is sans-I/O: it takes link call events, texts and commands and
returns `LinkOutput` (actions and events). This service is the owner of link calls on the node's
IAX2 port (`node.port`): the router hands it every event of a call it owns, and the inbound calls
`is_link_caller` says are links. It carries the machine's actions out on the port (texts, keying,
answer, hang-up) and the media legs, asks its `LinkDialer` for lookups, tokens and source checks
(as `Spawn` work the router runs), and returns the machine's events in its `Effects` for the
router to route (bus `link` events, announcements, status posts and `D` digits, by
`links/report.py`).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import random
from collections.abc import Mapping
from typing import Any

from node.config import NodeConfig
from node.context import NodeContext
from node.effects import NOTHING, DigitReceived, Effects, Spawn
from node.errors import CommandError, LocalProtocolError
from node.iax2 import call as c
from node.iax2.call_events import end_reason
from node.iax2.constants import CODEC_NAMES
from node.links import network as ln
from node.links.dialer import DialFailed, LinkDialer
from node.links.health import HealthWatch, Sample, Thresholds
from node.media.bridge import MediaBridge
from node.port import IaxPort

__all__ = ["LINK_ACTIONS", "OWNER", "LinkService", "is_link_caller"]

log = logging.getLogger(__name__)

#: The port's tag for link calls.
OWNER = "links"

LINK_ACTIONS = {
    "connect": ln.LinkMode.TRANSCEIVE,
    "monitor": ln.LinkMode.MONITOR,
    "local_monitor": ln.LinkMode.LOCAL_MONITOR,
}


def is_link_caller(config: NodeConfig, calling_number: str, username: str) -> bool:
    """Whether an inbound call is a link: the caller presents a node number as an AllStarLink
    node does, with user `radio` (or a username we link with, or its own number). A rule of the
    configuration alone, so the port can hold such calls for the links to vet."""
    if config.node_id is None or not calling_number.isdigit():
        return False
    if calling_number.startswith("0"):
        return False  # app_rpt: a caller id starting with 0 is no node
    cfg = config.links.get(calling_number)
    return username in ("radio", calling_number) or (cfg is not None and cfg.username == username)


class LinkService:
    """The node's links: the machine, its legs, and what it asks of the rest of the node."""

    def __init__(self, ctx: NodeContext, port: IaxPort) -> None:
        self._ctx = ctx
        self._port = port
        config = ctx.config
        guests = frozenset(node for node, cfg in config.links.items() if cfg.shape == "wt-guest")
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
            guest_nodes=guests,
        )
        #: Lookups, tokens, link call parameters and source checks.
        self.dialer = LinkDialer(ctx)
        self.dialer.hosted = port.hosts
        self.bridge: MediaBridge | None = None
        #: Link calls that have a media leg.
        self._legs: set[int] = set()
        #: Each link's degraded/recovered state (`[links] warn_loss_pct`, `warn_rtt_ms`).
        self.health_watch = HealthWatch()

    def _bridge(self) -> MediaBridge:
        if self.bridge is None:
            raise CommandError("the media bridge is not running", 500)
        return self.bridge

    def next_deadline(self) -> float | None:
        return self.network.next_deadline()

    # --- link calls (from the router) ---------------------------------------------------------

    def on_call_event(self, event: c.CallEvent, now: float) -> Effects:
        """One event of a link call: its media first, then the machine, then what the machine
        asked for."""
        callno = event.callno
        if isinstance(event, c.CallIncoming):
            call = self._port.call(callno)
            addr = call.peer_addr if call is not None else ("", 0)
            log.info("link call %d from node %s", callno, event.calling_number)
            return self._apply(
                self.network.inbound(callno, event.calling_number, event.called_number, addr, now)
            )
        if isinstance(event, c.DtmfReceived):
            if not self.network.is_link_call(callno):
                return NOTHING
            # A linked node's user typed them: commands, as the radio's are.
            return Effects(events=(DigitReceived(f"call {callno}", callno, event.digit),))
        call = self._port.call(callno)
        link = self.network.link_for_call(callno)
        guest = link is not None and link.guest
        # A guest link is up from its first ring (the web transceiver's rule); the others from
        # ANSWER.
        up = (
            (isinstance(event, c.CallAnswered) or (isinstance(event, c.CallRinging) and guest))
            and callno not in self._legs
            and call is not None
            and call.format is not None
            and link is not None
        )
        if up:
            assert call is not None and link is not None
            self._bridge().add_call_leg(
                call,
                now,
                mode=link.mode.leg,
                keying="voice",
                dtmf=self._ctx.config.dtmf.inband_on("links"),
                link=True,
            )
            self._legs.add(callno)
        elif callno not in self._legs:
            pass  # no media yet (or any more)
        elif isinstance(event, c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed):
            self._bridge().push_received(event)
        elif isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            self._legs.discard(callno)
            self._bridge().remove_leg(callno)
        if isinstance(event, c.CallAnswered) and guest:
            self.network.answered(callno, now)
        if up:
            assert call is not None
            return self._apply(self.network.call_up(callno, CODEC_NAMES.get(call.format), now))
        if isinstance(event, c.TextReceived):
            return self._apply(self.network.text(callno, event.text, now))
        if isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            refused = isinstance(event, c.CallRejected) and event.by_peer
            return self._apply(
                self.network.call_ended(callno, end_reason(event), now, refused=refused)
            )
        return NOTHING

    def spurt(self, callno: int, started: bool, now: float) -> Effects:
        """Our talk spurt into a link call began or ended (RADIO_KEY / RADIO_UNKEY)."""
        return self._apply(self.network.spurt(callno, started, now))

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> Effects:
        """A link's received voice keyed or unkeyed."""
        return self._apply(self.network.rx_keyed(callno, keyed, now))

    def timer(self, now: float) -> Effects:
        return self._apply(self.network.timer(now))

    # --- network health -----------------------------------------------------------------------

    def health(
        self, callno: int | None, legs: Mapping[int, dict[str, int]] | None = None
    ) -> dict[str, Any] | None:
        """A link call's `health` object (None without a call), with whether it is degraded;
        `legs` as `IaxPort.leg_stats` (fetched once for many links)."""
        if callno is None:
            return None
        body = self._port.health(callno, legs)
        link = self.network.link_for_call(callno)
        body["degraded"] = link is not None and self.health_watch.degraded(link.node)
        return body

    def snapshot(
        self, now: float, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        """The snapshot's `links`: the machine's entries, each with its `health`."""
        if legs is None and self.network.links:
            legs = self._port.leg_stats()
        return [
            {**entry, "health": self.health(entry["call"], legs)}
            for entry in self.network.snapshot(now)
        ]

    def health_snapshot(
        self, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        """The `health` event's `links`: node, call and health of every link with a call."""
        if legs is None and self.network.links:
            legs = self._port.leg_stats()
        return [
            {"node": link.node, "call": link.callno, "health": self.health(link.callno, legs)}
            for link in self.network.links.values()
            if link.callno is not None
        ]

    def check_health(self, now: float) -> Effects:
        """Judge every up link's loss and RTT against the thresholds; the crossings
        (`HealthChanged`) for the router."""
        config = self._ctx.config
        limits = Thresholds(config.link_warn_loss_pct, config.link_warn_rtt_ms)
        up = [link for link in self.network.links.values() if link.up and link.callno is not None]
        self.health_watch.forget({link.node for link in up})
        legs = self._port.leg_stats() if up else {}
        crossed: list[object] = []
        for link in up:
            assert link.callno is not None
            body = self._port.health(link.callno, legs)
            rx, peer = body["rx"], body["peer"]
            sample = Sample(
                rtt_ms=body["rtt_ms"],
                rx_lost=rx["lost"] if rx else 0,
                rx_frames=rx["frames_in"] if rx else 0,
                peer_lost=peer["lost"] if peer else None,
                peer_packets=peer["packets"] if peer else None,
            )
            event = self.health_watch.check(link.node, link.callno, sample, limits, now)
            if event is not None:
                crossed.append(event)
        return Effects(events=tuple(crossed)) if crossed else NOTHING

    # --- the machine's output -----------------------------------------------------------------

    def _apply(self, out: ln.LinkOutput) -> Effects:
        """Carry out what the link machine asked for, in order; its events for the router.
        An action may give the machine another input (a dial placed at once): its output is
        carried out after this one's, in the same loop."""
        pending = collections.deque([out])
        changed = False
        events: list[object] = []
        now = self._ctx.clock()
        while pending:
            out = pending.popleft()
            for action in out.actions:
                try:
                    more = self._act(action, now, events)
                except LocalProtocolError as exc:
                    # The call went away under the action (e.g. hung up meanwhile): nothing to do.
                    log.debug("link action %s skipped: %s", type(action).__name__, exc)
                else:
                    if more is not None:
                        pending.append(more)
            events.extend(out.events)
            changed = changed or out.changed or bool(out.events)
        return Effects(changed, tuple(events)) if changed or events else NOTHING

    def _act(self, action: ln.LinkAction, now: float, events: list[object]) -> ln.LinkOutput | None:
        port = self._port
        if isinstance(action, ln.SendText):
            port.send_text(action.callno, now, action.text)
        elif isinstance(action, ln.SendKey):
            port.key(action.callno, now)
        elif isinstance(action, ln.SendUnkey):
            port.unkey(action.callno, now)
        elif isinstance(action, ln.SendCng):
            port.send_cng(action.callno, now)
        elif isinstance(action, ln.Answer):
            port.answer(action.callno, now)
        elif isinstance(action, ln.Hangup):
            if action.callno in self._legs:
                self._legs.discard(action.callno)
                self._bridge().remove_leg(action.callno)
            port.hangup(action.callno, now, None, action.causecode)
        elif isinstance(action, ln.SetLeg):
            if action.callno in self._legs:
                if action.mode is not None:
                    self._bridge().set_leg_mode(action.callno, action.mode)  # type: ignore[arg-type]
                if action.keying is not None:
                    self._bridge().set_leg_keying(action.callno, action.keying)  # type: ignore[arg-type]
        elif isinstance(action, ln.Dial):
            target = self.dialer.take_target(action.node)
            if target is None or self.dialer.is_guest(action.node):
                events.append(Spawn(self._dial_later(action.node, target), f"dial {action.node}"))
                return None
            return self._dial(action.node, target, None, now)
        elif isinstance(action, ln.VerifySource):
            work = self._verify_source(action.node, action.ip, action.callno)
            events.append(Spawn(work, f"source check of node {action.node}"))
        return None

    # --- dialling and source checks (their I/O awaited in `Spawn` work) ------------------------

    def _wanted(self, node: str) -> bool:
        """Whether `node` still waits for its call (not disconnected or dialled meanwhile)."""
        link = self.network.links.get(node)
        return link is not None and link.state is ln.LinkState.CONNECTING and link.callno is None

    async def _dial_later(self, node: str, target: Any) -> Effects:
        """The machine's `Dial` after a lookup (and a token, for a web-transceiver guest)."""
        try:
            target, guest = await self.dialer.resolve(node, target)
        except DialFailed as exc:
            return self._apply(self.network.dial_failed(node, str(exc), self._ctx.clock()))
        out = self._dial(node, target, guest, self._ctx.clock())
        return NOTHING if out is None else self._apply(out)

    def _dial(self, node: str, target: Any, guest: Any, now: float) -> ln.LinkOutput | None:
        if not self._wanted(node):
            return None  # disconnected (or dialled) while being resolved
        params = self.dialer.params(node, target, guest)
        try:
            callno = self._port.dial(OWNER, now, target.addr, params)
        except LocalProtocolError as exc:
            return self.network.dial_failed(node, str(exc), now)
        return self.network.dialled(node, callno, target.addr, now)

    async def _verify_source(self, node: str, ip: str, callno: int) -> Effects:
        matches = await self.dialer.source_matches(node, ip)
        return self._apply(self.network.source_checked(callno, matches, self._ctx.clock()))

    # --- commands -----------------------------------------------------------------------------

    async def link(
        self, action: str, node: str, addr: str | None = None, *, permanent: bool = False
    ) -> Effects:
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
            return self._apply(self.network.disconnect_all(self._ctx.clock()))
        if not node.isdigit():
            raise CommandError("node must be a node number (digits)", 400)
        if action == "disconnect":
            return self._apply(self.network.disconnect(node, self._ctx.clock()))
        mode = LINK_ACTIONS[action]
        if self.network.check_connect(node, mode, permanent=permanent) is None:
            try:
                target = await self.dialer.lookup(node, addr)
            except (LookupError, ValueError) as exc:
                raise CommandError(str(exc), 400) from None
            self.dialer.hold(node, target)
        try:
            return self._apply(
                self.network.connect(node, mode, self._ctx.clock(), permanent=permanent)
            )
        finally:
            self.dialer.release(node)

    def send_remote_digit(self, node: str, digit: str) -> Effects:
        """Remote command mode: one digit to `node` as a `D` text (CommandError when `node` is
        no longer in the network)."""
        return self._apply(self.network.send_remote_digit(node, digit))

    def start(self, now: float) -> Effects:
        """Dial the permanent links."""
        return self._apply(self.network.start(now))

    def shutdown(self, now: float) -> Effects:
        """Shutdown, first step: end the links as `LinkNetwork.shutdown` says (the far ends that
        read our `!!DISCONNECT!!` hang up; `tearing_down` says while they may)."""
        return self._apply(self.network.shutdown(now))

    def tearing_down(self) -> bool:
        return self.network.tearing_down()

    def close(self, now: float) -> None:
        """Shutdown, last step: a plain HANGUP for every link call still there (frames only)."""
        for link in list(self.network.links.values()):
            if link.callno is not None:
                with contextlib.suppress(LocalProtocolError):
                    self._port.hangup(link.callno, now, None, 0)
