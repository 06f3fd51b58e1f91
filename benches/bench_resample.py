"""8 kHz <-> 16 kHz resampling: node._core against soxr, audioop.ratecv and scipy.

Per-frame benchmarks stream 512 consecutive 20 ms frames (160 samples at 8 kHz, 320 at 16 kHz)
through one stateful resampler, bytes in and bytes out. Block benchmarks resample 1 s blocks
from a fresh state (informational: the node never resamples in blocks).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

from node import _core

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import audioop
    except ImportError:  # pragma: no cover - Python >= 3.13
        audioop = None

soxr = pytest.importorskip("soxr")

N_FRAMES = 512
AMP = 16000.0
STOP_TONES_16K = (4600, 5000, 6000, 7000, 7900)  # aliases when going down
PASS_TONES_8K = (3400, 3000, 2000, 1000, 100)  # images at 8000 - f when going up


def tone(freq: float, rate: int, seconds: float) -> np.ndarray:
    n = np.arange(round(rate * seconds))
    return np.round(AMP * np.sin(2 * np.pi * freq * n / rate)).astype(np.int16)


def amplitude(x: np.ndarray, freq: float, rate: int) -> float:
    phase = np.exp(-2j * np.pi * freq * np.arange(x.size) / rate)
    return float(2 * abs(np.dot(x.astype(np.float64), phase)) / x.size)


def rejection_db(level: float) -> float:
    return float(-20 * np.log10(max(level / AMP, 1e-9)))


Resample = Callable[[np.ndarray], np.ndarray]


def worst_alias_db(down: Resample) -> float:
    """Smallest rejection of the alias of a 16 kHz stopband tone, over the last second."""
    return min(
        rejection_db(amplitude(down(tone(f, 16000, 1.2))[-8000:], 8000 - f, 8000))
        for f in STOP_TONES_16K
    )


def worst_image_db(up: Resample) -> float:
    """Smallest rejection of the image of an 8 kHz passband tone, over the last second."""
    return min(
        rejection_db(amplitude(up(tone(f, 8000, 1.2))[-16000:], 8000 - f, 16000))
        for f in PASS_TONES_8K
    )


def gain_db(resample: Resample, rate_in: int, rate_out: int) -> float:
    y = resample(tone(1000, rate_in, 1.2))[-rate_out:]
    return float(20 * np.log10(amplitude(y, 1000, rate_out) / AMP))


def framed(make: Callable[[], Callable[[bytes], bytes]], frame: int) -> Resample:
    """Whole-signal function that feeds a fresh stream in 20 ms frames."""

    def run(x: np.ndarray) -> np.ndarray:
        step = make()
        out = b"".join(step(x[i : i + frame].tobytes()) for i in range(0, x.size, frame))
        return np.frombuffer(out, np.int16)

    return run


def ours_up() -> Callable[[bytes], bytes]:
    return _core.Upsampler().process


def ours_down() -> Callable[[bytes], bytes]:
    return _core.Downsampler().process


def soxr_stream(rate_in: int, rate_out: int) -> Callable[[], Callable[[bytes], bytes]]:
    def make() -> Callable[[bytes], bytes]:
        stream = soxr.ResampleStream(rate_in, rate_out, 1, dtype="int16", quality="HQ")
        chunk = stream.resample_chunk

        def step(pcm: bytes) -> bytes:
            return chunk(np.frombuffer(pcm, np.int16)).tobytes()

        return step

    return make


def ratecv_stream(rate_in: int, rate_out: int) -> Callable[[], Callable[[bytes], bytes]]:
    def make() -> Callable[[bytes], bytes]:
        state = None
        ratecv = audioop.ratecv

        def step(pcm: bytes) -> bytes:
            nonlocal state
            out, state = ratecv(pcm, 2, 1, rate_in, rate_out, state)
            return out

        return step

    return make


needs_audioop = pytest.mark.skipif(audioop is None, reason="audioop is not available")


@pytest.fixture(scope="module")
def frames8(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    x = speech(8000, N_FRAMES * 0.02)
    return [x[i * 160 : (i + 1) * 160].tobytes() for i in range(N_FRAMES)]


@pytest.fixture(scope="module")
def frames16(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    x = speech(16000, N_FRAMES * 0.02)
    return [x[i * 320 : (i + 1) * 320].tobytes() for i in range(N_FRAMES)]


def stream_loop(step: Callable[[bytes], object], frames: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        for f in frames:
            step(f)

    return run


# --- 8 kHz -> 16 kHz, per 20 ms frame ---------------------------------------------------------


def test_up_stream_ours(bench, frames8) -> None:
    up = framed(ours_up, 160)
    images = worst_image_db(up)
    gain = gain_db(up, 8000, 16000)
    assert images >= 60, images
    assert abs(gain) <= 0.5, gain
    whole = _core.Upsampler().process(b"".join(frames8))
    assert up(np.frombuffer(b"".join(frames8), np.int16)).tobytes() == whole
    bench(
        stream_loop(ours_up(), frames8),
        per_call=N_FRAMES,
        samples=160,
        extra={"image_rejection_db": round(images, 1)},
    )


@pytest.mark.ratio_target(2.5)
def test_up_stream_soxr(bench, frames8) -> None:
    make = soxr_stream(8000, 16000)
    images = worst_image_db(framed(make, 160))
    bench(
        stream_loop(make(), frames8),
        per_call=N_FRAMES,
        samples=160,
        extra={"image_rejection_db": round(images, 1)},
    )


@needs_audioop
@pytest.mark.ratio_target(2.0)
def test_up_stream_ratecv(bench, frames8) -> None:
    make = ratecv_stream(8000, 16000)
    images = worst_image_db(framed(make, 160))
    bench(
        stream_loop(make(), frames8),
        per_call=N_FRAMES,
        samples=160,
        extra={"image_rejection_db": round(images, 1)},
    )


# --- 16 kHz -> 8 kHz, per 20 ms frame ---------------------------------------------------------


def test_down_stream_ours(bench, frames16) -> None:
    down = framed(ours_down, 320)
    aliases = worst_alias_db(down)
    gain = gain_db(down, 16000, 8000)
    five_khz = rejection_db(amplitude(down(tone(5000, 16000, 1.2))[-8000:], 3000, 8000))
    assert aliases >= 60, aliases
    assert five_khz >= 50, five_khz
    assert abs(gain) <= 0.5, gain
    whole = _core.Downsampler().process(b"".join(frames16))
    assert down(np.frombuffer(b"".join(frames16), np.int16)).tobytes() == whole
    bench(
        stream_loop(ours_down(), frames16),
        per_call=N_FRAMES,
        samples=320,
        extra={"alias_rejection_db": round(aliases, 1)},
    )


@pytest.mark.ratio_target(2.5)
def test_down_stream_soxr(bench, frames16) -> None:
    make = soxr_stream(16000, 8000)
    aliases = worst_alias_db(framed(make, 320))
    bench(
        stream_loop(make(), frames16),
        per_call=N_FRAMES,
        samples=320,
        extra={"alias_rejection_db": round(aliases, 1)},
    )


@needs_audioop
@pytest.mark.ratio_target(3.0)
def test_down_stream_ratecv(bench, frames16) -> None:
    make = ratecv_stream(16000, 8000)
    aliases = worst_alias_db(framed(make, 320))
    bench(
        stream_loop(make(), frames16),
        per_call=N_FRAMES,
        samples=320,
        extra={"alias_rejection_db": round(aliases, 1)},
    )


# --- 1 s blocks, fresh state per block (informational) --------------------------------------

N_BLOCKS = 8


@pytest.fixture(scope="module")
def blocks8(speech: Callable[[int, float], np.ndarray]) -> list[np.ndarray]:
    x = speech(8000, N_BLOCKS)
    return [x[i * 8000 : (i + 1) * 8000] for i in range(N_BLOCKS)]


@pytest.fixture(scope="module")
def blocks16(speech: Callable[[int, float], np.ndarray]) -> list[np.ndarray]:
    x = speech(16000, N_BLOCKS)
    return [x[i * 16000 : (i + 1) * 16000] for i in range(N_BLOCKS)]


def block_loop(fn: Callable[[np.ndarray], object], blocks: list[np.ndarray]) -> Callable[[], None]:
    def run() -> None:
        for b in blocks:
            fn(b)

    return run


def ours_block(cls: type[_core.Upsampler] | type[_core.Downsampler]) -> Resample:
    rs = cls()

    def run(x: np.ndarray) -> np.ndarray:
        rs.reset()
        return np.frombuffer(rs.process(x.tobytes()), np.int16)

    return run


def soxr_block(rate_in: int, rate_out: int) -> Resample:
    def run(x: np.ndarray) -> np.ndarray:
        return soxr.resample(x, rate_in, rate_out, quality="HQ")

    return run


def scipy_block(up: int, down: int) -> Resample:
    signal = pytest.importorskip("scipy.signal")

    def run(x: np.ndarray) -> np.ndarray:
        # Left as float64: rounding back to int16 would only add to the peer's time.
        return signal.resample_poly(x, up, down)

    return run


def test_up_block_ours(bench, blocks8) -> None:
    fn = ours_block(_core.Upsampler)
    images = worst_image_db(fn)
    assert images >= 60, images
    bench(block_loop(fn, blocks8), per_call=N_BLOCKS, samples=8000, unit="1 s block")


def test_up_block_soxr(bench, blocks8) -> None:
    fn = soxr_block(8000, 16000)
    extra = {"image_rejection_db": round(worst_image_db(fn), 1)}
    bench(block_loop(fn, blocks8), per_call=N_BLOCKS, samples=8000, unit="1 s block", extra=extra)


def test_up_block_scipy(bench, blocks8) -> None:
    fn = scipy_block(2, 1)
    bench(block_loop(fn, blocks8), per_call=N_BLOCKS, samples=8000, unit="1 s block")


def test_down_block_ours(bench, blocks16) -> None:
    fn = ours_block(_core.Downsampler)
    aliases = worst_alias_db(fn)
    assert aliases >= 60, aliases
    bench(block_loop(fn, blocks16), per_call=N_BLOCKS, samples=16000, unit="1 s block")


def test_down_block_soxr(bench, blocks16) -> None:
    fn = soxr_block(16000, 8000)
    extra = {"alias_rejection_db": round(worst_alias_db(fn), 1)}
    bench(block_loop(fn, blocks16), per_call=N_BLOCKS, samples=16000, unit="1 s block", extra=extra)


def test_down_block_scipy(bench, blocks16) -> None:
    fn = scipy_block(1, 2)
    bench(block_loop(fn, blocks16), per_call=N_BLOCKS, samples=16000, unit="1 s block")
