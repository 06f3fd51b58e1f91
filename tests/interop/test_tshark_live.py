"""Everything two running nodes put on the wire, captured live on loopback and decoded by tshark.

One capture covers the node's frames of every kind the tests can provoke: registration with the
call-token round and MD5 (REGREQ, ACK, REGREL), a node-to-node call with call token and MD5
(NEW with all IEs, CALLTOKEN, AUTHREQ, AUTHREP, ACCEPT, ANSWER, ACK), slin16 and µ-law voice
(full and mini frames), keep-alive answers (PONG with the RR IEs, LAGRP), the stateless answers
(PONG to POKE, INVAL, CALLTOKEN, REGREJ, a codec REJECT with CAUSECODE 65), the decoy challenge
of an unknown user and its REJECT, and HANGUP. No frame
may be malformed, and the decoded field values must be the ones the nodes meant.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from node._core import FullFrame, parse
from node.iax2 import call as call_module
from node.iax2.constants import IE, Format, FrameType, IaxSubclass
from tests.conftest import require_tool
from tests.interop.harness import Capture, EventWatcher, node_log, running_node, wait_until
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone
from tests.test_tshark import CALL_IE_FIELDS, HEADER_FIELDS

NODE_A, NODE_B, PHONE_P, PHONE_Q = "2001", "2002", "3001", "3002"
REG_SECRET = "reg-secret-a"
LINK_SECRET = "tshark-link-secret"
PHONE_SECRET = "tshark-phone-secret"
GSM = 0x2

IAX = int(FrameType.IAX)
S = IaxSubclass


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    with Registrar({NODE_A: REG_SECRET}) as reg:
        yield reg


def num(value: str) -> int:
    """A number as tshark prints it (decimal, or 0x... for hex fields)."""
    return int(value, 0)


class Probe:
    """A bare UDP socket exchanging single frames with a node (for the stateless answers)."""

    def __init__(self, node: tuple[str, int]) -> None:
        self.node = node
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(5)
        self.port: int = self.sock.getsockname()[1]

    def ask(self, frame: FullFrame) -> FullFrame:
        self.sock.sendto(frame.to_bytes(), self.node)
        data, _ = self.sock.recvfrom(4096)
        reply = parse(data)
        assert isinstance(reply, FullFrame)
        return reply

    def close(self) -> None:
        self.sock.close()


def new_ies(caller: tuple[int, str], fmt: int) -> list[tuple[int, object]]:
    """The IEs of a NEW to node A from `caller` (an IE and its value) offering `fmt` alone."""
    return [
        (IE.VERSION, 2),
        (IE.CALLED_NUMBER, NODE_A),
        caller,
        (IE.FORMAT, fmt),
        (IE.CAPABILITY, fmt),
    ]


def stateless_exchanges(probe: Probe) -> None:
    pong = probe.ask(FullFrame(IAX, S.POKE, scall=700, ts=5))
    assert pong.subclass == S.PONG
    inval = probe.ask(FullFrame(IAX, S.HANGUP, scall=701, dcall=4321, ts=9, oseq=3, iseq=2))
    assert inval.subclass == S.INVAL
    ask_token = [(IE.USERNAME, "9999"), (IE.REFRESH, 60), (IE.CALLTOKEN, b"")]
    token = probe.ask(FullFrame(IAX, S.REGREQ, scall=702, ts=3, ies=ask_token))
    assert token.subclass == S.CALLTOKEN
    with_token = [(IE.USERNAME, "9999"), (IE.REFRESH, 60), (IE.CALLTOKEN, token.ie(IE.CALLTOKEN))]
    regrej = probe.ask(FullFrame(IAX, S.REGREQ, scall=702, ts=4, ies=with_token))
    assert regrej.subclass == S.REGREJ
    gsm_only = new_ies((IE.CALLING_NUMBER, "4444"), GSM)
    reject = probe.ask(FullFrame(IAX, S.NEW, scall=703, ts=2, ies=gsm_only))
    assert reject.subclass == S.REJECT
    # An unknown user gets a challenge like anybody else, then the same refusal as a bad answer.
    unknown = new_ies((IE.USERNAME, "5555"), int(Format.ULAW))
    authreq = probe.ask(FullFrame(IAX, S.NEW, scall=704, ts=2, ies=unknown))
    assert authreq.subclass == S.AUTHREQ
    answer = [(IE.MD5_RESULT, "0" * 32)]
    authrep = FullFrame(
        IAX, S.AUTHREP, scall=704, dcall=authreq.scall, ts=6, oseq=1, iseq=1, ies=answer
    )
    refused = probe.ask(authrep)
    assert refused.subclass == S.REJECT
    ack = FullFrame(IAX, S.ACK, scall=704, dcall=refused.scall, ts=refused.ts, oseq=2, iseq=2)
    probe.sock.sendto(ack.to_bytes(), probe.node)


def test_every_frame_the_nodes_send_decodes_cleanly(
    tmp_path: Path, registrar: Registrar, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_tool("tshark")
    # Only the softphone (this process) probes this often; the nodes keep their defaults.
    monkeypatch.setattr(call_module, "PING_INTERVAL", 0.4)
    monkeypatch.setattr(call_module, "LAGRQ_INTERVAL", 0.3)
    host, rport = registrar.addr
    with (
        running_node(
            tmp_path,
            "a",
            codec_policy="prefer_slin16",
            listener='auth = "required"',
            sections=f'[register]\npeer = "{host}:{rport}"\nnode_id = "{NODE_A}"\n\n'
            '[secrets]\nsource = "control"\n',
            env={f"NET_PEER_{NODE_B}": LINK_SECRET, f"NET_PEER_{PHONE_P}": PHONE_SECRET},
        ) as a,
        running_node(
            tmp_path,
            "b",
            codec_policy="ulaw_only",
            listener='auth = "required"',
            env={f"NET_PEER_{NODE_A}": LINK_SECRET, f"NET_PEER_{PHONE_Q}": PHONE_SECRET},
        ) as b,
    ):
        port_a, port_b = a.udp_addr[1], b.udp_addr[1]
        capture = Capture(tmp_path / "live.pcapng", [port_a, port_b]).start()
        probe = Probe(a.udp_addr)
        try:
            events = EventWatcher(a)
            # Registration starts with the credential: REGREQ, token round, REGAUTH, MD5.
            assert a.post("/secrets", json={"username": NODE_A, "secret": REG_SECRET}).json()
            wait_until("A registered", lambda: a.get("/status").json()["registered"])

            assert a.post("/dial", json={"node": NODE_B, "addr": f"127.0.0.1:{port_b}"}).is_success
            wait_until("the link up", lambda: [c for c in a.get("/status").json()["calls"]])
            with (
                Softphone(codec_policy="prefer_slin16", tone_hz=700, key=True, name="P") as p,
                Softphone(codec_policy="ulaw_only", tone_hz=1300, name="Q") as q,
            ):
                cp = p.dial(a.udp_addr, "1", username=PHONE_P, secret=PHONE_SECRET)
                cq = q.dial(b.udp_addr, "1", username=PHONE_Q, secret=PHONE_SECRET)
                assert p.wait_for(lambda s: s.answered(cp)) and q.wait_for(lambda s: s.answered(cq))
                assert p.wait_for(lambda s: s.heard_ms(cp) >= 1000)
                assert q.wait_for(lambda s: s.heard_ms(cq) >= 1000)
                stateless_exchanges(probe)
                link = next(c for c in a.get("/status").json()["calls"] if c["peer"] == NODE_B)
                assert a.post("/hangup", json={"call": link["id"]}).is_success
                p.hangup(cp)
                q.hangup(cq)
                assert p.wait_for(lambda s: s.ended(cp)) and q.wait_for(lambda s: s.ended(cq))
            assert a.post("/deregister").is_success
            wait_until("REGREL acknowledged", lambda: NODE_A not in registrar.registrations)
            assert len(events.named("hangup")) >= 2
            time.sleep(0.2)
        finally:
            probe.close()
            capture.stop()

    assert capture.malformed() == []
    check_node_a(capture, port_a, port_b, registrar.addr[1], p.addr[1], probe)
    check_node_b(capture, port_a, port_b)
    for node in (a, b):
        log = node_log(node)
        assert "Traceback" not in log
        assert LINK_SECRET not in log and REG_SECRET not in log and PHONE_SECRET not in log


FIELDS = [
    "udp.dstport",
    *HEADER_FIELDS,
    "iax2.voice.codec",
    *CALL_IE_FIELDS,
    "iax2.iax.codecprefs",
    "iax2.iax.datetime.raw",
    "iax2.iax.auth.methods",
    "iax2.iax.auth.challenge",
    "iax2.iax.auth.md5",
    "iax2.iax.cause",
    "iax2.iax.causecode",
    "iax2.iax.refresh",
    "iax2.iax.rrpkts",
    "iax2.iax.rrjitter",
    "iax2.ie_id",
]


def iax(rows: list[dict[str, str]], subclass: int, dstport: int | None = None) -> list[dict]:
    return [
        r
        for r in rows
        if r["iax2.type"] == str(IAX)
        and r["iax2.iax.subclass"] == str(int(subclass))
        and (dstport is None or r["udp.dstport"] == str(dstport))
    ]


def check_common(rows: list[dict[str, str]]) -> None:
    """What holds for every full frame a node sends."""
    assert rows
    for r in rows:
        assert num(r["iax2.src_call"]) > 0, r
        if r["iax2.type"] == str(IAX) and r["iax2.iax.subclass"] == str(int(S.INVAL)):
            continue  # INVAL carries timestamp 0 and no call of its own, as Asterisk's
        assert num(r["iax2.timestamp"]) > 0, r


def check_node_a(
    capture: Capture, port_a: int, port_b: int, port_reg: int, port_p: int, probe: Probe
) -> None:
    rows = capture.fields(FIELDS, f"udp.srcport == {port_a} && iax2.packet_type == 1")
    check_common(rows)
    port_probe = probe.port

    # Registration: REGREQ (empty token), REGREQ (token), REGREQ (MD5), ACK, then REGREL.
    regreqs = iax(rows, S.REGREQ, port_reg)
    assert len(regreqs) == 3
    assert all(r["iax2.iax.username"] == NODE_A and num(r["iax2.iax.refresh"]) > 0 for r in regreqs)
    assert regreqs[0]["iax2.dst_call"] == "0" and regreqs[2]["iax2.iax.auth.md5"]
    assert len(regreqs[2]["iax2.iax.auth.md5"]) == 32
    assert iax(rows, S.REGREL, port_reg)

    # The NEW to B, in Asterisk's IE order, twice (the second with B's token).
    news = iax(rows, S.NEW, port_b)
    assert len(news) == 2
    for new in news:
        assert new["iax2.dst_call"] == "0"
        assert num(new["iax2.iax.version"]) == 2
        assert new["iax2.iax.called_number"] == NODE_B
        assert new["iax2.iax.calling_number"] == NODE_A and new["iax2.iax.username"] == NODE_A
        assert num(new["iax2.iax.format"]) == Format.SLIN16
        assert num(new["iax2.iax.format2"]) == Format.SLIN16
        assert num(new["iax2.iax.capability"]) & (Format.ULAW | Format.SLIN) == (
            Format.ULAW | Format.SLIN
        )
        assert new["iax2.iax.codecprefs"] == "PHDE"
        assert new["iax2.iax.datetime.raw"]
        ies = [int(i) for i in new["iax2.ie_id"].split(",")]
        assert ies[:3] == [IE.VERSION, IE.CALLED_NUMBER, IE.CODEC_PREFS] and ies[-1] == IE.CALLTOKEN
    (authrep,) = iax(rows, S.AUTHREP, port_b)
    assert len(authrep["iax2.iax.auth.md5"]) == 32

    # The phone's call: challenged, accepted in slin16, answered, voice both kinds.
    (authreq,) = iax(rows, S.AUTHREQ, port_p)
    assert num(authreq["iax2.iax.auth.methods"]) == 2
    assert authreq["iax2.iax.auth.challenge"].isdigit()
    assert authreq["iax2.iax.username"] == PHONE_P
    (accept,) = iax(rows, S.ACCEPT, port_p)
    assert num(accept["iax2.iax.format"]) == Format.SLIN16
    voice = [r for r in rows if r["iax2.type"] == "2" and r["udp.dstport"] == str(port_p)]
    assert voice and {num(r["iax2.voice.codec"]) for r in voice} == {Format.SLIN16}
    minis = capture.fields(
        ["iax2.call"],
        f"udp.srcport == {port_a} && udp.dstport == {port_p} && iax2.packet_type == 0",
    )
    assert len(minis) > 10
    pongs = iax(rows, S.PONG, port_p)
    assert pongs and any(num(r["iax2.iax.rrpkts"]) > 0 for r in pongs), pongs
    assert iax(rows, S.LAGRP, port_p)

    # The stateless answers to the probe, all from call number 1.
    to_probe = [r for r in rows if r["udp.dstport"] == str(port_probe)]
    kinds = [int(r["iax2.iax.subclass"]) for r in to_probe]
    assert kinds == [S.PONG, S.INVAL, S.CALLTOKEN, S.REGREJ, S.REJECT, S.AUTHREQ, S.REJECT]
    pong, inval, token, regrej, reject, decoy, refused = to_probe
    assert (pong["iax2.src_call"], pong["iax2.dst_call"], pong["iax2.timestamp"]) == (
        "1",
        "700",
        "5",
    )
    assert (inval["iax2.src_call"], inval["iax2.dst_call"]) == ("4321", "701")
    assert all(r["iax2.src_call"] == "1" for r in (token, regrej, reject))
    assert regrej["iax2.iax.cause"] and num(regrej["iax2.iax.causecode"]) == 29
    assert reject["iax2.iax.cause"] == "Unable to negotiate codec"
    assert num(reject["iax2.iax.causecode"]) == 65
    assert num(decoy["iax2.iax.auth.methods"]) == 2 and decoy["iax2.iax.username"] == "5555"
    assert num(refused["iax2.iax.causecode"]) == 50

    # The operator's hang-up of the link.
    (hangup,) = iax(rows, S.HANGUP, port_b)
    assert num(hangup["iax2.iax.causecode"]) == 16


def check_node_b(capture: Capture, port_a: int, port_b: int) -> None:
    rows = capture.fields(FIELDS, f"udp.srcport == {port_b} && iax2.packet_type == 1")
    check_common(rows)
    (token,) = iax(rows, S.CALLTOKEN, port_a)
    assert token["iax2.src_call"] == "1"
    (authreq,) = iax(rows, S.AUTHREQ, port_a)
    assert num(authreq["iax2.iax.auth.methods"]) == 2
    (accept,) = iax(rows, S.ACCEPT, port_a)
    assert num(accept["iax2.iax.format"]) == Format.ULAW
    assert num(accept["iax2.iax.format2"]) == Format.ULAW
    voice = [r for r in rows if r["iax2.type"] == "2" and r["udp.dstport"] == str(port_a)]
    assert voice and {num(r["iax2.voice.codec"]) for r in voice} == {Format.ULAW}
    assert iax(rows, S.REJECT) == []
