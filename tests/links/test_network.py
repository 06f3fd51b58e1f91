"""Tests for node.links.network: the link dialect as a sans-I/O machine, driven with a fake clock.

The expected text sequences are the ones the ASL3 captures in tests/data/interop/asl3 show.
"""

from __future__ import annotations

import pytest

from node.errors import CommandError
from node.links import network as ln
from node.links.network import (
    Answer,
    Dial,
    Hangup,
    LinkConnected,
    LinkDisconnected,
    LinkKeyed,
    LinkMode,
    LinkNetwork,
    LinkOutput,
    LinkState,
    PermanentLink,
    RemoteDigitReceived,
    SendCng,
    SendKey,
    SendText,
    SendUnkey,
    SetLeg,
    TelemetryReceived,
    VerifySource,
)

ME = "1999"
T0 = 1000.0
T, R = LinkMode.TRANSCEIVE, LinkMode.MONITOR


def net(**kwargs: object) -> LinkNetwork:
    return LinkNetwork(ME, rand=lambda: 0.5, **kwargs)  # type: ignore[arg-type]


def texts(out: LinkOutput) -> list[tuple[int, str]]:
    return [(a.callno, a.text) for a in out.actions if isinstance(a, SendText)]


def up_outbound(
    n: LinkNetwork, node: str, callno: int, now: float = T0, *, handshake: bool = True
) -> LinkOutput:
    """Link to `node` and bring the call up; the peer answers the handshake unless told not to."""
    assert n.connect(node, T, now).actions == (Dial(node, T),)
    n.dialled(node, callno, ("127.0.0.1", 4570), now)
    out = n.call_up(callno, "ulaw", now)
    if handshake:
        assert n.text(callno, "!NEWKEY1!", now).actions == ()
    return out


def up_inbound(n: LinkNetwork, node: str, callno: int, now: float = T0) -> LinkOutput:
    assert n.inbound(callno, node, ME, ("127.0.0.1", 4573), now).actions == (Answer(callno),)
    out = n.call_up(callno, "ulaw", now)
    n.text(callno, "!NEWKEY1!", now)
    return out


def run_until(n: LinkNetwork, until: float) -> list[ln.LinkAction]:
    """Fire every timer up to `until`; the actions in order."""
    actions: list[ln.LinkAction] = []
    while (d := n.next_deadline()) is not None and d <= until:
        actions.extend(n.timer(d).actions)
    return actions


# --- connect ----------------------------------------------------------------------------------


def test_outbound_connect_sends_what_app_rpt_sends_after_answer() -> None:
    n = net()
    out = up_outbound(n, "1998", 10)
    # asl_2node_noauth: !NEWKEY1!, T 1999 COMPLETE, L , T 1999 CONNECTED,1999,1998
    assert texts(out) == [
        (10, "!NEWKEY1!"),
        (10, "T 1999 COMPLETE"),
        (10, "L "),
        (10, "T 1999 CONNECTED,1999,1998"),
    ]
    assert out.events == (LinkConnected("1998", 10, T, "outbound"),)
    assert out.changed
    # Then the list kick, 150-250 ms later (random 0.5 -> 200 ms), and every 30 s after it.
    assert n.next_deadline() == pytest.approx(T0 + 0.2)
    assert run_until(n, T0 + 31) == [SendText(10, "L "), SendText(10, "L ")]
    link = n.links["1998"]
    assert link.state is LinkState.UP and link.handshake is ln.Handshake.NEWKEY1


def test_second_link_tells_the_first_and_lists_cross() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    run_until(n, T0 + 1)
    out = up_outbound(n, "1997", 11, T0 + 3)
    # asl_3node_md5 at t=3: 1998 gets COMPLETE and CONNECTED; 1997 the whole sequence.
    assert texts(out) == [
        (11, "!NEWKEY1!"),
        (10, "T 1999 COMPLETE"),
        (11, "T 1999 COMPLETE"),
        (11, "L T1998"),
        (10, "T 1999 CONNECTED,1999,1997"),
        (11, "T 1999 CONNECTED,1999,1997"),
    ]
    kicked = run_until(n, T0 + 3.3)
    assert kicked == [SendText(10, "L T1997"), SendText(11, "L T1998")]


