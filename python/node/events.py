"""Events the node emits, and the in-process bus that fans them out.

Every event is a frozen dataclass with a wire form (`to_json()`), the JSON object the spec's
event table describes, with its `event` discriminator. Subscribers (SSE clients, the TUI, the
announcer) each get a bounded queue. A subscriber that stops reading is dropped instead of ever
blocking the controller: the node's state must not wait on a slow browser.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

__all__ = [
    "AnnouncementFinished",
    "AnnouncementStarted",
    "Dtmf",
    "EchoLinkEvent",
    "Event",
    "EventBus",
    "Hangup",
    "Health",
    "IncomingCall",
    "Levels",
    "Link",
    "Radio",
    "RegisterFailed",
    "Registered",
    "Scheduled",
    "Shutdown",
    "Snapshot",
    "Subscription",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event. `name` is the value of the `event` field on the wire."""

    name: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The event as the JSON object sent to clients."""
        body: dict[str, Any] = {"event": self.name}
        for f in fields(self):
            body[f.name] = getattr(self, f.name)
        return body


@dataclass(frozen=True, slots=True)
class Snapshot(Event):
    """The full status snapshot, sent whenever state changed and first on every connection."""

    name: ClassVar[str] = "snapshot"
    #: The snapshot object (`node_id`, `listening`, `registered`, `calls`, `links`, ...).
    status: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, **self.status}


@dataclass(frozen=True, slots=True)
class IncomingCall(Event):
    """An inbound call arrived."""

    name: ClassVar[str] = "incoming_call"
    #: The caller's node number or name as it presented itself.
    from_: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, "from": self.from_}


@dataclass(frozen=True, slots=True)
class Registered(Event):
    """Registration with the registrar succeeded."""

    name: ClassVar[str] = "registered"


@dataclass(frozen=True, slots=True)
class RegisterFailed(Event):
    """Registration failed; `reason` is safe to show (never a secret)."""

    name: ClassVar[str] = "register_failed"
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Hangup(Event):
    """A call ended."""

    name: ClassVar[str] = "hangup"
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Dtmf(Event):
    """A DTMF digit was received (on a call, a link, or from AMI `rpt fun`)."""

    name: ClassVar[str] = "dtmf"
    #: The call's id (as in the snapshot's `calls`, or the link's `call`); None for digits
    #: that came over AMI.
    call: int | None = 0
    #: The digit; "" when the inter-digit time-out (not a digit) completed the sequence.
    digit: str = ""
    #: The link command a completed `*` sequence maps to, e.g. "*32000 connect 2000" (set by
    #: the DTMF command mapper, only with `[dtmf] enabled`).
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"event": self.name, "call": self.call, "digit": self.digit}
        if self.command is not None:
            body["command"] = self.command
        return body


@dataclass(frozen=True, slots=True)
class Scheduled(Event):
    """*Extension*: `[schedule]` ran a macro at its minute."""

    name: ClassVar[str] = "schedule"
    #: The macro's number and its digits.
    macro: str = ""
    digits: str = ""
    #: What its commands did (or why it was refused).
    result: str = ""


@dataclass(frozen=True, slots=True)
class AnnouncementStarted(Event):
    """An announcement began playing (its first 20 ms frame went out)."""

    name: ClassVar[str] = "announcement_started"
    #: "id" (station ID), "event" (`[announce.events.*]`, link connects and disconnects),
    #: "command" (the answer to a DTMF command such as `*70`), or "telemetry" (tones other
    #: parts of the node play, e.g. courtesy tones).
    kind: str = ""


@dataclass(frozen=True, slots=True)
class AnnouncementFinished(Event):
    """An announcement ended."""

    name: ClassVar[str] = "announcement_finished"
    #: As in `AnnouncementStarted`.
    kind: str = ""
    #: False when it was cut short (stopped, or refused by the engine) rather than played out.
    completed: bool = True


@dataclass(frozen=True, slots=True)
class Link(Event):
    """A link lifecycle edge: `kind` is "connected", "disconnected", "keyed", or "degraded" /
    "recovered" (its loss or round-trip time crossed `[links] warn_loss_pct` / `warn_rtt_ms`)."""

    name: ClassVar[str] = "link"
    kind: str = ""
    #: The linked node (our own node number for the operator's push-to-talk; None when this
    #: node has no number).
    node: str | None = None
    #: The link's call id, or None (no call yet, or the operator's push-to-talk).
    call: int | None = None
    #: Why a link went down (disconnected), or why a key ended (e.g. the TX time-out).
    reason: str | None = None
    #: The new keyed state (keyed).
    keyed: bool | None = None
    #: "transceive" or "monitor" (connected).
    mode: str | None = None
    #: "inbound" or "outbound" (connected).
    direction: str | None = None
    #: degraded / recovered: the worse direction's loss over the last window (percent, None
    #: when unknown), the round-trip time (ms, None before a sample), and the thresholds.
    loss_pct: float | None = None
    rtt_ms: int | None = None
    warn_loss_pct: float | None = None
    warn_rtt_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "event": self.name,
            "kind": self.kind,
            "node": self.node,
            "call": self.call,
        }
        if self.kind in ("degraded", "recovered"):
            # The figures are part of these kinds even when unknown (null).
            for key in ("loss_pct", "rtt_ms", "warn_loss_pct", "warn_rtt_ms"):
                body[key] = getattr(self, key)
        for key in ("reason", "keyed", "mode", "direction"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        return body


@dataclass(frozen=True, slots=True)
class Health(Event):
    """Every few seconds while there are calls or links: each one's `health` object (as in the
    snapshot), since the figures change without any state change that would send a snapshot."""

    name: ClassVar[str] = "health"
    #: `{"id": <call id>, "health": {...}}` per plain call.
    calls: tuple[Mapping[str, Any], ...] = ()
    #: `{"node": ..., "call": ..., "health": {...}}` per link.
    links: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, "calls": list(self.calls), "links": list(self.links)}


@dataclass(frozen=True, slots=True)
class Levels(Event):
    """Every second while there are calls or links, or the local source is keyed: each one's
    loudness meters, what arrives and what we send (docs/control-api.md, "Levels")."""

    name: ClassVar[str] = "levels"
    #: `{"id": <call id>, "rx": {...}, "tx": {...}, "gain_db": ...}` per plain call.
    calls: tuple[Mapping[str, Any], ...] = ()
    #: `{"node": ..., "call": ..., "rx": {...}, "tx": {...}, "gain_db": ...}` per link.
    links: tuple[Mapping[str, Any], ...] = ()
    #: The local radio's `{"rx": {...}, "tx": {...}}` (None without one).
    radio: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.name,
            "calls": list(self.calls),
            "links": list(self.links),
            "radio": None if self.radio is None else dict(self.radio),
        }


@dataclass(frozen=True, slots=True)
class Radio(Event):
    """A radio edge: `kind` "ptt" (the transmitter keyed or released), "carrier" (the
    receiver's squelch opened or closed); a USRP radio's "caller" (the digital side's caller
    while they talk) and "peer" (`on` False: the peer went quiet mid-transmission)."""

    name: ClassVar[str] = "radio"
    kind: str = ""
    #: Keyed (ptt) or open (carrier).
    on: bool = False
    #: Why: a PTT release's cause (hang time over, TX time-out, shutdown), or why an open
    #: squelch did not key the node (the D-Star guard's refusal).
    reason: str | None = None
    #: A USRP radio's digital caller (`kind` "caller"): callsign, source_id, talkgroup...
    caller: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"event": self.name, "kind": self.kind, "on": self.on}
        if self.reason is not None:
            body["reason"] = self.reason
        if self.caller is not None:
            body["caller"] = dict(self.caller)
        return body


@dataclass(frozen=True, slots=True)
class EchoLinkEvent(Event):
    """The EchoLink station (`[echolink]`): `kind` "logged_in" / "directory_failed" (the
    directory login, `server`, `reason`), "refused" (a station that may not connect: `callsign`,
    `ip`, `reason`), "text" (a chat line from a connected station: `callsign`, `node`, `text`),
    "info" (a station's information block, its lines joined by newlines in `text`).
    Stations connecting and leaving are `link` events (they are links `3<number>`)."""

    name: ClassVar[str] = "echolink"
    kind: str = ""
    callsign: str | None = None
    node: str | None = None
    ip: str | None = None
    server: str | None = None
    reason: str | None = None
    text: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"event": self.name, "kind": self.kind}
        for key in ("callsign", "node", "ip", "server", "reason", "text"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        return body


@dataclass(frozen=True, slots=True)
class Shutdown(Event):
    """The daemon is stopping: the last event every subscriber receives."""

    name: ClassVar[str] = "shutdown"


class Subscription:
    """One subscriber's bounded queue. Iterate with `await sub.get()`; `closed` ends it."""

    def __init__(
        self, bus: EventBus, maxsize: int, on_overflow: Callable[[], None] | None = None
    ) -> None:
        self._bus = bus
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize)
        self.closed = False
        #: Set when the bus dropped this subscriber because it fell behind.
        self.overflowed = False
        #: Called (once, synchronously, from `publish`) when the bus drops this subscriber: the
        #: owner of a stalled connection cuts it here, since the subscriber itself is stuck.
        self.on_overflow = on_overflow

    async def get(self) -> Event | None:
        """The next event, or None once the subscription is closed."""
        if self.closed and self.queue.empty():
            return None
        return await self.queue.get()

    def close(self) -> None:
        self._bus.unsubscribe(self)


class EventBus:
    """Fan-out of events to bounded per-subscriber queues; `publish` never blocks."""

    def __init__(self, queue_size: int = 256) -> None:
        self._subs: list[Subscription] = []
        self._queue_size = queue_size
        #: Subscribers dropped so far for falling behind.
        self.dropped = 0

    def subscribe(self, on_overflow: Callable[[], None] | None = None) -> Subscription:
        """A new subscriber; `on_overflow` is called if it is ever dropped for falling behind."""
        sub = Subscription(self, self._queue_size, on_overflow)
        self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
        if not sub.closed:
            sub.closed = True
            self._offer(sub, None)

    @property
    def subscriber_count(self) -> int:
        return len(self._subs)

    def publish(self, event: Event) -> None:
        for sub in list(self._subs):
            try:
                sub.queue.put_nowait(event)
            except asyncio.QueueFull:
                log.warning(
                    "event subscriber fell %d events behind; dropping it", sub.queue.qsize()
                )
                sub.overflowed = True
                self.dropped += 1
                self.unsubscribe(sub)
                if sub.on_overflow is not None:
                    try:
                        sub.on_overflow()
                    except Exception:
                        # A failing subscriber's owner must not cost the others their event.
                        log.exception("dropping an event subscriber failed")

    def close(self) -> None:
        """Send `Shutdown` to everyone, then end every subscription."""
        self.publish(Shutdown())
        for sub in list(self._subs):
            self.unsubscribe(sub)

    @staticmethod
    def _offer(sub: Subscription, item: Event | None) -> None:
        # The end marker must get through even to a full queue: make room by dropping the
        # oldest event, which a closing subscriber no longer needs.
        while True:
            try:
                sub.queue.put_nowait(item)
                return
            except asyncio.QueueFull:
                sub.queue.get_nowait()
