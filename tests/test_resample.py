"""Streaming 8 kHz <-> 16 kHz resamplers of node._core, measured with tones."""

from __future__ import annotations

import array
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node import _core
from tests.signals import AMP, amplitude, db, tone


def up(x: np.ndarray) -> np.ndarray:
    return np.frombuffer(_core.Upsampler().process(x.tobytes()), np.int16)


def down(x: np.ndarray) -> np.ndarray:
    return np.frombuffer(_core.Downsampler().process(x.tobytes()), np.int16)


def steady_up(x8: np.ndarray) -> np.ndarray:
    """One second of 16 kHz output after 0.1 s of settling."""
    return up(x8)[1600:17600]


def steady_down(x16: np.ndarray) -> np.ndarray:
    return down(x16)[800:8800]


def test_1khz_survives_within_half_a_db_both_ways() -> None:
    gain_up = db(amplitude(steady_up(tone(1000, 8000, 1.1)), 1000, 16000) / AMP)
    gain_down = db(amplitude(steady_down(tone(1000, 16000, 1.1)), 1000, 8000) / AMP)
    assert abs(gain_up) < 0.5, gain_up
    assert abs(gain_down) < 0.5, gain_down


@pytest.mark.parametrize("freq", [100, 300, 700, 1500, 2500, 3000, 3400])
def test_passband_is_flat(freq: int) -> None:
    # Design ripple is ±0.0011 dB; allow for the int16 rounding of the test tones.
    gain_up = db(amplitude(steady_up(tone(freq, 8000, 1.1)), freq, 16000) / AMP)
    gain_down = db(amplitude(steady_down(tone(freq, 16000, 1.1)), freq, 8000) / AMP)
    assert abs(gain_up) < 0.01, gain_up
    assert abs(gain_down) < 0.01, gain_down


def test_5khz_is_attenuated_50db_going_down() -> None:
    # 5 kHz sampled at 16 kHz folds onto 3 kHz at 8 kHz.
    y = steady_down(tone(5000, 16000, 1.1))
    assert -db(amplitude(y, 3000, 8000) / AMP) >= 50


def test_stopband_sweep_rejects_aliases_60db() -> None:
    worst = min(
        -db(amplitude(steady_down(tone(f, 16000, 1.1)), 8000 - f, 8000) / AMP)
        for f in range(4600, 8000, 50)
    )
    assert worst >= 60, worst


def test_stopband_sweep_rejects_images_60db() -> None:
    # Interpolating a tone at f leaves an image at 8000 - f; it lies in the stopband for
    # every passband tone up to 3.4 kHz.
    worst = min(
        -db(amplitude(steady_up(tone(f, 8000, 1.1)), 8000 - f, 16000) / AMP)
        for f in range(50, 3401, 50)
    )
    assert worst >= 60, worst


def test_delay_property_and_impulse_position() -> None:
    assert _core.Upsampler().delay == 33.0
    assert _core.Downsampler().delay == 16.5
    impulse = np.zeros(64, np.int16)
    impulse[0] = 10000
    y = up(impulse)
    assert int(np.argmax(y)) == 33
    assert y[33] == 10000
    # Up then down is a pure delay of 33 samples at 8 kHz for a passband signal.
    x = tone(1000, 8000, 0.1)
    back = down(up(x))
    assert np.max(np.abs(back[100:].astype(int) - x[100 - 33 : -33].astype(int))) <= 2


def _random_signal(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-32768, 32768, n).astype(np.int16)


