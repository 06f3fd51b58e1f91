"""A `NodeContext` for testing one service alone: its bus records what is published."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from node.config import NodeConfig
from node.context import NodeContext
from node.events import EventBus
from node.secrets import SecretStore


@dataclass
class Recorded:
    ctx: NodeContext
    #: Every event published, in order.
    published: list[Any] = field(default_factory=list)


def recording_context(config: NodeConfig, clock: Callable[[], float] = lambda: 0.0) -> Recorded:
    bus = EventBus()
    ctx = NodeContext(config, SecretStore(config, {}), bus, clock)
    rec = Recorded(ctx)
    bus.publish = rec.published.append  # type: ignore[method-assign]
    return rec
