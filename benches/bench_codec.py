"""G.711 and slin per 20 ms frame: node._core against audioop and numpy.

Every call shape is bytes in, bytes out, cycling through 512 distinct 160-sample frames.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

from node import _core
from tones import kernels, loop

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    audioop = pytest.importorskip("audioop", reason="audioop (Python <= 3.12) is the reference")

N_FRAMES = 512
FRAME = 160


@pytest.fixture(scope="module")
def pcm_frames(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    x = speech(8000, N_FRAMES * FRAME / 8000)
    return [x[i * FRAME : (i + 1) * FRAME].tobytes() for i in range(N_FRAMES)]


@pytest.fixture(scope="module")
def coded(pcm_frames: list[bytes]) -> dict[str, list[bytes]]:
    """The speech frames in each law, encoded by the reference."""
    return {law: [LAWS[law].ref_encode(f, 2) for f in pcm_frames] for law in LAWS}


class Law(NamedTuple):
    """One G.711 law: our kernels and the reference's."""

    encode: Callable[[bytes], bytes]
    decode: Callable[[bytes], bytes]
    decode_many: Callable[[list[bytes]], list[bytes]]
    ref_encode: Callable[[bytes, int], bytes]
    ref_decode: Callable[[bytes, int], bytes]


LAWS = {
    "ulaw": Law(
        _core.ulaw_encode,
        _core.ulaw_decode,
        _core.ulaw_decode_many,
        audioop.lin2ulaw,
        audioop.ulaw2lin,
    ),
    "alaw": Law(
        _core.alaw_encode,
        _core.alaw_decode,
        _core.alaw_decode_many,
        audioop.lin2alaw,
        audioop.alaw2lin,
    ),
}
ENCODE = {f"{law}_encode": law for law in LAWS}
DECODE = {f"{law}_decode": law for law in LAWS}
DECODE32 = {f"{law}_decode32": law for law in LAWS}

ALL_PCM = np.arange(-32768, 32768, dtype=np.int16).tobytes()
# numpy peers: lookup tables taken from the reference, indexed by the sample's bit pattern.
ENC_LUT = {law: np.frombuffer(c.ref_encode(ALL_PCM, 2), np.uint8) for law, c in LAWS.items()}
DEC_LUT = {
    law: np.frombuffer(c.ref_decode(bytes(range(256)), 2), np.int16).copy()
    for law, c in LAWS.items()
}


def numpy_encoder(law: str) -> Callable[[bytes], bytes]:
    lut = ENC_LUT[law]

    def enc(pcm: bytes) -> bytes:
        # Offset by 32768 so the index is the sample's rank in -32768..32767.
        idx = np.frombuffer(pcm, np.int16).astype(np.int32) + 32768
        return lut[idx].tobytes()

    return enc


def numpy_decoder(law: str) -> Callable[[bytes], bytes]:
    lut = DEC_LUT[law]

    def dec(data: bytes) -> bytes:
        return lut[np.frombuffer(data, np.uint8)].tobytes()

    return dec


def per_frame(
    bench: Callable[..., object], fn: Callable[[bytes], object], frames: list[bytes]
) -> None:
    bench(loop(fn, frames), per_call=N_FRAMES, samples=FRAME)


# --- encode -----------------------------------------------------------------------------


@pytest.mark.parametrize("law", kernels(ENCODE))
def test_encode_ours(bench, pcm_frames, coded, law) -> None:
    enc = LAWS[law].encode
    assert [enc(f) for f in pcm_frames] == coded[law]
    per_frame(bench, enc, pcm_frames)


@pytest.mark.parametrize("law", kernels(ENCODE, target=6.0))
def test_encode_audioop(bench, pcm_frames, law) -> None:
    ref = LAWS[law].ref_encode
    per_frame(bench, lambda f: ref(f, 2), pcm_frames)


@pytest.mark.parametrize("law", kernels(ENCODE))
def test_encode_numpy(bench, pcm_frames, coded, law) -> None:
    enc = numpy_encoder(law)
    assert [enc(f) for f in pcm_frames] == coded[law]
    per_frame(bench, enc, pcm_frames)


# --- decode, one frame per call -----------------------------------------------------------


def check_decoder(dec: Callable[[bytes], bytes], law: str, frames: list[bytes]) -> None:
    ref = LAWS[law].ref_decode
    assert [dec(f) for f in frames] == [ref(f, 2) for f in frames]


@pytest.mark.parametrize("law", kernels(DECODE))
def test_decode_ours(bench, coded, law) -> None:
    dec = LAWS[law].decode
    check_decoder(dec, law, coded[law])
    per_frame(bench, dec, coded[law])


@pytest.mark.parametrize("law", kernels(DECODE, target=1.0))
def test_decode_audioop(bench, coded, law) -> None:
    ref = LAWS[law].ref_decode
    per_frame(bench, lambda f: ref(f, 2), coded[law])


@pytest.mark.parametrize("law", kernels(DECODE, target=10.0))
def test_decode_numpy(bench, coded, law) -> None:
    dec = numpy_decoder(law)
    check_decoder(dec, law, coded[law])
    per_frame(bench, dec, coded[law])


# --- decode, 32 frames per call (e.g. one mixer tick of 32 legs) ---------------------------


def groups_of_32(frames: list[bytes]) -> list[list[bytes]]:
    return [frames[i : i + 32] for i in range(0, len(frames), 32)]


def per_group(
    bench: Callable[..., object], fn: Callable[[list[bytes]], object], groups: list[list[bytes]]
) -> None:
    bench(loop(fn, groups), per_call=len(groups), samples=32 * FRAME, unit="32 frames")


@pytest.mark.parametrize("law", kernels(DECODE32))
def test_decode32_ours(bench, coded, law) -> None:
    groups = groups_of_32(coded[law])
    many, ref = LAWS[law].decode_many, LAWS[law].ref_decode
    assert [many(g) for g in groups] == [[ref(f, 2) for f in g] for g in groups]
    per_group(bench, many, groups)


@pytest.mark.parametrize("law", kernels(DECODE32, target=2.5))
def test_decode32_audioop(bench, coded, law) -> None:
    ref = LAWS[law].ref_decode
    per_group(bench, lambda g: [ref(f, 2) for f in g], groups_of_32(coded[law]))


# --- slin: host order to big-endian wire bytes ----------------------------------------------


def test_slin_wire_ours(bench, pcm_frames) -> None:
    to_wire = _core.slin_to_wire
    want = [np.frombuffer(f, np.int16).astype(">i2").tobytes() for f in pcm_frames]
    assert [to_wire(f) for f in pcm_frames] == want
    per_frame(bench, to_wire, pcm_frames)


def test_slin_wire_audioop(bench, pcm_frames) -> None:
    byteswap = audioop.byteswap
    per_frame(bench, lambda f: byteswap(f, 2), pcm_frames)


def test_slin_wire_numpy(bench, pcm_frames) -> None:
    per_frame(bench, lambda f: np.frombuffer(f, np.int16).astype(">i2").tobytes(), pcm_frames)
