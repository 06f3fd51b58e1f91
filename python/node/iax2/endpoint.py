"""The IAX2 endpoint: routes frames to calls and admits inbound calls (sans-I/O).

The analogue of quinn-proto's `Endpoint`: one per UDP socket, no I/O, no clock. It owns the call
table and the call-number space, answers what needs no call (POKE, INVAL for unknown calls, call
tokens, refusals), applies the `[listener]` policy to every inbound NEW, and runs the `Call`
machines. Every input returns one `EndpointOutput(frames, events)` whose frames are
`(address, FullFrame)` pairs, the shape `iax2/transport.py` sends; `next_deadline()` says when
`timer()` must run next.

Inbound admission, in order (docs/iax2.md has the reasoning):

1. Call token (`calltoken`): an empty CALLTOKEN IE gets a stateless CALLTOKEN reply (from call
   number 1) unless the policy is "off"; a token that is not ours, or older than 10 s, gets a
   stateless REJECT; no CALLTOKEN IE at all is refused under "required" and served under
   "auto" (iaxmodem and DroidStar-class clients never send one).
2. The listener is disabled: REJECT.
3. `max_calls` inbound calls are already up or being set up: REJECT "Call limit reached" / 34.
   A call that has ended and lingers only to re-ACK a retransmitted HANGUP does not count.
4. `allowed_nodes` is non-empty and neither CALLING_NUMBER nor USERNAME is on it: REJECT. A list
   holding only placeholders ("<node_id>", "") admits nobody.
5. No codec in common with `codec_policy`: REJECT "Unable to negotiate codec" / 65.
6. Authentication (`auth`): "required" challenges with MD5 against the secret of the caller's
   USERNAME (else its CALLING_NUMBER); an unknown caller gets a decoy AUTHREQ and then the same
   REJECT "No authority found" / 50 as a wrong password, so usernames cannot be probed.
   "optional" challenges only callers we have a secret for; "off" never challenges.

Refusals in steps 1-5 are stateless (from call number 1, like Asterisk's call-token REJECT): no
call number is spent on a caller that is turned away, and a retransmitted NEW is refused again.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from node._core import FullFrame
from node.config.network import CALLNO_MAX, CALLNO_MIN, MAX_CALLS
from node.errors import LocalProtocolError
from node.iax2.auth import CallTokens, RandBelow, SecretLike, make_challenge
from node.iax2.call import (
    Address,
    Call,
    CallEvent,
    DialParams,
    Direction,
    InboundSetup,
    Output,
    RrStats,
)
from node.iax2.constants import IE, FrameType, IaxSubclass
from node.iax2.negotiate import (
    CAUSE_NO_CODEC,
    CAUSECODE_NO_CODEC,
    CodecPolicy,
    PeerCodecs,
    choose_format,
    policy,
)
from node.iax2.stateless import apathetic_reply, stateless_reply

__all__ = [
    "CALLNO_MAX",
    "CALLNO_MIN",
    "CALLNO_QUARANTINE",
    "MAX_CALLS",
    "Endpoint",
    "EndpointEvent",
    "EndpointOutput",
    "InboundPolicy",
    "InboundRejected",
    "Transmit",
]

#: A released call number is not reused for this long, so late frames of an old call cannot
#: land in a new one.
CALLNO_QUARANTINE = 60.0

#: One frame to send, and where.
Transmit = tuple[Address, FullFrame]

# Frames that never get an INVAL back (Asterisk `raw_hangup` exemptions, plus ACK).
_NO_INVAL = frozenset(
    {IaxSubclass.INVAL, IaxSubclass.ACK, IaxSubclass.TXCNT, IaxSubclass.TXACC, IaxSubclass.FWDOWNL}
)

# Causes of the refusals this module sends (Q.931 codes from Asterisk's causes.h).
CAUSE_DISABLED = ("Inbound calls disabled", 21)  # CALL_REJECTED
CAUSE_LIMIT = ("Call limit reached", 34)  # NO_CIRCUIT_AVAILABLE
CAUSE_NOT_ALLOWED = ("Caller not allowed", 21)  # CALL_REJECTED
#: The peer address of a local call: a call between two nodes of one host, whose frames the
#: port hands from one side of the endpoint to the other without the socket. No datagram can
#: come from the unspecified address, so no caller from the network can pose as one.
LOCAL_PEER: tuple[str, int] = ("0.0.0.0", 0)

#: A called number the host does not serve: chan_iax2's answer when the dialplan has no such
#: extension (a node app_rpt does not host).
CAUSE_NO_SUCH_NUMBER = ("No such context/extension", 3)  # NO_ROUTE_DESTINATION
CAUSE_TOKEN_REQUIRED = ("CallToken support required", 21)
CAUSE_BAD_TOKEN = ("Invalid call token", 21)
CAUSE_NOT_REGISTRAR = ("Registration Refused", 29)  # FACILITY_REJECTED


@dataclass(frozen=True, slots=True)
class InboundPolicy:
    """The `[listener]` rules the endpoint applies to every inbound NEW."""

    #: Whether inbound calls are accepted at all (POST /enable_inbound, /disable_inbound).
    enabled: bool = True
    #: "auto" answers admitted calls; "manual" rings until `answer()`.
    answer: str = "auto"
    #: Cap on simultaneous inbound calls (those up or being set up).
    max_calls: int = 8
    #: "required", "optional" or "off".
    auth: str = "required"
    #: Node ids admitted; empty admits everybody. Placeholder-only lists admit nobody.
    allowed_nodes: tuple[str, ...] = ()
    #: "required", "auto" or "off".
    calltoken: str = "auto"
    #: The called numbers answered (the nodes of a host); empty answers any called number, as
    #: a one-node process always has.
    numbers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, value, accepted in (
            ("answer", self.answer, ("auto", "manual")),
            ("auth", self.auth, ("required", "optional", "off")),
            ("calltoken", self.calltoken, ("required", "auto", "off")),
        ):
            if value not in accepted:
                raise ValueError(f"{name} = {value!r} (accepted: {', '.join(accepted)})")
        if not 0 <= self.max_calls <= MAX_CALLS:
            raise ValueError(f"max_calls = {self.max_calls} (accepted: 0-{MAX_CALLS})")
        object.__setattr__(self, "allowed_nodes", tuple(self.allowed_nodes))
        object.__setattr__(self, "numbers", tuple(self.numbers))

    @classmethod
    def from_listener(
        cls, listener: Any, *, enabled: bool = True, numbers: tuple[str, ...] = ()
    ) -> InboundPolicy:
        """Build from a `node.config.ListenerConfig` (read by attribute name only); `numbers`
        are the host's nodes when it has more than one."""
        return cls(
            enabled=enabled,
            answer=listener.answer,
            max_calls=listener.max_calls,
            auth=listener.auth,
            allowed_nodes=tuple(listener.allowed_nodes),
            calltoken=getattr(listener, "calltoken", "auto"),
            numbers=numbers,
        )

    def admitted_ids(self) -> frozenset[str] | None:
        """The allowlist without placeholders, or None when there is no allowlist."""
        if not self.allowed_nodes:
            return None
        return frozenset(n.strip() for n in self.allowed_nodes if not _placeholder(n))


