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
from tones import (
    Resample,
    amplitude,
    block_bench,
    framed,
    gain_db,
    ours_block,
    rejection_db,
    scipy_block,
    soxr_block,
    soxr_stream,
    stream_bench,
    tone,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import audioop
    except ImportError:  # pragma: no cover - Python >= 3.13
        audioop = None

soxr = pytest.importorskip("soxr")

N_FRAMES = 512
STOP_TONES_16K = (4600, 5000, 6000, 7000, 7900)  # aliases when going down
PASS_TONES_8K = (3400, 3000, 2000, 1000, 100)  # images at 8000 - f when going up


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


def ours_up() -> Callable[[bytes], bytes]:
    return _core.Upsampler().process


def ours_down() -> Callable[[bytes], bytes]:
    return _core.Downsampler().process


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


# --- 8 kHz -> 16 kHz, per 20 ms frame ---------------------------------------------------------


def test_up_stream_ours(bench, frames8) -> None:
    up = framed(ours_up, 160)
    images = worst_image_db(up)
    gain = gain_db(up, 8000, 16000)
    assert images >= 60, images
    assert abs(gain) <= 0.5, gain
    whole = _core.Upsampler().process(b"".join(frames8))
    assert up(np.frombuffer(b"".join(frames8), np.int16)).tobytes() == whole
    stream_bench(bench, ours_up(), frames8, image_rejection_db=images)


@pytest.mark.ratio_target(2.5)
def test_up_stream_soxr(bench, frames8) -> None:
    make = soxr_stream(8000, 16000)
    images = worst_image_db(framed(make, 160))
    stream_bench(bench, make(), frames8, image_rejection_db=images)


@needs_audioop
@pytest.mark.ratio_target(2.0)
def test_up_stream_ratecv(bench, frames8) -> None:
    make = ratecv_stream(8000, 16000)
    images = worst_image_db(framed(make, 160))
    stream_bench(bench, make(), frames8, image_rejection_db=images)


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
    stream_bench(bench, ours_down(), frames16, alias_rejection_db=aliases)


@pytest.mark.ratio_target(2.5)
def test_down_stream_soxr(bench, frames16) -> None:
    make = soxr_stream(16000, 8000)
    aliases = worst_alias_db(framed(make, 320))
    stream_bench(bench, make(), frames16, alias_rejection_db=aliases)


@needs_audioop
@pytest.mark.ratio_target(3.0)
def test_down_stream_ratecv(bench, frames16) -> None:
    make = ratecv_stream(16000, 8000)
    aliases = worst_alias_db(framed(make, 320))
    stream_bench(bench, make(), frames16, alias_rejection_db=aliases)


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


def test_up_block_ours(bench, blocks8) -> None:
    fn = ours_block(_core.Upsampler())
    images = worst_image_db(fn)
    assert images >= 60, images
    block_bench(bench, fn, blocks8)


def test_up_block_soxr(bench, blocks8) -> None:
    fn = soxr_block(8000, 16000)
    block_bench(bench, fn, blocks8, image_rejection_db=worst_image_db(fn))


def test_up_block_scipy(bench, blocks8) -> None:
    pytest.importorskip("scipy")
    fn = scipy_block(2, 1)
    block_bench(bench, fn, blocks8)


def test_down_block_ours(bench, blocks16) -> None:
    fn = ours_block(_core.Downsampler())
    aliases = worst_alias_db(fn)
    assert aliases >= 60, aliases
    block_bench(bench, fn, blocks16)


def test_down_block_soxr(bench, blocks16) -> None:
    fn = soxr_block(16000, 8000)
    block_bench(bench, fn, blocks16, alias_rejection_db=worst_alias_db(fn))


def test_down_block_scipy(bench, blocks16) -> None:
    pytest.importorskip("scipy")
    fn = scipy_block(1, 2)
    block_bench(bench, fn, blocks16)
