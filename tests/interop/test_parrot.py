"""Parrot mode with real calls: two softphones talk at once, each hears its own phrase back after
the silence gap and the playback delay, spectrum intact, and never the other's.

    softphone P (slin16) --\\
                           node A, POST /bridge {"mode": "parrot"}
    softphone Q (µ-law) ---/
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np

from tests.audio import espeak, silence
from tests.interop.harness import node_log, running_node, wait_until
from tests.interop.softphone import Softphone, rate_of

PARROT = "[parrot]\nplayback_delay_ms = 500\nsilence_gap_ms = 400\nvox_threshold_db = -40.0\n"


def band_profile(x: np.ndarray, rate: int) -> np.ndarray:
    """Energy in third-octave bands from 200 Hz to 3.2 kHz, in dB (speech's main range in
    both codecs' passbands)."""
    spectrum = np.abs(np.fft.rfft(x.astype(np.float64) * np.hanning(len(x)))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    edges = 200 * 2 ** (np.arange(13) / 3)
    return np.array(
        [
            10 * np.log10(spectrum[(freqs >= lo) & (freqs < hi)].sum() + 1e-9)
            for lo, hi in itertools.pairwise(edges)
        ]
    )


def voiced(x: np.ndarray) -> np.ndarray:
    """`x` without its leading and trailing quiet."""
    loud = np.flatnonzero(np.abs(x.astype(np.int32)) > 300)
    return x[loud[0] : loud[-1] + 1] if len(loud) else x[:0]


def test_each_member_hears_its_own_phrase_back(tmp_path: Path) -> None:
    with (
        running_node(tmp_path, "a", listener='auth = "off"', sections=PARROT) as a,
        Softphone(codec_policy="prefer_slin16", name="P") as p,
        Softphone(codec_policy="ulaw_only", name="Q") as q,
    ):
        snapshot = a.post("/bridge", json={"mode": "parrot"}).json()
        assert snapshot["bridge"]["mode"] == "parrot"
        calls = {}
        for phone in (p, q):
            callno = phone.dial(a.udp_addr, "1")
            assert phone.wait_for(lambda s, c=callno: s.answered(c))
            calls[phone.name] = callno
        sent = {}
        for phone, text in ((p, "Testing the parrot, one two three."), (q, "Node two thousand.")):
            callno = calls[phone.name]
            rate = rate_of(phone.endpoint.call(callno).format)
            sent[phone.name] = (rate, espeak(text, rate))
            phone.send_pcm(callno, np.concatenate([silence(rate, 300), sent[phone.name][1]]))
        for phone in (p, q):
            callno = calls[phone.name]
            assert phone.wait_for(lambda s, c=callno: c in s.finished_sending, timeout=20)
            wait_until(f"{phone.name}'s echo", lambda ph=phone, c=callno: ph.heard_ms(c) > 500)
        # Let both echoes play out: nothing more arrives for half a second.
        for phone in (p, q):
            callno = calls[phone.name]
            last = -1
            while phone.heard_ms(callno) != last:
                last = phone.heard_ms(callno)
                time.sleep(0.5)
        a.post("/bridge", json={"mode": "bridge"})
        assert a.get("/status").json()["bridge"]["mode"] == "bridge"

    for phone in (p, q):
        callno = calls[phone.name]
        rate, speech = sent[phone.name]
        spurts = phone.recording(callno).spurts(gap_ms=200)
        # One echo each: its own phrase, never the other's.
        assert len(spurts) == 1, [len(s) for _, s in spurts]
        heard_at, heard = spurts[0]
        echo = voiced(heard)
        original = voiced(speech)
        # From the end of the voice: espeak-ng's phrase ends with some quiet of its own.
        trailing = (len(speech) - np.flatnonzero(np.abs(speech.astype(np.int32)) > 300)[-1]) / rate
        delay = heard_at - (phone.finished_sending[callno] - trailing)
        # Within a frame or two: a media tick the loaded host ran late can cost the recording
        # of what came back a frame (its timestamp is taken twice), never the parrot.
        assert abs(len(echo) - len(original)) <= 2 * rate // 50, (len(echo), len(original))
        difference = np.abs(band_profile(echo, rate) - band_profile(original, rate))
        print(
            f"parrot {phone.name} ({rate} Hz): {len(echo) / rate:.2f} s back "
            f"{delay:.2f} s after the talk ended; third-octave bands within "
            f"{difference.max():.2f} dB"
        )
        assert difference.max() < (0.5 if rate == 16000 else 1.5)
        # The gap (400 ms) and the delay (500 ms) passed before the echo began.
        assert delay > 0.85
        if rate == 16000:
            # slin16 end to end at a 16 kHz station: the very samples come back, frame for
            # frame (allowing the frame or two a late tick can shift).
            n = rate // 50
            frames = [echo[i : i + n] for i in range(0, len(echo) - n + 1, n)]
            exact = sum(
                any(
                    np.array_equal(f, original[i * n + k * n : (i + 1) * n + k * n])
                    for k in (-2, -1, 0, 1, 2)
                )
                for i, f in enumerate(frames)
            )
            assert exact >= 0.9 * len(frames), (exact, len(frames))
    assert "Traceback" not in node_log(a)
