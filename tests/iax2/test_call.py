"""The Call state machine against a scripted peer: every frame it sends is checked by hand.

Time is a float chosen by the test; frames "from the peer" are built directly. Assertions go
frame kinds first, then deadlines and events (style rule 1).
"""

from __future__ import annotations

import itertools

import pytest

from node._core import FullFrame, parse
from node.errors import LocalProtocolError
from node.iax2.auth import md5_response
from node.iax2.call import (
    INITIAL_RTT,
    LAGRQ_INTERVAL,
    LINGER,
    MAX_SENDS,
    PING_INTERVAL,
    SETUP_TIMEOUT,
    TRANSITIONS,
    Call,
    CallAccepted,
    CallAnswered,
    CallHungUp,
    CallIncoming,
    CallLost,
    CallRejected,
    CallRinging,
    CallState,
    ControlReceived,
    DialParams,
    Direction,
    DtmfBegan,
    DtmfReceived,
    InboundSetup,
    LossReason,
    MediaFormatChanged,
    Output,
    RadioKeyed,
    RadioUnkeyed,
    RrStats,
    TextReceived,
    VoiceFullReceived,
    first_retry,
)
from node.iax2.call_ies import rr_ies, rr_of
from node.iax2.constants import IE, ControlSubclass, FrameType, IaxSubclass
from node.iax2.negotiate import policy

PEER = ("192.0.2.1", 4569)
ME = 100  # our call number
THEM = 7000  # the peer's
T0 = 500.0
ULAW, ALAW, SLIN, SLIN16, GSM = 0x4, 0x8, 0x40, 0x8000, 0x2

IAX, CONTROL, VOICE, TEXT = FrameType.IAX, FrameType.CONTROL, FrameType.VOICE, FrameType.TEXT


def kinds(out: Output | list[FullFrame]) -> list[tuple[int, int]]:
    frames = out.frames if isinstance(out, Output) else out
    return [(int(f.ftype), int(f.subclass)) for f in frames]


def types(out: Output) -> list[type]:
    return [type(e) for e in out.events]


def frame(
    ftype: int,
    sub: int,
    *,
    oseq: int,
    iseq: int,
    ts: int = 50,
    scall: int = THEM,
    dcall: int = ME,
    ies: list[tuple[int, object]] | None = None,
    payload: bytes = b"",
    retrans: bool = False,
) -> FullFrame:
    return FullFrame(
        ftype,
        sub,
        scall=scall,
        dcall=dcall,
        ts=ts,
        oseq=oseq,
        iseq=iseq,
        retrans=retrans,
        ies=ies,
        payload=payload,
    )


def iax(sub: int, **kw: object) -> FullFrame:
    return frame(IAX, sub, **kw)  # type: ignore[arg-type]


def ack_of(f: FullFrame, *, oseq: int, iseq: int) -> FullFrame:
    return iax(IaxSubclass.ACK, ts=f.ts, oseq=oseq, iseq=iseq)


def outbound(pol: str = "prefer_slin16", **params: object) -> tuple[Call, Output]:
    call = Call(ME, PEER, Direction.OUTBOUND, policy(pol))
    defaults: dict[str, object] = {"called_number": "1998", "calling_number": "1999"}
    defaults.update(params)
    return call, call.start_outbound(T0, DialParams(**defaults))  # type: ignore[arg-type]


def accepted_outbound(pol: str = "prefer_slin16", fmt: int = ULAW) -> Call:
    """An outbound call whose NEW was ACCEPTed (peer oseq now 1) and ANSWERed (now 2)."""
    call, _ = outbound(pol)
    call.receive(iax(IaxSubclass.ACCEPT, oseq=0, iseq=1, ies=[(IE.FORMAT, fmt)]), T0 + 0.01)
    call.receive(frame(CONTROL, ControlSubclass.ANSWER, oseq=1, iseq=1, ts=60), T0 + 0.02)
    assert call.state is CallState.UP
    return call


def new_frame(**ies: object) -> FullFrame:
    body: list[tuple[int, object]] = [(IE.VERSION, 2), (IE.CALLED_NUMBER, "1998")]
    body += [(getattr(IE, k.upper()), v) for k, v in ies.items()]
    return iax(IaxSubclass.NEW, oseq=0, iseq=0, dcall=0, ts=7, ies=body)


def inbound(setup: InboundSetup | None = None) -> tuple[Call, Output]:
    call = Call(ME, PEER, Direction.INBOUND, policy("prefer_slin16"))
    out = call.start_inbound(
        new_frame(), T0, setup or InboundSetup(format=ULAW, called_number="1998")
    )
    return call, out


# --- outbound setup -------------------------------------------------------------------------------


def test_new_carries_asterisk_ie_order_and_values() -> None:
    _, out = outbound(calling_name="Node 1999", username="radio", datetime=(2026, 11, 22, 3, 55, 0))
    assert kinds(out) == [(IAX, IaxSubclass.NEW)]
    new = out.frames[0]
    assert (new.scall, new.dcall, new.oseq, new.iseq) == (ME, 0, 0, 0)
    assert new.ts != 0 and not new.retrans
    assert [i for i, _ in new.ies] == [
        IE.VERSION,
        IE.CALLED_NUMBER,
        IE.CODEC_PREFS,
        IE.CALLING_NUMBER,
        IE.CALLING_NAME,
        IE.USERNAME,
        IE.FORMAT,
        IE.FORMAT2,
        IE.CAPABILITY,
        IE.CAPABILITY2,
        IE.DATETIME,
        IE.CALLTOKEN,
    ]
    assert new.ie(IE.VERSION) == 2
    assert new.ie(IE.CALLED_NUMBER) == "1998"
    assert new.ie(IE.CODEC_PREFS) == "PHDE"
    assert new.ie(IE.FORMAT) == SLIN16
    assert tuple(new.ie(IE.FORMAT2)) == (0, SLIN16)
    assert new.ie(IE.CAPABILITY) == SLIN16 | SLIN | ULAW | ALAW
    assert tuple(new.ie(IE.CAPABILITY2)) == (0, SLIN16 | SLIN | ULAW | ALAW)
    assert dict(new.ies)[IE.CALLTOKEN] == b""  # empty: "I support call tokens"
    assert out.deadline == T0 + first_retry(INITIAL_RTT)


