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
from node.events import EventBus, Snapshot
from node.iax2.stateless import stateless_reply
from node.iax2.transport import EngineTransport, FrameBatch

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
        self._stop_requested: Callable[[], None] | None = None
        self.stopping = asyncio.Event()

    # --- wiring -------------------------------------------------------------------------------

    def attach(self, transport: EngineTransport, request_stop: Callable[[], None]) -> None:
        """Connect the engine transport and the daemon's stop trigger."""
        self._transport = transport
        self._stop_requested = request_stop

    # --- state --------------------------------------------------------------------------------

    @property
    def node_id(self) -> str | None:
        reg = self.config.register
        return reg.node_id if reg is not None else None

    def snapshot(self) -> dict[str, Any]:
        """The status snapshot of the spec. It never contains a secret."""
        return {
            "node_id": self.node_id,
            "listening": self.listening,
            "registered": self.registered,
            "calls": [],
            "links": [],
        }

    def counters(self) -> dict[str, int]:
        return self._transport.counters() if self._transport is not None else {}

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

    # --- commands -----------------------------------------------------------------------------

    def request_shutdown(self) -> None:
        """Stop the daemon cleanly, as SIGINT and SIGTERM do."""
        if self._stop_requested is not None:
            self._stop_requested()

    def close(self) -> None:
        """Final step of shutdown: tell every subscriber, then end their streams."""
        self.stopping.set()
        self.bus.close()
