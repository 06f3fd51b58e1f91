"""Sound files for POST /play: WAV at any rate and channel count, 8 kHz mu-law, and what is
refused."""

from __future__ import annotations

import array
import wave
from pathlib import Path

import numpy as np
import pytest

from node.announce.play import decode_ulaw, read_sound
from node.errors import CommandError


def no_resample(pcm: bytes, rate: int) -> bytes:
    raise AssertionError("no resampling expected")


def halve(pcm: bytes, rate: int) -> bytes:
    assert rate == 16000
    return array.array("h", pcm)[::2].tobytes()


def write_wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def test_wav_mono_stereo_and_resampled(tmp_path: Path) -> None:
    ramp = np.arange(-800, 800, dtype=np.int16)
    write_wav(tmp_path / "m.wav", ramp, 8000)
    assert np.array_equal(
        np.frombuffer(read_sound(str(tmp_path / "m.wav"), 8000, no_resample), np.int16), ramp
    )
    stereo = np.repeat(ramp, 2)  # left = right
    write_wav(tmp_path / "s.wav", stereo, 8000, channels=2)
    got = np.frombuffer(read_sound(str(tmp_path / "s.wav"), 8000, no_resample), np.int16)
    assert np.array_equal(got, ramp)
    write_wav(tmp_path / "w.wav", ramp, 16000)
    assert len(read_sound(str(tmp_path / "w.wav"), 8000, halve)) == len(ramp)


def test_mu_law_decodes_as_g711() -> None:
    pcm = np.frombuffer(decode_ulaw(bytes([0xFF, 0x7F, 0x00, 0x80, 0xEF, 0x6F])), np.int16)
    # 0xEF and 0x6F: segment 1, mantissa 0, either sign.
    assert pcm.tolist() == [0, 0, -32124, 32124, 132, -132]


@pytest.mark.parametrize(
    ("name", "content", "status"),
    [
        ("a.mp3", b"x", 415),
        ("none.wav", None, 404),
        ("bad.wav", b"not a wav", 415),
        ("empty.ul", b"", 415),
    ],
)
def test_refusals(tmp_path: Path, name: str, content: bytes | None, status: int) -> None:
    if content is not None:
        (tmp_path / name).write_bytes(content)
    with pytest.raises(CommandError) as info:
        read_sound(str(tmp_path / name), 8000, no_resample)
    assert info.value.status == status


def test_8_bit_wav_is_refused(tmp_path: Path) -> None:
    with wave.open(str(tmp_path / "b.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(b"\x80" * 100)
    with pytest.raises(CommandError) as info:
        read_sound(str(tmp_path / "b.wav"), 8000, no_resample)
    assert info.value.status == 415 and "16-bit" in str(info.value)
