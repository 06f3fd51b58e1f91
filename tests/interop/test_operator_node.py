"""The operator's own node against running daemons: a custom `[functions]`, two macros and a
schedule entry, reached by DTMF frames and by in-band tones from a caller.

    softphone P (types) --> node A (2001) <--links--> node B (2002) <-- softphone Q (listens)
                                          <--link---> node C (2003)

P's macro `*51` (as tones) links A to B and C at once; `*722` (frames) speaks the time, heard on
the link by Q; `*830` (cop,34) turns telemetry off and the next link announcement is not heard,
`*831` turns it back on; a tail message plays after P's transmission and is cut off when P talks
over it; `POST /play` and AMI `rpt playback` are heard on the link; the scheduled macro runs at
its minute.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.audio import digit_tones, silence
from tests.control.ami_clients import Allmon3
from tests.interop.harness import (
    EventWatcher,
    link_state,
    node_log,
    register_section,
    running_node,
    wait_until,
)
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, free_port

A, B, C = "2001", "2002", "2003"
SECRETS = {A: "reg-a-0f3", B: "reg-b-9c1", C: "reg-c-77e"}
LINK_SECRET = "link-secret-operator"
AMI_PASS = "ami-pass-operator-4e1"

FUNCTIONS = """[functions]
"1" = "ilink,1"
"3" = "ilink,3"
"5" = "macro"
"722" = "status,2"
"830" = "cop,34"
"831" = "cop,33"
"99" = "cop,6"

[macro]
"1" = "*32002*32003"
"2" = "*722"

