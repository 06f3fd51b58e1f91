"""The router: every input of the node goes to its owner, and the router acts on what comes
back.

Inputs come from the edges (`on_frames`, `on_engine_events`, `on_carrier`,
`on_registration_events`), the one loop timer (`_on_timer`), the front doors (the controller's
commands) and the `Spawn` work the router runs. A received frame goes to the registration when
it owns the frame, else to the IAX2 port (`node.port`), whose call events the router hands to
the owner of their call number: the links (`node.links.service`) or the plain calls
(`node.calls`); an inbound caller is claimed by the links when it is a node
(`links.service.is_link_caller`). Engine events are routed by their class.

Every service input returns `Effects` (`node.effects`): the router routes their events by type
(`_routes`), first in first out until none is left, runs `Spawn` work as tasks whose returned
`Effects` it takes in turn, and once the input is done (`_settle`) re-arms its one timer at the
earliest of its deadline table (`TimerKind`: each service's next deadline, read from its getter)
and publishes one snapshot if anything changed. No service calls back.

`Controller` (controller.py) builds the services, calls `_wire_routes`, and is the front door.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from node.announce.service import Announcements
from node.calls import service as plain
from node.calls.service import CallService
from node.commands import CommandRunner
from node.commands.schedule import Scheduler
from node.context import NodeContext
from node.effects import (
    CHANGED,
    NOTHING,
    Announce,
    AnnounceTelemetry,
    DigitReceived,
    DigitSourceGone,
    Effects,
    KeyingChanged,
    LinksChanged,
    Spawn,
)
from node.errors import LocalProtocolError
from node.events import EventBus, Health, Snapshot
from node.iax2 import call as c
from node.iax2 import transport as engine
from node.iax2.registration import RegistrationEvent
from node.iax2.transport import EngineEvents, EngineTransport, FrameBatch
from node.links import service as links
from node.links.health import HealthChanged
from node.links.network import LinkEvent
from node.links.report import LinkReporter
from node.links.service import LinkService, is_link_caller
from node.loop_timer import DeadlineTimer
from node.machine import DeadlineTable
from node.port import IaxPort
from node.radio.transmit import TransmitService
from node.registration.service import RegistrationService
from node.wireguard import tunnel_json

if TYPE_CHECKING:
    from node.allstar.runner import StatPostRunner

__all__ = ["HEALTH_INTERVAL", "Router", "TimerKind"]

log = logging.getLogger(__name__)

#: Seconds between health checks (link thresholds, the `health` event) while there are calls or
#: links: the figures change without a state change that would publish a snapshot.
HEALTH_INTERVAL = 5.0

_CALL_ENDED = (c.CallHungUp, c.CallRejected, c.CallLost)


class TimerKind(enum.Enum):
    """The router's deadline table: one deadline per kind, each a service's next deadline."""

    ENDPOINT = "endpoint"
    REGISTRATION = "registration"
    LINKS = "links"
    LINK_HEALTH = "link health"
    TX_TIMEOUT = "TX time-out"
    RADIO = "radio"
    DTMF = "DTMF inter-digit"
    IDS = "IDs"
    ANNOUNCEMENTS = "announcements"
    SCHEDULE = "schedule"
    STATPOST = "status posts"


class Router:
    """Routes inputs to the services and acts on what they return; one loop timer."""

    # The rooms it routes to (built by `Controller`).
    _port: IaxPort
    _calls: CallService
    _links: LinkService
    _registration: RegistrationService
    _transmit: TransmitService
    _commands: CommandRunner
    _scheduler: Scheduler
    _announcements: Announcements
    _reporter: LinkReporter

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self.bus: EventBus = ctx.bus
        self._clock = ctx.clock
        #: Set once the node is shutting down (no more work is started).
        self.stopping = ctx.stopping
        self._transport: EngineTransport | None = None
        #: `[statpost]`: the status poster, given by `attach`.
        self.statpost: StatPostRunner | None = None
        #: The next health check (None while there are no calls and no links).
        self._health_at: float | None = None
        self._snapshot_due = False
        self._tasks: set[asyncio.Task[None]] = set()
        #: The deadline table behind the one loop timer.
        self._deadlines: DeadlineTable[TimerKind] = DeadlineTable()
        self._timer = DeadlineTimer(self._on_timer)

    def now(self) -> float:
        return self._clock()

    def _wire_routes(self) -> None:
        """The routing tables, once the services exist."""
        #: The owners of call numbers on the port, by the port's tag.
        self._owners: dict[object, CallService | LinkService] = {
            plain.OWNER: self._calls,
            links.OWNER: self._links,
        }
        #: Where each event a service returns goes (looked up by its type, then its bases).
        self._routes: dict[type, Callable[[Any], Effects]] = {
            c.CallEvent: self._call_event,
            Spawn: self._spawn,
            DigitReceived: self._digit,
            DigitSourceGone: self._digit_source_gone,
            Announce: self._announce,
            AnnounceTelemetry: self._announce_telemetry,
            KeyingChanged: self._keying_changed,
            LinksChanged: self._links_changed,
            LinkEvent: self._reporter.report,
            HealthChanged: self._reporter.health,
        }
        #: What each engine event means, by its class.
        self._engine_routes: dict[type, Callable[[Any, float], Effects]] = {
            engine.FullVoiceNeeded: self._full_voice,
            engine.SpurtEnded: self._spurt_ended,
            engine.RxKeyed: self._rx_keyed,
            engine.MiniBeforeFull: self._mini_before_full,
            engine.ControlPlayed: self._control_played,
            engine.DtmfDecoded: self._dtmf_decoded,
            engine.PlayStarted: self._playback,
            engine.PlayFinished: self._playback,
            engine.ActivityChanged: self._activity,
            engine.LocalTxChanged: self._local_tx,
            engine.VoxChanged: self._vox,
            engine.UsrpDtmfReceived: self._usrp_dtmf,
            engine.UsrpCarrierChanged: self._usrp_carrier,
            engine.UsrpMetaReceived: self._usrp_meta,
            engine.UsrpPeerChanged: self._usrp_peer,
            engine.CommandFailed: self._command_failed,
            engine.TunnelChanged: self._tunnel_changed,
        }
        #: The deadline table: each kind's next deadline and what runs when it comes.
        self._deadlines: DeadlineTable[TimerKind] = DeadlineTable()
        self._timer_kinds: dict[
            TimerKind, tuple[Callable[[], float | None], Callable[[float], Effects]]
        ] = {
            TimerKind.ENDPOINT: (self._port.next_deadline, self._endpoint_timer),
            TimerKind.REGISTRATION: (self._registration.next_deadline, self._registration.timer),
            TimerKind.LINKS: (self._links.next_deadline, self._links.timer),
            TimerKind.LINK_HEALTH: (lambda: self._health_at, self._health_check),
            TimerKind.TX_TIMEOUT: (self._transmit.next_deadline, self._transmit.timer),
            TimerKind.RADIO: (self._transmit.radio_deadline, self._transmit.radio_timer),
            TimerKind.DTMF: (self._commands.next_deadline, self._commands.timer),
            TimerKind.IDS: (self._announcements.id_deadline, self._id_timer),
            TimerKind.ANNOUNCEMENTS: (
                self._announcements.playback_deadline,
                self._playback_timer,
            ),
            TimerKind.SCHEDULE: (self._scheduler.next_deadline, self._scheduler.timer),
            TimerKind.STATPOST: (self._statpost_deadline, self._statpost_timer),
        }

    def _tunnel_json(self) -> dict[str, Any] | None:
        transport = self._transport
        if transport is None:
            return None
        host, port = transport.local_addr
        return tunnel_json(transport.tunnel(), f"{host}:{port}")

    def _health_json(self) -> dict[str, Any]:
        """Every call's and link's `health` object (the `health` event's body, and /stats)."""
        has_legs = self._calls.calls or self._links.network.links
        legs = self._port.leg_stats() if has_legs else {}
        return {
            "calls": self._calls.health_snapshot(legs),
            "links": self._links.health_snapshot(legs),
        }

    # --- acting on what the services return ---------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The status snapshot (built by the controller)."""
        raise NotImplementedError

    def _take(self, fx: Effects) -> None:
        """Route `fx`'s events and the port's call events, and what routing them returns,
        first in first out, until nothing is left; a changed snapshot is due."""
        work: collections.deque[object] = collections.deque(fx.events)
        due = fx.changed
        port = self._port
        while True:
            work.extend(port.take_events())
            if not work:
                break
            event = work.popleft()
            try:
                out = self._route(event)
            except Exception:
                # One event's failure must not cost the events after it.
                log.exception("error handling %s", type(event).__name__)
                continue
            due = due or out.changed
            work.extend(out.events)
        if due:
            self._snapshot_due = True

    def _route(self, event: object) -> Effects:
        handler = self._routes.get(type(event))
        if handler is None:
            for base in type(event).__mro__[1:]:
                handler = self._routes.get(base)
                if handler is not None:
                    self._routes[type(event)] = handler
                    break
            else:
                log.debug("no route for %r", event)
                return NOTHING
        return handler(event)

    def _settle(self) -> None:
        """After an input: the deadline table from every service, the one timer at its
        earliest, one snapshot if anything changed (only to someone: a snapshot lists every
        call and link, and a subscriber that joins later is sent a fresh one first)."""
        if not (self._calls.calls or self._links.network.links):
            self._health_at = None
        elif self._health_at is None:
            self._health_at = self.now() + HEALTH_INTERVAL
        table = self._deadlines
        for kind, (deadline, _) in self._timer_kinds.items():
            at = deadline()
            if at is None:
                table.cancel(kind)
            else:
                table.set(kind, at)
        # loop.time() and our clock are both CLOCK_MONOTONIC.
        self._timer.arm(table.earliest())
        if self._snapshot_due:
            self._snapshot_due = False
            if self.bus.subscriber_count:
                self.bus.publish(Snapshot(self.snapshot()))

    def _commit(self, fx: Effects) -> None:
        """A front door's command (or any input outside a batch) is done."""
        self._take(fx)
        self._settle()

    # --- routes -------------------------------------------------------------------------------

    def _call_event(self, event: c.CallEvent) -> Effects:
        """A call event from the port, to the owner of its call number; an inbound call is
        claimed by the links when it is a link caller, else by the plain calls."""
        callno = event.callno
        port = self._port
        owner = port.owner(callno)
        if owner is None and isinstance(event, c.CallIncoming):
            number, user = event.calling_number, event.username
            owner = links.OWNER if is_link_caller(self.ctx.config, number, user) else plain.OWNER
            port.claim(callno, owner)
        service = self._owners.get(owner) if owner is not None else None
        if service is None:
            return NOTHING
        fx = service.on_call_event(event, self.now())
        if isinstance(event, _CALL_ENDED):
            port.disown(callno)
        return fx

    def _spawn(self, spawn: Spawn) -> Effects:
        if self.stopping.is_set():
            spawn.close()
            return NOTHING
        task = asyncio.get_running_loop().create_task(self._run(spawn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return NOTHING

    async def _run(self, spawn: Spawn) -> None:
        try:
            fx = await spawn.work
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s failed", spawn.what)
            return
        self._commit(fx)

    def _digit(self, event: DigitReceived) -> Effects:
        return self._commands.digit(event.source, event.call, event.digit, inband=event.inband)

    def _digit_source_gone(self, event: DigitSourceGone) -> Effects:
        self._commands.forget(event.source)
        return NOTHING

    def _announce(self, event: Announce) -> Effects:
        self._announcements.event(event.name, peer=event.peer, node=event.node)
        return NOTHING

    def _announce_telemetry(self, event: AnnounceTelemetry) -> Effects:
        self._announcements.telemetry(event.token, event.args)
        return NOTHING

    def _keying_changed(self, _event: KeyingChanged) -> Effects:
        if self.statpost is not None:
            self.statpost.key_changed()
        return NOTHING

    def _links_changed(self, _event: LinksChanged) -> Effects:
        if self.statpost is not None:
            self.statpost.links_changed()
        return NOTHING

    # --- the one timer ------------------------------------------------------------------------

    def _on_timer(self) -> None:
        now = self.now()
        for kind in self._deadlines.due(now):
            self._deadlines.cancel(kind)
            try:
                self._take(self._timer_kinds[kind][1](now))
            except Exception:
                log.exception("error in the %s timer", kind.value)
        self._settle()

    def _endpoint_timer(self, now: float) -> Effects:
        self._port.timer(now)
        return NOTHING  # its call events are taken from the port

    def _id_timer(self, now: float) -> Effects:
        self._announcements.id_timer(now)
        return NOTHING

    def _playback_timer(self, now: float) -> Effects:
        self._announcements.playback_timer(now)
        return NOTHING

    def _statpost_deadline(self) -> float | None:
        return self.statpost.next_deadline() if self.statpost is not None else None

    def _statpost_timer(self, now: float) -> Effects:
        if self.statpost is not None:
            self.statpost.timer(now)
        return NOTHING

    def _health_check(self, now: float) -> Effects:
        """Every `HEALTH_INTERVAL` while there are calls or links: judge the links' figures
        against the thresholds and publish the `health` event (only to someone: building it
        costs a leg lookup per call)."""
        self._health_at = now + HEALTH_INTERVAL
        fx = self._links.check_health(now)
        if self.bus.subscriber_count:
            self.bus.publish(Health(**{k: tuple(v) for k, v in self._health_json().items()}))
        return fx

    # --- received frames and engine events ----------------------------------------------------

    def on_frames(self, batch: FrameBatch) -> None:
        """Hand each drained full frame, in arrival order, to the registration when it owns
        the frame, else to the port; route what follows."""
        now = self.now()
        registration, port = self._registration, self._port
        # One snapshot for the whole batch, after its last change: a snapshot per changing
        # frame made a set-up burst at hub scale quadratic (2,000 calls listed hundreds of times
        # a second), and the engine's queue overflowed while Python caught up.
        for addr, frame in batch:
            try:
                if registration.owns(addr, frame):
                    self._take(registration.receive(frame, now))
                else:
                    port.receive(addr, frame, now)
                    self._take(NOTHING)
            except Exception:
                # One frame's failure must not cost the frames after it in the same batch
                # (a lost KEY would otherwise take the voice behind it along).
                log.exception("error handling a frame from %s:%d", addr[0], addr[1])
        self._settle()

    def owns_frame(self, addr: engine.Address, frame: engine.FullFrame) -> bool:
        """Whether the frame is this node's registration's (its registrar's answer)."""
        return self._registration.owns(addr, frame)

    def take_port_events(self) -> None:
        """Route the call events of this node's calls that another node's input queued on the
        port the host shares (`node.host`)."""
        self._take(NOTHING)
        self._settle()

    def on_engine_events(self, events: EngineEvents) -> None:
        """Media events from the engine: full voice frames to send, control edges, failures."""
        now = self.now()
        routes = self._engine_routes
        for event in events:
            handler = routes.get(type(event))
            if handler is None:
                log.debug("engine event %r not handled", event)
                continue
            try:
                self._take(handler(event, now))
            except Exception:
                log.exception("error handling the engine event %r", event)
        self._settle()

    def on_carrier(self, active: bool) -> None:
        """The radio's carrier detector saw the carrier come or go."""
        self._commit(self._transmit.carrier_changed(active))

    def on_registration_events(self, events: Sequence[RegistrationEvent]) -> None:
        """What the HTTP registration reported (an outcome of a POST, possibly nothing)."""
        self._commit(self._registration.on_events(events))

    def _full_voice(self, event: engine.FullVoiceNeeded, now: float) -> Effects:
        """The engine asks for a full voice frame (talk-spurt start, timestamp wrap, codec)."""
        callno = event.callno
        # A call that is hanging up no longer carries voice: its leg goes with it.
        if self._port.call(callno) is None:
            return NOTHING
        fx = NOTHING
        if event.spurt_start:
            # A legacy link needs its RADIO_KEY ahead of the first voice frame.
            fx = self._spurt(callno, True, now)
        with contextlib.suppress(LocalProtocolError):
            self._port.send_voice_full(callno, now, event.format, event.payload, event.ts)
        return fx

    def _spurt_ended(self, event: engine.SpurtEnded, now: float) -> Effects:
        """Our talk spurt into a call ended (links send their RADIO_UNKEY)."""
        return self._spurt(event.callno, False, now)

    def _spurt(self, callno: int, started: bool, now: float) -> Effects:
        """Our talk spurt into a link call began or ended (RADIO_KEY / RADIO_UNKEY)."""
        if self._port.owner(callno) != links.OWNER:
            return NOTHING
        return self._owners[links.OWNER].spurt(callno, started, now)  # type: ignore[union-attr]

    def _rx_keyed(self, event: engine.RxKeyed, now: float) -> Effects:
        """A call's received audio keyed or unkeyed (a link's voice, a plain call's VOX)."""
        owner = self._port.owner(event.callno)
        service = self._owners.get(owner) if owner is not None else None
        return NOTHING if service is None else service.rx_keyed(event.callno, event.keyed, now)

    def _mini_before_full(self, event: engine.MiniBeforeFull, now: float) -> Effects:
        """Mini frames arrived before any full one: ask the peer for a full voice frame."""
        if self._port.call(event.callno) is not None:
            with contextlib.suppress(LocalProtocolError):
                self._port.request_voice_resend(event.callno, now)
        return NOTHING

    def _control_played(self, event: engine.ControlPlayed, now: float) -> Effects:
        log.debug("call %d: %s %s played out", event.callno, event.kind, event.value)
        return NOTHING

    def _dtmf_decoded(self, event: engine.DtmfDecoded, now: float) -> Effects:
        """Tones decoded in a call's, a link's or the local radio's received audio."""
        callno = event.callno
        source = "local" if callno is None else f"call {callno}"
        return self._commands.digit(source, callno, event.digit, inband=True)

    def _playback(self, event: engine.PlayStarted | engine.PlayFinished, now: float) -> Effects:
        self._announcements.playback(event)
        return NOTHING

    def _activity(self, event: engine.ActivityChanged, now: float) -> Effects:
        self._announcements.activity(event.active)
        return NOTHING

    def _local_tx(self, event: engine.LocalTxChanged, now: float) -> Effects:
        return self._transmit.tx_demand(event.on)

    def _vox(self, event: engine.VoxChanged, now: float) -> Effects:
        return self._transmit.vox_changed(event.open)

    def _usrp_dtmf(self, event: engine.UsrpDtmfReceived, now: float) -> Effects:
        # The USRP peer's DTMF packets: a digit source of their own.
        return self._commands.digit("usrp", None, event.digit)

    def _usrp_carrier(self, event: engine.UsrpCarrierChanged, now: float) -> Effects:
        return self._transmit.usrp_carrier_changed(event.on)

    def _usrp_meta(self, event: engine.UsrpMetaReceived, now: float) -> Effects:
        return self._transmit.usrp_meta_received(event.meta)

    def _usrp_peer(self, event: engine.UsrpPeerChanged, now: float) -> Effects:
        return self._transmit.usrp_peer_changed(event.heard)

    def _command_failed(self, event: engine.CommandFailed, now: float) -> Effects:
        log.warning("media command failed: %s", event.message)
        return NOTHING

    def _tunnel_changed(self, event: engine.TunnelChanged, now: float) -> Effects:
        if (tunnel := self._tunnel_json()) is not None:
            state, peer = tunnel["state"], tunnel["endpoint"] or "unknown"
            log.info("WireGuard tunnel %s (peer endpoint %s)", state, peer)
        return CHANGED
