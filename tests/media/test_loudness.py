"""The media path's loudness meter and normaliser (`rust/loudness.rs`) held against an
independent BS.1770 meter: pyloudnorm, with its "DeMan" K-weighting filters (the same analogue
design, implemented apart from ours in numpy/scipy) and its own loudness formula.

The meter's short-term loudness of 3 s of speech is one BS.1770 block of 3 s: pyloudnorm's
integrated loudness with `block_size=3.0` over the same 3 s (a single block, which both gates
pass). Speech with pauses must read what pyloudnorm reads on the same speech without them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyloudnorm
import pytest
from scipy.signal import chirp

from node._core import (
    DtmfDetector,
    LoudnessMeter,
    dtmf_pcm,
    normalize_pcm,
    ulaw_decode,
    ulaw_encode,
)
from tests.signals import at_loudness, espeak, int16, loudness

RATES = (8000, 16000, 48000)
TEXT = (
    "Amateur radio operators link their repeaters across the world. "
    "Please stand by while the net control station checks in the next caller."
)


def reference(x: np.ndarray, rate: int) -> float:
    """pyloudnorm's loudness of `x` (int16) as one block."""
    meter = pyloudnorm.Meter(rate, filter_class="DeMan", block_size=len(x) / rate)
    return float(meter.integrated_loudness(x.astype(np.float64) / 32768.0))


def reference_speech(x: np.ndarray, rate: int) -> float:
    """The loudness of the speech in `x` by the rule docs/media.md gives, on pyloudnorm's
    K-weighting: 100 ms blocks, each speech when above -70 LUFS and within 20 LU of the speech
    before it; the last 30 speech blocks' mean square."""
    meter = pyloudnorm.Meter(rate, filter_class="DeMan")
    y = x.astype(np.float64) / 32768.0
    for f in meter._filters.values():
        y = f.apply_filter(y)
    block = rate // 10
    speech: list[float] = []
    for at in range(0, len(y) - block + 1, block):
        ms = float(np.mean(y[at : at + block] ** 2))
        gate = -70.0
        if speech:
            gate = max(gate, -0.691 + 10 * np.log10(np.mean(speech[-30:])) - 20)
        if ms > 0 and -0.691 + 10 * np.log10(ms) > gate:
            speech.append(ms)
    return -0.691 + 10 * float(np.log10(np.mean(speech[-30:])))


def ours(x: np.ndarray, rate: int) -> dict:
    meter = LoudnessMeter(rate)
    # Fed in uneven pieces, as a network delivers it.
    for at in range(0, len(x), 997):
        meter.feed(x[at : at + 997].tobytes())
    return meter.reading()


@pytest.fixture(scope="module")
def speech() -> Callable[[int], np.ndarray]:
    """espeak-ng speech at `rate`, float, unscaled (about 9 s)."""
    return lambda rate: espeak(TEXT, rate)


def signals(rate: int, speech: Callable[[int], np.ndarray]) -> dict[str, np.ndarray]:
    """3 s of each test signal at `rate`, at several levels."""
    n = 3 * rate
    t = np.arange(n) / rate
    rng = np.random.default_rng(rate)
    white = rng.normal(0, 1, n)
    # Pink-ish: white noise through a one-pole low-pass.
    pink = np.zeros(n)
    for i in range(1, n):
        pink[i] = 0.98 * pink[i - 1] + white[i]
    talk = speech(rate)
    start = int(1.0 * rate)
    out = {
        "white -20": white * 32768 * 10 ** (-20 / 20),
        "white -40": white * 32768 * 10 ** (-40 / 20),
        "pink -25": pink / pink.std() * 32768 * 10 ** (-25 / 20),
        "sine 100 Hz": 12000 * np.sin(2 * np.pi * 100 * t),
        "sine 997 Hz": 20000 * np.sin(2 * np.pi * 997 * t),
        "sine 3 kHz": 5000 * np.sin(2 * np.pi * 3000 * t),
        "chirp 50-3.5k": 9000 * chirp(t, 50, t[-1], 3500),
        "speech": talk[start : start + n] / np.abs(talk).max() * 20000,
        "speech quiet": talk[start : start + n] / np.abs(talk).max() * 600,
        "speech clipped": np.clip(
            talk[start : start + n] / np.abs(talk).max() * 90000, -32768, 32767
        ),
    }
    if rate == 48000:
        out["sine 12 kHz"] = 8000 * np.sin(2 * np.pi * 12000 * t)
    return {name: int16(x) for name, x in out.items()}


@pytest.mark.parametrize("rate", RATES)
def test_the_meter_reads_what_pyloudnorm_reads(
    rate: int, speech: Callable[[int], np.ndarray]
) -> None:
    for name, x in signals(rate, speech).items():
        # Speech has pauses between its words, which the meter leaves out.
        want = reference_speech(x, rate) if name.startswith("speech") else reference(x, rate)
        got = ours(x, rate)
        assert got["lufs"] == pytest.approx(want, abs=0.001), (rate, name, got, want)
        peak = float(np.abs(x.astype(np.int32)).max())
        assert got["peak_dbfs"] == pytest.approx(20 * np.log10(peak / 32768), abs=0.01)
        assert got["clipped"] == int(np.count_nonzero(np.abs(x.astype(np.int32)) >= 32124))
    # And the check the standard gives: a full-scale 997 Hz sine reads -3.01 LUFS at 48 kHz.
    if rate == 48000:
        full = int16(32767 * np.sin(2 * np.pi * 997 * np.arange(3 * rate) / rate))
        assert ours(full, rate)["lufs"] == pytest.approx(-3.01, abs=0.01)


