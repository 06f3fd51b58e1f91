"""The controller: the single owner of the node's state.

HTTP handlers and the TUI call its methods and read its snapshot; they never reach into the
engine or the protocol machines. Every state change publishes a `Snapshot` event on the bus.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from node.config import NodeConfig
from node.errors import CommandError
from node.events import EventBus, Snapshot
from node.iax2.stateless import stateless_reply
from node.iax2.transport import EngineEvents, EngineTransport, FrameBatch
from node.media.bridge import MediaBridge

__all__ = ["Controller"]

log = logging.getLogger(__name__)


class Controller:
    """Applies commands, routes received frames, and reports state."""

    def __init__(self, config: NodeConfig, bus: EventBus) -> None:
        self.config = config
        self.bus = bus
        self.listening = True
        self.registered = False
        self._transport: EngineTransport | None = None
        self._bridge: MediaBridge | None = None
        self._stop_requested: Callable[[], None] | None = None
        self.stopping = asyncio.Event()

    # --- wiring -------------------------------------------------------------------------------

    def attach(
        self,
        transport: EngineTransport,
        bridge: MediaBridge,
        request_stop: Callable[[], None],
    ) -> None:
        """Connect the engine transport, the media bridge and the daemon's stop trigger."""
        self._transport = transport
        self._bridge = bridge
        self._stop_requested = request_stop

    @property
    def bridge(self) -> MediaBridge:
        if self._bridge is None:
            raise CommandError("the media bridge is not running", 500)
        return self._bridge

    # --- state --------------------------------------------------------------------------------

    @property
    def node_id(self) -> str | None:
        reg = self.config.register
        return reg.node_id if reg is not None else None

    def snapshot(self) -> dict[str, Any]:
        """The status snapshot of the spec. It never contains a secret."""
        snap: dict[str, Any] = {
            "node_id": self.node_id,
            "listening": self.listening,
            "registered": self.registered,
            "calls": [],
            "links": [],
        }
        if self._bridge is not None:
            snap["bridge"] = self._bridge.topology.to_json()
            snap["audio"] = self._bridge.audio()
        return snap

    def counters(self) -> dict[str, Any]:
        if self._transport is None:
            return {}
        return {**self._transport.counters(), "tick": self._transport.engine.tick_stats()}

    def _changed(self) -> None:
        self.bus.publish(Snapshot(self.snapshot()))

    # --- frames from the engine ---------------------------------------------------------------

    def on_frames(self, batch: FrameBatch) -> None:
        """Handle one drained batch of full frames, in arrival order."""
        transport = self._transport
        for addr, frame in batch:
            reply = stateless_reply(frame)
            if reply.frame is not None and transport is not None:
                transport.send(reply.frame, addr)
            if not reply.handled:
                log.debug("no handler for %r from %s:%d", frame, addr[0], addr[1])

    def on_engine_events(self, events: EngineEvents) -> None:
        """Media events from the engine; calls act on them once call handling is attached."""
        for event in events:
            if event[0] == "command_failed":
                log.warning("media command failed: %s", event[1])

    # --- commands -----------------------------------------------------------------------------

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

    def request_shutdown(self) -> None:
        """Stop the daemon cleanly, as SIGINT and SIGTERM do."""
        if self._stop_requested is not None:
            self._stop_requested()

    def close(self) -> None:
        """Final step of shutdown: stop audio, tell every subscriber, then end their streams."""
        self.stopping.set()
        if self._bridge is not None:
            self._bridge.close()
        self.bus.close()
