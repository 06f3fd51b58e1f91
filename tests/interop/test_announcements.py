"""Station ID and announcements heard by a real member: a softphone on a running node.

- The periodic CW ID: owed only once the station transmitted, played in the first pause of
  the conversation (never over the talker here), at its wpm, tone and level.
- Spoken announcements through espeak-ng (call answered, a link connecting, `*70`), at the
  nominal voice level, as `announcement_*` events on the event stream.
- A TTS binary that hangs: the announcement goes out in CW after `timeout_ms`, and is counted.

The measured figures are printed (run with -s) and quoted in docs/announce.md.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np

from node._core import cw_pcm
from node.announce.announcer import CW_DBFS, ID_CW_DBFS, SPEECH_PEAK_DBFS
from tests.audio import espeak
from tests.conftest import require_tool
from tests.interop.harness import (
    NODE_B,
    EventWatcher,
    answered_phone,
    node_log,
    node_pair,
    wait_until,
)
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone

TONE_HZ = 1000.0
RATE = 8000  # the softphones talk µ-law


def peak_dbfs(x: np.ndarray) -> float:
    return float(20 * np.log10(np.abs(x.astype(np.float64)).max() / 32767))


def dominant_hz(x: np.ndarray, rate: int = RATE) -> float:
    spectrum = np.abs(np.fft.rfft(x.astype(np.float64) * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[spectrum.argmax()])


def keyed_runs_ms(x: np.ndarray, rate: int = RATE) -> tuple[list[float], list[float]]:
    """Lengths of the key-down elements and of the gaps between them, measured where the 2 ms
    envelope crosses half the peak."""
    env = np.convolve(np.abs(x.astype(np.float64)), np.ones(rate // 500) / (rate // 500), "same")
    on = env > 0.5 * env.max() * 2 / np.pi  # the mean of |sin| is 2/π of its peak
    edges = np.flatnonzero(np.diff(on.astype(np.int8)))
    spans = np.diff(edges) * 1000 / rate
    first_on = bool(on[edges[0] + 1])
    keyed = spans[0::2] if first_on else spans[1::2]
    gaps = spans[1::2] if first_on else spans[0::2]
    return list(keyed), list(gaps)


def talk(phone: Softphone, callno: int, seconds: float) -> float:
    """A 500 Hz tone for `seconds`; returns when its last frame went out."""
    t = np.arange(int(RATE * seconds)) / RATE
    phone.send_pcm(callno, (6000 * np.sin(2 * np.pi * 500 * t)).astype(np.int16))
    assert phone.wait_for(lambda s: callno in s.finished_sending, timeout=seconds + 10)
    return phone.finished_sending.pop(callno)


def ids(events: EventWatcher, name: str = "announcement_started") -> list[dict]:
    return [e for e in events.named(name) if e["kind"] == "id"]


def test_the_polite_cw_id_is_heard_at_its_speed_tone_and_level(tmp_path: Path) -> None:
    announce = (
        '[announce]\nenabled = true\nid_mode = "cw"\nid_interval_secs = 3\ncw_wpm = 20\n'
        f'cw_tone_hz = {TONE_HZ}\ncallsign = "W1AW"\n'
    )
    with answered_phone(tmp_path, announce) as (a, events, p, cp):
        # The station has not transmitted: no ID however long it waits.
        assert not p.wait_for(lambda s: s.heard_ms(cp) > 0, timeout=3.5)
        assert ids(events) == []

        # P talks; the ID is overdue by then, and plays in the first pause after the talk.
        first_end = talk(p, cp, 1.0)
        wait_until("the first ID", lambda: len(ids(events, "announcement_finished")) == 1)
        # P talks again past the next due time (3 s after the first ID): the ID waits.
        second_end = talk(p, cp, 4.0)
        wait_until("the second ID", lambda: len(ids(events, "announcement_finished")) == 2)
        assert all(e["completed"] for e in ids(events, "announcement_finished"))
        # No talk since: no third ID.
        assert not p.wait_for(lambda s: len(s.recording(cp).spurts()) > 2, timeout=4.0)
        spurts = p.recording(cp).spurts()
        stats = a.get("/stats").json()["announce"]

    assert len(spurts) == 2 and len(ids(events)) == 2
    (first_at, first), (second_at, second) = spurts
    expected = np.frombuffer(cw_pcm(RATE, "W1AW", 20, TONE_HZ, ID_CW_DBFS), np.int16)
    for heard in (first, second):
        keyed, gaps = keyed_runs_ms(heard)
        assert len(keyed) == 13  # W .--  1 .----  A .-  W .--
        dot, dash = min(keyed), max(keyed)
        assert abs(dot - 60) < 4 and abs(dash - 180) < 4, (dot, dash)
        assert abs(min(gaps) - 60) < 4 and abs(max(gaps) - 180) < 4
        # µ-law's quantisation step is 128 around this level (2067 peak): up to 1 dB off.
        assert abs(peak_dbfs(heard) - ID_CW_DBFS) < 1.0
        assert abs(dominant_hz(heard) - TONE_HZ) < 10
        # The whole ID arrived, padded to whole frames.
        assert 0 <= len(heard) - len(expected) < 160
    pause_1, pause_2 = first_at - first_end, second_at - second_end
    print(
        f"CW ID: dot {min(keyed_runs_ms(first)[0]):.1f} ms, dash {max(keyed_runs_ms(first)[0]):.1f}"
        f" ms, {len(first) / RATE:.2f} s, peak {peak_dbfs(first):.2f} dBFS at "
        f"{dominant_hz(first):.0f} Hz; heard {pause_1:.2f} s and {pause_2:.2f} s after the talk "
        f"ended; {second_at - first_at:.2f} s between IDs"
    )
    # Each waited for the pause (0.5 s activity hang + 0.5 s gap) and never cut into the talk.
    assert pause_1 > 0.9 and pause_2 > 0.9
    assert second_at - first_at > 3.0
    assert stats["played"] == 2 and stats["id_owed"] is False and stats["tts_failures"] == 0
    assert "Traceback" not in node_log(a)


def espeak_level(text: str) -> tuple[float, float]:
    """espeak-ng's own rendering of `text` at 8 kHz: (seconds, peak dBFS)."""
    ref = espeak(text, RATE)
    return len(ref) / RATE, peak_dbfs(ref)


