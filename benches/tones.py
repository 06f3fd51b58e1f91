"""Signals, measurements and call shapes shared by the benchmarks.

Imported by the bench modules beside it (pytest puts this directory on sys.path, and the
repository root through `pythonpath` in pyproject.toml).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pytest
from tests.signals import AMP, amplitude, tone

__all__ = [
    "AMP",
    "Conversion",
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


@dataclass(frozen=True)
class Conversion:
    """One streaming rate conversion under test: ours, its rates and what it must meet."""

    rate_in: int
    rate_out: int
    #: A fresh converter of ours.
    ours: Callable[[], Stateful]
    #: The worst alias (down) or image (up) rejection, in dB, of a whole-signal function.
    rejection: Callable[[Resample], float]
    #: Least rejection and largest 1 kHz gain error, in dB, ours must meet.
    floor_db: float
    max_gain_db: float

    @property
    def frame(self) -> int:
        """Samples in a 20 ms frame of the input."""
        return self.rate_in // 50

    def step(self) -> Callable[[bytes], bytes]:
        """A fresh converter of ours, bytes in and out."""
        return self.ours().process

    def measure(self, resample: Resample) -> dict[str, float]:
        """`resample`'s rejection, named for the benchmark JSON."""
        kind = "alias" if self.rate_out < self.rate_in else "image"
        return {f"{kind}_rejection_db": self.rejection(resample)}

    def check_ours(self, frames: list[bytes]) -> dict[str, float]:
        """Assert our streaming converter's rejection and gain, and that frames fed one by one
        give what the whole signal gives at once; returns the rejection for the JSON."""
        stream = framed(self.step, self.frame)
        db = self.measure(stream)
        gain = gain_db(stream, self.rate_in, self.rate_out)
        assert min(db.values()) >= self.floor_db, db
        assert abs(gain) <= self.max_gain_db, gain
        joined = b"".join(frames)
        assert stream(np.frombuffer(joined, np.int16)).tobytes() == self.step()(joined)
        return db

    def bench_ours_stream(self, bench: Any, frames: list[bytes]) -> None:
        db = self.check_ours(frames)
        stream_bench(bench, self.step(), frames, **db)

    def bench_soxr_stream(self, bench: Any, frames: list[bytes]) -> None:
        make = soxr_stream(self.rate_in, self.rate_out)
        stream_bench(bench, make(), frames, **self.measure(framed(make, self.frame)))

    def bench_ours_block(self, bench: Any, blocks: list[np.ndarray]) -> None:
        fn = ours_block(self.ours())
        db = self.measure(fn)
        assert min(db.values()) >= self.floor_db, db
        block_bench(bench, fn, blocks)

    def bench_soxr_block(self, bench: Any, blocks: list[np.ndarray]) -> None:
        fn = soxr_block(self.rate_in, self.rate_out)
        block_bench(bench, fn, blocks, **self.measure(fn))

    def bench_scipy_block(self, bench: Any, blocks: list[np.ndarray]) -> None:
        pytest.importorskip("scipy")
        g = math.gcd(self.rate_in, self.rate_out)
        fn = scipy_block(self.rate_out // g, self.rate_in // g)
        block_bench(bench, fn, blocks, **self.measure(fn))


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
