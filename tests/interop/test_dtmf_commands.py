"""DTMF link commands end to end: a softphone on node A types `*3<node>` and A links to node B,
then `*10` (0 = the last node) and A unlinks; every digit is a `dtmf` event on A's stream, the
digit that completes a sequence carries its command.

    softphone P --DTMF--> node A (2001, [dtmf] enabled) <--link--> node B (2002)
"""

from __future__ import annotations

from pathlib import Path

from tests.interop.harness import (
    LINK_SECRET,
    NODE_A,
    NODE_B,
    EventWatcher,
    link_state,
    node_log,
    node_pair,
    running_node,
    wait_until,
)
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone

PHONE_P = "3001"
PHONE_SECRET = "phone-pass-p"


def test_a_softphone_links_and_unlinks_by_dtmf(tmp_path: Path, registrar: Registrar) -> None:
    with (
        node_pair(
            tmp_path,
            registrar,
            codec_policy="ulaw_only",
            a_sections="[dtmf]\nenabled = true\ninter_digit_timeout_ms = 3000\n\n",
            a_env={f"NET_PEER_{PHONE_P}": PHONE_SECRET},
        ) as (a, b),
        Softphone(codec_policy="ulaw_only", name="P") as p,
    ):
        events = EventWatcher(a)
        cp = p.dial(a.udp_addr, "1", username=PHONE_P, secret=PHONE_SECRET)
        assert p.wait_for(lambda s: s.answered(cp))
        call = next(c["id"] for c in a.get("/status").json()["calls"] if c["peer"] == PHONE_P)

        # *3 2002: the number ends at its last digit (node 2002 has a configured address
        # and no other known node starts with 2002).
        since = len(events.events)
        p.send_dtmf(cp, f"*3{NODE_B}")
        connected = events.wait_for(
            lambda e: e["event"] == "link" and e["kind"] == "connected", since=since
        )
        assert connected["node"] == NODE_B and connected["direction"] == "outbound"
        assert connected["mode"] == "transceive"
        wait_until("the link up on B", lambda: link_state(b, NODE_A) == "up")
        digits = [e for e in events.named("dtmf") if e["call"] == call]
        assert [e["digit"] for e in digits] == list(f"*3{NODE_B}")
        assert [e.get("command") for e in digits] == [None] * 5 + [f"*3{NODE_B} connect {NODE_B}"]

        # *10: disconnect the last node named.
        since = len(events.events)
        p.send_dtmf(cp, "*10")
        gone = events.wait_for(
            lambda e: e["event"] == "link" and e["kind"] == "disconnected", since=since
        )
        assert gone["node"] == NODE_B
        assert link_state(a, NODE_B) is None
        wait_until("the link gone from B", lambda: link_state(b, NODE_A) is None)
        last = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert last == {
            "event": "dtmf",
            "call": call,
            "digit": "0",
            "command": f"*10 disconnect {NODE_B}",
        }

        # An unknown sequence is reported, and nothing happens (*8: nothing in ASL3's shipped
        # table begins with 8; *9 would wait, as *99 is cop,6).
        since = len(events.events)
        p.send_dtmf(cp, "*8")
        unknown = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert unknown["command"] == "*8 unknown"
        assert a.get("/status").json()["links"] == []

    log = node_log(a)
    assert f"DTMF *3{NODE_B} connect {NODE_B} from call {call}: linking node {NODE_B}" in log
    assert "DTMF *8 unknown" in log and "Traceback" not in log
    assert LINK_SECRET not in log and PHONE_SECRET not in log


DTMF_ON = "[dtmf]\nenabled = true\ninter_digit_timeout_ms = 3000\n\n"


