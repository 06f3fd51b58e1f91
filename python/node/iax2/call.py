"""One IAX2 call, inbound or outbound, as a sans-I/O state machine.

A `Call` never touches a socket or a clock. Its inputs are `receive(frame, now)`,
`timer(now)` and the commands (`start_outbound`, `answer`, `reject`, `hangup`, `send_dtmf`,
`send_text`, `key`, `unkey`, `send_voice_full`); every one of them returns one frozen
`Output(frames, events, deadline)`: the full frames to send to the peer (in order), what happened
(past-tense `CallEvent`s), and the absolute time at which `timer()` must be called next.
`now` is float seconds of a monotonic clock; inputs must be monotonic.

What the machine guarantees on the wire (research/iax2.md §1.8-1.11 and the 10 traps):

* 8-bit sequence numbers, mod-256 arithmetic. ACK, INVAL, VNAK, TXCNT and TXACC advance
  neither counter. Every received full frame's iseqno cumulatively acknowledges our queue.
* Every in-order full frame is acknowledged: implicitly when our reply is itself a full frame
  that advances oseqno (it carries the new iseqno), else with an explicit ACK that echoes the
  frame's timestamp and goes to the sender's call number. An ACK is never acknowledged. An old
  duplicate is ACKed again; a frame from the future gets a VNAK and is dropped. A VNAK makes us
  resend every unacknowledged frame from the seqno it asks for.
* Reliable frames are retransmitted with R set and the *current* iseqno: first after
  2 x RTT clamped to [0.1 s, 10 s] (RTT starts at 1 s and follows PING/PONG and LAGRQ/LAGRP
  echoes), then x10 capped at 10 s; a frame sent 4 times without acknowledgement loses the call
  (`CallLost`, no HANGUP: the peer is not answering anyway).
* Timestamps: milliseconds from the call's first transmission, never 0, strictly increasing for
  non-voice full frames (`timestamps.CallClock`); ACK/PONG/LAGRP echo the received timestamp.
* PING every 21 s and LAGRQ every 10 s once the call is accepted; PONG carries the RR IEs.
* HANGUP/REJECT received: ACK, then keep the dead call `LINGER` seconds so a retransmitted HANGUP
  is ACKed again rather than answered with INVAL. INVAL received: the call is gone at once.
* CONTROL frames (KEY/UNKEY, ANSWER, RINGING...) are only sent after ACCEPT, and ignored before.

Inbound calls are created by `endpoint.Endpoint`, which applies the listener policy (call
tokens, allowlist, call cap, codec choice, whose secret to challenge with) and hands the result
to `start_inbound` as an `InboundSetup`. The call then runs the challenge (if any), sends
ACCEPT, and, once the peer has confirmed the ACCEPT (Asterisk's 3-way handshake for
unauthenticated calls; at once after a successful challenge), announces the call
(`CallIncoming`) and either answers it (`answer = "auto"`) or sends RINGING and waits for
`answer()` / `reject()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, TypeAlias

from node._core import FullFrame
from node.errors import LocalProtocolError
from node.iax2.auth import AUTH_MD5, SecretLike, check_md5, md5_response
from node.iax2.constants import IE, ControlSubclass, FrameType, IaxSubclass
from node.iax2.negotiate import (
    CAUSE_NO_CODEC,
    CAUSECODE_NO_CODEC,
    CodecPolicy,
    Offer,
    format_name,
    single_format,
)
from node.iax2.timestamps import CallClock

__all__ = [
    "DTMF_DIGITS",
    "LAGRQ_INTERVAL",
    "LINGER",
    "MAX_SENDS",
    "MAX_TEXT_BYTES",
    "PING_INTERVAL",
    "SETUP_TIMEOUT",
    "Address",
    "Call",
    "CallAccepted",
    "CallAnswered",
    "CallEvent",
    "CallHungUp",
    "CallIncoming",
    "CallLost",
    "CallRejected",
    "CallRinging",
    "CallState",
    "ControlReceived",
    "DialParams",
    "Direction",
    "DtmfBegan",
    "DtmfReceived",
    "InboundSetup",
    "LossReason",
    "MediaFormatChanged",
    "Output",
    "RadioKeyed",
    "RadioUnkeyed",
    "RrStats",
    "TextReceived",
    "VoiceFullReceived",
    "first_retry",
]

Address = tuple[str, int]

if TYPE_CHECKING:
    from node._core import _IeValue

    #: IEs as `FullFrame(ies=...)` takes them.
    IeList: TypeAlias = list[tuple[int, _IeValue]]

#: Seconds between PINGs and between LAGRQs on an accepted call (chan_iax2.c defaults).
PING_INTERVAL = 21.0
LAGRQ_INTERVAL = 10.0
#: Retransmission: first retry at 2 x RTT within these bounds, then x10 up to the maximum.
MIN_RETRY = 0.1
MAX_RETRY = 10.0
RETRY_BACKOFF = 10.0
#: A reliable frame is sent at most this many times (t = 0, 2, 12, 22 s with the default RTT);
#: when the last retry also goes unanswered the call is lost (t = 32 s).
MAX_SENDS = 4
#: RTT assumed before any measurement (Asterisk's DEFAULT_RETRY_TIME).
INITIAL_RTT = 1.0
#: How long a dead call is kept to re-ACK retransmitted HANGUPs.
LINGER = 10.0
#: How long call setup (NEW or AUTHREQ until ACCEPT) may take once the peer has gone quiet
#: after acknowledging it. The spec is silent; 30 s covers a human answering an auth prompt.
SETUP_TIMEOUT = 30.0
#: Longest TEXT payload we send (without the NUL); keeps a frame well inside one datagram.
MAX_TEXT_BYTES = 1024
#: Digits a DTMF frame may carry.
DTMF_DIGITS = "0123456789*#ABCD"

_ACK_LIKE = frozenset(
    {IaxSubclass.ACK, IaxSubclass.INVAL, IaxSubclass.VNAK, IaxSubclass.TXCNT, IaxSubclass.TXACC}
)
_KNOWN_IAX = frozenset(int(s) for s in IaxSubclass)
# In-order frames whose timestamp is an echo of ours rather than the peer's clock.
_ECHOING = frozenset({IaxSubclass.PONG, IaxSubclass.LAGRP, IaxSubclass.CALLTOKEN})
_MASK8 = 0xFF


def first_retry(rtt: float) -> float:
    """The first retransmission delay for a measured RTT: 2 x RTT within [0.1 s, 10 s]."""
    return min(MAX_RETRY, max(MIN_RETRY, 2.0 * rtt))


# --- states -------------------------------------------------------------------------------------


class CallState(Enum):
    """Where a call is. See docs/iax2.md for the diagram."""

    #: Created, nothing sent or received yet.
    IDLE = "idle"
    #: Outbound: NEW sent (possibly again with a call token), waiting for the callee.
    CALLING = "calling"
    #: Outbound: AUTHREP sent. Inbound: AUTHREQ sent, waiting for AUTHREP.
    AUTHENTICATING = "authenticating"
    #: ACCEPT exchanged: media may flow, ringing until answered.
    ACCEPTED = "accepted"
    #: Answered.
    UP = "up"
    #: We sent HANGUP (or REJECT) and wait for its acknowledgement.
    HANGING_UP = "hanging_up"
    #: Over; kept for `LINGER` seconds to re-ACK retransmissions.
    TERMINATED = "terminated"
    #: Gone; the endpoint forgets it.
    CLOSED = "closed"


class Direction(Enum):
    INBOUND = "inbound"
    OUTBOUND = "outbound"


class _Trigger(Enum):
    DIAL = "dial"  # start_outbound
    TOKEN = "token"  # CALLTOKEN received, NEW sent again
    AUTH = "auth"  # AUTHREQ sent (inbound) or AUTHREP sent (outbound)
    ACCEPT = "accept"  # ACCEPT sent (inbound) or received (outbound)
    ANSWER = "answer"  # ANSWER sent (inbound) or received (outbound)
    END = "end"  # we sent HANGUP or REJECT
    PEER_END = "peer_end"  # HANGUP or REJECT received
    END_ACKED = "end_acked"  # our HANGUP/REJECT was acknowledged
    LOST = "lost"  # retransmissions exhausted, or INVAL received
    EXPIRED = "expired"  # linger over


_S, _T = CallState, _Trigger
_LIVE_ENDS = {_T.END: _S.HANGING_UP, _T.PEER_END: _S.TERMINATED, _T.LOST: _S.CLOSED}

#: The one table of legal transitions: state -> trigger -> next state.
TRANSITIONS: dict[CallState, dict[_Trigger, CallState]] = {
    _S.IDLE: {
        _T.DIAL: _S.CALLING,
        _T.AUTH: _S.AUTHENTICATING,
        _T.ACCEPT: _S.ACCEPTED,
        _T.END: _S.HANGING_UP,
    },
    _S.CALLING: {_T.TOKEN: _S.CALLING, _T.AUTH: _S.AUTHENTICATING, _T.ACCEPT: _S.ACCEPTED}
    | _LIVE_ENDS,
    _S.AUTHENTICATING: {_T.ACCEPT: _S.ACCEPTED} | _LIVE_ENDS,
    _S.ACCEPTED: {_T.ANSWER: _S.UP} | _LIVE_ENDS,
    _S.UP: dict(_LIVE_ENDS),
    _S.HANGING_UP: {
        _T.END_ACKED: _S.TERMINATED,
        _T.PEER_END: _S.TERMINATED,
        _T.LOST: _S.CLOSED,
    },
    _S.TERMINATED: {_T.EXPIRED: _S.CLOSED, _T.LOST: _S.CLOSED},
    _S.CLOSED: {},
}

_MEDIA_STATES = frozenset({_S.ACCEPTED, _S.UP})
_SETUP_STATES = frozenset({_S.CALLING, _S.AUTHENTICATING})


class _Timer(Enum):
    PING = "ping"
    LAGRQ = "lagrq"
    SETUP = "setup"
    LINGER = "linger"


# --- events -------------------------------------------------------------------------------------


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


# --- inputs and outputs -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Output:
    """The result of every input: frames to send in order, events, and the next deadline."""

    frames: tuple[FullFrame, ...] = ()
    events: tuple[CallEvent, ...] = ()
    #: Absolute time at which `timer()` must run next, or None when nothing is pending.
    deadline: float | None = None


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


@dataclass(slots=True)
class _Pending:
    """A reliable frame waiting for acknowledgement, kept as constructor arguments so each
    retransmission is a fresh frame (frames already handed out are never mutated)."""

    ftype: int
    subclass: int
    ts: int
    oseq: int
    ies: IeList | None
    payload: bytes
    keep_dcall_zero: bool
    next_at: float
    interval: float
    #: Timer-driven transmissions so far (VNAK resends do not count, as in Asterisk).
    sends: int = 1


# --- the machine --------------------------------------------------------------------------------


class Call:
    """One IAX2 call. Create it with the endpoint's call number, then start it."""

    def __init__(
        self,
        callno: int,
        peer_addr: Address,
        direction: Direction,
        codec_policy: CodecPolicy,
        *,
        rr_stats: Callable[[], RrStats] | None = None,
    ) -> None:
        if not 2 <= callno <= 0x7FFF:
            raise LocalProtocolError(f"call number {callno} is outside 2..32767")
        self.callno = callno
        self.peer_addr = peer_addr
        self.direction = direction
        self.policy = codec_policy
        #: The peer's call number (0 until known).
        self.peer_callno = 0
        self.state = CallState.IDLE
        #: The negotiated audio format, once ACCEPT was exchanged.
        self.format: int | None = None
        #: The format of the peer's last full voice frame (that of its mini frames).
        self.peer_voice_format: int | None = None
        #: Timestamp of the peer's latest in-order full frame on its own clock (frames that
        #: echo ours, PONG, LAGRP and CALLTOKEN, excluded): the base for unwrapping mini frames.
        self.peer_last_ts = 0
        #: Round-trip time in seconds: the latest PING/PONG or LAGRQ/LAGRP sample, as
        #: Asterisk's `pingtime` (it sets the first retransmission delay).
        self.rtt = INITIAL_RTT
        self.clock = CallClock()
        self.oseq = 0
        self.iseq = 0
        self._rr_stats = rr_stats
        self._queue: list[_Pending] = []
        self._timers: dict[_Timer, float] = {}
        # Our outstanding PING/LAGRQ by timestamp: when sent, and whether retransmitted.
        self._probes: dict[int, tuple[float, bool]] = {}
        self._vnak_served: tuple[int, float] | None = None  # (iseqno, when)
        self._frames: list[FullFrame] = []
        self._events: list[CallEvent] = []
        # Set while handling one in-order frame: did a reply carry the ack, or must none go out?
        self._replied = False
        self._suppress_ack = False
        # outbound
        self._dial: DialParams | None = None
        self._new_ies: IeList = []
        self._token_rounds = 0
        # inbound
        self._setup: InboundSetup | None = None
        self._accept_oseq: int | None = None
        self._confirmed = False
        self._authenticated = False

    def __repr__(self) -> str:
        return (
            f"Call(callno={self.callno}, peer={self.peer_addr[0]}:{self.peer_addr[1]}/"
            f"{self.peer_callno}, {self.direction.value}, {self.state.value})"
        )

    # --- getters ------------------------------------------------------------------------------

    @property
    def is_inbound(self) -> bool:
        return self.direction is Direction.INBOUND

    @property
    def is_live(self) -> bool:
        """Set up or being set up: not hanging up, terminated or closed."""
        return self.state in (_S.IDLE, _S.CALLING, _S.AUTHENTICATING, _S.ACCEPTED, _S.UP)

    @property
    def is_closed(self) -> bool:
        return self.state is CallState.CLOSED

    @property
    def unacked(self) -> int:
        """How many reliable frames wait for acknowledgement."""
        return len(self._queue)

    def timestamp(self, now: float) -> int:
        """The call's clock in ms at `now` (what the engine puts in mini frames)."""
        return self.clock.elapsed_ms(now)

    def next_deadline(self) -> float | None:
        """When `timer()` must run next, or None."""
        times = list(self._timers.values())
        times.extend(p.next_at for p in self._queue)
        return min(times) if times else None

    # --- plumbing -----------------------------------------------------------------------------

    def _output(self) -> Output:
        out = Output(tuple(self._frames), tuple(self._events), self.next_deadline())
        self._frames = []
        self._events = []
        return out

    def _go(self, trigger: _Trigger) -> None:
        nxt = TRANSITIONS[self.state].get(trigger)
        if nxt is None:
            raise LocalProtocolError(
                f"call {self.callno}: cannot {trigger.value} in state {self.state.value}"
            )
        self.state = nxt
        if nxt not in _MEDIA_STATES:
            self._timers.pop(_Timer.PING, None)
            self._timers.pop(_Timer.LAGRQ, None)
        if nxt not in _SETUP_STATES:
            self._timers.pop(_Timer.SETUP, None)
        if nxt is _S.TERMINATED:
            self._queue.clear()
        if nxt is _S.CLOSED:
            self._queue.clear()
            self._timers.clear()

    def _send(
        self,
        now: float,
        ftype: int,
        subclass: int,
        *,
        ies: IeList | None = None,
        payload: bytes = b"",
        ts: int | None = None,
        dcall_zero: bool = False,
    ) -> None:
        """Send a reliable full frame: it takes the next oseqno and is retransmitted until
        acknowledged."""
        if ts is None:
            ts = self.clock.stamp(now)
        pending = _Pending(
            ftype,
            subclass,
            ts,
            self.oseq,
            ies,
            payload,
            dcall_zero,
            next_at=now + first_retry(self.rtt),
            interval=first_retry(self.rtt),
        )
        self._queue.append(pending)
        self.oseq = (self.oseq + 1) & _MASK8
        self._frames.append(self._build(pending, retrans=False))
        self._replied = True

    def _build(self, p: _Pending, *, retrans: bool) -> FullFrame:
        return FullFrame(
            p.ftype,
            p.subclass,
            scall=self.callno,
            dcall=0 if p.keep_dcall_zero else self.peer_callno,
            ts=p.ts,
            oseq=p.oseq,
            iseq=self.iseq,
            retrans=retrans,
            ies=p.ies,
            payload=p.payload,
        )

    def _answer_frame(self, subclass: int, frame: FullFrame) -> None:
        """ACK or VNAK of `frame`: echoes its timestamp, takes no seqno, never retransmitted.

        Like Asterisk, the oseqno field repeats the iseqno of the frame answered (normally our
        own oseqno); nobody reads it, but the wire then matches Asterisk's byte for byte.
        """
        self._frames.append(
            FullFrame(
                FrameType.IAX,
                subclass,
                scall=self.callno,
                dcall=frame.scall,
                ts=frame.ts,
                oseq=frame.iseq,
                iseq=self.iseq,
            )
        )

    def _ack(self, frame: FullFrame) -> None:
        self._answer_frame(IaxSubclass.ACK, frame)

    def _retransmit(self, p: _Pending) -> None:
        if p.ftype == FrameType.IAX and p.ts in self._probes:
            self._probes[p.ts] = (self._probes[p.ts][0], True)
        self._frames.append(self._build(p, retrans=True))

    def _event(self, event: CallEvent) -> None:
        self._events.append(event)

    def _start_keepalives(self, now: float) -> None:
        self._timers[_Timer.PING] = now + PING_INTERVAL
        self._timers[_Timer.LAGRQ] = now + LAGRQ_INTERVAL

    def _terminate(self, now: float, trigger: _Trigger) -> None:
        self._go(trigger)
        if self.state is _S.TERMINATED:
            self._timers[_Timer.LINGER] = now + LINGER

    # --- commands -----------------------------------------------------------------------------

    def start_outbound(self, now: float, params: DialParams) -> Output:
        """Send NEW. IEs follow Asterisk's order (iax2_call), the empty CALLTOKEN last."""
        if self.direction is not Direction.OUTBOUND:
            raise LocalProtocolError(f"call {self.callno} is inbound; it cannot dial")
        self._go(_T.DIAL)
        self._dial = params
        offer = Offer.for_policy(self.policy)
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
        self._new_ies = ies
        self._send_new(now, "" if params.calltoken else None)
        self._timers[_Timer.SETUP] = now + SETUP_TIMEOUT
        return self._output()

    def _send_new(self, now: float, token: str | None) -> None:
        ies = list(self._new_ies)
        if token is not None:
            ies.append((IE.CALLTOKEN, token))
        self._send(now, FrameType.IAX, IaxSubclass.NEW, ies=ies, dcall_zero=True)

    def start_inbound(self, new: FullFrame, now: float, setup: InboundSetup) -> Output:
        """Take over an admitted inbound NEW: challenge the caller or accept the call."""
        if self.direction is not Direction.INBOUND:
            raise LocalProtocolError(f"call {self.callno} is outbound; it cannot take a NEW")
        if self.state is not _S.IDLE:
            raise LocalProtocolError(f"call {self.callno} has already started")
        self._setup = setup
        self.peer_callno = new.scall
        # The NEW is the peer's frame 0; our first reply carries iseqno 1 and so acks it.
        self.iseq = (new.oseq + 1) & _MASK8
        if setup.challenge is not None:
            ies: IeList = [
                (IE.AUTHMETHODS, AUTH_MD5),
                (IE.CHALLENGE, setup.challenge),
            ]
            if setup.username:
                ies.append((IE.USERNAME, setup.username))
            self._go(_T.AUTH)
            self._send(now, FrameType.IAX, IaxSubclass.AUTHREQ, ies=ies)
            self._timers[_Timer.SETUP] = now + SETUP_TIMEOUT
        else:
            self._accept(now)
        return self._output()

    def _accept(self, now: float) -> None:
        assert self._setup is not None
        fmt = self._setup.format
        self._go(_T.ACCEPT)
        self.format = fmt
        self._send(
            now, FrameType.IAX, IaxSubclass.ACCEPT, ies=[(IE.FORMAT, fmt), (IE.FORMAT2, (0, fmt))]
        )
        self._accept_oseq = self._queue[-1].oseq
        self._start_keepalives(now)
        if self._authenticated:
            # The AUTHREP round trip already proved the caller's address.
            self._confirm(now)

    def _confirm(self, now: float) -> None:
        """The caller has our ACCEPT: announce the call, then answer or ring."""
        assert self._setup is not None and self.format is not None
        if self._confirmed or self.state is not _S.ACCEPTED:
            return
        self._confirmed = True
        s = self._setup
        self._event(
            CallIncoming(
                self.callno,
                s.calling_number,
                s.calling_name,
                s.called_number,
                s.username,
                self.format,
                self._authenticated,
            )
        )
        self._event(CallAccepted(self.callno, self.format))
        if s.answer == "auto":
            self._send_answer(now)
        elif s.answer == "manual":
            self._send(now, FrameType.CONTROL, ControlSubclass.RINGING)

    def _send_answer(self, now: float) -> None:
        self._go(_T.ANSWER)
        self._send(now, FrameType.CONTROL, ControlSubclass.ANSWER)
        # Asterisk follows every ANSWER with "stop sounds" (control -1), which tells the
        # caller to stop any local ringback; AllStarLink nodes expect the same pair.
        self._send(now, FrameType.CONTROL, ControlSubclass.STOP_SOUNDS)
        self._event(CallAnswered(self.callno))

    def answer(self, now: float) -> Output:
        """Answer a ringing inbound call (`answer = "manual"`)."""
        if not self.is_inbound or self.state is not _S.ACCEPTED or not self._confirmed:
            raise LocalProtocolError(
                f"call {self.callno}: only a ringing inbound call can be answered "
                f"(this one is {self.direction.value}, {self.state.value})"
            )
        self._send_answer(now)
        return self._output()

    def reject(self, now: float, cause: str = "Call rejected", causecode: int = 21) -> Output:
        """Refuse an inbound call that is not answered yet.

        Before ACCEPT this is a REJECT; after it (ringing) Asterisk's way is a HANGUP, so the
        same cause goes out in a HANGUP.
        """
        if not self.is_inbound or self.state not in (_S.IDLE, _S.AUTHENTICATING, _S.ACCEPTED):
            raise LocalProtocolError(
                f"call {self.callno}: only an unanswered inbound call can be rejected "
                f"(this one is {self.direction.value}, {self.state.value})"
            )
        accepted = self.state is _S.ACCEPTED
        self._go(_T.END)
        sub = IaxSubclass.HANGUP if accepted else IaxSubclass.REJECT
        self._send(now, FrameType.IAX, sub, ies=_cause_ies(cause, causecode))
        self._event(CallRejected(self.callno, cause, causecode, by_peer=False))
        return self._output()

    def hangup(self, now: float, cause: str | None = None, causecode: int = 16) -> Output:
        """End the call (any state before the end). Asterisk sends only CAUSECODE; a CAUSE text
        is added when given."""
        if not self.is_live or self.state is _S.IDLE:
            raise LocalProtocolError(
                f"call {self.callno}: cannot hang up in state {self.state.value}"
            )
        self._hangup(now, cause, causecode)
        return self._output()

    def _hangup(self, now: float, cause: str | None, causecode: int) -> None:
        self._go(_T.END)
        self._send(
            now,
            FrameType.IAX,
            IaxSubclass.HANGUP,
            ies=_cause_ies(cause, causecode),
            dcall_zero=self.peer_callno == 0,
        )
        self._event(CallHungUp(self.callno, cause or "", causecode, by_peer=False))

    def _require_media(self, what: str) -> None:
        if self.state not in _MEDIA_STATES:
            raise LocalProtocolError(
                f"call {self.callno}: cannot send {what} before ACCEPT or after the end "
                f"(state {self.state.value})"
            )

    def send_dtmf(self, now: float, digit: str) -> Output:
        """Send one DTMF digit as Asterisk does: DTMF_BEGIN (type 12), then DTMF end (type 1)."""
        d = digit.upper()
        if len(d) != 1 or d not in DTMF_DIGITS:
            raise LocalProtocolError(f"not a DTMF digit: {digit!r} (accepted: {DTMF_DIGITS})")
        self._require_media("DTMF")
        self._send(now, FrameType.DTMF_BEGIN, ord(d))
        self._send(now, FrameType.DTMF, ord(d))
        return self._output()

    def send_text(self, now: float, text: str) -> Output:
        """Send a TEXT frame; the payload is NUL-terminated like Asterisk's."""
        data = text.encode("utf-8")
        if b"\x00" in data:
            raise LocalProtocolError("TEXT cannot contain a NUL character")
        if len(data) > MAX_TEXT_BYTES:
            raise LocalProtocolError(f"TEXT longer than {MAX_TEXT_BYTES} bytes")
        self._require_media("TEXT")
        self._send(now, FrameType.TEXT, 0, payload=data + b"\x00")
        return self._output()

    def send_cng(self, now: float) -> Output:
        """A CNG (comfort noise) frame, level 0: app_rpt ends each talk spurt with RADIO_UNKEY
        and one CNG."""
        self._require_media("CNG")
        self._send(now, FrameType.CNG, 0)
        return self._output()

    def key(self, now: float) -> Output:
        """CONTROL RADIO_KEY (12): our transmitter keyed up. Reliable like every full frame, so
        it cannot be lost; the engine keeps it in order with the audio."""
        self._require_media("RADIO_KEY")
        self._send(now, FrameType.CONTROL, ControlSubclass.RADIO_KEY)
        return self._output()

    def unkey(self, now: float) -> Output:
        """CONTROL RADIO_UNKEY (13). A lost UNKEY would leave a repeater keyed: retransmitted."""
        self._require_media("RADIO_UNKEY")
        self._send(now, FrameType.CONTROL, ControlSubclass.RADIO_UNKEY)
        return self._output()

    def send_voice_full(self, now: float, fmt: int, payload: bytes, ts: int) -> Output:
        """A full VOICE frame the engine asked for (first frame, codec change, ts >> 15 change).

        `ts` comes from the media clock and is used as given.
        """
        self._require_media("voice")
        if single_format(fmt) is None or not self.policy.accepts(fmt):
            raise LocalProtocolError(f"format {format_name(fmt)} is not in the codec policy")
        self.clock.note_voice(now, ts)
        self._send(now, FrameType.VOICE, fmt, payload=payload, ts=ts & 0xFFFFFFFF)
        return self._output()

    def request_voice_resend(self, now: float) -> Output:
        """VNAK the peer: a mini frame came before any full voice frame (so its codec is
        unknown), which means the full frame that sets the codec was lost; Asterisk answers the
        same way. The VNAK carries the iseqno we still wait for, so the peer resends from there.
        """
        self._require_media("voice")
        self._frames.append(
            FullFrame(
                FrameType.IAX,
                IaxSubclass.VNAK,
                scall=self.callno,
                dcall=self.peer_callno,
                ts=self.clock.stamp(now),
                oseq=self.oseq,
                iseq=self.iseq,
            )
        )
        return self._output()

    # --- timers -------------------------------------------------------------------------------

    def timer(self, now: float) -> Output:
        """Fire every expired timer: retransmissions, PING, LAGRQ, setup time-out, linger."""
        for p in list(self._queue):
            if p.next_at > now or self.state is _S.CLOSED:
                continue
            if p.sends >= MAX_SENDS:
                self._exhausted()
                break
            self._retransmit(p)
            p.sends += 1
            p.interval = min(MAX_RETRY, p.interval * RETRY_BACKOFF)
            p.next_at = now + p.interval
        due = [kind for kind, at in self._timers.items() if at <= now]
        for kind in due:
            if kind not in self._timers:  # cleared by an earlier one
                continue
            if kind is _Timer.PING:
                self._timers[kind] = now + PING_INTERVAL
                self._probe(now, IaxSubclass.PING)
            elif kind is _Timer.LAGRQ:
                self._timers[kind] = now + LAGRQ_INTERVAL
                self._probe(now, IaxSubclass.LAGRQ)
            elif kind is _Timer.SETUP:
                if self._queue:
                    # Still retransmitting: that ends in CallLost (or an answer) within
                    # MAX_RETRY * MAX_SENDS; look again afterwards.
                    self._timers[kind] = now + MAX_RETRY
                    continue
                del self._timers[kind]
                if self.is_inbound:
                    self._go(_T.END)
                    ies = _cause_ies("Timeout", 18)
                    self._send(now, FrameType.IAX, IaxSubclass.REJECT, ies=ies)
                    self._event(CallRejected(self.callno, "Timeout", 18, by_peer=False))
                else:
                    self._hangup(now, "Timeout", 18)
            elif kind is _Timer.LINGER:
                del self._timers[kind]
                self._go(_T.EXPIRED)
        return self._output()

    def _probe(self, now: float, subclass: int) -> None:
        self._send(now, FrameType.IAX, subclass)
        ts = self._queue[-1].ts
        self._probes[ts] = (now, False)
        while len(self._probes) > 8:
            del self._probes[next(iter(self._probes))]

    def _exhausted(self) -> None:
        if self.state in (_S.HANGING_UP, _S.TERMINATED):
            # Our HANGUP/REJECT went unanswered: the call already ended for the application.
            self._go(_T.LOST)
            return
        self._go(_T.LOST)
        self._event(CallLost(self.callno, LossReason.RETRIES_EXHAUSTED))

    # --- receiving ----------------------------------------------------------------------------

    def receive(self, frame: FullFrame, now: float) -> Output:
        """Handle one full frame the endpoint routed to this call."""
        if self.state is _S.CLOSED or self.state is _S.IDLE:
            return self._output()
        ftype, sub = frame.ftype, frame.subclass
        is_iax = ftype == FrameType.IAX
        apathetic = (
            is_iax
            and frame.scall == 1
            and sub in (IaxSubclass.CALLTOKEN, IaxSubclass.REJECT)
            and not self.is_inbound
            and self.peer_callno == 0
        )
        if not apathetic:
            if self.peer_callno == 0 and not self.is_inbound:
                self.peer_callno = frame.scall
            elif frame.scall != self.peer_callno:
                # Not from the call we talk to (Asterisk's check_dcallno): drop silently.
                return self._output()
        if is_iax and sub == IaxSubclass.INVAL:
            if self.state in (_S.HANGING_UP, _S.TERMINATED):
                self._go(_T.LOST)
            else:
                self._go(_T.LOST)
                self._event(CallLost(self.callno, LossReason.INVALIDATED))
            return self._output()
        self._acknowledged(frame.iseq, now)
        if is_iax and sub in _ACK_LIKE:
            if sub == IaxSubclass.VNAK:
                self._vnak(frame.iseq, now)
            return self._output()
        if frame.oseq != self.iseq:
            if ((self.iseq - frame.oseq) & _MASK8) < 128:
                # An old duplicate: our ACK was lost, say it again.
                self._ack(frame)
            else:
                # From the future: something in between is missing. Ask for it and drop this.
                self._answer_frame(IaxSubclass.VNAK, frame)
            return self._output()
        self.iseq = (self.iseq + 1) & _MASK8
        self._replied = False
        self._suppress_ack = False
        if not (is_iax and sub in _ECHOING):
            self.peer_last_ts = frame.ts
        if self.state is _S.TERMINATED or self.state is _S.HANGING_UP:
            # After the end only acknowledgements: the peer's frames crossed our HANGUP.
            if is_iax and sub in (IaxSubclass.HANGUP, IaxSubclass.REJECT):
                self._ack(frame)
                if self.state is _S.HANGING_UP:
                    self._terminate(now, _T.PEER_END)
                return self._output()
        else:
            self._dispatch(frame, now)
        if not self._replied and not self._suppress_ack:
            self._ack(frame)
        return self._output()

    def _acknowledged(self, iseq: int, now: float) -> None:
        """Drop every queued frame below `iseq` (cumulative ACK), if `iseq` is in the window."""
        if not self._queue:
            return
        first = self._queue[0].oseq
        k = (iseq - first) & _MASK8
        if k == 0 or k > ((self.oseq - first) & _MASK8):
            return
        acked = [p for p in self._queue if ((p.oseq - first) & _MASK8) < k]
        self._queue = self._queue[len(acked) :]
        if self.state is _S.HANGING_UP and not self._queue:
            self._terminate(now, _T.END_ACKED)
            return
        if (
            self._accept_oseq is not None
            and not self._confirmed
            and any(p.oseq == self._accept_oseq for p in acked)
        ):
            self._confirm(now)

    def _vnak(self, iseq: int, now: float) -> None:
        # Every frame that arrives after a gap makes the peer send a VNAK with the same iseqno.
        # The first one is served at once; its echoes within half an RTT are not, or a burst
        # of N frames would cost N x N retransmissions.
        last = self._vnak_served
        if last is not None and last[0] == iseq and now - last[1] < self.rtt / 2:
            return
        self._vnak_served = (iseq, now)
        for p in self._queue:
            if ((p.oseq - iseq) & _MASK8) < 128:
                self._retransmit(p)

    def _dispatch(self, frame: FullFrame, now: float) -> None:
        ftype = frame.ftype
        if ftype == FrameType.IAX:
            self._on_iax(frame, now)
        elif ftype == FrameType.CONTROL:
            self._on_control(frame)
        elif self.state not in _MEDIA_STATES:
            return  # media before ACCEPT is dropped (Asterisk does the same); still ACKed
        elif ftype == FrameType.VOICE:
            self._on_voice(frame)
        elif ftype == FrameType.DTMF:
            self._event(DtmfReceived(self.callno, _digit(frame.subclass), frame.ts))
        elif ftype == FrameType.DTMF_BEGIN:
            self._event(DtmfBegan(self.callno, _digit(frame.subclass), frame.ts))
        elif ftype == FrameType.TEXT:
            text = bytes(frame.payload).split(b"\x00", 1)[0].decode("utf-8", "replace")
            self._event(TextReceived(self.callno, text, frame.ts))
        # CNG, video, image, HTML, modem: acknowledged and otherwise ignored.

    def _on_iax(self, frame: FullFrame, now: float) -> None:
        sub = frame.subclass
        if sub in (IaxSubclass.PING, IaxSubclass.POKE):
            self._send(now, FrameType.IAX, IaxSubclass.PONG, ies=self._rr_ies(), ts=frame.ts)
        elif sub == IaxSubclass.LAGRQ:
            self._send(now, FrameType.IAX, IaxSubclass.LAGRP, ts=frame.ts)
        elif sub in (IaxSubclass.PONG, IaxSubclass.LAGRP):
            self._rtt_sample(frame.ts, now)
        elif sub == IaxSubclass.HANGUP:
            self._ack(frame)
            self._replied = True
            cause, code = _cause_of(frame)
            self._terminate(now, _T.PEER_END)
            self._event(CallHungUp(self.callno, cause, code, by_peer=True))
        elif sub == IaxSubclass.REJECT:
            self._ack(frame)
            self._replied = True
            cause, code = _cause_of(frame)
            was_setup = self.state in _SETUP_STATES
            self._terminate(now, _T.PEER_END)
            if was_setup:
                self._event(CallRejected(self.callno, cause, code, by_peer=True))
            else:
                self._event(CallHungUp(self.callno, cause, code, by_peer=True))
        elif sub == IaxSubclass.CALLTOKEN:
            self._on_calltoken(frame, now)
        elif sub == IaxSubclass.AUTHREQ:
            self._on_authreq(frame, now)
        elif sub == IaxSubclass.AUTHREP:
            self._on_authrep(frame, now)
        elif sub == IaxSubclass.ACCEPT:
            self._on_accept(frame, now)
        elif sub == IaxSubclass.TXREQ:
            # We do not hand the media path over to another host (no native transfer).
            self._send(now, FrameType.IAX, IaxSubclass.TXREJ)
        elif sub not in _KNOWN_IAX:
            ies: IeList = [(IE.IAX_UNKNOWN, sub & 0xFF)]
            self._send(now, FrameType.IAX, IaxSubclass.UNSUPPORT, ies=ies)
        # Everything else known (NEW duplicates in order, QUELCH, MWI, UNSUPPORT...) is ACKed.

    def _on_calltoken(self, frame: FullFrame, now: float) -> None:
        # Never ACK a CALLTOKEN (it came from the peer's stateless call 1).
        self._suppress_ack = True
        token = frame.ie(IE.CALLTOKEN)
        if (
            self.state is not _S.CALLING
            or self.is_inbound
            or not isinstance(token, str)
            or not token
            or self._token_rounds >= 3
        ):
            return
        self._token_rounds += 1
        self._go(_T.TOKEN)
        # Start the dialog again with the token: seqnos back to 0, dcall 0, a new timestamp.
        self._queue.clear()
        self.oseq = 0
        self.iseq = 0
        self.peer_callno = 0
        self._send_new(now, token)

    def _on_authreq(self, frame: FullFrame, now: float) -> None:
        if self.is_inbound or self.state is not _S.CALLING:
            return
        assert self._dial is not None
        methods = frame.ie(IE.AUTHMETHODS)
        challenge = frame.ie(IE.CHALLENGE)
        secret = self._dial.secret
        if (
            isinstance(methods, int)
            and methods & AUTH_MD5
            and isinstance(challenge, str)
            and secret is not None
        ):
            self._go(_T.AUTH)
            self._send(
                now,
                FrameType.IAX,
                IaxSubclass.AUTHREP,
                ies=[(IE.MD5_RESULT, md5_response(challenge, secret))],
            )
            return
        # No secret for this peer, or it wants RSA/plaintext only: we cannot authenticate.
        self._hangup(now, "Unable to authenticate", 50)

    def _on_authrep(self, frame: FullFrame, now: float) -> None:
        if not self.is_inbound or self.state is not _S.AUTHENTICATING:
            return
        assert self._setup is not None and self._setup.challenge is not None
        answer = frame.ie(IE.MD5_RESULT)
        ok = check_md5(
            self._setup.challenge, self._setup.secret, answer if isinstance(answer, str) else None
        )
        if not ok:
            # Same reply for a wrong password and an unknown user (no username probing).
            self._go(_T.END)
            self._send(
                now, FrameType.IAX, IaxSubclass.REJECT, ies=_cause_ies("No authority found", 50)
            )
            self._event(CallRejected(self.callno, "No authority found", 50, by_peer=False))
            return
        self._authenticated = True
        self._accept(now)

    def _on_accept(self, frame: FullFrame, now: float) -> None:
        if self.is_inbound or self.state not in _SETUP_STATES:
            return
        fmt = _format_of(frame)
        if fmt is None:
            # No FORMAT at all: the callee took what we asked for.
            fmt = Offer.for_policy(self.policy).format
        self._go(_T.ACCEPT)
        if single_format(fmt) is None or not self.policy.accepts(fmt):
            # Spec Errors rule 5: a format we never offered ends the call with this cause.
            self._hangup(now, CAUSE_NO_CODEC, CAUSECODE_NO_CODEC)
            return
        self.format = fmt
        self._start_keepalives(now)
        self._event(CallAccepted(self.callno, fmt))
        # The ACK goes out now (default path): Asterisk starts its side on it.

    def _on_control(self, frame: FullFrame) -> None:
        if self.state not in _MEDIA_STATES:
            return  # CONTROL before ACCEPT is not allowed (RFC 5456 §6.3.1): ACK and ignore
        sub = frame.subclass
        if sub == ControlSubclass.ANSWER:
            if not self.is_inbound and self.state is _S.ACCEPTED:
                self._go(_T.ANSWER)
                self._event(CallAnswered(self.callno))
        elif sub == ControlSubclass.RINGING:
            if not self.is_inbound:
                self._event(CallRinging(self.callno))
        elif sub == ControlSubclass.RADIO_KEY:
            self._event(RadioKeyed(self.callno, frame.ts))
        elif sub == ControlSubclass.RADIO_UNKEY:
            self._event(RadioUnkeyed(self.callno, frame.ts))
        else:
            self._event(ControlReceived(self.callno, sub, frame.ts))

    def _on_voice(self, frame: FullFrame) -> None:
        fmt = frame.subclass
        if single_format(fmt) is None or not self.policy.accepts(fmt):
            return  # a codec we never agreed to: nothing could decode it
        previous = self.peer_voice_format if self.peer_voice_format is not None else self.format
        self.peer_voice_format = fmt
        if previous is not None and previous != fmt:
            self._event(MediaFormatChanged(self.callno, fmt))
        self._event(VoiceFullReceived(self.callno, fmt, frame.ts, bytes(frame.payload)))

    def _rtt_sample(self, echoed_ts: int, now: float) -> None:
        probe = self._probes.pop(echoed_ts, None)
        if probe is None or probe[1]:
            return  # not our probe, or ambiguous after a retransmission (Karn): no sample
        sample = now - probe[0]
        if 0 <= sample < 60.0:
            self.rtt = max(sample, 0.001)

    def _rr_ies(self) -> IeList:
        s = self._rr_stats() if self._rr_stats is not None else RrStats()
        return [
            (IE.RR_JITTER, _u32(s.jitter)),
            (IE.RR_LOSS, ((min(s.loss_percent, 100) & 0xFF) << 24) | (_u32(s.lost) & 0xFFFFFF)),
            (IE.RR_PKTS, _u32(s.packets)),
            (IE.RR_DELAY, min(max(s.delay, 0), 0xFFFF)),
            (IE.RR_DROPPED, _u32(s.dropped)),
            (IE.RR_OOO, _u32(s.out_of_order)),
        ]


# --- helpers ------------------------------------------------------------------------------------


def _u32(v: int) -> int:
    return min(max(int(v), 0), 0xFFFFFFFF)


def _digit(subclass: int) -> str:
    return chr(subclass) if 0 < subclass < 0x80 else "?"


def _cause_ies(cause: str | None, causecode: int) -> IeList:
    ies: IeList = []
    if cause:
        ies.append((IE.CAUSE, cause))
    ies.append((IE.CAUSECODE, causecode & 0xFF))
    return ies


def _cause_of(frame: FullFrame) -> tuple[str, int]:
    cause = frame.ie(IE.CAUSE)
    code = frame.ie(IE.CAUSECODE)
    return (cause if isinstance(cause, str) else "", code if isinstance(code, int) else 0)


def _format_of(frame: FullFrame) -> int | None:
    """FORMAT2 if present (version 0), else FORMAT."""
    f2 = frame.ie(IE.FORMAT2)
    if isinstance(f2, Sequence) and len(f2) == 2 and f2[0] == 0:
        return int(f2[1])
    f = frame.ie(IE.FORMAT)
    return f if isinstance(f, int) and not isinstance(f, bool) else None
