"""Two `node serve` processes linked through a lossy relay: the call survives loss, duplication
and reordering, audio still crosses with mix-minus, and the lost signalling is retransmitted.

    softphone P -> node A -> [relay: 10 % loss, 3 % duplicates, 5 % reordered] -> node B <- Q

The link is set up on a clean path except that the relay drops B's first ANSWER for sure (A
gets it from B's retransmission); the random impairment starts once the link is up and stays on
through the talking and the hang-up, whose first HANGUP from A is also dropped for sure (A's
retransmission timer recovers it, no earlier than its 100 ms floor). Random loss during setup,
with its 2/12/22 s retransmission waits, is covered on the simulated link of
tests/iax2/test_endpoint.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from node.iax2.call import MIN_RETRY
from node.iax2.constants import ControlSubclass, FrameType, IaxSubclass
from tests.interop.harness import EventWatcher, free_udp_port, node_log, running_node, wait_until
from tests.interop.relay import FORWARD, REVERSE, LossyRelay
from tests.interop.softphone import Softphone, band_levels_db, rate_of
from tests.node_process import NodeProcess

NODE_A, NODE_B = "2001", "2002"
LINK_SECRET = "lossy-link-secret"
PHONE_Q_SECRET = "phone-q-secret"
TONE_P, TONE_Q = 600.0, 1500.0
#: How much audio each phone must hear across the impaired link before the checks.
LISTEN_MS = 2000


def calls(node: NodeProcess) -> list[dict]:
    return node.get("/status").json()["calls"]


def up_with(node: NodeProcess, peer: str) -> dict | None:
    return next((c for c in calls(node) if c["peer"] == peer and c["state"] == "up"), None)


def first_answer_from_b(direction: str, frame) -> bool:
    return (
        direction == REVERSE
        and frame.ftype == FrameType.CONTROL
        and frame.subclass == ControlSubclass.ANSWER
    )


def first_hangup_from_a(direction: str, frame) -> bool:
    return (
        direction == FORWARD
        and frame.ftype == FrameType.IAX
        and frame.subclass == IaxSubclass.HANGUP
    )


@pytest.mark.parametrize("seed", [7, 2024])
def test_a_lossy_link_keeps_the_call_and_retransmits(seed: int, tmp_path: Path) -> None:
    with (
        running_node(
            tmp_path,
            "a",
            codec_policy="ulaw_only",
            listener='auth = "off"',
            sections=f'[register]\npeer = "127.0.0.1:{free_udp_port()}"\nnode_id = "{NODE_A}"\n\n'
            '[secrets]\nsource = "control"\n',
            env={f"NET_PEER_{NODE_B}": LINK_SECRET},
        ) as a,
        running_node(
            tmp_path,
            "b",
            codec_policy="ulaw_only",
            listener='auth = "required"',
            env={f"NET_PEER_{NODE_A}": LINK_SECRET, "NET_PEER_3002": PHONE_Q_SECRET},
        ) as b,
        LossyRelay(
            b.udp_addr,
            seed=seed,
            drop_first=[first_answer_from_b, first_hangup_from_a],
            impair=False,
        ) as relay,
        Softphone(tone_hz=TONE_P, name="P") as p,
        Softphone(tone_hz=TONE_Q, name="Q") as q,
    ):
        events_a, events_b = EventWatcher(a), EventWatcher(b)
        host, port = relay.front_addr
        r = a.post("/dial", json={"node": NODE_B, "addr": f"{host}:{port}"})
        assert r.status_code == 200, r.text
        # B challenges A (MD5 with NET_PEER_2001); its ANSWER needs a retransmission.
        link_a = wait_until("the link up on A", lambda: up_with(a, NODE_B))
        link_b = wait_until("the link up on B", lambda: up_with(b, NODE_A))
        assert link_b["addr"] == "{}:{}".format(*relay.back_addr)
        relay.impair = True

        cp = p.dial(a.udp_addr, "1", calling_number="3001")
        cq = q.dial(b.udp_addr, "1", username="3002", secret=PHONE_Q_SECRET)
        assert p.wait_for(lambda s: s.answered(cp)) and q.wait_for(lambda s: s.answered(cq))
        # A talk spurt whose first full voice frame is lost waits for its retransmission.
        assert p.wait_for(lambda s: s.heard_ms(cp) >= LISTEN_MS, 30)
        assert q.wait_for(lambda s: s.heard_ms(cq) >= LISTEN_MS, 30)

        # Still up on both sides, no hang-up anywhere.
        assert up_with(a, NODE_B) and up_with(b, NODE_A)
        assert events_a.named("hangup") == [] and events_b.named("hangup") == []

        # The tones crossed the impaired link, concealment and all.
        for phone, callno, other, own in ((p, cp, TONE_Q, TONE_P), (q, cq, TONE_P, TONE_Q)):
            rec = phone.recording(callno)
            assert rec.fmt is not None
            level_other, level_own = band_levels_db(
                rec.pcm(skip_ms=300), rate_of(rec.fmt), [other, own]
            )
            assert level_other > -6.0 and level_own < -25.0, (phone.name, level_other, level_own)

        # The impairment happened, and the jitter buffers saw it.
        fwd, rev = relay.counters[FORWARD], relay.counters[REVERSE]
        assert fwd["dropped"] > 0 and rev["dropped"] > 0
        assert fwd["delayed"] + rev["delayed"] > 0 and fwd["duplicated"] + rev["duplicated"] > 0
        assert fwd["mini"] > 0 and rev["mini"] > 0
        for node, link in ((a, link_a), (b, link_b)):
            leg = node.get("/stats").json()["legs"][str(link["id"])]
            assert leg["frames_in"] > 0 and leg["frames_out"] > 0
            assert leg["lost"] + leg["duplicate"] + leg["reordered"] + leg["late"] > 0, leg

        # B's dropped ANSWER came back as a retransmission.
        answers = [
            s
            for s in relay.frames(REVERSE)
            if s.frame.ftype == FrameType.CONTROL and s.frame.subclass == ControlSubclass.ANSWER
        ]
        assert answers[0].fate == "dropped"
        assert any(s.frame.retrans and s.fate != "dropped" for s in answers[1:])

        # Hang up the link on A; its HANGUP is lost once and retransmitted by the timer.
        assert a.post("/hangup", json={"call": link_a["id"]}).status_code == 200
        events_a.wait_for(lambda e: e["event"] == "hangup")
        hung = events_b.wait_for(lambda e: e["event"] == "hangup", 30)
        assert hung["reason"].startswith("hung up by peer")
        wait_until("the link gone from B", lambda: not [c for c in calls(b) if c["peer"] == NODE_A])

        hangups = [
            s
            for s in relay.frames(FORWARD)
            if s.frame.ftype == FrameType.IAX and s.frame.subclass == IaxSubclass.HANGUP
        ]
        first, retry = hangups[0], next(s for s in hangups if s.frame.retrans)
        assert first.fate == "dropped" and not first.frame.retrans
        assert relay.original_of(retry) == first
        assert retry.at - first.at >= MIN_RETRY
        assert relay.retransmissions(FORWARD) and relay.retransmissions(REVERSE)

        # The phones' calls were not disturbed.
        assert [c["peer"] for c in calls(a)] == ["3001"] and [c["peer"] for c in calls(b)] == [
            "3002"
        ]
        p.hangup(cp)
        q.hangup(cq)
        assert p.wait_for(lambda s: s.ended(cp)) and q.wait_for(lambda s: s.ended(cq))

    for node in (a, b):
        log = node_log(node)
        assert "Traceback" not in log and LINK_SECRET not in log