def test_disconnect_all_restore_and_remote_command_mode(
    tmp_path: Path, registrar: Registrar
) -> None:
    """`*76` drops the link, `*74` brings it back; `*4<B>` sends the following digits to B as
    `D` texts, where B runs them: `*1<A>` typed on A's phone makes B drop its link to A."""
    with (
        node_pair(
            tmp_path,
            registrar,
            codec_policy="ulaw_only",
            a_sections=DTMF_ON,
            b_sections=DTMF_ON,
            a_env={f"NET_PEER_{PHONE_P}": PHONE_SECRET},
        ) as (a, b),
        Softphone(codec_policy="ulaw_only", name="P") as p,
    ):
        events_a, events_b = EventWatcher(a), EventWatcher(b)
        cp = p.dial(a.udp_addr, "1", username=PHONE_P, secret=PHONE_SECRET)
        assert p.wait_for(lambda s: s.answered(cp))
        p.send_dtmf(cp, f"*3{NODE_B}")
        wait_until("the link up on B", lambda: link_state(b, NODE_A) == "up")

        since = len(events_a.events)
        p.send_dtmf(cp, "*76")
        events_a.wait_for(
            lambda e: e["event"] == "link" and e["kind"] == "disconnected", since=since
        )
        wait_until("the link gone from B", lambda: link_state(b, NODE_A) is None)
        p.send_dtmf(cp, "*74")
        wait_until("the link back on A", lambda: link_state(a, NODE_B) == "up")
        wait_until("the link back on B", lambda: link_state(b, NODE_A) == "up")

        since_a, since_b = len(events_a.events), len(events_b.events)
        p.send_dtmf(cp, f"*4{NODE_B}*1{NODE_A}#")
        ran = events_b.wait_for(
            lambda e: e["event"] == "dtmf" and e.get("command", "").startswith("*1"),
            since=since_b,
        )
        assert ran["command"] == f"*1{NODE_A} disconnect {NODE_A}"
        wait_until("B dropped the link", lambda: link_state(b, NODE_A) is None)
        wait_until("A sees it gone", lambda: link_state(a, NODE_B) is None)
        ended = events_a.wait_for(
            lambda e: e["event"] == "dtmf" and e["digit"] == "#" and e.get("command"),
            since=since_a,
        )
        assert ended["command"] == f"# end remote command mode {NODE_B}"
        on_a = [e for e in events_a.named("dtmf")[-12:] if e.get("command")]
        assert [e["command"] for e in on_a][-2:] == [
            f"*4{NODE_B} remote command mode {NODE_B}",
            f"# end remote command mode {NODE_B}",
        ]
        # B heard exactly the digits between `*4<B>` and `#`, from the link.
        remote = [e["digit"] for e in events_b.named("dtmf") if e["digit"]]
        assert remote[-6:] == list(f"*1{NODE_A}")

    log_a, log_b = node_log(a), node_log(b)
    assert "DTMF *74 restore links from call" in log_a
    assert "Traceback" not in log_a and "Traceback" not in log_b


#: app_rpt__ultra's `50=macro,4` and HamVOIP's `5=macro,1` (here on 6): app_rpt's
#: function_macro ignores the parameter, so the digits typed after the code name the macro.
MACRO_TABLE = """[functions]
"50" = "macro,4"
"6" = "macro,1"
"722" = "status,2"
"723" = "status,3"

[macro]
"1000" = "*722"
"2" = "*723"

[rpt]
startup_macro = "*501000"

"""


def test_macro_follows_app_rpt_the_digits_typed_name_the_macro(tmp_path: Path) -> None:
    """A softphone types `*62` on a node whose table says `6 = macro,1`: macro 2 runs (app_rpt's
    reading; `macro,N` used to run macro N). The startup macro `*501000` runs macro 1000 through
    `50 = macro,4`, and `*69#` names no macro."""
    with (
        running_node(
            tmp_path,
            "a",
            codec_policy="ulaw_only",
            listener='auth = "off"',
            top=f'node_id = "{NODE_A}"',
            sections=DTMF_ON + MACRO_TABLE + "[links]\ndns = false\n\n",
        ) as a,
        Softphone(codec_policy="ulaw_only", name="P") as p,
    ):
        events = EventWatcher(a)
        cp = p.dial(a.udp_addr, "1")
        assert p.wait_for(lambda s: s.answered(cp))

        since = len(events.events)
        p.send_dtmf(cp, "*62")
        ran = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert ran["command"] == "*62 macro 2"
        # Macro 2 is *723: the version, spoken.
        events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "command",
            since=since,
            timeout=30,
        )

        # Macro 9 does not exist: once `#` ends the number, it is refused and nothing runs.
        since = len(events.events)
        p.send_dtmf(cp, "*69#")
        refused = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert refused["command"] == "*69 unknown"

    log = node_log(a)
    # The startup macro ran macro 1000 (the time), as app_rpt__ultra's configuration means.
    assert log.count("startup macro: macro 0: *501000: macro 1000: *722: status 2: good ") == 1
    assert "*62 macro 2 from call" in log
    assert "macro 2: *723: status 3: version" in log
    assert "macro 9 not found" in log
    assert "Traceback" not in log
