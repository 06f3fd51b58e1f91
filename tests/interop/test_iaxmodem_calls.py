"""Calls between a real `node serve` and Debian's iaxmodem (libiax2 + spandsp), both ways, µ-law
and slin, on loopback.

iaxmodem -> node: `ATDT` with iaxmodem's `server` pointing at the node, which challenges it with
MD5 against `NET_PEER_<peername>` (`[listener] auth = "required"`). iaxmodem registers with the
same `server`, so these modems also send the node a REGREQ and get its REGREJ (iaxmodem against
the test registrar is tests/interop/test_iaxmodem_register.py). Node -> iaxmodem:
`POST /dial` with iaxmodem's address; it rings (`RING` on its pty) and `ATA` answers (libiax2
never challenges a caller, so that direction has no MD5).

A softphone with a 1000 Hz tone sits in the node's conference, so audio crosses every edge:
iaxmodem's own recording of what it received over IAX2 (`record`) must hold the tone, which
proves our µ-law and big-endian slin decode in an independent implementation; the softphone
must hear iaxmodem's fax tones (CNG 1100 Hz when it calls, CED 2100 Hz when it answers), which
proves the reverse. The node's traffic is captured with tshark and must decode cleanly.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from node.iax2.constants import Format
from tests.interop.harness import (
    Capture,
    EventWatcher,
    free_udp_port,
    node_log,
    running_node,
    wait_until,
)
from tests.interop.iaxmodem import IaxModem
from tests.interop.softphone import Softphone, band_levels_db
from tests.node_process import NodeProcess

PHONE, PHONE_SECRET = "3001", "phone-secret-3001"
MODEM_SECRET = "modem-secret-md5"
PHONE_TONE = 1000.0
#: iaxmodem's fax tones: the caller's calling tone, the answerer's called-station tone.
CNG, CED = 1100.0, 2100.0
#: What the phone must have heard of iaxmodem before the spectrum is taken.
LISTEN_MS = 1000
#: Wire value of each codec as tshark shows it (`iax2.voice.codec`, `iax2.iax.format`).
WIRE = {"ulaw": Format.ULAW, "slin": Format.SLIN}


@dataclass(frozen=True)
class Case:
    #: "in": iaxmodem calls the node; "out": the node calls iaxmodem.
    direction: str
    codec: str
    #: Who ends the call: "modem" (ATH) or "node" (POST /hangup).
    hangup_by: str

    @property
    def node_policy(self) -> str:
        if self.direction == "in":
            # allow_slin takes slin when the caller asks for it, as iaxmodem's FORMAT does.
            return "allow_slin"
        return "ulaw_only" if self.codec == "ulaw" else "prefer_slin"

    @property
    def modem_codec(self) -> str:
        return "ulaw" if self.codec == "ulaw" else "slinear"


CASES = [
    Case("in", "ulaw", "modem"),
    Case("in", "slin", "node"),
    Case("out", "ulaw", "node"),
    Case("out", "slin", "modem"),
]


@pytest.fixture
def peername() -> Iterator[str]:
    """A numeric peer name (the node looks up NET_PEER_<digits>), unique because iaxmodem
    writes its recordings to /tmp/<peername>-*.raw."""
    name = str(100000 + secrets.randbelow(900000))
    yield name
    for path in Path("/tmp").glob(f"{name}-*.raw*"):
        path.unlink()


def modem_call(node: NodeProcess, peer: str) -> dict | None:
    return next(
        (c for c in node.get("/status").json()["calls"] if c["peer"] == peer),
        None,
    )


def dominant(pcm: np.ndarray, tone: float, others: list[float]) -> None:
    assert pcm.size and np.abs(pcm).max() > 0, "silence"
    levels = band_levels_db(pcm, 8000, [tone, *others])
    assert levels[0] > -3.0, f"{tone} Hz holds only {levels[0]:.1f} dB: {levels}"


@pytest.mark.usefixtures("modem_env")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.direction}-{c.codec}-by-{c.hangup_by}")
def test_iaxmodem_call(case: Case, tmp_path: Path, modem_dir: Path, peername: str) -> None:
    env = {f"NET_PEER_{peername}": MODEM_SECRET, f"NET_PEER_{PHONE}": PHONE_SECRET}
    modem_port = free_udp_port()
    with running_node(
        tmp_path, "node", codec_policy=case.node_policy, listener='auth = "required"', env=env
    ) as node:
        capture = Capture(tmp_path / "call.pcapng", [node.udp_addr[1]]).start()
        events = EventWatcher(node)
        modem = IaxModem(
            modem_dir,
            port=modem_port,
            server=f"127.0.0.1:{node.udp_addr[1]}",
            peername=peername,
            secret=MODEM_SECRET,
            codec=case.modem_codec,
            cidnumber=peername,
            # The calling modems also try to register with the node, which is no registrar.
            refresh=60 if case.direction == "in" else 0,
        )
        # `record` makes iaxmodem write what it received over IAX2 to /tmp/<peername>-iax.raw.
        modem.config.write_text(modem.config.read_text() + "record\n")
        try:
            modem.start()
            with Softphone(tone_hz=PHONE_TONE, name="S") as phone:
                cs = phone.dial(node.udp_addr, "1", username=PHONE, secret=PHONE_SECRET)
                assert phone.wait_for(lambda s: s.answered(cs))

                if case.direction == "in":
                    modem.at("AT+FCLASS=1")
                    modem.write("ATDT1999\r")
                else:
                    r = node.post(
                        "/dial", json={"node": peername, "addr": f"127.0.0.1:{modem_port}"}
                    )
                    assert r.status_code == 200, r.text
                    modem.read_until("RING")
                    # libiax2 sent RINGING with the ACCEPT: the node shows the call ringing.
                    ringing = wait_until(
                        "the call ringing",
                        lambda: (c := modem_call(node, peername)) and c["state"] == "ringing" and c,
                    )
                    assert ringing["direction"] == "outbound" and ringing["codec"] == case.codec
                    modem.at("AT+FCLASS=1")
                    modem.write("ATA\r")

                call = wait_until(
                    "iaxmodem's call up",
                    lambda: (c := modem_call(node, peername)) and c["state"] == "up" and c,
                )
                assert call["direction"] == ("inbound" if case.direction == "in" else "outbound")
                assert call["addr"] == f"127.0.0.1:{modem_port}"
                assert call["codec"] == case.codec
                assert call["duration_s"] >= 0

                assert phone.wait_for(lambda s: s.heard_ms(cs) >= LISTEN_MS)
                heard = phone.recording(cs).pcm()
                if case.direction == "in":
                    dominant(heard, CNG, [PHONE_TONE, CED])
                else:
                    dominant(heard, CED, [PHONE_TONE, CNG])

                stats = node.get("/stats").json()
                assert stats["full_in"] > 0 and stats["mini_in"] > 0 and stats["malformed"] == 0
                leg = stats["legs"][str(call["id"])]
                assert leg["frames_in"] > 0 and leg["frames_out"] > 0, leg

                if case.hangup_by == "modem":
                    modem.write("\r")  # leaves the fax data mode
                    modem.read_until("OK")
                    modem.at("ATH")
                    hangup = events.wait_for(lambda e: e["event"] == "hangup")
                    assert hangup["reason"].startswith("hung up by peer")
                else:
                    r = node.post("/hangup", json={"call": call["id"]})
                    assert r.status_code == 200, r.text
                    hangup = events.wait_for(lambda e: e["event"] == "hangup")
                    assert hangup["reason"] == "hung up by operator"
                    wait_until("iaxmodem's remote hangup", lambda: "Remote hangup" in modem.log())
                wait_until("the call gone", lambda: modem_call(node, peername) is None)
                phone.hangup(cs)
                assert phone.wait_for(lambda s: s.ended(cs))
            log = modem.log()
        finally:
            modem.stop()
            capture.stop()

    assert "Tx-Frame" in log and "Rx-Frame" in log
    if case.direction == "in":
        # libiax2 answered our AUTHREQ with MD5, and was told that the node is no registrar.
        assert "AUTHREQ" in log and "MD5 RESULT" in log
        assert "REGREJ" in log and "Registration failed" in log
    recorded = Path(f"/tmp/{peername}-iax.raw")
    assert recorded.exists(), "iaxmodem recorded nothing it received"
    dominant(np.frombuffer(recorded.read_bytes(), dtype=np.int16), PHONE_TONE, [CNG, CED])

    assert capture.malformed() == []
    check_capture(capture, case, call["id"], modem_port)
    node_err = node_log(node)
    assert "Traceback" not in node_err and MODEM_SECRET not in node_err


def check_capture(capture: Capture, case: Case, callno: int, modem_port: int) -> None:
    """Field values of the node's frames to iaxmodem, as tshark decoded them."""
    to_modem = f"udp.dstport == {modem_port}"
    full = capture.fields(
        ["iax2.src_call", "iax2.type", "iax2.iax.subclass", "iax2.voice.codec", "iax2.iax.format"],
        f"{to_modem} && iax2.packet_type == 1",
    )
    assert full, "no full frame from the node to iaxmodem in the capture"
    stateless = [row for row in full if row["iax2.src_call"] == "1"]
    full = [row for row in full if row["iax2.src_call"] != "1"]
    assert {row["iax2.src_call"] for row in full} == {str(callno)}
    if case.direction == "in":
        # iaxmodem's REGREQ was refused statelessly (REGREJ from call number 1).
        assert {int(row["iax2.iax.subclass"]) for row in stateless} == {16}
    else:
        assert stateless == []
    voice = [row for row in full if row["iax2.type"] == "2"]
    assert voice and {int(row["iax2.voice.codec"], 0) for row in voice} == {WIRE[case.codec]}
    mini = capture.fields(["iax2.call"], f"{to_modem} && iax2.packet_type == 0")
    assert mini, "no mini frame from the node to iaxmodem in the capture"
    iax = {int(row["iax2.iax.subclass"]) for row in full if row["iax2.type"] == "6"}
    if case.direction == "out":
        new = next(row for row in full if row["iax2.iax.subclass"] == "1")
        assert int(new["iax2.iax.format"], 0) == WIRE[case.codec]
    else:
        assert {7, 8} <= iax  # ACCEPT, AUTHREQ
    if case.hangup_by == "node":
        assert 5 in iax  # HANGUP
