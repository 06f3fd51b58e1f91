"""The node's IAX2 port: one UDP socket's endpoint, as every owner of calls uses it.

The layer under the services, in the place of quinn's `Endpoint` under its connections. It holds
the sans-I/O `iax2.endpoint.Endpoint` (call table, call-number pool, call tokens, admission,
retransmission) and the engine transport it sends through, and knows nothing of links,
registration or plain calls. Whoever places or takes a call is its *owner*, an opaque tag the
port only stores: `dial` and `allocate_callno` record the owner of a number, `claim` sets it for
an inbound call, and `owner` tells the router whose an event is.

Inputs (`receive`, `timer`) and the owners' commands (`dial`, `answer`, `send_text`, ...) send
their frames at once, in order, and queue the call events; the router takes them (`take_events`)
after each input and hands each one to the owner of its call number. Nothing here calls up.

Refused inbound calls are the port's own business: logged here, at most once per
`REFUSAL_LOG_INTERVAL` (a flood of spoofed NEW frames would otherwise write a line each).

A process hosting several nodes shares one port between them: each node's router holds a *lane*
of it (`IaxPort.lane`), the same endpoint, call numbers and socket, with the call events of its
own calls. A call belongs to the lane that placed it or, inbound, to the lane of the number it
called (`route`); events queued for another lane than the caller's are announced to the host
(`on_pending`), which has that lane's router take them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from node._core import FullFrame
from node.iax2 import call as c
from node.iax2.call import Address, DialParams, RrStats
from node.iax2.endpoint import LOCAL_PEER, Endpoint, EndpointOutput, InboundPolicy, InboundRejected

__all__ = [
    "LOCAL_PEER",
    "REFUSAL_LOG_INTERVAL",
    "FrameSender",
    "IaxPort",
    "Owner",
    "health_json",
]

log = logging.getLogger(__name__)

#: Seconds between two log lines about refused inbound calls.
REFUSAL_LOG_INTERVAL = 10.0

#: Who a call number belongs to (the router's tag; the port only stores it).
Owner = Hashable

#: What the port hands up: a call's event, from `node.iax2.call_events`.
CallEvent = c.CallEvent


class FrameSender(Protocol):
    """The engine transport as the port sees it."""

    def send(self, frame: FullFrame, addr: Address) -> None: ...

    def leg_jitter_stats(self, callno: int) -> dict[str, int] | None: ...

    def jitter_stats(self) -> Iterable[tuple[int, dict[str, int]]]: ...


def health_json(call: c.Call | None, rx: Mapping[str, int] | None) -> dict[str, Any]:
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


@dataclass(slots=True)
class _Shared:
    """What every lane of one port shares."""

    sender: FrameSender | None = None
    #: Each call number's lane (a call placed or taken by a node of a host).
    lanes: dict[int, int] = field(default_factory=dict)
    #: Each lane's call events, in order.
    queues: dict[int, list[CallEvent]] = field(default_factory=dict)
    #: Called number -> lane, for inbound calls (empty: every inbound call is lane 0's).
    route: dict[str, int] = field(default_factory=dict)
    #: Told the lane whose queue got an event while another lane's input ran.
    on_pending: Callable[[int], None] | None = None
    #: Frames of local calls (between two nodes of the host), to hand back to the endpoint.
    loopback: list[FullFrame] = field(default_factory=list)
    #: Told when `loopback` has frames.
    on_loopback: Callable[[], None] | None = None
    refusal_logged_at: float | None = None
    refusals_unlogged: int = 0


class IaxPort:
    """The endpoint of the node's IAX2 socket, its sending, and the owners of its calls."""

    def __init__(
        self,
        inbound: InboundPolicy,
        codec_policy: str,
        *,
        token_key: bytes,
        randbelow: Callable[[int], int],
        peer_secret: Callable[[str], Any],
        holds: Callable[[str, str], bool],
        clock: Callable[[], float],
    ) -> None:
        """`holds(calling_number, username)` says which admitted callers are held unanswered
        for their owner to vet (a pure rule of the configuration: link callers)."""
        self.endpoint = Endpoint(
            inbound,
            codec_policy,
            token_key=token_key,
            randbelow=randbelow,
            peer_secret=peer_secret,
            rr_stats=self._rr_stats,
            holds=holds,
        )
        self._clock = clock
        self._owners: dict[int, Owner] = {}
        self._shared = _Shared()
        #: This view's lane: the node of the host whose calls it hands up (0, the first).
        self.lane_index = 0

    def lane(self, index: int) -> IaxPort:
        """The port as node `index` of the host sees it: the same endpoint and socket, the
        events of its own calls."""
        if index == self.lane_index:
            return self
        view = object.__new__(IaxPort)
        view.endpoint = self.endpoint
        view._clock = self._clock
        view._owners = self._owners
        view._shared = self._shared
        view.lane_index = index
        return view

    def route_inbound(
        self,
        numbers: Mapping[str, int],
        on_pending: Callable[[int], None] | None,
        on_loopback: Callable[[], None] | None = None,
    ) -> None:
        """An inbound call goes to the lane of the number it calls; `on_pending(lane)` is told
        when a lane has events that another lane's input queued, `on_loopback()` when a local
        call's frames wait (`take_loopback`)."""
        self._shared.route = dict(numbers)
        self._shared.on_pending = on_pending
        self._shared.on_loopback = on_loopback

    def hosts(self, number: str) -> bool:
        """Whether `number` is a node of this host (a link to it is a local call)."""
        return number in self._shared.route

    def has_loopback(self) -> bool:
        return bool(self._shared.loopback)

    def take_loopback(self) -> list[tuple[Address, FullFrame]]:
        """The frames local calls sent since the last take, as received from `LOCAL_PEER`
        (the host hands them to `receive`, after the input that sent them)."""
        frames, self._shared.loopback = self._shared.loopback, []
        return [(LOCAL_PEER, frame) for frame in frames]

    @property
    def _sender(self) -> FrameSender | None:
        return self._shared.sender

    def attach(self, sender: FrameSender) -> None:
        """The engine runs: frames go out through `sender` from now on."""
        self._shared.sender = sender

    # --- getters ------------------------------------------------------------------------------

    @property
    def calls(self) -> Mapping[int, c.Call]:
        """Every call by our call number (read-only)."""
        return self.endpoint.calls

    def call(self, callno: int) -> c.Call | None:
        return self.endpoint.call(callno)

    def owner(self, callno: int) -> Owner | None:
        """Who call number `callno` belongs to (None: nobody claimed it)."""
        return self._owners.get(callno)

    @property
    def listening(self) -> bool:
        return self.endpoint.listening

    @property
    def inbound(self) -> InboundPolicy:
        return self.endpoint.inbound

    def next_deadline(self) -> float | None:
        return self.endpoint.next_deadline()

    def leg_stats(self) -> dict[int, dict[str, int]]:
        """Every media leg's jitter-buffer figures by call number, in one call to the engine
        (a snapshot of a hub's thousands of calls must not ask for each leg on its own)."""
        return {} if self._sender is None else dict(self._sender.jitter_stats())

    def health(
        self, callno: int, legs: Mapping[int, dict[str, int]] | None = None
    ) -> dict[str, Any]:
        """The `health` object of call `callno` (see `health_json`); `legs` is `leg_stats()`
        when the caller reports many calls at once."""
        if legs is not None:
            rx = legs.get(callno)
        elif self._sender is not None:
            rx = self._sender.leg_jitter_stats(callno)
        else:
            rx = None
        return health_json(self.endpoint.call(callno), rx)

    def _rr_stats(self, callno: int) -> RrStats:
        if self._sender is None:
            return RrStats()
        # One leg's figures: a PONG per call every few seconds must not copy every leg's.
        s = self._sender.leg_jitter_stats(callno)
        if s is None:
            return RrStats()
        total = s["frames_in"] + s["lost"]
        return RrStats(
            jitter=max(0, s["jitter_ms"]),
            loss_percent=min(100, 100 * s["lost"] // total) if total else 0,
            lost=s["lost"],
            packets=s["frames_in"],
            delay=max(0, s["delay_ms"]),
            dropped=s["dropped"] + s["late"],
            out_of_order=s["reordered"],
        )

    # --- inputs -------------------------------------------------------------------------------

    def receive(self, addr: Address, frame: FullFrame, now: float) -> None:
        """One received full frame for the endpoint (any call, or a new one)."""
        self._take(self.endpoint.receive(addr, frame, now))

    def timer(self, now: float) -> None:
        self._take(self.endpoint.timer(now))

    def take_events(self) -> list[CallEvent]:
        """This lane's call events since the last take, in order (the router routes them)."""
        return self._shared.queues.pop(self.lane_index, [])

    # --- owners -------------------------------------------------------------------------------

    def claim(self, callno: int, owner: Owner) -> None:
        """`owner` takes inbound call `callno` (the router, at its `CallIncoming`)."""
        self._owners[callno] = owner

    def disown(self, callno: int) -> None:
        """Call `callno` ended: its number belongs to nobody until it is handed out again."""
        self._owners.pop(callno, None)
        self._shared.lanes.pop(callno, None)

    # --- the owners' commands -----------------------------------------------------------------

    def dial(self, owner: Owner, now: float, addr: Address, params: DialParams) -> int:
        """Place an outbound call for `owner`; our call number (LocalProtocolError when none is
        free)."""
        callno, out = self.endpoint.dial(now, addr, params)
        self._owners[callno] = owner
        self._shared.lanes[callno] = self.lane_index
        self._take(out)
        return callno

    def allocate_callno(self, owner: Owner, now: float) -> int:
        """A call number for a dialog the endpoint does not run (registration)."""
        callno = self.endpoint.allocate_callno(now)
        self._owners[callno] = owner
        self._shared.lanes[callno] = self.lane_index
        return callno

    def release_callno(self, callno: int, now: float) -> None:
        self.endpoint.release_callno(callno, now)
        self._owners.pop(callno, None)
        self._shared.lanes.pop(callno, None)

    def send_frames(self, addr: Address, frames: Iterable[FullFrame]) -> None:
        """Frames of a dialog the endpoint does not run (registration)."""
        sender = self._sender
        if sender is None:
            return
        for frame in frames:
            sender.send(frame, addr)

    def answer(self, callno: int, now: float) -> None:
        self._take(self.endpoint.answer(callno, now))

    def reject(
        self, callno: int, now: float, cause: str = "Call rejected", causecode: int = 21
    ) -> None:
        self._take(self.endpoint.reject(callno, now, cause, causecode))

    def hangup(
        self, callno: int, now: float, cause: str | None = None, causecode: int = 16
    ) -> None:
        self._take(self.endpoint.hangup(callno, now, cause, causecode))

    def key(self, callno: int, now: float) -> None:
        self._take(self.endpoint.key(callno, now))

    def unkey(self, callno: int, now: float) -> None:
        self._take(self.endpoint.unkey(callno, now))

    def send_cng(self, callno: int, now: float) -> None:
        self._take(self.endpoint.send_cng(callno, now))

    def send_text(self, callno: int, now: float, text: str) -> None:
        self._take(self.endpoint.send_text(callno, now, text))

    def send_voice_full(self, callno: int, now: float, fmt: int, payload: bytes, ts: int) -> None:
        self._take(self.endpoint.send_voice_full(callno, now, fmt, payload, ts))

    def request_voice_resend(self, callno: int, now: float) -> None:
        self._take(self.endpoint.request_voice_resend(callno, now))

    def set_listening(self, enabled: bool) -> None:
        self.endpoint.set_listening(enabled)

    def set_policy(self, inbound: InboundPolicy) -> None:
        self.endpoint.set_policy(inbound)

    # --- plumbing -----------------------------------------------------------------------------

    def _take(self, out: EndpointOutput) -> None:
        sender = self._sender
        shared = self._shared
        for addr, frame in out.frames:
            if addr == LOCAL_PEER:
                # A local call: the other side of the endpoint takes it once this input is done.
                shared.loopback.append(frame)
                if shared.on_loopback is not None:
                    shared.on_loopback()
            elif sender is not None:
                sender.send(frame, addr)
        for event in out.events:
            if isinstance(event, InboundRejected):
                self._log_refusal(event)
                continue
            lane = self._lane_of(event)  # type: ignore[arg-type]
            shared.queues.setdefault(lane, []).append(event)  # type: ignore[arg-type]
            if lane != self.lane_index and shared.on_pending is not None:
                shared.on_pending(lane)

    def _lane_of(self, event: CallEvent) -> int:
        """The lane a call event goes to: its call's, else (a new inbound call) the lane of
        the number it called, else this one."""
        lanes = self._shared.lanes
        lane = lanes.get(event.callno)
        if lane is None:
            route = self._shared.route
            number = event.called_number if isinstance(event, c.CallIncoming) else None
            lane = route.get(number, self.lane_index) if number is not None else self.lane_index
            lanes[event.callno] = lane
        return lane

    def _log_refusal(self, event: InboundRejected) -> None:
        now = self._clock()
        shared = self._shared
        last = shared.refusal_logged_at
        if last is not None and now - last < REFUSAL_LOG_INTERVAL:
            shared.refusals_unlogged += 1
            return
        more = shared.refusals_unlogged
        who = event.calling_number or event.username or event.addr[0]
        log.info(
            "refused inbound call from %s: %s%s",
            who,
            event.cause,
            f" ({more} more refused since the last report)" if more else "",
        )
        shared.refusal_logged_at, shared.refusals_unlogged = now, 0