def _placeholder(entry: str) -> bool:
    text = entry.strip()
    return not text or (text.startswith("<") and text.endswith(">"))


@dataclass(frozen=True, slots=True)
class EndpointEvent:
    """Base of what the endpoint reports outside any call."""


@dataclass(frozen=True, slots=True)
class InboundRejected(EndpointEvent):
    """An inbound NEW was refused before any call existed (stateless REJECT)."""

    #: Where the NEW came from.
    addr: Address
    #: CALLING_NUMBER of the NEW ("" if absent).
    calling_number: str
    #: USERNAME of the NEW ("" if absent).
    username: str
    cause: str
    causecode: int


@dataclass(frozen=True, slots=True)
class EndpointOutput:
    """What one endpoint input produced: frames with their destinations, and events (the next
    deadline is the getter `Endpoint.next_deadline`)."""

    frames: tuple[Transmit, ...] = ()
    events: tuple[CallEvent | EndpointEvent, ...] = ()


class Endpoint:
    """All IAX2 calls of one socket."""

    def __init__(
        self,
        inbound: InboundPolicy,
        codec_policy: str | CodecPolicy,
        *,
        token_key: bytes,
        randbelow: RandBelow,
        peer_secret: Callable[[str], str | SecretLike | None] | None = None,
        rr_stats: Callable[[int], RrStats] | None = None,
        external_callnos: Callable[[], Collection[int]] | None = None,
        holds: Callable[[str, str], bool] | None = None,
    ) -> None:
        """`token_key` is the per-process call-token key (e.g. `secrets.token_bytes(32)`),
        `randbelow` the entropy source for challenges and call numbers (`secrets.randbelow`),
        `peer_secret(node_id)` the inbound secret of a caller or None, `rr_stats(callno)` the
        jitter-buffer statistics a PONG reports, `external_callnos()` the numbers handed out by
        `allocate_callno` that are still in use (e.g. `Registration.callnos`), and
        `holds(calling_number, username)` whether an admitted caller is held unanswered for the
        application to vet (AllStarLink link calls), whatever the answer policy."""
        self.inbound = inbound
        self.codecs = policy(codec_policy)
        self._tokens = CallTokens(token_key)
        self._randbelow = randbelow
        self._peer_secret = peer_secret or (lambda _node: None)
        self._rr_stats = rr_stats
        self._calls: dict[int, Call] = {}
        # Every input must stay O(log calls) at thousands of calls: the inbound calls that count
        # against max_calls are kept as a set, and the calls' deadlines in a heap whose stale
        # entries (a call's deadline moved or the call is gone) are skipped when they surface.
        self._live_inbound: set[int] = set()
        self._deadlines: list[tuple[float, int]] = []
        self._deadline_of: dict[int, float] = {}
        self._by_peer: dict[tuple[Address, int], int] = {}
        self._peer_key: dict[int, tuple[Address, int]] = {}
        self._released: dict[int, float] = {}
        self._external: set[int] = set()
        self._external_in_use = external_callnos
        self._holds = holds or (lambda _number, _user: False)
        self._frames: list[Transmit] = []
        self._events: list[CallEvent | EndpointEvent] = []

    def __repr__(self) -> str:
        return f"Endpoint(calls={len(self._calls)}, listening={self.inbound.enabled})"

    # --- getters ------------------------------------------------------------------------------

    @property
    def calls(self) -> Mapping[int, Call]:
        """Every call by our call number (read-only view)."""
        return MappingProxyType(self._calls)

    def call(self, callno: int) -> Call | None:
        return self._calls.get(callno)

    @property
    def listening(self) -> bool:
        return self.inbound.enabled

    def set_listening(self, enabled: bool) -> None:
        """Accept (True) or refuse (False) new inbound calls; calls already up are kept."""
        self.set_policy(replace(self.inbound, enabled=enabled))

    def set_policy(self, inbound: InboundPolicy) -> None:
        """Apply new listener rules to calls that arrive from now on."""
        self.inbound = inbound

    def inbound_count(self) -> int:
        """Inbound calls that count against `max_calls` (up or being set up; not those that
        ended and linger to re-ACK a retransmitted HANGUP)."""
        return len(self._live_inbound)

    def next_deadline(self) -> float | None:
        heap = self._deadlines
        while heap:
            at, callno = heap[0]
            if self._deadline_of.get(callno) == at:
                return at
            heapq.heappop(heap)
        return None

    def _track(self, call: Call) -> None:
        """Bring the limit set and the deadline heap up to date after `call` ran."""
        callno = call.callno
        if call.is_inbound and call.is_live and not call.is_closed:
            self._live_inbound.add(callno)
        else:
            self._live_inbound.discard(callno)
        deadline = None if call.is_closed else call.next_deadline()
        if deadline is None:
            self._deadline_of.pop(callno, None)
        elif self._deadline_of.get(callno) != deadline:
            self._deadline_of[callno] = deadline
            heapq.heappush(self._deadlines, (deadline, callno))
            if len(self._deadlines) > 4 * len(self._deadline_of) + 64:
                # Too many stale entries: rebuild from the live deadlines.
                self._deadlines = [(at, n) for n, at in self._deadline_of.items()]
                heapq.heapify(self._deadlines)

    # --- plumbing -----------------------------------------------------------------------------

    def _output(self) -> EndpointOutput:
        out = EndpointOutput(tuple(self._frames), tuple(self._events))
        self._frames = []
        self._events = []
        return out

    def _take(self, call: Call, out: Output, now: float) -> None:
        self._frames.extend((call.peer_addr, f) for f in out.frames)
        self._events.extend(out.events)
        self._track(call)
        if call.is_closed:
            self._forget(call, now)

    def _forget(self, call: Call, now: float) -> None:
        self._live_inbound.discard(call.callno)
        self._deadline_of.pop(call.callno, None)
        self._calls.pop(call.callno, None)
        key = self._peer_key.pop(call.callno, None)
        if key is not None and self._by_peer.get(key) == call.callno:
            del self._by_peer[key]
        self._released[call.callno] = now

    def _allocate(self, now: float) -> int | None:
        for callno in list(self._released):
            if self._released[callno] + CALLNO_QUARANTINE <= now:
                del self._released[callno]
        if self._external and self._external_in_use is not None:
            in_use = self._external_in_use()
            for callno in self._external - set(in_use):
                self.release_callno(callno, now)
        taken = len(self._calls) + len(self._released) + len(self._external)
        span = CALLNO_MAX - CALLNO_MIN + 1
        if taken >= span:
            return None
        # Random numbers make blind injection into a call harder; probe from a random start.
        start = self._randbelow(span)
        for i in range(span):
            callno = CALLNO_MIN + (start + i) % span
            if (
                callno not in self._calls
                and callno not in self._released
                and callno not in self._external
            ):
                return callno
        return None

    def allocate_callno(self, now: float) -> int:
        """A call number for a dialog the endpoint does not run (registration), from the same
        space as the calls'. It stays reserved until `release_callno`, or until the
        `external_callnos` provider no longer lists it; then it is quarantined like any other."""
        callno = self._allocate(now)
        if callno is None:
            raise LocalProtocolError("no free IAX2 call number")
        self._external.add(callno)
        return callno

    def release_callno(self, callno: int, now: float) -> None:
        """Give back a number from `allocate_callno` (not reused for `CALLNO_QUARANTINE` s)."""
        if callno in self._external:
            self._external.discard(callno)
            self._released[callno] = now

    def _reply(self, addr: Address, frame: FullFrame) -> None:
        self._frames.append((addr, frame))

    # --- inputs -------------------------------------------------------------------------------

    def receive(self, addr: Address, frame: FullFrame, now: float) -> EndpointOutput:
        """Handle one full frame from `addr`."""
        stateless = stateless_reply(frame)
        if stateless.handled:
            if stateless.frame is not None:
                self._reply(addr, stateless.frame)
            return self._output()
        if frame.dcall != 0:
            call = self._calls.get(frame.dcall)
            if call is not None and call.peer_addr == addr:
                self._take(call, call.receive(frame, now), now)
            else:
                self._inval(addr, frame)
            return self._output()
        callno = self._by_peer.get((addr, frame.scall))
        is_new = frame.ftype == FrameType.IAX and frame.subclass == IaxSubclass.NEW
        if callno is not None and is_new and not self._calls[callno].is_live:
            # A new call from the source call number of one that has ended and only lingers
            # to re-ACK its HANGUP: the old call keeps answering frames addressed to it (dcall),
            # the NEW is a new caller.
            del self._by_peer[(addr, frame.scall)]
            self._peer_key.pop(callno, None)
            callno = None
        if callno is not None:
            call = self._calls[callno]
            self._take(call, call.receive(frame, now), now)
        elif is_new:
            self._admit(addr, frame, now)
        elif frame.ftype == FrameType.IAX and frame.subclass in (
            IaxSubclass.REGREQ,
            IaxSubclass.REGREL,
        ):
            self._registration(addr, frame, now)
        else:
            self._inval(addr, frame)
        return self._output()

    def timer(self, now: float) -> EndpointOutput:
        """Run every call whose deadline has come."""
        due: list[int] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            at, callno = heapq.heappop(heap)
            if self._deadline_of.get(callno) == at:
                del self._deadline_of[callno]
                due.append(callno)
        for callno in due:
            call = self._calls.get(callno)
            if call is None:
                continue
            deadline = call.next_deadline()
            if deadline is not None and deadline <= now:
                self._take(call, call.timer(now), now)
            else:
                self._track(call)
        return self._output()

    def dial(self, now: float, addr: Address, params: DialParams) -> tuple[int, EndpointOutput]:
        """Place an outbound call to `addr` (a numeric address: replies are matched on it).

        Returns our call number and the NEW to send.
        """
        callno = self._allocate(now)
        if callno is None:
            raise LocalProtocolError("no free IAX2 call number")
        call = Call(callno, addr, Direction.OUTBOUND, self.codecs, rr_stats=self._rr_for(callno))
        self._calls[callno] = call
        self._take(call, call.start_outbound(now, params), now)
        return callno, self._output()

    def act(self, callno: int, now: float, command: Callable[[Call], Output]) -> EndpointOutput:
        """Run `command` on call `callno` and address its frames (e.g.
        `ep.act(n, now, lambda c: c.key(now))`)."""
        call = self._calls.get(callno)
        if call is None:
            raise LocalProtocolError(f"no call {callno}")
        self._take(call, command(call), now)
        return self._output()

    def answer(self, callno: int, now: float) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.answer(now))

    def reject(
        self, callno: int, now: float, cause: str = "Call rejected", causecode: int = 21
    ) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.reject(now, cause, causecode))

    def hangup(
        self, callno: int, now: float, cause: str | None = None, causecode: int = 16
    ) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.hangup(now, cause, causecode))

    def key(self, callno: int, now: float) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.key(now))

    def unkey(self, callno: int, now: float) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.unkey(now))

    def send_dtmf(self, callno: int, now: float, digit: str) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.send_dtmf(now, digit))

    def send_cng(self, callno: int, now: float) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.send_cng(now))

    def send_text(self, callno: int, now: float, text: str) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.send_text(now, text))

    def send_voice_full(
        self, callno: int, now: float, fmt: int, payload: bytes, ts: int
    ) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.send_voice_full(now, fmt, payload, ts))

    def request_voice_resend(self, callno: int, now: float) -> EndpointOutput:
        return self.act(callno, now, lambda c: c.request_voice_resend(now))

    # --- frames outside any call ----------------------------------------------------------------

    def _rr_for(self, callno: int) -> Callable[[], RrStats] | None:
        provider = self._rr_stats
        if provider is None:
            return None
        return lambda: provider(callno)

    def _inval(self, addr: Address, frame: FullFrame) -> None:
        """Tell the sender we have no such call (Asterisk's `raw_hangup`)."""
        if frame.ftype == FrameType.IAX and frame.subclass in _NO_INVAL:
            return
        self._reply(
            addr,
            FullFrame(
                FrameType.IAX,
                IaxSubclass.INVAL,
                scall=frame.dcall,
                dcall=frame.scall,
                ts=0,
                oseq=0,
                iseq=0,
            ),
        )

    def _refuse(
        self, addr: Address, frame: FullFrame, subclass: int, cause: tuple[str, int]
    ) -> None:
        text, code = cause
        ies: list[tuple[int, object]] = [(IE.CAUSE, text), (IE.CAUSECODE, code)]
        self._reply(addr, apathetic_reply(frame, subclass, ies))
        if subclass == IaxSubclass.REJECT:
            self._events.append(
                InboundRejected(
                    addr, _text(frame, IE.CALLING_NUMBER), _text(frame, IE.USERNAME), text, code
                )
            )

    def _token_gate(self, addr: Address, frame: FullFrame, now: float, refusal: int) -> bool:
        """Apply the call-token policy; True when the request may go on."""
        mode = self.inbound.calltoken
        if mode == "off":
            return True
        if not frame.has_ie(IE.CALLTOKEN):
            if mode == "required":
                self._refuse(addr, frame, refusal, CAUSE_TOKEN_REQUIRED)
                return False
            return True
        token = frame.ie(IE.CALLTOKEN)
        if not isinstance(token, str) or not token:
            issued = self._tokens.issue(addr, now)
            self._reply(
                addr, apathetic_reply(frame, IaxSubclass.CALLTOKEN, [(IE.CALLTOKEN, issued)])
            )
            return False
        if not self._tokens.verify(addr, token, now):
            self._refuse(addr, frame, refusal, CAUSE_BAD_TOKEN)
            return False
        return True

    def _registration(self, addr: Address, frame: FullFrame, now: float) -> None:
        # We are no registrar; the token round still comes first, as Asterisk does it.
        if self._token_gate(addr, frame, now, IaxSubclass.REGREJ):
            self._refuse(addr, frame, IaxSubclass.REGREJ, CAUSE_NOT_REGISTRAR)

    def _admit(self, addr: Address, new: FullFrame, now: float) -> None:
        pol = self.inbound
        # A local call is another node of this host: no token, allow list or password stands
        # between two nodes of one configuration.
        local = addr == LOCAL_PEER
        if not local and not self._token_gate(addr, new, now, IaxSubclass.REJECT):
            return
        if not pol.enabled:
            self._refuse(addr, new, IaxSubclass.REJECT, CAUSE_DISABLED)
            return
        if self.inbound_count() >= pol.max_calls:
            self._refuse(addr, new, IaxSubclass.REJECT, CAUSE_LIMIT)
            return
        calling_number = _text(new, IE.CALLING_NUMBER)
        username = _text(new, IE.USERNAME)
        admitted = pol.admitted_ids()
        if (
            not local
            and admitted is not None
            and not ({calling_number, username} - {""}) & admitted
        ):
            self._refuse(addr, new, IaxSubclass.REJECT, CAUSE_NOT_ALLOWED)
            return
        if pol.numbers and _text(new, IE.CALLED_NUMBER) not in pol.numbers:
            self._refuse(addr, new, IaxSubclass.REJECT, CAUSE_NO_SUCH_NUMBER)
            return
        fmt = choose_format(self.codecs, _peer_codecs(new))
        if fmt is None:
            self._refuse(addr, new, IaxSubclass.REJECT, (CAUSE_NO_CODEC, CAUSECODE_NO_CODEC))
            return
        challenge: str | None = None
        secret: str | SecretLike | None = None
        if pol.auth != "off" and not local:
            secret = self._lookup_secret(username, calling_number)
            if secret is not None or pol.auth == "required":
                # An unknown caller under "required" gets a decoy challenge it cannot pass.
                challenge = make_challenge(self._randbelow)
        callno = self._allocate(now)
        if callno is None:
            self._refuse(addr, new, IaxSubclass.REJECT, CAUSE_LIMIT)
            return
        call = Call(callno, addr, Direction.INBOUND, self.codecs, rr_stats=self._rr_for(callno))
        self._calls[callno] = call
        key = (addr, new.scall)
        self._by_peer[key] = callno
        self._peer_key[callno] = key
        setup = InboundSetup(
            format=fmt,
            answer="hold" if self._holds(calling_number, username) else pol.answer,
            challenge=challenge,
            secret=secret,
            calling_number=calling_number,
            calling_name=_text(new, IE.CALLING_NAME),
            called_number=_text(new, IE.CALLED_NUMBER),
            username=username,
        )
        self._take(call, call.start_inbound(new, now, setup), now)

    def _lookup_secret(self, username: str, calling_number: str) -> str | SecretLike | None:
        # USERNAME first (what IAX2 authenticates), then the caller's node number, which is
        # what AllStarLink peers are provisioned by (their USERNAME is a shared "radio").
        for node in (username, calling_number):
            if node:
                secret = self._peer_secret(node)
                if secret is not None:
                    return secret
        return None


def _text(frame: FullFrame, ie: int) -> str:
    value = frame.ie(ie)
    return value if isinstance(value, str) else ""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _versioned(value: object) -> tuple[int, int] | None:
    if isinstance(value, tuple) and len(value) == 2:
        return (int(value[0]), int(value[1]))
    return None


def _peer_codecs(new: FullFrame) -> PeerCodecs:
    return PeerCodecs.from_ies(
        _int(new.ie(IE.FORMAT)),
        _int(new.ie(IE.CAPABILITY)),
        _versioned(new.ie(IE.FORMAT2)),
        _versioned(new.ie(IE.CAPABILITY2)),
    )
