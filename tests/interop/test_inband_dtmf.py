"""In-band DTMF end to end: tones typed into a call's audio reach the command mapper of a real
node, and the tones never reach the other members.

    softphone P --tones in the audio--> node A (2001, [dtmf] enabled) <--link--> node B (2002)
    softphone L (listens on A)

P sends `*32002` as sox-made tones over µ-law and A links to B; P2 sends `*12002` from the
project's own generator over slin16 and A unlinks. Every digit is a `dtmf` event on A's stream
with the call's id. L, on the same conference, hears none of it as a digit. A second test sends
speech (espeak-ng), digits in 20 dB noise, twisted digits and 40 ms digits over both codecs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from node._core import DtmfDetector, dtmf_pcm
from tests.audio import digit_tones, espeak, silence, with_noise
from tests.interop.harness import (
    LINK_SECRET,
    NODE_A,
    NODE_B,
    EventWatcher,
    answered_phone,
    link_state,
    node_log,
    node_pair,
    wait_until,
)
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone, rate_of
from tests.node_process import NodeProcess


def call_id(node: NodeProcess, addr: tuple[str, int]) -> int:
    calls = node.get("/status").json()["calls"]
    return next(c["id"] for c in calls if c["addr"] == f"{addr[0]}:{addr[1]}")


def presses(pcm: np.ndarray, rate: int) -> list[str]:
    detector = DtmfDetector(rate)
    return [d for kind, d in detector.process(pcm.tobytes()) if kind == "pressed"]


def tone_bursts_ms(pcm: np.ndarray, rate: int) -> list[float]:
    """Lengths of the runs of audible samples (|x| > 64, short dips bridged), in ms."""
    loud = np.abs(pcm.astype(np.int32)) > 64
    runs, run, gap = [], 0, 0
    for v in loud:
        if v:
            run, gap = run + gap + 1, 0
        elif run:
            gap += 1
            if gap > rate // 1000:
                runs.append(run)
                run, gap = 0, 0
    if run:
        runs.append(run)
    return [1000 * r / rate for r in runs]


def talk(phone: Softphone, callno: int, pcm: np.ndarray) -> None:
    """Send `pcm` on the call, after 300 ms of silence: a phone's audio is flowing before its
    user types (the very first frames of a call set its codec and may be refused until then)."""
    rate = rate_of(phone.endpoint.call(callno).format)
    phone.send_pcm(callno, np.concatenate([silence(rate, 300), pcm]))
    wait_until("the audio sent", lambda: not phone.sending(callno), timeout=30)


def test_tones_in_a_call_link_and_unlink_two_nodes(tmp_path: Path, registrar: Registrar) -> None:
    with (
        node_pair(
            tmp_path,
            registrar,
            a_sections="[dtmf]\nenabled = true\n\n",
            a_listener='auth = "off"',
        ) as (a, b),
        Softphone(codec_policy="ulaw_only", name="P") as p,
        Softphone(codec_policy="prefer_slin16", name="P2") as p2,
        Softphone(codec_policy="ulaw_only", name="L") as listener,
    ):
        events = EventWatcher(a)
        cl = listener.dial(a.udp_addr, "1")
        cp = p.dial(a.udp_addr, "1")
        assert listener.wait_for(lambda s: s.answered(cl)) and p.wait_for(lambda s: s.answered(cp))
        call_p = call_id(a, p.addr)

        # *32002 as sox tones over µ-law: A links to B.
        since = len(events.events)
        # Gaps of 150 ms: the number has a double digit ("00"), and a talker thread stalled for a
        # whole gap by a busy host makes the node conceal that gap with the tone before it, which
        # joins the two digits into one (as on a real network). 150 ms is a phone's own pace.
        tones = digit_tones(8000, f"*3{NODE_B}", off_ms=150)
        talk(p, cp, np.concatenate([tones, silence(8000, 300)]))
        connected = events.wait_for(
            lambda e: e["event"] == "link" and e["kind"] == "connected", since=since
        )
        assert connected["node"] == NODE_B and connected["mode"] == "transceive"
        wait_until("the link up on B", lambda: link_state(b, NODE_A) == "up")
        digits = [e for e in events.named("dtmf")[-6:] if e["call"] == call_p]
        assert [e["digit"] for e in digits] == list(f"*3{NODE_B}")
        assert digits[-1]["command"] == f"*3{NODE_B} connect {NODE_B}"

        # The listener on the same conference heard the tones muted: no digit, only onsets.
        heard = listener.recording(cl).pcm()
        assert len(heard) > 0
        assert presses(heard, 8000) == []
        leaks = tone_bursts_ms(heard, 8000)
        print(f"listener heard {len(leaks)} onsets, longest {max(leaks, default=0):.1f} ms")
        assert max(leaks, default=0) < 25

        # *12002 from the project's generator over slin16: A unlinks.
        cp2 = p2.dial(a.udp_addr, "1")
        assert p2.wait_for(lambda s: s.answered(cp2))
        assert p2.endpoint.call(cp2).format == 0x8000
        call_p2 = call_id(a, p2.addr)
        since = len(events.events)
        tones = np.frombuffer(dtmf_pcm(16000, f"*1{NODE_B}", -12.0, 60, 150), dtype=np.int16)
        talk(p2, cp2, np.concatenate([tones, silence(16000, 300)]))
        gone = events.wait_for(
            lambda e: e["event"] == "link" and e["kind"] == "disconnected", since=since
        )
        assert gone["node"] == NODE_B
        wait_until("the link gone from B", lambda: link_state(b, NODE_A) is None)
        last = events.wait_for(lambda e: e["event"] == "dtmf" and e.get("command"), since=since)
        assert last == {
            "event": "dtmf",
            "call": call_p2,
            "digit": NODE_B[-1],
            "command": f"*1{NODE_B} disconnect {NODE_B}",
        }
    log = node_log(a)
    assert f"DTMF *3{NODE_B} connect {NODE_B} from call {call_p}: linking node {NODE_B}" in log
    assert "Traceback" not in log and LINK_SECRET not in log


@pytest.mark.parametrize("policy", ["ulaw_only", "prefer_slin16"])
def test_speech_noise_twist_and_short_tones(tmp_path: Path, policy: str) -> None:
    """[dtmf] off: digits are still events. Speech gives none; digits in 20 dB noise, with 6 dB
    normal and 3 dB reverse twist, and 40 ms tones with 40 ms gaps each give exactly theirs."""
    with answered_phone(tmp_path, codec_policy=policy) as (a, events, p, cp):
        rate = rate_of(p.endpoint.call(cp).format)
        call = call_id(a, p.addr)
        speech = espeak("Node two thousand, connected. One, two, three, four. Testing.", rate)
        noisy_tones = digit_tones(rate, "159#", on_ms=60, off_ms=80)
        noisy = with_noise(noisy_tones, 20.0, noisy_tones[noisy_tones != 0])
        normal = digit_tones(rate, "2468", on_ms=60, off_ms=80, twist_db=6.0)
        reverse = digit_tones(rate, "*0AD", on_ms=60, off_ms=80, twist_db=-3.0)
        short = digit_tones(rate, "3579", on_ms=40, off_ms=40)
        gap = silence(rate, 400)
        parts = [speech, noisy, normal, reverse, short]
        talk(p, cp, np.concatenate([x for part in parts for x in (part, gap)]))
        expected = "159#" + "2468" + "*0AD" + "3579"
        wait_until("every digit", lambda: len(events.named("dtmf")) >= len(expected))
        got = events.named("dtmf")
        assert [e["digit"] for e in got] == list(expected)
        assert all(e["call"] == call and "command" not in e for e in got)
    assert "Traceback" not in node_log(a)