def test_callee_answers_with_handshake_and_list_and_kicks_only_the_others() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    run_until(n, T0 + 1)
    out = up_inbound(n, "1997", 20, T0 + 2)
    # asl_3node_monitor at t=2.086: 1999 (callee) sends !NEWKEY1! and L T1998 to 1997 ...
    assert texts(out) == [(20, "!NEWKEY1!"), (20, "L T1998")]
    assert out.events == (LinkConnected("1997", 20, T, "inbound"),)
    # ... and at t=2.320 the kick reaches 1998 only.
    assert run_until(n, T0 + 2.3) == [SendText(10, "L T1997")]


def test_list_flattens_the_network_behind_each_link_and_downgrades_behind_monitors() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    run_until(n, T0 + 1)
    out = n.text(10, "L T2000,R2001,C2002", T0 + 2)
    assert out.changed and n.links["1998"].behind_nodes == {"2000", "2001", "2002"}
    assert out.actions == ()  # the change travels with the next list
    n.connect("2005", T, T0 + 2)
    assert [a for a in run_until(n, T0 + 2.3) if isinstance(a, SendText)] == [
        SendText(10, "L T1997,C2005"),
        SendText(20, "L T1998,T2000,R2001,C2002,C2005"),
    ]
    n.disconnect("2005", T0 + 2.5)
    # Monitoring 1998 instead: it and everything transceive behind it read as monitor.
    out = n.connect("1998", R, T0 + 3)
    assert SetLeg(10, mode="receive_only") in out.actions
    assert run_until(n, T0 + 3.3) == [
        SendText(10, "L T1997"),
        SendText(20, "L R1998,R2000,R2001,C2002"),
    ]
    assert n.list_entries() == ["R1998", "T1997"]
    assert n.snapshot(T0 + 4)[0]["nodes"] == ["T2000", "R2001", "C2002"]


def test_connecting_links_are_listed_as_connecting() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.connect("2005", T, T0 + 1)
    assert n.list_entries() == ["T1998", "C2005"]
    assert n.snapshot(T0 + 1)[1]["mode"] == "connecting"


def test_connect_refusals() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.text(10, "L T2000,R2001", T0)
    with pytest.raises(CommandError) as exc:
        n.connect("2001", T, T0)
    assert exc.value.status == 409 and "loop" in str(exc.value)
    with pytest.raises(CommandError) as exc:
        n.connect("1998", T, T0)
    assert exc.value.status == 409 and "already linked" in str(exc.value)
    with pytest.raises(CommandError) as exc:
        n.connect(ME, T, T0)
    assert exc.value.status == 400
    with pytest.raises(CommandError) as exc:
        LinkNetwork(None, rand=lambda: 0.0).connect("1998", T, T0)
    assert exc.value.status == 409 and "node number" in str(exc.value)


# --- telemetry and the rest of the dialect ----------------------------------------------------


def test_telemetry_is_forwarded_to_the_other_transceive_links_only() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    n.connect("2005", R, T0)
    n.dialled("2005", 30, ("127.0.0.1", 4600), T0)
    n.call_up(30, "ulaw", T0)
    run_until(n, T0 + 1)
    out = n.text(10, "T 1998 CONNECTED,1998,2003", T0 + 2)
    assert texts(out) == [(20, "T 1998 CONNECTED,1998,2003")]
    assert out.events == (
        TelemetryReceived("1998", 10, ln.t.Telemetry("1998", "CONNECTED", ("1998", "2003"))),
    )
    # Our own telemetry coming back round a loop is dropped.
    assert n.text(20, "T 1999 COMPLETE", T0 + 2) == LinkOutput(deadline=n.next_deadline())


def test_monitor_links_get_no_telemetry() -> None:
    n = net()
    n.connect("1998", R, T0)
    n.dialled("1998", 10, ("127.0.0.1", 4570), T0)
    out = n.call_up(10, "ulaw", T0)
    # asl_3node_monitor: the monitoring side sends only the handshake and its list.
    assert texts(out) == [(10, "!NEWKEY1!"), (10, "L ")]


def test_remote_dtmf_key_queries_messages_and_unknown_texts() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    n.text(10, "L T2000", T0)
    assert n.text(20, "D 1999 1997 1 5", T0).events == (RemoteDigitReceived("1997", 20, "5"),)
    # A digit for a node behind 1998 goes to 1998 only.
    assert texts(n.text(20, "D 2000 1997 2 *", T0)) == [(10, "D 2000 1997 2 *")]
    n.set_local_keyed(True, T0 - 7)
    out = n.text(20, "K? * 1997 0 0", T0)
    assert texts(out) == [(20, "K 1997 1999 1 7"), (10, "K? * 1997 0 0")]
    out = n.text(10, "M 2000 0 hello", T0)
    assert texts(out) == [(20, "M 2000 0 hello")] and len(out.events) == 1
    for junk in ("R 17", "V 1 x", "!IAXKEY! 1 1 0 0", "hello", "L X1", "C 2000 1 100"):
        out = n.text(10, junk, T0)
        assert out.actions == () and out.events == (), junk
    assert n.text_counts["unknown"] == 1 and n.text_counts["L (malformed)"] == 1


