"""The registration client: keeps this node registered with its registrar (sans-I/O).

One `Registration` owns the node's standing with one registrar. It never touches a socket or a
clock: every input carries `now` (float seconds, monotonic) and every input returns an `Output`
with the frames to send to the registrar, the events that happened and the next deadline, at
which the caller calls `timer(now)`.

Each attempt is a short IAX2 dialog from a fresh source call number (iax2.md §4.4):

    REGREQ [USERNAME, REFRESH, CALLTOKEN(empty)]  dcall 0, oseq 0
      <- CALLTOKEN [token]          (optional) resend with the token, seqnos 0, new ts
      <- REGAUTH [AUTHMETHODS, CHALLENGE]
    REGREQ [USERNAME, REFRESH, MD5_RESULT, CALLTOKEN(empty)]  oseq 1, iseq 1
      <- REGACK [USERNAME, DATETIME, REFRESH, APPARENT_ADDR]   -> ACK, registered
      <- REGREJ [CAUSE, CAUSECODE]                             -> ACK, failed

REGREL (`deregister`) runs the same dialog. The node re-registers at 5/6 of the REFRESH the
registrar granted. An unanswered request is retransmitted like any full frame (iax2.md §1.9) and
then abandoned; failed attempts are retried later, so `register()` is needed only once.

The caller routes to `receive()` only full frames that came from the registrar's address and
whose destination call number is in `callnos`. Secrets: the password is used for one MD5
digest and appears in no frame, repr, event, reason or log line.
"""

from __future__ import annotations

import enum
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from node._core import FullFrame
from node.errors import LocalProtocolError
from node.iax2.constants import IE, FrameType, IaxSubclass
from node.iax2.delivery import echo_reply
from node.iax2.stateless import APATHETIC_CALLNO
from node.machine import DeadlineTable, Outbox, TransitionTable
from node.secrets import Secret, shown_text

__all__ = [
    "AUTH_MD5",
    "FAKE_ACK_ADDR",
    "Deregistered",
    "Output",
    "Registered",
    "Registration",
    "RegistrationEvent",
    "RegistrationFailed",
    "RegistrationStanding",
    "RegistrationState",
]

logger = logging.getLogger(__name__)

StateT = TypeVar("StateT", bound=enum.Enum)

#: AUTHMETHODS bits (IE 14): plaintext, MD5 challenge/response, RSA signature.
AUTH_PLAINTEXT = 0x1
AUTH_MD5 = 0x2
AUTH_RSA = 0x4

#: The APPARENT_ADDR host of an acknowledgement that does not register anything (the
#: AllStarLink registrar answers some refused registrations this way).
FAKE_ACK_ADDR = "255.255.255.255"

#: Retransmission (iax2.md §1.9, Asterisk `__attempt_transmit`): first retry after 2 x RTT
#: clamped to [0.1 s, 10 s], each later one 10 times longer (capped), 4 transmissions in all.
INITIAL_RTT = 1.0
MIN_RETRY = 0.1
MAX_RETRY = 10.0
RETRY_FACTOR = 10
MAX_SENDS = 4

#: After an unanswered attempt, try again after this long (or after `refresh`, if shorter).
RETRY_AFTER_NO_REPLY = 30.0

#: Call-token and challenge rounds accepted within one attempt before giving up on it.
MAX_TOKEN_ROUNDS = 3
MAX_AUTH_ROUNDS = 2

#: A registrar's CAUSE text is shown to operators: keep it short and printable.
MAX_CAUSE_LEN = 120

#: CAUSECODE of the REJECT sent when we cannot answer a challenge (Q.931
#: FACILITY_NOT_SUBSCRIBED, what Asterisk sends in the same situation).
CAUSE_FACILITY_NOT_SUBSCRIBED = 50

#: IE values as this module builds them (the frame core accepts these for any IE kind it uses).
_IeValue = str | int | bytes


# --- events -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegistrationEvent:
    """Base of everything a `Registration` reports."""


@dataclass(frozen=True, slots=True)
class Registered(RegistrationEvent):
    """The registrar accepted us. Reported when we become registered, and again only when a
    refresh brings a different `refresh` or `apparent_addr` (not on every routine refresh)."""

    #: Seconds the registrar granted (its REFRESH IE, or the one we asked for if it sent none).
    refresh: int
    #: Our address as the registrar sees it (APPARENT_ADDR), or None if it did not say.
    apparent_addr: tuple[str, int] | None

    def __post_init__(self) -> None:
        if self.refresh <= 0:
            raise ValueError("refresh must be positive")