def test_new_without_optional_ies() -> None:
    _, out = outbound("ulaw_only", calling_number=None, calltoken=False)
    ids = [i for i, _ in out.frames[0].ies]
    assert IE.CALLING_NUMBER not in ids and IE.CALLTOKEN not in ids and IE.DATETIME not in ids
    assert out.frames[0].ie(IE.CODEC_PREFS) == "DE"


def test_calltoken_round_restarts_the_dialog() -> None:
    call, out = outbound()
    first = out.frames[0]
    token = "1795319506?3a6cb1a4b6cabc4f4c4cb874cc8edc5edf0c6314"
    reply = iax(
        IaxSubclass.CALLTOKEN, scall=1, oseq=0, iseq=1, ts=first.ts, ies=[(IE.CALLTOKEN, token)]
    )
    out = call.receive(reply, T0)  # same instant: the timestamp must still rise
    assert kinds(out) == [(IAX, IaxSubclass.NEW)]  # and no ACK of the CALLTOKEN
    again = out.frames[0]
    assert (again.dcall, again.oseq, again.iseq) == (0, 0, 0)
    assert again.ts > first.ts
    assert again.ie(IE.CALLTOKEN) == token
    assert [i for i, _ in again.ies] == [i for i, _ in first.ies]
    assert call.peer_callno == 0 and call.state is CallState.CALLING and call.unacked == 1


def test_authreq_md5_gets_authrep() -> None:
    call, _ = outbound(username="radiosec", secret="aslpeer-secret")
    authreq = iax(
        IaxSubclass.AUTHREQ,
        oseq=0,
        iseq=1,
        ies=[(IE.AUTHMETHODS, 2), (IE.CHALLENGE, "129315407"), (IE.USERNAME, "radiosec")],
    )
    out = call.receive(authreq, T0 + 0.01)
    assert kinds(out) == [(IAX, IaxSubclass.AUTHREP)]  # carries the ACK of the AUTHREQ
    rep = out.frames[0]
    assert rep.ie(IE.MD5_RESULT) == "821d4b0b8252f25b8324273857ef0fb4"
    assert (rep.dcall, rep.oseq, rep.iseq) == (THEM, 1, 1)
    assert call.state is CallState.AUTHENTICATING
    assert "aslpeer-secret" not in repr(call) and "aslpeer-secret" not in repr(call._dial)


@pytest.mark.parametrize(
    ("methods", "secret"), [(2, None), (4, "pw"), (1, "pw")], ids=["no-secret", "rsa", "plain"]
)
def test_authreq_we_cannot_answer_hangs_up(methods: int, secret: str | None) -> None:
    call, _ = outbound(secret=secret)
    out = call.receive(
        iax(
            IaxSubclass.AUTHREQ,
            oseq=0,
            iseq=1,
            ies=[(IE.AUTHMETHODS, methods), (IE.CHALLENGE, "1")],
        ),
        T0 + 0.01,
    )
    assert kinds(out) == [(IAX, IaxSubclass.HANGUP)]
    assert types(out) == [CallHungUp]
    assert call.state is CallState.HANGING_UP


def test_accept_answer_ringing_flow() -> None:
    call, _ = outbound()
    accept = iax(
        IaxSubclass.ACCEPT, oseq=0, iseq=1, ts=9, ies=[(IE.FORMAT, ULAW), (IE.FORMAT2, (0, ULAW))]
    )
    out = call.receive(accept, T0 + 0.01)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)]
    ack = out.frames[0]
    assert (ack.scall, ack.dcall, ack.ts, ack.oseq, ack.iseq) == (ME, THEM, 9, 1, 1)
    assert out.events == (CallAccepted(ME, ULAW),)
    assert call.state is CallState.ACCEPTED and call.format == ULAW
    # The NEW was acknowledged by the ACCEPT's iseqno: nothing to retransmit, only keep-alives.
    assert call.unacked == 0
    assert out.deadline == T0 + 0.01 + LAGRQ_INTERVAL
    out = call.receive(frame(CONTROL, ControlSubclass.RINGING, oseq=1, iseq=1, ts=12), T0 + 0.02)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and types(out) == [CallRinging]
    out = call.receive(frame(CONTROL, ControlSubclass.ANSWER, oseq=2, iseq=1, ts=15), T0 + 0.03)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and types(out) == [CallAnswered]
    assert out.frames[0].ts == 15 and out.frames[0].iseq == 3
    assert call.state is CallState.UP


def test_accept_without_format_means_what_we_asked() -> None:
    call, _ = outbound("ulaw_only")
    out = call.receive(iax(IaxSubclass.ACCEPT, oseq=0, iseq=1), T0 + 0.01)
    assert out.events == (CallAccepted(ME, ULAW),)


@pytest.mark.parametrize(
    ("pol", "fmt"),
    [("ulaw_only", GSM), ("ulaw_only", SLIN16), ("prefer_slin16", GSM), ("ulaw_only", ULAW | ALAW)],
)
def test_accept_with_a_format_we_never_offered_hangs_up_65(pol: str, fmt: int) -> None:
    call, _ = outbound(pol)
    out = call.receive(
        iax(IaxSubclass.ACCEPT, oseq=0, iseq=1, ies=[(IE.FORMAT, fmt), (IE.FORMAT2, (0, fmt))]),
        T0 + 0.01,
    )
    assert kinds(out) == [(IAX, IaxSubclass.HANGUP)]
    hangup = out.frames[0]
    assert hangup.ie(IE.CAUSE) == "Unable to negotiate codec"
    assert hangup.ie(IE.CAUSECODE) == 65
    assert out.events == (CallHungUp(ME, "Unable to negotiate codec", 65, by_peer=False),)


