"""The controller: the node's one front door, over the router.

HTTP handlers, AMI, the TUI and the daemon call its methods and read its snapshot and its query
methods, whose records are `node.views`; they never reach into the engine or a service. It owns
no feature: it builds the services at start-up (the IAX2 port and its owners of calls, the
transmitter, registration, announcements, commands, the scheduler), wires the routing tables
(`node.router.Router`, which it is), and turns each command into the service input it means,
handing what comes back to the router.
"""

from __future__ import annotations

import asyncio
import logging
import secrets as pysecrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from node.allstar.statpost import StatReport, link_list
from node.announce.service import Announcements
from node.calls.service import CallService
from node.commands import CommandRunner, Outcome
from node.commands.schedule import Scheduler
from node.config import NodeConfig
from node.context import NodeContext
from node.effects import (
    CHANGED,
)
from node.errors import CommandError, NodeLookupError
from node.events import EventBus
from node.iax2.endpoint import InboundPolicy
from node.iax2.transport import (
    EngineTransport,
)
from node.links.commands import Command
from node.links.lookup import NodeResolver
from node.links.network import TEARDOWN_WAIT
from node.links.report import LinkReporter
from node.links.service import LinkService, is_link_caller
from node.media.bridge import MediaBridge
from node.port import IaxPort
from node.radio.radio import Radio as RadioEdge
from node.radio.transmit import COURTESY, DSTAR_REFUSAL, TransmitService
from node.registration.service import RegistrationService
from node.reload import ReloadPlan, plan_reload
from node.router import Router, TimerKind
from node.secrets import PeersChange, SecretStore
from node.views import ChannelView, CommandStats, LinkView, RegistrationView
from node.wireguard import tunnel_stats

if TYPE_CHECKING:
    # The HTTP services (httpx) load only when the configuration uses them.
    from node.allstar.portal import TokenSource
    from node.allstar.runner import HttpRegistrationRunner, StatPostRunner

__all__ = ["DSTAR_REFUSAL", "Controller", "Reloaded", "TimerKind", "own_port"]

log = logging.getLogger(__name__)

#: Shutdown: how often the wind-down looks whether the far ends have hung up.
TEARDOWN_POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class Reloaded:
    """What `Controller.reload` changed (names and node ids only)."""

    plan: ReloadPlan
    peers: PeersChange


def own_port(
    config: NodeConfig,
    secrets: SecretStore,
    clock: Callable[[], float],
    holders: Sequence[Controller],
    numbers: tuple[str, ...] = (),
) -> IaxPort:
    """The IAX2 port of a process: its policy from `[listener]`; an admitted caller is held
    unanswered when it is a link caller of any node it may be calling (`holders`, read at the
    call so a reload's links count); `numbers`, when the process hosts several nodes, are the
    called numbers it answers."""

    def holds(number: str, user: str) -> bool:
        return any(is_link_caller(h.ctx.config, number, user) for h in holders)

    return IaxPort(
        InboundPolicy.from_listener(config.listener, numbers=numbers),
        config.codec_policy,
        token_key=pysecrets.token_bytes(32),
        randbelow=pysecrets.randbelow,
        peer_secret=secrets.peer_secret,
        holds=holds,
        clock=clock,
    )


class Controller(Router):
    """Routes commands, received frames, engine events and timers to the services; reports
    state."""

    def __init__(
        self,
        config: NodeConfig,
        bus: EventBus,
        secrets: SecretStore,
        clock: Callable[[], float] = time.monotonic,
        *,
        port: IaxPort | None = None,
    ) -> None:
        """`port` is this node's lane of a port the host shares between its nodes (`node.host`);
        without it the node has a port of its own."""
        #: What every service is handed: the running config, bus, clock and secrets.
        ctx = NodeContext(config, secrets, bus, clock)
        super().__init__(ctx)
        self.secrets = secrets
        self.started = clock()
        self._bridge: MediaBridge | None = None
        self._stop_requested: Callable[[], None] | None = None
        #: Every node number of the process, this one's among them (the host sets it; the
        #: snapshot's `hosted` with more than one, so the status page can offer the others).
        self.hosted: tuple[str, ...] = ()

        self._port = port if port is not None else own_port(config, secrets, clock, [self])
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
        self._wire_routes()

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
        if len(self.hosted) > 1:
            snap["hosted"] = list(self.hosted)
        return snap

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

    def stat_report(self) -> StatReport:
        """What a status post reports (`[statpost]`): the adjacent links and the operator's
        keying (app_rpt reports its receiver: here the local source is the operator's PTT)."""
        node = self.node_id
        if node is None:
            raise CommandError("status posts need this node's number (node_id)", 500)
        now = self.now()
        links = link_list(self._links.network.snapshot(now))
        return self._transmit.key_stats.report(node, links, now, now - self.started)

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
