"""GSM 06.10 full rate: node._core's Rust codec against libgsm (Debian `libgsm1`, the codec
Asterisk and SvxLink use) through ctypes, per 160-sample frame and per batch of 512 frames.

Both sides are checked bit for bit against each other first. The libgsm side pays a ctypes call
per frame (about 0.3 µs, small beside a frame's 10-20 µs of coding); our batch is one call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from node._core import GsmDecoder, GsmEncoder
from tones import loop

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.libgsm import FRAME_SAMPLES, LibGsm, load  # noqa: E402

N_FRAMES = 512
LIB = load()
if LIB is None:
    pytest.skip("libgsm1 is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def pcm_frames(speech: Callable[[int, float], np.ndarray]) -> list[bytes]:
    x = speech(8000, N_FRAMES * FRAME_SAMPLES / 8000)
    return [x[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES].tobytes() for i in range(N_FRAMES)]


@pytest.fixture(scope="module")
def gsm_frames(pcm_frames: list[bytes]) -> list[bytes]:
    enc = LibGsm(LIB)
    return [enc.encode(f) for f in pcm_frames]


def per_frame(
    bench: Callable[..., object], fn: Callable[[bytes], object], items: list[bytes]
) -> None:
    bench(loop(fn, items), per_call=N_FRAMES, samples=FRAME_SAMPLES)


def per_batch(bench: Callable[..., object], fn: Callable[[], object]) -> None:
    bench(fn, per_call=N_FRAMES, samples=FRAME_SAMPLES)


# --- encode, one frame per call ---------------------------------------------------------------


def test_encode_ours(bench, pcm_frames, gsm_frames) -> None:
    enc = GsmEncoder()
    assert [enc.encode(f) for f in pcm_frames] == gsm_frames
    per_frame(bench, GsmEncoder().encode, pcm_frames)


@pytest.mark.ratio_target(1.0)
def test_encode_libgsm(bench, pcm_frames) -> None:
    per_frame(bench, LibGsm(LIB).encode, pcm_frames)


# --- decode, one frame per call ---------------------------------------------------------------


def test_decode_ours(bench, gsm_frames) -> None:
    dec, ref = GsmDecoder(), LibGsm(LIB)
    assert [dec.decode(f) for f in gsm_frames] == [ref.decode(f) for f in gsm_frames]
    per_frame(bench, GsmDecoder().decode, gsm_frames)


@pytest.mark.ratio_target(1.0)
def test_decode_libgsm(bench, gsm_frames) -> None:
    per_frame(bench, LibGsm(LIB).decode, gsm_frames)


# --- 512 frames per call (a batch: a file, a test, a second of four legs) ---------------------


def test_encode512_ours(bench, pcm_frames, gsm_frames) -> None:
    pcm = b"".join(pcm_frames)
    assert GsmEncoder().encode(pcm) == b"".join(gsm_frames)
    enc = GsmEncoder()
    per_batch(bench, lambda: enc.encode(pcm))


@pytest.mark.ratio_target(1.0)
def test_encode512_libgsm(bench, pcm_frames) -> None:
    enc = LibGsm(LIB)
    pcm = np.frombuffer(b"".join(pcm_frames), np.int16)
    per_batch(bench, lambda: enc.encode_all(pcm))


def test_decode512_ours(bench, gsm_frames) -> None:
    data = b"".join(gsm_frames)
    assert GsmDecoder().decode(data) == LibGsm(LIB).decode_all(data).tobytes()
    dec = GsmDecoder()
    per_batch(bench, lambda: dec.decode(data))


@pytest.mark.ratio_target(1.0)
def test_decode512_libgsm(bench, gsm_frames) -> None:
    dec = LibGsm(LIB)
    data = b"".join(gsm_frames)
    per_batch(bench, lambda: dec.decode_all(data))