def test_format2_overrides_format_in_accept() -> None:
    call, _ = outbound()
    out = call.receive(
        iax(IaxSubclass.ACCEPT, oseq=0, iseq=1, ies=[(IE.FORMAT, ULAW), (IE.FORMAT2, (0, SLIN16))]),
        T0 + 0.01,
    )
    assert out.events == (CallAccepted(ME, SLIN16),)


def test_peer_reject_is_acked_and_lingers() -> None:
    call, _ = outbound()
    reject = iax(
        IaxSubclass.REJECT,
        oseq=0,
        iseq=1,
        ts=8,
        ies=[(IE.CAUSE, "No authority found"), (IE.CAUSECODE, 50)],
    )
    out = call.receive(reject, T0 + 0.01)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.frames[0].ts == 8
    assert out.events == (CallRejected(ME, "No authority found", 50, by_peer=True),)
    assert call.state is CallState.TERMINATED and out.deadline == T0 + 0.01 + LINGER
    # A retransmission (our ACK was lost) is ACKed again, without a second event.
    out = call.receive(
        iax(IaxSubclass.REJECT, oseq=0, iseq=1, ts=8, retrans=True, ies=list(reject.ies)),
        T0 + 2,
    )
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.events == ()
    out = call.timer(T0 + 0.01 + LINGER)
    assert call.state is CallState.CLOSED and out.frames == () and out.deadline is None


def test_stateless_reject_from_call_one() -> None:
    call, out = outbound()
    reject = iax(IaxSubclass.REJECT, scall=1, oseq=0, iseq=1, ts=out.frames[0].ts)
    out = call.receive(reject, T0 + 0.01)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.frames[0].dcall == 1
    assert out.events == (CallRejected(ME, "", 0, by_peer=True),)


# --- inbound setup --------------------------------------------------------------------------------


def test_inbound_unauthenticated_waits_for_the_ack_of_accept() -> None:
    call, out = inbound()
    assert kinds(out) == [(IAX, IaxSubclass.ACCEPT)]
    acc = out.frames[0]
    assert (acc.scall, acc.dcall, acc.oseq, acc.iseq) == (ME, THEM, 0, 1)
    assert acc.ie(IE.FORMAT) == ULAW and tuple(acc.ie(IE.FORMAT2)) == (0, ULAW)
    assert out.events == ()  # not announced until the caller proves it got the ACCEPT
    out = call.receive(ack_of(acc, oseq=1, iseq=1), T0 + 0.01)
    assert kinds(out) == [(CONTROL, ControlSubclass.ANSWER), (CONTROL, ControlSubclass.STOP_SOUNDS)]
    assert types(out) == [CallIncoming, CallAccepted, CallAnswered]
    incoming = out.events[0]
    assert isinstance(incoming, CallIncoming)
    assert (incoming.called_number, incoming.format, incoming.authenticated) == (
        "1998",
        ULAW,
        False,
    )
    assert call.state is CallState.UP


def test_inbound_confirmed_by_any_frame_carrying_the_ack() -> None:
    call, out = inbound()
    # No ACK, but a PING whose iseqno covers the ACCEPT: that confirms it as well.
    out = call.receive(iax(IaxSubclass.PING, oseq=1, iseq=1, ts=30), T0 + 0.01)
    assert kinds(out) == [
        (CONTROL, ControlSubclass.ANSWER),
        (CONTROL, ControlSubclass.STOP_SOUNDS),
        (IAX, IaxSubclass.PONG),
    ]
    assert types(out) == [CallIncoming, CallAccepted, CallAnswered]


def test_inbound_manual_rings_then_answers() -> None:
    call, out = inbound(InboundSetup(format=SLIN16, answer="manual", calling_number="1999"))
    out = call.receive(ack_of(out.frames[0], oseq=1, iseq=1), T0 + 0.01)
    assert kinds(out) == [(CONTROL, ControlSubclass.RINGING)]
    assert types(out) == [CallIncoming, CallAccepted]
    assert call.state is CallState.ACCEPTED
    out = call.answer(T0 + 5)
    assert kinds(out) == [
        (CONTROL, ControlSubclass.ANSWER),
        (CONTROL, ControlSubclass.STOP_SOUNDS),
    ] and types(out) == [CallAnswered]
    assert out.frames[0].oseq == 2 and out.frames[0].iseq == 1
    assert call.state is CallState.UP


def test_inbound_manual_reject_while_ringing_is_a_hangup_with_cause() -> None:
    call, out = inbound(InboundSetup(format=ULAW, answer="manual"))
    call.receive(ack_of(out.frames[0], oseq=1, iseq=1), T0 + 0.01)
    out = call.reject(T0 + 1)
    assert kinds(out) == [(IAX, IaxSubclass.HANGUP)]
    assert (out.frames[0].ie(IE.CAUSE), out.frames[0].ie(IE.CAUSECODE)) == ("Call rejected", 21)
    assert out.events == (CallRejected(ME, "Call rejected", 21, by_peer=False),)
    assert out.frames[0].oseq == 2  # after ACCEPT (0) and RINGING (1)
    out = call.receive(ack_of(out.frames[0], oseq=1, iseq=3), T0 + 1.01)
    assert call.state is CallState.TERMINATED


