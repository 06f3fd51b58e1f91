"""One conference tick (decode, mix-minus, encode) for N members: node._core against numpy.

A tick takes one µ-law 20 ms frame per member and returns one µ-law frame per member: what
that member hears (everybody else, saturated to int16). Every member talks, so every member
gets its own mix and its own encode (the worst case; listeners who hear the same mix would
share one encode in ours). Both sides take a list of `bytes` and return a list of `bytes`,
and cycle through 512 distinct frame sets per N.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

from node import _core
from tones import loop

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    audioop = pytest.importorskip("audioop", reason="audioop (Python <= 3.12) is the reference")

SIZES = (2, 8, 32, 128)
N_SETS = 512
FRAME = 160
ULAW = 0x4

ALL_PCM = np.arange(-32768, 32768, dtype=np.int16)
# The peer's tables come from the reference codec: decode by code, encode by the sample's bit
# pattern read as uint16 (a 64K table, one gather per sample).
DEC32 = np.frombuffer(audioop.ulaw2lin(bytes(range(256)), 2), np.int16).astype(np.int32)
ENC_BY_RANK = np.frombuffer(audioop.lin2ulaw(ALL_PCM.tobytes(), 2), np.uint8)


class NumpyTick:
    """A vectorised numpy tick with every buffer preallocated.

    Of the variants tried (fancy indexing, np.clip, encoding through an int16 copy viewed as
    uint16), this was the fastest at every N on the development host: np.take into preallocated
    arrays, np.maximum/np.minimum in place (np.clip is slower at small N, research/perf.md §2.4),
    and the 64K encode table indexed by the clipped sample + 32768, which is the uint16 view's
    table rotated by half and saves the int16 copy.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.pcm = np.empty((n, FRAME), np.int32)
        self.total = np.empty(FRAME, np.int32)
        self.mix = np.empty((n, FRAME), np.int32)
        self.enc = np.empty((n, FRAME), np.uint8)

    def __call__(self, frames: list[bytes]) -> list[bytes]:
        codes = np.frombuffer(b"".join(frames), np.uint8).reshape(self.n, FRAME)
        np.take(DEC32, codes, out=self.pcm)
        np.sum(self.pcm, axis=0, out=self.total)
        np.subtract(self.total, self.pcm, out=self.mix)
        np.maximum(self.mix, -32768, out=self.mix)
        np.minimum(self.mix, 32767, out=self.mix)
        np.add(self.mix, 32768, out=self.mix)
        np.take(ENC_BY_RANK, self.mix, out=self.enc)
        return [row.tobytes() for row in self.enc]


def reference(frames: list[bytes]) -> list[bytes]:
    """The plain definition, through audioop: decode, int32 sum, minus self, clip, encode."""
    pcm = [np.frombuffer(audioop.ulaw2lin(f, 2), np.int16).astype(np.int32) for f in frames]
    total = np.sum(pcm, axis=0)
    return [
        audioop.lin2ulaw(np.clip(total - p, -32768, 32767).astype(np.int16).tobytes(), 2)
        for p in pcm
    ]


@pytest.fixture(scope="module")
def frame_sets(speech: Callable[[int, float], np.ndarray]) -> Callable[[int], list[list[bytes]]]:
    """512 sets of N distinct speech-like µ-law frames, each member at a level that keeps most
    sums inside int16 (a conference of N loud talkers would clip all the time)."""
    cache: dict[int, list[list[bytes]]] = {}

    def get(n: int) -> list[list[bytes]]:
        if n not in cache:
            x = speech(8000, n * N_SETS * FRAME / 8000).astype(np.float64)
            pcm = np.round(x * min(1.0, 2.0 / np.sqrt(n))).astype(np.int16)
            wire = np.frombuffer(_core.ulaw_encode(pcm.tobytes()), np.uint8)
            wire = wire.reshape(N_SETS, n, FRAME)
            cache[n] = [[wire[s, m].tobytes() for m in range(n)] for s in range(N_SETS)]
        return cache[n]

    return get


def make_ours(n: int) -> Callable[..., None]:
    def test(bench: Callable[..., object], frame_sets: Callable[[int], list[list[bytes]]]) -> None:
        sets = frame_sets(n)
        conf = _core.Conference(n, ULAW, mix_minus=True)
        peer = NumpyTick(n)
        assert [conf.tick(s) for s in sets] == [peer(s) for s in sets]
        bench(loop(conf.tick, sets), per_call=N_SETS, samples=n * FRAME, unit="tick")

    return test


def make_numpy(n: int) -> Callable[..., None]:
    def test(bench: Callable[..., object], frame_sets: Callable[[int], list[list[bytes]]]) -> None:
        sets = frame_sets(n)
        peer = NumpyTick(n)
        for s in sets[:8]:
            assert peer(s) == reference(s)
        bench(loop(peer, sets), per_call=N_SETS, samples=n * FRAME, unit="tick")

    return test


# One pair of tests per N, ours first (the peer's ratio needs ours). Targets (the issue's): at
# least 10x numpy for N <= 8 and 4x at 128; N = 32 is held to the 128-member bound.
for _n in SIZES:
    for _impl, _make in (("ours", make_ours), ("numpy", make_numpy)):
        _test = _make(_n)
        _test.__name__ = _test.__qualname__ = f"test_mixminus{_n}_{_impl}"
        if _impl == "numpy":
            _test = pytest.mark.ratio_target(10.0 if _n <= 8 else 4.0)(_test)
        globals()[f"test_mixminus{_n}_{_impl}"] = _test
del _n, _impl, _make, _test
