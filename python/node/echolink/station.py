"""EchoLink stations (QSOs), sans-I/O: who may call us, opening, keep-alive, time-out, BYE.

`Stations` holds every QSO of the node, keyed by the station's IP (EchoLink's ports are fixed,
so an address is one station). Inputs are the control and text datagrams the engine hands up
(`control`, `text`), the operator's commands (`connect`, `disconnect`, `send_text`) and
`timer(now)`; each returns one `StationOutput` of actions (datagrams to send, media legs to add
or remove) and events. No I/O, no clock.

- **Opening.** We send an SDES (`packets.build_sdes`) and resend it every `OPEN_RESEND` while
  it is unanswered, giving up after `OPEN_TIMEOUT` as echolib does. echolib resends only with
  its 10 s keep-alive, but SvxLink drops the SDES of a station its cached list does not hold
  yet (and refreshes the list), and ignores a station for about 5 s after a QSO with it ended:
  a resend every 10 s made such a connect take 10 s. The peer's SDES means connected.
- **Keep-alive.** An SDES every `KEEPALIVE` to each station; one that has sent no control for
  `SILENCE_TIMEOUT` (SvxLink's 50 s) is gone.
- **Who may call.** As chan_echolink and SvxLink: the callsign must be listed by the directory
  at the datagram's source IP, and `deny` / `allow` callsign patterns (shell patterns, any case;
  a deny wins) and `max_stations` must let it in. A refused station is told as chan_echolink
  tells it: its first SDES is remembered (and the directory list refreshed, since it may be
  new); if it asks again at least `AUTH_RETRY` later (and within `AUTH_ABANDONED`) and is still
  refused, it gets `REFUSAL_COPIES` BYEs "UN-AUTHORIZED". Each refusal is a `StationRefused`.
- **Closing.** BYE from either side ends the QSO at once (ours is sent once).

Stations are links of the node, numbered `3` + their EchoLink number on six digits (`link_node`).
Media legs get ids from `LEG_BASE` up, outside the IAX2 call-number space.
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from node.echolink import packets as p
from node.echolink.directory import StationList
from node.machine import DeadlineTable, Outbox

__all__ = [
    "AUTH_ABANDONED",
    "AUTH_RETRY",
    "KEEPALIVE",
    "LEG_BASE",
    "OPEN_RESEND",
    "OPEN_TIMEOUT",
    "REFUSAL_COPIES",
    "SILENCE_TIMEOUT",
    "AddLeg",
    "InfoReceived",
    "Policy",
    "RemoveLeg",
    "SendControl",
    "SendText",
    "Station",
    "StationConnected",
    "StationDisconnected",
    "StationEvent",
    "StationOutput",
    "StationRefused",
    "StationState",
    "Stations",
    "TextReceived",
    "link_node",
    "node_of_link",
]

#: An unanswered SDES is sent again this often.
OPEN_RESEND = 1.5
#: Keep-alive SDES to every connected station.
KEEPALIVE = 10.0
#: An opening that nobody answered is given up after this (echolib's 50 s).
OPEN_TIMEOUT = 50.0
#: A station that has sent no control for this long is gone (SvxLink drops a QSO after 50 s).
SILENCE_TIMEOUT = 50.0
#: chan_echolink: a refused station that asks again after 5 s (and within 15 s) gets its BYEs.
AUTH_RETRY = 5.0
AUTH_ABANDONED = 15.0
#: chan_echolink sends a refused station 20 BYEs "to ensure that they receive this".
REFUSAL_COPIES = 20
REFUSAL_REASON = "UN-AUTHORIZED"
#: EchoLink legs' ids: above the 15-bit IAX2 call numbers, so they never collide.
LEG_BASE = 32768
#: The most pending refusals remembered (chan_echolink's MAXPENDING).
MAX_PENDING = 20


def link_node(number: str) -> str:
    """An EchoLink number as a link of the node: `3` and the number on six digits (ASL3's)."""
    return "3" + number.zfill(6)


def node_of_link(node: str) -> str | None:
    """The EchoLink number behind link number `node` (`3` + six digits), else None."""
    if len(node) == 7 and node.startswith("3") and node.isascii() and node.isdigit():
        return node[1:].lstrip("0") or "0"
    return None


class StationState(enum.Enum):
    OPENING = "connecting"
    CONNECTED = "connected"


@dataclass(slots=True)
class Station:
    """One QSO."""

    ip: str
    callsign: str
    #: Its EchoLink number ("" when the directory does not list it any more).
    number: str
    leg: int
    outbound: bool
    state: StationState
    started_at: float
    name: str = ""
    connected_at: float | None = None
    heard_at: float = 0.0
    #: The engine's RX keying for its leg.
    keyed: bool = False
    keyed_at: float | None = None
    unkeyed_at: float | None = None
    texts_in: int = 0

    @property
    def node(self) -> str:
        return link_node(self.number) if self.number else ""

    @property
    def up(self) -> bool:
        return self.state is StationState.CONNECTED


@dataclass(frozen=True, slots=True)
class Policy:
    """Who may connect: `[echolink] allow`, `deny`, `max_stations`."""

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()
    max_stations: int = 10

    def admits(self, callsign: str) -> bool:
        call = callsign.upper()
        if any(fnmatch.fnmatchcase(call, pat.upper()) for pat in self.deny):
            return False
        return any(fnmatch.fnmatchcase(call, pat.upper()) for pat in self.allow)


# --- actions and events -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendControl:
    """A datagram from our control port to `ip`'s."""

    ip: str
    data: bytes


@dataclass(frozen=True, slots=True)
class SendText:
    """A datagram from our audio port to `ip`'s (text)."""

    ip: str
    data: bytes


@dataclass(frozen=True, slots=True)
class AddLeg:
    leg: int
    ip: str


@dataclass(frozen=True, slots=True)
class RemoveLeg:
    leg: int


StationAction = SendControl | SendText | AddLeg | RemoveLeg


class StationEvent:
    """Base of what the stations report."""


@dataclass(frozen=True, slots=True)
class StationConnected(StationEvent):
    callsign: str
    node: str
    ip: str
    outbound: bool


@dataclass(frozen=True, slots=True)
class StationDisconnected(StationEvent):
    callsign: str
    node: str
    ip: str
    #: "bye" (the station hung up), "local" (we did), "timeout" (silent), "unanswered".
    reason: str
    was_connected: bool


@dataclass(frozen=True, slots=True)
class StationRefused(StationEvent):
    callsign: str
    ip: str
    #: "not in the directory at this address", "denied", "full".
    reason: str


@dataclass(frozen=True, slots=True)
class TextReceived(StationEvent):
    callsign: str
    node: str
    text: str


@dataclass(frozen=True, slots=True)
class InfoReceived(StationEvent):
    """A station's information block (its description, who is connected to it)."""

    callsign: str
    node: str
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StationOutput:
    actions: tuple[StationAction, ...] = ()
    events: tuple[StationEvent, ...] = ()
    changed: bool = False


class _Kind(enum.Enum):
    SEND = "send"  # the next SDES (resend or keep-alive)
    SILENCE = "silence"  # heard nothing for too long (or an opening unanswered)


@dataclass(slots=True)
class _Pending:
    """A refused station's first request (chan_echolink's pending slot)."""

    at: float
    callsign: str


@dataclass(slots=True)
class Counters:
    control_in: int = 0
    control_bad: int = 0
    text_in: int = 0
    text_bad: int = 0
    unknown: int = 0
    refused: int = 0


class Stations:
    """Every EchoLink QSO of the node `callsign`."""

    def __init__(
        self,
        callsign: str,
        name: str,
        *,
        policy: Policy,
        directory: Callable[[], StationList],
        note: str | None = None,
        welcome: Iterable[str] = (),
    ) -> None:
        """`directory()` returns the station list as last fetched; `note` goes into our SDES
        (chan_echolink's `AllStar <node>`); `welcome` is the information block a station gets
        when its QSO opens."""
        self.callsign = callsign.upper()
        self.name = name
        self.policy = policy
        self._directory = directory
        self._sdes = p.build_sdes(self.callsign, name, note=note)
        self._welcome = tuple(welcome)
        self._by_ip: dict[str, Station] = {}
        self._timers: dict[str, DeadlineTable[_Kind]] = {}
        self._pending: dict[str, _Pending] = {}
        self.counters = Counters()
        self._out: Outbox[StationAction, StationEvent] = Outbox()
        self._changed = False

    # --- getters ------------------------------------------------------------------------------

    @property
    def stations(self) -> Mapping[str, Station]:
        """By IP."""
        return self._by_ip

    def by_leg(self, leg: int) -> Station | None:
        return next((s for s in self._by_ip.values() if s.leg == leg), None)

    def by_node(self, node: str) -> Station | None:
        return next((s for s in self._by_ip.values() if s.node == node), None)

    def by_callsign(self, callsign: str) -> Station | None:
        call = callsign.upper()
        return next((s for s in self._by_ip.values() if s.callsign == call), None)

    @property
    def full(self) -> bool:
        return len(self._by_ip) >= self.policy.max_stations

    def next_deadline(self) -> float | None:
        times = [t for table in self._timers.values() if (t := table.earliest()) is not None]
        return min(times) if times else None

    # --- inputs -------------------------------------------------------------------------------

    def control(self, data: bytes, ip: str, now: float) -> StationOutput:
        """A datagram on our control port from `ip`."""
        try:
            packet = p.parse_control(data)
        except p.PacketError:
            self.counters.control_bad += 1
            return self._take()
        self.counters.control_in += 1
        station = self._by_ip.get(ip)
        if isinstance(packet, p.Bye):
            if station is not None:
                self._end(station, "bye")
            return self._take()
        if packet is None:
            return self._take()
        if station is None:
            self._inbound(packet, ip, now)
            return self._take()
        station.heard_at = now
        station.name = packet.name
        if packet.callsign != station.callsign:
            station.callsign = packet.callsign
            self._changed = True
        table = self._timers[ip]
        table.set(_Kind.SILENCE, now + SILENCE_TIMEOUT)
        if station.state is StationState.OPENING:
            self._connected(station, now)
            table.set(_Kind.SEND, now + KEEPALIVE)
        return self._take()

    def text(self, data: bytes, ip: str, now: float) -> StationOutput:
        """A text datagram on our audio port from `ip`."""
        station = self._by_ip.get(ip)
        if station is None:
            self.counters.unknown += 1
            return self._take()
        try:
            packet = p.parse_text(data)
        except p.PacketError:
            self.counters.text_bad += 1
            return self._take()
        self.counters.text_in += 1
        station.texts_in += 1
        if isinstance(packet, p.Chat):
            self._out.report(TextReceived(packet.callsign, station.node, packet.message))
        else:
            self._out.report(InfoReceived(station.callsign, station.node, packet.lines))
        return self._take()

    def connect(
        self, callsign: str, number: str, ip: str, now: float, leg: int | None = None
    ) -> StationOutput:
        """Open a QSO with the listed station `callsign` (EchoLink `number`) at `ip`."""
        if ip in self._by_ip:
            return self._take()
        station = Station(
            ip,
            callsign.upper(),
            number,
            self._free_leg() if leg is None else leg,
            outbound=True,
            state=StationState.OPENING,
            started_at=now,
            heard_at=now,
        )
        self._by_ip[ip] = station
        table: DeadlineTable[_Kind] = DeadlineTable()
        table.set(_Kind.SEND, now + OPEN_RESEND)
        table.set(_Kind.SILENCE, now + OPEN_TIMEOUT)
        self._timers[ip] = table
        self._out.send(SendControl(ip, self._sdes))
        self._changed = True
        return self._take()

    def disconnect(self, ip: str, now: float) -> StationOutput:
        """End the QSO with `ip`: BYE, the leg goes."""
        self._hang_up(ip)
        return self._take()

    def disconnect_all(self, now: float) -> StationOutput:
        for ip in list(self._by_ip):
            self._hang_up(ip)
        return self._take()

    def send_text(self, ip: str, message: str) -> StationOutput:
        """A chat line from us to one station (`PacketError` for text that cannot go)."""
        if ip in self._by_ip:
            self._out.send(SendText(ip, p.build_chat(self.callsign, message)))
        return self._take()

    def rx_keyed(self, leg: int, keyed: bool, now: float) -> StationOutput:
        station = self.by_leg(leg)
        if station is not None and station.keyed != keyed:
            station.keyed = keyed
            if keyed:
                station.keyed_at = now
            else:
                station.unkeyed_at = now
            self._changed = True
        return self._take()

    def directory_changed(self) -> StationOutput:
        """A new station list: numbers of stations it lists now."""
        listed = self._directory()
        for station in self._by_ip.values():
            entry = listed.by_call(station.callsign)
            if entry is not None and entry.node != station.number:
                station.number = entry.node
                self._changed = True
        return self._take()

    def timer(self, now: float) -> StationOutput:
        for ip, table in list(self._timers.items()):
            station = self._by_ip[ip]
            due = table.due(now)
            if _Kind.SILENCE in due:
                opening = station.state is StationState.OPENING
                if opening:
                    # Whoever we called never answered: tell it we gave up, as echolib does.
                    self._out.send(SendControl(ip, p.build_bye()))
                self._end(station, "unanswered" if opening else "timeout")
                continue
            if _Kind.SEND in due:
                self._out.send(SendControl(ip, self._sdes))
                opening = station.state is StationState.OPENING
                table.set(_Kind.SEND, now + (OPEN_RESEND if opening else KEEPALIVE))
        for ip, pending in list(self._pending.items()):
            if now - pending.at >= AUTH_ABANDONED:
                del self._pending[ip]
        return self._take()

    # --- inside -------------------------------------------------------------------------------

    def _hang_up(self, ip: str) -> None:
        station = self._by_ip.get(ip)
        if station is not None:
            self._out.send(SendControl(ip, p.build_bye()))
            self._end(station, "local")

    def _free_leg(self) -> int:
        used = {s.leg for s in self._by_ip.values()}
        leg = LEG_BASE
        while leg in used:
            leg += 1
        return leg

    def _refusal(self, callsign: str, ip: str) -> str | None:
        if not self.policy.admits(callsign):
            return "denied"
        if not self._directory().listed_at(callsign, ip):
            return "not in the directory at this address"
        if self.full:
            return "full"
        return None

    def _inbound(self, sdes: p.Sdes, ip: str, now: float) -> None:
        reason = self._refusal(sdes.callsign, ip)
        if reason is None:
            self._pending.pop(ip, None)
            entry = self._directory().by_call(sdes.callsign)
            station = Station(
                ip,
                sdes.callsign,
                entry.node if entry is not None else "",
                self._free_leg(),
                outbound=False,
                state=StationState.OPENING,
                started_at=now,
                name=sdes.name,
                heard_at=now,
            )
            self._by_ip[ip] = station
            table: DeadlineTable[_Kind] = DeadlineTable()
            table.set(_Kind.SEND, now + KEEPALIVE)
            table.set(_Kind.SILENCE, now + SILENCE_TIMEOUT)
            self._timers[ip] = table
            self._out.send(SendControl(ip, self._sdes))
            self._connected(station, now)
            if self._welcome:
                self._out.send(SendText(ip, p.build_info(self._welcome)))
            return
        pending = self._pending.get(ip)
        if pending is None or now - pending.at >= AUTH_ABANDONED:
            if len(self._pending) >= MAX_PENDING:
                oldest = min(self._pending, key=lambda k: self._pending[k].at)
                del self._pending[oldest]
            self._pending[ip] = _Pending(now, sdes.callsign)
            self.counters.refused += 1
            self._out.report(StationRefused(sdes.callsign, ip, reason))
        elif now - pending.at >= AUTH_RETRY:
            bye = p.build_bye(REFUSAL_REASON)
            for _ in range(REFUSAL_COPIES):
                self._out.send(SendControl(ip, bye))
            del self._pending[ip]

    def _connected(self, station: Station, now: float) -> None:
        station.state = StationState.CONNECTED
        station.connected_at = now
        self._out.send(AddLeg(station.leg, station.ip))
        self._out.report(
            StationConnected(station.callsign, station.node, station.ip, station.outbound)
        )
        self._changed = True

    def _end(self, station: Station, reason: str) -> None:
        del self._by_ip[station.ip]
        del self._timers[station.ip]
        if station.up:
            self._out.send(RemoveLeg(station.leg))
        self._out.report(
            StationDisconnected(station.callsign, station.node, station.ip, reason, station.up)
        )
        self._changed = True

    def _take(self) -> StationOutput:
        actions, events = self._out.take()
        changed, self._changed = self._changed, False
        return StationOutput(actions, events, changed or bool(events))
