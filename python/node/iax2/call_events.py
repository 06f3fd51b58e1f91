"""What an IAX2 call reports: one frozen event per occurrence, all based on `CallEvent`.

Every `Call` input returns its events in order inside an `Output` (call.py). Names are past
tense; each carries our call number, the key the endpoint and the application know the call by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "CallAccepted",
    "CallAnswered",
    "CallEvent",
    "CallHungUp",
    "CallIncoming",
    "CallLost",
    "CallRejected",
    "CallRinging",
    "ControlReceived",
    "DtmfBegan",
    "DtmfReceived",
    "LossReason",
    "MediaFormatChanged",
    "RadioKeyed",
    "RadioUnkeyed",
    "TextReceived",
    "VoiceFullReceived",
    "end_reason",
]


@dataclass(frozen=True, slots=True)
class CallEvent:
    """Base of everything a call reports."""

    #: Our (local) call number: the key the endpoint and the application know the call by.
    callno: int


@dataclass(frozen=True, slots=True)
class CallIncoming(CallEvent):
    """An inbound call passed the listener policy and is confirmed; answer or reject it."""

    #: CALLING_NUMBER of the NEW (the caller's node number on AllStarLink), or "".
    calling_number: str
    #: CALLING_NAME of the NEW, or "".
    calling_name: str
    #: CALLED_NUMBER of the NEW, or "".
    called_number: str
    #: USERNAME of the NEW, or "".
    username: str
    #: The negotiated audio format (a `Format` bit).
    format: int
    #: Whether the caller passed an MD5 challenge.
    authenticated: bool


@dataclass(frozen=True, slots=True)
class CallRinging(CallEvent):
    """The callee sent RINGING (outbound calls)."""


@dataclass(frozen=True, slots=True)
class CallAccepted(CallEvent):
    """ACCEPT was exchanged: media may flow in `format` (a `Format` bit)."""

    format: int


@dataclass(frozen=True, slots=True)
class CallAnswered(CallEvent):
    """The call is answered: the callee sent ANSWER (outbound) or we did (inbound)."""


@dataclass(frozen=True, slots=True)
class CallRejected(CallEvent):
    """The call was refused during setup."""

    #: CAUSE text ("" when the REJECT carried none).
    cause: str
    #: Q.931 CAUSECODE (0 when the REJECT carried none).
    causecode: int
    #: True when the peer rejected our NEW; False when we refused an inbound call.
    by_peer: bool


@dataclass(frozen=True, slots=True)
class CallHungUp(CallEvent):
    """A set-up call ended with a HANGUP."""

    #: CAUSE text ("" when none was given).
    cause: str
    #: Q.931 CAUSECODE (16 = normal clearing; 0 when the peer gave none).
    causecode: int
    #: Whether the peer hung up (else we did).
    by_peer: bool


class LossReason(Enum):
    """Why a call was lost without a HANGUP."""

    #: A frame went unacknowledged after `MAX_SENDS` transmissions.
    RETRIES_EXHAUSTED = "retries_exhausted"
    #: The peer answered INVAL: it has no such call.
    INVALIDATED = "invalidated"


@dataclass(frozen=True, slots=True)
class CallLost(CallEvent):
    """The call is gone without a HANGUP exchange."""

    reason: LossReason


@dataclass(frozen=True, slots=True)
class DtmfBegan(CallEvent):
    """The peer started a DTMF digit (frame type 12; Asterisk sends it before the end)."""

    digit: str
    #: The sender's timestamp (ms), to keep the event in order with the peer's audio.
    ts: int


@dataclass(frozen=True, slots=True)
class DtmfReceived(CallEvent):
    """The peer sent a complete DTMF digit (frame type 1)."""

    digit: str
    #: The sender's timestamp (ms), to keep the event in order with the peer's audio.
    ts: int


@dataclass(frozen=True, slots=True)
class TextReceived(CallEvent):
    """A TEXT frame, NUL terminator removed (AllStarLink link texts such as "!NEWKEY1!")."""

    text: str
    #: The sender's timestamp (ms), to keep the event in order with the peer's audio.
    ts: int


@dataclass(frozen=True, slots=True)
class RadioKeyed(CallEvent):
    """CONTROL RADIO_KEY (12): the peer's transmitter keyed up."""

    #: The sender's timestamp (ms), to keep the event in order with the peer's audio.
    ts: int


@dataclass(frozen=True, slots=True)
class RadioUnkeyed(CallEvent):
    """CONTROL RADIO_UNKEY (13): the peer's transmitter unkeyed."""

    #: The sender's timestamp (ms), to keep the event in order with the peer's audio.
    ts: int


@dataclass(frozen=True, slots=True)
class ControlReceived(CallEvent):
    """Any other CONTROL frame after ACCEPT (PROGRESS, HOLD, stop sounds = -1, ...)."""

    subclass: int
    #: The sender's timestamp (ms), to keep the event in order with the peer's audio.
    ts: int


@dataclass(frozen=True, slots=True)
class VoiceFullReceived(CallEvent):
    """A full VOICE frame; it also sets the codec of the peer's following mini frames."""

    format: int
    #: The sender's 32-bit timestamp (ms).
    ts: int
    payload: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class MediaFormatChanged(CallEvent):
    """The peer's voice switched to another format (a full voice frame in a new codec)."""

    format: int


def end_reason(event: CallHungUp | CallRejected | CallLost) -> str:
    """Why a call ended, as the log and the `hangup` event say it."""
    if isinstance(event, CallLost):
        return (
            "connection lost"
            if event.reason is LossReason.RETRIES_EXHAUSTED
            else "peer has no such call"
        )
    cause = event.cause or f"cause code {event.causecode}"
    if isinstance(event, CallRejected):
        return f"rejected: {cause}" if event.by_peer else f"refused: {cause}"
    return f"hung up by peer: {cause}" if event.by_peer else f"hung up: {cause}"
