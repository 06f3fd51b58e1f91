"""Test tones and their measurement, shared by the resampler tests and the benchmarks."""

from __future__ import annotations

import numpy as np

AMP = 16000.0


def tone(freq: float, rate: int, seconds: float, amp: float = AMP) -> np.ndarray:
    n = np.arange(round(rate * seconds))
    return np.round(amp * np.sin(2 * np.pi * freq * n / rate)).astype(np.int16)


def amplitude(x: np.ndarray, freq: float, rate: int) -> float:
    """Amplitude of one frequency component; `x` must span a whole number of periods."""
    phase = np.exp(-2j * np.pi * freq * np.arange(x.size) / rate)
    return float(2 * abs(np.dot(x.astype(np.float64), phase)) / x.size)


def db(ratio: float) -> float:
    # An alias far below one LSB can round away entirely; report that as -180 dB, not -inf.
    return float(20 * np.log10(max(ratio, 1e-9)))
