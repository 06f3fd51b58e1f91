"""Signals, measurements and call shapes shared by the resampler benchmarks.

Imported by the bench modules beside it (pytest puts this directory on sys.path, and the
repository root through `pythonpath` in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tests.signals import AMP, amplitude, tone

__all__ = [
    "AMP",
    "Resample",
    "amplitude",
    "block_loop",
    "framed",
    "gain_db",
    "rejection_db",
    "scipy_block",
    "soxr_block",
    "soxr_stream",
    "stream_loop",
    "tone",
]

#: A whole-signal resampling function: int16 in, int16 (or float for scipy) out.
Resample = Callable[[np.ndarray], np.ndarray]


def rejection_db(level: float) -> float:
    return float(-20 * np.log10(max(level / AMP, 1e-9)))


def gain_db(resample: Resample, rate_in: int, rate_out: int) -> float:
    """Level change of a 1 kHz tone, over the last second."""
    y = resample(tone(1000, rate_in, 1.2))[-rate_out:]
    return float(20 * np.log10(amplitude(y, 1000, rate_out) / AMP))


def framed(make: Callable[[], Callable[[bytes], bytes]], frame: int) -> Resample:
    """Whole-signal function that feeds a fresh stream in frames of `frame` samples."""

    def run(x: np.ndarray) -> np.ndarray:
        step = make()
        out = b"".join(step(x[i : i + frame].tobytes()) for i in range(0, x.size, frame))
        return np.frombuffer(out, np.int16)

    return run


def stream_loop(step: Callable[[bytes], object], frames: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        for f in frames:
            step(f)

    return run


def block_loop(fn: Callable[[np.ndarray], object], blocks: list[np.ndarray]) -> Callable[[], None]:
    def run() -> None:
        for b in blocks:
            fn(b)

    return run


def soxr_stream(rate_in: int, rate_out: int) -> Callable[[], Callable[[bytes], bytes]]:
    """A fresh soxr HQ stream per call of the result, bytes in and out."""
    import soxr

    def make() -> Callable[[bytes], bytes]:
        stream = soxr.ResampleStream(rate_in, rate_out, 1, dtype="int16", quality="HQ")
        chunk = stream.resample_chunk

        def step(pcm: bytes) -> bytes:
            return chunk(np.frombuffer(pcm, np.int16)).tobytes()

        return step

    return make


def soxr_block(rate_in: int, rate_out: int) -> Resample:
    import soxr

    def run(x: np.ndarray) -> np.ndarray:
        return soxr.resample(x, rate_in, rate_out, quality="HQ")

    return run


def scipy_block(up: int, down: int) -> Resample:
    from scipy import signal

    def run(x: np.ndarray) -> np.ndarray:
        # Left as float64: rounding back to int16 would only add to the peer's time.
        return signal.resample_poly(x, up, down)

    return run