# --- keying -----------------------------------------------------------------------------------


def test_newkey1_link_unkeys_with_unkey_and_cng() -> None:
    n = net()
    up_outbound(n, "1998", 10, handshake=False)
    assert n.text(10, "!NEWKEY1!", T0 + 0.04).actions == ()
    assert n.links["1998"].handshake is ln.Handshake.NEWKEY1
    assert n.spurt(10, True, T0 + 6).actions == ()
    assert n.spurt(10, False, T0 + 9).actions == (SendUnkey(10), SendCng(10))
    # No newkey timer fires later: the handshake is done.
    assert not any(isinstance(a, SetLeg) for a in run_until(n, T0 + 40))


def test_no_handshake_in_two_seconds_means_legacy_keying() -> None:
    n = net()
    up_outbound(n, "1998", 10, handshake=False)
    actions = run_until(n, T0 + 2.0)
    assert SetLeg(10, keying="control") in actions
    assert n.links["1998"].handshake is ln.Handshake.LEGACY
    assert n.spurt(10, True, T0 + 3).actions == (SendKey(10),)
    assert n.spurt(10, False, T0 + 4).actions == (SendUnkey(10),)
    # A late !NEWKEY1! still switches the link to voice keying.
    assert n.text(10, "!NEWKEY1!", T0 + 5).actions == (SetLeg(10, keying="voice"),)


def test_newkey_peer_is_echoed_and_keyed_redundantly() -> None:
    n = net()
    up_outbound(n, "1998", 10, handshake=False)
    out = n.text(10, "!NEWKEY!", T0 + 0.1)
    assert out.actions == (SetLeg(10, keying="control"), SendText(10, "!NEWKEY!"))
    assert n.spurt(10, True, T0 + 1).actions == (SendKey(10),)
    keys = [a for a in run_until(n, T0 + 5.5) if isinstance(a, SendKey)]
    assert keys == [SendKey(10), SendKey(10)]  # at +2 s and +4 s
    assert n.spurt(10, False, T0 + 5.6).actions == (SendUnkey(10),)
    assert not any(isinstance(a, SendKey) for a in run_until(n, T0 + 9))


def test_rx_keying_edges_become_events() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    out = n.rx_keyed(10, True, T0 + 6)
    assert out.events == (LinkKeyed("1998", 10, True),) and out.changed
    assert n.rx_keyed(10, True, T0 + 6.1).events == ()
    assert n.rx_keyed(10, False, T0 + 9).events == (LinkKeyed("1998", 10, False),)
    snap = n.snapshot(T0 + 10)[0]
    assert snap["keyed"] is False and snap["last_keyed_s"] == 1.0
    assert snap["connected_s"] == 10.0
    assert n.last_keyed_node == "1998"
    up_inbound(n, "1997", 20, T0 + 11)
    n.rx_keyed(20, True, T0 + 12)
    n.rx_keyed(20, False, T0 + 13)
    # ilink 7: the last to key us up, whatever it did since.
    assert n.last_keyed_node == "1997"


def test_remote_digits_go_towards_their_node_as_d_texts() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    n.text(20, "L T2001,R2002", T0 + 1)
    run_until(n, T0 + 1)
    # Straight to an adjacent node, and to the link a node is behind; numbered in turn.
    assert texts(n.send_remote_digit("1998", "*")) == [(10, "D 1998 1999 1 *")]
    assert texts(n.send_remote_digit("2002", "3")) == [(20, "D 2002 1999 2 3")]
    assert n.reachable("2001") and not n.reachable("3000")
    with pytest.raises(CommandError) as exc:
        n.send_remote_digit("3000", "1")
    assert exc.value.status == 404
    # A node whose link is still connecting has no route yet.
    n.connect("2005", T, T0 + 2)
    assert not n.reachable("2005")


# --- disconnect, loss, retries ------------------------------------------------------------------


