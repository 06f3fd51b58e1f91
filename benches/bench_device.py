"""The sound card edge: 48 kHz <-> 8/16 kHz conversion against soxr and scipy, and one device
block through node._core.DevicePort against the same work done with soxr and numpy.

Per-frame benchmarks stream 512 consecutive 20 ms frames (960 samples at 48 kHz) through one
stateful converter, bytes in and bytes out. Block benchmarks convert 1 s blocks from a fresh
state (scipy's resample_poly has no streaming form). Kernel names: d48k8k is 48 kHz -> 8 kHz,
u8k48k is 8 kHz -> 48 kHz, and so on.
"""

from __future__ import annotations

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
    stream_loop,
    tone,
)

soxr = pytest.importorskip("soxr")

N_FRAMES = 512
N_BLOCKS = 8
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


def worst_alias_db(down: Resample, low: int) -> float:
    """Smallest rejection of a stopband tone's alias, over the last second."""
    return min(
        rejection_db(amplitude(down(tone(f, DEVICE, 1.2))[-low:], alias_of(f, low), low))
        for f in stop_tones(low)
    )


def worst_image_db(up: Resample, low: int) -> float:
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


def ours_down(low: int) -> Callable[[], Callable[[bytes], bytes]]:
    return lambda: _core.Decimator(DEVICE // low).process


def ours_up(low: int) -> Callable[[], Callable[[bytes], bytes]]:
    return lambda: _core.Interpolator(DEVICE // low).process


@pytest.fixture(scope="module")
def frames48(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    x = speech(DEVICE, N_FRAMES * 0.02)
    return [x[i * 960 : (i + 1) * 960].tobytes() for i in range(N_FRAMES)]


def low_frames(speech: Callable[[int, float], np.ndarray], low: int) -> list[bytes]:
    n = low // 50
    x = speech(low, N_FRAMES * 0.02)
    return [x[i * n : (i + 1) * n].tobytes() for i in range(N_FRAMES)]


@pytest.fixture(scope="module")
def frames8(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    return low_frames(speech, 8000)


@pytest.fixture(scope="module")
def frames16(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    return low_frames(speech, 16000)


# --- per 20 ms frame, streaming --------------------------------------------------------------


def check_ours_down(low: int, frames: list[bytes]) -> float:
    down = framed(ours_down(low), 960)
    aliases = worst_alias_db(down, low)
    gain = gain_db(down, DEVICE, low)
    assert aliases >= 90, aliases
    assert abs(gain) <= 0.01, gain
    whole = _core.Decimator(DEVICE // low).process(b"".join(frames))
    assert down(np.frombuffer(b"".join(frames), np.int16)).tobytes() == whole
    return aliases


def check_ours_up(low: int, frames: list[bytes]) -> float:
    up = framed(ours_up(low), low // 50)
    images = worst_image_db(up, low)
    gain = gain_db(up, low, DEVICE)
    assert images >= 90, images
    assert abs(gain) <= 0.01, gain
    whole = _core.Interpolator(DEVICE // low).process(b"".join(frames))
    assert up(np.frombuffer(b"".join(frames), np.int16)).tobytes() == whole
    return images


def soxr_down(low: int) -> tuple[Callable[[bytes], bytes], float]:
    make = soxr_stream(DEVICE, low)
    return make(), worst_alias_db(framed(make, 960), low)


def soxr_up(low: int) -> tuple[Callable[[bytes], bytes], float]:
    make = soxr_stream(low, DEVICE)
    return make(), worst_image_db(framed(make, low // 50), low)


def test_d48k8k_stream_ours(bench, frames48) -> None:
    aliases = check_ours_down(8000, frames48)
    stream_bench(bench, ours_down(8000)(), frames48, alias_rejection_db=aliases)


@pytest.mark.ratio_target(1.5)
def test_d48k8k_stream_soxr(bench, frames48) -> None:
    step, aliases = soxr_down(8000)
    stream_bench(bench, step, frames48, alias_rejection_db=aliases)


def test_d48k16k_stream_ours(bench, frames48) -> None:
    aliases = check_ours_down(16000, frames48)
    stream_bench(bench, ours_down(16000)(), frames48, alias_rejection_db=aliases)


@pytest.mark.ratio_target(1.5)
def test_d48k16k_stream_soxr(bench, frames48) -> None:
    step, aliases = soxr_down(16000)
    stream_bench(bench, step, frames48, alias_rejection_db=aliases)


def test_u8k48k_stream_ours(bench, frames8) -> None:
    images = check_ours_up(8000, frames8)
    stream_bench(bench, ours_up(8000)(), frames8, image_rejection_db=images)


@pytest.mark.ratio_target(1.5)
def test_u8k48k_stream_soxr(bench, frames8) -> None:
    step, images = soxr_up(8000)
    stream_bench(bench, step, frames8, image_rejection_db=images)


def test_u16k48k_stream_ours(bench, frames16) -> None:
    images = check_ours_up(16000, frames16)
    stream_bench(bench, ours_up(16000)(), frames16, image_rejection_db=images)


@pytest.mark.ratio_target(1.5)
def test_u16k48k_stream_soxr(bench, frames16) -> None:
    step, images = soxr_up(16000)
    stream_bench(bench, step, frames16, image_rejection_db=images)


# --- 1 s blocks, fresh state per block (scipy has no streaming form) -------------------------


@pytest.fixture(scope="module")
def blocks48(speech: Callable[[int, float], np.ndarray]) -> list[np.ndarray]:
    x = speech(DEVICE, N_BLOCKS)
    return [x[i * DEVICE : (i + 1) * DEVICE] for i in range(N_BLOCKS)]


@pytest.fixture(scope="module")
def blocks8(speech: Callable[[int, float], np.ndarray]) -> list[np.ndarray]:
    x = speech(8000, N_BLOCKS)
    return [x[i * 8000 : (i + 1) * 8000] for i in range(N_BLOCKS)]


def test_d48k8k_block_ours(bench, blocks48) -> None:
    fn = ours_block(_core.Decimator(6))
    assert worst_alias_db(fn, 8000) >= 90
    block_bench(bench, fn, blocks48)


def test_d48k8k_block_soxr(bench, blocks48) -> None:
    fn = soxr_block(DEVICE, 8000)
    block_bench(bench, fn, blocks48, alias_rejection_db=worst_alias_db(fn, 8000))


def test_d48k8k_block_scipy(bench, blocks48) -> None:
    pytest.importorskip("scipy")
    fn = scipy_block(1, 6)
    block_bench(bench, fn, blocks48, alias_rejection_db=worst_alias_db(fn, 8000))


def test_u8k48k_block_ours(bench, blocks8) -> None:
    fn = ours_block(_core.Interpolator(6))
    assert worst_image_db(fn, 8000) >= 90
    block_bench(bench, fn, blocks8)


def test_u8k48k_block_soxr(bench, blocks8) -> None:
    fn = soxr_block(8000, DEVICE)
    block_bench(bench, fn, blocks8, image_rejection_db=worst_image_db(fn, 8000))


def test_u8k48k_block_scipy(bench, blocks8) -> None:
    pytest.importorskip("scipy")
    fn = scipy_block(6, 1)
    block_bench(bench, fn, blocks8, image_rejection_db=worst_image_db(fn, 8000))


# --- one 5 ms device block each way, as the audio callback makes it ---------------------------


@pytest.fixture(scope="module")
def device_blocks(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    x = speech(DEVICE, N_FRAMES * 0.005)
    return [x[i * 240 : (i + 1) * 240].tobytes() for i in range(N_FRAMES)]


def test_exchange_ours(bench, device_blocks) -> None:
    """DevicePort.exchange: 48 kHz -> 8 kHz with gain and meter, frames to and from the engine,
    8 kHz -> 48 kHz with gain and meter; one Rust call."""
    engine = _core.Engine("127.0.0.1:0", rate=8000)
    try:
        port = engine.open_device(DEVICE, rx_gain_db=-3.0, tx_gain_db=1.0)
        assert all(len(port.exchange(b)) == len(b) for b in device_blocks[:8])
        bench(
            stream_loop(port.exchange, device_blocks),
            per_call=N_FRAMES,
            samples=240,
            unit="5 ms block",
        )
        port.close()
    finally:
        engine.stop()


def test_exchange_soxr(bench, device_blocks) -> None:
    """The same block's work in Python: two soxr streams, numpy gains and a peak/RMS meter."""
    down = soxr.ResampleStream(DEVICE, 8000, 1, dtype="float32", quality="HQ")
    up = soxr.ResampleStream(8000, DEVICE, 1, dtype="float32", quality="HQ")
    rx_gain, tx_gain = np.float32(10 ** (-3 / 20)), np.float32(10 ** (1 / 20))
    speaker = np.zeros(40, np.float32)
    meter = [0.0, 0.0]

    def step(block: bytes) -> bytes:
        mic = down.resample_chunk(np.frombuffer(block, np.int16).astype(np.float32)) * rx_gain
        mic16 = np.clip(np.round(mic), -32768, 32767).astype(np.int16)
        meter[0] = max(meter[0], float(np.abs(mic16).max(initial=0)))
        meter[1] += float(np.dot(mic16, mic16.astype(np.float64)))
        out = up.resample_chunk(speaker * tx_gain)
        out16 = np.zeros(240, np.int16)
        n = min(out.size, 240)
        out16[:n] = np.clip(np.round(out[:n]), -32768, 32767)
        return out16.tobytes()

    assert all(len(step(b)) == len(b) for b in device_blocks[:8])
    bench(stream_loop(step, device_blocks), per_call=N_FRAMES, samples=240, unit="5 ms block")
