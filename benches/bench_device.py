"""The sound card edge: one device block through node._core.DevicePort against the same work
done with soxr and numpy. The 48 kHz <-> 8/16 kHz conversions alone are in bench_resample.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from node import _core
from tones import loop

soxr = pytest.importorskip("soxr")

N_FRAMES = 512
DEVICE = 48000


# --- one 5 ms device block each way, as the audio callback makes it ---------------------------


@pytest.fixture(scope="module")
def device_blocks(speech_frames: Callable[..., list[bytes]]) -> list[bytes]:
    return speech_frames(DEVICE, ms=5)


def test_exchange_ours(bench, device_blocks) -> None:
    """DevicePort.exchange: 48 kHz -> 8 kHz with gain and meter, frames to and from the engine,
    8 kHz -> 48 kHz with gain and meter; one Rust call."""
    engine = _core.Engine("127.0.0.1:0", rate=8000)
    try:
        port = engine.open_device(DEVICE, rx_gain_db=-3.0, tx_gain_db=1.0)
        assert all(len(port.exchange(b)) == len(b) for b in device_blocks[:8])
        bench(
            loop(port.exchange, device_blocks),
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
    bench(loop(step, device_blocks), per_call=N_FRAMES, samples=240, unit="5 ms block")