def test_disconnect_is_polite_and_final() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    run_until(n, T0 + 62)
    out = n.disconnect("1998", T0 + 63)
    # asl_2node_noauth t=63.46: !!DISCONNECT!!, T 1999 COMPLETE; app_rpt's HANGUP that follows
    # at once is held back: the far end reads the text and hangs up first.
    assert out.actions == (
        SendText(10, "!!DISCONNECT!!"),
        SendText(10, "T 1999 COMPLETE"),
        SendText(20, "T 1999 COMPLETE"),
    )
    assert out.events == (LinkDisconnected("1998", 10, "disconnected by operator"),)
    assert "1998" not in n.links and n.is_link_call(10)
    # Nothing goes into the call while we wait (no voice keying, no lists).
    assert n.spurt(10, True, T0 + 63.05).actions == ()
    assert n.call_ended(10, "hung up by peer", T0 + 63.1, refused=False).events == ()
    assert not n.is_link_call(10)
    # No list for the departure: 1997 hears of it with the next periodic list (its lists run
    # from the kick that followed both links up).
    assert run_until(n, T0 + 91) == [SendText(20, "L ")]
    assert n.links["1997"].timers[ln.LinkTimer.LIST] == pytest.approx(T0 + 120.2)
    with pytest.raises(CommandError) as exc:
        n.disconnect("1998", T0 + 65)
    assert exc.value.status == 404


def test_peer_disconnect_tears_down_at_once_and_sends_nothing_more() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    out = n.text(10, "!!DISCONNECT!!", T0 + 47)
    assert out.actions == ()
    assert out.events == (LinkDisconnected("1998", 10, "disconnected by peer"),)
    assert n.spurt(10, False, T0 + 47).actions == ()
    # The peer's HANGUP follows (asl_3node_md5 t=47.49): nothing else, no retry.
    assert n.call_ended(10, "hung up by peer", T0 + 47.01, refused=False).actions == ()
    assert run_until(n, T0 + 120) == [] and n.links == {}


def test_our_disconnect_hangs_up_itself_when_the_far_end_never_does() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.disconnect("1998", T0 + 63)
    assert run_until(n, T0 + 63 + ln.TEARDOWN_WAIT - 0.01) == []
    assert run_until(n, T0 + 63 + ln.TEARDOWN_WAIT) == [Hangup(10, 0)]
    assert n.call_ended(10, "hung up", T0 + 66, refused=False).events == ()
    assert not n.is_link_call(10)


def test_disconnect_of_a_link_not_up_yet_hangs_up_at_once() -> None:
    n = net()
    n.connect("1998", T, T0)
    n.dialled("1998", 10, ("127.0.0.1", 4570), T0)
    out = n.disconnect("1998", T0 + 1)
    assert out.actions == (Hangup(10, 0),)


def test_disconnect_all_is_disconnect_complete_then_the_far_ends_hang_up() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    n.connect("2005", R, T0)
    out = n.disconnect_all(T0 + 13.72)
    # asl_3node_monitor t=13.72 (ilink 6), per link: !!DISCONNECT!!, T 1999 COMPLETE; our
    # HANGUP waits for theirs (app_rpt sends it at once, and a jitter buffer lets it overtake).
    for callno in (10, 20):
        assert [a for a in out.actions if getattr(a, "callno", None) == callno] == [
            SendText(callno, "!!DISCONNECT!!"),
            SendText(callno, "T 1999 COMPLETE"),
        ]
    # 2005 was still being dialled: nothing to say, no call placed yet.
    assert run_until(n, T0 + 13.72 + ln.TEARDOWN_WAIT) == [Hangup(10, 0), Hangup(20, 0)]
    assert {e.node for e in out.events} == {"1998", "1997", "2005"}
    assert n.links == {}
    # Remembered for `*74` / ilink 16, each in its mode; a later empty ilink 6 forgets them.
    assert n.saved == (
        ln.SavedLink("1998", T, False),
        ln.SavedLink("1997", T, False),
        ln.SavedLink("2005", R, False),
    )
    n.disconnect_all(T0 + 20)
    assert n.saved == ()


def test_peer_disconnect_without_hangup_is_ended_by_us() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.text(10, "!!DISCONNECT!!", T0 + 47)
    assert run_until(n, T0 + 48.5) == [Hangup(10, 0)]


