"""The GSM 06.10 codec of node._core against libgsm (Debian `libgsm1`, through ctypes): bit for
bit, both ways, on speech, tones and random input, thousands of frames; one state per stream."""

from __future__ import annotations

import numpy as np
import pytest

from node._core import CodecError, GsmDecoder, GsmEncoder
from tests.audio import espeak
from tests.conftest import require_tool
from tests.libgsm import FRAME_BYTES, FRAME_SAMPLES, LibGsm, load

LIB = load()


@pytest.fixture(scope="module")
def lib() -> object:
    require_tool("libgsm1", lambda: LIB is not None)
    return LIB


def speech() -> np.ndarray:
    """About 12 s of espeak-ng speech at 8 kHz, loud and quiet."""
    text = (
        "This is an echo link test of the GSM full rate codec. The quick brown fox jumps over "
        "the lazy dog, while a repeater on two metres carries a net of sixteen stations."
    )
    voice = espeak(text, 8000).astype(np.int32)
    loud = np.clip(voice * 3, -32768, 32767)
    quiet = voice // 16
    return np.concatenate([voice, loud, quiet]).astype(np.int16)


def frames_of(pcm: np.ndarray) -> np.ndarray:
    n = len(pcm) // FRAME_SAMPLES
    return pcm[: n * FRAME_SAMPLES]


def test_encoding_speech_matches_libgsm_frame_for_frame(lib: object) -> None:
    pcm = frames_of(speech())
    assert len(pcm) // FRAME_SAMPLES > 500
    ours = GsmEncoder().encode(pcm.tobytes())
    theirs = LibGsm(lib).encode_all(pcm)  # type: ignore[arg-type]
    assert len(ours) == len(theirs) == len(pcm) // FRAME_SAMPLES * FRAME_BYTES
    assert ours == theirs


def test_encoding_random_and_extreme_input_matches_libgsm(lib: object) -> None:
    rng = np.random.default_rng(306)
    parts = [
        rng.integers(-32768, 32768, 1000 * FRAME_SAMPLES, dtype=np.int16),
        # Clipped square waves and DC at the rails: the saturating and wrapping corners.
        np.tile(np.repeat(np.array([32767, -32768], np.int16), 40), 200),
        np.full(50 * FRAME_SAMPLES, -32768, np.int16),
        np.full(50 * FRAME_SAMPLES, 32767, np.int16),
        (rng.integers(-4, 4, 200 * FRAME_SAMPLES)).astype(np.int16),
    ]
    pcm = frames_of(np.concatenate(parts))
    # Frame-sized calls and one batch give the same stream.
    enc = GsmEncoder()
    one_by_one = b"".join(
        enc.encode(pcm[i : i + FRAME_SAMPLES].tobytes()) for i in range(0, len(pcm), FRAME_SAMPLES)
    )
    batch = GsmEncoder().encode(pcm)
    assert one_by_one == batch
    assert batch == LibGsm(lib).encode_all(pcm)  # type: ignore[arg-type]


def test_decoding_speech_matches_libgsm(lib: object) -> None:
    frames = LibGsm(lib).encode_all(frames_of(speech()))  # type: ignore[arg-type]
    ours = np.frombuffer(GsmDecoder().decode(frames), np.int16)
    theirs = LibGsm(lib).decode_all(frames)  # type: ignore[arg-type]
    assert np.array_equal(ours, theirs)


def test_decoding_random_frames_matches_libgsm(lib: object) -> None:
    rng = np.random.default_rng(3006)
    frames = rng.integers(0, 256, (3000, FRAME_BYTES), dtype=np.uint8)
    frames[:, 0] = 0xD0 | (frames[:, 0] & 0x0F)
    data = frames.tobytes()
    ours = np.frombuffer(GsmDecoder().decode(data), np.int16)
    theirs = LibGsm(lib).decode_all(data)  # type: ignore[arg-type]
    assert len(ours) == 3000 * FRAME_SAMPLES
    assert np.array_equal(ours, theirs)


def test_a_frame_without_the_signature_is_refused_as_libgsm_refuses_it(lib: object) -> None:
    good = LibGsm(lib).encode(bytes(FRAME_SAMPLES * 2))  # type: ignore[arg-type]
    bad = bytes([0xC0]) + good[1:]
    with pytest.raises(ValueError):
        LibGsm(lib).decode(bad)  # type: ignore[arg-type]
    dec = GsmDecoder()
    with pytest.raises(CodecError, match=r"frame 1: not a GSM 06\.10 frame"):
        dec.decode(good + bad)
    with pytest.raises(CodecError, match="multiple of 33"):
        dec.decode(good[:-1])
    with pytest.raises(CodecError, match="multiple of 320"):
        GsmEncoder().encode(bytes(318))
    assert GsmEncoder().encode(b"") == b""


def test_a_tone_keeps_its_frequency_and_level() -> None:
    t = np.arange(50 * FRAME_SAMPLES) / 8000
    tone = (10000 * np.sin(2 * np.pi * 1000 * t)).astype(np.int16)
    out = np.frombuffer(GsmDecoder().decode(GsmEncoder().encode(tone)), np.int16)
    steady = out[10 * FRAME_SAMPLES :].astype(np.float64)
    spectrum = np.abs(np.fft.rfft(steady * np.hanning(len(steady))))
    peak_hz = np.argmax(spectrum) * 8000 / len(steady)
    assert abs(peak_hz - 1000) < 10
    level_db = 20 * np.log10(np.std(steady) / np.std(tone[10 * FRAME_SAMPLES :]))
    assert abs(level_db) < 1.5
