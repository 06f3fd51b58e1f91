"""The text-to-speech binary (`[announce.tts]`), run as an asyncio subprocess with a time-out.

The text goes to the binary's standard input; its standard output is the audio. How the binary
is called depends on its name (docs/announce.md):

- `espeak-ng` (or `espeak`): `espeak-ng --stdout --stdin [-v <voice>]`; `voice` is a voice name
  such as `en-us`. Output: a WAV stream, 22050 Hz mono.
- `piper`: `piper --model <voice> --output_raw`; `voice` is the path of the `.onnx` model, and
  the rate is read from the model's `<voice>.json` (`audio.sample_rate`, 22050 Hz when absent).
  Output: raw 16-bit mono.
- anything else: `<binary>` alone, text on standard input, a 16-bit PCM WAV on standard output.

A binary that is missing, exits non-zero, writes no usable audio, or takes longer than
`timeout_ms` raises `TtsError` (the process is killed); the announcer then sends CW instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from node.config import TtsConfig
from node.errors import TtsError

__all__ = ["MAX_AUDIO_BYTES", "Speech", "invocation", "parse_wav", "render"]

#: Output beyond this is refused (two minutes at 48 kHz 16-bit): no announcement is that long.
MAX_AUDIO_BYTES = 2 * 60 * 48000 * 2
#: How much of the binary's error output a failure quotes.
_STDERR_EXCERPT = 200


@dataclass(frozen=True, slots=True)
class Speech:
    """Rendered audio: native-endian 16-bit mono PCM at `rate`."""

    pcm: bytes
    rate: int


@dataclass(frozen=True, slots=True)
class Invocation:
    argv: list[str]
    #: The rate of raw output; None when the binary writes WAV.
    raw_rate: int | None = None


def _piper_rate(voice: str) -> int:
    try:
        model = json.loads(Path(f"{voice}.json").read_text(encoding="utf-8"))
        rate = int(model["audio"]["sample_rate"])
    except (OSError, ValueError, KeyError, TypeError):
        return 22050
    return rate if 4000 <= rate <= 192000 else 22050


def invocation(cfg: TtsConfig) -> Invocation:
    """How `cfg.binary` is run (see the module docs)."""
    name = Path(cfg.binary).name
    if name.startswith("espeak"):
        argv = [cfg.binary, "--stdout", "--stdin"]
        if cfg.voice:
            argv += ["-v", cfg.voice]
        return Invocation(argv)
    if name.startswith("piper"):
        return Invocation(
            [cfg.binary, "--model", cfg.voice, "--output_raw"], _piper_rate(cfg.voice)
        )
    return Invocation([cfg.binary])


def parse_wav(data: bytes) -> Speech:
    """16-bit PCM WAV (the first channel if there are several). Streaming writers (espeak-ng
    on a pipe) put placeholder sizes in the header: the data chunk runs to the end."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise TtsError("the TTS output is not a WAV file")
    pos, rate, channels = 12, 0, 0
    while pos + 8 <= len(data):
        chunk, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = pos + 8
        if chunk == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise TtsError("the TTS output has a truncated WAV format chunk")
            fmt, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", data, body)
            if fmt not in (1, 0xFFFE) or bits != 16 or channels < 1:
                raise TtsError(f"the TTS output is {bits}-bit format {fmt}; 16-bit PCM is needed")
        elif chunk == b"data":
            if not rate:
                raise TtsError("the TTS output has no WAV format before its data")
            pcm = data[body : body + size] if body + size <= len(data) else data[body:]
            frame = 2 * channels
            pcm = pcm[: len(pcm) - len(pcm) % frame]
            if channels > 1:
                samples = memoryview(pcm).cast("h")[::channels]
                pcm = samples.tobytes()
            return Speech(_to_native(pcm), rate)
        pos = body + size + (size & 1)
    raise TtsError("the TTS output has no audio data")


def _to_native(little_endian: bytes) -> bytes:
    if sys.byteorder == "little":
        return little_endian
    samples = memoryview(little_endian).cast("h").tolist()
    return struct.pack(f"<{len(samples)}h", *samples)


async def render(cfg: TtsConfig, text: str) -> Speech:
    """Speak `text` with the configured binary within `cfg.timeout_ms`; raises TtsError."""
    how = invocation(cfg)
    try:
        proc = await asyncio.create_subprocess_exec(
            *how.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Its own process group, so a time-out kills whatever it started too (a wrapper
            # script's child would otherwise hold the pipes open for its whole life).
            start_new_session=True,
        )
    except OSError as exc:
        raise TtsError(f"cannot run {cfg.binary!r}: {exc.strerror or exc}") from None
    try:
        out, err = await asyncio.wait_for(
            proc.communicate(text.encode() + b"\n"), cfg.timeout_ms / 1000
        )
    except asyncio.TimeoutError:  # not the builtin before Python 3.11
        raise TtsError(f"{cfg.binary!r} took longer than {cfg.timeout_ms} ms") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    if proc.returncode != 0:
        excerpt = err.decode(errors="replace").strip()[:_STDERR_EXCERPT]
        raise TtsError(
            f"{cfg.binary!r} exited with status {proc.returncode}"
            + (f": {excerpt}" if excerpt else "")
        )
    if len(out) > MAX_AUDIO_BYTES:
        raise TtsError(f"{cfg.binary!r} wrote more than {MAX_AUDIO_BYTES} bytes of audio")
    if how.raw_rate is not None:
        pcm = out[: len(out) - len(out) % 2]
        speech = Speech(_to_native(pcm), how.raw_rate)
    else:
        speech = parse_wav(out)
    if not speech.pcm:
        raise TtsError(f"{cfg.binary!r} wrote no audio")
    return speech
