"""G.711 and slin codecs of node._core against audioop and the wire byte orders."""

from __future__ import annotations

import array
import hashlib
import struct
import sys
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from node import _core

with warnings.catch_warnings():
    # audioop is deprecated in 3.11 and gone in 3.13; it is the reference where it exists.
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import audioop
    except ImportError:  # pragma: no cover - Python >= 3.13
        audioop = None

needs_audioop = pytest.mark.skipif(audioop is None, reason="audioop is not available")

ALL_PCM = array.array("h", range(-32768, 32768)).tobytes()
ALL_CODES = bytes(range(256))

# SHA-256 of audioop's output (CPython 3.11): lin2ulaw / lin2alaw over every sample
# -32768..32767 in order, ulaw2lin / alaw2lin over codes 0..255 as little-endian int16. These
# keep the bit-exactness check alive on Pythons without audioop.
LIN2ULAW_SHA256 = "81d633c9e6972a18c74a58720b96cb8ca0bdd096d4060b646dd708c3b846019a"
LIN2ALAW_SHA256 = "38488f6fd710f4686360edc4d38639f96c491595ef93f8eb8d62d5e07ca6ce7b"
ULAW2LIN_SHA256 = "3dab54339e520bb2c924826e3b72a917a2b612e9fd12fc867500f1d983a75827"
ALAW2LIN_SHA256 = "e04788d110e58ff8c70c93b8480190d973e3b67876b6119abbaec766cc75c174"


def _le(pcm: bytes) -> bytes:
    a = array.array("h", pcm)
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_encoders_match_audioop_fingerprints_for_every_input() -> None:
    assert _sha(_core.ulaw_encode(ALL_PCM)) == LIN2ULAW_SHA256
    assert _sha(_core.alaw_encode(ALL_PCM)) == LIN2ALAW_SHA256


def test_decoders_match_audioop_fingerprints_for_every_code() -> None:
    assert _sha(_le(_core.ulaw_decode(ALL_CODES))) == ULAW2LIN_SHA256
    assert _sha(_le(_core.alaw_decode(ALL_CODES))) == ALAW2LIN_SHA256


@needs_audioop
@pytest.mark.parametrize(
    ("encode", "reference"),
    [(_core.ulaw_encode, "lin2ulaw"), (_core.alaw_encode, "lin2alaw")],
    ids=["ulaw", "alaw"],
)
def test_encode_equals_audioop_for_all_65536_inputs(
    encode: Callable[[bytes], bytes], reference: str
) -> None:
    ours = encode(ALL_PCM)
    ref = getattr(audioop, reference)(ALL_PCM, 2)
    mismatches = [i - 32768 for i, (a, b) in enumerate(zip(ours, ref, strict=True)) if a != b]
    assert mismatches == []


@needs_audioop
def test_decoders_equal_audioop_for_all_256_codes() -> None:
    assert _core.ulaw_decode(ALL_CODES) == audioop.ulaw2lin(ALL_CODES, 2)
    assert _core.alaw_decode(ALL_CODES) == audioop.alaw2lin(ALL_CODES, 2)


@needs_audioop
@given(st.binary(max_size=800).filter(lambda b: len(b) % 2 == 0))
def test_random_pcm_matches_audioop(pcm: bytes) -> None:
    assert _core.ulaw_encode(pcm) == audioop.lin2ulaw(pcm, 2)
    assert _core.alaw_encode(pcm) == audioop.lin2alaw(pcm, 2)


def test_g711_round_trips() -> None:
    for code in range(256):
        pcm = _core.ulaw_decode(bytes([code]))
        # 0x7F is µ-law's "negative zero": it decodes to 0, which encodes as 0xFF.
        assert _core.ulaw_encode(pcm) == bytes([0xFF if code == 0x7F else code])
        assert _core.alaw_encode(_core.alaw_decode(bytes([code]))) == bytes([code])
    # Decoding the encoding is the quantiser: idempotent after one pass.
    once = _core.ulaw_decode(_core.ulaw_encode(ALL_PCM))
    assert _core.ulaw_decode(_core.ulaw_encode(once)) == once
    once = _core.alaw_decode(_core.alaw_encode(ALL_PCM))
    assert _core.alaw_decode(_core.alaw_encode(once)) == once


