"""One station of a shared engine: the engine as a hosted node other than the first sees it.

A process hosting several nodes runs one engine (one socket, one 20 ms clock) mixing one
conference per node. Each node's `MediaBridge` drives its own station through this view, which
addresses every command, device and USRP radio to that station; what is not a station's (the
socket, counters, the rate) is the engine's own. The first node drives the engine itself, so a
one-node process is exactly what it was.
"""

from __future__ import annotations

import functools
from typing import Any

from node._core import Engine

__all__ = ["STATION_METHODS", "LocalLinks", "StationEngine", "station_engine"]

#: The engine's methods that act on one station (they take `station=`).
STATION_METHODS = frozenset(
    {
        "add_leg",
        "remove_leg",
        "set_leg_mode",
        "set_leg_keying",
        "set_leg_codec",
        "push_voice",
        "push_control",
        "set_leg_dtmf",
        "set_local_dtmf",
        "play",
        "stop_playing",
        "set_parrot",
        "set_mix_minus",
        "set_local_radio",
        "set_local_keyed",
        "set_local_gated",
        "open_device",
        "open_usrp",
        "add_local_link",
    }
)


class StationEngine:
    """`engine` with every station command addressed to `station`."""

    def __init__(self, engine: Engine, station: int) -> None:
        if not 0 <= station < engine.stations:
            raise ValueError(f"station {station} (the engine has {engine.stations})")
        self.engine = engine
        self.station = station

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.engine, name)
        if name in STATION_METHODS:
            return functools.partial(attr, station=self.station)
        return attr


def station_engine(engine: Engine, station: int) -> Engine | StationEngine:
    """The engine for station `station`: itself for the first, a view for the others."""
    return engine if station == 0 else StationEngine(engine, station)


class LocalLinks:
    """The media of local links (a link between two nodes of the host, a call the port hands
    from one side of the endpoint to the other): each end's leg is paired with the other end's
    in the engine (`Engine.add_local_link`) once both nodes asked for theirs, so the audio
    crosses between the two conferences with no codec and no datagram."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        #: Ends whose other end has not asked yet: call number -> (station, mode).
        self._waiting: dict[int, tuple[int, str]] = {}
        #: Ends paired in the engine: call number -> station.
        self._paired: dict[int, int] = {}

    def add(self, station: int, callno: int, peer_callno: int, mode: str) -> None:
        """Node `station`'s end of a local call wants its leg (`peer_callno` is the other end's
        call number, on the same port)."""
        other = self._waiting.pop(peer_callno, None)
        if other is None:
            self._waiting[callno] = (station, mode)
            return
        peer_station, peer_mode = other
        self._engine.add_local_link(
            callno, peer_station, peer_callno, mode, peer_mode, station=station
        )
        self._paired[callno] = station
        self._paired[peer_callno] = peer_station

    def owns(self, callno: int) -> bool:
        """Whether `callno` is an end of a local link (waiting or paired)."""
        return callno in self._waiting or callno in self._paired

    def set_mode(self, callno: int, mode: str) -> bool:
        """A waiting end's mode changes before it is paired (True); False when it is paired
        (the engine's leg takes the change) or no end."""
        waiting = self._waiting.get(callno)
        if waiting is None:
            return False
        self._waiting[callno] = (waiting[0], mode)
        return True

    def remove(self, callno: int) -> None:
        """The end's call ended: its leg goes (the engine ends the pairing with it)."""
        self._waiting.pop(callno, None)
        station = self._paired.pop(callno, None)
        if station is not None:
            self._engine.remove_leg(callno, station=station)
