"""What one input to a service produces for the rest of the node, and the node-internal events
the router routes between services.

Services never call the router back. Each input they take returns `Effects`: whether the status
snapshot changed, and events for other rooms. The router (`controller.py`) routes every event by
its type to the room that consumes it (its routing table), runs the work a service asks for
(`Spawn`), publishes one snapshot when anything changed, and re-arms its one timer from every
room's next deadline. A service that hands an input to a room below it (the commands to the
links, say) returns what that room returned along with its own effects.

The events here never leave the process: what clients see goes through `events.EventBus`.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHANGED",
    "NOTHING",
    "Announce",
    "AnnounceTelemetry",
    "DigitReceived",
    "DigitSourceGone",
    "Effects",
    "KeyingChanged",
    "LinksChanged",
    "Spawn",
    "merge",
]


@dataclass(frozen=True, slots=True)
class Effects:
    """What followed from one input: the snapshot `changed`, and `events` for the router."""

    changed: bool = False
    events: tuple[object, ...] = ()

    def __or__(self, other: Effects) -> Effects:
        if not (other.changed or other.events):
            return self
        if not (self.changed or self.events):
            return other
        return Effects(self.changed or other.changed, self.events + other.events)

    def __bool__(self) -> bool:
        return self.changed or bool(self.events)


#: Nothing followed.
NOTHING = Effects()
#: Only the snapshot changed.
CHANGED = Effects(changed=True)


def merge(many: Iterable[Effects]) -> Effects:
    """The effects of several inputs, in order."""
    out = NOTHING
    for fx in many:
        out = out | fx
    return out


# --- node-internal events (the router's routing table names the consumer of each) -------------


@dataclass(frozen=True, slots=True)
class DigitReceived:
    """A DTMF digit from `source` ("call 5", "remote 2001", "local", "usrp"); `call` is the call
    the `dtmf` event shows; `inband` when it was decoded from tones. To the commands."""

    source: str
    call: int | None
    digit: str
    inband: bool = False


@dataclass(frozen=True, slots=True)
class DigitSourceGone:
    """`source` ended (its call hung up): its half-typed command and command mode go. To the
    commands."""

    source: str


@dataclass(frozen=True, slots=True)
class Announce:
    """An `[announce.events.<name>]` event happened (it plays when enabled). To the
    announcements."""

    name: str
    peer: str = ""
    node: str = ""


@dataclass(frozen=True, slots=True)
class AnnounceTelemetry:
    """`T` telemetry another node sent over a link. To the announcements."""

    token: str
    args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KeyingChanged:
    """The local source keyed or unkeyed. To the status poster (`[statpost]`)."""


@dataclass(frozen=True, slots=True)
class LinksChanged:
    """A link came up or went down. To the status poster (`[statpost]`)."""


@dataclass(frozen=True, slots=True)
class Spawn:
    """Work that awaits I/O (a lookup, a command that dials): the router runs it as a task and
    takes the `Effects` it returns as those of an input. `what` names it in the log."""

    work: Coroutine[Any, Any, Effects]
    what: str

    def close(self) -> None:
        """Never run (the node is stopping): release the coroutine without a warning."""
        self.work.close()
