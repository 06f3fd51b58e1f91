"""Speech that never pauses for the network: a talker streams syllables and pauses (silence
sent as voice, as many phones do) through a jittering relay into the real node, and a second
caller on a clean path records what the node sends. The jitter buffer may change its delay
only in the pauses: inside a syllable no frame is dropped and none is inserted, except where
a frame had not arrived by its time (counted by the node as lost, late or stretched).
The same talker on a noisy line (background noise at -40 dBFS under the speech and in the
pauses, above the fixed -50 dBFS threshold) has its pauses found above the noise.

    P --> [relay: 20 ms + jitter, no loss] --> node --> Q
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from node._core import ulaw_decode, ulaw_encode
from tests.interop.harness import running_node, wait_until
from tests.interop.impair import Condition, ImpairmentRelay
from tests.interop.softphone import Softphone

FRAME = 160
#: Syllables of 15 frames (300 ms) and pauses of 10 frames (200 ms).
SYLLABLE, PAUSE = 15, 10
SYLLABLES = 14


def speech_like(
    seed: int, noise_dbfs: float | None = None
) -> tuple[np.ndarray, dict[bytes, int], set[int]]:
    """The talker's audio, each speech frame mapped to its frame index by the second half of
    its µ-law round trip (the first 10 ms may be blended with a concealed frame before it),
    and the indices of speech frames. Every speech frame differs from every other (a voiced
    harmonic series whose pitch and level move per frame, plus a little noise). With
    `noise_dbfs`, white noise of that level runs under everything, pauses included."""
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
    x = np.concatenate(frames)
    if noise_dbfs is not None:
        x += rng.normal(0, 32768 * 10 ** (noise_dbfs / 20), len(x))
    pcm = np.clip(np.round(x), -32768, 32767).astype(np.int16)
    heard = np.frombuffer(ulaw_decode(ulaw_encode(pcm.tobytes())), dtype=np.int16)
    index = {_key(heard[k * FRAME : (k + 1) * FRAME].tobytes()): k for k in sorted(speech)}
    assert len(index) == len(speech), "speech frames must be unique"
    return pcm, index, speech


@pytest.mark.parametrize("noise_dbfs", [None, -40.0], ids=["clean", "noisy"])
def test_no_frame_is_dropped_or_inserted_inside_speech(
    tmp_path: Path, noise_dbfs: float | None
) -> None:
    pcm, index, speech = speech_like(3, noise_dbfs)
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
    inserted = dropped = adapted = 0
    for (a, k1), (b, k2) in pairwise(zip(order, ks, strict=True)):
        if k1 // (SYLLABLE + PAUSE) != k2 // (SYLLABLE + PAUSE):
            # A pause lies between them: the delay may change there.
            adapted += (b - a) != (k2 - k1)
            continue
        dropped += k2 - k1 - 1
        inserted += (b - a) - (k2 - k1)
    # The relay's first frame is its fastest, so the delay must grow, and it did so in pauses
    # (for the noisy talker: pauses found above its background).
    assert adapted >= 1, buffer
    # Only frames that were not there in time may leave a mark inside a syllable.
    assert dropped <= buffer["lost"] + buffer["late"], (dropped, buffer)
    assert inserted <= buffer["stretched"], (inserted, buffer)
    # Where pauses begin: -50 dBFS for a clean talker; above a louder background, 2 dB over
    # the quietest pair of frames (white noise at -40 dBFS: 20 ms frames of -41.5 to -38.5).
    if noise_dbfs is None:
        assert buffer["quiet_below_dbfs"] == -50, buffer
    else:
        assert -42 <= buffer["quiet_below_dbfs"] <= -37, buffer


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


def test_the_jitter_margin_is_the_configured_one(tmp_path: Path) -> None:
    """`[bridge] jitter_target_extra_ms` travels from the file through the daemon and the engine
    to the buffer of a leg: the buffer aims at the spread of the delays plus that margin."""
    pcm, _, _ = speech_like(4)
    sections = "[bridge]\njitter_target_extra_ms = 120\n"
    with (
        running_node(
            tmp_path, "node", codec_policy="ulaw_only", listener='auth = "off"', sections=sections
        ) as node,
        Softphone(name="P") as talker,
        Softphone(name="Q") as listener,
    ):
        q = listener.dial(node.udp_addr, "1")
        assert listener.wait_for(lambda s: s.answered(q))
        p = talker.dial(node.udp_addr, "1")
        assert talker.wait_for(lambda s: s.answered(p))
        talker.send_pcm(p, pcm[: 50 * FRAME])

        def talker_leg() -> dict[str, int]:
            legs = node.get("/stats").json()["legs"].values()
            return max(legs, key=lambda s: s["frames_in"])

        wait_until("the talker's frames to arrive", lambda: talker_leg()["frames_in"] >= 40, 30)
        buffer = talker_leg()
    assert buffer["target_ms"] - buffer["min_ms"] - buffer["jitter_ms"] == 120, buffer