def test_inbound_challenge_right_answer() -> None:
    setup = InboundSetup(format=ULAW, challenge="90604980", secret="supersecret", username="u")
    call, out = inbound(setup)
    assert kinds(out) == [(IAX, IaxSubclass.AUTHREQ)]
    req = out.frames[0]
    assert [i for i, _ in req.ies] == [IE.AUTHMETHODS, IE.CHALLENGE, IE.USERNAME]
    assert (req.ie(IE.AUTHMETHODS), req.ie(IE.CHALLENGE), req.ie(IE.USERNAME)) == (
        2,
        "90604980",
        "u",
    )
    assert out.deadline == T0 + first_retry(INITIAL_RTT)
    rep = iax(
        IaxSubclass.AUTHREP,
        oseq=1,
        iseq=1,
        ies=[(IE.MD5_RESULT, "94b3c35ffc16b611e44f3ceb0de12a03")],
    )
    out = call.receive(rep, T0 + 0.01)
    # Authenticated: the round trip proved the address, so ANSWER follows at once.
    assert kinds(out) == [
        (IAX, IaxSubclass.ACCEPT),
        (CONTROL, ControlSubclass.ANSWER),
        (CONTROL, ControlSubclass.STOP_SOUNDS),
    ]
    assert types(out) == [CallIncoming, CallAccepted, CallAnswered]
    assert out.events[0].authenticated  # type: ignore[union-attr]


@pytest.mark.parametrize("secret", ["wrong", None], ids=["bad-password", "unknown-user"])
def test_inbound_challenge_failure_is_the_same_reject(secret: str | None) -> None:
    setup = InboundSetup(format=ULAW, challenge="42", secret=secret)
    call, _ = inbound(setup)
    answer = md5_response("42", "supersecret")
    out = call.receive(
        iax(IaxSubclass.AUTHREP, oseq=1, iseq=1, ies=[(IE.MD5_RESULT, answer)]), T0 + 0.01
    )
    assert kinds(out) == [(IAX, IaxSubclass.REJECT)]
    assert (out.frames[0].ie(IE.CAUSE), out.frames[0].ie(IE.CAUSECODE)) == (
        "No authority found",
        50,
    )
    assert out.events == (CallRejected(ME, "No authority found", 50, by_peer=False),)
    assert "supersecret" not in repr(setup)


def test_inbound_setup_times_out_without_authrep() -> None:
    call, out = inbound(InboundSetup(format=ULAW, challenge="1", secret="s"))
    call.receive(ack_of(out.frames[0], oseq=1, iseq=1), T0 + 0.01)
    assert call.next_deadline() == T0 + SETUP_TIMEOUT
    out = call.timer(T0 + SETUP_TIMEOUT)
    assert kinds(out) == [(IAX, IaxSubclass.REJECT)]
    assert out.events == (CallRejected(ME, "Timeout", 18, by_peer=False),)


# --- reliability ----------------------------------------------------------------------------------


def test_retransmission_schedule_then_lost() -> None:
    call, out = outbound()
    new = out.frames[0]
    sent_at = [T0]
    now = T0
    while True:
        deadline = call.next_deadline()
        assert deadline is not None
        now = deadline
        out = call.timer(now)
        if out.events:
            break
        if not out.frames:
            continue  # the setup timer looked and saw retransmissions still running
        assert kinds(out) == [(IAX, IaxSubclass.NEW)]
        again = out.frames[0]
        assert again.retrans and (again.ts, again.oseq) == (new.ts, new.oseq)
        assert again.ie(IE.CALLTOKEN) == new.ie(IE.CALLTOKEN)
        sent_at.append(now)
    # Sends at 0, 2, 12, 22 s; declared lost at 32 s, without sending a HANGUP.
    assert [round(t - T0, 6) for t in sent_at] == [0, 2, 12, 22]
    assert len(sent_at) == MAX_SENDS
    assert round(now - T0, 6) == 32
    assert out.frames == () and out.events == (CallLost(ME, LossReason.RETRIES_EXHAUSTED),)
    assert call.state is CallState.CLOSED and out.deadline is None


@pytest.mark.parametrize(("rtt_ms", "first"), [(30, 0.1), (200, 0.4), (2000, 4.0), (9000, 10.0)])
def test_first_retry_follows_measured_rtt(rtt_ms: int, first: float) -> None:
    call = accepted_outbound()
    now = T0 + PING_INTERVAL + 0.02
    out = call.timer(call.next_deadline() or 0)  # LAGRQ at +10
    call.receive(ack_of(out.frames[0], oseq=2, iseq=call.oseq), T0 + 10.1)
    out = call.timer(now)  # LAGRQ at +20 and PING at +21
    ping = next(f for f in out.frames if f.subclass == IaxSubclass.PING)
    for f in out.frames:
        call.receive(ack_of(f, oseq=2, iseq=call.oseq), now)
    pong = iax(IaxSubclass.PONG, oseq=2, iseq=call.oseq, ts=ping.ts)
    call.receive(pong, now + rtt_ms / 1000)
    assert call.rtt == pytest.approx(rtt_ms / 1000, abs=0.0015)
    assert first_retry(call.rtt) == pytest.approx(first, abs=0.005)
    sent_at = now + 1
    call.send_text(sent_at, "x")
    retry_at = sent_at + first_retry(call.rtt)
    assert (TEXT, 0) not in kinds(call.timer(retry_at - 0.001))
    assert (TEXT, 0) in kinds(call.timer(retry_at))


