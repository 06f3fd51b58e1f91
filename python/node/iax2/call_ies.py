"""The information elements of a call: what our NEW says (`DialParams`), what the endpoint
decided about an inbound NEW (`InboundSetup`), and the IEs a call writes and reads (NEW, AUTHREQ,
ACCEPT, causes, formats, the RR statistics of a PONG). Pure data and functions of their
arguments; `Call` (call.py) decides when."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from node._core import FullFrame
from node.iax2.auth import AUTH_MD5, SecretLike
from node.iax2.constants import IE
from node.iax2.negotiate import Offer

if TYPE_CHECKING:
    from node._core import _IeValue

    #: IEs as `FullFrame(ies=...)` takes them.
    IeList: TypeAlias = list[tuple[int, _IeValue]]

__all__ = [
    "DialParams",
    "InboundSetup",
    "RrStats",
    "authreq_ies",
    "cause_ies",
    "cause_of",
    "format_ies",
    "format_of",
    "new_ies",
    "rr_ies",
    "rr_of",
]


@dataclass(frozen=True, slots=True)
class DialParams:
    """What an outbound NEW says about the call."""

    called_number: str
    calling_number: str | None = None
    #: CALLING_NAME (a web-transceiver guest puts its token here: never shown in repr).
    calling_name: str | None = field(default=None, repr=False)
    #: USERNAME: who we are to the callee (AllStarLink nodes use "radio").
    username: str | None = None
    #: Our secret with the callee, for an MD5 AUTHREQ. Never shown in repr.
    secret: str | SecretLike | None = field(default=None, repr=False)
    #: Local wall-clock time for the DATETIME IE, (year, month, day, hour, minute, second).
    datetime: tuple[int, int, int, int, int, int] | None = None
    #: Send an empty CALLTOKEN IE (we support call tokens). Off only for very old peers.
    calltoken: bool = True


@dataclass(frozen=True, slots=True)
class InboundSetup:
    """The endpoint's verdict on an inbound NEW, handed to `Call.start_inbound`."""

    #: The negotiated format (`negotiate.choose_format`).
    format: int
    #: "auto" answers once the call is confirmed; "manual" rings and waits for `answer()`;
    #: "hold" waits for `answer()` or `hangup()` without ringing (a link call being vetted).
    answer: str = "auto"
    #: CHALLENGE to send in an AUTHREQ, or None for no authentication.
    challenge: str | None = None
    #: The secret the AUTHREP must match. None with a challenge means the user is unknown: the
    #: challenge is a decoy and every answer fails, so callers cannot probe for usernames.
    secret: str | SecretLike | None = field(default=None, repr=False)
    calling_number: str = ""
    calling_name: str = ""
    called_number: str = ""
    username: str = ""


@dataclass(frozen=True, slots=True)
class RrStats:
    """Receive statistics for the RR IEs of a PONG (RFC 5456 §8.6.27-32), all non-negative."""

    jitter: int = 0
    loss_percent: int = 0
    lost: int = 0
    packets: int = 0
    delay: int = 0
    dropped: int = 0
    out_of_order: int = 0


def new_ies(params: DialParams, offer: Offer) -> IeList:
    """The IEs of our NEW in Asterisk's order (iax2_call), without the CALLTOKEN."""
    ies: IeList = [(IE.VERSION, 2), (IE.CALLED_NUMBER, params.called_number)]
    ies.append((IE.CODEC_PREFS, offer.prefs))
    if params.calling_number is not None:
        ies.append((IE.CALLING_NUMBER, params.calling_number))
    if params.calling_name is not None:
        ies.append((IE.CALLING_NAME, params.calling_name))
    if params.username is not None:
        ies.append((IE.USERNAME, params.username))
    ies += [
        (IE.FORMAT, offer.format),
        (IE.FORMAT2, (0, offer.format)),
        (IE.CAPABILITY, offer.capability & 0xFFFFFFFF),
        (IE.CAPABILITY2, (0, offer.capability)),
    ]
    if params.datetime is not None:
        ies.append((IE.DATETIME, params.datetime))
    return ies


