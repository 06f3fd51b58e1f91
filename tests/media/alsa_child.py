"""Runs in a child process whose HOME holds an `.asoundrc`: ALSA reads it once, when PortAudio
starts, so every scenario on ALSA's null PCM needs a fresh interpreter.

`python -m tests.media.alsa_child SCENARIO` prints one JSON object with what it saw. The PCMs
(`asoundrc()` below):

- `nulldev`: ALSA's null PCM, which takes any rate.
- `radio48`: a 48 kHz-only card like a CM108 USB radio interface. A `plug` in front of the null
  PCM fixes the slave rate at 48000 and names a rate converter that does not exist, so every
  other rate is refused when the plug tries to convert; a `file` PCM in between feeds the
  capture side from a raw file (a 1 kHz tone).

The null PCM has no clock: the stream calls back as fast as the CPU allows. So these scenarios
check what was opened and what flowed, never timing.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from node._core import Engine, ulaw_decode
from node.errors import CommandError
from node.media.audio import SoundDeviceAudio
from node.media.bridge import MediaBridge, Topology

#: The capture tone of `radio48`: 1 kHz at 48 kHz, this peak (-12.25 dBFS).
TONE_PEAK = 8000
FORMAT_ULAW = 0x4


def asoundrc(tone_file: Path) -> str:
    return f"""
pcm.nulldev {{ type null }}
ctl.nulldev {{ type hw card 0 }}
pcm.radio48_raw {{
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "{tone_file}"
    format "raw"
}}
pcm.radio48 {{
    type plug
    slave {{ pcm "radio48_raw"; rate 48000 }}
    rate_converter "no_such_converter"
}}
"""


def write_tone(path: Path) -> None:
    n = np.arange(48000)
    tone = np.round(TONE_PEAK * np.sin(2 * np.pi * 1000 * n / 48000)).astype(np.int16)
    path.write_bytes(tone.tobytes())


def station_rate_device() -> dict[str, Any]:
    """A card that takes the station rate is opened at it, in 5 ms blocks."""
    sizes: list[int] = []

    def exchange(block: bytes) -> bytes:
        sizes.append(len(block))
        return b"\x01\x00" * (len(block) // 2)

    dev = SoundDeviceAudio(8000, input="nulldev", output="nulldev")
    dev.start(exchange)
    time.sleep(0.3)
    dev.stop()
    return {"device_rate": dev.device_rate, "sizes": sorted(set(sizes)), "blocks": len(sizes)}


def radio48_refuses_8k() -> dict[str, Any]:
    """Forcing the station rate on the 48 kHz-only card fails with the rates it may use."""
    try:
        SoundDeviceAudio(8000, input="radio48", output="radio48", device_rate=8000)
    except CommandError as exc:
        return {"error": str(exc), "status": exc.status}
    return {"error": None}


def level(pcm: np.ndarray, freq: float, rate: int) -> float:
    phase = np.exp(-2j * np.pi * freq * np.arange(pcm.size) / rate)
    return float(2 * abs(np.dot(pcm.astype(np.float64), phase)) / pcm.size)


def radio48_flow() -> dict[str, Any]:
    """The node opens the 48 kHz-only card at 48 kHz and the receiver's audio reaches a call at
    8 kHz: a leg's peer gets the card's 1 kHz tone in µ-law frames."""
    engine = Engine("127.0.0.1:0", rate=8000)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.settimeout(0.2)
    bridge = MediaBridge(
        engine, Topology(mode="handset"), backend="cpal", input="radio48", output="radio48"
    )
    try:
        bridge.start_audio()
        bridge.add_leg(1, 2, peer.getsockname(), FORMAT_ULAW, 0)
        frames: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(frames) < 40 and time.monotonic() < deadline:
            try:
                data = peer.recv(2048)
            except TimeoutError:
                continue
            if len(data) == 4 + 160 and not data[0] & 0x80:  # a mini frame: 20 ms of µ-law
                frames.append(data[4:])
        audio = bridge.audio()
    finally:
        bridge.close()
        engine.stop()
        peer.close()
    # Whole periods of 1 kHz fit a 20 ms frame: one DFT bin per frame gives its tone level.
    levels = [level(np.frombuffer(ulaw_decode(f), np.int16), 1000, 8000) for f in frames]
    return {"frames": len(frames), "levels": levels, "audio": audio}


SCENARIOS = {
    "station_rate_device": station_rate_device,
    "radio48_refuses_8k": radio48_refuses_8k,
    "radio48_flow": radio48_flow,
}


if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
