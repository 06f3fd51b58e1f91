"""`POST /play` (an extension) and AMI `rpt playback` / `rpt localplay`: what may be played, and
reading a sound file into the station's PCM.

Files are WAV (16-bit PCM, mono or stereo, any rate: resampled to the station rate) or raw
8 kHz µ-law (`.ul`, `.ulaw`, `.pcm`: Asterisk's sound format), at most `MAX_PLAY_S` long.
Destinations: "local" (the local radio's output only), "air" (the local radio, keying its
transmitter, and every call) and "air_and_links" (the transceive links too). Anything that
would key is refused while a D-Star session is active, as `POST /key` is.
"""

from __future__ import annotations

import array
import sys
import wave
from collections.abc import Callable
from pathlib import Path

from node.errors import CommandError
from node.media.bridge import Destination

__all__ = ["DESTINATIONS", "MAX_PLAY_S", "decode_ulaw", "read_sound", "sound_path"]

#: The player takes at most two minutes per playback.
MAX_PLAY_S = 120
#: POST /play's `to`, and where each plays.
DESTINATIONS: dict[str, Destination] = {
    "local": "to_monitor",
    "air": "to_air",
    "air_and_links": "to_air_and_links",
}
_ULAW_SUFFIXES = (".ul", ".ulaw", ".pcm")


def _ulaw_sample(byte: int) -> int:
    # G.711 µ-law expansion: complement, sign, 3-bit segment, 4-bit mantissa, bias 0x84.
    u = ~byte & 0xFF
    magnitude = (((u & 0x0F) << 3) + 0x84) << ((u & 0x70) >> 4)
    return (0x84 - magnitude) if u & 0x80 else (magnitude - 0x84)


_ULAW = array.array("h", (_ulaw_sample(b) for b in range(256)))


def decode_ulaw(data: bytes) -> bytes:
    """µ-law bytes to native 16-bit PCM."""
    return array.array("h", (_ULAW[b] for b in data)).tobytes()


def sound_path(path_text: str) -> Path:
    """The path of a sound file this reads; CommandError 415 for another kind, 404 when there
    is no such file."""
    path = Path(path_text).expanduser()
    suffix = path.suffix.lower()
    if suffix != ".wav" and suffix not in _ULAW_SUFFIXES:
        raise CommandError("file must be a .wav or a .ul / .ulaw / .pcm (8 kHz mu-law) file", 415)
    if not path.is_file():
        raise CommandError("no such file", 404)
    return path


def read_sound(path_text: str, rate: int, resample: Callable[[bytes, int], bytes]) -> bytes:
    """The file at `path_text` as native int16 PCM at `rate` (`resample(pcm, from_rate)`
    converts); CommandError 404 when it cannot be read, 415 when it is no sound this reads,
    413 when it is too long."""
    path = sound_path(path_text)
    suffix = path.suffix.lower()
    try:
        if suffix == ".wav":
            with wave.open(str(path), "rb") as w:
                channels, width, src_rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
                if width != 2 or channels not in (1, 2):
                    raise CommandError("a WAV file must be 16-bit PCM, mono or stereo", 415)
                if w.getnframes() > src_rate * MAX_PLAY_S:
                    raise CommandError(f"the file is longer than {MAX_PLAY_S} s", 413)
                raw = w.readframes(w.getnframes())
            samples = array.array("h", raw)
            if sys.byteorder == "big":
                samples.byteswap()
            if channels == 2:
                samples = samples[::2]
            pcm, src = samples.tobytes(), src_rate
        else:
            data = path.read_bytes()
            if len(data) > 8000 * MAX_PLAY_S:
                raise CommandError(f"the file is longer than {MAX_PLAY_S} s", 413)
            pcm, src = decode_ulaw(data), 8000
    except FileNotFoundError:
        raise CommandError("no such file", 404) from None
    except (OSError, EOFError, wave.Error) as exc:
        raise CommandError(f"cannot read the file: {exc}", 415) from None
    if not pcm:
        raise CommandError("the file holds no audio", 415)
    return pcm if src == rate else resample(pcm, src)
