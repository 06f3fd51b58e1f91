"""In-band DTMF detection per member per 20 ms tick: node._core.DtmfDetector against a numpy
Goertzel bank.

This is the cost the engine adds to each member with in-band detection on (`[dtmf] inband`),
measured through the binding, so ours includes a `bytes` read and a list per call (the engine
itself pays neither). Each test streams 512 distinct 20 ms frames: speech-like audio with a
DTMF digit (70 ms tone, 70 ms gap) in every second 280 ms, the busiest input a member sends; and
silence, what most members send most of the time.

The peer is the classic detector reduced to its core (Goertzel power of the eight tones over
half-overlapping 12.75 ms windows, the strongest row and column, an energy share and a twist
test), vectorised over the eight tones; ours runs the full test list of docs/dtmf.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from node._core import DtmfDetector, dtmf_pcm
from tones import kernels, loop

N_FRAMES = 512
ROWS = (697.0, 770.0, 852.0, 941.0)
COLS = (1209.0, 1336.0, 1477.0, 1633.0)
KEYS = ("123A", "456B", "789C", "*0#D")


class NumpyDtmf:
    """A streaming Goertzel bank in numpy, digits reported on the second hit in a row."""

    def __init__(self, rate: int) -> None:
        self.hop = 51 * rate // 8000
        self.window = 2 * self.hop
        n = np.arange(self.window)
        freqs = np.array(ROWS + COLS)
        phase = 2 * np.pi * np.outer(freqs, n) / rate
        self.cos, self.sin = np.cos(phase), np.sin(phase)
        self.buf = np.zeros(0)
        self.last: str | None = None
        self.run = 0

    def process(self, frame: bytes) -> list[str]:
        self.buf = np.concatenate([self.buf, np.frombuffer(frame, np.int16).astype(np.float64)])
        pressed = []
        while len(self.buf) >= self.window:
            win = self.buf[: self.window]
            power = (self.cos @ win) ** 2 + (self.sin @ win) ** 2
            row, col = int(power[:4].argmax()), int(power[4:].argmax())
            energy = float(win @ win) * self.window / 2
            tones = power[row] + power[4 + col]
            twist = power[row] / max(power[4 + col], 1e-9)
            digit = None
            if energy > 1e3 and tones > 0.7 * energy and 0.16 < twist < 6.3:
                digit = KEYS[row][col]
            self.run = self.run + 1 if digit is not None and digit == self.last else 0
            if self.run == 1:
                pressed.append(digit)
            self.last = digit
            self.buf = self.buf[self.hop :]
        return pressed


@pytest.fixture(scope="module")
def frames(speech: Callable[[int, float], np.ndarray]) -> Callable[[int, bool], list[bytes]]:
    cache: dict[tuple[int, bool], list[bytes]] = {}

    def make(rate: int, silent: bool) -> list[bytes]:
        if (rate, silent) not in cache:
            n = rate // 50
            if silent:
                audio = np.zeros(n * N_FRAMES, np.int16)
            else:
                audio = (speech(rate, N_FRAMES / 50).astype(np.int32) // 3).astype(np.int16)
                digit = np.frombuffer(dtmf_pcm(rate, "5", -12.0, 70, 70), np.int16)
                for start in digit_starts(rate):
                    audio[start : start + len(digit)] = digit
            cache[(rate, silent)] = [audio[i : i + n].tobytes() for i in range(0, len(audio), n)]
        return cache[(rate, silent)]

    return make


def digit_starts(rate: int) -> range:
    n = rate // 50
    return range(0, n * (N_FRAMES - 7), 14 * n)


def pressed(process: Callable[[bytes], list], frames: list[bytes]) -> list:
    return [e for f in frames for e in process(f) if e == "5" or e == ("pressed", "5")]


#: Kernel name: (sample rate, silent input).
CASES = {"dtmf8k": (8000, False), "dtmf16k": (16000, False), "dtmfquiet8k": (8000, True)}


def run(
    bench: Callable[..., object], detector: Callable[[int], Any], frames: list[bytes], rate: int
) -> None:
    expected = 0 if not any(any(f) for f in frames) else len(digit_starts(rate))
    assert len(pressed(detector(rate).process, frames)) == expected
    bench(loop(detector(rate).process, frames), per_call=N_FRAMES, samples=rate // 50)


@pytest.mark.parametrize("case", kernels(CASES))
def test_dtmf_ours(bench, frames, case) -> None:
    rate, silent = case
    run(bench, DtmfDetector, frames(rate, silent), rate)


@pytest.mark.parametrize("case", kernels(CASES))
def test_dtmf_numpy(bench, frames, case) -> None:
    rate, silent = case
    run(bench, NumpyDtmf, frames(rate, silent), rate)
