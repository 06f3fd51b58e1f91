"""Signals, measurements and call shapes shared by the benchmarks.

Imported by the bench modules beside it (pytest puts this directory on sys.path, and the
repository root through `pythonpath` in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import pytest
from tests.signals import AMP, amplitude, tone

__all__ = [
    "AMP",
    "Resample",
    "amplitude",
    "block_bench",
    "framed",
    "gain_db",
    "kernels",
    "loop",
    "ours_block",
    "rejection_db",
    "scipy_block",
    "soxr_block",
    "soxr_stream",
    "stream_bench",
    "tone",
]

#: A whole-signal resampling function: int16 in, int16 (or float for scipy) out.
Resample = Callable[[np.ndarray], np.ndarray]


class Stateful(Protocol):
    """One of node._core's streaming converters."""

    def process(self, pcm: bytes) -> bytes: ...
    def reset(self) -> None: ...


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


def kernels(cases: dict[str, Any], target: float | None = None) -> list[Any]:
    """Parameters for a test run once per kernel, from {kernel name: value}: each case's id is
    its kernel's name (which the `bench` fixture reads), marked with the peer's ratio target if
    it has one."""
    marks = [pytest.mark.ratio_target(target)] if target is not None else []
    return [pytest.param(value, id=kernel, marks=marks) for kernel, value in cases.items()]


def loop(step: Callable[[Any], object], items: Sequence[Any]) -> Callable[[], None]:
    """The timed call of most benchmarks: `step` once on each item, in order."""

    def run() -> None:
        for item in items:
            step(item)

    return run


def stream_bench(
    bench: Any, step: Callable[[bytes], object], frames: list[bytes], **db: float
) -> None:
    """Time `step` over consecutive frames of one stream; `db` (alias or image rejection) goes
    into the JSON."""
    extra = {key: round(value, 1) for key, value in db.items()}
    bench(loop(step, frames), per_call=len(frames), samples=len(frames[0]) // 2, extra=extra)


def block_bench(
    bench: Any, fn: Callable[[np.ndarray], object], blocks: list[np.ndarray], **db: float
) -> None:
    """Time `fn` over 1 s blocks, each from a fresh state; `db` goes into the JSON."""
    extra = {key: round(value, 1) for key, value in db.items()}
    bench(
        loop(fn, blocks),
        per_call=len(blocks),
        samples=blocks[0].size,
        unit="1 s block",
        extra=extra,
    )


def ours_block(converter: Stateful) -> Resample:
    """Whole-signal function that resets `converter` and feeds it the signal in one piece."""

    def run(x: np.ndarray) -> np.ndarray:
        converter.reset()
        return np.frombuffer(converter.process(x.tobytes()), np.int16)

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