def test_retransmission_carries_current_iseq_and_backs_off() -> None:
    call = accepted_outbound()
    out = call.key(T0 + 1)
    key = out.frames[0]
    assert (key.oseq, key.iseq) == (1, 2)  # our NEW was 0; the peer sent ACCEPT 0, ANSWER 1
    # The peer sends something new that does not acknowledge the KEY (iseq still 2).
    call.receive(frame(TEXT, 0, oseq=2, iseq=1, payload=b"hi\x00"), T0 + 1.5)
    out = call.timer(T0 + 3)
    assert kinds(out) == [(CONTROL, ControlSubclass.RADIO_KEY)]
    again = out.frames[0]
    assert again.retrans and (again.oseq, again.ts) == (1, key.ts) and again.iseq == 3
    # Next try 2 s x 10 = 20 s, capped at 10 s.
    assert (CONTROL, ControlSubclass.RADIO_KEY) not in kinds(call.timer(T0 + 12.999))
    assert (CONTROL, ControlSubclass.RADIO_KEY) in kinds(call.timer(T0 + 13))


def test_cumulative_ack_and_window() -> None:
    call = accepted_outbound()
    for i in range(3):
        call.send_text(T0 + 1 + i * 0.001, f"t{i}")
    assert call.unacked == 3 and call.oseq == 4  # texts went out as 1, 2, 3
    # An iseqno outside [first unacked, oseq] acknowledges nothing.
    call.receive(iax(IaxSubclass.ACK, oseq=2, iseq=9), T0 + 1.1)
    call.receive(iax(IaxSubclass.ACK, oseq=2, iseq=0), T0 + 1.1)
    assert call.unacked == 3
    call.receive(iax(IaxSubclass.ACK, oseq=2, iseq=3), T0 + 1.1)
    assert call.unacked == 1
    # Any frame's iseqno acknowledges, not just ACKs.
    out = call.receive(frame(CONTROL, ControlSubclass.RADIO_KEY, oseq=2, iseq=4), T0 + 1.2)
    assert call.unacked == 0
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and types(out) == [RadioKeyed]


def test_ack_discipline() -> None:
    call = accepted_outbound()
    oseq_before = call.oseq
    text = frame(TEXT, 0, oseq=2, iseq=2, ts=777, payload=b"L \x00")
    out = call.receive(text, T0 + 1)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)]
    ack = out.frames[0]
    # Its oseqno repeats the TEXT's iseqno, as Asterisk's do; it takes no seqno of its own.
    assert (ack.scall, ack.dcall, ack.ts, ack.oseq, ack.iseq) == (ME, THEM, 777, 2, 3)
    assert call.oseq == oseq_before
    # Never ACK an ACK (nor INVAL-like frames).
    assert call.receive(iax(IaxSubclass.ACK, oseq=3, iseq=2), T0 + 1).frames == ()
    # An old duplicate is ACKed again and produces no event.
    out = call.receive(frame(TEXT, 0, oseq=2, iseq=2, ts=777, payload=b"L \x00"), T0 + 2)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.events == ()
    assert out.frames[0].ts == 777


def test_frame_from_the_future_gets_vnak_and_is_dropped() -> None:
    call = accepted_outbound()
    out = call.receive(frame(TEXT, 0, oseq=4, iseq=2, ts=90, payload=b"late\x00"), T0 + 1)
    assert kinds(out) == [(IAX, IaxSubclass.VNAK)]
    vnak = out.frames[0]
    assert (vnak.iseq, vnak.ts, vnak.dcall) == (2, 90, THEM)
    assert out.events == () and call.iseq == 2
    # The gap is filled, then the later frame comes again: both are taken in order.
    out = call.receive(frame(TEXT, 0, oseq=2, iseq=2, ts=80, payload=b"a\x00"), T0 + 1.1)
    out2 = call.receive(frame(TEXT, 0, oseq=3, iseq=2, ts=85, payload=b"b\x00"), T0 + 1.1)
    assert [e.text for e in out.events + out2.events] == ["a", "b"]  # type: ignore[attr-defined]


def test_vnak_received_resends_from_the_asked_seqno() -> None:
    call = accepted_outbound()
    sent = [call.send_text(T0 + 1 + i * 0.01, f"t{i}").frames[0] for i in range(3)]
    assert [f.oseq for f in sent] == [1, 2, 3]
    out = call.receive(iax(IaxSubclass.VNAK, oseq=2, iseq=2), T0 + 1.2)
    assert [(f.oseq, f.retrans, f.payload) for f in out.frames] == [
        (2, True, b"t1\x00"),
        (3, True, b"t2\x00"),
    ]
    assert call.unacked == 2  # the VNAK's iseqno acknowledged t0


def test_mini_before_full_voice_asks_for_a_resend_with_vnak() -> None:
    call = accepted_outbound()
    out = call.request_voice_resend(T0 + 1)
    assert kinds(out) == [(FrameType.IAX, IaxSubclass.VNAK)]
    vnak = out.frames[0]
    assert (vnak.scall, vnak.dcall) == (ME, call.peer_callno)
    assert vnak.iseq == call.iseq == 2  # the next frame we expect: the lost full voice frame
    assert vnak.ts > 0 and call.unacked == 0  # never queued for retransmission
    fresh, _ = outbound()
    with pytest.raises(LocalProtocolError):
        fresh.request_voice_resend(T0 + 1)  # no media before ACCEPT


def test_sequence_numbers_wrap_mod_256() -> None:
    call = accepted_outbound()
    peer_oseq = 2
    now = T0 + 1
    for i in range(600):
        now += 0.001
        out = call.send_text(now, "x")
        assert out.frames[0].oseq == (1 + i) & 0xFF
        out = call.receive(
            frame(TEXT, 0, oseq=peer_oseq & 0xFF, iseq=call.oseq, payload=b"y\x00"), now
        )
        peer_oseq += 1
        assert types(out) == [TextReceived] and call.unacked == 0
    assert call.iseq == peer_oseq & 0xFF


# --- teardown -------------------------------------------------------------------------------------


