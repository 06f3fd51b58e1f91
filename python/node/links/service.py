"""The links service: the `LinkNetwork` machine and the I/O it asks for.

The machine (`links/network.py`) is sans-I/O: it takes link call events, texts and commands and
returns `LinkOutput` (actions and events). This service carries the actions out on the calls'
endpoint (texts, keying, answer, hang-up) and the media legs, hands dialling and source checks to
its `LinkDialer` (whose outcomes come back here, to the machine), and publishes the events: bus
`link` events, announcements, status-post triggers, and `D` digits to the commands service.

The calls service hands it every event of a link call and every inbound call from a node
(`on_call_event`); `link` is `POST /link` (and the DTMF and AMI link commands).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from node.calls.service import CODEC_NAMES, end_reason
from node.context import NodeContext
from node.errors import CommandError, LocalProtocolError
from node.iax2 import call as c
from node.iax2.transport import Address
from node.links import network as ln
from node.links.dialer import CallPort as DialerCalls
from node.links.dialer import LinkDialer
from node.links.health import HealthChanged, HealthWatch, Sample, Thresholds
from node.media.bridge import MediaBridge

__all__ = ["LINK_ACTIONS", "CallPort", "LinkService"]

log = logging.getLogger(__name__)

LINK_ACTIONS = {
    "connect": ln.LinkMode.TRANSCEIVE,
    "monitor": ln.LinkMode.MONITOR,
    "local_monitor": ln.LinkMode.LOCAL_MONITOR,
}


class CallPort(DialerCalls, Protocol):
    """The calls service as the links see it: the endpoint, where its output goes, and the
    engine (for frames alone, at shutdown)."""

    def send(self, frames: Iterable[tuple[Address, Any]]) -> None: ...

    def health(
        self, callno: int, legs: Mapping[int, dict[str, int]] | None = None
    ) -> dict[str, Any]: ...

    def leg_stats(self) -> dict[int, dict[str, int]]: ...


class LinkService:
    """The node's links: the machine, its legs, and what it asks of the rest of the node."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx
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
        #: Lookups, tokens, link calls and source checks.
        self.dialer = LinkDialer(ctx)
        self.bridge: MediaBridge | None = None
        #: Link calls that have a media leg.
        self._legs: set[int] = set()
        # Wired at start-up (`wire`).
        self._calls: CallPort | None = None
        self._report: Callable[[ln.LinkEvent], None] = lambda event: None
        #: Each link's degraded/recovered state (`[links] warn_loss_pct`, `warn_rtt_ms`).
        self.health_watch = HealthWatch()
        self._report_health: Callable[[HealthChanged], None] = lambda event: None

    def wire(
        self,
        calls: CallPort,
        report: Callable[[ln.LinkEvent], None],
        report_health: Callable[[HealthChanged], None] | None = None,
    ) -> None:
        """Connect the calls' endpoint and where the machine's events go (`LinkReporter`), and
        where a link's crossing of the health thresholds goes."""
        self._calls = calls
        self.dialer.wire(calls, self)
        self._report = report
        if report_health is not None:
            self._report_health = report_health

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
        cfg = self._ctx.config.links.get(calling_number)
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
        """One event of a link call: its media first, then the machine, then what the machine
        asked for."""
        callno = event.callno
        call = self._port().endpoint.call(callno)
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
        out: ln.LinkOutput | None = None
        if isinstance(event, c.CallAnswered) and guest:
            self.network.answered(callno, now)
        if up:
            assert call is not None
            out = self.network.call_up(callno, CODEC_NAMES.get(call.format), now)
        elif isinstance(event, c.TextReceived):
            out = self.network.text(callno, event.text, now)
        elif isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            refused = isinstance(event, c.CallRejected) and event.by_peer
            out = self.network.call_ended(callno, end_reason(event), now, refused=refused)
        if out is not None:
            self.apply(out)

    def spurt(self, callno: int, started: bool, now: float) -> None:
        """Our talk spurt into a link call began or ended (RADIO_KEY / RADIO_UNKEY)."""
        self.apply(self.network.spurt(callno, started, now))

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> None:
        """A link's received voice keyed or unkeyed."""
        self.apply(self.network.rx_keyed(callno, keyed, now))

    # --- network health -----------------------------------------------------------------------

    def health(
        self, callno: int | None, legs: Mapping[int, dict[str, int]] | None = None
    ) -> dict[str, Any] | None:
        """A link call's `health` object (None without a call), with whether it is degraded;
        `legs` as `CallService.leg_stats` (fetched once for many links)."""
        if callno is None:
            return None
        body = self._port().health(callno, legs)
        link = self.network.link_for_call(callno)
        body["degraded"] = link is not None and self.health_watch.degraded(link.node)
        return body

    def snapshot(
        self, now: float, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        """The snapshot's `links`: the machine's entries, each with its `health`."""
        if legs is None and self.network.links:
            legs = self._port().leg_stats()
        return [
            {**entry, "health": self.health(entry["call"], legs)}
            for entry in self.network.snapshot(now)
        ]

    def health_snapshot(
        self, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        """The `health` event's `links`: node, call and health of every link with a call."""
        if legs is None and self.network.links:
            legs = self._port().leg_stats()
        return [
            {"node": link.node, "call": link.callno, "health": self.health(link.callno, legs)}
            for link in self.network.links.values()
            if link.callno is not None
        ]

    def check_health(self, now: float) -> None:
        """Judge every up link's loss and RTT against the thresholds; report the crossings."""
        config = self._ctx.config
        limits = Thresholds(config.link_warn_loss_pct, config.link_warn_rtt_ms)
        up = [link for link in self.network.links.values() if link.up and link.callno is not None]
        self.health_watch.forget({link.node for link in up})
        legs = self._port().leg_stats() if up else {}
        for link in up:
            assert link.callno is not None
            body = self._port().health(link.callno, legs)
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
                self._report_health(event)

    # --- the machine's output -----------------------------------------------------------------

    def apply(self, out: ln.LinkOutput) -> None:
        """Carry out what the link machine asked for, in order, and publish its events."""
        now = self._ctx.clock()
        for action in out.actions:
            try:
                self._act(action, now)
            except LocalProtocolError as exc:
                # The call went away under the action (e.g. hung up meanwhile): nothing to do.
                log.debug("link action %s skipped: %s", type(action).__name__, exc)
        for event in out.events:
            self._report(event)
        if out.changed or out.events:
            self._ctx.changed()
        self._ctx.rearm()

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
            if action.callno in self._legs:
                self._legs.discard(action.callno)
                self._bridge().remove_leg(action.callno)
            port.apply(ep.hangup(action.callno, now, None, action.causecode))
        elif isinstance(action, ln.SetLeg):
            if action.callno in self._legs:
                if action.mode is not None:
                    self._bridge().set_leg_mode(action.callno, action.mode)  # type: ignore[arg-type]
                if action.keying is not None:
                    self._bridge().set_leg_keying(action.callno, action.keying)  # type: ignore[arg-type]
        elif isinstance(action, ln.Dial):
            self.dialer.dial(action.node)
        elif isinstance(action, ln.VerifySource):
            self.dialer.verify_source(action.node, action.ip, action.callno)

    # --- what the dialer reports ---------------------------------------------------------------

    def wanted(self, node: str) -> bool:
        """Whether `node` still waits for its call (not disconnected or dialled meanwhile)."""
        link = self.network.links.get(node)
        return link is not None and link.state is ln.LinkState.CONNECTING and link.callno is None

    def dialled(self, node: str, callno: int, addr: Address) -> None:
        self.apply(self.network.dialled(node, callno, addr, self._ctx.clock()))

    def dial_failed(self, node: str, reason: str) -> None:
        self.apply(self.network.dial_failed(node, reason, self._ctx.clock()))

    def source_checked(self, callno: int, matches: bool | None) -> None:
        self.apply(self.network.source_checked(callno, matches, self._ctx.clock()))

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
            self.apply(self.network.disconnect_all(self._ctx.clock()))
            return
        if not node.isdigit():
            raise CommandError("node must be a node number (digits)", 400)
        if action == "disconnect":
            self.apply(self.network.disconnect(node, self._ctx.clock()))
            return
        mode = LINK_ACTIONS[action]
        if self.network.check_connect(node, mode, permanent=permanent) is None:
            try:
                target = await self.dialer.lookup(node, addr)
            except (LookupError, ValueError) as exc:
                raise CommandError(str(exc), 400) from None
            self.dialer.hold(node, target)
        try:
            self.apply(self.network.connect(node, mode, self._ctx.clock(), permanent=permanent))
        finally:
            self.dialer.release(node)

    def send_remote_digit(self, node: str, digit: str) -> None:
        """Remote command mode: one digit to `node` as a `D` text (CommandError when `node` is
        no longer in the network)."""
        self.apply(self.network.send_remote_digit(node, digit))

    def start(self, now: float) -> None:
        """Dial the permanent links."""
        self.apply(self.network.start(now))

    def timer(self, now: float) -> None:
        self.apply(self.network.timer(now))

    async def wind_down(self) -> None:
        """Shutdown, first step: end the links as `LinkNetwork.shutdown` says, and wait (at
        most `TEARDOWN_WAIT`) for the far ends that read our `!!DISCONNECT!!` to hang up."""
        clock = self._ctx.clock
        self.apply(self.network.shutdown(clock()))
        deadline = clock() + ln.TEARDOWN_WAIT
        while self.network.tearing_down() and clock() < deadline:
            await asyncio.sleep(0.02)

    def close(self, now: float) -> None:
        """Shutdown, last step: a plain HANGUP for every link call still there (frames only)."""
        self.dialer.close()
        port = self._port()
        for link in list(self.network.links.values()):
            if link.callno is not None:
                with contextlib.suppress(LocalProtocolError):
                    port.send(port.endpoint.hangup(link.callno, now, None, 0).frames)
