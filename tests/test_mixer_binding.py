"""node._core.Conference: one decode, mix-minus, encode tick against a numpy reference."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node import _core

with warnings.catch_warnings():
    # audioop is deprecated in 3.11 and gone in 3.13; it is the reference where it exists.
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import audioop
    except ImportError:  # pragma: no cover - Python >= 3.13
        audioop = None

Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def _swap(pcm: bytes, order: str) -> bytes:
    """Native-endian int16 bytes to `order` ("<" or ">") and back (the same operation)."""
    return np.frombuffer(pcm, np.int16).astype(np.dtype(np.int16).newbyteorder(order)).tobytes()


# (decode wire -> native int16 bytes, encode native int16 bytes -> wire) per format bit. G.711
# uses audioop where it exists; elsewhere our own codec functions, which tests/test_codec.py
# pins to audioop's output by fingerprint, so the mixing is still checked independently.
if audioop is not None:
    G711: dict[int, Codec] = {
        0x4: (lambda w: audioop.ulaw2lin(w, 2), lambda p: audioop.lin2ulaw(p, 2)),
        0x8: (lambda w: audioop.alaw2lin(w, 2), lambda p: audioop.lin2alaw(p, 2)),
    }
else:  # pragma: no cover - Python >= 3.13
    G711 = {
        0x4: (_core.ulaw_decode, _core.ulaw_encode),
        0x8: (_core.alaw_decode, _core.alaw_encode),
    }
CODECS: dict[int, Codec] = {
    **G711,
    0x40: (lambda w: _swap(w, ">"), lambda p: _swap(p, ">")),
    0x8000: (lambda w: _swap(w, "<"), lambda p: _swap(p, "<")),
}
SAMPLES = {0x4: 160, 0x8: 160, 0x40: 160, 0x8000: 320}
BYTES = {0x4: 160, 0x8: 160, 0x40: 320, 0x8000: 640}


def reference(frames: Sequence[bytes | None], fmt: int, mix_minus: bool) -> list[bytes | None]:
    """Decode, sum in int32, take away the member's own signal, clip to int16, encode."""
    decode, encode = CODECS[fmt]
    pcm = [
        None if f is None else np.frombuffer(decode(f), np.int16).astype(np.int32) for f in frames
    ]
    talkers = [p for p in pcm if p is not None]
    total = np.sum(talkers, axis=0) if talkers else np.zeros(SAMPLES[fmt], np.int32)
    out: list[bytes | None] = []
    for p in pcm:
        own = mix_minus and p is not None
        if len(talkers) - int(own) == 0:
            out.append(None)
            continue
        mix = total - p if own else total
        out.append(encode(np.clip(mix, -32768, 32767).astype(np.int16).tobytes()))
    return out


def random_frames(
    rng: np.random.Generator, n: int, fmt: int, p_silent: float = 0.3
) -> list[bytes | None]:
    """Frames of loud noise (sums clip) or quiet speech-level noise (sums do not), or None."""
    _, encode = CODECS[fmt]
    frames: list[bytes | None] = []
    for _ in range(n):
        if rng.random() < p_silent:
            frames.append(None)
            continue
        level = 30000 if rng.random() < 0.5 else 800
        pcm = rng.integers(-level, level + 1, SAMPLES[fmt]).astype(np.int16)
        frames.append(encode(pcm.tobytes()))
    return frames


@pytest.mark.parametrize("fmt", sorted(CODECS))
@pytest.mark.parametrize("mix_minus", [True, False])
def test_every_size_from_1_to_40_matches_the_reference(fmt: int, mix_minus: bool) -> None:
    rng = np.random.default_rng(fmt * 2 + mix_minus)
    for n in range(1, 41):
        conf = _core.Conference(n, fmt, mix_minus)
        # Several ticks on one conference: nothing may leak from one tick into the next.
        for _ in range(4):
            frames = random_frames(rng, n, fmt)
            assert conf.tick(frames) == reference(frames, fmt, mix_minus), (n, frames)


@settings(max_examples=150, deadline=None)
@given(
    codes=st.lists(st.one_of(st.none(), st.binary(min_size=160, max_size=160)), max_size=24),
    mix_minus=st.booleans(),
)
def test_arbitrary_ulaw_frames_match_the_reference(
    codes: list[bytes | None], mix_minus: bool
) -> None:
    if not codes:
        codes = [None]
    conf = _core.Conference(len(codes), 0x4, mix_minus)
    assert conf.tick(codes) == reference(codes, 0x4, mix_minus)


