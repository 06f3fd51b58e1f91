"""Local radio audio: the sounddevice (PortAudio) backend and the null backend.

A sound card hands every block it delivers to one exchange call, the engine's
`DevicePort.exchange` (Rust): the captured block in (native-endian int16 at the device rate), the
block to play out, same length. The port converts between the device rate and the station rate,
applies the gains, meters both directions and trades 20 ms frames with the local radio member, so
Python only passes the buffer through.

The device runs at the station rate when it takes it, and otherwise at 48 kHz: USB radio
interfaces (CM108/CM119) offer only 44.1 and 48 kHz. 44.1 kHz is refused (no filter for it).

`backend = "cpal"` in the config means real hardware (the name is the spec's; the implementation
is sounddevice/PortAudio). `backend = "none"` is no device at all, for hubs, headless hosts and
the tests: nothing is exchanged and nothing runs (`NullAudio`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from node.config import UsrpConfig
from node.errors import CommandError

__all__ = [
    "CONVERTED_RATE",
    "AudioDevice",
    "AudioStats",
    "BlockExchange",
    "NullAudio",
    "SoundDeviceAudio",
    "UsrpAudio",
    "block_samples",
    "find_device",
    "open_audio",
]

log = logging.getLogger(__name__)

#: The sound card's block: with the 48 kHz filter delay (2.5 ms at most) the device edge adds
#: under 10 ms each way.
BLOCK_MS = 5

#: The rate a device runs at when it does not take the station rate.
CONVERTED_RATE = 48000

#: captured block in (int16 bytes at the device rate), block to play out (the same length).
BlockExchange = Callable[[bytes], bytes]


def block_samples(rate: int, ms: int = BLOCK_MS) -> int:
    return rate * ms // 1000


@dataclass(slots=True)
class AudioStats:
    """What the device itself reported; shown per direction in the status."""

    blocks: int = 0
    #: Captured audio the device lost (PortAudio input overflow; the null device: missed blocks).
    input_overflows: int = 0
    #: Gaps where the device had nothing to play (PortAudio output underflow; the null device:
    #: missed blocks).
    output_underflows: int = 0


class AudioDevice(Protocol):
    """An audio device, opened but not started; `start` calls the exchange once per block."""

    #: The station rate.
    rate: int
    #: The rate the device runs at (the station rate or 48000).
    device_rate: int
    stats: AudioStats

    def start(self, exchange: BlockExchange) -> None: ...

    def stop(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class NullAudio:
    """A device without hardware, and without a clock of its own.

    It trades no blocks: the local radio hears nothing and plays to nobody. Nothing is lost by
    that: an unkeyed silent frame is no frame to the conference, and a keyed local source with
    no microphone frame sends silence (the engine's tick does), so feeding silence in real time
    would only wake the host 50 times a second. With nothing attached and nothing to do, the
    engine stops its own clock too, and an idle node sleeps (docs/performance.md, "Idle").
    """

    def __init__(self, rate: int, device_rate: int = 0) -> None:
        self.rate = rate
        self.device_rate = device_rate or rate
        self.stats = AudioStats()

    def start(self, exchange: BlockExchange) -> None:
        """Nothing to start: no block is ever exchanged."""

    def stop(self) -> None:
        """Nothing to stop."""

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "none",
            "rate": self.rate,
            "device_rate": self.device_rate,
            "block_ms": None,
            "input": None,
            "output": None,
        }


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
    """Real hardware through PortAudio: one full-duplex int16 mono stream, 5 ms blocks.

    The device rate is the station rate when both the input and the output device take it, else
    48 kHz (`device_rate` forces one of the two).
    """

    def __init__(self, rate: int, input: str = "", output: str = "", device_rate: int = 0) -> None:
        self.rate = rate
        self.stats = AudioStats()
        self._sd = _sounddevice()
        self._input, self._output = input, output
        self._in_idx = find_device(input, "input")
        self._out_idx = find_device(output, "output")
        self.device_rate = self._choose_rate(device_rate)
        self._block = block_samples(self.device_rate)
        self._stream: Any = None

    def _choose_rate(self, forced: int) -> int:
        candidates = [forced] if forced else [self.rate, CONVERTED_RATE]
        refusals = []
        for candidate in candidates:
            try:
                self._sd.check_input_settings(
                    device=self._in_idx, samplerate=candidate, channels=1, dtype="int16"
                )
                self._sd.check_output_settings(
                    device=self._out_idx, samplerate=candidate, channels=1, dtype="int16"
                )
            except Exception as exc:  # PortAudioError and ValueError carry the device's reason
                refusals.append(f"{candidate} Hz: {exc}")
            else:
                return candidate
        names = f"input {self._input or 'default'!r}, output {self._output or 'default'!r}"
        raise CommandError(
            f"audio devices ({names}) take none of the rates the node can use "
            f"({'; '.join(refusals)}); accepted device rates: {self.rate} (the station rate), "
            f"{CONVERTED_RATE} (44100 is not supported)",
            500,
        )

    def _callback(
        self, indata: Any, outdata: Any, frames: int, time_info: Any, status: Any
    ) -> None:
        # PortAudio's thread: no logging, no allocation beyond the exchange itself.
        if status:
            if status.input_overflow:
                self.stats.input_overflows += 1
            if status.output_underflow:
                self.stats.output_underflows += 1
        # bytes, not the cffi buffer: the port then reads it in place and runs no Python code
        # while it holds itself, so a status read on another thread never finds it borrowed.
        outdata[:] = self._exchange(bytes(indata))
        self.stats.blocks += 1

    def start(self, exchange: BlockExchange) -> None:
        self._exchange = exchange
        try:
            self._stream = self._sd.RawStream(
                samplerate=self.device_rate,
                blocksize=self._block,
                channels=1,
                dtype="int16",
                device=(self._in_idx, self._out_idx),
                callback=self._callback,
            )
            self._stream.start()
        except Exception as exc:  # PortAudioError and ValueError carry the device's reason
            self._stream = None
            raise CommandError(
                f"cannot open audio device at {self.device_rate} Hz: {exc}", 500
            ) from None

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None

    def describe(self) -> dict[str, Any]:
        latency = self._stream.latency if self._stream is not None else (None, None)
        return {
            "backend": "cpal",
            "rate": self.rate,
            "device_rate": self.device_rate,
            "block_ms": BLOCK_MS,
            "input": self._input or None,
            "output": self._output or None,
            # PortAudio's own buffering, on top of the block and the filter delay.
            "latency_ms": {
                "input": None if latency[0] is None else round(latency[0] * 1000, 1),
                "output": None if latency[1] is None else round(latency[1] * 1000, 1),
            },
        }


class UsrpAudio:
    """`backend = "usrp"`: the local radio is a USRP packet stream.

    Unlike a sound card, no Python thread moves its audio: the engine opens the USRP socket in a
    thread of its own (`Engine.open_usrp`), which parses, buffers, resamples and meters the
    packets and trades 20 ms frames with the local radio member. This object only carries the
    settings to the engine and describes the port.
    """

    def __init__(self, rate: int, cfg: UsrpConfig) -> None:
        self.rate = rate
        self.device_rate = 8000
        self.stats = AudioStats()
        self.cfg = cfg

    def open_port(self, engine: Any, rx_gain_db: float, tx_gain_db: float) -> Any:
        """Start the engine's USRP thread; a CommandError names the address that failed."""
        c = self.cfg
        try:
            peer = _numeric(c.peer.host, c.peer.port)
            settings = {
                "rx_gain_db": rx_gain_db,
                "tx_gain_db": tx_gain_db,
                "prefill_frames": c.prefill_ms // 20,
                "queue_frames": c.buffer_ms // 20,
                "rx_timeout_ms": c.rx_timeout_ms,
                "talkgroup": c.talkgroup,
            }
            return engine.open_usrp(_numeric(c.listen.host, c.listen.port), peer, settings)
        except Exception as exc:  # the engine's EngineError names the port and the reason
            raise CommandError(f"cannot open the USRP radio ([usrp]): {exc}", 500) from None

    def start(self, exchange: BlockExchange) -> None:
        pass

    def stop(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "usrp",
            "rate": self.rate,
            "device_rate": self.device_rate,
            "block_ms": 20,
            "input": str(self.cfg.listen),
            "output": str(self.cfg.peer),
            "network": self.cfg.network,
        }


def _numeric(host: str, port: int) -> str:
    """`ip:port` for the engine, which takes IP literals only (a name is resolved once here)."""
    import socket

    infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    ip = str(infos[0][4][0])
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def open_audio(
    backend: str,
    rate: int,
    input: str = "",
    output: str = "",
    device_rate: int = 0,
    usrp: UsrpConfig | None = None,
) -> AudioDevice:
    """The configured device, opened (its rate chosen) but not started."""
    if backend == "none":
        return NullAudio(rate, device_rate)
    if backend == "cpal":
        return SoundDeviceAudio(rate, input, output, device_rate)
    if backend == "usrp" and usrp is not None:
        return UsrpAudio(rate, usrp)
    raise CommandError(
        f"unknown audio backend {backend!r} (accepted: cpal, none, usrp with a [usrp] section)",
        400,
    )