@dataclass(frozen=True, slots=True)
class RegistrationFailed(RegistrationEvent):
    """An attempt failed; the node is not registered and will retry at `next_deadline()`."""

    #: Plain text safe to show to an operator; never contains a secret.
    reason: str

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError("a failure needs a reason")


@dataclass(frozen=True, slots=True)
class Deregistered(RegistrationEvent):
    """Deregistration finished: the node is not registered and will not retry by itself.

    Reported whether or not the registrar confirmed the REGREL; without a confirmation the
    registrar's record lapses on its own when its refresh interval runs out."""


@dataclass(frozen=True, slots=True)
class Output:
    """What one input produced: frames for the registrar, events, and the next deadline."""

    #: Frames to send to the registrar's address, in order.
    frames: tuple[FullFrame, ...] = ()
    #: What happened, in order.
    events: tuple[RegistrationEvent, ...] = ()
    #: Absolute time (same clock as `now`) at which to call `timer()`, or None for never.
    deadline: float | None = None


# --- states -------------------------------------------------------------------------------------


class RegistrationState(enum.Enum):
    """Where the registration stands. `_TRANSITIONS` lists every legal move."""

    #: Not registered and not trying (the start, and after deregistration).
    IDLE = "idle"
    #: A REGREQ dialog is under way while not registered.
    REGISTERING = "registering"
    #: The registrar accepted us; waiting for the refresh time.
    REGISTERED = "registered"
    #: A refresh REGREQ dialog is under way; still registered until it fails.
    REFRESHING = "refreshing"
    #: The last attempt failed; waiting for the retry time.
    RETRY_WAIT = "retry_wait"
    #: A REGREL dialog is under way; no longer registered.
    RELEASING = "releasing"


class _Move(enum.Enum):
    START = "start"  # register() or the retry timer: a new REGREQ dialog
    REFRESH = "refresh"  # refresh timer or register() while registered
    ACCEPTED = "accepted"  # a genuine REGACK
    FAILED = "failed"  # REGREJ, fake REGACK, no reply, unusable challenge
    RELEASE = "release"  # deregister(): a REGREL dialog
    DROP = "drop"  # deregister() with nothing held at the registrar
    RELEASED = "released"  # the REGREL dialog ended


_S = RegistrationState
_TRANSITIONS: TransitionTable[RegistrationState, _Move] = TransitionTable(
    {
        _S.IDLE: {_Move.START: _S.REGISTERING},
        _S.REGISTERING: {
            _Move.ACCEPTED: _S.REGISTERED,
            _Move.FAILED: _S.RETRY_WAIT,
            _Move.RELEASE: _S.RELEASING,
        },
        _S.REGISTERED: {_Move.REFRESH: _S.REFRESHING, _Move.RELEASE: _S.RELEASING},
        _S.REFRESHING: {
            _Move.ACCEPTED: _S.REGISTERED,
            _Move.FAILED: _S.RETRY_WAIT,
            _Move.RELEASE: _S.RELEASING,
        },
        _S.RETRY_WAIT: {_Move.START: _S.REGISTERING, _Move.DROP: _S.IDLE},
        _S.RELEASING: {_Move.START: _S.REGISTERING, _Move.RELEASED: _S.IDLE},
    }
)


class _Timer(enum.Enum):
    RETRANSMIT = "retransmit"  # resend the outstanding request, or give up on it
    REFRESH = "refresh"  # re-register before the registrar's record lapses
    RETRY = "retry"  # try again after a failed attempt


# --- helpers ------------------------------------------------------------------------------------


def _md5_response(challenge: bytes, secret: Secret) -> str:
    """MD5_RESULT: lowercase hex MD5 of the challenge bytes exactly as received, then the secret.

    Private on purpose: meant to be folded into `node.iax2.auth` once that module lands.
    """
    return hashlib.md5(challenge + secret.reveal().encode("utf-8")).hexdigest()


def _raw_ie(frame: FullFrame, ie: int) -> bytes | None:
    """The first IE `ie` as raw bytes (tokens and challenges are echoed byte for byte)."""
    for ident, data in frame.ies:
        if ident == ie:
            return bytes(data)
    return None


