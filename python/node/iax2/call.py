"""One IAX2 call, inbound or outbound, as a sans-I/O state machine.

A `Call` never touches a socket or a clock. Its inputs are `receive(frame, now)`,
`timer(now)` and the commands (`start_outbound`, `answer`, `reject`, `hangup`, `send_dtmf`,
`send_text`, `key`, `unkey`, `send_voice_full`); every one of them returns one frozen
`Output(frames, events, deadline)`: the full frames to send to the peer (in order), what happened
(past-tense `CallEvent`s), and the absolute time at which `timer()` must be called next.
`now` is float seconds of a monotonic clock; inputs must be monotonic.

Beside this file: the states and their transition table (call_state.py), the events
(call_events.py), the IEs (call_ies.py) and reliable delivery, the base class (delivery.py);
their public names are importable from here too. What the machine guarantees on the wire
beyond delivery (research/iax2.md §1.8-1.11 and the 10 traps):

* Every in-order full frame is acknowledged: implicitly when our reply is itself a full frame
  that advances oseqno (it carries the new iseqno), else with an explicit ACK that echoes the
  frame's timestamp and goes to the sender's call number. An ACK is never acknowledged.
* A frame sent `MAX_SENDS` times without acknowledgement loses the call (`CallLost`, no
  HANGUP: the peer is not answering anyway).
* Timestamps: milliseconds from the call's first transmission, never 0, strictly increasing for
  non-voice full frames (`timestamps.CallClock`); ACK/PONG/LAGRP echo the received timestamp.
* PING every 21 s and LAGRQ every 10 s once the call is accepted; PONG carries the RR IEs.
* HANGUP/REJECT received: ACK, then keep the dead call `LINGER` seconds so a retransmitted HANGUP
  is ACKed again rather than answered with INVAL. Any other frame into an ended call (ours or
  theirs ended it) is dropped unanswered, as chan_iax2 drops frames for a call it destroyed.
  INVAL received: the call is gone at once.
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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from node._core import FullFrame
from node.errors import LocalProtocolError
from node.iax2 import call_events
from node.iax2.auth import AUTH_MD5, check_md5, md5_response
from node.iax2.call_events import (
    CallAccepted,
    CallAnswered,
    CallEvent,
    CallHungUp,
    CallIncoming,
    CallLost,
    CallRejected,
    CallRinging,
    ControlReceived,
    DtmfBegan,
    DtmfReceived,
    LossReason,
    MediaFormatChanged,
    RadioKeyed,
    RadioUnkeyed,
    TextReceived,
    VoiceFullReceived,
)
from node.iax2.call_ies import (
    DialParams,
    InboundSetup,
    RrStats,
    authreq_ies,
    cause_ies,
    cause_of,
    format_ies,
    format_of,
    new_ies,
    rr_ies,
    rr_of,
)
from node.iax2.call_state import (
    LIVE_STATES,
    MEDIA_STATES,
    SETUP_STATES,
    TRANSITIONS,
    CallState,
    CallTimer,
    CallTrigger,
    Direction,
)
from node.iax2.constants import IE, ControlSubclass, FrameType, IaxSubclass
from node.iax2.delivery import (
    ACK_LIKE,
    INITIAL_RTT,
    MAX_RETRY,
    MAX_SENDS,
    MIN_RETRY,
    ReliableDelivery,
    first_retry,
)
from node.iax2.negotiate import (
    CAUSE_NO_CODEC,
    CAUSECODE_NO_CODEC,
    CodecPolicy,
    Offer,
    format_name,
    single_format,
)
from node.machine import DeadlineTable

if TYPE_CHECKING:
    from node.iax2.call_ies import IeList

__all__ = [
    "DTMF_DIGITS",
    "INITIAL_RTT",
    "LAGRQ_INTERVAL",
    "LINGER",
    "MAX_RETRY",
    "MAX_SENDS",
    "MAX_TEXT_BYTES",
    "MIN_RETRY",
    "PING_INTERVAL",
    "SETUP_TIMEOUT",
    "TRANSITIONS",
    "Address",
    "Call",
    "CallState",
    "DialParams",
    "Direction",
    "InboundSetup",
    "Output",
    "RrStats",
    "first_retry",
]
# Every event a call reports (call_events.py) is a name of this module too.
__all__ += call_events.__all__

Address = tuple[str, int]

#: Seconds between PINGs and between LAGRQs on an accepted call (chan_iax2.c defaults).
PING_INTERVAL = 21.0
LAGRQ_INTERVAL = 10.0
#: How long a dead call is kept to re-ACK retransmitted HANGUPs.
LINGER = 10.0
#: How long call setup (NEW or AUTHREQ until ACCEPT) may take once the peer has gone quiet
#: after acknowledging it. The spec is silent; 30 s covers a human answering an auth prompt.
SETUP_TIMEOUT = 30.0
#: Longest TEXT payload we send (without the NUL): Asterisk's chan_iax2 reads a datagram into
#: 4,096 bytes and the full-frame header takes 12, so a peer takes 4,083 bytes and the NUL.
#: (app_rpt's `L` lists of a large network need that much; docs/links.md.)
MAX_TEXT_BYTES = 4096 - 12 - 1
#: Digits a DTMF frame may carry.
DTMF_DIGITS = "0123456789*#ABCD"

_KNOWN_IAX = frozenset(int(s) for s in IaxSubclass)
# In-order frames whose timestamp is an echo of ours rather than the peer's clock.
_ECHOING = frozenset({IaxSubclass.PONG, IaxSubclass.LAGRP, IaxSubclass.CALLTOKEN})
_S, _T = CallState, CallTrigger


# --- inputs and outputs -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Output:
    """The result of every input: frames to send in order, events, and the next deadline."""

    frames: tuple[FullFrame, ...] = ()
    events: tuple[CallEvent, ...] = ()
    #: Absolute time at which `timer()` must run next, or None when nothing is pending.
    deadline: float | None = None


# --- the machine --------------------------------------------------------------------------------


class Call(ReliableDelivery):
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
        super().__init__(callno)
        self.peer_addr = peer_addr
        self.direction = direction
        self.policy = codec_policy
        self.state = CallState.IDLE
        #: The negotiated audio format, once ACCEPT was exchanged.
        self.format: int | None = None
        #: The format of the peer's last full voice frame (that of its mini frames).
        self.peer_voice_format: int | None = None
        #: Timestamp of the peer's latest in-order full frame on its own clock (frames that
        #: echo ours, PONG, LAGRP and CALLTOKEN, excluded): the base for unwrapping mini frames.
        self.peer_last_ts = 0
        self._rr_stats = rr_stats
        #: The peer's view of our stream: the RR IEs of its latest PONG (None until one came).
        self.peer_rr: RrStats | None = None
        self._timers: DeadlineTable[CallTimer] = DeadlineTable()
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
        return self.state in LIVE_STATES

    @property
    def is_closed(self) -> bool:
        return self.state is CallState.CLOSED

    def timestamp(self, now: float) -> int:
        """The call's clock in ms at `now` (what the engine puts in mini frames)."""
        return self.clock.elapsed_ms(now)

    def next_deadline(self) -> float | None:
        """When `timer()` must run next, or None."""
        at = self._timers.earliest()
        retry = self._retry_deadline()
        if retry is None or (at is not None and at <= retry):
            return at
        return retry

    # --- plumbing -----------------------------------------------------------------------------

    def _output(self) -> Output:
        frames, events = self._out.take()
        return Output(frames, events, self.next_deadline())

    def _go(self, trigger: CallTrigger) -> None:
        nxt = TRANSITIONS.move(self.state, trigger, f"call {self.callno}")
        self.state = nxt
        if nxt not in MEDIA_STATES:
            self._timers.cancel(CallTimer.PING, CallTimer.LAGRQ)
        if nxt not in SETUP_STATES:
            self._timers.cancel(CallTimer.SETUP)
        if nxt is _S.TERMINATED:
            self._queue.clear()
        if nxt is _S.CLOSED:
            self._queue.clear()
            self._timers.clear()

    def _event(self, event: CallEvent) -> None:
        self._out.report(event)

    def _start_keepalives(self, now: float) -> None:
        self._timers.set(CallTimer.PING, now + PING_INTERVAL)
        self._timers.set(CallTimer.LAGRQ, now + LAGRQ_INTERVAL)

    def _terminate(self, now: float, trigger: CallTrigger) -> None:
        self._go(trigger)
        if self.state is _S.TERMINATED:
            self._timers.set(CallTimer.LINGER, now + LINGER)

    # --- commands -----------------------------------------------------------------------------

    def start_outbound(self, now: float, params: DialParams) -> Output:
        """Send NEW. IEs follow Asterisk's order (iax2_call), the empty CALLTOKEN last."""
        if self.direction is not Direction.OUTBOUND:
            raise LocalProtocolError(f"call {self.callno} is inbound; it cannot dial")
        self._go(_T.DIAL)
        self._dial = params
        self._new_ies = new_ies(params, Offer.for_policy(self.policy))
        self._send_new(now, "" if params.calltoken else None)
        self._timers.set(CallTimer.SETUP, now + SETUP_TIMEOUT)
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
        self.iseq = (new.oseq + 1) & 0xFF
        if setup.challenge is not None:
            self._go(_T.AUTH)
            self._send(now, FrameType.IAX, IaxSubclass.AUTHREQ, ies=authreq_ies(setup))
            self._timers.set(CallTimer.SETUP, now + SETUP_TIMEOUT)
        else:
            self._accept(now)
        return self._output()

    def _accept(self, now: float) -> None:
        assert self._setup is not None
        fmt = self._setup.format
        self._go(_T.ACCEPT)
        self.format = fmt
        self._send(now, FrameType.IAX, IaxSubclass.ACCEPT, ies=format_ies(fmt))
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
        self._send(now, FrameType.IAX, sub, ies=cause_ies(cause, causecode))
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
            ies=cause_ies(cause, causecode),
            dcall_zero=self.peer_callno == 0,
        )
        self._event(CallHungUp(self.callno, cause or "", causecode, by_peer=False))

    def _require_media(self, what: str) -> None:
        if self.state not in MEDIA_STATES:
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
        self._out.send(
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
        if self.state is not _S.CLOSED and self._retransmit_due(now):
            self._exhausted()
        for kind in self._timers.due(now):
            if kind not in self._timers:  # cleared by an earlier one
                continue
            if kind is CallTimer.PING:
                self._timers.set(kind, now + PING_INTERVAL)
                self._probe(now, IaxSubclass.PING)
            elif kind is CallTimer.LAGRQ:
                self._timers.set(kind, now + LAGRQ_INTERVAL)
                self._probe(now, IaxSubclass.LAGRQ)
            elif kind is CallTimer.SETUP:
                if self._queue:
                    # Still retransmitting: that ends in CallLost (or an answer) within
                    # MAX_RETRY * MAX_SENDS; look again afterwards.
                    self._timers.set(kind, now + MAX_RETRY)
                    continue
                self._timers.cancel(kind)
                if self.is_inbound:
                    self._go(_T.END)
                    ies = cause_ies("Timeout", 18)
                    self._send(now, FrameType.IAX, IaxSubclass.REJECT, ies=ies)
                    self._event(CallRejected(self.callno, "Timeout", 18, by_peer=False))
                else:
                    self._hangup(now, "Timeout", 18)
            elif kind is CallTimer.LINGER:
                self._timers.cancel(kind)
                self._go(_T.EXPIRED)
        return self._output()

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
        if is_iax and sub in ACK_LIKE:
            if sub == IaxSubclass.VNAK:
                self._vnak(frame.iseq, now)
            return self._output()
        if not self._in_order(frame):
            return self._output()
        if not (is_iax and sub in _ECHOING):
            self.peer_last_ts = frame.ts
        if self.state is _S.TERMINATED or self.state is _S.HANGING_UP:
            # After the end only the peer's own HANGUP/REJECT is acknowledged. Anything else
            # it sends into the ended call (a LAGRQ or PING its timers still fire) gets
            # silence, as chan_iax2 gives a call it has destroyed: an ACK would name a call
            # the peer may no longer have, and Asterisk logs a warning for each one.
            if is_iax and sub in (IaxSubclass.HANGUP, IaxSubclass.REJECT):
                self._ack(frame)
                if self.state is _S.HANGING_UP:
                    self._terminate(now, _T.PEER_END)
            return self._output()
        self._dispatch(frame, now)
        if not self._replied and not self._suppress_ack:
            self._ack(frame)
        return self._output()

    def _acknowledged(self, iseq: int, now: float) -> None:
        """A cumulative ACK up to `iseq`: it may end our hangup or confirm our ACCEPT."""
        acked = self._take_acked(iseq)
        if not acked:
            return
        if self.state is _S.HANGING_UP and not self._queue:
            self._terminate(now, _T.END_ACKED)
            return
        if (
            self._accept_oseq is not None
            and not self._confirmed
            and any(p.oseq == self._accept_oseq for p in acked)
        ):
            self._confirm(now)

    def _dispatch(self, frame: FullFrame, now: float) -> None:
        ftype = frame.ftype
        if ftype == FrameType.IAX:
            self._on_iax(frame, now)
        elif ftype == FrameType.CONTROL:
            self._on_control(frame)
        elif self.state not in MEDIA_STATES:
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
            if sub == IaxSubclass.PONG and (rr := rr_of(frame)) is not None:
                self.peer_rr = rr
        elif sub == IaxSubclass.HANGUP:
            self._ack(frame)
            self._replied = True
            cause, code = cause_of(frame)
            self._terminate(now, _T.PEER_END)
            self._event(CallHungUp(self.callno, cause, code, by_peer=True))
        elif sub == IaxSubclass.REJECT:
            self._ack(frame)
            self._replied = True
            cause, code = cause_of(frame)
            was_setup = self.state in SETUP_STATES
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
                now, FrameType.IAX, IaxSubclass.REJECT, ies=cause_ies("No authority found", 50)
            )
            self._event(CallRejected(self.callno, "No authority found", 50, by_peer=False))
            return
        self._authenticated = True
        self._accept(now)

    def _on_accept(self, frame: FullFrame, now: float) -> None:
        if self.is_inbound or self.state not in SETUP_STATES:
            return
        fmt = format_of(frame)
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
        if self.state not in MEDIA_STATES:
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

    def _rr_ies(self) -> IeList:
        return rr_ies(self._rr_stats() if self._rr_stats is not None else RrStats())


def _digit(subclass: int) -> str:
    return chr(subclass) if 0 < subclass < 0x80 else "?"
