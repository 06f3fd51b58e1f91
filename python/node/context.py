"""What the controller hands every service at start-up.

One object, so that a service needs no import of the controller and a reload replaces the
running configuration in one place: services read `ctx.config` when they act, never a copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from node.config import NodeConfig
from node.events import EventBus
from node.secrets import SecretStore

__all__ = ["NodeContext"]


def _nothing() -> None:
    return None


@dataclass(slots=True)
class NodeContext:
    """The running configuration, the bus, the clock and the secrets, with the router's two
    callbacks."""

    #: The running configuration; `Controller.reload` replaces it.
    config: NodeConfig
    secrets: SecretStore
    bus: EventBus
    #: Monotonic seconds (the loop's clock).
    clock: Callable[[], float]
    #: Set once the node is shutting down (no more announcements of what ends).
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    #: Publish a `Snapshot` of the whole node: a service's state changed.
    changed: Callable[[], None] = _nothing
    #: A machine's deadline may have moved: re-arm the node's one timer.
    rearm: Callable[[], None] = _nothing