def _seq_before(a: int, b: int) -> bool:
    """Whether 8-bit sequence number `a` comes before `b` (mod 256, window 128)."""
    return 0 < ((b - a) & 0xFF) < 128


def _methods_text(methods: int) -> str:
    names = [n for bit, n in ((AUTH_PLAINTEXT, "plaintext"), (AUTH_RSA, "RSA")) if methods & bit]
    return " and ".join(names) if names else "no known method"


@dataclass(slots=True)
class _Request:
    """The one reliable frame a dialog has in flight (REGREQ or REGREL)."""

    subclass: int
    ies: list[tuple[int, _IeValue]]
    ts: int
    oseq: int
    dcall: int
    first_sent: float
    sends: int
    interval: float
    give_up_at: float
    acked: bool = False


@dataclass(slots=True)
class _Dialog:
    """One registration attempt: a source call number and its sequence/timestamp state."""

    scall: int
    subclass: int  # REGREQ or REGREL
    origin: float
    dcall: int = 0
    oseq: int = 0
    iseq: int = 0
    last_ts: int = 0
    token: bytes | None = None
    token_rounds: int = 0
    auth_rounds: int = 0
    md5: str | None = None
    request: _Request | None = None
    done: bool = False

    def next_ts(self, now: float) -> int:
        """Our timestamp for a new frame: ms since the dialog began, strictly increasing and
        never 0 (peers treat 0 as "compute one", iax2.md §1.10)."""
        ts = max(int((now - self.origin) * 1000), self.last_ts + 1)
        self.last_ts = ts
        return ts


# --- the machine --------------------------------------------------------------------------------


class RegistrationStanding(Generic[StateT]):
    """What a registration machine knows of its standing with the registrar, the same for the
    IAX2 machine here and the HTTP one (allstar/http_registration.py): its state, whether it is
    registered, our address as the registrar saw it, and why the last attempt failed. Both take
    non-decreasing `now` on every input."""

    def __init__(self, state: StateT, now: float) -> None:
        self._state = state
        self._apparent: tuple[str, int] | None = None
        self._last_failure: str | None = None
        self._now = now

    @property
    def state(self) -> StateT:
        return self._state

    @property
    def registered(self) -> bool:
        """Whether the registrar currently holds our registration (as far as we know)."""
        raise NotImplementedError

    @property
    def apparent_addr(self) -> tuple[str, int] | None:
        """Our address as the registrar saw it in its last confirming reply, while registered
        (port 0 when the reply gave none)."""
        return self._apparent if self.registered else None

    @property
    def last_failure(self) -> str | None:
        """The reason of the last failed attempt, until an attempt succeeds (never a secret)."""
        return self._last_failure

    def _advance(self, now: float) -> None:
        if now < self._now:
            raise LocalProtocolError(f"time went backwards ({now} < {self._now})")
        self._now = now


