"""G.711 and slin per 20 ms frame: node._core against audioop and numpy.

Every call shape is bytes in, bytes out, cycling through 512 distinct 160-sample frames.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

from node import _core

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
def ulaw_frames(pcm_frames: list[bytes]) -> list[bytes]:
    return [audioop.lin2ulaw(f, 2) for f in pcm_frames]


@pytest.fixture(scope="module")
def alaw_frames(pcm_frames: list[bytes]) -> list[bytes]:
    return [audioop.lin2alaw(f, 2) for f in pcm_frames]


ALL_PCM = np.arange(-32768, 32768, dtype=np.int16).tobytes()
# numpy peers: lookup tables taken from the reference, indexed by the sample's bit pattern.
ENC_LUT = {
    "ulaw": np.frombuffer(audioop.lin2ulaw(ALL_PCM, 2), np.uint8),
    "alaw": np.frombuffer(audioop.lin2alaw(ALL_PCM, 2), np.uint8),
}
DEC_LUT = {
    "ulaw": np.frombuffer(audioop.ulaw2lin(bytes(range(256)), 2), np.int16).copy(),
    "alaw": np.frombuffer(audioop.alaw2lin(bytes(range(256)), 2), np.int16).copy(),
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


def loop(fn: Callable[[bytes], object], items: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        for item in items:
            fn(item)

    return run


# --- encode -----------------------------------------------------------------------------


def test_ulaw_encode_ours(bench, pcm_frames, ulaw_frames) -> None:
    enc = _core.ulaw_encode
    assert [enc(f) for f in pcm_frames] == ulaw_frames
    bench(loop(enc, pcm_frames), per_call=N_FRAMES, samples=FRAME)


@pytest.mark.ratio_target(6.0)
def test_ulaw_encode_audioop(bench, pcm_frames) -> None:
    lin2ulaw = audioop.lin2ulaw
    bench(loop(lambda f: lin2ulaw(f, 2), pcm_frames), per_call=N_FRAMES, samples=FRAME)


def test_ulaw_encode_numpy(bench, pcm_frames, ulaw_frames) -> None:
    enc = numpy_encoder("ulaw")
    assert [enc(f) for f in pcm_frames] == ulaw_frames
    bench(loop(enc, pcm_frames), per_call=N_FRAMES, samples=FRAME)


def test_alaw_encode_ours(bench, pcm_frames, alaw_frames) -> None:
    enc = _core.alaw_encode
    assert [enc(f) for f in pcm_frames] == alaw_frames
    bench(loop(enc, pcm_frames), per_call=N_FRAMES, samples=FRAME)


@pytest.mark.ratio_target(6.0)
def test_alaw_encode_audioop(bench, pcm_frames) -> None:
    lin2alaw = audioop.lin2alaw
    bench(loop(lambda f: lin2alaw(f, 2), pcm_frames), per_call=N_FRAMES, samples=FRAME)


def test_alaw_encode_numpy(bench, pcm_frames, alaw_frames) -> None:
    enc = numpy_encoder("alaw")
    assert [enc(f) for f in pcm_frames] == alaw_frames
    bench(loop(enc, pcm_frames), per_call=N_FRAMES, samples=FRAME)


# --- decode, one frame per call -----------------------------------------------------------


def test_ulaw_decode_ours(bench, ulaw_frames) -> None:
    dec = _core.ulaw_decode
    assert [dec(f) for f in ulaw_frames] == [audioop.ulaw2lin(f, 2) for f in ulaw_frames]
    bench(loop(dec, ulaw_frames), per_call=N_FRAMES, samples=FRAME)


@pytest.mark.ratio_target(1.0)
def test_ulaw_decode_audioop(bench, ulaw_frames) -> None:
    ulaw2lin = audioop.ulaw2lin
    bench(loop(lambda f: ulaw2lin(f, 2), ulaw_frames), per_call=N_FRAMES, samples=FRAME)


@pytest.mark.ratio_target(10.0)
def test_ulaw_decode_numpy(bench, ulaw_frames) -> None:
    dec = numpy_decoder("ulaw")
    assert [dec(f) for f in ulaw_frames] == [audioop.ulaw2lin(f, 2) for f in ulaw_frames]
    bench(loop(dec, ulaw_frames), per_call=N_FRAMES, samples=FRAME)


def test_alaw_decode_ours(bench, alaw_frames) -> None:
    dec = _core.alaw_decode
    assert [dec(f) for f in alaw_frames] == [audioop.alaw2lin(f, 2) for f in alaw_frames]
    bench(loop(dec, alaw_frames), per_call=N_FRAMES, samples=FRAME)


@pytest.mark.ratio_target(1.0)
def test_alaw_decode_audioop(bench, alaw_frames) -> None:
    alaw2lin = audioop.alaw2lin
    bench(loop(lambda f: alaw2lin(f, 2), alaw_frames), per_call=N_FRAMES, samples=FRAME)


@pytest.mark.ratio_target(10.0)
def test_alaw_decode_numpy(bench, alaw_frames) -> None:
    dec = numpy_decoder("alaw")
    assert [dec(f) for f in alaw_frames] == [audioop.alaw2lin(f, 2) for f in alaw_frames]
    bench(loop(dec, alaw_frames), per_call=N_FRAMES, samples=FRAME)


# --- decode, 32 frames per call (e.g. one mixer tick of 32 legs) ---------------------------


def groups_of_32(frames: list[bytes]) -> list[list[bytes]]:
    return [frames[i : i + 32] for i in range(0, len(frames), 32)]


def test_ulaw_decode32_ours(bench, ulaw_frames) -> None:
    groups = groups_of_32(ulaw_frames)
    many = _core.ulaw_decode_many
    assert [many(g) for g in groups] == [[audioop.ulaw2lin(f, 2) for f in g] for g in groups]
    bench(loop(many, groups), per_call=len(groups), samples=32 * FRAME, unit="32 frames")


@pytest.mark.ratio_target(2.5)
def test_ulaw_decode32_audioop(bench, ulaw_frames) -> None:
    groups = groups_of_32(ulaw_frames)
    ulaw2lin = audioop.ulaw2lin
    bench(
        loop(lambda g: [ulaw2lin(f, 2) for f in g], groups),
        per_call=len(groups),
        samples=32 * FRAME,
        unit="32 frames",
    )


def test_alaw_decode32_ours(bench, alaw_frames) -> None:
    groups = groups_of_32(alaw_frames)
    many = _core.alaw_decode_many
    assert [many(g) for g in groups] == [[audioop.alaw2lin(f, 2) for f in g] for g in groups]
    bench(loop(many, groups), per_call=len(groups), samples=32 * FRAME, unit="32 frames")


@pytest.mark.ratio_target(2.5)
def test_alaw_decode32_audioop(bench, alaw_frames) -> None:
    groups = groups_of_32(alaw_frames)
    alaw2lin = audioop.alaw2lin
    bench(
        loop(lambda g: [alaw2lin(f, 2) for f in g], groups),
        per_call=len(groups),
        samples=32 * FRAME,
        unit="32 frames",
    )


# --- slin: host order to big-endian wire bytes ----------------------------------------------


def test_slin_wire_ours(bench, pcm_frames) -> None:
    to_wire = _core.slin_to_wire
    want = [np.frombuffer(f, np.int16).astype(">i2").tobytes() for f in pcm_frames]
    assert [to_wire(f) for f in pcm_frames] == want
    bench(loop(to_wire, pcm_frames), per_call=N_FRAMES, samples=FRAME)


def test_slin_wire_audioop(bench, pcm_frames) -> None:
    byteswap = audioop.byteswap
    bench(loop(lambda f: byteswap(f, 2), pcm_frames), per_call=N_FRAMES, samples=FRAME)


def test_slin_wire_numpy(bench, pcm_frames) -> None:
    bench(
        loop(lambda f: np.frombuffer(f, np.int16).astype(">i2").tobytes(), pcm_frames),
        per_call=N_FRAMES,
        samples=FRAME,
    )
