"""The loudness meter every leg carries twice (what arrives, what we send), per 20 ms frame:
node._core.LoudnessMeter against the same meter in numpy and scipy with pyloudnorm's filters.

The meter (docs/media.md, "Loudness"): BS.1770 K-weighting (two biquads), the mean square over
100 ms blocks, the pause gate and a 3 s window of speech blocks, the sample peak and the clip
count. The peer computes exactly that per frame: `scipy.signal.lfilter` with pyloudnorm's
"DeMan" coefficients and carried filter state, numpy for the squares, the peak and the clips,
and the gate and window in Python at each block's end. Both are checked to read the same
before they are timed. Ours goes through the binding (a `bytes` read per call), which the
engine itself does not pay.

`normalize` times the normaliser on a voice (tone detector, its own meter, gain ramp and the
look-ahead limiter) on 512 frames in one call: what a normalised leg adds per frame.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyloudnorm
import pytest
from scipy.signal import lfilter

from node._core import LoudnessMeter, normalize_pcm
from tones import kernels, loop

N_FRAMES = 512
CLIP = 32124


class NumpyMeter:
    """The media path's meter in numpy/scipy, fed one frame at a time."""

    def __init__(self, rate: int) -> None:
        filters = pyloudnorm.Meter(rate, filter_class="DeMan")._filters.values()
        self.stages = [(f.b, f.a, np.zeros(2)) for f in filters]
        self.block = rate // 10
        self.sum = 0.0
        self.n = 0
        self.peak = 0
        self.clipped = 0
        self.speech: list[float] = []
        self.since_speech = 100

    def feed(self, frame: bytes) -> None:
        x = np.frombuffer(frame, np.int16)
        a = np.abs(x.astype(np.int32))
        self.peak = max(self.peak, int(a.max()))
        self.clipped += int(np.count_nonzero(a >= CLIP))
        y = x / 32768.0
        for i, (b, den, zi) in enumerate(self.stages):
            y, zf = lfilter(b, den, y, zi=zi)
            self.stages[i] = (b, den, zf)
        # 20 ms frames fill 100 ms blocks exactly.
        self.sum += float(np.dot(y, y))
        self.n += len(y)
        if self.n == self.block:
            self.close()

    def close(self) -> None:
        ms = self.sum / self.n
        loud = -0.691 + 10 * np.log10(ms) if ms > 0 else -100.0
        gate = -70.0
        if self.speech and self.since_speech < 100:
            gate = max(gate, -0.691 + 10 * np.log10(np.mean(self.speech)) - 20)
        if loud > gate:
            self.speech = [*self.speech[-29:], ms]
            self.since_speech = 0
        else:
            self.since_speech += 1
        self.sum, self.n = 0.0, 0

    def lufs(self) -> float | None:
        if len(self.speech) < 4:
            return None
        return -0.691 + 10 * float(np.log10(np.mean(self.speech)))


#: The station rates, where every leg runs the meter twice; and a sound card's 48 kHz, which
#: only this meter's test runs at (numpy's per-call overhead thins out at 960 samples a frame).
CASES = {"loud8k": 8000, "loud16k": 16000}
CASES_48K = {"loud48k": 48000}


@pytest.fixture(scope="module")
def frames(speech: Callable[[int, float], np.ndarray]) -> Callable[[int], list[bytes]]:
    def make(rate: int) -> list[bytes]:
        n = rate // 50
        x = speech(rate, N_FRAMES / 50)
        return [x[i * n : (i + 1) * n].tobytes() for i in range(N_FRAMES)]

    return make


def check(frames: list[bytes], rate: int) -> None:
    ours, peer = LoudnessMeter(rate), NumpyMeter(rate)
    for f in frames:
        ours.feed(f)
        peer.feed(f)
    got, want = ours.reading()["lufs"], peer.lufs()
    assert got is not None and want is not None
    assert got == pytest.approx(want, abs=1e-6)
    assert ours.reading()["clipped"] == peer.clipped


@pytest.mark.parametrize("rate", kernels(CASES) + kernels(CASES_48K))
def test_loudness_ours(bench, frames, rate) -> None:
    check(frames(rate), rate)
    meter = LoudnessMeter(rate)
    bench(loop(meter.feed, frames(rate)), per_call=N_FRAMES, samples=rate // 50)


@pytest.mark.parametrize("rate", kernels(CASES, target=10.0) + kernels(CASES_48K))
def test_loudness_numpy(bench, frames, rate) -> None:
    meter = NumpyMeter(rate)
    bench(loop(meter.feed, frames(rate)), per_call=N_FRAMES, samples=rate // 50)


@pytest.mark.parametrize("rate", kernels({"normalize8k": 8000, "normalize16k": 16000}))
def test_normalize_ours(bench, frames, rate) -> None:
    pcm = b"".join(frames(rate))
    out, _ = normalize_pcm(pcm, rate)
    assert len(out) == len(pcm)
    bench(lambda: normalize_pcm(pcm, rate), per_call=N_FRAMES, samples=rate // 50)
