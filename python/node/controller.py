"""The controller: the single owner of the node's state.

HTTP handlers and the TUI call its methods and read its snapshot; they never reach into the
engine or the protocol machines. It feeds received frames to the sans-I/O endpoint and
registration machines, sends what they return, turns their events into media commands and bus
events, and keeps one timer armed at the earliest deadline any machine asked for. Every state
change publishes a `Snapshot` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets as pysecrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from node._core import tone_sequence_pcm
from node.allstar.portal import GuestToken, TokenError, TokenSource
from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
from node.allstar.statpost import KeyStats, StatReport, link_list
from node.announce.announcer import Announcer
from node.announce.phrases import last_keyed_phrase
from node.command_runner import CommandRunner, Outcome
from node.config import NodeConfig
from node.errors import CommandError, LocalProtocolError, NodeLookupError
from node.events import (
    AnnouncementFinished,
    AnnouncementStarted,
    EventBus,
    Hangup,
    IncomingCall,
    Link,
    Radio,
    Registered,
    RegisterFailed,
    Snapshot,
)
from node.iax2 import call as c
from node.iax2.constants import ControlSubclass, Format
from node.iax2.endpoint import Endpoint, EndpointOutput, InboundPolicy, InboundRejected
from node.iax2.registration import (
    Deregistered,
    Registration,
    RegistrationEvent,
    RegistrationFailed,
)
from node.iax2.registration import Registered as RegistrationSucceeded
from node.iax2.transport import Address, EngineEvents, EngineTransport, FrameBatch
from node.links import network as ln
from node.links.lookup import NodeResolver
from node.links.resolve import NodeAddress, same_ip
from node.media.bridge import MediaBridge
from node.radio.radio import Radio as RadioEdge
from node.radio.transmitter import PttChange
from node.registration_status import format_addr, registration_json
from node.reload import ReloadPlan, plan_reload
from node.secrets import PeersChange, SecretStore
from node.wireguard import tunnel_json, tunnel_stats

__all__ = ["DSTAR_REFUSAL", "CallInfo", "Controller", "Reloaded"]

log = logging.getLogger(__name__)

#: The spec's refusal of POST /key while a D-Star session is active.
DSTAR_REFUSAL = (
    "refusing to key: a D-Star session is active and D-Star transmit is not remotely keyable"
)

#: How a web-transceiver guest dials (the `[allstar-public]` user of every ASL3 node).
WT_USER = "allstar-public"
WT_SECRET = "allstar"  # published in ASL3's iax.conf: it is no secret
WT_EXTENSION = "s"

#: The player's kind for the radio's courtesy tone (no `announcement_*` events).
COURTESY = "courtesy"

LINK_ACTIONS = {
    "connect": ln.LinkMode.TRANSCEIVE,
    "monitor": ln.LinkMode.MONITOR,
    "local_monitor": ln.LinkMode.LOCAL_MONITOR,
}

CODEC_NAMES = {
    Format.ULAW: "ulaw",
    Format.ALAW: "alaw",
    Format.SLIN: "slin",
    Format.SLIN16: "slin16",
}


@dataclass(slots=True)
class CallInfo:
    """What the snapshot shows of one call."""

    callno: int
    direction: str
    #: The peer as it presented itself (node number, else username), or the dialled node.
    peer: str
    addr: Address
    started: float
    state: str = "setup"
    codec: str | None = None
    answered: float | None = None
    media: bool = False
    ended: bool = False
    #: The caller is talking into the conference now (VOX).
    keyed: bool = False

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "id": self.callno,
            "peer": self.peer,
            "addr": f"{self.addr[0]}:{self.addr[1]}",
            "direction": self.direction,
            "state": self.state,
            "codec": self.codec,
            "duration_s": round(now - (self.answered or self.started), 1),
            "keyed": self.keyed,
        }


@dataclass(frozen=True, slots=True)
class Reloaded:
    """What `Controller.reload` changed (names and node ids only)."""

    plan: ReloadPlan
    peers: PeersChange


class Controller:
    """Applies commands, routes received frames, and reports state."""

    def __init__(
        self,
        config: NodeConfig,
        bus: EventBus,
        secrets: SecretStore,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.bus = bus
        self.secrets = secrets
        self._clock = clock
        self.endpoint = Endpoint(
            InboundPolicy.from_listener(config.listener),
            config.codec_policy,
            token_key=pysecrets.token_bytes(32),
            randbelow=pysecrets.randbelow,
            peer_secret=secrets.peer_secret,
            rr_stats=self._rr_stats,
            holds=self._is_link_caller,
        )
        self._guest_nodes = frozenset(
            node for node, cfg in config.links.items() if cfg.shape == "wt-guest"
        )
        self.tokens: TokenSource | None = None
        self.links = ln.LinkNetwork(
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
        #: Addresses resolved for a link connect, used by the Dial that follows it.
        self._link_targets: dict[str, NodeAddress] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: The local source's keying: when it keyed (monotonic), and its TX time-out.
        self._tx_keyed_at: float | None = None
        #: What holds the local source keyed: "operator" (POST /key and the like), "carrier"
        #: (the radio's squelch).
        self._keyed_by: set[str] = set()
        #: `[radio]`: the PTT and carrier detect, given by `attach`.
        self.radio: RadioEdge | None = None
        self._tot: asyncio.TimerHandle | None = None
        #: Link calls that have a media leg.
        self._link_legs: set[int] = set()
        self.registration: Registration | None = None
        self._reg_callnos: set[int] = set()
        #: `[register] method = "http"`: the HTTP registration, given by `attach`.
        self.http_registration: HttpRegistrationRunner | None = None
        #: `[statpost]`: the status poster, given by `attach` (call its `key_changed()` and
        #: `links_changed()` when those happen).
        self.statpost: StatPostRunner | None = None
        #: Node number -> address: explicit, nodes file, DNS.
        self.resolver = NodeResolver.from_config(config)
        self.started = clock()
        #: The operator's keying as status posts count it.
        self.key_stats = KeyStats()
        self.calls: dict[int, CallInfo] = {}
        self._transport: EngineTransport | None = None
        self._bridge: MediaBridge | None = None
        self._stop_requested: Callable[[], None] | None = None
        #: DTMF digit sources and the link commands they complete.
        self.commands = CommandRunner(self)
        #: Station ID and announcements (`[announce] enabled`), created by `attach`.
        self.announcer: Announcer | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        #: Inside a drained batch of frames: changes mark a snapshot due, published once after
        #: the batch (see `on_frames`).
        self._batching = False
        self._snapshot_due = False
        self.stopping = asyncio.Event()

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
        bridge.set_local_dtmf(self.config.dtmf.inband_on("local"))
        if self.config.announce.enabled:
            self.announcer = Announcer(self.config.announce, bridge, self.node_id, self._clock)
        self._stop_requested = request_stop
        self.http_registration = http_registration
        self.statpost = statpost
        self.tokens = tokens
        self.radio = radio
        if radio is not None:
            radio.start(self._on_ptt, self._on_squelch)

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

    # --- state --------------------------------------------------------------------------------

    @property
    def node_id(self) -> str | None:
        reg = self.config.register
        return reg.node_id if reg is not None else None

    @property
    def listening(self) -> bool:
        return self.endpoint.listening

    @property
    def ptt_keyed(self) -> bool:
        """Whether the operator's push-to-talk (POST /key) is keyed."""
        return self._tx_keyed_at is not None

    @property
    def registered(self) -> bool:
        if self.http_registration is not None:
            return self.http_registration.core.registered
        return self.registration is not None and self.registration.registered

    def registration_status(self) -> dict[str, Any]:
        """The snapshot's `registration` object."""
        reg = self.config.register
        machine = (
            self.http_registration.core if self.http_registration is not None else self.registration
        )
        return registration_json(reg.method if reg is not None else None, machine)

    def snapshot(self) -> dict[str, Any]:
        """The status snapshot of the spec. It never contains a secret."""
        now = self.now()
        snap: dict[str, Any] = {
            "node_id": self.node_id,
            "listening": self.listening,
            "registered": self.registered,
            "calls": [info.to_json(now) for info in self.calls.values()],
            "links": self.links.snapshot(now),
            "tx": self._tx_json(now),
            "registration": self.registration_status(),
            "tunnel": self._tunnel_json(),
        }
        if self._bridge is not None:
            snap["bridge"] = self._bridge.topology.to_json()
            snap["audio"] = self._bridge.audio()
        if self.radio is not None:
            snap["radio"] = self.radio.snapshot()
        return snap

    def _tunnel_json(self) -> dict[str, Any] | None:
        transport = self._transport
        if transport is None:
            return None
        host, port = transport.local_addr
        return tunnel_json(transport.tunnel(), f"{host}:{port}")

    def _tx_json(self, now: float) -> dict[str, Any]:
        timeout = self.config.keying.tx_timeout_secs
        keyed_at = self._tx_keyed_at
        return {
            "keyed": keyed_at is not None,
            "timeout_s": timeout,
            "timeout_remaining_s": None
            if keyed_at is None
            else round(max(0.0, keyed_at + timeout - now), 1),
        }

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
            "announce": None if self.announcer is None else self.announcer.stats(),
            "tunnel": tunnel_stats(self._transport.tunnel()),
        }

    def _changed(self) -> None:
        if self._batching:
            self._snapshot_due = True
            return
        # A snapshot lists every call and link: with nobody subscribed, building it is pure
        # cost (a subscriber that joins later is sent a fresh one first).
        if self.bus.subscriber_count:
            self.bus.publish(Snapshot(self.snapshot()))

    def _rr_stats(self, callno: int) -> c.RrStats:
        if self._transport is None:
            return c.RrStats()
        # One leg's figures: a PONG per call every few seconds must not copy every leg's.
        s = self._transport.engine.leg_jitter_stats(callno)
        if s is None:
            return c.RrStats()
        total = s["frames_in"] + s["lost"]
        return c.RrStats(
            jitter=max(0, s["jitter_ms"]),
            loss_percent=min(100, 100 * s["lost"] // total) if total else 0,
            lost=s["lost"],
            packets=s["frames_in"],
            delay=max(0, s["delay_ms"]),
            dropped=s["dropped"] + s["late"],
            out_of_order=s["reordered"],
        )

    # --- sending and the timer ----------------------------------------------------------------

    def _send(self, frames: Iterable[tuple[Address, Any]]) -> None:
        transport = self._transport
        if transport is None:
            return
        for addr, frame in frames:
            transport.send(frame, addr)

    def _apply(self, out: EndpointOutput) -> None:
        self._send(out.frames)
        changed = False
        for event in out.events:
            changed |= self._on_call_event(event)
        if changed:
            self._changed()
        self._arm()

    def _apply_registration(self, out: Any) -> None:
        reg = self.registration
        if reg is None:
            return
        self._send((reg.peer, f) for f in out.frames)
        now = self.now()
        for callno in self._reg_callnos - reg.callnos:
            self.endpoint.release_callno(callno, now)
        self._reg_callnos = set(reg.callnos)
        self.on_registration_events(out.events)
        self._arm()

    def on_registration_events(self, events: Sequence[RegistrationEvent]) -> None:
        """Publish what a registration machine (IAX2 or HTTP) reported."""
        for event in events:
            if isinstance(event, RegistrationSucceeded):
                seen = format_addr(event.apparent_addr) or "an address it did not say"
                log.info("registered; the registrar sees us at %s", seen)
                self.bus.publish(Registered())
                self._announce("registered")
            elif isinstance(event, RegistrationFailed):
                log.warning("registration failed: %s", event.reason)
                self.bus.publish(RegisterFailed(reason=event.reason))
                self._announce("register_failed")
            elif isinstance(event, Deregistered):
                log.info("deregistered")
        if events:
            self._changed()

    def _arm(self) -> None:
        deadlines = [d for d in (self.endpoint.next_deadline(),) if d is not None]
        if self.registration is not None and (d := self.registration.next_deadline()) is not None:
            deadlines.append(d)
        if (d := self.links.next_deadline()) is not None:
            deadlines.append(d)
        at = min(deadlines) if deadlines else None
        if at == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = at
        if at is not None:
            loop = asyncio.get_running_loop()
            # loop.time() and our clock are both CLOCK_MONOTONIC.
            self._timer = loop.call_at(at, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        now = self.now()
        if self.registration is not None:
            deadline = self.registration.next_deadline()
            if deadline is not None and deadline <= now:
                self._apply_registration(self.registration.timer(now))
        deadline = self.links.next_deadline()
        if deadline is not None and deadline <= now:
            self._apply_links(self.links.timer(now))
        self._apply(self.endpoint.timer(now))

    # --- frames and engine events -------------------------------------------------------------

    def on_frames(self, batch: FrameBatch) -> None:
        """Handle one drained batch of full frames, in arrival order."""
        now = self.now()
        reg = self.registration
        # One snapshot for the whole batch, after its last change: a snapshot per changing
        # frame made a set-up burst at hub scale quadratic (2,000 calls listed hundreds of times
        # a second), and the engine's queue overflowed while Python caught up.
        self._batching = True
        try:
            for addr, frame in batch:
                try:
                    if reg is not None and addr == reg.peer and frame.dcall in reg.callnos:
                        self._apply_registration(reg.receive(frame, now))
                    else:
                        self._apply(self.endpoint.receive(addr, frame, now))
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
        """Media events from the engine: full voice frames to send, control edges, failures."""
        now = self.now()
        for event in events:
            kind = event[0]
            if kind == "full_voice":
                _, callno, fmt, ts, payload, spurt_start = event
                # A call that is hanging up no longer carries voice: its leg goes with it.
                if callno in self.endpoint.calls:
                    if spurt_start and self.links.is_link_call(callno):
                        # A legacy link needs its RADIO_KEY ahead of the first voice frame.
                        self._apply_links(self.links.spurt(callno, True, now))
                    with contextlib.suppress(LocalProtocolError):
                        self._apply(self.endpoint.send_voice_full(callno, now, fmt, payload, ts))
            elif kind == "spurt_ended":
                if self.links.is_link_call(event[1]):
                    self._apply_links(self.links.spurt(event[1], False, now))
            elif kind == "rx_key":
                _, callno, keyed = event
                if self.links.is_link_call(callno):
                    self._apply_links(self.links.rx_keyed(callno, keyed, now))
                elif (info := self.calls.get(callno)) is not None and info.keyed != keyed:
                    info.keyed = keyed
                    self._changed()
            elif kind == "mini_before_full":
                callno = event[1]
                if callno in self.endpoint.calls:
                    with contextlib.suppress(LocalProtocolError):
                        self._apply(self.endpoint.request_voice_resend(callno, now))
            elif kind == "control":
                _, callno, (ckind, value), _ts, _payload = event
                log.debug("call %d: %s %s played out", callno, ckind, value)
            elif kind == "dtmf":
                # Tones decoded in a call's, a link's or the local radio's received audio.
                _, callno, digit = event
                source = "local" if callno is None else f"call {callno}"
                self.commands.digit(source, callno, digit, inband=True)
            elif kind in ("play_started", "play_finished"):
                self._playback_event(event)
            elif kind == "activity":
                if self.announcer is not None:
                    self.announcer.activity(bool(event[1]))
            elif kind == "local_tx":
                if self.radio is not None:
                    self.radio.tx_demand(event[1])
            elif kind == "vox":
                if self.radio is not None:
                    self.radio.vox_changed(event[1])
            elif kind == "command_failed":
                log.warning("media command failed: %s", event[1])
            elif kind == "tunnel_changed":
                tunnel = self._tunnel_json()
                if tunnel is not None:
                    log.info(
                        "WireGuard tunnel %s (peer endpoint %s)",
                        tunnel["state"],
                        tunnel["endpoint"] or "unknown",
                    )
                self._changed()

    def _announce(self, name: str, *, peer: str = "", node: str = "") -> None:
        """`[announce.events.<name>]`: the announcer plays it when enabled."""
        if self.announcer is not None:
            self.announcer.event(name, peer=peer, node=node)

    def announce_status(self, entries: list[str]) -> None:
        """`*70` / `*73`: announce the link list (with `[announce] enabled`)."""
        if self.announcer is not None:
            self.announcer.status(entries)

    def announce_last_keyed(self, node: str | None) -> None:
        """AMI ilink 7: announce the last node that keyed us up (with `[announce] enabled`)."""
        if self.announcer is not None:
            self.announcer.command(last_keyed_phrase(node))

    def send_remote_digit(self, node: str, digit: str) -> None:
        """Remote command mode: one digit to `node` as a `D` text (CommandError when `node` is
        no longer in the network)."""
        self._apply_links(self.links.send_remote_digit(node, digit))

    def _playback_event(self, event: tuple[Any, ...]) -> None:
        """An announcement started or ended in the engine: `announcement_*` events."""
        if self._bridge is None:
            return
        started = event[0] == "play_started"
        completed = bool(event[2]) if not started else True
        kind = self._bridge.playback_event(started, event[1], completed)
        if kind is None or kind == COURTESY:
            return  # a courtesy tone is no announcement
        if started:
            self.bus.publish(AnnouncementStarted(kind=kind))
        else:
            self.bus.publish(AnnouncementFinished(kind=kind, completed=completed))

    def _on_call_event(self, event: Any) -> bool:
        """Update state and media for one event; True when the snapshot changed."""
        now = self.now()
        if isinstance(event, InboundRejected):
            who = event.calling_number or event.username or event.addr[0]
            log.info("refused inbound call from %s: %s", who, event.cause)
            return False
        if isinstance(event, c.CallIncoming) and self._is_link_caller(
            event.calling_number, event.username
        ):
            call = self.endpoint.call(event.callno)
            addr = call.peer_addr if call is not None else ("", 0)
            log.info("link call %d from node %s", event.callno, event.calling_number)
            self._apply_links(
                self.links.inbound(
                    event.callno, event.calling_number, event.called_number, addr, now
                )
            )
            return False
        if self.links.is_link_call(event.callno):
            self._on_link_call_event(event, now)
            return False
        call = self.endpoint.call(event.callno)
        info = self.calls.get(event.callno)
        if isinstance(event, c.CallIncoming):
            peer = event.calling_number or event.username or "unknown"
            self.calls[event.callno] = info = CallInfo(
                event.callno, "inbound", peer, call.peer_addr if call else ("", 0), now
            )
            info.codec = CODEC_NAMES.get(event.format)
            info.state = "ringing" if self.endpoint.inbound.answer == "manual" else "setup"
            log.info("incoming call %d from %s (%s)", event.callno, peer, info.codec)
            self.bus.publish(IncomingCall(from_=peer))
            self._announce("incoming_call", peer=peer)
            return True
        if info is None:
            return False
        if isinstance(event, c.CallAccepted):
            info.codec = CODEC_NAMES.get(event.format)
            return True
        if isinstance(event, c.CallRinging):
            info.state = "ringing"
            return True
        if isinstance(event, c.CallAnswered):
            info.state = "up"
            info.answered = now
            if call is not None and call.format is not None and not info.media:
                # A plain call talks into the links only while its caller speaks (VOX): a
                # phone that streams silence must not hold every link keyed.
                self.bridge.add_leg(
                    call.callno,
                    call.peer_callno,
                    call.peer_addr,
                    call.format,
                    call.timestamp(now),
                    keying="vox",
                    dtmf=self.config.dtmf.inband_on("calls"),
                )
                info.media = True
                self._announce("answered", peer=info.peer)
            return True
        if isinstance(event, c.DtmfReceived):
            self.commands.digit(f"call {event.callno}", event.callno, event.digit)
            return False
        if isinstance(event, c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed):
            if info.media:
                self._media_in(event)
            return False
        if isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            self._ended(info, _reason(event))
            return True
        return False

    def _media_in(self, event: c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed) -> None:
        """Audio and keying of a call with a media leg go to the engine, in order."""
        if isinstance(event, c.VoiceFullReceived):
            self.bridge.push_voice(event.callno, event.format, event.ts, event.payload)
        else:
            sub = (
                ControlSubclass.RADIO_KEY
                if isinstance(event, c.RadioKeyed)
                else ControlSubclass.RADIO_UNKEY
            )
            self.bridge.push_control(event.callno, "control", int(sub), event.ts)

    def _ended(self, info: CallInfo, reason: str) -> None:
        if info.ended:
            return
        info.ended = True
        if info.media and self._bridge is not None:
            self._bridge.remove_leg(info.callno)
        if info.keyed:
            info.keyed = False
        self.calls.pop(info.callno, None)
        # A later call may get the same number: it must not inherit this one's digits.
        self.commands.forget(f"call {info.callno}")
        log.info("call %d with %s ended: %s", info.callno, info.peer, reason)
        self.bus.publish(Hangup(reason=reason))
        if not self.stopping.is_set():
            self._announce("hangup")

    # --- links --------------------------------------------------------------------------------

    def _is_link_caller(self, calling_number: str, username: str) -> bool:
        """An inbound call is a link when the caller presents a node number as an AllStarLink
        node does: user `radio` (or a username we link with, or its own number)."""
        if self.links.me is None or not calling_number.isdigit():
            return False
        if calling_number.startswith("0"):
            return False  # app_rpt: a caller id starting with 0 is no node
        cfg = self.config.links.get(calling_number)
        return username in ("radio", calling_number) or (
            cfg is not None and cfg.username == username
        )

    def _on_link_call_event(self, event: Any, now: float) -> None:
        call = self.endpoint.call(event.callno)
        link = self.links.link_for_call(event.callno)
        if isinstance(event, c.CallAnswered) and link is not None and link.guest:
            self.links.answered(event.callno, now)
        if (
            isinstance(event, c.CallAnswered | c.CallRinging)
            and event.callno not in self._link_legs
        ):
            # A guest link is up from its first ring (the web transceiver's rule); the others
            # from ANSWER.
            if isinstance(event, c.CallRinging) and (link is None or not link.guest):
                return
            if call is not None and call.format is not None and link is not None:
                mode = link.mode.leg
                self.bridge.add_leg(
                    call.callno,
                    call.peer_callno,
                    call.peer_addr,
                    call.format,
                    call.timestamp(now),
                    mode=mode,
                    keying="voice",
                    dtmf=self.config.dtmf.inband_on("links"),
                    link=True,
                )
                self._link_legs.add(event.callno)
                codec = CODEC_NAMES.get(call.format)
                self._apply_links(self.links.call_up(event.callno, codec, now))
        elif isinstance(event, c.TextReceived):
            self._apply_links(self.links.text(event.callno, event.text, now))
        elif isinstance(event, c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed):
            if event.callno in self._link_legs:
                self._media_in(event)
        elif isinstance(event, c.DtmfReceived):
            self.commands.digit(f"call {event.callno}", event.callno, event.digit)
        elif isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            if event.callno in self._link_legs:
                self._link_legs.discard(event.callno)
                self.bridge.remove_leg(event.callno)
            refused = isinstance(event, c.CallRejected) and event.by_peer
            self._apply_links(
                self.links.call_ended(event.callno, _reason(event), now, refused=refused)
            )

    def _apply_links(self, out: ln.LinkOutput) -> None:
        """Carry out what the link machine asked for, in order, and publish its events."""
        now = self.now()
        for action in out.actions:
            try:
                self._link_action(action, now)
            except LocalProtocolError as exc:
                # The call went away under the action (e.g. hung up meanwhile): nothing to do.
                log.debug("link action %s skipped: %s", type(action).__name__, exc)
        for event in out.events:
            self._publish_link_event(event)
        if out.changed or out.events:
            self._changed()
        self._arm()

    def _link_action(self, action: ln.LinkAction, now: float) -> None:
        ep = self.endpoint
        if isinstance(action, ln.SendText):
            self._apply(ep.send_text(action.callno, now, action.text))
        elif isinstance(action, ln.SendKey):
            self._apply(ep.key(action.callno, now))
        elif isinstance(action, ln.SendUnkey):
            self._apply(ep.unkey(action.callno, now))
        elif isinstance(action, ln.SendCng):
            self._apply(ep.send_cng(action.callno, now))
        elif isinstance(action, ln.Answer):
            self._apply(ep.answer(action.callno, now))
        elif isinstance(action, ln.Hangup):
            if action.callno in self._link_legs:
                self._link_legs.discard(action.callno)
                self.bridge.remove_leg(action.callno)
            self._apply(ep.hangup(action.callno, now, None, action.causecode))
        elif isinstance(action, ln.SetLeg):
            if action.callno in self._link_legs:
                if action.mode is not None:
                    self.bridge.set_leg_mode(action.callno, action.mode)  # type: ignore[arg-type]
                if action.keying is not None:
                    self.bridge.set_leg_keying(action.callno, action.keying)  # type: ignore[arg-type]
        elif isinstance(action, ln.Dial):
            target = self._link_targets.pop(action.node, None)
            if target is not None and action.node not in self._guest_nodes:
                self._dial_link(action.node, target)
            else:
                self._spawn(self._resolve_and_dial(action.node, target))
        elif isinstance(action, ln.VerifySource):
            self._spawn(self._verify_source(action))

    def _publish_link_event(self, event: ln.LinkEvent) -> None:
        if self.statpost is not None and isinstance(event, ln.LinkConnected | ln.LinkDisconnected):
            self.statpost.links_changed()
        if isinstance(event, ln.LinkConnected):
            log.info("link to node %s up (%s, %s)", event.node, event.mode.value, event.direction)
            self._announce("link_connected", node=event.node)
            self.bus.publish(
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
            if not self.stopping.is_set():
                self._announce("link_disconnected", node=event.node)
            self.bus.publish(
                Link(kind="disconnected", node=event.node, call=event.callno, reason=event.reason)
            )
        elif isinstance(event, ln.LinkKeyed):
            self.bus.publish(
                Link(kind="keyed", node=event.node, call=event.callno, keyed=event.keyed)
            )
        elif isinstance(event, ln.RemoteDigitReceived):
            self.commands.digit(f"remote {event.node}", event.callno, event.digit)
        elif isinstance(event, ln.TelemetryReceived):
            tel = event.telemetry
            log.info("telemetry from node %s: %s %s", tel.source, tel.token, ",".join(tel.args))
            if self.announcer is not None:
                self.announcer.telemetry(tel.token, tel.args)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _lookup(self, node: str, addr: str | None) -> NodeAddress:
        """Where `node` is: `addr`, its `[links.<node>] addr`, else the nodes file, then DNS."""
        cfg = self.config.links.get(node)
        if addr is None and cfg is not None and cfg.addr is not None:
            addr = str(cfg.addr)
        return await self.resolver.lookup(node, addr)

    async def _resolve_and_dial(self, node: str, target: NodeAddress | None = None) -> None:
        guest: GuestToken | None = None
        try:
            if target is None:
                target = await self._lookup(node, None)
            if node in self._guest_nodes:
                if self.tokens is None:
                    raise TokenError("no web-transceiver token source ([portal])")
                guest = await self.tokens.mint(node)
        except (LookupError, ValueError, TokenError) as exc:
            self._apply_links(self.links.dial_failed(node, str(exc), self.now()))
            return
        self._dial_link(node, target, guest)

    def _dial_link(self, node: str, target: NodeAddress, guest: GuestToken | None = None) -> None:
        now = self.now()
        link = self.links.links.get(node)
        if link is None or link.state is not ln.LinkState.CONNECTING or link.callno is not None:
            return  # disconnected (or dialled) while being resolved
        if guest is not None:
            # As the web transceiver dials (research/allstar.md §5.1): the public user and its
            # published secret, extension "s", the target node as CALLING_NUMBER and the token
            # as CALLING_NAME.
            self.secrets.remember_transient(guest.calling_name)
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
        try:
            callno, out = self.endpoint.dial(now, target.addr, params)
        except LocalProtocolError as exc:
            self._apply_links(self.links.dial_failed(node, str(exc), now))
            return
        self._apply_links(self.links.dialled(node, callno, target.addr, now))
        self._apply(out)

    def _link_params(self, node: str, target: NodeAddress) -> c.DialParams:
        """A link call as ASL3 places one: user `radio` (or the configured or peer-secret
        user), our number calling, the target called."""
        cfg = self.config.links.get(node)
        peer_secret = self.secrets.peer_secret(node)
        if cfg is not None and cfg.username is not None:
            username = cfg.username
        elif peer_secret is not None and self.node_id:
            username = self.node_id
        else:
            username = target.username
        return c.DialParams(
            called_number=node,
            calling_number=self.node_id,
            username=username,
            secret=peer_secret,
            datetime=time.localtime()[:6],
        )

    async def _verify_source(self, action: ln.VerifySource) -> None:
        cfg = self.config.links.get(action.node)
        matches: bool | None
        if cfg is not None and cfg.addr is not None:
            try:
                target = await self._lookup(action.node, None)
            except (LookupError, ValueError):
                matches = None
            else:
                matches = same_ip(target.host, action.ip)
        else:
            # app_rpt's check: the looked-up address or the extnodes 2nd field, NONE for none.
            matches = await self.resolver.source_ip_matches(action.node, action.ip)
        self._apply_links(self.links.source_checked(action.callno, matches, self.now()))

    async def link(
        self, action: str, node: str, addr: str | None = None, *, permanent: bool = False
    ) -> dict[str, Any]:
        """POST /link: connect (`*3`), monitor (`*2`) or disconnect (`*1`) node `node`; or
        `disconnect_all` (app_rpt's `ilink 6`; `node` is not used). `permanent` links are
        redialled for ever once lost (AMI ilink 12/13)."""
        if action not in (*LINK_ACTIONS, "disconnect", "disconnect_all"):
            raise CommandError(
                f"unknown link action {action!r} "
                "(accepted: connect, monitor, local_monitor, disconnect, disconnect_all)",
                400,
            )
        if action == "disconnect_all":
            self._apply_links(self.links.disconnect_all(self.now()))
            return self.snapshot()
        if not node.isdigit():
            raise CommandError("node must be a node number (digits)", 400)
        now = self.now()
        if action == "disconnect":
            self._apply_links(self.links.disconnect(node, now))
            return self.snapshot()
        mode = LINK_ACTIONS[action]
        if self.links.check_connect(node, mode, permanent=permanent) is None:
            try:
                target = await self._lookup(node, addr)
            except (LookupError, ValueError) as exc:
                raise CommandError(str(exc), 400) from None
            self._link_targets[node] = target
        try:
            self._apply_links(self.links.connect(node, mode, self.now(), permanent=permanent))
        finally:
            self._link_targets.pop(node, None)
        return self.snapshot()

    # --- keying -------------------------------------------------------------------------------

    def key(self, source: str = "operator") -> dict[str, Any]:
        """Key the local source: POST /key and the other operator commands (`source`
        "operator"), or the radio's squelch ("carrier"). The only path that keys the local
        source; it stays keyed while any source holds it."""
        if self.links.dstar_active():
            # Checked on every key command, before anything else: D-Star is never keyed
            # remotely (spec Errors rule 3), by an operator or by a carrier.
            raise CommandError(DSTAR_REFUSAL, 409)
        keyed = bool(self._keyed_by)
        self._keyed_by.add(source)
        if keyed:
            return self.snapshot()
        now = self.now()
        self.bridge.set_local_keyed(True)
        self._tx_keyed_at = now
        self.links.set_local_keyed(True, now)
        self.key_stats.keyed(now)
        self._post_key_change()
        timeout = self.config.keying.tx_timeout_secs
        self._tot = asyncio.get_running_loop().call_later(timeout, self._tx_timed_out)
        log.info("keyed by the %s (TX time-out %d s)", source, timeout)
        self.bus.publish(Link(kind="keyed", node=self.node_id, call=None, keyed=True))
        self._changed()
        return self.snapshot()

    def unkey(self, reason: str | None = None, source: str | None = None) -> dict[str, Any]:
        """POST /unkey, the TX time-out and shutdown (`source` None: every hold is released);
        the radio's squelch closing releases only its own hold (`source` "carrier")."""
        if source is None:
            self._keyed_by.clear()
        else:
            self._keyed_by.discard(source)
        if self._tx_keyed_at is None or self._keyed_by:
            return self.snapshot()
        if self._tot is not None:
            self._tot.cancel()
            self._tot = None
        self._tx_keyed_at = None
        if self._bridge is not None:
            self._bridge.set_local_keyed(False)
        self.links.set_local_keyed(False, self.now())
        self.key_stats.unkeyed(self.now())
        self._post_key_change()
        log.info("unkeyed%s", f" ({reason})" if reason else "")
        self.bus.publish(
            Link(kind="keyed", node=self.node_id, call=None, keyed=False, reason=reason)
        )
        self._changed()
        return self.snapshot()

    def _on_squelch(self, opened: bool) -> None:
        """The radio's squelch opened or closed: key or release the carrier's hold on the
        local source, exactly as POST /key and POST /unkey do."""
        if not opened:
            held = "carrier" in self._keyed_by
            self.bus.publish(Radio(kind="carrier", on=False))
            self.unkey("carrier dropped", source="carrier")
            if held:
                self._courtesy_tone()
            self._changed()
            return
        try:
            self.key("carrier")
        except CommandError as exc:
            log.warning("carrier detected, not keying: %s", exc)
            self.bus.publish(Radio(kind="carrier", on=True, reason=str(exc)))
        else:
            self.bus.publish(Radio(kind="carrier", on=True))
        self._changed()

    def _courtesy_tone(self) -> None:
        """A received transmission that keyed the node ended: the courtesy tone goes out on the
        local transmitter (keying it through the hang time), never to the calls or links, as
        app_rpt plays its courtesy tones on the local transmitter only."""
        steps = self.config.radio.courtesy_tone
        if not steps or self._bridge is None:
            return
        pcm = tone_sequence_pcm(
            self._bridge.rate, list(steps), self.config.radio.courtesy_tone_level_db
        )
        self._bridge.play(pcm, "to_monitor", COURTESY, keys_transmitter=True)

    def _on_ptt(self, change: PttChange) -> None:
        """The radio's transmitter keyed or released (the conference's audio, the hang time,
        the TX time-out)."""
        if change.timed_out:
            log.warning("transmitter %s: released", change.reason)
        else:
            log.info("transmitter %s", "keyed" if change.keyed else f"released ({change.reason})")
        self.bus.publish(Radio(kind="ptt", on=change.keyed, reason=change.reason))
        self._changed()

    def _post_key_change(self) -> None:
        if self.statpost is not None:
            self.statpost.key_changed()

    def _tx_timed_out(self) -> None:
        self._tot = None
        self.key_stats.timeouts += 1
        timeout = self.config.keying.tx_timeout_secs
        log.warning("TX time-out: keyed for %d s, unkeying", timeout)
        self.unkey(f"TX time-out after {timeout} s")

    async def dtmf_command(
        self, source: str, digits: str, *, authorized: bool = False
    ) -> list[Outcome]:
        """Map a whole DTMF string from `source` (its end acts as `#`) and run the commands it
        completes: with `[dtmf] enabled`, or when the caller is `authorized` (AMI `rpt fun`,
        behind the AMI login)."""
        execute = authorized or self.config.dtmf.enabled
        return await self.commands.run_digits(source, digits, execute=execute)

    # --- commands -----------------------------------------------------------------------------

    def _pick(self, callno: int | None, states: tuple[str, ...], what: str) -> CallInfo:
        if callno is not None:
            info = self.calls.get(callno)
            if info is None:
                raise CommandError(f"no call {callno}", 404)
            return info
        candidates = [i for i in self.calls.values() if i.state in states]
        if not candidates:
            raise CommandError(f"no {what} call", 409)
        # The most recent one: what an operator who just heard it ring or connect means.
        return max(candidates, key=lambda i: i.started)

    async def dial(self, node: str, addr: str | None = None) -> dict[str, Any]:
        """Place an outbound call to `node` (at `addr`, else looked up: nodes file, DNS)."""
        try:
            target = await self.resolver.lookup(node, addr)
        except NodeLookupError as exc:
            raise CommandError(str(exc), 400) from None
        if self.stopping.is_set():
            raise CommandError("the node is shutting down", 409)
        peer_secret = self.secrets.peer_secret(node)
        params = c.DialParams(
            called_number=node,
            calling_number=self.node_id,
            username=self.node_id if peer_secret is not None and self.node_id else target.username,
            secret=peer_secret,
            datetime=time.localtime()[:6],
        )
        now = self.now()
        try:
            callno, out = self.endpoint.dial(now, target.addr, params)
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 500) from None
        self.calls[callno] = CallInfo(callno, "outbound", node, target.addr, now)
        self._apply(out)
        self._changed()
        return self.snapshot()

    def hangup(self, callno: int | None = None) -> dict[str, Any]:
        """End a call: `callno`, else the most recently started call."""
        info = self._pick(callno, ("setup", "ringing", "up"), "active")
        now = self.now()
        try:
            out = self.endpoint.hangup(info.callno, now)
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        self._ended(info, "hung up by operator")
        self._apply(out)
        self._changed()
        return self.snapshot()

    def answer(self, callno: int | None = None) -> dict[str, Any]:
        info = self._pick(callno, ("ringing",), "ringing inbound")
        if info.direction != "inbound":
            raise CommandError(f"call {info.callno} is outbound", 409)
        try:
            self._apply(self.endpoint.answer(info.callno, self.now()))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        return self.snapshot()

    def reject(self, callno: int | None = None) -> dict[str, Any]:
        info = self._pick(callno, ("ringing",), "ringing inbound")
        try:
            out = self.endpoint.reject(info.callno, self.now(), "Call rejected by operator", 21)
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        self._ended(info, "rejected by operator")
        self._apply(out)
        self._changed()
        return self.snapshot()

    def set_listening(self, enabled: bool) -> dict[str, Any]:
        self.endpoint.set_listening(enabled)
        self._changed()
        return self.snapshot()

    def register(self) -> dict[str, Any]:
        reg_cfg = self.config.register
        if reg_cfg is None:
            raise CommandError("no [register] section in the configuration", 409)
        secret = self.secrets.node_secret()
        if secret is None:
            raise CommandError("no node secret: set NET_SECRET or send POST /secrets", 409)
        if self.http_registration is not None:
            self.http_registration.set_secret(secret)
            self.http_registration.register()
            self._changed()
            return self.snapshot()
        if reg_cfg.peer is None:
            raise CommandError(f"registration method {reg_cfg.method} is not running", 500)
        now = self.now()
        if self.registration is None:
            self.registration = Registration(
                reg_cfg.peer.as_tuple(),
                reg_cfg.node_id,
                secret,
                reg_cfg.refresh,
                self._callno_source,
                now,
            )
        try:
            self._apply_registration(self.registration.register(now))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        return self.snapshot()

    def deregister(self) -> dict[str, Any]:
        if self.http_registration is not None:
            try:
                self.http_registration.deregister()
            except LocalProtocolError as exc:
                raise CommandError(str(exc), 409) from None
            return self.snapshot()
        if self.registration is None:
            raise CommandError("not registered", 409)
        try:
            self._apply_registration(self.registration.deregister(self.now()))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        self._changed()
        return self.snapshot()

    def _callno_source(self) -> int:
        return self.endpoint.allocate_callno(self.now())

    def set_secret(self, username: str, secret: str) -> None:
        """POST /secrets: store the credential (never echoed, never logged).

        The node's own credential starts registration when `[register]` is configured and the
        node is not registered yet, as it would have at startup with the `env` source.
        """
        self.secrets.set(username, secret)
        if username != self.node_id:
            return
        if self.registration is not None:
            self.registration.set_secret(self.secrets.node_secret())
        if self.http_registration is not None:
            self.http_registration.set_secret(self.secrets.node_secret())
        if not self.registered:
            self.register()

    def reload(self, loaded: NodeConfig) -> Reloaded:
        """SIGHUP: take the reloadable settings of a re-read config (see `node.reload`).

        All or nothing: a `ConfigError` (a bad peers file, a peer in both the file and the
        environment) leaves everything as it was. Calls that are up, ringing or being set up keep
        the rules and the secret they were admitted with; the new ones meet the next inbound
        call.
        """
        plan = plan_reload(self.config, loaded)
        peers = self.secrets.reload(plan.config)
        if (plan.config.nodes_file, plan.config.dns) != (self.config.nodes_file, self.config.dns):
            self.resolver = NodeResolver.from_config(plan.config)
        self.config = plan.config
        self.endpoint.set_policy(
            InboundPolicy.from_listener(plan.config.listener, enabled=self.endpoint.listening)
        )
        return Reloaded(plan, peers)

    def start(self) -> None:
        """Start-up actions: register when configured and the credential is known; dial the
        permanent links."""
        if self.config.register is not None and self.secrets.node_secret() is not None:
            self.register()
        self._apply_links(self.links.start(self.now()))
        if self.announcer is not None:
            self.announcer.start()

    def stat_report(self) -> StatReport:
        """What a status post reports (`[statpost]`): the adjacent links and the operator's
        keying (app_rpt reports its receiver: here the local source is the operator's PTT)."""
        node = self.node_id
        if node is None:
            raise CommandError("status posts need [register] node_id", 500)
        now = self.now()
        links = link_list(self.links.snapshot(now))
        return self.key_stats.report(node, links, now, now - self.started)

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

    def close(self) -> None:
        """Shutdown: unkey, hang up every call and link, release registration, stop audio, end
        the streams. Links get a plain HANGUP, not `!!DISCONNECT!!`: their permanent links
        should come back when this node does."""
        self.stopping.set()
        if self.radio is not None:
            # The transmitter first: nothing that fails below may leave it keyed.
            self.radio.close()
        self.commands.close()
        if self.announcer is not None:
            self.announcer.close()
        self.unkey("node shutting down")
        for task in self._tasks:
            task.cancel()
        now = self.now()
        for link in list(self.links.links.values()):
            if link.callno is not None:
                with contextlib.suppress(LocalProtocolError):
                    self._send(self.endpoint.hangup(link.callno, now, None, 0).frames)
        for info in list(self.calls.values()):
            with contextlib.suppress(LocalProtocolError):
                self._send(self.endpoint.hangup(info.callno, now).frames)
            self._ended(info, "node shutting down")
        if self.registration is not None and self.registration.registered:
            with contextlib.suppress(LocalProtocolError):
                self._send(
                    (self.registration.peer, f) for f in self.registration.deregister(now).frames
                )
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._bridge is not None:
            self._bridge.close()
        self.bus.close()


def _reason(event: Any) -> str:
    if isinstance(event, c.CallLost):
        return (
            "connection lost"
            if event.reason is c.LossReason.RETRIES_EXHAUSTED
            else "peer has no such call"
        )
    cause = event.cause or f"cause code {event.causecode}"
    if isinstance(event, c.CallRejected):
        return f"rejected: {cause}" if event.by_peer else f"refused: {cause}"
    return f"hung up by peer: {cause}" if event.by_peer else f"hung up: {cause}"
