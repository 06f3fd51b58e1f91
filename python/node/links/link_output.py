"""What one input of the link network produces (style rule 2): a `LinkOutput` of actions for
the controller to carry out, in order, events, whether the snapshot changed, and the next
deadline.

Actions (`LinkAction`) are named for what is done; those on a call carry our call number, and
the controller reports back through the network's inputs (`dialled`, `dial_failed`,
`source_checked`). Events (`LinkEvent`) are past-tense occurrences; each names the linked node
and, when there is one, our call number of the link's call.
"""

from __future__ import annotations

from dataclasses import dataclass

from node.links import text as t
from node.links.link import LinkMode

__all__ = [
    "CAUSE_LINK_END",
    "CAUSE_NOT_HERE",
    "Answer",
    "Dial",
    "Hangup",
    "LinkAction",
    "LinkConnected",
    "LinkDisconnected",
    "LinkEvent",
    "LinkKeyed",
    "LinkOutput",
    "MessageReceived",
    "RemoteDigitReceived",
    "SendCng",
    "SendKey",
    "SendText",
    "SendUnkey",
    "SetLeg",
    "TelemetryReceived",
    "VerifySource",
]

#: Q.931 cause codes on link hangups: app_rpt ends links with 0, its dialplan refuses a call
#: to a node it does not host with 16.
CAUSE_LINK_END = 0
CAUSE_NOT_HERE = 16

# --- actions: what the controller does for the network, in order ---------------------------


@dataclass(frozen=True, slots=True)
class LinkAction:
    """Base of what the network asks the controller to do."""


@dataclass(frozen=True, slots=True)
class Dial(LinkAction):
    """Resolve `node` and place the link call; report back with `dialled` or `dial_failed`."""

    node: str
    mode: LinkMode


@dataclass(frozen=True, slots=True)
class SendText(LinkAction):
    callno: int
    text: str


@dataclass(frozen=True, slots=True)
class SendKey(LinkAction):
    """CONTROL RADIO_KEY on the call."""

    callno: int


@dataclass(frozen=True, slots=True)
class SendUnkey(LinkAction):
    """CONTROL RADIO_UNKEY on the call."""

    callno: int


@dataclass(frozen=True, slots=True)
class SendCng(LinkAction):
    """A CNG frame: app_rpt ends every voice spurt with UNKEY plus one CNG."""

    callno: int


@dataclass(frozen=True, slots=True)
class Answer(LinkAction):
    """Answer a held inbound link call."""

    callno: int


@dataclass(frozen=True, slots=True)
class Hangup(LinkAction):
    """End the call with CAUSECODE `causecode` and no CAUSE text, as app_rpt does."""

    callno: int
    causecode: int = CAUSE_LINK_END


@dataclass(frozen=True, slots=True)
class SetLeg(LinkAction):
    """Change the media leg: `mode` ("transceive", "receive_only") and/or `keying`
    ("voice", "control"); None keeps the current value."""

    callno: int
    mode: str | None = None
    keying: str | None = None


@dataclass(frozen=True, slots=True)
class VerifySource(LinkAction):
    """Check that `ip` is the address `node` resolves to (app_rpt's parse_caller); report
    back with `source_checked`."""

    callno: int
    node: str
    ip: str


# --- events -------------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class LinkOutput:
    """What one input produced."""

    actions: tuple[LinkAction, ...] = ()
    events: tuple[LinkEvent, ...] = ()
    #: Whether anything the snapshot shows of the links changed.
    changed: bool = False
    #: When `timer()` must run next.
    deadline: float | None = None