"""


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    with Registrar(SECRETS) as reg:
        yield reg


def quiet_ms(phone: Softphone, callno: int) -> int:
    """How much the phone has heard, once nothing more has arrived for 600 ms."""
    last = -1
    while True:
        now = phone.heard_ms(callno)
        if now == last:
            return now
        last = now
        time.sleep(0.6)


def since_kind(events: EventWatcher, name: str, kind: str, since: int) -> list[dict]:
    return [e for e in events.events[since:] if e["event"] == name and e.get("kind") == kind]


def talk(phone: Softphone, callno: int, pcm: np.ndarray) -> None:
    phone.send_pcm(callno, pcm)
    wait_until("the audio sent", lambda: not phone.sending(callno), timeout=30)


def tone(ms: int) -> np.ndarray:
    t = np.arange(8 * ms) / 8000
    return (6000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)


def test_the_operators_functions_macros_telemetry_tail_and_play(
    tmp_path: Path, registrar: Registrar
) -> None:
    ami_port = free_port()
    sound = tmp_path / "alert.ul"
    # A second of a 1 kHz tone as 8 kHz mu-law (the format Asterisk sound files use).
    t = np.arange(8000) / 8000
    pcm = (8000 * np.sin(2 * np.pi * 1000 * t)).astype(np.int16)
    sound.write_bytes(_ulaw(pcm))
    plain = "[links]\ndns = false\n\n"
    with ExitStack() as stack:
        nodes: dict[str, NodeProcess] = {}
        for node, listener in ((B, 'auth = "off"'), (C, "")):
            nodes[node] = stack.enter_context(
                running_node(
                    tmp_path,
                    node,
                    codec_policy="ulaw_only",
                    listener=listener,
                    sections=register_section(registrar, node) + plain,
                    env={
                        "NET_NODE": node,
                        "NET_SECRET": SECRETS[node],
                        f"NET_PEER_{A}": LINK_SECRET,
                    },
                )
            )
        links = plain + "".join(
            f'[links.{n}]\naddr = "{nodes[n].udp_addr[0]}:{nodes[n].udp_addr[1]}"\n\n'
            for n in (B, C)
        )
        a_sections = (
            register_section(registrar, A)
            + "[dtmf]\nenabled = true\n\n"
            + "[announce]\nenabled = true\ncw_wpm = 30\n\n"
            + '[announce.events.link_connected]\nenabled = true\ndestination = "to_air"\n\n'
            + '[announce.events.link_disconnected]\nenabled = true\ndestination = "to_air"\n\n'
            + '[rpt]\ntailmessagetime = 1000\ntailmessagelist = ["tail message test"]\n\n'
            + f'[ami]\nenabled = true\nbind = "127.0.0.1:{ami_port}"\n\n'
            + FUNCTIONS
            + links
        )
        a = stack.enter_context(
            running_node(
                tmp_path,
                A,
                codec_policy="ulaw_only",
                listener='auth = "off"',
                sections=a_sections,
                env={
                    "NET_NODE": A,
                    "NET_SECRET": SECRETS[A],
                    f"NET_PEER_{B}": LINK_SECRET,
                    f"NET_PEER_{C}": LINK_SECRET,
                    "NET_AMI_SECRET": AMI_PASS,
                },
            )
        )
        p = stack.enter_context(Softphone(codec_policy="ulaw_only", name="P"))
        q = stack.enter_context(Softphone(codec_policy="ulaw_only", name="Q"))
        events = EventWatcher(a)
        cp = p.dial(a.udp_addr, "1")
        assert p.wait_for(lambda s: s.answered(cp))

        # The macro, typed as tones: *51 links B and C at once.
        since = len(events.events)
        talk(
            p,
            cp,
            np.concatenate([silence(8000, 300), digit_tones(8000, "*51"), silence(8000, 300)]),
        )
        wait_until("A linked to B", lambda: link_state(a, B) == "up", timeout=20)
        wait_until("A linked to C", lambda: link_state(a, C) == "up", timeout=20)
        ran = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert ran["command"] == "*51 macro 1"
        # Telemetry is on: both link announcements play.
        wait_until(
            "two link announcements",
            lambda: len(since_kind(events, "announcement_finished", "event", since)) >= 2,
            timeout=30,
        )

        # Q listens on B, which hears A over the link.
        cq = q.dial(nodes[B].udp_addr, "1")
        assert q.wait_for(lambda s: s.answered(cq))
        time.sleep(0.5)

        # *722 (the operator's own code for status,2) as frames: the time, heard on the link.
        before = quiet_ms(q, cq)
        since = len(events.events)
        p.send_dtmf(cp, "*722")
        events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "command",
            since=since,
            timeout=30,
        )
        wait_until("Q heard the time", lambda: q.heard_ms(cq) > before)

        # A function that does not apply here answers so, and nothing plays.
        since = len(events.events)
        p.send_dtmf(cp, "*99")
        refused = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert refused["command"] == "*99 not available here"

        # cop,34: telemetry off; dropping C is not announced. The time, asked for next, is the
        # marker: announcements play in order, so a link announcement would come before it.
        since = len(events.events)
        p.send_dtmf(cp, "*830")
        events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command") == "*830 cop 34")
        p.send_dtmf(cp, "*12003")
        events.wait_for(lambda e: e["event"] == "link" and e["kind"] == "disconnected", since=since)
        p.send_dtmf(cp, "*722")
        events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "command",
            since=since,
            timeout=30,
        )
        assert since_kind(events, "announcement_started", "event", since) == []
        # cop,33: on again, and linking C is announced.
        since = len(events.events)
        p.send_dtmf(cp, "*831")
        events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command") == "*831 cop 33")
        p.send_dtmf(cp, "*32003")
        events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "event",
            since=since,
            timeout=30,
        )

        # A tail message after P's transmission, never over it: P talks, falls silent, the
        # tail message starts only then; P talks over it and it is cut off.
        since = len(events.events)
        talk_started = time.time()
        # Sent in real time: the transmission lasts at least 1.5 s from here, however late.
        talk(p, cp, tone(1500))
        started = events.wait_for(
            lambda e: e["event"] == "announcement_started" and e["kind"] == "tail",
            since=since,
            timeout=30,
        )
        assert events.arrival(started) >= talk_started + 1.5
        p.send_pcm(cp, tone(3000))
        cut = events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "tail",
            since=since,
            timeout=30,
        )
        assert cut["completed"] is False
        wait_until("P done", lambda: not p.sending(cp), timeout=30)

        # POST /play: text to the air and the links, heard by Q; bad requests get {error}.
        with httpx.Client(base_url=a.base_url, timeout=10) as http:
            for body, status in (
                ({"to": "air"}, 400),
                ({"text": "x", "file": "y", "to": "air"}, 400),
                ({"text": "x", "to": "moon"}, 400),
                ({"file": str(tmp_path / "missing.wav"), "to": "local"}, 404),
                ({"file": str(tmp_path / "a.toml"), "to": "local"}, 415),
            ):
                r = http.post("/play", json=body)
                assert r.status_code == status, (body, r.text)
                assert "error" in r.json()
            before = quiet_ms(q, cq)
            since = len(events.events)
            r = http.post("/play", json={"text": "weather alert test", "to": "air_and_links"})
            assert r.status_code == 200 and r.json() == {"queued": "text", "to": "air_and_links"}
            events.wait_for(
                lambda e: e["event"] == "announcement_finished" and e["kind"] == "command",
                since=since,
                timeout=30,
            )
            wait_until("Q heard POST /play", lambda: q.heard_ms(cq) > before)

        # AMI rpt playback: the sound file, heard on the link.
        before = quiet_ms(q, cq)
        since = len(events.events)
        answer = asyncio.run(
            Allmon3("127.0.0.1", ami_port, "admin", AMI_PASS).command(f"rpt playback {A} {sound}")
        )
        assert "failed" not in answer.lower(), answer
        events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "command",
            since=since,
            timeout=30,
        )
        wait_until("Q heard rpt playback", lambda: q.heard_ms(cq) > before)
        loud = q.recording(cq).spurts(gap_ms=300)[-1][1]
        spectrum = np.abs(np.fft.rfft(loud.astype(np.float64)))
        assert abs(np.fft.rfftfreq(len(loud), 1 / 8000)[spectrum.argmax()] - 1000) < 20

    log = node_log(a)
    assert "*51 macro 1 from call" in log
    assert "the time is" in log
    assert "telemetry off" in log and "tail message cut short by a talker" in log
    assert "Traceback" not in log
    assert LINK_SECRET not in log and AMI_PASS not in log


def test_the_startup_macro_and_a_scheduled_macro_at_its_minute(
    tmp_path: Path, registrar: Registrar
) -> None:
    sections = (
        register_section(registrar, A)
        + '[rpt]\nstartup_macro = "*723"\n\n'
        + '[macro]\n"2" = "*722"\n\n[schedule]\n"2" = "*"\n\n[links]\ndns = false\n\n'
    )
    with (
        running_node(
            tmp_path,
            A,
            codec_policy="ulaw_only",
            listener='auth = "off"',
            sections=sections,
            env={"NET_NODE": A, "NET_SECRET": SECRETS[A]},
        ) as a,
        Softphone(codec_policy="ulaw_only", name="P") as p,
    ):
        events = EventWatcher(a)
        cp = p.dial(a.udp_addr, "1")
        assert p.wait_for(lambda s: s.answered(cp))
        # Every minute: the next one is at most 60 s away.
        ran = events.wait_for(lambda e: e["event"] == "schedule", timeout=75)
        assert ran["macro"] == "2" and ran["digits"] == "*722"
        assert ran["result"].startswith("macro 2: *722: status 2: good ")
        # At its minute: just after the minute turned (leeway for a loaded host).
        assert time.localtime(events.arrival(ran)).tm_sec < 30
        events.wait_for(
            lambda e: e["event"] == "announcement_finished" and e["kind"] == "command",
            timeout=30,
        )
        assert p.heard_ms(cp) > 0
    log = node_log(a)
    assert "scheduled macro 2 (* * * * *) ran: macro 2:" in log
    # The startup macro ran once, after start.
    assert log.count("startup macro: macro 0: *723: status 3: version ") == 1
    assert "Traceback" not in log


def _ulaw(pcm: np.ndarray) -> bytes:
    """G.711 mu-law encoding (the test's own, for a sound file)."""
    x = pcm.astype(np.int32)
    sign = np.where(x < 0, 0x80, 0)
    mag = np.minimum(np.abs(x), 32635) + 0x84
    exponent = np.floor(np.log2(mag)).astype(np.int32) - 7
    mantissa = (mag >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8).tobytes()


def test_play_to_the_air_is_refused_while_a_dstar_session_is_up(
    tmp_path: Path, registrar: Registrar
) -> None:
    plain = "[links]\ndns = false\n\n"
    with running_node(
        tmp_path,
        B,
        codec_policy="ulaw_only",
        sections=register_section(registrar, B) + plain,
        env={"NET_NODE": B, "NET_SECRET": SECRETS[B], f"NET_PEER_{A}": LINK_SECRET},
    ) as b:
        host, port = b.udp_addr
        dstar = plain + f'[links.{B}]\naddr = "{host}:{port}"\nnetwork = "dstar"\n'
        with (
            running_node(
                tmp_path,
                A,
                codec_policy="ulaw_only",
                sections=register_section(registrar, A) + dstar,
                env={"NET_NODE": A, "NET_SECRET": SECRETS[A], f"NET_PEER_{B}": LINK_SECRET},
            ) as a,
            httpx.Client(base_url=a.base_url, timeout=10) as http,
        ):
            assert http.post("/link", json={"action": "connect", "node": B}).status_code == 200
            wait_until("the D-Star link up", lambda: link_state(a, B) == "up")
            for to in ("air", "air_and_links"):
                r = http.post("/play", json={"text": "alert", "to": to})
                assert r.status_code == 409 and "D-Star" in r.json()["error"]
            # The local radio alone keys nothing.
            r = http.post("/play", json={"text": "alert", "to": "local"})
            assert r.status_code == 200
        assert "Traceback" not in node_log(a)