def test_peer_hangup_acked_then_linger_reacks_retransmissions() -> None:
    call = accepted_outbound()
    hangup = iax(IaxSubclass.HANGUP, oseq=2, iseq=2, ts=99, ies=[(IE.CAUSECODE, 16)])
    out = call.receive(hangup, T0 + 5)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.frames[0].ts == 99
    assert out.events == (CallHungUp(ME, "", 16, by_peer=True),)
    assert call.state is CallState.TERMINATED
    out = call.receive(
        iax(IaxSubclass.HANGUP, oseq=2, iseq=2, ts=99, retrans=True, ies=[(IE.CAUSECODE, 16)]),
        T0 + 7,
    )
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.events == ()
    call.timer(T0 + 5 + LINGER)
    assert call.state is CallState.CLOSED


def test_local_hangup_until_acked() -> None:
    call = accepted_outbound()
    out = call.hangup(T0 + 3)
    assert kinds(out) == [(IAX, IaxSubclass.HANGUP)]
    hangup = out.frames[0]
    assert [i for i, _ in hangup.ies] == [IE.CAUSECODE] and hangup.ie(IE.CAUSECODE) == 16
    assert out.events == (CallHungUp(ME, "", 16, by_peer=False),)
    assert call.state is CallState.HANGING_UP
    # The peer's frames that crossed our HANGUP get no answer (chan_iax2 has destroyed such a
    # call and drops them; an ACK would name a call the peer may no longer have).
    out = call.receive(frame(CONTROL, ControlSubclass.RADIO_KEY, oseq=2, iseq=2), T0 + 3.01)
    assert out.frames == () and out.events == ()
    call.receive(ack_of(hangup, oseq=3, iseq=3), T0 + 3.02)
    assert call.state is CallState.TERMINATED
    # Nor do a lingering call's late LAGRQ and PING (the peer's timers still firing).
    for n, sub in enumerate((IaxSubclass.LAGRQ, IaxSubclass.PING)):
        out = call.receive(iax(sub, oseq=3 + n, iseq=3), T0 + 4 + n)
        assert out.frames == () and out.events == ()


def test_local_hangup_with_cause_and_unanswered_hangup_closes_quietly() -> None:
    call = accepted_outbound()
    out = call.hangup(T0 + 3, "Going away", 16)
    assert out.frames[0].ie(IE.CAUSE) == "Going away"
    now = T0 + 3
    events = []
    while call.state is not CallState.CLOSED:
        now = call.next_deadline() or now
        events += call.timer(now).events
    assert events == []  # the call had already ended for the application


def test_inval_destroys_at_once() -> None:
    call = accepted_outbound()
    out = call.receive(iax(IaxSubclass.INVAL, oseq=0, iseq=0, ts=0), T0 + 1)
    assert out.frames == () and out.events == (CallLost(ME, LossReason.INVALIDATED),)
    assert call.state is CallState.CLOSED and out.deadline is None


def test_frames_from_another_call_number_are_ignored() -> None:
    call = accepted_outbound()
    out = call.receive(frame(TEXT, 0, oseq=2, iseq=2, scall=THEM + 1, payload=b"x\x00"), T0 + 1)
    assert out.frames == () and out.events == () and call.iseq == 2


# --- keep-alives ----------------------------------------------------------------------------------


def test_ping_and_lagrq_cadence() -> None:
    call = accepted_outbound()
    sent: list[tuple[float, int]] = []
    while (now := call.next_deadline() or 0) < T0 + 64:
        out = call.timer(now)
        for f in out.frames:
            sent.append((round(now - T0 - 0.01, 6), int(f.subclass)))
            call.receive(ack_of(f, oseq=2, iseq=call.oseq), now)
    pings = [t for t, s in sent if s == IaxSubclass.PING]
    lagrqs = [t for t, s in sent if s == IaxSubclass.LAGRQ]
    assert pings == [21, 42, 63]
    assert lagrqs == [10, 20, 30, 40, 50, 60]


def test_ping_gets_pong_with_rr_ies_and_echoed_ts() -> None:
    stats = RrStats(
        jitter=12, loss_percent=3, lost=7, packets=1000, delay=40, dropped=2, out_of_order=1
    )
    call = Call(ME, PEER, Direction.OUTBOUND, policy("ulaw_only"), rr_stats=lambda: stats)
    call.start_outbound(T0, DialParams("1"))
    call.receive(iax(IaxSubclass.ACCEPT, oseq=0, iseq=1, ies=[(IE.FORMAT, ULAW)]), T0 + 0.01)
    out = call.receive(iax(IaxSubclass.PING, oseq=1, iseq=1, ts=2001), T0 + 2)
    assert kinds(out) == [(IAX, IaxSubclass.PONG)]  # the PONG itself acknowledges the PING
    pong = out.frames[0]
    assert pong.ts == 2001 and pong.iseq == 2 and pong.oseq == 1
    assert [i for i, _ in pong.ies] == [
        IE.RR_JITTER,
        IE.RR_LOSS,
        IE.RR_PKTS,
        IE.RR_DELAY,
        IE.RR_DROPPED,
        IE.RR_OOO,
    ]
    assert pong.ie(IE.RR_LOSS) == (3 << 24) | 7
    assert (pong.ie(IE.RR_JITTER), pong.ie(IE.RR_PKTS), pong.ie(IE.RR_DELAY)) == (12, 1000, 40)
    assert len(dict(pong.ies)[IE.RR_DELAY]) == 2  # u16 on the wire
    out = call.receive(iax(IaxSubclass.LAGRQ, oseq=2, iseq=1, ts=3000), T0 + 3)
    assert kinds(out) == [(IAX, IaxSubclass.LAGRP)] and out.frames[0].ts == 3000


def test_default_rr_ies_are_zero() -> None:
    call = accepted_outbound()
    out = call.receive(iax(IaxSubclass.PING, oseq=2, iseq=2, ts=5000), T0 + 5)
    assert all(v == 0 for v in (out.frames[0].ie(i) for i, _ in out.frames[0].ies))