def authreq_ies(setup: InboundSetup) -> IeList:
    """The MD5 challenge of an AUTHREQ, naming the user it is for when there is one."""
    assert setup.challenge is not None
    ies: IeList = [(IE.AUTHMETHODS, AUTH_MD5), (IE.CHALLENGE, setup.challenge)]
    if setup.username:
        ies.append((IE.USERNAME, setup.username))
    return ies


def format_ies(fmt: int) -> IeList:
    """FORMAT and FORMAT2 (version 0) of an ACCEPT."""
    return [(IE.FORMAT, fmt), (IE.FORMAT2, (0, fmt))]


def rr_ies(s: RrStats) -> IeList:
    """The RR IEs of a PONG, each clamped to what its field holds."""
    return [
        (IE.RR_JITTER, _u32(s.jitter)),
        (IE.RR_LOSS, ((min(s.loss_percent, 100) & 0xFF) << 24) | (_u32(s.lost) & 0xFFFFFF)),
        (IE.RR_PKTS, _u32(s.packets)),
        (IE.RR_DELAY, min(max(s.delay, 0), 0xFFFF)),
        (IE.RR_DROPPED, _u32(s.dropped)),
        (IE.RR_OOO, _u32(s.out_of_order)),
    ]


#: The RR IEs of a PONG, in the order `rr_ies` writes them.
_RR_IES = (IE.RR_JITTER, IE.RR_LOSS, IE.RR_PKTS, IE.RR_DELAY, IE.RR_DROPPED, IE.RR_OOO)


def rr_of(frame: FullFrame) -> RrStats | None:
    """The peer's receive statistics from the RR IEs of its PONG, or None when it sent none
    (a PONG that answers a POKE, or a peer that keeps no figures). An IE that is missing or
    not a number reads as 0; RR_LOSS packs the loss percent in its top byte and the count of
    lost frames in the low 24 bits, as `rr_ies` writes it."""
    values = {ie: frame.ie(ie) for ie in _RR_IES}
    numbers = {ie: v for ie, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
    if not numbers:
        return None
    loss = numbers.get(IE.RR_LOSS, 0) & 0xFFFFFFFF
    return RrStats(
        jitter=max(numbers.get(IE.RR_JITTER, 0), 0),
        # A peer may write garbage in the top byte: a percentage above 100 means nothing.
        loss_percent=min(loss >> 24, 100),
        lost=loss & 0xFFFFFF,
        packets=max(numbers.get(IE.RR_PKTS, 0), 0),
        delay=max(numbers.get(IE.RR_DELAY, 0), 0),
        dropped=max(numbers.get(IE.RR_DROPPED, 0), 0),
        out_of_order=max(numbers.get(IE.RR_OOO, 0), 0),
    )


def cause_ies(cause: str | None, causecode: int) -> IeList:
    """CAUSE (only when there is a text) and CAUSECODE, as Asterisk sends them."""
    ies: IeList = []
    if cause:
        ies.append((IE.CAUSE, cause))
    ies.append((IE.CAUSECODE, causecode & 0xFF))
    return ies


def cause_of(frame: FullFrame) -> tuple[str, int]:
    """CAUSE and CAUSECODE of a HANGUP or REJECT ("" and 0 when absent)."""
    cause = frame.ie(IE.CAUSE)
    code = frame.ie(IE.CAUSECODE)
    return (cause if isinstance(cause, str) else "", code if isinstance(code, int) else 0)


def format_of(frame: FullFrame) -> int | None:
    """FORMAT2 if present (version 0), else FORMAT."""
    f2 = frame.ie(IE.FORMAT2)
    if isinstance(f2, Sequence) and len(f2) == 2 and f2[0] == 0:
        return int(f2[1])
    f = frame.ie(IE.FORMAT)
    return f if isinstance(f, int) and not isinstance(f, bool) else None


def _u32(v: int) -> int:
    return min(max(int(v), 0), 0xFFFFFFFF)