def test_lost_outbound_link_is_retried_with_backoff_then_given_up() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    out = n.call_ended(10, "connection lost", T0 + 100, refused=False)
    (ev,) = out.events
    assert isinstance(ev, LinkDisconnected) and ev.reason == "connection lost; retry 1 in 5 s"
    assert n.links["1998"].state is LinkState.RETRYING
    run_until(n, T0 + 101)  # the list kick for the remaining links (none)
    now, callno, dials = T0 + 100, 10, []
    for _attempt in range(5):
        deadline = n.next_deadline()
        assert deadline is not None
        dials.append(round(deadline - now))
        now = deadline
        assert n.timer(now).actions == (Dial("1998", T),)
        callno += 1
        n.dialled("1998", callno, ("127.0.0.1", 4570), now)
        out = n.call_ended(callno, "timeout", now + 1, refused=False)
        now += 1
    assert dials == [5, 10, 20, 40, 60]  # after each failure
    assert "1998" not in n.links
    assert out.events[-1].reason == "timeout; gave up after 5 retries"  # type: ignore[attr-defined]


def test_rejected_connect_is_not_retried() -> None:
    n = net()
    n.connect("1998", T, T0)
    n.dialled("1998", 10, ("127.0.0.1", 4570), T0)
    out = n.call_ended(10, "rejected: Caller not allowed", T0 + 0.01, refused=True)
    assert out.events == (LinkDisconnected("1998", None, "rejected: Caller not allowed"),)
    assert n.links == {}


def test_permanent_links_are_dialled_at_start_and_retried_for_ever() -> None:
    n = net(permanent=[PermanentLink("1998"), PermanentLink("2005", R)])
    assert n.start(T0).actions == (Dial("1998", T), Dial("2005", R))
    n.dialled("1998", 10, ("127.0.0.1", 4570), T0)
    n.call_up(10, "ulaw", T0)
    n.call_ended(10, "connection lost", T0 + 5, refused=False)
    now = T0 + 5
    for i in range(12):
        deadline = n.next_deadline()
        assert deadline is not None
        now = deadline
        n.timer(now)
        n.dial_failed("1998", "no address", now)
        assert n.links["1998"].state is LinkState.RETRYING, i
    # Backed off up to a cap that keeps an outage's end within seconds of the link's return.
    assert n.links["1998"].timers[ln.LinkTimer.RETRY] - now == pytest.approx(8.0)
    assert ln.PERMANENT_RETRY_MAX == 8.0
    assert n.snapshot(now)[0]["permanent"] is True


def test_an_unanswered_redial_of_a_permanent_link_is_dialled_afresh() -> None:
    n = net(permanent=[PermanentLink("1998")])
    n.start(T0)
    n.dialled("1998", 10, ("127.0.0.1", 4570), T0)
    n.call_up(10, "ulaw", T0)
    n.call_ended(10, "connection lost", T0 + 5, refused=False)
    assert run_until(n, T0 + 5 + ln.RETRY_FIRST) == [Dial("1998", T)]
    redial = T0 + 5 + ln.RETRY_FIRST
    n.dialled("1998", 11, ("127.0.0.1", 4570), redial)
    # The path is still dead: nobody answers the NEW. A fresh call goes out, the old one ends.
    assert run_until(n, redial + ln.PERMANENT_ATTEMPT) == [Hangup(11, 0), Dial("1998", T)]
    n.dialled("1998", 12, ("127.0.0.1", 4570), redial + ln.PERMANENT_ATTEMPT)
    assert n.call_ended(11, "hung up", redial + 7, refused=False).events == ()
    # Answered: no more attempts.
    n.call_up(12, "ulaw", redial + 8)
    assert [a for a in run_until(n, redial + 60) if isinstance(a, (Dial, Hangup))] == []
    assert n.links["1998"].up


def test_connect_while_resolving_then_disconnect_hangs_up_the_late_call() -> None:
    n = net()
    n.connect("1998", T, T0)
    n.disconnect("1998", T0 + 0.1)
    assert n.dialled("1998", 10, ("127.0.0.1", 4570), T0 + 0.2).actions == (Hangup(10, 0),)


# --- inbound ------------------------------------------------------------------------------------


def test_inbound_to_another_node_or_from_ourselves_is_hung_up_like_asl() -> None:
    n = net()
    # asl_reject_unknown_nodes: ACCEPT, then HANGUP with cause 16 for a node not hosted here.
    out = n.inbound(20, "1998", "1234", ("127.0.0.1", 4570), T0)
    assert out.actions == (Hangup(20, 16),)
    assert n.is_link_call(20) and n.links == {}
    assert n.inbound(21, ME, ME, ("127.0.0.1", 4570), T0).actions == (Hangup(21, 16),)


