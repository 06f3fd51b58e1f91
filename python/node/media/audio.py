"""Local radio audio: the sounddevice (PortAudio) backend and the paced null backend.

Both backends move one 20 ms block at a time between the device and a `BlockExchange`, the
engine's local-radio member: microphone samples in, speaker samples out, native-endian int16 at
the station rate. That is one call per 20 ms, never one per packet.

`backend = "cpal"` in the config means real hardware (the name is the spec's; the implementation
is sounddevice/PortAudio). `backend = "none"` is a hardware-free device that keeps real time, for
headless hosts and every test.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from node.errors import CommandError

__all__ = [
    "AudioDevice",
    "AudioStats",
    "BlockExchange",
    "NullAudio",
    "SoundDeviceAudio",
    "block_samples",
    "find_device",
    "open_audio",
]

log = logging.getLogger(__name__)

#: One block is one IAX2 frame time.
BLOCK_MS = 20

#: microphone block in (station-rate int16 bytes), speaker block out (same size, or shorter:
#: the backend pads with silence).
BlockExchange = Callable[[bytes], bytes]


def block_samples(rate: int) -> int:
    return rate * BLOCK_MS // 1000


@dataclass(slots=True)
class AudioStats:
    """What the device did; shown in the status so a stalling sound card is visible."""

    blocks: int = 0
    input_overflows: int = 0
    output_underflows: int = 0
    late_blocks: int = 0


class AudioDevice(Protocol):
    """A started audio device that calls its exchange once per 20 ms block."""

    rate: int
    stats: AudioStats

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class NullAudio:
    """A device without hardware that keeps real time.

    A thread wakes at absolute 20 ms deadlines (so sleeping late never accumulates drift), hands
    the exchange a silent microphone block and discards what the speaker would have played. When
    the thread falls more than a block behind (a stalled host), the missed blocks are counted as
    late and skipped rather than replayed in a burst.
    """

    def __init__(
        self, rate: int, exchange: BlockExchange, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.stats = AudioStats()
        self._exchange = exchange
        self._clock = clock
        self._silence = bytes(2 * block_samples(rate))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="null-audio", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period = BLOCK_MS / 1000
        next_at = self._clock()
        while not self._stop.is_set():
            self._exchange(self._silence)
            self.stats.blocks += 1
            next_at += period
            delay = next_at - self._clock()
            if delay < -period:
                missed = int(-delay / period)
                self.stats.late_blocks += missed
                next_at += missed * period
                delay += missed * period
            if delay > 0:
                self._stop.wait(delay)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def describe(self) -> dict[str, Any]:
        return {"backend": "none", "rate": self.rate, "input": None, "output": None}


def _sounddevice() -> Any:
    """Import sounddevice lazily: it needs PortAudio, which the null backend does not."""
    try:
        import sounddevice
    except OSError as exc:  # PortAudio missing: sounddevice raises OSError at import
        raise CommandError(
            f"audio backend 'cpal' needs the PortAudio library (Debian: libportaudio2): {exc}", 500
        ) from None
    return sounddevice


def find_device(query: str, kind: str, devices: list[dict[str, Any]] | None = None) -> int | None:
    """Index of the one device whose name contains `query` (case-insensitive) for `kind`.

    `kind` is "input" or "output". An empty query means the system default (None). No match or
    several matches is an error that lists the devices an operator can choose from.
    """
    if not query:
        return None
    if devices is None:
        devices = list(_sounddevice().query_devices())
    channels = "max_input_channels" if kind == "input" else "max_output_channels"
    usable = [(i, d) for i, d in enumerate(devices) if d.get(channels, 0) > 0]
    needle = query.casefold()
    hits = [(i, d) for i, d in usable if needle in str(d.get("name", "")).casefold()]
    exact = [(i, d) for i, d in hits if str(d.get("name", "")).casefold() == needle]
    if len(exact) == 1:
        return exact[0][0]
    if len(hits) == 1:
        return hits[0][0]
    names = ", ".join(repr(str(d.get("name", ""))) for _, d in usable) or "none"
    if not hits:
        raise CommandError(
            f"no {kind} audio device matches {query!r}; available {kind} devices: {names}", 400
        )
    matched = ", ".join(repr(str(d.get("name", ""))) for _, d in hits)
    raise CommandError(
        f"{kind} device {query!r} is ambiguous: it matches {matched}; be more specific", 400
    )


class SoundDeviceAudio:
    """Real hardware through PortAudio: one full-duplex int16 mono stream at the station rate."""

    def __init__(
        self, rate: int, exchange: BlockExchange, input: str = "", output: str = ""
    ) -> None:
        self.rate = rate
        self.stats = AudioStats()
        self._exchange = exchange
        self._sd = _sounddevice()
        self._input, self._output = input, output
        self._in_idx = find_device(input, "input")
        self._out_idx = find_device(output, "output")
        self._block = block_samples(rate)
        self._stream: Any = None

    def _callback(
        self, indata: Any, outdata: Any, frames: int, time_info: Any, status: Any
    ) -> None:
        # PortAudio's thread: no logging, no allocation beyond the exchange itself.
        if status.input_overflow:
            self.stats.input_overflows += 1
        if status.output_underflow:
            self.stats.output_underflows += 1
        out = self._exchange(bytes(indata))
        n = min(len(out), len(outdata))
        outdata[:n] = out[:n]
        if n < len(outdata):
            outdata[n:] = b"\x00" * (len(outdata) - n)
        self.stats.blocks += 1

    def start(self) -> None:
        try:
            self._stream = self._sd.RawStream(
                samplerate=self.rate,
                blocksize=self._block,
                channels=1,
                dtype="int16",
                device=(self._in_idx, self._out_idx),
                callback=self._callback,
            )
            self._stream.start()
        except Exception as exc:  # PortAudioError and ValueError carry the device's reason
            self._stream = None
            raise CommandError(f"cannot open audio device at {self.rate} Hz: {exc}", 500) from None

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "cpal",
            "rate": self.rate,
            "input": self._input or None,
            "output": self._output or None,
        }


def open_audio(
    backend: str, rate: int, exchange: BlockExchange, input: str = "", output: str = ""
) -> AudioDevice:
    """The configured device, not yet started."""
    if backend == "none":
        return NullAudio(rate, exchange)
    if backend == "cpal":
        return SoundDeviceAudio(rate, exchange, input, output)
    raise CommandError(f"unknown audio backend {backend!r} (accepted: cpal, none)", 400)
