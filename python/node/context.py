"""What the controller hands every service at start-up.

One object, so that a service needs no import of the controller and a reload replaces the
running configuration in one place: services read `ctx.config` when they act, never a copy. It
holds no way back to the router: what follows from an input, a service returns
(`node.effects.Effects`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from node.config import NodeConfig
from node.events import EventBus
from node.secrets import SecretStore

__all__ = ["NodeContext"]


@dataclass(slots=True)
class NodeContext:
    """The running configuration, the bus, the clock and the secrets."""

    #: The running configuration; `Controller.reload` replaces it.
    config: NodeConfig
    secrets: SecretStore
    bus: EventBus
    #: Monotonic seconds (the loop's clock).
    clock: Callable[[], float]
    #: Set once the node is shutting down (no more announcements of what ends).
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