def test_a_node_calling_again_replaces_its_old_link() -> None:
    n = net()
    up_inbound(n, "1997", 20)
    out = n.inbound(21, "1997", ME, ("127.0.0.1", 4573), T0 + 5)
    assert out.actions == (Hangup(20, 0), Answer(21))
    assert n.links["1997"].callno == 21 and n.is_link_call(20)


def test_source_verification() -> None:
    n = net(verify_source=True)
    out = n.inbound(20, "1997", ME, ("10.0.0.9", 4569), T0)
    assert out.actions == (VerifySource(20, "1997", "10.0.0.9"),)
    out = n.source_checked(20, False, T0 + 0.1)
    assert out.actions == (Hangup(20, 0),)
    assert out.events[0].reason == "refused: source address does not match its node's address"  # type: ignore[attr-defined]
    n.inbound(21, "1996", ME, ("10.0.0.8", 4569), T0)
    assert n.source_checked(21, True, T0 + 0.1).actions == (Answer(21),)


def test_dstar_session_is_any_link_to_a_dstar_node() -> None:
    n = net(dstar_nodes=["3100"])
    assert not n.dstar_active()
    n.connect("3100", T, T0)
    assert n.dstar_active()
    n.disconnect("3100", T0 + 1)
    assert not n.dstar_active()


# --- web-transceiver guests ---------------------------------------------------------------------


def test_a_guest_link_speaks_no_dialect_and_keys_by_voice() -> None:
    n = net(guest_nodes=["2000"])
    up_inbound(n, "1997", 20)
    n.connect("2000", T, T0)
    n.dialled("2000", 30, ("127.0.0.1", 4600), T0)
    out = n.call_up(30, "ulaw", T0 + 0.1)  # at RINGING
    assert texts(out) == [] and out.events == (LinkConnected("2000", 30, T, "outbound"),)
    assert n.links["2000"].handshake is ln.Handshake.GUEST
    # The other links hear of it by list (1997 had ours at answer, before the guest link: the
    # kick still brings it the news, then its periodic list); the guest itself never gets one,
    # nor telemetry.
    assert texts(LinkOutput(tuple(run_until(n, T0 + 40)))) == [(20, "L T2000"), (20, "L T2000")]
    assert n.text(30, "!NEWKEY1!", T0 + 41).actions == ()
    assert n.links["2000"].handshake is ln.Handshake.GUEST
    assert n.spurt(30, True, T0 + 42).actions == ()
    assert n.spurt(30, False, T0 + 43).actions == (SendUnkey(30), SendCng(30))
    out = n.disconnect("2000", T0 + 44)
    assert out.actions == (SendText(20, "T 1999 COMPLETE"), Hangup(30, 16))


def test_a_guest_answered_and_dropped_at_once_was_refused() -> None:
    n = net(guest_nodes=["2000"])
    n.connect("2000", T, T0)
    n.dialled("2000", 30, ("127.0.0.1", 4600), T0)
    n.call_up(30, "ulaw", T0 + 0.1)
    n.answered(30, T0 + 3.0)
    out = n.call_ended(30, "hung up by peer", T0 + 4.0, refused=False)
    (ev,) = out.events
    assert (
        isinstance(ev, LinkDisconnected) and "did not accept the web-transceiver token" in ev.reason
    )
    assert n.links == {}
    # Hung up later than that: an ordinary loss, retried.
    n.connect("2000", T, T0 + 10)
    n.dialled("2000", 31, ("127.0.0.1", 4600), T0 + 10)
    n.call_up(31, "ulaw", T0 + 10)
    n.answered(31, T0 + 11)
    n.call_ended(31, "hung up by peer", T0 + 30, refused=False)
    assert n.links["2000"].state is LinkState.RETRYING


def test_a_local_monitor_link_is_heard_locally_and_listed_nowhere() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.connect("1997", LinkMode.LOCAL_MONITOR, T0)
    n.dialled("1997", 11, ("127.0.0.1", 4573), T0)
    out = n.call_up(11, "ulaw", T0)
    n.text(11, "!NEWKEY1!", T0)
    n.text(11, "L T2001", T0 + 0.1)
    # It gets the handshake and our list, but no telemetry (it is not transceive) ...
    assert [text for c, text in texts(out) if c == 11] == ["!NEWKEY1!", "L T1998"]
    # ... and neither it nor what is behind it is in the lists we send or report.
    assert n.list_entries() == ["T1998"]
    assert [str(e) for e in n.network_entries()] == ["T1998"]
    assert run_until(n, T0 + 1) == [SendText(10, "L "), SendText(11, "L T1998")]
    assert n.snapshot(T0 + 1)[1]["mode"] == "local_monitor"
    # Changing it to transceive is done in place, and it is listed again.
    out = n.connect("1997", T, T0 + 2)
    assert SetLeg(11, mode="transceive") in out.actions
    assert n.list_entries() == ["T1998", "T1997"]
    assert LinkMode.LOCAL_MONITOR.leg == "local_only"


