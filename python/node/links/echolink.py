"""The EchoLink service: the node's EchoLink station, its directory presence and its QSOs.

It owns the sans-I/O `DirectoryClient` and `Stations` and carries out what they ask: datagrams
and media legs through the engine's EchoLink side (`echolink/udp.py`), directory exchanges as
`Spawn` work (`dir_transport.exchange`). Like every service it takes inputs from the router
(`datagrams`, `rx_keyed`, `timer`, the operator's `link` / `send_text`) and returns `Effects`;
its deadline is in the router's table (`TimerKind.ECHOLINK`). It never calls up.

EchoLink stations are links of the node (numbered `3` + their EchoLink number on six digits,
as ASL3 numbers them): they are published as `link` events, listed in the snapshot's `links`,
in AMI's link reports and in the `L` lists we send to IAX2 links (through `link_entries`, which
the links service reads).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from node.context import NodeContext
from node.credential import Secret
from node.echolink import directory as d
from node.echolink import station as s
from node.echolink.dir_transport import ExchangeFailed, exchange
from node.effects import NOTHING, Announce, Effects, LinksChanged, Spawn
from node.errors import CommandError
from node.events import EchoLinkEvent, Link
from node.views import LinkView

__all__ = ["CONTROL", "TEXT", "EchoLinkEdge", "EchoLinkService", "local_hhmm"]

log = logging.getLogger(__name__)

#: The kinds of datagram the engine hands up and sends.
CONTROL = "control"
TEXT = "text"


class EchoLinkEdge(Protocol):
    """The engine's EchoLink side (`echolink/udp.py`)."""

    def send(self, kind: str, data: bytes, ip: str) -> None: ...
    def add_leg(self, leg: int, ip: str) -> None: ...
    def remove_leg(self, leg: int) -> None: ...
    def counters(self) -> dict[str, int]: ...
    def leg_stats(self, leg: int) -> dict[str, int] | None: ...


def local_hhmm() -> str:
    """The local time of day as the directory shows it (HH:MM)."""
    return time.strftime("%H:%M")