def test_spoken_announcements_over_a_call_and_on_the_event_stream(
    tmp_path: Path, registrar: Registrar
) -> None:
    require_tool("espeak-ng")
    sections = (
        "[dtmf]\nenabled = true\n\n"
        + "[announce]\nenabled = true\n\n"
        + '[announce.tts]\nenabled = true\nbinary = "espeak-ng"\nvoice = "en-us"\n'
        + "timeout_ms = 10000\n\n"
        + '[announce.events.answered]\nenabled = true\ndestination = "to_air"\n\n'
        + '[announce.events.link_connected]\nenabled = true\ndestination = "to_air"\n\n'
    )
    with (
        node_pair(tmp_path, registrar, a_sections=sections, a_listener='auth = "off"') as (a, _),
        Softphone(codec_policy="ulaw_only", name="P") as p,
    ):
        events = EventWatcher(a)
        cp = p.dial(a.udp_addr, "1")
        assert p.wait_for(lambda s: s.answered(cp))

        def finished(n: int) -> bool:
            return len(events.named("announcement_finished")) >= n

        # A pause after each announcement, so the phone hears three separate talk spurts.
        wait_until("the answered announcement", lambda: finished(1))
        time.sleep(0.3)
        p.send_dtmf(cp, f"*3{NODE_B}")
        events.wait_for(lambda e: e["event"] == "link" and e["kind"] == "connected")
        wait_until("the link announcement", lambda: finished(2))
        time.sleep(0.3)
        p.send_dtmf(cp, "*70")
        events.wait_for(lambda e: e["event"] == "announcement_finished" and e["kind"] == "command")
        spurts = p.recording(cp).spurts(gap_ms=200)

    started = [e["kind"] for e in events.named("announcement_started")]
    ended = [(e["kind"], e["completed"]) for e in events.named("announcement_finished")]
    assert started == ["event", "event", "command"]
    assert ended == [("event", True), ("event", True), ("command", True)]
    assert len(spurts) == 3
    texts = ["call connected", "node 2 0 0 2 connected", "linked to node 2 0 0 2"]
    for (_, heard), text in zip(spurts, texts, strict=True):
        seconds, _ = espeak_level(text)
        got = len(heard) / RATE
        print(
            f"spoken {text!r}: {got:.2f} s (espeak-ng {seconds:.2f} s), peak "
            f"{peak_dbfs(heard):.2f} dBFS"
        )
        # Normalised to the nominal voice peak (µ-law and the 8 kHz filter move it a little).
        assert abs(peak_dbfs(heard) - SPEECH_PEAK_DBFS) < 1.0
        assert abs(got - seconds) < 0.1
        # Speech: most of its energy between 200 Hz and 3.4 kHz, not a tone.
        spectrum = np.abs(np.fft.rfft(heard.astype(np.float64))) ** 2
        freqs = np.fft.rfftfreq(len(heard), 1 / RATE)
        band = spectrum[(freqs > 200) & (freqs < 3400)].sum() / spectrum.sum()
        assert band > 0.8
    assert "Traceback" not in node_log(a)


def test_a_hanging_tts_binary_falls_back_to_cw(tmp_path: Path) -> None:
    slow = tmp_path / "slow-tts"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    sections = (
        "[announce]\nenabled = true\n"
        f"cw_wpm = 20\ncw_tone_hz = {TONE_HZ}\n\n"
        f'[announce.tts]\nenabled = true\nbinary = "{slow}"\ntimeout_ms = 300\n\n'
        '[announce.events.answered]\nenabled = true\ndestination = "to_air"\n'
    )
    with answered_phone(tmp_path, sections) as (a, events, p, cp):
        events.wait_for(lambda e: e["event"] == "announcement_finished", timeout=15)
        expected = np.frombuffer(cw_pcm(RATE, "ANS", 20, TONE_HZ, CW_DBFS), np.int16)
        # The event says the node played the last frame; on a busy host the phone may not have
        # received it yet.
        wait_until(
            "the CW's last frame heard",
            lambda: sum(len(h) for _, h in p.recording(cp).spurts()) >= len(expected),
        )
        spurts = p.recording(cp).spurts()
        stats = a.get("/stats").json()["announce"]
    assert len(spurts) == 1
    heard = spurts[0][1]
    assert 0 <= len(heard) - len(expected) < 160
    assert abs(peak_dbfs(heard) - CW_DBFS) < 1.0 and abs(dominant_hz(heard) - TONE_HZ) < 10
    assert stats["tts_failures"] == 1 and "took longer than 300 ms" in stats["last_tts_failure"]
    log = node_log(a)
    assert "TTS failed" in log and "sending 'ANS' in CW instead" in log
    assert not subprocess.run(["pgrep", "-f", str(slow)], capture_output=True).stdout
