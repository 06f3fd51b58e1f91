"""What the link network reports: one frozen event per occurrence, based on `LinkEvent`.

`LinkNetwork` (network.py) returns them, in order, in its `LinkOutput`. Each names the linked
node and, when there is one, our call number of the link's call.
"""

from __future__ import annotations

from dataclasses import dataclass

from node.links import text as t
from node.links.link import LinkMode

__all__ = [
    "LinkConnected",
    "LinkDisconnected",
    "LinkEvent",
    "LinkKeyed",
    "MessageReceived",
    "RemoteDigitReceived",
    "TelemetryReceived",
]


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """Base of what the network reports."""

    #: The linked node.
    node: str
    #: Our IAX2 call number of the link's call, or None when there is none (yet).
    callno: int | None


@dataclass(frozen=True, slots=True)
class LinkConnected(LinkEvent):
    mode: LinkMode
    direction: str


@dataclass(frozen=True, slots=True)
class LinkDisconnected(LinkEvent):
    """The link went down (or never came up); `reason` is safe to show."""

    reason: str


@dataclass(frozen=True, slots=True)
class LinkKeyed(LinkEvent):
    """The link's receiver keyed (`keyed`) or unkeyed."""

    keyed: bool


@dataclass(frozen=True, slots=True)
class TelemetryReceived(LinkEvent):
    """`T` telemetry from another node arrived over the link (forwarded already)."""

    telemetry: t.Telemetry


@dataclass(frozen=True, slots=True)
class MessageReceived(LinkEvent):
    message: t.Message


@dataclass(frozen=True, slots=True)
class RemoteDigitReceived(LinkEvent):
    """A `D` digit addressed to us (remote command mode of the sending node)."""

    digit: str