def test_20ms_frames_equal_one_block() -> None:
    x8 = _random_signal(8000, 1)
    u = _core.Upsampler()
    framed = b"".join(u.process(x8[i : i + 160].tobytes()) for i in range(0, x8.size, 160))
    assert framed == _core.Upsampler().process(x8.tobytes())
    x16 = _random_signal(16000, 2)
    d = _core.Downsampler()
    framed = b"".join(d.process(x16[i : i + 320].tobytes()) for i in range(0, x16.size, 320))
    assert framed == _core.Downsampler().process(x16.tobytes())


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 1200),
    cuts=st.lists(st.integers(0, 1200), max_size=8),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_split_equals_one_block(n: int, cuts: list[int], seed: int) -> None:
    x = _random_signal(n, seed)
    points = sorted({c for c in cuts if c <= n} | {0, n})
    pieces = [x[a:b].tobytes() for a, b in itertools.pairwise(points)]
    u, d = _core.Upsampler(), _core.Downsampler()
    assert b"".join(u.process(p) for p in pieces) == _core.Upsampler().process(x.tobytes())
    assert b"".join(d.process(p) for p in pieces) == _core.Downsampler().process(x.tobytes())


def test_no_click_at_frame_edges() -> None:
    # Every output sample of a framed tone, frame edges included, stays within a few LSB of
    # the ideal delayed tone; a click would be a large local error.
    x8 = tone(1000, 8000, 0.2)
    u = _core.Upsampler()
    y = np.frombuffer(
        b"".join(u.process(x8[i : i + 160].tobytes()) for i in range(0, x8.size, 160)), np.int16
    )
    k = np.arange(y.size)
    ideal = AMP * np.sin(2 * np.pi * 1000 * (k - 33) / 16000)
    assert np.max(np.abs(y[200:] - ideal[200:])) < 3
    x16 = tone(1000, 16000, 0.2)
    d = _core.Downsampler()
    y = np.frombuffer(
        b"".join(d.process(x16[i : i + 320].tobytes()) for i in range(0, x16.size, 320)), np.int16
    )
    k = np.arange(y.size)
    ideal = AMP * np.sin(2 * np.pi * 1000 * (2 * k - 33) / 16000)
    assert np.max(np.abs(y[100:] - ideal[100:])) < 3


def test_full_scale_input_saturates() -> None:
    square = np.where((np.arange(640) // 8) % 2 == 0, 32767, -32768).astype(np.int16)
    y = up(square).astype(int)
    assert y.max() == 32767 and y.min() == -32768
    # Saturation, not wrap-around: no sample sits on the wrong side of zero mid-plateau.
    plateau_hi = (np.arange(1280) // 16) % 2 == 0
    middle = (np.arange(1280) % 16 >= 6) & (np.arange(1280) % 16 <= 9)
    settled = np.arange(1280) >= 200
    assert np.all(y[plateau_hi & middle & settled] > 20000)


def test_reset_and_pending_sample() -> None:
    x = _random_signal(500, 3)
    u = _core.Upsampler()
    u.process(x.tobytes())
    u.reset()
    assert u.process(x.tobytes()) == _core.Upsampler().process(x.tobytes())
    d = _core.Downsampler()
    assert len(d.process(x[:3].tobytes())) == 2  # one output, one sample left pending
    assert d.process(b"") == b""
    rest = d.process(x[3:].tobytes())
    assert len(rest) == 2 * ((x.size - 2) // 2)
    d.reset()
    assert d.process(x.tobytes()) == _core.Downsampler().process(x.tobytes())


def test_odd_byte_count_raises() -> None:
    with pytest.raises(_core.CodecError):
        _core.Upsampler().process(b"\x00\x01\x02")
    with pytest.raises(_core.CodecError):
        _core.Downsampler().process(b"\x00")


def test_buffers_are_accepted() -> None:
    x = _random_signal(320, 4)
    want = _core.Upsampler().process(x.tobytes())
    for obj in (x, bytearray(x.tobytes()), memoryview(x.tobytes()), array.array("h", x.tolist())):
        assert _core.Upsampler().process(obj) == want
    with pytest.raises(TypeError):
        _core.Downsampler().process("abc")  # type: ignore[arg-type]


def test_repr_names_the_direction() -> None:
    assert "16000" in repr(_core.Upsampler())
    assert "8000" in repr(_core.Downsampler())
