"""What the link network asks the controller to do, in order: one frozen action each.

`LinkNetwork` (network.py) returns them in its `LinkOutput`; the controller carries them out on
calls and media legs and reports back through the network's inputs (`dialled`, `dial_failed`,
`source_checked`). Every action is named for what is done; those on a call carry our call number.
"""

from __future__ import annotations

from dataclasses import dataclass

from node.links.link import LinkMode

__all__ = [
    "CAUSE_LINK_END",
    "CAUSE_NOT_HERE",
    "Answer",
    "Dial",
    "Hangup",
    "LinkAction",
    "SendCng",
    "SendKey",
    "SendText",
    "SendUnkey",
    "SetLeg",
    "VerifySource",
]

#: Q.931 cause codes on link hangups: app_rpt ends links with 0, its dialplan refuses a call
#: to a node it does not host with 16.
CAUSE_LINK_END = 0
CAUSE_NOT_HERE = 16


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