# --- lists: changes, expiry, size ---------------------------------------------------------------


def two_links() -> LinkNetwork:
    """1998 (outbound, call 10) and 1997 (inbound, call 20) up, their first lists sent."""
    n = net()
    up_outbound(n, "1998", 10)
    up_inbound(n, "1997", 20)
    run_until(n, T0 + 1)
    return n


def sent_lists(actions: list[ln.LinkAction]) -> list[tuple[int, str]]:
    return [(a.callno, a.text) for a in actions if isinstance(a, SendText) and a.text[:1] == "L"]


def test_a_link_that_comes_up_right_after_another_reaches_the_first_within_a_kick() -> None:
    # We are B of A-B-C: A (1998) calls us, and we link to C (1997) before the kick that
    # follows A's link fires. A had our list at answer (empty): the kick must still reach it.
    n = net()
    up_inbound(n, "1998", 20, T0)
    out = up_outbound(n, "1997", 11, T0 + 0.05)
    assert (11, "L T1998") in texts(out)
    assert sent_lists(run_until(n, T0 + 0.3)) == [(20, "L T1997"), (11, "L T1998")]


def test_lists_go_out_a_kick_after_a_link_is_established() -> None:
    n = net()
    up_inbound(n, "1998", 20, T0)
    run_until(n, T0 + 1)
    # Dialled at T0+2 (the kick tells 1998 it is connecting), answered at T0+3.
    assert n.connect("1997", T, T0 + 2).actions == (Dial("1997", T),)
    n.dialled("1997", 11, ("127.0.0.1", 4573), T0 + 2)
    assert sent_lists(run_until(n, T0 + 2.9)) == [(20, "L C1997")]
    n.call_up(11, "ulaw", T0 + 3)
    assert n.next_deadline() == pytest.approx(T0 + 3.2)
    assert sent_lists(run_until(n, T0 + 3.3)) == [(20, "L T1997"), (11, "L T1998")]


def test_a_neighbours_changed_list_goes_on_within_a_kick_but_not_back() -> None:
    n = two_links()
    out = n.text(10, "L T2000", T0 + 5)
    assert out.changed and out.actions == ()
    assert n.next_deadline() == pytest.approx(T0 + 5.2)
    assert sent_lists(run_until(n, T0 + 5.3)) == [(20, "L T1998,T2000")]
    # The same list again is no news: nothing before the periodic lists.
    assert not n.text(10, "L T2000", T0 + 6).changed
    assert sent_lists(run_until(n, T0 + 30)) == []


def test_a_node_that_left_behind_a_link_is_gone_with_the_next_list() -> None:
    n = two_links()
    n.text(10, "L T2000,T2001", T0 + 2)
    run_until(n, T0 + 3)
    assert "2001" in n.tree()
    run_until(n, T0 + 31)  # the periodic lists
    n.text(10, "L T2000", T0 + 32)
    assert "2001" not in n.tree()
    assert set(sent_lists(run_until(n, T0 + 32.3))) == {(20, "L T1998,T2000")}


def test_a_neighbours_list_expires_when_no_newer_one_comes() -> None:
    n = two_links()
    n.text(10, "L T2000,R2001", T0 + 2)
    run_until(n, T0 + 3)
    # Lists every 30 s keep it.
    for k in range(1, 4):
        n.text(10, "L T2000,R2001", T0 + 2 + 30 * k)
    run_until(n, T0 + 92 + ln.LIST_EXPIRY - 1)
    assert n.links["1998"].behind_nodes == {"2000", "2001"}
    assert n.snapshot(T0 + 92 + ln.LIST_EXPIRY - 1)[0]["list_s"] == ln.LIST_EXPIRY - 1
    # Then they stop (the link itself stays up: the peer still answers LAGRQ and PING).
    actions = run_until(n, T0 + 92 + ln.LIST_EXPIRY + 0.3)
    assert n.links["1998"].behind == () and n.tree() == {"1998", "1997"}
    assert (20, "L T1998") in sent_lists(actions)
    assert n.graph()["lists"]["expired"] == 1
    assert ln.LIST_EXPIRY > 2 * 40  # two of the longest period app_rpt allows, missed


