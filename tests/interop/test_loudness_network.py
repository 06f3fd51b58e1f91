"""Levels across the network (issue 29): two callers reach a listener through the real node
over IAX2 on loopback, one speaking 12 dB below the loudness target, one 6 dB above it with
its peaks clipped at the source. A listener records what the node sends and each recording is
measured with pyloudnorm, an independent BS.1770 meter.

    A (quiet) --\\
                 node --> Q (records)
    B (hot)  ---/

With `[bridge] normalize` each voice reaches Q within 1 LU of the target and of the other;
without it they reach Q as they arrived. Either way the quiet station's in-band DTMF reaches
Q at its own level and decodes. The node's own meters (`/stats` `levels`) see what
arrives and what it sends: the hot caller's clipped samples, and none sent to Q.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from node._core import DtmfDetector, dtmf_pcm
from tests.interop.harness import running_node, wait_until
from tests.interop.softphone import Softphone
from tests.signals import at_loudness, espeak, int16, loudness

RATE = 8000
TARGET = -20.0
#: About 9.5 s of speech each: the normaliser learns a new voice in its first 3 s of speech
#: (while the first words go out nearer their own level), and the recording is measured whole.
TEXT = (
    "Amateur radio operators link their repeaters across the world. "
    "Please stand by while the net control station checks in the next caller, over."
)
#: Unnormalised, the levels simply pass: a short over each is enough to show it.
SHORT = "This is a short over to check the levels, over."


def voices(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The quiet caller's speech (target - 12) and the hot one's (target + 6, its peaks
    clipped at full scale by its own audio chain before it was sent)."""
    talk = espeak(text, RATE)
    quiet = int16(at_loudness(talk, RATE, TARGET - 12))
    # Driven into the top of its range, then clipped: a few dB of its peaks are flat.
    hot = np.clip(at_loudness(talk, RATE, TARGET + 6), -32767, 32767)
    for _ in range(3):
        hot = np.clip(at_loudness(hot, RATE, TARGET + 6) * 1.02, -32767, 32767)
    return quiet, int16(hot)


DIGITS = "*32000"
TONES = np.concatenate(
    [np.frombuffer(dtmf_pcm(RATE, DIGITS, -14.0, 80, 80), np.int16), np.zeros(1600, np.int16)]
)


def heard(phone: Softphone, callno: int, after: float, before: float) -> np.ndarray:
    """What `phone` heard on `callno` that arrived between two times, in timestamp order."""
    rec = phone.recording(callno)
    with phone._lock:
        frames = [(ts, pcm) for ts, pcm in rec.frames.items() if after <= rec.arrived[ts] < before]
    return np.frombuffer(b"".join(pcm for _, pcm in sorted(frames)), np.int16)


@pytest.mark.parametrize("normalize", [True, False], ids=["normalized", "as-they-come"])
def test_two_callers_reach_a_listener_at_one_loudness(tmp_path: Path, normalize: bool) -> None:
    quiet, hot = voices(TEXT if normalize else SHORT)
    assert np.count_nonzero(np.abs(hot.astype(np.int32)) >= 32767) > 20
    assert loudness(hot, RATE) == pytest.approx(TARGET + 6, abs=0.3)
    sections = (
        f"[bridge]\nnormalize = {str(normalize).lower()}\nloudness_target = {TARGET}\n"
        # The node's own in-band detection would mute the digits from the conference (as
        # app_rpt does); off, they pass to the listener through the normaliser.
        "[dtmf]\ninband = false\n"
    )
    with (
        running_node(
            tmp_path, "node", codec_policy="ulaw_only", listener='auth = "off"', sections=sections
        ) as node,
        Softphone(name="Q") as listener,
        Softphone(name="A") as a,
        Softphone(name="B") as b,
    ):
        q = listener.dial(node.udp_addr, "1")
        ca = a.dial(node.udp_addr, "1")
        cb = b.dial(node.udp_addr, "1")
        for phone, call in ((listener, q), (a, ca), (b, cb)):
            assert phone.wait_for(lambda s, call=call: s.answered(call))
        marks = [time.monotonic()]
        for phone, call, pcm in ((a, ca, quiet), (b, cb, hot)):
            phone.send_pcm(call, pcm)
            wait_until("the caller to finish", lambda p=phone, c=call: not p.sending(c), 30)
            # The VOX hang (800 ms) and the jitter buffer's delay play out before the next.
            time.sleep(1.2)
            marks.append(time.monotonic())
        levels = node.get("/stats").json()["levels"]
        snapshot_levels = node.get("/status").json()["levels"]
        # The quiet station, whose voice the node lifts by 12 dB, types a command in-band.
        a.send_pcm(ca, TONES)
        wait_until("the digits to be sent", lambda: not a.sending(ca), 30)
        time.sleep(1.2)
        marks.append(time.monotonic())
    got = [loudness(heard(listener, q, marks[i], marks[i + 1]), RATE) for i in range(2)]
    # The digits reach the listener whole and at the level they were sent (the voice's gain
    # stood aside), normalised or not.
    digits = heard(listener, q, marks[2], marks[3])
    detector = DtmfDetector(RATE)
    pressed = [d for kind, d in detector.process(digits.tobytes()) if kind == "pressed"]
    assert "".join(pressed) == DIGITS
    tone_level = 10 * np.log10(np.mean(digits[np.abs(digits) > 300].astype(float) ** 2))
    sent_level = 10 * np.log10(np.mean(TONES[np.abs(TONES) > 300].astype(float) ** 2))
    assert tone_level == pytest.approx(sent_level, abs=1.5)
    sent = [loudness(quiet, RATE), loudness(hot, RATE)]
    if normalize:
        for lufs in got:
            assert lufs == pytest.approx(TARGET, abs=1.0), (got, sent)
        assert got[0] == pytest.approx(got[1], abs=1.0), got
    else:
        # µ-law on the way: each arrives within 0.5 LU of what was sent, 18 LU apart.
        for lufs, source in zip(got, sent, strict=True):
            assert lufs == pytest.approx(source, abs=0.5), (got, sent)
        assert got[1] - got[0] > 15
    # The node's meters: every call is there, the hot caller arrived clipped, and nothing the
    # node sent the listener was (normalised: the limiter; as they come: µ-law's top code
    # is sent on, so the listener hears the clips the caller made).
    assert {c["id"] for c in snapshot_levels["calls"]} == {c["id"] for c in levels["calls"]}
    calls = sorted(levels["calls"], key=lambda c: c["rx"]["clipped"])
    listener_leg, quiet_leg, hot_leg = sorted(
        levels["calls"], key=lambda c: (c["rx"]["lufs"] or -200, c["rx"]["clipped"])
    )
    assert calls[-1] is hot_leg and hot_leg["rx"]["clipped"] > 20, levels
    assert hot_leg["rx"]["lufs"] - quiet_leg["rx"]["lufs"] == pytest.approx(18, abs=2), levels
    if normalize:
        assert listener_leg["tx"]["clipped"] == 0, levels
        assert listener_leg["tx"]["lufs"] == pytest.approx(TARGET, abs=1.5), levels
        assert quiet_leg["gain_db"] == pytest.approx(12, abs=1.5), levels
        assert hot_leg["gain_db"] == pytest.approx(-6, abs=1.5), levels
    else:
        assert listener_leg["tx"]["clipped"] > 0, levels
        assert all(c["gain_db"] is None for c in levels["calls"]), levels
