"""The calls service: the IAX2 endpoint and the plain (non-link) calls it admits.

It is the node's "endpoint" in quinn's sense: every call frame and call timer goes through
`receive` and `timer`, the frames the endpoint returns go to the engine, and each call event goes
to the owner of its call number: the links service for link calls, this service for the plain
calls (a phone, a softphone, an operator's `POST /dial`). A plain call gets a `CallInfo` for the
snapshot, a media leg once answered, and `incoming_call` / `hangup` bus events.

What it needs from the rest of the node comes in through narrow interfaces wired at start-up:
the links service (`LinkCalls`), the DTMF sink (`Digits`), the announcements (`Announce`), a
`changed` callable that publishes a snapshot, and a `rearm` callable that re-arms the node's
one timer.
"""

from __future__ import annotations

import contextlib
import logging
import secrets as pysecrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from node.config import NodeConfig
from node.context import NodeContext
from node.errors import CommandError, LocalProtocolError
from node.events import Hangup, IncomingCall
from node.iax2 import call as c
from node.iax2.constants import Format
from node.iax2.endpoint import Endpoint, EndpointOutput, InboundPolicy, InboundRejected
from node.iax2.transport import Address, EngineTransport
from node.media.bridge import MediaBridge

__all__ = [
    "CODEC_NAMES",
    "Announce",
    "CallInfo",
    "CallService",
    "Digits",
    "LinkCalls",
    "end_reason",
    "health_json",
]

log = logging.getLogger(__name__)

#: Seconds between two log lines about refused inbound calls: a flood of NEW frames (spoofed
#: sources cannot complete a call token) would otherwise write one line per datagram.
REFUSAL_LOG_INTERVAL = 10.0