def test_a_list_repeating_us_and_the_sender_is_held_without_them() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.text(10, "L T2000,T1999,T1998,T2000,R2001", T0 + 1)
    assert [str(e) for e in n.links["1998"].behind] == ["T2000", "R2001"]


def thousand(first: int = 2000, count: int = 1000) -> str:
    return "L " + ",".join(f"T{first + i}" for i in range(count))


def test_a_thousand_nodes_behind_a_link_are_held_whole_and_lists_stay_within_a_frame() -> None:
    n = net()
    up_outbound(n, "1998", 10)  # the hub of hubs
    up_inbound(n, "1997", 20)
    up_inbound(n, "1996", 21)
    run_until(n, T0 + 1)
    hub = "L " + ",".join(f"T{300000 + i}" for i in range(1000))
    n.text(10, hub, T0 + 2)
    assert len(n.links["1998"].behind) == 1000 and len(n.tree()) == 1003
    assert len(n.snapshot(T0 + 2)[0]["nodes"]) == 1000
    graph = n.graph()
    assert len(graph["nodes"]) == 1 + 3 + 1000
    assert sum(1 for e in graph["edges"] if e["from"] == "1998") == 1000
    lists = sent_lists(run_until(n, T0 + 2.3))
    assert [c for c, _ in lists] == [20, 21]
    for callno, text in lists:
        assert len(text.encode()) <= ln.MAX_LIST_BYTES
        entries = text[2:].split(",")
        # Our own links are always there; then as many of the hub's nodes as fit, in order.
        assert entries[0] == "T1998" and ("T1996" in entries) != (callno == 21)
        assert entries[1:4] == ["T300000", "T300001", "T300002"]
    dropped = n.links["1997"].list_dropped
    kept = len(lists[0][1][2:].split(","))
    assert dropped > 0 and kept + dropped == 1002
    assert n.graph()["lists"]["cut"] == 2 and n.graph()["lists"]["entries_dropped"] == 2 * dropped
    # A list that fits is sent whole, as app_rpt orders it.
    n.text(10, thousand(count=10), T0 + 5)
    assert sent_lists(run_until(n, T0 + 5.3))[0] == (
        20,
        "L T1998," + thousand(count=10)[2:] + ",T1996",
    )
    assert n.links["1997"].list_dropped == 0


def test_graph_names_who_is_linked_to_whom_in_which_mode() -> None:
    n = net()
    up_outbound(n, "1998", 10)
    n.connect("1997", R, T0)
    n.text(10, "L T2000,C2001", T0 + 1)
    g = n.graph()
    assert g["nodes"][0] == {"node": ME, "hops": 0, "mode": None, "via": None}
    assert {"from": ME, "to": "1998", "mode": "transceive", "adjacent": True} in g["edges"]
    assert {"from": ME, "to": "1997", "mode": "connecting", "adjacent": True} in g["edges"]
    assert {"from": "1998", "to": "2000", "mode": "transceive", "adjacent": False} in g["edges"]
    assert {"from": "1998", "to": "2001", "mode": "connecting", "adjacent": False} in g["edges"]
    assert {"node": "2000", "hops": 2, "mode": "transceive", "via": "1998"} in g["nodes"]


def test_links_of_another_protocol_ride_in_our_lists() -> None:
    """EchoLink stations (links `3<number>`, `set_foreign`) are in every list we send, and a
    change goes out with the next kick, as app_rpt lists its EchoLink links."""
    n = net()
    up_outbound(n, "1998", 10)
    run_until(n, T0 + 1)
    out = n.set_foreign([("T", "3123456"), ("C", "3000007")], T0 + 2)
    assert out.changed and out.actions == ()
    assert run_until(n, T0 + 2.3) == [SendText(10, "L T3123456,C3000007")]
    up_outbound(n, "1997", 11, T0 + 3)
    kicked = run_until(n, T0 + 3.3)
    assert SendText(10, "L T1997,T3123456,C3000007") in kicked
    assert SendText(11, "L T1998,T3123456,C3000007") in kicked
    assert n.list_entries() == ["T1998", "T1997", "T3123456", "C3000007"]
    assert not n.set_foreign([("T", "3123456"), ("C", "3000007")], T0 + 4).changed
    n.set_foreign([], T0 + 5)
    assert SendText(10, "L T1997") in run_until(n, T0 + 5.3)
