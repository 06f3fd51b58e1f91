"""Rate conversion: node._core against soxr, audioop.ratecv and scipy, between the codecs'
8 kHz and 16 kHz, and at the sound card edge between 48 kHz and 8/16 kHz.

Per-frame benchmarks stream 512 consecutive 20 ms frames (160 samples at 8 kHz, 320 at 16 kHz,
960 at 48 kHz) through one stateful converter, bytes in and bytes out. Block benchmarks convert
1 s blocks from a fresh state (informational for 8 <-> 16 kHz, where the node never resamples
in blocks; scipy's resample_poly has no streaming form). Kernel names: up and down are 8 kHz ->
16 kHz and back; d48k8k is 48 kHz -> 8 kHz, u8k48k is 8 kHz -> 48 kHz, and so on.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest

from node import _core
from tones import (
    Conversion,
    Resample,
    amplitude,
    framed,
    kernels,
    rejection_db,
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


# --- 8 kHz <-> 16 kHz ------------------------------------------------------------------------


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


#: What ours must meet each way: rejection and 1 kHz gain error, in dB.
FLOORS = {"floor_db": 60, "max_gain_db": 0.5}
UP = Conversion(8000, 16000, _core.Upsampler, worst_image_db, **FLOORS)
DOWN = Conversion(16000, 8000, _core.Downsampler, worst_alias_db, **FLOORS)


# --- 48 kHz <-> 8/16 kHz, the sound card edge -------------------------------------------------

DEVICE = 48000

#: (low rate, factor, passband edge, stopband edge) per conversion.
CONVERSIONS = {8000: (6, 3400, 4600), 16000: (3, 7000, 9000)}


def stop_tones(low: int) -> list[float]:
    """48 kHz stopband tones: the edge, and 0.5 kHz steps to the top (off the low-rate grid)."""
    _, _, stop = CONVERSIONS[low]
    return [stop, *np.arange(stop + 525, DEVICE / 2, 500)]


def alias_of(f: float, low: int) -> float:
    a = f % low
    return low - a if a > low / 2 else a


def device_alias_db(down: Resample, low: int) -> float:
    """Smallest rejection of a stopband tone's alias, over the last second."""
    return min(
        rejection_db(amplitude(down(tone(f, DEVICE, 1.2))[-low:], alias_of(f, low), low))
        for f in stop_tones(low)
    )


def device_image_db(up: Resample, low: int) -> float:
    """Smallest rejection of the images of passband tones, over the last second."""
    passband = CONVERSIONS[low][1]
    worst = np.inf
    for f in (300, 1000, passband):
        y = up(tone(f, low, 1.2))[-DEVICE:]
        images = [c + s * f for c in range(low, DEVICE // 2 + f, low) for s in (-1, 1)]
        worst = min(
            worst, *(rejection_db(amplitude(y, i, DEVICE)) for i in images if i < DEVICE / 2)
        )
    return float(worst)


#: What ours must meet at the device edge, each way.
DEVICE_FLOORS = {"floor_db": 90, "max_gain_db": 0.01}


def device_down(low: int) -> Conversion:
    """The device's input: 48 kHz to `low`."""
    alias = partial(device_alias_db, low=low)
    return Conversion(DEVICE, low, partial(_core.Decimator, DEVICE // low), alias, **DEVICE_FLOORS)


def device_up(low: int) -> Conversion:
    """The device's output: `low` to 48 kHz."""
    image = partial(device_image_db, low=low)
    return Conversion(
        low, DEVICE, partial(_core.Interpolator, DEVICE // low), image, **DEVICE_FLOORS
    )


STREAMS = {"up_stream": UP, "down_stream": DOWN}
DEVICE_STREAMS = {
    "d48k8k_stream": device_down(8000),
    "d48k16k_stream": device_down(16000),
    "u8k48k_stream": device_up(8000),
    "u16k48k_stream": device_up(16000),
}
BLOCKS = {
    "up_block": UP,
    "down_block": DOWN,
    "d48k8k_block": device_down(8000),
    "u8k48k_block": device_up(8000),
}


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


# --- per 20 ms frame, streaming ---------------------------------------------------------------


@pytest.mark.parametrize("conv", kernels(STREAMS | DEVICE_STREAMS))
def test_stream_ours(bench, speech_frames, conv: Conversion) -> None:
    conv.bench_ours_stream(bench, speech_frames(conv.rate_in))


def test_down_stream_rejects_5khz() -> None:
    """The alias of 5 kHz (at 3 kHz, inside the passband) is held to 50 dB on its own."""
    down = framed(DOWN.step, DOWN.frame)
    five_khz = rejection_db(amplitude(down(tone(5000, 16000, 1.2))[-8000:], 3000, 8000))
    assert five_khz >= 50, five_khz


@pytest.mark.parametrize("conv", kernels(STREAMS, target=2.5) + kernels(DEVICE_STREAMS, target=1.5))
def test_stream_soxr(bench, speech_frames, conv: Conversion) -> None:
    conv.bench_soxr_stream(bench, speech_frames(conv.rate_in))


@needs_audioop
@pytest.mark.parametrize(
    "conv", kernels({"up_stream": UP}, target=2.0) + kernels({"down_stream": DOWN}, target=3.0)
)
def test_stream_ratecv(bench, speech_frames, conv: Conversion) -> None:
    make = ratecv_stream(conv.rate_in, conv.rate_out)
    frames = speech_frames(conv.rate_in)
    stream_bench(bench, make(), frames, **conv.measure(framed(make, conv.frame)))


# --- 1 s blocks, fresh state per block --------------------------------------------------------


@pytest.mark.parametrize("conv", kernels(BLOCKS))
def test_block_ours(bench, speech_blocks, conv: Conversion) -> None:
    conv.bench_ours_block(bench, speech_blocks(conv.rate_in))


@pytest.mark.parametrize("conv", kernels(BLOCKS))
def test_block_soxr(bench, speech_blocks, conv: Conversion) -> None:
    conv.bench_soxr_block(bench, speech_blocks(conv.rate_in))


@pytest.mark.parametrize("conv", kernels(BLOCKS))
def test_block_scipy(bench, speech_blocks, conv: Conversion) -> None:
    conv.bench_scipy_block(bench, speech_blocks(conv.rate_in))
