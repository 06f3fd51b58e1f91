"""The host: every node of one process on one IAX2 port.

One node per process is the common case; an operator with a hub beside a repeater, or two radios
on one Pi, declares more (`[nodes.<number>]`, docs/config.md). The host gives each node its own
router (`Controller`: its services, its conference's station in the engine, its event bus) over
one shared port: the same socket, call numbers and call tokens (`node.port`'s lanes). It routes
between them and nothing else:

- received frames: a node's registration answer to that node, every other frame to the port,
  whose call events land in the lane of their call's node (an inbound call: the node it called);
- engine events: a further station's (`StationEvent`) to that station's node, the rest to the
  first node;
- call events one node's input queued for another node: that node takes them at once after.

The first node is the host's front door for everything that names no node (the top-level
control endpoints, the AMI's default, the TUI), so a one-node process is what it always was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence

from node.config import NodeConfig
from node.controller import Controller, own_port
from node.events import EventBus
from node.iax2.transport import EngineEvents, FrameBatch, StationEvent
from node.secrets import SecretStore

__all__ = ["Host"]

log = logging.getLogger(__name__)


class Host:
    """The routers of the nodes of one process, over one shared IAX2 port."""

    def __init__(
        self,
        config: NodeConfig,
        secrets: SecretStore,
        clock: Callable[[], float] = time.monotonic,
        *,
        buses: Sequence[EventBus] | None = None,
    ) -> None:
        """One router per node of `config.hosted`, each with its own bus (`buses`, in order,
        or new ones)."""
        hosted = config.hosted
        if buses is None:
            buses = [EventBus() for _ in hosted]
        if len(buses) != len(hosted):
            raise ValueError(f"{len(buses)} event buses for {len(hosted)} nodes")
        self.config = config
        controllers: list[Controller] = []
        several = len(hosted) > 1
        numbers = tuple(n.node_id or "" for n in hosted) if several else ()
        port = own_port(config, secrets, clock, controllers, numbers=numbers)
        for i, (node, bus) in enumerate(zip(hosted, buses, strict=True)):
            controllers.append(Controller(node, bus, secrets, clock, port=port.lane(i)))
        self.controllers: tuple[Controller, ...] = tuple(controllers)
        for c in controllers:
            c.hosted = tuple(n.node_id or "" for n in hosted)
        self._pending: set[int] = set()
        self._draining = False
        self._scheduled = False
        self._port = port
        if several:
            port.route_inbound(
                {n: i for i, n in enumerate(numbers)}, self._lane_pending, self._loopback_pending
            )

    # --- what the front doors read ------------------------------------------------------------

    @property
    def first(self) -> Controller:
        """The first node: the one every endpoint that names no node acts on."""
        return self.controllers[0]

    def __iter__(self) -> Iterator[Controller]:
        return iter(self.controllers)

    def __len__(self) -> int:
        return len(self.controllers)

    # --- the edges' inputs --------------------------------------------------------------------

    def on_frames(self, batch: FrameBatch) -> None:
        """Each node's registration answers to that node, the rest to the first node's router,
        which hands them to the port (each call event lands in its node's lane)."""
        controllers = self.controllers
        if len(controllers) == 1:
            controllers[0].on_frames(batch)
            return
        mine: dict[int, FrameBatch] = {}
        for addr, frame in batch:
            owner = next((i for i, c in enumerate(controllers) if c.owns_frame(addr, frame)), 0)
            mine.setdefault(owner, []).append((addr, frame))
        for i, frames in mine.items():
            controllers[i].on_frames(frames)
        self._drain()

    def on_engine_events(self, events: EngineEvents) -> None:
        """A further station's events to its node, the rest to the first node."""
        controllers = self.controllers
        if len(controllers) == 1:
            controllers[0].on_engine_events(events)
            return
        split: dict[int, EngineEvents] = {}
        for event in events:
            station = 0
            if isinstance(event, StationEvent):
                station, event = event.station, event.event
            if not 0 <= station < len(controllers):
                log.warning("engine event of station %d, which no node has: %r", station, event)
                continue
            split.setdefault(station, []).append(event)
        for station, mine in split.items():
            controllers[station].on_engine_events(mine)
        self._drain()

    def _lane_pending(self, lane: int) -> None:
        """The port queued call events for node `lane` while another node's input ran: that
        node takes them once the running input is done (never inside it, where a router would
        be entered again halfway through its own work)."""
        self._pending.add(lane)
        self._schedule()

    def _loopback_pending(self) -> None:
        """A local call sent frames: the endpoint receives them once the running input is done
        (as if the socket had), never inside it."""
        self._schedule()

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a test driving the routers): the next input's drain takes them
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._drain)

    def drain(self) -> None:
        """Hand every node the call events waiting for it (after an input that came to one
        node directly: a command, a timer)."""
        self._drain()

    def _drain(self) -> None:
        """Let each node with call events waiting take them (they may queue more for others)."""
        self._scheduled = False
        if self._draining:
            return
        self._draining = True
        try:
            while self._pending or self._port.has_loopback():
                looped = self._port.take_loopback()
                if looped:
                    self.first.on_frames(looped)
                if not self._pending:
                    continue
                lane = min(self._pending)
                self._pending.discard(lane)
                try:
                    self.controllers[lane].take_port_events()
                except Exception:
                    # One node's failure must not cost the others their events.
                    node = self.controllers[lane].node_id
                    log.exception("node %s failed on its call events", node)
        finally:
            self._draining = False