def test_rtt_from_lagrp_and_karn_rule() -> None:
    call = accepted_outbound()
    out = call.timer(T0 + 0.01 + LAGRQ_INTERVAL)
    lagrq = out.frames[0]
    assert lagrq.subclass == IaxSubclass.LAGRQ
    # Not answered in time: retransmitted; an echo now is ambiguous and gives no sample.
    call.timer(call.next_deadline() or 0)
    call.receive(iax(IaxSubclass.LAGRP, oseq=2, iseq=call.oseq, ts=lagrq.ts), T0 + 12.5)
    assert call.rtt == INITIAL_RTT
    out = call.timer(T0 + 0.01 + 2 * LAGRQ_INTERVAL)
    lagrq2 = next(f for f in out.frames if f.subclass == IaxSubclass.LAGRQ)
    call.receive(iax(IaxSubclass.LAGRP, oseq=3, iseq=call.oseq, ts=lagrq2.ts), T0 + 20.01 + 0.25)
    assert call.rtt == pytest.approx(0.25, abs=0.0015)
    # An echo of a timestamp we never probed with is ignored.
    call.receive(iax(IaxSubclass.PONG, oseq=4, iseq=call.oseq, ts=1), T0 + 21)
    assert call.rtt == pytest.approx(0.25, abs=0.0015)


# --- media and signalling in the call -------------------------------------------------------------


def test_dtmf_text_key_unkey_sent() -> None:
    call = accepted_outbound()
    out = call.send_dtmf(T0 + 1, "5")
    assert kinds(out) == [(FrameType.DTMF_BEGIN, ord("5")), (FrameType.DTMF, ord("5"))]
    out = call.send_dtmf(T0 + 1, "a")
    assert kinds(out)[1] == (FrameType.DTMF, ord("A"))
    out = call.send_text(T0 + 1, "!NEWKEY1!")
    assert kinds(out) == [(TEXT, 0)] and out.frames[0].payload == b"!NEWKEY1!\x00"
    assert kinds(call.key(T0 + 1)) == [(CONTROL, 12)]
    assert kinds(call.unkey(T0 + 1)) == [(CONTROL, 13)]
    for bad in ("", "55", "E", "x"):
        with pytest.raises(LocalProtocolError):
            call.send_dtmf(T0 + 1, bad)
    with pytest.raises(LocalProtocolError):
        call.send_text(T0 + 1, "a\x00b")
    with pytest.raises(LocalProtocolError):
        call.send_text(T0 + 1, "x" * 4084)
    # The longest a chan_iax2 peer takes in (a 4,096-byte datagram) is sent.
    assert len(call.send_text(T0 + 1, "x" * 4083).frames[0].payload) == 4084


def test_timestamps_rise_strictly_and_are_never_zero() -> None:
    call = accepted_outbound()
    stamps = [f.ts for f in call.send_text(T0, "a").frames]
    for _ in range(20):
        stamps += [f.ts for f in call.send_dtmf(T0, "1").frames]
    assert 0 not in stamps and all(b > a for a, b in itertools.pairwise(stamps))


def test_received_signalling_events() -> None:
    call = accepted_outbound()
    seq = iter(range(2, 100))

    def rx(ftype: int, sub: int, payload: bytes = b"") -> Output:
        return call.receive(
            frame(ftype, sub, oseq=next(seq), iseq=call.oseq, payload=payload), T0 + 1
        )

    assert rx(FrameType.DTMF_BEGIN, ord("7")).events == (DtmfBegan(ME, "7", 50),)
    assert rx(FrameType.DTMF, ord("7")).events == (DtmfReceived(ME, "7", 50),)
    text = rx(TEXT, 0, b"T 1999 COMPLETE\x00").events
    assert text == (TextReceived(ME, "T 1999 COMPLETE", 50),)
    assert rx(TEXT, 0, b"no nul").events == (TextReceived(ME, "no nul", 50),)
    assert rx(CONTROL, 12).events == (RadioKeyed(ME, 50),)
    assert rx(CONTROL, 13).events == (RadioUnkeyed(ME, 50),)
    assert rx(CONTROL, -1).events == (ControlReceived(ME, -1, 50),)  # stop sounds
    assert call.peer_last_ts == 50
    out = rx(FrameType.CNG, 0, b"\x00")
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.events == ()


def test_control_before_accept_is_ignored() -> None:
    call, _ = outbound()
    out = call.receive(frame(CONTROL, ControlSubclass.ANSWER, oseq=0, iseq=1), T0 + 0.01)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.events == ()
    assert call.state is CallState.CALLING


def test_voice_full_frames() -> None:
    call = accepted_outbound(fmt=ULAW)
    out = call.send_voice_full(T0 + 1, ULAW, b"\xff" * 160, 1000)
    assert kinds(out) == [(VOICE, ULAW)] and out.frames[0].ts == 1000
    assert out.frames[0].payload == b"\xff" * 160
    # Non-voice frames keep rising after a voice timestamp ahead of the signalling clock.
    assert call.send_text(T0 + 1, "x").frames[0].ts > 1000
    out = call.receive(
        frame(VOICE, ULAW, oseq=2, iseq=call.oseq, ts=8440, payload=b"\x7f" * 160), T0 + 2
    )
    assert out.events == (VoiceFullReceived(ME, ULAW, 8440, b"\x7f" * 160),)
    out = call.receive(
        frame(VOICE, SLIN16, oseq=3, iseq=call.oseq, ts=8460, payload=b"\0" * 640), T0 + 2
    )
    assert types(out) == [MediaFormatChanged, VoiceFullReceived]
    assert call.peer_voice_format == SLIN16
    # A codec outside the policy cannot be decoded: acknowledged, not delivered.
    out = call.receive(frame(VOICE, GSM, oseq=4, iseq=call.oseq, payload=b"\0" * 33), T0 + 2)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)] and out.events == ()
    with pytest.raises(LocalProtocolError):
        call.send_voice_full(T0 + 3, GSM, b"\0" * 33, 2000)