CODEC_NAMES: dict[int | None, str] = {
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


def health_json(call: c.Call | None, rx: dict[str, int] | None) -> dict[str, Any]:
    """The `health` object of a call or link: the round-trip time (None until a PING/PONG or
    LAGRQ/LAGRP round measured one), what our jitter buffer sees of the peer's stream (`rx`,
    None without a media leg), and what the peer says of ours in its PONG's RR IEs (`peer`,
    None until one came)."""
    rtt = call.measured_rtt if call is not None else None
    body: dict[str, Any] = {
        "rtt_ms": None if rtt is None else round(rtt * 1000),
        "rx": None,
        "peer": None,
    }
    if rx is not None:
        total = rx["frames_in"] + rx["lost"]
        body["rx"] = {
            "jitter_ms": rx["jitter_ms"],
            "loss_pct": round(100 * rx["lost"] / total, 1) if total else 0.0,
            "lost": rx["lost"],
            "late": rx["late"],
            "frames_in": rx["frames_in"],
            "delay_ms": rx["delay_ms"],
            "target_ms": rx["target_ms"],
        }
    rr = call.peer_rr if call is not None else None
    if rr is not None:
        body["peer"] = {
            "jitter_ms": rr.jitter,
            "loss_pct": rr.loss_percent,
            "lost": rr.lost,
            "packets": rr.packets,
            "delay_ms": rr.delay,
            "dropped": rr.dropped,
            "out_of_order": rr.out_of_order,
        }
    return body


class LinkCalls(Protocol):
    """The owner of link calls (the links service)."""

    def is_link_caller(self, calling_number: str, username: str) -> bool: ...

    def is_link_call(self, callno: int) -> bool: ...

    def inbound(self, event: c.CallIncoming, now: float) -> None: ...

    def on_call_event(self, event: Any, now: float) -> None: ...

    def spurt(self, callno: int, started: bool, now: float) -> None: ...

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> None: ...


class Digits(Protocol):
    """Where received DTMF digits go (the commands service)."""

    def digit(self, source: str, call: int | None, digit: str, *, inband: bool = False) -> None: ...

    def forget(self, source: str) -> None: ...


class Announce(Protocol):
    """`[announce.events.<name>]` (the announcements service)."""

    def event(self, name: str, *, peer: str = "", node: str = "") -> None: ...


def end_reason(event: c.CallHungUp | c.CallRejected | c.CallLost) -> str:
    """Why a call ended, as the log and the `hangup` event say it."""
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


class CallService:
    """The endpoint, the routing of its events, and the plain calls."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx
        self._refusal_logged_at: float | None = None
        self._refusals_unlogged = 0
        config = ctx.config
        self.endpoint = Endpoint(
            InboundPolicy.from_listener(config.listener),
            config.codec_policy,
            token_key=pysecrets.token_bytes(32),
            randbelow=pysecrets.randbelow,
            peer_secret=ctx.secrets.peer_secret,
            rr_stats=self._rr_stats,
            holds=self._is_link_caller,
        )
        #: The plain calls, by call number.
        self.calls: dict[int, CallInfo] = {}
        self.transport: EngineTransport | None = None
        self.bridge: MediaBridge | None = None
        # Wired at start-up (`wire`).
        self._links: LinkCalls | None = None
        self._digits: Digits | None = None
        self._announce: Announce | None = None

    def wire(self, links: LinkCalls, digits: Digits, announce: Announce) -> None:
        """Connect the owner of link calls, the DTMF sink and the announcements."""
        self._links = links
        self._digits = digits
        self._announce = announce

    def attach(self, transport: EngineTransport, bridge: MediaBridge) -> None:
        self.transport = transport
        self.bridge = bridge

    def reconfigure(self, config: NodeConfig) -> None:
        """SIGHUP: calls admitted so far keep their rules; the next inbound call meets these."""
        self.endpoint.set_policy(
            InboundPolicy.from_listener(config.listener, enabled=self.endpoint.listening)
        )

    # --- the engine side ----------------------------------------------------------------------

    def send(self, frames: Iterable[tuple[Address, Any]]) -> None:
        transport = self.transport
        if transport is None:
            return
        for addr, frame in frames:
            transport.send(frame, addr)

    def allocate_callno(self, now: float) -> int:
        """A call number for the registration (the endpoint's pool is the node's)."""
        return self.endpoint.allocate_callno(now)

    def release_callno(self, callno: int, now: float) -> None:
        self.endpoint.release_callno(callno, now)

    def _rr_stats(self, callno: int) -> c.RrStats:
        if self.transport is None:
            return c.RrStats()
        # One leg's figures: a PONG per call every few seconds must not copy every leg's.
        s = self.transport.engine.leg_jitter_stats(callno)
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

    def leg_stats(self) -> dict[int, dict[str, int]]:
        """Every media leg's jitter-buffer figures by call number, in one call to the engine
        (a snapshot of a hub's thousands of calls must not ask for each leg on its own)."""
        if self.transport is None:
            return {}
        return dict(self.transport.engine.jitter_stats())

    def health(
        self, callno: int, legs: Mapping[int, dict[str, int]] | None = None
    ) -> dict[str, Any]:
        """The `health` object of call `callno` (a plain call or a link's), see `health_json`;
        `legs` is `leg_stats()` when the caller reports many calls at once."""
        if legs is not None:
            rx = legs.get(callno)
        elif self.transport is not None:
            rx = self.transport.engine.leg_jitter_stats(callno)
        else:
            rx = None
        return health_json(self.endpoint.call(callno), rx)

    def _is_link_caller(self, calling_number: str, username: str) -> bool:
        return self._links is not None and self._links.is_link_caller(calling_number, username)

    # --- inputs -------------------------------------------------------------------------------

    def receive(self, addr: Address, frame: Any, now: float) -> None:
        """One received full frame for the endpoint (any call, or a new one)."""
        self.apply(self.endpoint.receive(addr, frame, now))

    def timer(self, now: float) -> None:
        self.apply(self.endpoint.timer(now))

    def next_deadline(self) -> float | None:
        return self.endpoint.next_deadline()

    def _log_refusal(self, event: InboundRejected) -> None:
        now = self._ctx.clock()
        last = self._refusal_logged_at
        if last is not None and now - last < REFUSAL_LOG_INTERVAL:
            self._refusals_unlogged += 1
            return
        more = self._refusals_unlogged
        who = event.calling_number or event.username or event.addr[0]
        log.info(
            "refused inbound call from %s: %s%s",
            who,
            event.cause,
            f" ({more} more refused since the last report)" if more else "",
        )
        self._refusal_logged_at, self._refusals_unlogged = now, 0

    def apply(self, out: EndpointOutput) -> None:
        """Send what the endpoint returned and hand each event to the owner of its call."""
        self.send(out.frames)
        changed = False
        links = self._links
        for event in out.events:
            if not isinstance(event, c.CallEvent):
                if isinstance(event, InboundRejected):
                    self._log_refusal(event)
            elif (
                links is not None
                and isinstance(event, c.CallIncoming)
                and links.is_link_caller(event.calling_number, event.username)
            ):
                links.inbound(event, self._ctx.clock())
            elif isinstance(event, c.DtmfReceived):
                # Whoever owns the call (a link, a plain call), its digits are commands.
                owned = event.callno in self.calls or (
                    links is not None and links.is_link_call(event.callno)
                )
                if owned and self._digits is not None:
                    self._digits.digit(f"call {event.callno}", event.callno, event.digit)
            elif links is not None and links.is_link_call(event.callno):
                links.on_call_event(event, self._ctx.clock())
            else:
                changed |= self._on_event(event)
        if changed:
            self._ctx.changed()
        self._ctx.rearm()

    def full_voice(
        self, callno: int, fmt: int, ts: int, payload: bytes, spurt_start: bool, now: float
    ) -> None:
        """The engine asks for a full voice frame (talk-spurt start, timestamp wrap, codec)."""
        # A call that is hanging up no longer carries voice: its leg goes with it.
        if callno not in self.endpoint.calls:
            return
        links = self._links
        if spurt_start and links is not None and links.is_link_call(callno):
            # A legacy link needs its RADIO_KEY ahead of the first voice frame.
            links.spurt(callno, True, now)
        with contextlib.suppress(LocalProtocolError):
            self.apply(self.endpoint.send_voice_full(callno, now, fmt, payload, ts))

    def spurt_ended(self, callno: int, now: float) -> None:
        """The engine's talk spurt on `callno` ended (links send their RADIO_UNKEY)."""
        if self._links is not None and self._links.is_link_call(callno):
            self._links.spurt(callno, False, now)

    def voice_resend(self, callno: int, now: float) -> None:
        """Mini frames arrived before any full one: ask the peer for a full voice frame."""
        if callno in self.endpoint.calls:
            with contextlib.suppress(LocalProtocolError):
                self.apply(self.endpoint.request_voice_resend(callno, now))

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> None:
        """A call's received audio keyed or unkeyed (a link's voice, a plain call's VOX)."""
        if self._links is not None and self._links.is_link_call(callno):
            self._links.rx_keyed(callno, keyed, now)
        elif (info := self.calls.get(callno)) is not None and info.keyed != keyed:
            info.keyed = keyed
            self._ctx.changed()

    def _on_event(self, event: Any) -> bool:
        """Update state and media for one plain call's event; True when the snapshot changed."""
        now = self._ctx.clock()
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
            self._ctx.bus.publish(IncomingCall(from_=peer))
            self._event("incoming_call", peer=peer)
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
                self._bridge().add_call_leg(
                    call, now, keying="vox", dtmf=self._ctx.config.dtmf.inband_on("calls")
                )
                info.media = True
                self._event("answered", peer=info.peer)
            return True
        if isinstance(event, c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed):
            if info.media:
                self._bridge().push_received(event)
            return False
        if isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            reason = end_reason(event)
            self._ended(info, reason)
            return True
        return False

    def _bridge(self) -> MediaBridge:
        if self.bridge is None:
            raise CommandError("the media bridge is not running", 500)
        return self.bridge

    def _event(self, name: str, *, peer: str = "") -> None:
        if self._announce is not None:
            self._announce.event(name, peer=peer)

    def _ended(self, info: CallInfo, reason: str) -> None:
        if info.ended:
            return
        info.ended = True
        if info.media and self.bridge is not None:
            self.bridge.remove_leg(info.callno)
        if info.keyed:
            info.keyed = False
        self.calls.pop(info.callno, None)
        # A later call may get the same number: it must not inherit this one's digits.
        if self._digits is not None:
            self._digits.forget(f"call {info.callno}")
        log.info("call %d with %s ended: %s", info.callno, info.peer, reason)
        self._ctx.bus.publish(Hangup(reason=reason))
        if not self._ctx.stopping.is_set():
            self._event("hangup")

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

    def dial(self, node: str, addr: Address, username: str | None) -> None:
        """Place an outbound call to `node` at `addr` (as `username` unless we share a peer
        secret with it: then as our own node number)."""
        node_id = self._ctx.config.node_id
        peer_secret = self._ctx.secrets.peer_secret(node)
        params = c.DialParams(
            called_number=node,
            calling_number=node_id,
            username=node_id if peer_secret is not None and node_id else username,
            secret=peer_secret,
            datetime=time.localtime()[:6],
        )
        now = self._ctx.clock()
        try:
            callno, out = self.endpoint.dial(now, addr, params)
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 500) from None
        self.calls[callno] = CallInfo(callno, "outbound", node, addr, now)
        self.apply(out)
        self._ctx.changed()

    def hangup(self, callno: int | None = None) -> None:
        """End a call: `callno`, else the most recently started call."""
        info = self._pick(callno, ("setup", "ringing", "up"), "active")
        try:
            out = self.endpoint.hangup(info.callno, self._ctx.clock())
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        self._ended(info, "hung up by operator")
        self.apply(out)
        self._ctx.changed()

    def answer(self, callno: int | None = None) -> None:
        info = self._pick(callno, ("ringing",), "ringing inbound")
        if info.direction != "inbound":
            raise CommandError(f"call {info.callno} is outbound", 409)
        try:
            self.apply(self.endpoint.answer(info.callno, self._ctx.clock()))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None

    def reject(self, callno: int | None = None) -> None:
        info = self._pick(callno, ("ringing",), "ringing inbound")
        try:
            out = self.endpoint.reject(
                info.callno, self._ctx.clock(), "Call rejected by operator", 21
            )
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        self._ended(info, "rejected by operator")
        self.apply(out)
        self._ctx.changed()

    def set_listening(self, enabled: bool) -> None:
        self.endpoint.set_listening(enabled)
        self._ctx.changed()

    def snapshot(
        self, now: float, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        if legs is None and self.calls:
            legs = self.leg_stats()
        return [
            {**info.to_json(now), "health": self.health(info.callno, legs)}
            for info in self.calls.values()
        ]

    def health_snapshot(
        self, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        """The `health` event's `calls`: each plain call's id and health."""
        if legs is None and self.calls:
            legs = self.leg_stats()
        return [{"id": callno, "health": self.health(callno, legs)} for callno in self.calls]

    def close(self, now: float) -> None:
        """Shutdown: hang up every plain call (frames only: nothing is waited for)."""
        for info in list(self.calls.values()):
            with contextlib.suppress(LocalProtocolError):
                self.send(self.endpoint.hangup(info.callno, now).frames)
            self._ended(info, "node shutting down")
