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

__all__ = ["STATION_METHODS", "StationEngine", "station_engine"]

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
