"""Test tones, speech and their measurement, shared by the tests and the benchmarks."""

from __future__ import annotations

import functools
import subprocess
import tempfile
import wave
from pathlib import Path

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


@functools.lru_cache(maxsize=8)
def espeak(text: str, rate: int) -> np.ndarray:
    """espeak-ng's en-us voice saying `text` at `rate`, float64, as espeak-ng levels it."""
    from scipy.signal import resample_poly

    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        subprocess.run(
            ["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(wav), text],
            check=True,
            capture_output=True,
        )
        with wave.open(str(wav)) as w:
            native = w.getframerate()
            raw = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float64)
    out: np.ndarray = resample_poly(raw, rate, native)
    out.flags.writeable = False
    return out


def loudness(x: np.ndarray, rate: int) -> float:
    """An independent measure of a recording (int16): pyloudnorm's BS.1770 integrated loudness,
    with its own filters and gating."""
    import pyloudnorm

    return float(pyloudnorm.Meter(rate).integrated_loudness(x.astype(np.float64) / 32768.0))


def at_loudness(x: np.ndarray, rate: int, lufs: float) -> np.ndarray:
    """`x` scaled to read `lufs` by `loudness` (float; round it to int16 with `int16`)."""
    return x * 10 ** ((lufs - loudness(int16(x), rate)) / 20)


def int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)