class EchoLinkService:
    """The node's EchoLink station (`[echolink]`)."""

    def __init__(
        self,
        ctx: NodeContext,
        password: Secret,
        *,
        clock_hhmm: Callable[[], str] = local_hhmm,
    ) -> None:
        config = ctx.config.echolink
        assert config is not None
        self._ctx = ctx
        self.config = config
        self.directory = d.DirectoryClient(
            config.callsign,
            password,
            config.location,
            config.directory,
            local_hhmm=clock_hhmm,
        )
        node = ctx.config.node_id
        welcome = [line for line in config.welcome.split("\n") if line.strip()]
        self.stations = s.Stations(
            config.callsign,
            config.sysop,
            policy=s.Policy(config.allow, config.deny, config.max_stations),
            directory=lambda: self.directory.list,
            note=f"AllStar {node}" if node else None,
            welcome=welcome,
        )
        self.edge: EchoLinkEdge | None = None
        self._started = False

    # --- getters ------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        times = [t for t in (self.directory.next_deadline(), self.stations.next_deadline()) if t]
        return min(times) if times else None

    def owns_leg(self, leg: int) -> bool:
        return self.stations.by_leg(leg) is not None

    def handles(self, node: str) -> bool:
        """Whether a link command's `node` means an EchoLink station: `3` + six digits, or a
        callsign the directory lists (or a connected station's)."""
        if s.node_of_link(node) is not None:
            return True
        if not node or (node.isascii() and node.isdigit()):
            return False
        return (
            self.directory.list.by_call(node) is not None
            or self.stations.by_callsign(node) is not None
        )

    def link_entries(self) -> tuple[tuple[str, str], ...]:
        """Each station as an `L` list entry (mode letter, link number): connected ones
        transceive, the others connecting."""
        return tuple(
            ("T" if st.up else "C", st.node) for st in self.stations.stations.values() if st.node
        )

    def snapshot(self, now: float) -> dict[str, Any]:
        """The snapshot's `echolink` object."""
        return {
            "callsign": self.config.callsign,
            "node_number": self.config.node_number,
            "directory": self.directory.snapshot(now),
            "stations": [self._station_json(st, now) for st in self.stations.stations.values()],
            "counters": dataclasses.asdict(self.stations.counters),
        }

    def link_json(self, now: float) -> list[dict[str, Any]]:
        """The stations as entries of the snapshot's `links` (the same keys as IAX2 links)."""
        out = []
        for st in self.stations.stations.values():
            out.append(
                {
                    "node": st.node or st.callsign,
                    "call": None,
                    "mode": "transceive" if st.up else "connecting",
                    "direction": "outbound" if st.outbound else "inbound",
                    "state": st.state.value,
                    "keyed": st.keyed,
                    "last_keyed_s": None if st.keyed_at is None else round(now - st.keyed_at, 1),
                    "connected_s": None
                    if st.connected_at is None
                    else round(now - st.connected_at, 1),
                    "codec": "gsm",
                    "nodes": [],
                    "list_s": None,
                    "permanent": False,
                    "addr": f"{st.ip}:5198",
                    "newkey": None,
                    "echolink": {"callsign": st.callsign, "name": st.name, "leg": st.leg},
                    "health": None,
                }
            )
        return out

    def counters(self) -> dict[str, Any]:
        """`/stats`' `echolink`: the ports' counters and each station's leg (by link number)."""
        edge = self.edge
        if edge is None:
            return {}
        return {
            "ports": edge.counters(),
            "legs": {
                st.node or st.callsign: edge.leg_stats(st.leg)
                for st in self.stations.stations.values()
                if st.up
            },
        }

    def link_views(self) -> tuple[LinkView, ...]:
        """The stations as app_rpt reports EchoLink links (AMI `rpt lstats`, `xstat`)."""
        return tuple(
            LinkView(
                node=st.node or st.callsign,
                addr=(st.ip, 5198),
                callno=None,
                reconnects=0,
                outbound=st.outbound,
                connected_at=st.connected_at,
                up=st.up,
                mode="T",
                keyed=st.keyed,
                keyed_at=st.keyed_at,
                unkeyed_at=st.unkeyed_at,
                echolink=True,
            )
            for st in self.stations.stations.values()
        )

    def lookup(self, by: str, key: str) -> tuple[str, str, str] | None:
        """chan_echolink's `dbget`: (number, callsign, ip) of the station `key` is, `by` its
        number ("nodename"), "callsign" or "ipaddr"; connected stations first (as chan_echolink
        does, for stations behind a relay)."""
        kind = by[:1].lower()
        connected = self.stations.stations.values()
        if kind == "i":
            st = self.stations.stations.get(key)
            entry = next((e for e in self.directory.list.stations if e.ip == key), None)
        elif kind == "c":
            st = self.stations.by_callsign(key)
            entry = self.directory.list.by_call(key)
        else:
            st = next((c for c in connected if c.number and c.number == key.lstrip("0")), None)
            entry = self.directory.list.by_node(key)
        if st is not None and st.number:
            return st.number, st.callsign, st.ip
        return None if entry is None else (entry.node, entry.callsign, entry.ip)

    @staticmethod
    def _station_json(st: s.Station, now: float) -> dict[str, Any]:
        return {
            "node": st.node,
            "callsign": st.callsign,
            "name": st.name,
            "ip": st.ip,
            "state": st.state.value,
            "direction": "outbound" if st.outbound else "inbound",
            "keyed": st.keyed,
            "leg": st.leg,
            "connected_s": None if st.connected_at is None else round(now - st.connected_at, 1),
            "heard_s": round(now - st.heard_at, 1),
            "texts_in": st.texts_in,
        }

    # --- inputs -------------------------------------------------------------------------------

    def start(self, now: float) -> Effects:
        """Log in to the directory."""
        self._started = True
        return self._directory(self.directory.start(now), now)

    def timer(self, now: float) -> Effects:
        fx = self._stations(self.stations.timer(now), now)
        return fx | self._directory(self.directory.timer(now), now)

    def datagrams(self, items: Iterable[tuple[str, bytes, str]], now: float) -> Effects:
        """Control and text datagrams the engine received: (kind, bytes, source IP)."""
        fx = NOTHING
        for kind, data, ip in items:
            if kind == CONTROL:
                fx = fx | self._stations(self.stations.control(data, ip, now), now)
            else:
                fx = fx | self._stations(self.stations.text(data, ip, now), now)
        return fx

    def rx_keyed(self, leg: int, keyed: bool, now: float) -> Effects:
        st = self.stations.by_leg(leg)
        fx = self._stations(self.stations.rx_keyed(leg, keyed, now), now)
        if st is not None and fx.changed:
            self._ctx.bus.publish(Link(kind="keyed", node=st.node, keyed=keyed))
        return fx

    def link(self, action: str, node: str, now: float) -> Effects:
        """A link command for an EchoLink station: connect (monitor is taken as connect, as
        chan_echolink has no monitor mode) or disconnect, by link number or callsign."""
        if action == "disconnect":
            st = self._find(node)
            if st is None:
                raise CommandError(f"EchoLink station {node} is not connected", 404)
            return self._stations(self.stations.disconnect(st.ip, now), now)
        entry = self._listed(node)
        if self.stations.stations.get(entry.ip) is not None:
            raise CommandError(f"EchoLink station {entry.callsign} is already connected", 409)
        if self.stations.full:
            raise CommandError(
                f"already {self.config.max_stations} EchoLink stations (max_stations)", 409
            )
        log.info("EchoLink: calling %s (%s) at %s", entry.callsign, entry.node, entry.ip)
        return self._stations(self.stations.connect(entry.callsign, entry.node, entry.ip, now), now)

    def disconnect_all(self, now: float) -> Effects:
        return self._stations(self.stations.disconnect_all(now), now)

    def send_text(self, node: str | None, text: str, now: float) -> Effects:
        """POST /echolink/text: a chat line to one station (`node`: link number or callsign)
        or, with `node` None, to every connected station."""
        if node is None:
            targets = [st for st in self.stations.stations.values() if st.up]
        else:
            st = self._find(node)
            if st is None:
                raise CommandError(f"EchoLink station {node} is not connected", 404)
            targets = [st]
        fx = NOTHING
        try:
            for st in targets:
                fx = fx | self._stations(self.stations.send_text(st.ip, text), now)
        except ValueError as exc:
            raise CommandError(str(exc), 400) from None
        return fx

    def close(self, now: float) -> None:
        """Shutdown: BYE to every station (the directory is left to expire us)."""
        self._stations(self.stations.disconnect_all(now), now)

    # --- inside -------------------------------------------------------------------------------

    def _find(self, node: str) -> s.Station | None:
        return self.stations.by_node(node) or self.stations.by_callsign(node)

    def _listed(self, node: str) -> d.StationListed:
        listed = self.directory.list
        number = s.node_of_link(node)
        entry = listed.by_node(number) if number is not None else listed.by_call(node)
        if entry is None:
            raise CommandError(
                f"EchoLink station {node} is not in the directory's list "
                f"({len(listed)} stations listed)",
                404,
            )
        return entry

    def _stations(self, out: s.StationOutput, now: float) -> Effects:
        edge = self.edge
        for action in out.actions:
            if edge is None:
                break
            if isinstance(action, s.SendControl):
                edge.send(CONTROL, action.data, action.ip)
            elif isinstance(action, s.SendText):
                edge.send(TEXT, action.data, action.ip)
            elif isinstance(action, s.AddLeg):
                edge.add_leg(action.leg, action.ip)
            elif isinstance(action, s.RemoveLeg):
                edge.remove_leg(action.leg)
        events: list[object] = []
        bus = self._ctx.bus
        for event in out.events:
            if isinstance(event, s.StationConnected):
                log.info("EchoLink station %s (%s) connected", event.callsign, event.node)
                bus.publish(
                    Link(
                        kind="connected",
                        node=event.node,
                        mode="transceive",
                        direction="outbound" if event.outbound else "inbound",
                    )
                )
                events += [Announce("link_connected", node=event.node), LinksChanged()]
            elif isinstance(event, s.StationDisconnected):
                log.info("EchoLink station %s disconnected: %s", event.callsign, event.reason)
                bus.publish(Link(kind="disconnected", node=event.node, reason=event.reason))
                if event.was_connected and not self._ctx.stopping.is_set():
                    events.append(Announce("link_disconnected", node=event.node))
                events.append(LinksChanged())
            elif isinstance(event, s.StationRefused):
                log.info(
                    "EchoLink station %s at %s refused: %s", event.callsign, event.ip, event.reason
                )
                bus.publish(
                    EchoLinkEvent(
                        kind="refused", callsign=event.callsign, ip=event.ip, reason=event.reason
                    )
                )
                if event.reason.startswith("not in the directory"):
                    # It may be new in the directory: refresh (it will ask again).
                    fx = self._directory(self.directory.want_list(now), now)
                    events += fx.events
            elif isinstance(event, s.InfoReceived):
                text = "\n".join(event.lines)
                bus.publish(
                    EchoLinkEvent(kind="info", callsign=event.callsign, node=event.node, text=text)
                )
            elif isinstance(event, s.TextReceived):
                log.info("EchoLink text from %s: %s", event.callsign, event.text)
                bus.publish(
                    EchoLinkEvent(
                        kind="text", callsign=event.callsign, node=event.node, text=event.text
                    )
                )
        status_fx = self._status(now) if out.changed else NOTHING
        return Effects(out.changed, tuple(events)) | status_fx

    def _status(self, now: float) -> Effects:
        """BUSY in the directory while no more stations fit, ONLINE otherwise."""
        if not self._started:
            return NOTHING
        status = d.Status.BUSY if self.stations.full else d.Status.ONLINE
        return self._directory(self.directory.set_status(status, now), now)

    def _directory(
        self, out: tuple[tuple[d.DirectoryRequest, ...], tuple[d.DirectoryEvent, ...]], now: float
    ) -> Effects:
        requests, events = out
        spawns: list[object] = [Spawn(self._exchange(r), f"EchoLink {r.kind}") for r in requests]
        changed = bool(events)
        for event in events:  # each changes the snapshot's `echolink.directory`
            if isinstance(event, d.LoggedIn):
                log.info("EchoLink: logged in to the directory at %s", event.server)
                self._ctx.bus.publish(EchoLinkEvent(kind="logged_in", server=event.server))
            elif isinstance(event, d.LoginFailed):
                log.warning("EchoLink directory %s: %s", event.server, event.reason)
                self._ctx.bus.publish(
                    EchoLinkEvent(kind="directory_failed", server=event.server, reason=event.reason)
                )
            elif isinstance(event, d.ListFetched):
                log.debug("EchoLink: %d stations listed", event.stations)
                self._stations(self.stations.directory_changed(), now)
        return Effects(changed, tuple(spawns)) if changed or spawns else NOTHING

    async def _exchange(self, request: d.DirectoryRequest) -> Effects:
        clock = self._ctx.clock
        try:
            answer = await exchange(request, self.config.bind)
        except ExchangeFailed as exc:
            return self._directory(
                self.directory.failed(request.request_id, str(exc), clock()), clock()
            )
        return self._directory(
            self.directory.completed(request.request_id, answer, clock()), clock()
        )
