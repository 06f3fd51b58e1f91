"""Two real `node serve` processes linked (POST /link connect), with a softphone on each, all
on loopback: softphone P (600 Hz) -> node A <-> node B <- softphone Q (1500 Hz).

Tones prove the mix-minus conferences end to end: P must hear Q's 1500 Hz and not its own
600 Hz coming back through B, and Q the reverse. Both nodes register with the tiny registrar
first; every call is MD5-authenticated (the node-to-node call with the secret both nodes hold
for each other, `NET_PEER_<node>`); the phones key up (RADIO_KEY) before they talk. The mixed
case runs A at 16 kHz (`prefer_slin16`, a slin16 phone) against a µ-law-only B, so audio
crosses the link as µ-law and is resampled at A's edges.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from node.iax2.call import CallHungUp
from node.iax2.constants import Format
from tests.interop.harness import EventWatcher, node_log, running_node, wait_until
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone, band_levels_db, rate_of
from tests.node_process import NodeProcess

NODE_A, NODE_B = "2001", "2002"
PHONE_P, PHONE_Q = "3001", "3002"
LINK_SECRET = "link-secret-a-b"
SECRETS = {
    "node_a": "reg-pass-a",
    "node_b": "reg-pass-b",
    "phone_p": "phone-pass-p",
    "phone_q": "phone-pass-q",
}
TONE_P, TONE_Q = 600.0, 1500.0
FORMATS = {"ulaw": Format.ULAW, "slin16": Format.SLIN16}
#: How much audio each phone must hear before the spectra are taken, and how much of its start
#: (jitter-buffer fill, concealment) is left out.
LISTEN_MS, SKIP_MS = 1500, 300
#: The other side's tone must hold most of what a phone hears; its own tone may only be noise.
OTHER_MIN_DB, OWN_MAX_DB = -3.0, -30.0


@dataclass(frozen=True)
class Case:
    policy_a: str
    phone_p: str
    policy_b: str
    phone_q: str
    #: Codecs expected in /status: P's call on A, the link on A and B, Q's call on B.
    codec_p: str
    codec_link: str
    codec_q: str


CASES = {
    "ulaw": Case("ulaw_only", "ulaw_only", "ulaw_only", "ulaw_only", "ulaw", "ulaw", "ulaw"),
    "mixed": Case(
        "prefer_slin16", "prefer_slin16", "ulaw_only", "ulaw_only", "slin16", "ulaw", "ulaw"
    ),
}


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    with Registrar({NODE_A: SECRETS["node_a"], NODE_B: SECRETS["node_b"]}) as reg:
        yield reg


def node_sections(registrar: Registrar, node_id: str) -> str:
    host, port = registrar.addr
    return (
        f'[register]\npeer = "{host}:{port}"\nnode_id = "{node_id}"\n\n[secrets]\nsource = "env"\n'
    )


def station(
    tmp_path: Path, registrar: Registrar, node_id: str, other: str, phone: str, policy: str
) -> AbstractContextManager[NodeProcess]:
    """Node `node_id` of `policy`, registered with `registrar` and requiring authentication,
    knowing the link secret of node `other` and the secret of softphone `phone`."""
    secret = {NODE_A: SECRETS["node_a"], NODE_B: SECRETS["node_b"]}[node_id]
    phone_secret = {PHONE_P: SECRETS["phone_p"], PHONE_Q: SECRETS["phone_q"]}[phone]
    env = {
        "NET_NODE": node_id,
        "NET_SECRET": secret,
        f"NET_PEER_{other}": LINK_SECRET,
        f"NET_PEER_{phone}": phone_secret,
    }
    return running_node(
        tmp_path,
        node_id,
        codec_policy=policy,
        listener='auth = "required"',
        sections=node_sections(registrar, node_id),
        env=env,
    )


def calls(node: NodeProcess) -> list[dict]:
    return node.get("/status").json()["calls"]


def call_with(node: NodeProcess, peer: str) -> dict:
    return next(c for c in calls(node) if c["peer"] == peer)


def up_with(node: NodeProcess, peer: str) -> dict | None:
    return next((c for c in calls(node) if c["peer"] == peer and c["state"] == "up"), None)


def link_up(node: NodeProcess, peer: str) -> dict | None:
    links = node.get("/status").json()["links"]
    return next((li for li in links if li["node"] == peer and li["state"] == "up"), None)


def assert_hears(phone: Softphone, callno: int, other: float, own: float) -> None:
    rec = phone.recording(callno)
    call = phone.endpoint.call(callno)
    assert call is not None and rec.fmt == call.format
    assert rec.full_voice >= 1 and rec.mini > 0
    pcm = rec.pcm(skip_ms=SKIP_MS)
    level_other, level_own = band_levels_db(pcm, rate_of(rec.fmt), [other, own])
    assert level_other > OTHER_MIN_DB, f"{phone.name} hears {other} Hz at only {level_other:.1f} dB"
    assert level_own < OWN_MAX_DB, f"{phone.name} hears its own {own} Hz at {level_own:.1f} dB"


@pytest.mark.parametrize("name", list(CASES))
def test_two_nodes_link_and_mix_minus_end_to_end(
    name: str, tmp_path: Path, registrar: Registrar
) -> None:
    case = CASES[name]
    with (
        station(tmp_path, registrar, NODE_A, NODE_B, PHONE_P, case.policy_a) as a,
        station(tmp_path, registrar, NODE_B, NODE_A, PHONE_Q, case.policy_b) as b,
        Softphone(codec_policy=case.phone_p, tone_hz=TONE_P, key=True, name="P") as p,
        Softphone(codec_policy=case.phone_q, tone_hz=TONE_Q, key=True, name="Q") as q,
    ):
        events_a, events_b = EventWatcher(a), EventWatcher(b)
        for node in (a, b):
            wait_until("registration", lambda node=node: node.get("/status").json()["registered"])
        assert set(registrar.registrations) == {NODE_A, NODE_B}

        # The link: A connects to B, which challenges A with MD5 against NET_PEER_2001.
        b_host, b_port = b.udp_addr
        r = a.post(
            "/link", json={"action": "connect", "node": NODE_B, "addr": f"{b_host}:{b_port}"}
        )
        assert r.status_code == 200, r.text
        link_a = wait_until("the link up on A", lambda: link_up(a, NODE_B))
        link_b = wait_until("the link up on B", lambda: link_up(b, NODE_A))
        assert (link_a["direction"], link_b["direction"]) == ("outbound", "inbound")
        assert link_a["mode"] == link_b["mode"] == "transceive"
        assert link_a["codec"] == link_b["codec"] == case.codec_link
        assert link_b["addr"] == f"127.0.0.1:{a.udp_addr[1]}"
        # Both sides speak the dialect: the newkey handshake completed.
        wait_until("the handshake", lambda: link_up(a, NODE_B)["newkey"] == "newkey1")
        assert link_up(b, NODE_A)["newkey"] == "newkey1"
        assert calls(a) == [] and calls(b) == []

        # The phones, each authenticated by its node.
        cp = p.dial(a.udp_addr, "1", username=PHONE_P, secret=SECRETS["phone_p"])
        cq = q.dial(b.udp_addr, "1", username=PHONE_Q, secret=SECRETS["phone_q"])
        assert p.wait_for(lambda s: s.answered(cp)) and q.wait_for(lambda s: s.answered(cq))
        assert call_with(a, PHONE_P)["codec"] == case.codec_p
        assert call_with(b, PHONE_Q)["codec"] == case.codec_q
        assert p.endpoint.call(cp).format == FORMATS[case.codec_p]
        assert q.endpoint.call(cq).format == FORMATS[case.codec_q]

        assert p.wait_for(lambda s: s.heard_ms(cp) >= LISTEN_MS + SKIP_MS, 20)
        assert q.wait_for(lambda s: s.heard_ms(cq) >= LISTEN_MS + SKIP_MS, 20)
        assert_hears(p, cp, other=TONE_Q, own=TONE_P)
        assert_hears(q, cq, other=TONE_P, own=TONE_Q)
        assert not p.errors and not q.errors

        # Voice flowed in both directions on every leg; each link shows the other keyed.
        for node, phone, peer in ((a, PHONE_P, NODE_B), (b, PHONE_Q, NODE_A)):
            stats = node.get("/stats").json()
            assert stats["full_in"] > 0 and stats["mini_in"] > 0 and stats["malformed"] == 0
            link = link_up(node, peer)
            assert link is not None and link["keyed"], link
            for leg_id in (call_with(node, phone)["id"], link["call"]):
                leg = stats["legs"][str(leg_id)]
                assert leg["frames_in"] > 0 and leg["frames_out"] > 0, (leg_id, leg)
        assert link_up(a, NODE_B)["connected_s"] > 0
        keyed = events_a.wait_for(lambda e: e["event"] == "link" and e["kind"] == "keyed")
        assert keyed["node"] == NODE_B and keyed["keyed"] is True

        # Hang-ups: P from its phone, the link by A's operator (*1), Q by B's operator.
        p.hangup(cp)
        events_a.wait_for(lambda e: e["event"] == "hangup")
        wait_until("P's call gone from A", lambda: PHONE_P not in {c["peer"] for c in calls(a)})

        r = a.post("/link", json={"action": "disconnect", "node": NODE_B})
        assert r.status_code == 200, r.text
        assert a.get("/status").json()["links"] == []
        wait_until("the link gone from B", lambda: b.get("/status").json()["links"] == [])
        gone = events_b.wait_for(lambda e: e["event"] == "link" and e["kind"] == "disconnected")
        assert gone["node"] == NODE_A and gone["reason"] == "disconnected by peer"

        assert b.post("/hangup").status_code == 200
        assert q.wait_for(lambda s: s.ended(cq))
        (by_node,) = q.events_of(CallHungUp, cq)
        assert by_node.by_peer
        assert calls(a) == [] and calls(b) == []

    for node in (a, b):
        log = node_log(node)
        assert "Traceback" not in log and "error while handling" not in log, log
        assert "link-secret" not in log and "phone-pass" not in log
