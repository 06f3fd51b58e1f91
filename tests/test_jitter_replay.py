"""`node._core.jitter_replay` and `conceal_frames`: the media path's receive side offline, as
the concealment benches use it (benches/pesq_replay.py, benches/pesq_speech.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from node._core import conceal_frames, jitter_replay
from tests.interop.impair import Condition, FateDrawer


def speechlike(frames: int) -> np.ndarray:
    t = np.arange(frames * 160) / 8000
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 2 * t)
    return (6000 * env * np.sin(2 * np.pi * 180 * t)).astype(np.int16)


def test_a_steady_stream_comes_back_whole_and_on_time() -> None:
    pcm = speechlike(40)
    arrivals = [
        (1000 + 20 * i, 20 * i + 35, pcm[i * 160 : (i + 1) * 160].tobytes()) for i in range(40)
    ]
    out, stats, played = jitter_replay(arrivals, 7, 70)
    assert len(out) == 70 * 160 * 2
    k = played.index(1000)
    assert played[k : k + 40] == [1000 + 20 * i for i in range(40)]
    got = np.frombuffer(out, dtype=np.int16)[k * 160 : (k + 40) * 160]
    assert np.array_equal(got, pcm)
    assert stats["frames_out"] == 40 and stats["late"] == 0 and stats["lost"] >= 0


def test_lost_frames_are_concealed_as_conceal_frames_conceals_them() -> None:
    """With a steady delay the buffer never moves its timeline, so a replay with frames missing
    is exactly the reference with those frames concealed (the bound the benches score)."""
    pcm = speechlike(60)
    lost = {12, 13, 30}
    arrivals = [
        (1000 + 20 * i, 20 * i + 35, pcm[i * 160 : (i + 1) * 160].tobytes())
        for i in range(60)
        if i not in lost
    ]
    for method in ("pitch", "fade"):
        out, _, played = jitter_replay(arrivals, 7, 90, method=method)
        k = played.index(1000)
        assert [played[k + i] for i in sorted(lost)] == [-1, -1, -1]
        got = np.frombuffer(out, dtype=np.int16)[k * 160 : (k + 60) * 160]
        mask = [i in lost for i in range(60)]
        want = np.frombuffer(conceal_frames(pcm.tobytes(), mask, 8000, method), dtype=np.int16)
        assert np.array_equal(got, want), method


def test_the_relays_draws_are_the_seeds() -> None:
    cond = Condition(
        "c", base_ms=80, sd_ms=40, spike_every=50, spike_ms=150, loss=0.05, duplicate=0.05
    )
    a = FateDrawer(cond, random.Random(7))
    b = FateDrawer(cond, random.Random(7))
    first = [a.draw() for _ in range(500)]
    assert first == [b.draw() for _ in range(500)]
    assert any(d.lost for d in first) and any(d.dup_delay_s is not None for d in first)
    assert max(d.delay_s for d in first) > 0.2  # a spike


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 11025}, "rate 11025 (accepted: 8000, 16000)"),
        ({"method": "loud"}, 'concealment "loud" (accepted: "pitch", "fade")'),
        ({"ticks": 2_000_000}, "ticks 2000000 (accepted: up to 1000000)"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, message: str) -> None:
    args = {"arrivals": [], "first_tick_ms": 0, "ticks": 10, **kwargs}
    with pytest.raises(ValueError) as exc:
        jitter_replay(**args)
    assert message in str(exc.value)