class Registration(RegistrationStanding[RegistrationState]):
    """Registration client for one registrar (sans-I/O).

    `callno_source()` returns a free source call number (2..32767) for each new dialog; the
    caller keeps numbers in `callnos` reserved. `secret` may be None when the registrar does not
    challenge (or until `set_secret`). Inputs must carry non-decreasing `now`.
    """

    def __init__(
        self,
        peer: tuple[str, int],
        username: str,
        secret: Secret | str | None,
        refresh: int,
        callno_source: Callable[[], int],
        now: float,
    ) -> None:
        if not username:
            raise ValueError("username must not be empty")
        if not 1 <= refresh <= 0xFFFF:
            raise ValueError(f"refresh {refresh} is outside 1-65535 seconds")
        super().__init__(RegistrationState.IDLE, now)
        self.peer = (peer[0], int(peer[1]))
        self.username = username
        self.refresh = refresh
        self._secret: Secret | None = None
        self.set_secret(secret)
        self._callno_source = callno_source
        self._rtt = INITIAL_RTT
        self._dialog: _Dialog | None = None
        # The last finished dialog, kept so a retransmitted REGACK/REGREJ is ACKed again.
        self._previous: _Dialog | None = None
        self._timers: DeadlineTable[_Timer] = DeadlineTable()
        self._granted: int | None = None
        self._out: Outbox[FullFrame, RegistrationEvent] = Outbox()

    # --- properties ---

    @property
    def registered(self) -> bool:
        """Whether the registrar currently holds our registration (as far as we know)."""
        return self._state in (RegistrationState.REGISTERED, RegistrationState.REFRESHING)

    @property
    def granted_refresh(self) -> int | None:
        """The refresh interval the registrar granted, while registered."""
        return self._granted if self.registered else None

    @property
    def rtt(self) -> float:
        """Round-trip estimate (seconds) used for the first retransmission delay."""
        return self._rtt

    @property
    def callnos(self) -> frozenset[int]:
        """Source call numbers still in use: frames to these belong to `receive()`."""
        return frozenset(d.scall for d in (self._dialog, self._previous) if d is not None)

    def next_deadline(self) -> float | None:
        return self._timers.earliest()

    def set_secret(self, secret: Secret | str | None) -> None:
        """Provide or replace the password (POST /secrets); used from the next challenge on."""
        if isinstance(secret, str):
            secret = Secret(secret) if secret else None
        if secret is not None and not isinstance(secret, Secret):
            raise TypeError(f"secret must be a Secret, str or None, not {type(secret).__name__}")
        self._secret = secret

    def __repr__(self) -> str:
        host, port = self.peer
        return (
            f"Registration(peer={host}:{port}, username={self.username!r}, "
            f"state={self._state.value}, registered={self.registered})"
        )

    # --- commands ---

    def register(self, now: float) -> Output:
        """Start registering now (or refresh now, if registered). A no-op while an attempt is
        already under way."""
        self._advance(now)
        if self._state in (RegistrationState.REGISTERING, RegistrationState.REFRESHING):
            return self._output()
        if self._state == RegistrationState.REGISTERED:
            self._move(_Move.REFRESH)
        else:
            self._move(_Move.START)
        self._timers.cancel(_Timer.REFRESH, _Timer.RETRY)
        self._out.send(self._open(IaxSubclass.REGREQ, now))
        return self._output()

    def deregister(self, now: float) -> Output:
        """Stop being registered: send REGREL (answering a challenge again if asked) and stop
        refreshing. `Deregistered` follows when that dialog ends. From `RETRY_WAIT` nothing is
        held at the registrar, so this ends at once. A no-op while already releasing."""
        self._advance(now)
        if self._state == RegistrationState.RELEASING:
            return self._output()
        if self._state == RegistrationState.IDLE:
            raise LocalProtocolError("not registered: nothing to deregister")
        self._timers.clear()
        if self._state == RegistrationState.RETRY_WAIT:
            self._move(_Move.DROP)
            self._retire_dialog()
            self._out.report(Deregistered())
            return self._output()
        self._move(_Move.RELEASE)
        self._apparent = None
        self._granted = None
        self._out.send(self._open(IaxSubclass.REGREL, now))
        return self._output()

    # --- inputs ---

    def timer(self, now: float) -> Output:
        """Fire every deadline that has passed."""
        self._advance(now)
        while True:
            due = self._timers.due(now)
            if not due:
                break
            kind = min(due, key=self._timers.__getitem__)
            self._timers.cancel(kind)
            if kind is _Timer.RETRANSMIT:
                self._retransmit(now)
            elif kind is _Timer.REFRESH:
                self._move(_Move.REFRESH)
                self._out.send(self._open(IaxSubclass.REGREQ, now))
            else:
                self._move(_Move.START)
                self._out.send(self._open(IaxSubclass.REGREQ, now))
        return self._output()

    def receive(self, frame: FullFrame, now: float) -> Output:
        """Handle a full frame from the registrar. Peer faults never raise: unexpected frames
        are ignored (or re-ACKed when they repeat something already handled)."""
        self._advance(now)
        if not isinstance(frame, FullFrame) or frame.ftype != FrameType.IAX:
            return self._output()
        dialog = self._dialog
        if dialog is None or frame.dcall != dialog.scall:
            previous = self._previous
            if previous is not None and frame.dcall == previous.scall:
                self._reack(previous, frame)
            return self._output()
        sub = frame.subclass
        if dialog.done:
            self._reack(dialog, frame)
        elif sub == IaxSubclass.CALLTOKEN:
            self._on_calltoken(dialog, frame, now)
        elif sub == IaxSubclass.REGREJ and frame.scall == APATHETIC_CALLNO:
            # A stateless refusal of our call token (Asterisk's answer to a token that is bad or
            # older than 10 s, e.g. on a late retransmission) is outside the dialog's sequence
            # numbering: it comes with oseq 0 whatever we sent. A fresh token may well work, so
            # this is retried as soon as silence would be.
            self._note_acked(dialog, frame, now)
            self._out.send(self._ack(dialog, frame))
            self._finish_failed(dialog, self._reject_reason(frame), now, retry_soon=True)
        elif sub == IaxSubclass.ACK:
            self._note_acked(dialog, frame, now)
        elif sub == IaxSubclass.INVAL:
            self._finish_failed(
                dialog, "registrar dropped the registration dialog", now, retry_soon=True
            )
        elif frame.oseq != dialog.iseq:
            if _seq_before(frame.oseq, dialog.iseq):
                self._out.send(self._ack(dialog, frame))  # a repeat: ACK it again
            # else: from the future (we missed one); the registrar will retransmit it.
        else:
            dialog.iseq = (dialog.iseq + 1) & 0xFF
            if frame.scall != APATHETIC_CALLNO:
                dialog.dcall = frame.scall
            self._note_acked(dialog, frame, now)
            if sub == IaxSubclass.REGAUTH:
                self._on_regauth(dialog, frame, now)
            elif sub == IaxSubclass.REGACK:
                self._out.send(self._ack(dialog, frame))
                self._on_regack(dialog, frame, now)
            elif sub == IaxSubclass.REGREJ:
                self._out.send(self._ack(dialog, frame))
                self._finish_failed(dialog, self._reject_reason(frame), now, retry_soon=False)
            else:
                # Anything else (PING, LAGRQ, ...) is acknowledged and otherwise ignored.
                self._out.send(self._ack(dialog, frame))
        return self._output()

    # --- dialog handling ---

    def _open(self, subclass: int, now: float) -> FullFrame:
        """Start a new dialog from a fresh call number and send its first request."""
        self._retire_dialog()
        dialog = _Dialog(scall=self._callno_source(), subclass=subclass, origin=now)
        self._dialog = dialog
        logger.debug(
            "registration %s: %s from call %d",
            self.username,
            IaxSubclass(subclass).name,
            dialog.scall,
        )
        return self._send_request(dialog, now)

    def _retire_dialog(self) -> None:
        if self._dialog is not None:
            self._previous = self._dialog
            self._previous.done = True
            self._previous.request = None
        self._dialog = None
        self._timers.cancel(_Timer.RETRANSMIT)

    def _request_ies(self, dialog: _Dialog) -> list[tuple[int, _IeValue]]:
        ies: list[tuple[int, _IeValue]] = [(IE.USERNAME, self.username)]
        if dialog.subclass == IaxSubclass.REGREQ:
            ies.append((IE.REFRESH, self.refresh))
        if dialog.md5 is not None:
            ies.append((IE.MD5_RESULT, dialog.md5))
        # Last, as Asterisk requires. Empty says "I support call tokens"; once the dialog has a
        # registrar call number the registrar no longer checks it (Asterisk sends it anyway).
        ies.append((IE.CALLTOKEN, dialog.token if dialog.dcall == 0 and dialog.token else b""))
        return ies

    def _send_request(self, dialog: _Dialog, now: float) -> FullFrame:
        interval = min(max(2 * self._rtt, MIN_RETRY), MAX_RETRY)
        total, step = 0.0, interval
        for _ in range(MAX_SENDS):
            total += step
            step = min(step * RETRY_FACTOR, MAX_RETRY)
        request = _Request(
            subclass=dialog.subclass,
            ies=self._request_ies(dialog),
            ts=dialog.next_ts(now),
            oseq=dialog.oseq,
            dcall=dialog.dcall,
            first_sent=now,
            sends=1,
            interval=interval,
            give_up_at=now + total,
        )
        dialog.request = request
        dialog.oseq = (dialog.oseq + 1) & 0xFF
        self._timers.set(_Timer.RETRANSMIT, now + interval)
        return self._request_frame(dialog, request, retrans=False)

    def _request_frame(self, dialog: _Dialog, request: _Request, *, retrans: bool) -> FullFrame:
        return FullFrame(
            FrameType.IAX,
            request.subclass,
            scall=dialog.scall,
            dcall=request.dcall,
            ts=request.ts,
            oseq=request.oseq,
            # A retransmission carries the current iseq (Asterisk `update_packet`).
            iseq=dialog.iseq,
            retrans=retrans,
            ies=[*request.ies],
        )

    def _retransmit(self, now: float) -> None:
        dialog = self._dialog
        request = dialog.request if dialog is not None else None
        if dialog is None or request is None:
            return
        if request.acked or request.sends >= MAX_SENDS:
            if now < request.give_up_at:
                self._timers.set(_Timer.RETRANSMIT, request.give_up_at)
                return
            self._finish_failed(dialog, "no reply from registrar", now, retry_soon=True)
            return
        request.sends += 1
        request.interval = min(request.interval * RETRY_FACTOR, MAX_RETRY)
        self._timers.set(
            _Timer.RETRANSMIT,
            now + request.interval if request.sends < MAX_SENDS else request.give_up_at,
        )
        self._out.send(self._request_frame(dialog, request, retrans=True))

    def _note_acked(self, dialog: _Dialog, frame: FullFrame, now: float) -> None:
        """Every full frame's iseq acknowledges what we sent before it (iax2.md §1.8)."""
        request = dialog.request
        if request is None or request.acked:
            return
        answers = frame.subclass == IaxSubclass.CALLTOKEN and frame.ts == request.ts
        if not answers and not _seq_before(request.oseq, frame.iseq):
            return
        request.acked = True
        if request.sends == 1:
            # Karn: only an unambiguous exchange measures the round trip.
            self._rtt = max(now - request.first_sent, 0.0)
        # No more resends; the give-up time still applies while we wait for the answer.
        self._timers.set(_Timer.RETRANSMIT, request.give_up_at)

    def _reack(self, dialog: _Dialog, frame: FullFrame) -> None:
        """A finished dialog only ACKs repeats of frames it already handled."""
        if frame.subclass in (IaxSubclass.ACK, IaxSubclass.INVAL, IaxSubclass.CALLTOKEN):
            return
        if frame.oseq == dialog.iseq or not _seq_before(frame.oseq, dialog.iseq):
            return
        self._out.send(self._ack(dialog, frame))

    def _ack(self, dialog: _Dialog, frame: FullFrame) -> FullFrame:
        """ACK `frame`: echo its timestamp; oseq is ours (ACKs do not advance it)."""
        return echo_reply(
            frame, IaxSubclass.ACK, scall=dialog.scall, oseq=dialog.oseq, iseq=dialog.iseq
        )

    def _on_calltoken(
        self,
        dialog: _Dialog,
        frame: FullFrame,
        now: float,
    ) -> None:
        request = dialog.request
        if request is None or request.dcall != 0:
            return  # tokens only answer the dialog's opening request
        if dialog.token is not None and frame.ts != request.ts:
            return  # the answer to an earlier transmission we have already resent
        token = _raw_ie(frame, IE.CALLTOKEN)
        if not token:
            return
        if dialog.token_rounds >= MAX_TOKEN_ROUNDS:
            self._finish_failed(
                dialog, "registrar kept asking for a new call token", now, retry_soon=True
            )
            return
        self._note_acked(dialog, frame, now)
        dialog.token_rounds += 1
        dialog.token = token
        # The request starts over: sequence numbers 0, a new timestamp (iax2.md §4.3).
        dialog.oseq = 0
        dialog.iseq = 0
        self._out.send(self._send_request(dialog, now))

    def _on_regauth(
        self,
        dialog: _Dialog,
        frame: FullFrame,
        now: float,
    ) -> None:
        methods = frame.ie(IE.AUTHMETHODS)
        challenge = _raw_ie(frame, IE.CHALLENGE)
        reason: str | None = None
        if dialog.auth_rounds >= MAX_AUTH_ROUNDS:
            reason = "registrar repeated its challenge (is the password right?)"
        elif not isinstance(methods, int):
            reason = "registrar asked for authentication without naming a method"
        elif not methods & AUTH_MD5:
            # Never fall back to plaintext: that would hand the password to whoever asked.
            reason = (
                f"registrar offers only {_methods_text(methods)} authentication; "
                "this node answers MD5 challenges only"
            )
        elif challenge is None:
            reason = "registrar sent an MD5 request without a challenge"
        elif self._secret is None:
            reason = "registrar asks for a password, but none is configured"
        if reason is not None:
            self._out.send(self._give_up_reject(dialog, reason, now))
            self._finish_failed(dialog, reason, now, retry_soon=False)
            return
        assert challenge is not None and self._secret is not None
        dialog.auth_rounds += 1
        dialog.md5 = _md5_response(challenge, self._secret)
        self._out.send(self._send_request(dialog, now))

    def _give_up_reject(self, dialog: _Dialog, reason: str, now: float) -> FullFrame:
        """Tell the registrar we abandon the dialog, as Asterisk does when it cannot answer a
        REGAUTH, so it stops retransmitting. Sent once; losing it costs only the registrar's
        retries."""
        frame = FullFrame(
            FrameType.IAX,
            IaxSubclass.REJECT,
            scall=dialog.scall,
            dcall=dialog.dcall,
            ts=dialog.next_ts(now),
            oseq=dialog.oseq,
            iseq=dialog.iseq,
            ies=[(IE.CAUSE, reason), (IE.CAUSECODE, CAUSE_FACILITY_NOT_SUBSCRIBED)],
        )
        dialog.oseq = (dialog.oseq + 1) & 0xFF
        return frame

    def _on_regack(self, dialog: _Dialog, frame: FullFrame, now: float) -> None:
        if dialog.subclass == IaxSubclass.REGREL:
            self._close_dialog()
            self._move(_Move.RELEASED)
            logger.debug("registration %s: released", self.username)
            self._out.report(Deregistered())
            return
        addr = frame.ie(IE.APPARENT_ADDR)
        apparent = (str(addr[0]), int(addr[1])) if isinstance(addr, tuple) else None
        if apparent is not None and apparent[0] == FAKE_ACK_ADDR:
            self._finish_failed(
                dialog, "registrar sent a fake acknowledgement", now, retry_soon=False
            )
            return
        granted = frame.ie(IE.REFRESH)
        if not isinstance(granted, int) or granted <= 0:
            granted = self.refresh
        changed = not self.registered or granted != self._granted or apparent != self._apparent
        self._close_dialog()
        self._move(_Move.ACCEPTED)
        self._granted = granted
        self._apparent = apparent
        self._last_failure = None
        # Re-register a little early (Asterisk `iax2_do_register`): the registrar's record
        # lapses after the granted interval (plus a grace of 10 s in Asterisk).
        self._timers.set(_Timer.REFRESH, now + granted * 5 / 6)
        logger.debug("registration %s: registered for %d s", self.username, granted)
        if changed:
            self._out.report(Registered(refresh=granted, apparent_addr=apparent))

    def _finish_failed(self, dialog: _Dialog, reason: str, now: float, *, retry_soon: bool) -> None:
        self._close_dialog()
        if dialog.subclass == IaxSubclass.REGREL:
            # Nothing to retry: locally we are deregistered either way.
            self._move(_Move.RELEASED)
            logger.debug("registration %s: release unconfirmed (%s)", self.username, reason)
            self._out.report(Deregistered())
            return
        self._move(_Move.FAILED)
        self._apparent = None
        self._granted = None
        self._last_failure = reason
        # Silence may be a passing outage: come back soon. A refusal will not change by itself
        # soon, so wait a whole refresh interval, as Asterisk does, to spare the registrar.
        delay = min(RETRY_AFTER_NO_REPLY, float(self.refresh)) if retry_soon else self.refresh
        self._timers.set(_Timer.RETRY, now + delay)
        logger.debug("registration %s: failed (%s)", self.username, reason)
        self._out.report(RegistrationFailed(reason))

    def _close_dialog(self) -> None:
        """The dialog is over: stop retransmitting but keep it to re-ACK repeats."""
        dialog = self._dialog
        if dialog is not None:
            dialog.done = True
            dialog.request = None
        self._timers.cancel(_Timer.RETRANSMIT)

    def _reject_reason(self, frame: FullFrame) -> str:
        cause = frame.ie(IE.CAUSE)
        text = self._safe_text(cause) if isinstance(cause, str) else ""
        return (
            f"rejected by registrar: {text}" if text else "rejected by registrar (no cause given)"
        )

    def _safe_text(self, text: str) -> str:
        """A registrar's free text, made fit to show (`node.secrets.shown_text`)."""
        private = [d.md5 for d in (self._dialog, self._previous) if d is not None and d.md5]
        if self._secret is not None:
            private.append(self._secret.reveal())
        return shown_text(text, private, MAX_CAUSE_LEN)

    # --- plumbing ---

    def _move(self, move: _Move) -> None:
        self._state = _TRANSITIONS.move(self._state, move, "registration")

    def _output(self) -> Output:
        frames, events = self._out.take()
        return Output(frames, events, self.next_deadline())
