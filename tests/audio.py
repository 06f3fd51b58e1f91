"""Real audio for tests, from independent tools: DTMF tones from sox's `synth` (two sines per
digit), speech from espeak-ng, white noise at a chosen SNR. Everything is int16 numpy at the
rate asked for."""

from __future__ import annotations

import subprocess

import numpy as np

from tests.conftest import require_tool

__all__ = ["KEYPAD", "digit_tones", "espeak", "silence", "sox_sine", "with_noise"]

#: Row and column frequencies of every DTMF key (ITU-T Q.23).
KEYPAD = {
    key: (row_hz, col_hz)
    for row_hz, keys in zip((697, 770, 852, 941), ("123A", "456B", "789C", "*0#D"), strict=True)
    for key, col_hz in zip(keys, (1209, 1336, 1477, 1633), strict=True)
}


def sox_sine(rate: int, freq_hz: float, ms: int) -> np.ndarray:
    """A unit sine (peak 1.0, float) of `ms` from sox's synth."""
    require_tool("sox")
    raw_format = ["-r", str(rate), "-b", "16", "-e", "signed-integer", "-c", "1", "-t", "raw"]
    synth = ["synth", f"{ms / 1000}", "sine", str(freq_hz), "vol", "0.5"]
    raw = subprocess.run(
        ["sox", "-n", *raw_format, "-", *synth],
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(raw, dtype=np.int16).astype(np.float64) / (0.5 * 32767)


def silence(rate: int, ms: int) -> np.ndarray:
    return np.zeros(rate * ms // 1000, dtype=np.int16)


def digit_tones(
    rate: int,
    digits: str,
    *,
    on_ms: int = 70,
    off_ms: int = 70,
    level_dbfs: float = -10.0,
    twist_db: float = 0.0,
) -> np.ndarray:
    """`digits` as sox sine pairs: `on_ms` tones, `off_ms` gaps, the two-tone peak at
    `level_dbfs`, the low tone `twist_db` above the high one."""
    peak = 32767 * 10 ** (level_dbfs / 20)
    ratio = 10 ** (twist_db / 20)
    high_amp = peak / (1 + ratio)
    low_amp = peak - high_amp
    parts = []
    for digit in digits:
        low, high = KEYPAD[digit]
        pair = low_amp * sox_sine(rate, low, on_ms) + high_amp * sox_sine(rate, high, on_ms)
        parts += [np.round(pair).astype(np.int16), silence(rate, off_ms)]
    return np.concatenate(parts)


def with_noise(pcm: np.ndarray, snr_db: float, signal: np.ndarray, seed: int = 1) -> np.ndarray:
    """`pcm` plus white noise `snr_db` below the power of `signal` (the tones alone)."""
    power = float(np.mean(signal.astype(np.float64) ** 2))
    noise = np.random.default_rng(seed).normal(0, np.sqrt(power / 10 ** (snr_db / 10)), len(pcm))
    return np.clip(np.round(pcm + noise), -32768, 32767).astype(np.int16)


def espeak(text: str, rate: int) -> np.ndarray:
    """espeak-ng speaking `text` (22050 Hz), converted to `rate` by sox."""
    require_tool("espeak-ng")
    require_tool("sox")
    wav = subprocess.run(["espeak-ng", "--stdout", text], check=True, capture_output=True).stdout
    raw_format = ["-r", str(rate), "-b", "16", "-e", "signed-integer", "-c", "1", "-t", "raw"]
    raw = subprocess.run(
        ["sox", "-t", "wav", "-", *raw_format, "-"],
        input=wav,
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(raw, dtype=np.int16)