def test_unknown_iax_subclass_gets_unsupport_and_txreq_txrej() -> None:
    call = accepted_outbound()
    out = call.receive(iax(60, oseq=2, iseq=2), T0 + 1)
    assert kinds(out) == [(IAX, IaxSubclass.UNSUPPORT)]
    assert out.frames[0].ie(IE.IAX_UNKNOWN) == 60 and out.frames[0].iseq == 3
    out = call.receive(iax(IaxSubclass.TXREQ, oseq=3, iseq=call.oseq), T0 + 1)
    assert kinds(out) == [(IAX, IaxSubclass.TXREJ)]
    out = call.receive(iax(IaxSubclass.QUELCH, oseq=4, iseq=call.oseq), T0 + 1)
    assert kinds(out) == [(IAX, IaxSubclass.ACK)]


# --- local misuse ---------------------------------------------------------------------------------


def test_illegal_local_commands_raise() -> None:
    call, _ = outbound()
    with pytest.raises(LocalProtocolError):
        call.start_outbound(T0, DialParams("1"))
    with pytest.raises(LocalProtocolError):
        call.answer(T0)
    with pytest.raises(LocalProtocolError):
        call.reject(T0)
    with pytest.raises(LocalProtocolError, match="before ACCEPT"):
        call.key(T0)
    with pytest.raises(LocalProtocolError):
        call.start_inbound(new_frame(), T0, InboundSetup(format=ULAW))
    call.hangup(T0 + 1)
    with pytest.raises(LocalProtocolError):
        call.hangup(T0 + 1)
    with pytest.raises(LocalProtocolError):
        call.send_text(T0 + 1, "x")
    inbound_call, _ = inbound()
    with pytest.raises(LocalProtocolError):
        inbound_call.start_outbound(T0, DialParams("1"))
    with pytest.raises(LocalProtocolError):
        inbound_call.answer(T0)  # not confirmed yet: the answer is automatic anyway
    with pytest.raises(LocalProtocolError):
        Call(1, PEER, Direction.OUTBOUND, policy("ulaw_only"))
    with pytest.raises(LocalProtocolError):
        Call(0x8000, PEER, Direction.OUTBOUND, policy("ulaw_only"))


def test_transition_table_is_complete_and_closed_is_final() -> None:
    assert set(TRANSITIONS) == set(CallState)
    assert TRANSITIONS[CallState.CLOSED] == {}
    for row in TRANSITIONS.values():
        assert all(isinstance(s, CallState) for s in row.values())


def test_pong_rr_ies_become_the_peers_view_and_rtt_is_shown_once_measured() -> None:
    call = accepted_outbound()
    # Before any echo came back the RTT is the assumed 1 s: no figure of the path.
    assert (call.rtt, call.measured_rtt, call.peer_rr) == (INITIAL_RTT, None, None)
    now = T0 + PING_INTERVAL + 0.02
    out = call.timer(now)  # LAGRQ at +10 and +20, PING at +21
    ping = next(f for f in out.frames if f.subclass == IaxSubclass.PING)
    for f in out.frames:
        call.receive(ack_of(f, oseq=2, iseq=call.oseq), now)
    theirs = RrStats(jitter=23, loss_percent=4, lost=40, packets=960, delay=80, dropped=3)
    pong = iax(IaxSubclass.PONG, oseq=2, iseq=call.oseq, ts=ping.ts, ies=rr_ies(theirs))
    call.receive(pong, now + 0.125)
    assert call.measured_rtt == pytest.approx(0.125)
    assert call.peer_rr == theirs
    # A later PONG without RR IEs (the answer to a POKE-like probe) keeps the last figures.
    call.receive(iax(IaxSubclass.PONG, oseq=3, iseq=call.oseq, ts=1), now + 1)
    assert call.peer_rr == theirs


@pytest.mark.parametrize(
    ("ies", "expected"),
    [
        # RR_LOSS: percent in the top byte, count in the low 24 bits.
        (
            [(IE.RR_JITTER, 12), (IE.RR_LOSS, (7 << 24) | 0x012345), (IE.RR_PKTS, 5000)],
            RrStats(jitter=12, loss_percent=7, lost=0x012345, packets=5000),
        ),
        # A percentage above 100 in the top byte means nothing: clamped.
        ([(IE.RR_LOSS, 0xFF000002)], RrStats(loss_percent=100, lost=2)),
        (
            [(IE.RR_DELAY, 0xFFFF), (IE.RR_DROPPED, 9), (IE.RR_OOO, 4)],
            RrStats(delay=0xFFFF, dropped=9, out_of_order=4),
        ),
        # No RR IE at all: no figures (not zeros).
        ([], None),
    ],
)
def test_rr_of_parses_what_a_peer_sends(
    ies: list[tuple[int, int]], expected: RrStats | None
) -> None:
    pong = FullFrame(IAX, IaxSubclass.PONG, scall=THEM, dcall=ME, ts=5, ies=ies or None)
    # Through the wire and back, as a received PONG arrives.
    parsed = parse(pong.to_bytes())
    assert isinstance(parsed, FullFrame)
    assert rr_of(parsed) == expected


def test_rr_of_reads_back_what_rr_ies_writes() -> None:
    ours = RrStats(
        jitter=40, loss_percent=2, lost=17, packets=812, delay=60, dropped=1, out_of_order=2
    )
    pong = FullFrame(IAX, IaxSubclass.PONG, scall=ME, dcall=THEM, ts=5, ies=rr_ies(ours))
    parsed = parse(pong.to_bytes())
    assert isinstance(parsed, FullFrame)
    assert rr_of(parsed) == ours