def test_empty_input_gives_empty_output() -> None:
    for fn in (
        _core.ulaw_encode,
        _core.ulaw_decode,
        _core.alaw_encode,
        _core.alaw_decode,
        _core.slin_to_wire,
        _core.slin_from_wire,
        _core.slin16_to_wire,
        _core.slin16_from_wire,
    ):
        assert fn(b"") == b""


def test_decode_many_equals_one_call_per_frame() -> None:
    rng = np.random.default_rng(7)
    frames = [rng.integers(0, 256, 160, dtype=np.uint8).tobytes() for _ in range(40)]
    frames.append(b"")
    frames.append(b"\x00")
    assert _core.ulaw_decode_many(frames) == [_core.ulaw_decode(f) for f in frames]
    assert _core.alaw_decode_many(frames) == [_core.alaw_decode(f) for f in frames]
    assert _core.ulaw_decode_many([]) == []
    # Any iterable of bytes-like objects works, not only a list.
    assert _core.ulaw_decode_many(tuple(frames)) == _core.ulaw_decode_many(frames)
    assert _core.alaw_decode_many(bytearray(f) for f in frames) == _core.alaw_decode_many(frames)


def test_decode_many_rejects_non_buffers() -> None:
    with pytest.raises(TypeError):
        _core.ulaw_decode_many([b"\x00", "text"])
    with pytest.raises(TypeError):
        _core.ulaw_decode_many(5)


def test_slin_is_big_endian_on_the_wire() -> None:
    pcm = array.array("h", [0x0102, -2, -32768, 32767]).tobytes()
    assert _core.slin_to_wire(pcm) == struct.pack(">4h", 0x0102, -2, -32768, 32767)
    assert _core.slin_from_wire(struct.pack(">4h", 0x0102, -2, -32768, 32767)) == pcm


def test_slin16_is_little_endian_on_the_wire() -> None:
    pcm = array.array("h", [0x0102, -2, -32768, 32767]).tobytes()
    assert _core.slin16_to_wire(pcm) == struct.pack("<4h", 0x0102, -2, -32768, 32767)
    assert _core.slin16_from_wire(struct.pack("<4h", 0x0102, -2, -32768, 32767)) == pcm


def test_slin_round_trips_every_sample() -> None:
    assert _core.slin_from_wire(_core.slin_to_wire(ALL_PCM)) == ALL_PCM
    assert _core.slin16_from_wire(_core.slin16_to_wire(ALL_PCM)) == ALL_PCM
    everything = range(-32768, 32768)
    assert _core.slin_to_wire(ALL_PCM) == struct.pack(">65536h", *everything)
    assert _core.slin16_to_wire(ALL_PCM) == struct.pack("<65536h", *everything)


def test_odd_byte_counts_raise_codec_error() -> None:
    assert issubclass(_core.CodecError, ValueError)
    for fn in (
        _core.ulaw_encode,
        _core.alaw_encode,
        _core.slin_to_wire,
        _core.slin16_to_wire,
        _core.slin_from_wire,
        _core.slin16_from_wire,
    ):
        with pytest.raises(_core.CodecError, match="even byte count"):
            fn(b"\x00\x01\x02")
    # A G.711 payload has one byte per sample, so any length decodes.
    assert len(_core.ulaw_decode(b"\x00\x01\x02")) == 6
    assert len(_core.alaw_decode(b"\x00\x01\x02")) == 6


def test_any_buffer_is_accepted() -> None:
    samples = [0, 1, -1, 1000, -1000, 32767, -32768, 12345]
    pcm = array.array("h", samples).tobytes()
    want = _core.ulaw_encode(pcm)
    for obj in (
        bytearray(pcm),
        memoryview(pcm),
        array.array("h", samples),
        np.array(samples, dtype=np.int16),
        memoryview(pcm).cast("h"),
    ):
        assert _core.ulaw_encode(obj) == want, type(obj)
    codes = bytes(range(0, 256, 7))
    assert _core.alaw_decode(bytearray(codes)) == _core.alaw_decode(codes)
    assert _core.alaw_decode(np.frombuffer(codes, np.uint8)) == _core.alaw_decode(codes)


@pytest.mark.parametrize("bad", ["text", 5, None, [1, 2]])
def test_non_buffers_raise_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        _core.ulaw_encode(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.slin16_from_wire(bad)  # type: ignore[arg-type]
