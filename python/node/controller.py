"""The controller: the node's one front door, and the router behind it.

HTTP handlers, AMI, the TUI and the daemon call its methods and read its snapshot and query
methods (`node.views`); they never reach into the engine or a service. It owns no feature: it
builds the services at start-up, routes every input to its owner, acts on what they return, and
keeps the node's one timer.

- the IAX2 port (`node.port`): the socket-wide endpoint under every owner of calls; its call
  events go to the owner of their call number: the plain calls (`node.calls`), the links
  (`node.links.service`); the registration (`node.registration`) has its own frames;
- transmit (`node.radio.transmit`): keying, the TX time-out, the radio's PTT and squelch;
- announcements (`node.announce.service`), commands (`node.commands`), the scheduler.

Every input a service takes returns `Effects` (`node.effects`): the router routes their events
by type (its routing table), runs the `Spawn` work they ask for, publishes one snapshot once
the input is done when anything changed, and re-arms its one loop timer at the earliest of its
deadline table, whose named kinds (`TimerKind`) are every service's next deadline.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import secrets as pysecrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from node.allstar.portal import TokenSource
from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
from node.allstar.statpost import StatReport, link_list
from node.announce.service import Announcements
from node.calls import service as plain
from node.calls.service import CallService
from node.commands import CommandRunner, Outcome
from node.commands.schedule import Scheduler
from node.config import NodeConfig
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
from node.errors import CommandError, LocalProtocolError, NodeLookupError
from node.events import EventBus, Health, Snapshot
from node.iax2 import call as c
from node.iax2.endpoint import InboundPolicy
from node.iax2.registration import RegistrationEvent
from node.iax2.transport import (
    ActivityChanged,
    CommandFailed,
    ControlPlayed,
    DtmfDecoded,
    EngineEvents,
    EngineTransport,
    FrameBatch,
    FullVoiceNeeded,
    LocalTxChanged,
    MiniBeforeFull,
    PlayFinished,
    PlayStarted,
    RxKeyed,
    SpurtEnded,
    TunnelChanged,
    UsrpCarrierChanged,
    UsrpDtmfReceived,
    UsrpMetaReceived,
    UsrpPeerChanged,
    VoxChanged,
)
from node.links import service as links
from node.links.commands import Command
from node.links.health import HealthChanged
from node.links.lookup import NodeResolver
from node.links.network import TEARDOWN_WAIT, LinkEvent
from node.links.report import LinkReporter
from node.links.service import LinkService, is_link_caller
from node.loop_timer import DeadlineTimer
from node.machine import DeadlineTable
from node.media.bridge import MediaBridge
from node.port import IaxPort
from node.radio.radio import Radio as RadioEdge
from node.radio.transmit import COURTESY, DSTAR_REFUSAL, TransmitService
from node.registration.service import RegistrationService
from node.reload import ReloadPlan, plan_reload
from node.secrets import PeersChange, SecretStore
from node.views import ChannelView, CommandStats, LinkView, RegistrationView
from node.wireguard import tunnel_json, tunnel_stats

__all__ = ["DSTAR_REFUSAL", "Controller", "Reloaded", "TimerKind"]

log = logging.getLogger(__name__)

#: Seconds between health checks (link thresholds, the `health` event) while there are calls or
#: links: the figures change without a state change that would publish a snapshot.
HEALTH_INTERVAL = 5.0
#: Shutdown: how often the wind-down looks whether the far ends have hung up.
TEARDOWN_POLL_S = 0.02

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


@dataclass(frozen=True, slots=True)
class Reloaded:
    """What `Controller.reload` changed (names and node ids only)."""

    plan: ReloadPlan
    peers: PeersChange


class Controller:
    """Routes commands, received frames, engine events and timers to the services; reports
    state."""

    def __init__(
        self,
        config: NodeConfig,
        bus: EventBus,
        secrets: SecretStore,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bus = bus
        self.secrets = secrets
        self._clock = clock
        self.started = clock()
        #: What every service is handed: the running config, bus, clock and secrets.
        self.ctx = ctx = NodeContext(config, secrets, bus, clock)
        self.stopping = ctx.stopping
        self._transport: EngineTransport | None = None
        self._bridge: MediaBridge | None = None
        self._stop_requested: Callable[[], None] | None = None
        #: `[statpost]`: the status poster, given by `attach`.
        self.statpost: StatPostRunner | None = None
        #: The next health check (None while there are no calls and no links).
        self._health_at: float | None = None
        self._snapshot_due = False
        self._tasks: set[asyncio.Task[None]] = set()

        self._port = IaxPort(
            InboundPolicy.from_listener(config.listener),
            config.codec_policy,
            token_key=pysecrets.token_bytes(32),
            randbelow=pysecrets.randbelow,
            peer_secret=secrets.peer_secret,
            holds=lambda number, user: is_link_caller(self.ctx.config, number, user),
            clock=clock,
        )
        self._announcements = Announcements(ctx, quiet_kinds=(COURTESY,))
        self._calls = CallService(ctx, self._port)
        self._links = LinkService(ctx, self._port)
        self._registration = RegistrationService(ctx, self._port)
        self._transmit = TransmitService(ctx, self._links.network)
        #: DTMF digit sources and the link commands they complete.
        self._commands = CommandRunner(ctx, self._links, self._announcements)
        self._scheduler = Scheduler(
            config.schedule, self._commands.run_macro, bus, macros=dict(config.macro)
        )
        self._commands.scheduler_switch = self._scheduler.switch
        self._commands.tot_switch = self._transmit.set_tot
        self._reporter = LinkReporter(ctx)

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
            FullVoiceNeeded: self._full_voice,
            SpurtEnded: self._spurt_ended,
            RxKeyed: self._rx_keyed,
            MiniBeforeFull: self._mini_before_full,
            ControlPlayed: self._control_played,
            DtmfDecoded: self._dtmf_decoded,
            PlayStarted: self._playback,
            PlayFinished: self._playback,
            ActivityChanged: self._activity,
            LocalTxChanged: self._local_tx,
            VoxChanged: self._vox,
            UsrpDtmfReceived: self._usrp_dtmf,
            UsrpCarrierChanged: self._usrp_carrier,
            UsrpMetaReceived: self._usrp_meta,
            UsrpPeerChanged: self._usrp_peer,
            CommandFailed: self._command_failed,
            TunnelChanged: self._tunnel_changed,
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
        self._timer = DeadlineTimer(self._on_timer)

    # --- wiring -------------------------------------------------------------------------------

    def attach(
        self,
        transport: EngineTransport,
        bridge: MediaBridge,
        request_stop: Callable[[], None],
        *,
        http_registration: HttpRegistrationRunner | None = None,
        statpost: StatPostRunner | None = None,
        tokens: TokenSource | None = None,
        radio: RadioEdge | None = None,
    ) -> None:
        """Connect the engine transport, the media bridge, the daemon's stop trigger, the HTTP
        services the daemon runs (their events come back through `on_registration_events`
        and `stat_report`; `tokens` mints web-transceiver tokens for `wt-guest` links) and the
        radio's PTT and carrier detect (whose edges come back through `on_carrier`)."""
        self._transport = transport
        self._bridge = bridge
        self._port.attach(transport)
        self._registration.bound_port = transport.local_addr[1]
        bridge.set_local_dtmf(self.config.dtmf.inband_on("local"))
        self._announcements.attach(bridge)
        self._calls.attach(bridge)
        self._links.bridge = bridge
        self._links.dialer.tokens = tokens
        self._stop_requested = request_stop
        self._registration.http = http_registration
        self.statpost = statpost
        self._transmit.attach(bridge, radio)
        if radio is not None:
            radio.start(self.on_carrier)

    def start(self) -> None:
        """Start-up actions: register when configured and the credential is known; dial the
        permanent links; the startup macro; the scheduler."""
        now = self.now()
        self._scheduler.start(now)
        self._commit(self._registration.start() | self._links.start(now) | self._commands.start())

    # --- what the callers read ----------------------------------------------------------------

    @property
    def config(self) -> NodeConfig:
        """The running configuration."""
        return self.ctx.config

    @property
    def resolver(self) -> NodeResolver:
        return self._links.dialer.resolver

    def registration_view(self) -> RegistrationView | None:
        """The IAX2 registration (None before the first attempt, or with HTTP)."""
        reg = self._registration.machine
        if reg is None:
            return None
        registered = reg.registered
        return RegistrationView(
            reg.state.value, reg.apparent_addr if registered else None, reg.granted_refresh
        )

    @property
    def bridge(self) -> MediaBridge:
        if self._bridge is None:
            raise CommandError("the media bridge is not running", 500)
        return self._bridge

    def now(self) -> float:
        return self._clock()

    @property
    def bridge_mode(self) -> str | None:
        """The bridge topology's mode (None before the media bridge runs)."""
        return None if self._bridge is None else self._bridge.topology.mode

    @property
    def node_id(self) -> str | None:
        return self.config.node_id

    @property
    def listening(self) -> bool:
        return self._port.listening

    @property
    def ptt_keyed(self) -> bool:
        """Whether the operator's push-to-talk (POST /key) is keyed."""
        return self._transmit.keyed_at is not None

    @property
    def registered(self) -> bool:
        return self._registration.registered

    def registration_status(self) -> dict[str, Any]:
        """The snapshot's `registration` object."""
        return self._registration.status()

    def link_views(self) -> tuple[LinkView, ...]:
        """Every link as app_rpt reports it (AMI `rpt xnode`)."""
        return tuple(
            LinkView(
                node=link.node,
                addr=link.addr if link.callno is not None else None,
                callno=link.callno,
                reconnects=link.reconnects,
                outbound=link.direction == "outbound",
                connected_at=link.connected_at,
                up=link.up,
                mode=link.list_letter,
                keyed=link.rx_keyed,
                keyed_at=link.keyed_at,
                unkeyed_at=link.unkeyed_at,
            )
            for link in self._links.network.links.values()
        )

    def network_entries(self) -> tuple[str, ...]:
        """The whole network behind our links, as app_rpt lists it (`rpt xnode`, ilink 15)."""
        return tuple(str(e) for e in self._links.network.network_entries())

    def plain_calls_keyed(self) -> bool:
        """Whether a plain call's caller is talking into the conference."""
        return any(info.keyed for info in self._calls.calls.values())

    def channels(self) -> tuple[ChannelView, ...]:
        """Every IAX2 call of the port (`iax2 show channels`), by call number."""
        names = {info.callno: info.peer for info in self._calls.calls.values()}
        for link in self._links.network.links.values():
            if link.callno is not None:
                names[link.callno] = link.node
        return tuple(
            ChannelView(
                callno=callno,
                peer_callno=call.peer_callno,
                peer_addr=call.peer_addr,
                name=names.get(callno, ""),
                oseq=call.oseq,
                iseq=call.iseq,
                rtt_s=call.rtt,
                format=call.format,
            )
            for callno, call in sorted(self._port.calls.items())
        )

    def command_stats(self) -> CommandStats:
        commands = self._commands
        return CommandStats(
            commands.executed_today(), commands.executed_total, commands.last_executed
        )

    @property
    def tx_timeouts(self) -> int:
        """TX time-outs of the local source since start."""
        return self._transmit.key_stats.timeouts

    def snapshot(self) -> dict[str, Any]:
        """The status snapshot of the spec. It never contains a secret."""
        now = self.now()
        links = self._links.network
        # Every leg's figures in one call to the engine, for the calls' and links' `health`.
        legs = self._port.leg_stats() if self._calls.calls or links.links else {}
        snap: dict[str, Any] = {
            "node_id": self.node_id,
            "listening": self.listening,
            "registered": self.registered,
            "calls": self._calls.snapshot(now, legs),
            "links": self._links.snapshot(now, legs),
            "network": links.graph(),
            "tx": self._transmit.tx_json(now),
            "registration": self.registration_status(),
            "tunnel": self._tunnel_json(),
        }
        if self._bridge is not None:
            snap["bridge"] = self._bridge.topology.to_json()
            snap["audio"] = self._bridge.audio()
        radio = self._transmit.radio
        if radio is not None:
            snap["radio"] = radio.snapshot()
            if radio.usrp and self.config.usrp is not None:
                snap["radio"]["usrp"] = {
                    "network": self.config.usrp.network,
                    "dstar_guard": self._transmit.usrp_dstar,
                    "caller": self._transmit.usrp_caller,
                }
        return snap

    def _tunnel_json(self) -> dict[str, Any] | None:
        transport = self._transport
        if transport is None:
            return None
        host, port = transport.local_addr
        return tunnel_json(transport.tunnel(), f"{host}:{port}")

    def counters(self) -> dict[str, Any]:
        if self._transport is None:
            return {}
        engine = self._transport.engine
        return {
            **self._transport.counters(),
            "tick": engine.tick_stats(),
            "queues": engine.queue_depths(),
            "legs": {str(callno): stats for callno, stats in engine.jitter_stats()},
            "link_texts": dict(self._links.network.text_counts),
            "events": {"subscribers": self.bus.subscriber_count, "dropped": self.bus.dropped},
            "announce": self._announcements.stats(),
            "tunnel": tunnel_stats(self._transport.tunnel()),
            "health": self._health_json(),
        }

    def _health_json(self) -> dict[str, Any]:
        """Every call's and link's `health` object (the `health` event's body, and /stats)."""
        has_legs = self._calls.calls or self._links.network.links
        legs = self._port.leg_stats() if has_legs else {}
        return {
            "calls": self._calls.health_snapshot(legs),
            "links": self._links.health_snapshot(legs),
        }

    def stat_report(self) -> StatReport:
        """What a status post reports (`[statpost]`): the adjacent links and the operator's
        keying (app_rpt reports its receiver: here the local source is the operator's PTT)."""
        node = self.node_id
        if node is None:
            raise CommandError("status posts need this node's number (node_id)", 500)
        now = self.now()
        links = link_list(self._links.network.snapshot(now))
        return self._transmit.key_stats.report(node, links, now, now - self.started)

    # --- acting on what the services return ---------------------------------------------------

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
            owner = links.OWNER if is_link_caller(self.config, number, user) else plain.OWNER
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

    def _full_voice(self, event: FullVoiceNeeded, now: float) -> Effects:
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

    def _spurt_ended(self, event: SpurtEnded, now: float) -> Effects:
        """Our talk spurt into a call ended (links send their RADIO_UNKEY)."""
        return self._spurt(event.callno, False, now)

    def _spurt(self, callno: int, started: bool, now: float) -> Effects:
        """Our talk spurt into a link call began or ended (RADIO_KEY / RADIO_UNKEY)."""
        if self._port.owner(callno) != links.OWNER:
            return NOTHING
        return self._owners[links.OWNER].spurt(callno, started, now)  # type: ignore[union-attr]

    def _rx_keyed(self, event: RxKeyed, now: float) -> Effects:
        """A call's received audio keyed or unkeyed (a link's voice, a plain call's VOX)."""
        owner = self._port.owner(event.callno)
        service = self._owners.get(owner) if owner is not None else None
        return NOTHING if service is None else service.rx_keyed(event.callno, event.keyed, now)

    def _mini_before_full(self, event: MiniBeforeFull, now: float) -> Effects:
        """Mini frames arrived before any full one: ask the peer for a full voice frame."""
        if self._port.call(event.callno) is not None:
            with contextlib.suppress(LocalProtocolError):
                self._port.request_voice_resend(event.callno, now)
        return NOTHING

    def _control_played(self, event: ControlPlayed, now: float) -> Effects:
        log.debug("call %d: %s %s played out", event.callno, event.kind, event.value)
        return NOTHING

    def _dtmf_decoded(self, event: DtmfDecoded, now: float) -> Effects:
        """Tones decoded in a call's, a link's or the local radio's received audio."""
        callno = event.callno
        source = "local" if callno is None else f"call {callno}"
        return self._commands.digit(source, callno, event.digit, inband=True)

    def _playback(self, event: PlayStarted | PlayFinished, now: float) -> Effects:
        self._announcements.playback(event)
        return NOTHING

    def _activity(self, event: ActivityChanged, now: float) -> Effects:
        self._announcements.activity(event.active)
        return NOTHING

    def _local_tx(self, event: LocalTxChanged, now: float) -> Effects:
        return self._transmit.tx_demand(event.on)

    def _vox(self, event: VoxChanged, now: float) -> Effects:
        return self._transmit.vox_changed(event.open)

    def _usrp_dtmf(self, event: UsrpDtmfReceived, now: float) -> Effects:
        # The USRP peer's DTMF packets: a digit source of their own.
        return self._commands.digit("usrp", None, event.digit)

    def _usrp_carrier(self, event: UsrpCarrierChanged, now: float) -> Effects:
        return self._transmit.usrp_carrier_changed(event.on)

    def _usrp_meta(self, event: UsrpMetaReceived, now: float) -> Effects:
        return self._transmit.usrp_meta_received(event.meta)

    def _usrp_peer(self, event: UsrpPeerChanged, now: float) -> Effects:
        return self._transmit.usrp_peer_changed(event.heard)

    def _command_failed(self, event: CommandFailed, now: float) -> Effects:
        log.warning("media command failed: %s", event.message)
        return NOTHING

    def _tunnel_changed(self, event: TunnelChanged, now: float) -> Effects:
        if (tunnel := self._tunnel_json()) is not None:
            state, peer = tunnel["state"], tunnel["endpoint"] or "unknown"
            log.info("WireGuard tunnel %s (peer endpoint %s)", state, peer)
        return CHANGED

    # --- commands -----------------------------------------------------------------------------

    async def link(
        self, action: str, node: str, addr: str | None = None, *, permanent: bool = False
    ) -> dict[str, Any]:
        """POST /link: connect (`*3`), monitor (`*2`) or disconnect (`*1`) node `node`; or
        `disconnect_all` (app_rpt's `ilink 6`; `node` is not used). `permanent` links are
        redialled for ever once lost (AMI ilink 12/13)."""
        self._commit(await self._links.link(action, node, addr, permanent=permanent))
        return self.snapshot()

    def key(self, source: str = "operator") -> dict[str, Any]:
        """Key the local source (POST /key and the other operator commands); it stays keyed
        while any source holds it. CommandError while a D-Star session is active."""
        self._commit(self._transmit.key(source))
        return self.snapshot()

    def play(self, *, text: str | None = None, file: str | None = None, to: str) -> dict[str, Any]:
        """POST /play (AMI rpt playback / localplay): queue text or a sound file with the
        announcements; anything that keys is refused while the D-Star guard is up."""
        if to != "local":
            self._transmit.dstar_guard()
        return self._announcements.play(text=text, file=file, to=to)

    def unkey(self, reason: str | None = None, source: str | None = None) -> dict[str, Any]:
        """POST /unkey, the TX time-out and shutdown (`source` None: every hold is released)."""
        self._commit(self._transmit.unkey(reason, source))
        return self.snapshot()

    async def dtmf_command(
        self, source: str, digits: str, *, authorized: bool = False
    ) -> list[Outcome]:
        """Map a whole DTMF string from `source` (its end acts as `#`) and run the commands it
        completes: with `[dtmf] enabled`, or when the caller is `authorized` (AMI `rpt fun`,
        behind the AMI login)."""
        execute = authorized or self.config.dtmf.enabled
        outcomes, fx = await self._commands.run_digits(source, digits, execute=execute)
        self._commit(fx)
        return outcomes

    async def run_command(self, command: Command) -> str:
        """AMI `rpt cmd ... ilink`: run one link command as a DTMF sequence would; what
        happened, or CommandError when refused."""
        result, fx = await self._commands.execute(command)
        self._commit(fx)
        return result

    @property
    def last_node(self) -> str | None:
        """The last node a link command operated on (app_rpt's `lastlinknode`, `<node>` 0)."""
        return self._commands.last.node

    async def dial(self, node: str, addr: str | None = None) -> dict[str, Any]:
        """Place an outbound call to `node` (at `addr`, else looked up: nodes file, DNS)."""
        try:
            target = await self.resolver.lookup(node, addr)
        except NodeLookupError as exc:
            raise CommandError(str(exc), 400) from None
        if self.stopping.is_set():
            raise CommandError("the node is shutting down", 409)
        self._commit(self._calls.dial(node, target.addr, target.username))
        return self.snapshot()

    def hangup(self, callno: int | None = None) -> dict[str, Any]:
        """End a call: `callno`, else the most recently started call."""
        self._commit(self._calls.hangup(callno))
        return self.snapshot()

    def answer(self, callno: int | None = None) -> dict[str, Any]:
        self._commit(self._calls.answer(callno))
        return self.snapshot()

    def reject(self, callno: int | None = None) -> dict[str, Any]:
        self._commit(self._calls.reject(callno))
        return self.snapshot()

    def set_listening(self, enabled: bool) -> dict[str, Any]:
        self._commit(self._calls.set_listening(enabled))
        return self.snapshot()

    def register(self) -> dict[str, Any]:
        self._commit(self._registration.register())
        return self.snapshot()

    def deregister(self) -> dict[str, Any]:
        self._commit(self._registration.deregister())
        return self.snapshot()

    def set_secret(self, username: str, secret: str) -> None:
        """POST /secrets: store the credential (never echoed, never logged).

        The node's own credential starts registration when `[register]` is configured and the
        node is not registered yet, as it would have at startup with the `env` source.
        """
        self.secrets.set(username, secret)
        if username == self.node_id:
            self._commit(self._registration.secret_changed())

    def reload(self, loaded: NodeConfig) -> Reloaded:
        """SIGHUP: take the reloadable settings of a re-read config (see `node.reload`).

        All or nothing: a `ConfigError` (a bad peers file, a peer in both the file and the
        environment) leaves everything as it was. Calls that are up, ringing or being set up keep
        the rules and the secret they were admitted with; the new ones meet the next inbound
        call.
        """
        plan = plan_reload(self.config, loaded)
        peers = self.secrets.reload(plan.config)
        self._links.dialer.reconfigure(plan.config)
        self._calls.reconfigure(plan.config)
        self.ctx.config = plan.config
        return Reloaded(plan, peers)

    def set_bridge(
        self,
        mode: str | None = None,
        mix_minus: bool | None = None,
        include_local_radio: bool | None = None,
    ) -> dict[str, Any]:
        """Re-wire the conference live; omitted settings keep their value."""
        self.bridge.set_topology(mode, mix_minus, include_local_radio)
        self._commit(CHANGED)
        return self.snapshot()

    def set_devices(self, input: str | None = None, output: str | None = None) -> dict[str, Any]:
        """Switch the local radio's audio devices without a restart."""
        self.bridge.set_devices(input, output)
        self._commit(CHANGED)
        return self.snapshot()

    def set_levels(
        self, rx_gain_db: float | None = None, tx_gain_db: float | None = None
    ) -> dict[str, Any]:
        """Change the local radio's audio gains live (dB); omitted ones keep their value."""
        self.bridge.set_gains(rx_gain_db, tx_gain_db)
        self._commit(CHANGED)
        return self.snapshot()

    def request_shutdown(self) -> None:
        """Stop the daemon cleanly, as SIGINT and SIGTERM do."""
        if self._stop_requested is not None:
            self._stop_requested()

    async def wind_down(self) -> None:
        """Shutdown, first step (before `close`): the links we dialled end politely, and the
        far ends that read our `!!DISCONNECT!!` get the moment they need to hang up (at most
        `TEARDOWN_WAIT`)."""
        self._commit(self._links.shutdown(self.now()))
        deadline = self.now() + TEARDOWN_WAIT
        while self._links.tearing_down() and self.now() < deadline:
            await asyncio.sleep(TEARDOWN_POLL_S)

    def close(self) -> None:
        """Shutdown: unkey, hang up every call and link, release registration, stop audio, end
        the streams."""
        self.stopping.set()
        # The transmitter first: nothing that fails below may leave it keyed.
        self._transmit.close_radio()
        self._commands.close()
        self._scheduler.close()
        self._announcements.close()
        self._transmit.unkey("node shutting down")
        now = self.now()
        self._links.close(now)
        self._calls.close(now)
        self._registration.close(now)
        self._timer.cancel()
        for task in self._tasks:
            task.cancel()
        if self._bridge is not None:
            self._bridge.close()
        self.bus.close()
