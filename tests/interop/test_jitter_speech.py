"""Speech that never pauses for the network: a talker streams syllables and pauses (silence
sent as voice, as many phones do) through a jittering relay into the real node, and a second
caller on a clean path records what the node sends. The jitter buffer may change its delay
only in the pauses: inside a syllable no frame is dropped and none is inserted, except where
a frame had not arrived by its time (counted by the node as lost, late or stretched).

    P --> [relay: 20 ms + jitter, no loss] --> node --> Q
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np

from node._core import ulaw_decode, ulaw_encode
from tests.interop.harness import running_node, wait_until
from tests.interop.impair import Condition, ImpairmentRelay
from tests.interop.softphone import Softphone

FRAME = 160
#: Syllables of 15 frames (300 ms) and pauses of 10 frames (200 ms).
SYLLABLE, PAUSE = 15, 10
SYLLABLES = 14


def speech_like(seed: int) -> tuple[np.ndarray, dict[bytes, int], set[int]]:
    """The talker's audio, each speech frame mapped to its frame index by the second half of
    its µ-law round trip (the first 10 ms may be blended with a concealed frame before it),
    and the indices of speech frames. Every speech frame differs from every other (a voiced
    harmonic series whose pitch and level move per frame, plus a little noise)."""
    rng = np.random.default_rng(seed)
    frames: list[np.ndarray] = []
    speech: set[int] = set()
    for _ in range(SYLLABLES):
        f0 = rng.uniform(95, 220)
        for i in range(SYLLABLE):
            t = (len(frames) * FRAME + np.arange(FRAME)) / 8000
            f = f0 * (1 + 0.01 * i)
            level = 3000 * np.sin(np.pi * (i + 0.5) / SYLLABLE) + 500
            x = sum(np.sin(2 * np.pi * h * f * t) / h for h in range(1, 8)) * level
            x += rng.normal(0, 60, FRAME)
            speech.add(len(frames))
            frames.append(x)
        frames.extend(np.zeros(FRAME) for _ in range(PAUSE))
    pcm = np.clip(np.round(np.concatenate(frames)), -32768, 32767).astype(np.int16)
    heard = np.frombuffer(ulaw_decode(ulaw_encode(pcm.tobytes())), dtype=np.int16)
    index = {_key(heard[k * FRAME : (k + 1) * FRAME].tobytes()): k for k in sorted(speech)}
    assert len(index) == len(speech), "speech frames must be unique"
    return pcm, index, speech


def test_no_frame_is_dropped_or_inserted_inside_speech(tmp_path: Path) -> None:
    pcm, index, speech = speech_like(3)
    jitter = Condition("jitter", base_ms=20, sd_ms=25)
    with running_node(tmp_path, "node", codec_policy="ulaw_only", listener='auth = "off"') as node:
        relay = ImpairmentRelay(node.udp_addr, jitter, seed=5)
        with relay, Softphone(name="P") as talker, Softphone(name="Q") as listener:
            q = listener.dial(node.udp_addr, "1")
            assert listener.wait_for(lambda s: s.answered(q))
            p = talker.dial(relay.front_addr, "1")
            assert talker.wait_for(lambda s: s.answered(p))
            talker.send_pcm(p, pcm)
            wait_until("the talker to finish", lambda: not talker.sending(p), 60)
            last = len(pcm) // FRAME - PAUSE - 1
            wait_until(
                "the last syllable to be heard",
                lambda: last in _played(listener, q, index).values(),
                10,
            )
            legs = node.get("/stats").json()["legs"].values()
    buffer = max(legs, key=lambda s: s["frames_in"])
    played = _played(listener, q, index)
    order = sorted(played)
    ks = [played[pos] for pos in order]
    assert ks == sorted(set(ks)), "speech frames out of order or repeated"
    assert len(ks) >= 0.9 * len(speech), f"only {len(ks)} of {len(speech)} speech frames heard"
    inserted = dropped = 0
    for (a, k1), (b, k2) in pairwise(zip(order, ks, strict=True)):
        if k1 // (SYLLABLE + PAUSE) != k2 // (SYLLABLE + PAUSE):
            continue  # a pause lies between them: the delay may change there
        dropped += k2 - k1 - 1
        inserted += (b - a) - (k2 - k1)
    # Only frames that were not there in time may leave a mark inside a syllable.
    assert dropped <= buffer["lost"] + buffer["late"], (dropped, buffer)
    assert inserted <= buffer["stretched"], (inserted, buffer)


def _played(phone: Softphone, callno: int, index: dict[bytes, int]) -> dict[int, int]:
    """Speech frames Q heard: its frame position (by the node's timestamps) -> the talker's
    frame index."""
    rec = phone.recording(callno)
    with phone._lock:
        frames = dict(rec.frames)
    if not frames:
        return {}
    first = min(frames)
    keys = {(ts - first) // 20: _key(pcm) for ts, pcm in frames.items()}
    return {pos: index[key] for pos, key in keys.items() if key in index}


def _key(pcm: bytes) -> bytes:
    """The second half of a frame (bytes of 16-bit PCM)."""
    return pcm[FRAME:]