@pytest.mark.parametrize("rate", RATES)
def test_pauses_are_left_out(rate: int) -> None:
    """Three 1 s bursts of noise at different levels with 1.5 s of silence between them (100 ms
    blocks, whole): the meter reads the three bursts together, as pyloudnorm reads them joined."""
    rng = np.random.default_rng(7)
    bursts = [int16(rng.normal(0, 32768 * 10 ** (db / 20), rate)) for db in (-22, -28, -25)]
    gap = np.zeros(int(1.5 * rate), np.int16)
    x = np.concatenate([bursts[0], gap, bursts[1], gap, bursts[2], gap, gap])
    got = ours(x, rate)
    want = reference(np.concatenate(bursts), rate)
    assert got["lufs"] == pytest.approx(want, abs=0.05), (got, want)
    assert not got["speech"]
    # Without the gate the silence would have pulled it down by 10 log10(3 / 7.5) = -4 LU.
    assert reference(x, rate) < want - 3.5


def test_nothing_is_read_before_400_ms_of_speech() -> None:
    meter = LoudnessMeter(8000)
    meter.feed(int16(np.full(3000, 1000.0)).tobytes())
    assert meter.reading()["lufs"] is None
    with pytest.raises(ValueError, match="accepted: 8000, 16000, 48000"):
        LoudnessMeter(44100)


@pytest.mark.parametrize("rate", (8000, 16000))
def test_the_normaliser_brings_quiet_and_hot_voices_to_the_target(
    rate: int, speech: Callable[[int], np.ndarray]
) -> None:
    talk = speech(rate)
    target = -30.0
    quiet = int16(at_loudness(talk, rate, target - 12))
    # Hot: 6 dB over the target after its peaks were clipped at the source.
    hot = at_loudness(talk, rate, target + 6)
    ceiling = np.abs(hot).max() / 4
    hot = int16(at_loudness(np.clip(hot, -ceiling, ceiling), rate, target + 6))
    out = {}
    for name, x in (("quiet", quiet), ("hot", hot)):
        # The station says it twice: the second time the voice is known.
        y, gain = normalize_pcm(np.tile(x, 2).tobytes(), rate, target, 15.0)
        y = np.frombuffer(y, np.int16)
        first, second = y[: len(x)], y[len(x) :]
        out[name] = loudness(second, rate)
        assert loudness(first, rate) == pytest.approx(target, abs=1.0), name
        assert out[name] == pytest.approx(target, abs=0.5), (name, gain)
        assert np.abs(y.astype(np.int32)).max() < 32767
    assert out["quiet"] == pytest.approx(out["hot"], abs=0.5)


def test_speech_at_the_target_passes_with_pesq_unchanged(
    speech: Callable[[int], np.ndarray],
) -> None:
    from pesq import pesq

    rate = 8000
    talk = int16(at_loudness(speech(rate), rate, -30.0))
    coded = np.frombuffer(ulaw_decode(ulaw_encode(talk.tobytes())), np.int16)
    y, gain = normalize_pcm(coded.tobytes(), rate)
    y = np.frombuffer(y, np.int16)
    delay = 8  # the limiter's 1 ms look-ahead
    aligned = np.concatenate([y[delay:], np.zeros(delay, np.int16)])
    before = pesq(rate, talk, coded, "nb")
    after = pesq(rate, talk, aligned, "nb")
    assert abs(gain) < 1.0
    assert after == pytest.approx(before, abs=0.02), (before, after)


@pytest.mark.parametrize("rate", (8000, 16000))
def test_dtmf_passes_at_its_own_level_and_decodes(
    rate: int, speech: Callable[[int], np.ndarray]
) -> None:
    """A quiet station (the normaliser lifting it by 12 dB) types a command between words: the
    digits decode from what the normaliser lets through, at the level they were sent."""
    talk = int16(at_loudness(speech(rate), rate, -42.0))
    frame = rate // 50
    digits = "*3 2000"
    tones = np.frombuffer(dtmf_pcm(rate, digits.replace(" ", ""), -14.0, 80, 80), np.int16)
    x = np.concatenate([talk, np.zeros(frame * 5, np.int16), tones, np.zeros(frame * 10, np.int16)])
    x = np.pad(x, (0, -len(x) % frame))
    y, gain = normalize_pcm(x.tobytes(), rate, -30.0, 15.0)
    assert gain > 9.0
    y = np.frombuffer(y, np.int16)
    detector = DtmfDetector(rate)
    pressed = [
        d
        for at in range(0, len(y), frame)
        for kind, d in detector.process(y[at : at + frame].tobytes())
        if kind == "pressed"
    ]
    assert "".join(pressed) == digits.replace(" ", "")
    # The tones left at the level they came with (the voice's 12 dB did not reach them).
    start = len(talk) + frame * 5
    sent = tones.astype(np.float64)
    got = y[start + 8 : start + 8 + len(tones)].astype(np.float64)
    level = 10 * np.log10(np.mean(got**2) / np.mean(sent**2))
    assert abs(level) < 1.5, level
