"""The TTS binary as a real subprocess: espeak-ng, a piper-shaped binary, and binaries that fail,
hang or write garbage (scripts in the test's directory)."""

from __future__ import annotations

import asyncio
import json
import struct
import time
from pathlib import Path

import pytest

from node.announce.tts import invocation, parse_wav, render
from node.config import TtsConfig
from node.errors import TtsError
from tests.conftest import require_tool


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def wav(pcm: bytes, rate: int, channels: int = 1, bits: int = 16, size: int | None = None) -> bytes:
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * bits // 8, channels * 2, bits)
    data_size = len(pcm) if size is None else size
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    body += b"LIST" + struct.pack("<I", 3) + b"abc\x00"  # an odd-sized chunk to skip
    body += b"data" + struct.pack("<I", data_size) + pcm
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_espeak_ng_speaks_at_22050_hz() -> None:
    require_tool("espeak-ng")
    cfg = TtsConfig(enabled=True, binary="espeak-ng", voice="en-us", timeout_ms=10_000)
    assert invocation(cfg).argv == ["espeak-ng", "--stdout", "--stdin", "-v", "en-us"]
    speech = asyncio.run(render(cfg, "node two thousand connected"))
    assert speech.rate == 22050
    seconds = len(speech.pcm) / 2 / speech.rate
    assert 1.0 < seconds < 4.0


def test_a_piper_binary_gets_its_model_and_raw_output_at_the_models_rate(tmp_path: Path) -> None:
    model = tmp_path / "voice.onnx"
    model.write_bytes(b"")
    (tmp_path / "voice.onnx.json").write_text(json.dumps({"audio": {"sample_rate": 16000}}))
    # A stand-in with piper's command line: checks its arguments, reads the text, and writes
    # 0.5 s of raw 16-bit audio.
    fake = script(
        tmp_path,
        "piper",
        f'[ "$1 $2 $3" = "--model {model} --output_raw" ] || exit 9\n'
        "read line\n"
        '[ "$line" = "hello" ] || exit 8\n'
        "head -c 16000 /dev/urandom\n",
    )
    cfg = TtsConfig(enabled=True, binary=fake, voice=str(model), timeout_ms=5000)
    speech = asyncio.run(render(cfg, "hello"))
    assert (speech.rate, len(speech.pcm)) == (16000, 16000)
    # No model config next to the model: piper's usual 22050 Hz.
    (tmp_path / "voice.onnx.json").unlink()
    assert invocation(cfg).raw_rate == 22050


def test_a_binary_too_slow_is_killed_at_the_time_out(tmp_path: Path) -> None:
    slow = script(tmp_path, "slow-tts", "sleep 30\n")
    cfg = TtsConfig(enabled=True, binary=slow, timeout_ms=300)
    started = time.monotonic()
    with pytest.raises(TtsError, match="took longer than 300 ms"):
        asyncio.run(render(cfg, "hello"))
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("echo 'no voice model here' >&2\nexit 3\n", "exited with status 3: no voice model"),
        ("echo not audio\n", "not a WAV file"),
        ("cat /dev/null\n", "not a WAV file"),
    ],
)
def test_a_failing_binary_is_a_tts_error(tmp_path: Path, body: str, message: str) -> None:
    cfg = TtsConfig(enabled=True, binary=script(tmp_path, "bad-tts", body), timeout_ms=5000)
    with pytest.raises(TtsError, match=message):
        asyncio.run(render(cfg, "hello"))


def test_a_missing_binary_is_a_tts_error(tmp_path: Path) -> None:
    cfg = TtsConfig(enabled=True, binary=str(tmp_path / "nope"), timeout_ms=5000)
    with pytest.raises(TtsError, match="cannot run"):
        asyncio.run(render(cfg, "hello"))


def test_wav_parsing() -> None:
    pcm = struct.pack("<4h", 1, -2, 3, -4)
    assert parse_wav(wav(pcm, 22050)).pcm == struct.pack("=4h", 1, -2, 3, -4)
    # A streaming header (placeholder size): the data runs to the end.
    assert parse_wav(wav(pcm, 22050, size=0x7FFFF000)).pcm == struct.pack("=4h", 1, -2, 3, -4)
    # Stereo: the first channel.
    stereo = parse_wav(wav(pcm, 16000, channels=2))
    assert (stereo.pcm, stereo.rate) == (struct.pack("=2h", 1, 3), 16000)
    with pytest.raises(TtsError, match="16-bit PCM"):
        parse_wav(wav(pcm, 8000, bits=8))
    with pytest.raises(TtsError, match="no audio data"):
        parse_wav(wav(pcm, 8000)[:36])