def test_who_hears_what() -> None:
    a, b = bytes([0x10]) * 160, bytes([0xA0]) * 160
    conf = _core.Conference(3)
    assert conf.tick([None, None, None]) == [None, None, None]
    assert conf.talkers == 0
    # A lone talker hears nobody; the others hear it.
    out = conf.tick([a, None, None])
    assert out[0] is None
    assert out[1] == out[2] == reference([a, None, None], 0x4, True)[1]
    assert conf.talkers == 1
    # Full mix: the lone talker hears itself too.
    conf.mix_minus = False
    assert conf.mix_minus is False
    assert conf.tick([a, None, None]) == reference([a, None, None], 0x4, False)
    conf.mix_minus = True
    assert conf.tick([a, b, None]) == reference([a, b, None], 0x4, True)


def test_listeners_hearing_the_same_mix_share_one_bytes_object() -> None:
    rng = np.random.default_rng(7)
    frames = random_frames(rng, 6, 0x4, p_silent=0.0)
    frames[3] = frames[5] = None
    out = _core.Conference(6).tick(frames)
    assert out == reference(frames, 0x4, True)
    assert out[3] is out[5]
    assert out[0] is not out[1]
    full = _core.Conference(6, mix_minus=False).tick(frames)
    assert all(f is full[0] for f in full)


def test_accepts_any_iterable_of_buffers() -> None:
    rng = np.random.default_rng(3)
    frames = random_frames(rng, 5, 0x4, p_silent=0.2)
    want = reference(frames, 0x4, True)
    conf = _core.Conference(5)
    assert conf.tick(tuple(frames)) == want
    assert conf.tick(f for f in frames) == want
    as_buffers = [None if f is None else memoryview(bytearray(f)) for f in frames]
    assert conf.tick(as_buffers) == want


def test_properties_and_repr() -> None:
    conf = _core.Conference(4, 0x8000, mix_minus=False)
    assert (conf.members, conf.codec_format, conf.rate) == (4, 0x8000, 16000)
    assert (conf.frame_len, conf.frame_bytes) == (320, 640)
    assert repr(conf) == "Conference(members=4, codec_format=0x8000, mix_minus=False)"
    ulaw = _core.Conference(2)
    assert (ulaw.codec_format, ulaw.rate, ulaw.frame_len, ulaw.frame_bytes) == (0x4, 8000, 160, 160)
    assert ulaw.mix_minus is True


def test_mixer_error_is_a_value_error() -> None:
    assert issubclass(_core.MixerError, ValueError)


LOUD = bytes([0x80]) * 160  # µ-law +32124


@pytest.mark.parametrize(
    "frames",
    [
        pytest.param([LOUD, None], id="too-few"),
        pytest.param([LOUD, None, None, None], id="too-many"),
        pytest.param([], id="empty"),
        pytest.param((f for f in [LOUD, None, None, None]), id="too-many-generator"),
        pytest.param([LOUD, b"\xff" * 159, None], id="short-frame"),
        pytest.param([LOUD, None, b"\xff" * 320], id="slin-sized-frame"),
    ],
)
def test_bad_ticks_raise_mixer_error_and_the_next_tick_is_clean(frames: object) -> None:
    conf = _core.Conference(3)
    with pytest.raises(_core.MixerError):
        conf.tick(frames)
    # A frame decoded before the error must not be heard in the next tick.
    assert conf.tick([None, None, None]) == [None, None, None]
    quiet = [bytes([0x7E]) * 160, None, None]
    assert conf.tick(quiet) == reference(quiet, 0x4, True)


def test_half_applied_tick_leaves_no_trace() -> None:
    conf = _core.Conference(3)
    with pytest.raises(_core.MixerError, match="member 2"):
        conf.tick([bytes([0x80]) * 160, bytes([0x90]) * 160, b"\x00"])
    assert conf.tick([None, None, None]) == [None, None, None]


def test_wrong_item_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="int"):
        _core.Conference(2).tick([None, 5])


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0,), "1 to 32768"),
        ((32769,), "1 to 32768"),
        ((2, 0x2), "0x2"),
        ((2, 0x4 | 0x8), "0xc"),
    ],
)
def test_bad_construction(args: tuple[int, ...], match: str) -> None:
    with pytest.raises(_core.MixerError, match=match):
        _core.Conference(*args)


@pytest.mark.skipif(sys.byteorder != "little", reason="wire order check written for LE hosts")
def test_slin_wire_orders() -> None:
    # One member talking a ramp: the listener gets it back in the codec's own byte order.
    pcm = np.arange(160, dtype=np.int16) * 100
    be = pcm.astype(">i2").tobytes()
    assert _core.Conference(2, 0x40).tick([be, None]) == [None, be]
    pcm16 = np.arange(320, dtype=np.int16) * 50
    le = pcm16.astype("<i2").tobytes()
    assert _core.Conference(2, 0x8000).tick([le, None]) == [None, le]
