"""The controller: the node's one front door, and the router behind it.

HTTP handlers, AMI, the TUI and the daemon call its methods and read its snapshot; they never
reach into the engine or the protocol machines. It owns no feature: it builds the services at
start-up, wires each one's narrow interfaces to the others, and routes inputs to their owners.

- calls (`node.calls`): the IAX2 endpoint; it hands each call event to the owner of its call
  number (the links service for link calls, itself for plain calls);
- links (`node.links.service`): the link network and the I/O it asks for;
- transmit (`node.radio.transmit`): keying, the TX time-out, the radio's PTT and squelch;
- registration (`node.registration`): IAX2 or HTTP registration;
- announcements (`node.announce.service`) and commands (`node.commands`).

A received frame goes to the registration when it owns the frame, else to the calls service; an
engine event goes to the service of its class (one table, `_engine_handlers`). One loop timer
stands at the earliest deadline any machine asked for. Every state change publishes a `Snapshot`
event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from node.allstar.portal import TokenSource
from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
from node.allstar.statpost import StatReport, link_list
from node.announce.service import Announcements
from node.calls.service import CODEC_NAMES, CallInfo, CallService
from node.commands import CommandRunner, Outcome
from node.commands.schedule import Scheduler
from node.config import NodeConfig
from node.context import NodeContext
from node.errors import CommandError, NodeLookupError
from node.events import EventBus, Health, Snapshot
from node.iax2.registration import Registration, RegistrationEvent
from node.iax2.transport import (
    ActivityChanged,
    CommandFailed,
    ControlPlayed,
    DtmfDecoded,
    EngineEvent,
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
from node.links.commands import Command
from node.links.lookup import NodeResolver
from node.links.report import LinkReporter
from node.links.service import LinkService
from node.loop_timer import DeadlineTimer
from node.media.bridge import MediaBridge
from node.radio.radio import Radio as RadioEdge
from node.radio.transmit import COURTESY, DSTAR_REFUSAL, TransmitService
from node.registration.service import RegistrationService
from node.reload import ReloadPlan, plan_reload
from node.secrets import PeersChange, SecretStore
from node.wireguard import tunnel_json, tunnel_stats

__all__ = ["CODEC_NAMES", "DSTAR_REFUSAL", "CallInfo", "Controller", "Reloaded"]

log = logging.getLogger(__name__)

#: Seconds between health checks (link thresholds, the `health` event) while there are calls or
#: links: the figures change without a state change that would publish a snapshot.
HEALTH_INTERVAL = 5.0


@dataclass(frozen=True, slots=True)
class Reloaded:
    """What `Controller.reload` changed (names and node ids only)."""

    plan: ReloadPlan
    peers: PeersChange


class Controller:
    """Routes commands, received frames and engine events to the services; reports state."""

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
        #: What every service is handed: the running config, bus, clock, secrets and the
        #: router's two callbacks (publish a snapshot, re-arm the timer).
        self.ctx = ctx = NodeContext(
            config, secrets, bus, clock, changed=self._changed, rearm=self._arm
        )
        self.stopping = ctx.stopping
        self._transport: EngineTransport | None = None
        self._bridge: MediaBridge | None = None
        self._stop_requested: Callable[[], None] | None = None
        #: `[statpost]`: the status poster, given by `attach`.
        self.statpost: StatPostRunner | None = None
        self._timer = DeadlineTimer(self._on_timer)
        #: Inside a drained batch of frames: changes mark a snapshot due, published once after
        #: the batch (see `on_frames`).
        self._batching = False
        self._snapshot_due = False
        #: The next health check (None while there are no calls and no links).
        self._health_at: float | None = None

        self.announcements = Announcements(ctx, quiet_kinds=(COURTESY,))
        self.call_service = CallService(ctx)
        self.link_service = LinkService(ctx)
        self.registration_service = RegistrationService(ctx)
        self.transmit = TransmitService(ctx, self.link_service.network)
        #: DTMF digit sources and the link commands they complete.
        self.commands = CommandRunner(ctx, self.link_service, self.announcements)
        self.scheduler = Scheduler(
            config.schedule, self.commands.run_macro, bus, macros=dict(config.macro)
        )
        self.commands.scheduler_switch = self.scheduler.switch
        self.commands.tot_switch = self._tot_switch
        self.link_reporter = LinkReporter(ctx, self.announcements, self.commands)
        self.call_service.wire(self.link_service, self.commands, self.announcements)
        self.link_service.wire(
            self.call_service, self.link_reporter.report, self.link_reporter.health
        )
        self.registration_service.wire(self.call_service, self.announcements)
        # What the control channel, AMI and the TUI read (the objects are never replaced).
        self.endpoint = self.call_service.endpoint
        #: The plain calls, by call number.
        self.calls = self.call_service.calls
        #: The link network machine.
        self.links = self.link_service.network
        #: The operator's keying as status posts count it.
        self.key_stats = self.transmit.key_stats
        #: Who takes each engine event: its class -> handler(event, now).
        self._engine_handlers: dict[type[EngineEvent], Callable[[Any, float], None]] = {
            FullVoiceNeeded: self._full_voice,
            SpurtEnded: self._spurt_ended,
            RxKeyed: self._rx_keyed,
            MiniBeforeFull: self._mini_before_full,
            ControlPlayed: self._control_played,
            DtmfDecoded: self._dtmf_decoded,
            PlayStarted: self._playback,
            PlayFinished: self._playback,
            ActivityChanged: self._activity_changed,
            LocalTxChanged: self._local_tx_changed,
            VoxChanged: self._vox_changed,
            UsrpCarrierChanged: self._usrp_carrier_changed,
            UsrpDtmfReceived: self._usrp_dtmf_received,
            UsrpMetaReceived: self._usrp_meta_received,
            UsrpPeerChanged: self._usrp_peer_changed,
            CommandFailed: self._command_failed,
            TunnelChanged: self._tunnel_changed,
        }

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
        radio's PTT and carrier detect."""
        self._transport = transport
        self._bridge = bridge
        self.registration_service.bound_port = transport.local_addr[1]
        bridge.set_local_dtmf(self.config.dtmf.inband_on("local"))
        self.announcements.attach(bridge)
        self.call_service.attach(transport, bridge)
        self.link_service.bridge = bridge
        self.link_service.dialer.tokens = tokens
        self._stop_requested = request_stop
        self.registration_service.http = http_registration
        self.statpost = statpost
        if statpost is not None:
            self.link_reporter.links_changed = statpost.links_changed
            self.transmit.key_changed = statpost.key_changed
        self.transmit.attach(bridge, radio)

    def start(self) -> None:
        """Start-up actions: register when configured and the credential is known; dial the
        permanent links."""
        self.registration_service.start()
        self.link_service.start(self.now())
        self.announcements.start()
        self.scheduler.start()
        self.commands.start()

    def _tot_switch(self, on: bool) -> None:
        """cop 7/8: the TX time-out on or off (from the next keying)."""
        self.transmit.tot_enabled = on

    # --- what the callers read ----------------------------------------------------------------

    @property
    def config(self) -> NodeConfig:
        """The running configuration."""
        return self.ctx.config

    @property
    def resolver(self) -> NodeResolver:
        return self.link_service.dialer.resolver

    @property
    def registration(self) -> Registration | None:
        """The IAX2 registration machine (None before the first attempt, or with HTTP)."""
        return self.registration_service.machine

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
        return self.endpoint.listening

    @property
    def ptt_keyed(self) -> bool:
        """Whether the operator's push-to-talk (POST /key) is keyed."""
        return self.transmit.keyed_at is not None

    @property
    def registered(self) -> bool:
        return self.registration_service.registered

    def registration_status(self) -> dict[str, Any]:
        """The snapshot's `registration` object."""
        return self.registration_service.status()

    def snapshot(self) -> dict[str, Any]:
        """The status snapshot of the spec. It never contains a secret."""
        now = self.now()
        # Every leg's figures in one call to the engine, for the calls' and links' `health`.
        legs = self.call_service.leg_stats() if self.calls or self.links.links else {}
        snap: dict[str, Any] = {
            "node_id": self.node_id,
            "listening": self.listening,
            "registered": self.registered,
            "calls": self.call_service.snapshot(now, legs),
            "links": self.link_service.snapshot(now, legs),
            "network": self.links.graph(),
            "tx": self.transmit.tx_json(now),
            "registration": self.registration_status(),
            "tunnel": self._tunnel_json(),
        }
        if self._bridge is not None:
            snap["bridge"] = self._bridge.topology.to_json()
            snap["audio"] = self._bridge.audio()
        if self.transmit.radio is not None:
            snap["radio"] = self.transmit.radio.snapshot()
            if self.transmit.radio.usrp and self.config.usrp is not None:
                snap["radio"]["usrp"] = {
                    "network": self.config.usrp.network,
                    "dstar_guard": self.transmit.usrp_dstar,
                    "caller": self.transmit.usrp_caller,
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
            "link_texts": dict(self.links.text_counts),
            "events": {"subscribers": self.bus.subscriber_count, "dropped": self.bus.dropped},
            "announce": self.announcements.stats(),
            "tunnel": tunnel_stats(self._transport.tunnel()),
            "health": self._health_json(),
        }

    def _health_json(self) -> dict[str, Any]:
        """Every call's and link's `health` object (the `health` event's body, and /stats)."""
        legs = self.call_service.leg_stats() if self.calls or self.links.links else {}
        return {
            "calls": self.call_service.health_snapshot(legs),
            "links": self.link_service.health_snapshot(legs),
        }

    def stat_report(self) -> StatReport:
        """What a status post reports (`[statpost]`): the adjacent links and the operator's
        keying (app_rpt reports its receiver: here the local source is the operator's PTT)."""
        node = self.node_id
        if node is None:
            raise CommandError("status posts need this node's number (node_id)", 500)
        now = self.now()
        links = link_list(self.links.snapshot(now))
        return self.key_stats.report(node, links, now, now - self.started)

    def _changed(self) -> None:
        if self._batching:
            self._snapshot_due = True
            return
        # A snapshot lists every call and link: with nobody subscribed, building it is pure
        # cost (a subscriber that joins later is sent a fresh one first).
        if self.bus.subscriber_count:
            self.bus.publish(Snapshot(self.snapshot()))

    # --- the one timer ------------------------------------------------------------------------

    def _arm(self) -> None:
        if not (self.calls or self.links.links):
            self._health_at = None
        elif self._health_at is None:
            self._health_at = self.now() + HEALTH_INTERVAL
        deadlines = [
            d
            for d in (
                self.call_service.next_deadline(),
                self.registration_service.next_deadline(),
                self.links.next_deadline(),
                self._health_at,
            )
            if d is not None
        ]
        # loop.time() and our clock are both CLOCK_MONOTONIC.
        self._timer.arm(min(deadlines) if deadlines else None)

    def _on_timer(self) -> None:
        now = self.now()
        deadline = self.registration_service.next_deadline()
        if deadline is not None and deadline <= now:
            self.registration_service.timer(now)
        deadline = self.links.next_deadline()
        if deadline is not None and deadline <= now:
            self.link_service.timer(now)
        if self._health_at is not None and self._health_at <= now:
            self._health_check(now)
        self.call_service.timer(now)

    def _health_check(self, now: float) -> None:
        """Every `HEALTH_INTERVAL` while there are calls or links: judge the links' figures
        against the thresholds and publish the `health` event (only to someone: building it
        costs a leg lookup per call)."""
        self._health_at = now + HEALTH_INTERVAL
        self.link_service.check_health(now)
        if self.bus.subscriber_count:
            self.bus.publish(Health(**{k: tuple(v) for k, v in self._health_json().items()}))
        self._arm()

    # --- received frames and engine events ----------------------------------------------------

    def on_frames(self, batch: FrameBatch) -> None:
        """Hand each drained full frame, in arrival order, to the registration when it owns
        the frame, else to the calls."""
        now = self.now()
        registration, calls = self.registration_service, self.call_service
        # One snapshot for the whole batch, after its last change: a snapshot per changing
        # frame made a set-up burst at hub scale quadratic (2,000 calls listed hundreds of times
        # a second), and the engine's queue overflowed while Python caught up.
        self._batching = True
        try:
            for addr, frame in batch:
                try:
                    if registration.owns(addr, frame):
                        registration.receive(frame, now)
                    else:
                        calls.receive(addr, frame, now)
                except Exception:
                    # One frame's failure must not cost the frames after it in the same batch
                    # (a lost KEY would otherwise take the voice behind it along).
                    log.exception("error handling a frame from %s:%d", addr[0], addr[1])
        finally:
            self._batching = False
            if self._snapshot_due:
                self._snapshot_due = False
                self._changed()

    def on_engine_events(self, events: EngineEvents) -> None:
        """Media events from the engine: full voice frames to send, control edges, failures.
        Each goes to the handler of its class; an unknown class is logged and skipped."""
        now = self.now()
        handlers = self._engine_handlers
        for event in events:
            handler = handlers.get(type(event))
            if handler is None:
                log.debug("engine event not handled: %r", event)
                continue
            handler(event, now)

    # The engine events' handlers, in `_engine_handlers`.

    def _full_voice(self, e: FullVoiceNeeded, now: float) -> None:
        self.call_service.full_voice(e.callno, e.format, e.ts, e.payload, e.spurt_start, now)

    def _spurt_ended(self, event: SpurtEnded, now: float) -> None:
        self.call_service.spurt_ended(event.callno, now)

    def _rx_keyed(self, event: RxKeyed, now: float) -> None:
        self.call_service.rx_keyed(event.callno, event.keyed, now)

    def _mini_before_full(self, event: MiniBeforeFull, now: float) -> None:
        self.call_service.voice_resend(event.callno, now)

    def _control_played(self, event: ControlPlayed, now: float) -> None:
        log.debug("call %d: %s %s played out", event.callno, event.kind, event.value)

    def _dtmf_decoded(self, event: DtmfDecoded, now: float) -> None:
        # Tones decoded in a call's, a link's or the local radio's received audio.
        callno = event.callno
        source = "local" if callno is None else f"call {callno}"
        self.commands.digit(source, callno, event.digit, inband=True)

    def _playback(self, event: PlayStarted | PlayFinished, now: float) -> None:
        self.announcements.playback(event)

    def _activity_changed(self, event: ActivityChanged, now: float) -> None:
        self.announcements.activity(event.active)

    def _local_tx_changed(self, event: LocalTxChanged, now: float) -> None:
        self.transmit.tx_demand(event.on)

    def _vox_changed(self, event: VoxChanged, now: float) -> None:
        self.transmit.vox_changed(event.open)

    def _usrp_carrier_changed(self, event: UsrpCarrierChanged, now: float) -> None:
        self.transmit.usrp_carrier_changed(event.on)

    def _usrp_dtmf_received(self, event: UsrpDtmfReceived, now: float) -> None:
        # The USRP peer's DTMF packets: a digit source of their own.
        self.commands.digit("usrp", None, event.digit)

    def _usrp_meta_received(self, event: UsrpMetaReceived, now: float) -> None:
        self.transmit.usrp_meta_received(event.meta)

    def _usrp_peer_changed(self, event: UsrpPeerChanged, now: float) -> None:
        self.transmit.usrp_peer_changed(event.heard)

    def _command_failed(self, event: CommandFailed, now: float) -> None:
        log.warning("media command failed: %s", event.message)

    def _tunnel_changed(self, event: TunnelChanged, now: float) -> None:
        if (tunnel := self._tunnel_json()) is not None:
            state, peer = tunnel["state"], tunnel["endpoint"] or "unknown"
            log.info("WireGuard tunnel %s (peer endpoint %s)", state, peer)
        self._changed()

    def on_registration_events(self, events: Sequence[RegistrationEvent]) -> None:
        """Publish what a registration machine (IAX2 or HTTP) reported."""
        self.registration_service.on_events(events)

    # --- commands -----------------------------------------------------------------------------

    async def link(
        self, action: str, node: str, addr: str | None = None, *, permanent: bool = False
    ) -> dict[str, Any]:
        """POST /link: connect (`*3`), monitor (`*2`) or disconnect (`*1`) node `node`; or
        `disconnect_all` (app_rpt's `ilink 6`; `node` is not used). `permanent` links are
        redialled for ever once lost (AMI ilink 12/13)."""
        await self.link_service.link(action, node, addr, permanent=permanent)
        return self.snapshot()

    def key(self, source: str = "operator") -> dict[str, Any]:
        """Key the local source (POST /key and the other operator commands); it stays keyed
        while any source holds it. CommandError while a D-Star session is active."""
        self.transmit.key(source)
        return self.snapshot()

    def play(self, *, text: str | None = None, file: str | None = None, to: str) -> dict[str, Any]:
        """POST /play (AMI rpt playback / localplay): queue text or a sound file with the
        announcements; anything that keys is refused while the D-Star guard is up."""
        if to != "local":
            self.transmit.dstar_guard()
        return self.announcements.play(text=text, file=file, to=to)

    def unkey(self, reason: str | None = None, source: str | None = None) -> dict[str, Any]:
        """POST /unkey, the TX time-out and shutdown (`source` None: every hold is released)."""
        self.transmit.unkey(reason, source)
        return self.snapshot()

    async def dtmf_command(
        self, source: str, digits: str, *, authorized: bool = False
    ) -> list[Outcome]:
        """Map a whole DTMF string from `source` (its end acts as `#`) and run the commands it
        completes: with `[dtmf] enabled`, or when the caller is `authorized` (AMI `rpt fun`,
        behind the AMI login)."""
        execute = authorized or self.config.dtmf.enabled
        return await self.commands.run_digits(source, digits, execute=execute)

    async def run_command(self, command: Command) -> str:
        """AMI `rpt cmd ... ilink`: run one link command as a DTMF sequence would; what
        happened, or CommandError when refused."""
        return await self.commands.execute(command)

    @property
    def last_node(self) -> str | None:
        """The last node a link command operated on (app_rpt's `lastlinknode`, `<node>` 0)."""
        return self.commands.last.node

    async def dial(self, node: str, addr: str | None = None) -> dict[str, Any]:
        """Place an outbound call to `node` (at `addr`, else looked up: nodes file, DNS)."""
        try:
            target = await self.resolver.lookup(node, addr)
        except NodeLookupError as exc:
            raise CommandError(str(exc), 400) from None
        if self.stopping.is_set():
            raise CommandError("the node is shutting down", 409)
        self.call_service.dial(node, target.addr, target.username)
        return self.snapshot()

    def hangup(self, callno: int | None = None) -> dict[str, Any]:
        """End a call: `callno`, else the most recently started call."""
        self.call_service.hangup(callno)
        return self.snapshot()

    def answer(self, callno: int | None = None) -> dict[str, Any]:
        self.call_service.answer(callno)
        return self.snapshot()

    def reject(self, callno: int | None = None) -> dict[str, Any]:
        self.call_service.reject(callno)
        return self.snapshot()

    def set_listening(self, enabled: bool) -> dict[str, Any]:
        self.call_service.set_listening(enabled)
        return self.snapshot()

    def register(self) -> dict[str, Any]:
        self.registration_service.register()
        return self.snapshot()

    def deregister(self) -> dict[str, Any]:
        self.registration_service.deregister()
        return self.snapshot()

    def set_secret(self, username: str, secret: str) -> None:
        """POST /secrets: store the credential (never echoed, never logged).

        The node's own credential starts registration when `[register]` is configured and the
        node is not registered yet, as it would have at startup with the `env` source.
        """
        self.secrets.set(username, secret)
        if username == self.node_id:
            self.registration_service.secret_changed()

    def reload(self, loaded: NodeConfig) -> Reloaded:
        """SIGHUP: take the reloadable settings of a re-read config (see `node.reload`).

        All or nothing: a `ConfigError` (a bad peers file, a peer in both the file and the
        environment) leaves everything as it was. Calls that are up, ringing or being set up keep
        the rules and the secret they were admitted with; the new ones meet the next inbound
        call.
        """
        plan = plan_reload(self.config, loaded)
        peers = self.secrets.reload(plan.config)
        self.link_service.dialer.reconfigure(plan.config)
        self.call_service.reconfigure(plan.config)
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
        self._changed()
        return self.snapshot()

    def set_devices(self, input: str | None = None, output: str | None = None) -> dict[str, Any]:
        """Switch the local radio's audio devices without a restart."""
        self.bridge.set_devices(input, output)
        self._changed()
        return self.snapshot()

    def set_levels(
        self, rx_gain_db: float | None = None, tx_gain_db: float | None = None
    ) -> dict[str, Any]:
        """Change the local radio's audio gains live (dB); omitted ones keep their value."""
        self.bridge.set_gains(rx_gain_db, tx_gain_db)
        self._changed()
        return self.snapshot()

    def request_shutdown(self) -> None:
        """Stop the daemon cleanly, as SIGINT and SIGTERM do."""
        if self._stop_requested is not None:
            self._stop_requested()

    async def wind_down(self) -> None:
        """Shutdown, first step (before `close`): the links we dialled end politely, and the
        far ends get the moment they need to hang up (`LinkService.wind_down`)."""
        await self.link_service.wind_down()

    def close(self) -> None:
        """Shutdown: unkey, hang up every call and link, release registration, stop audio, end
        the streams."""
        self.stopping.set()
        # The transmitter first: nothing that fails below may leave it keyed.
        self.transmit.close_radio()
        self.commands.close()
        self.scheduler.close()
        self.announcements.close()
        self.transmit.unkey("node shutting down")
        now = self.now()
        self.link_service.close(now)
        self.call_service.close(now)
        self.registration_service.close(now)
        self._timer.cancel()
        if self._bridge is not None:
            self._bridge.close()
        self.bus.close()
