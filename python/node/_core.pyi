# --- codecs ---
# G.711 µ-law/A-law (bit-exact with audioop width 2), slin/slin16 byte orders, and the streaming
# 8 kHz <-> 16 kHz halfband resamplers. PCM is native-endian int16 bytes; every function accepts
# bytes or any other buffer (bytes is read in place, others are copied once).
from collections.abc import Iterable as _Iterable
from typing import final as _final

from typing_extensions import Buffer as _Buffer

class CodecError(ValueError):
    """Audio a codec or resampler cannot take (e.g. 16-bit PCM with an odd byte count)."""

def ulaw_encode(pcm: _Buffer) -> bytes:
    """PCM to µ-law, one byte per sample (as audioop.lin2ulaw(pcm, 2))."""

def ulaw_decode(data: _Buffer) -> bytes:
    """µ-law to PCM (as audioop.ulaw2lin(data, 2))."""

def alaw_encode(pcm: _Buffer) -> bytes:
    """PCM to A-law, one byte per sample (as audioop.lin2alaw(pcm, 2))."""

def alaw_decode(data: _Buffer) -> bytes:
    """A-law to PCM (as audioop.alaw2lin(data, 2))."""

def ulaw_decode_many(frames: _Iterable[_Buffer]) -> list[bytes]:
    """Decode many µ-law frames in one call; one PCM bytes per frame."""

def alaw_decode_many(frames: _Iterable[_Buffer]) -> list[bytes]:
    """Decode many A-law frames in one call; one PCM bytes per frame."""

def slin_to_wire(pcm: _Buffer) -> bytes:
    """PCM to slin (8 kHz) wire bytes: big-endian."""

def slin_from_wire(data: _Buffer) -> bytes:
    """slin (8 kHz, big-endian) wire bytes to PCM."""

def slin16_to_wire(pcm: _Buffer) -> bytes:
    """PCM to slin16 (16 kHz) wire bytes: little-endian."""

def slin16_from_wire(data: _Buffer) -> bytes:
    """slin16 (16 kHz, little-endian) wire bytes to PCM."""

@_final
class Upsampler:
    """Streaming 8 kHz -> 16 kHz resampler; state carries across process() calls."""

    def __new__(cls) -> Upsampler: ...
    def process(self, pcm: _Buffer) -> bytes:
        """8 kHz PCM in, twice as many 16 kHz samples out."""

    def reset(self) -> None:
        """Forget the filter history."""

    @property
    def delay(self) -> float:
        """Group delay in output (16 kHz) samples: 33.0."""

@_final
class Downsampler:
    """Streaming 16 kHz -> 8 kHz resampler; state carries across process() calls."""

    def __new__(cls) -> Downsampler: ...
    def process(self, pcm: _Buffer) -> bytes:
        """16 kHz PCM in, half as many 8 kHz samples out (an odd sample waits for the next call)."""

    def reset(self) -> None:
        """Forget the filter history and any pending sample."""

    @property
    def delay(self) -> float:
        """Group delay in output (8 kHz) samples: 16.5."""

# --- end codecs ---
