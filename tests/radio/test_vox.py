"""VOX on the received audio through the binding: the engine's device port measures what the
sound card captured and reports `VoxChanged` edges with the engine's events; the bridge opens
the port with `[radio]`'s VOX settings and receive-audio delay."""

from __future__ import annotations

import time

import numpy as np
import pytest

from node._core import DeviceError, Engine, VoxChanged
from node.media.bridge import MediaBridge, Topology


@pytest.fixture
def engine() -> Engine:
    e = Engine("127.0.0.1:0", rate=8000)
    yield e
    e.stop()


def vox_events(engine: Engine, want: int) -> list[bool]:
    seen: list[bool] = []
    deadline = time.monotonic() + 5
    while len(seen) < want and time.monotonic() < deadline:
        seen += [e.open for e in engine.drain_events() if isinstance(e, VoxChanged)]
        time.sleep(0.01)
    return seen


def test_vox_opens_on_the_captured_tone_and_closes_after_the_release(engine: Engine) -> None:
    port = engine.open_device(48000, vox=(-30.0, 40, 100))
    n = np.arange(9600)
    tone = np.round(8000 * np.sin(2 * np.pi * 1000 * n / 48000)).astype(np.int16)
    for i in range(0, 9600, 240):  # 200 ms of a -12 dBFS tone, in 5 ms blocks
        port.exchange(tone[i : i + 240].tobytes())
    for _ in range(60):  # 300 ms of silence
        port.exchange(bytes(480))
    assert vox_events(engine, 2) == [True, False]
    port.close()


def test_the_bridge_opens_the_device_with_the_radios_delay(engine: Engine) -> None:
    bridge = MediaBridge(engine, Topology(), rx_delay_ms=40, vox=(-30.0, 40, 100), gated=True)
    bridge.start_audio()
    assert bridge.audio()["rx"]["delay_ms"] == 40
    bridge.close()


def test_vox_and_delay_settings_out_of_range_are_refused(engine: Engine) -> None:
    with pytest.raises(DeviceError, match=r"VOX threshold 5 dBFS is out of range"):
        engine.open_device(48000, vox=(5.0, 0, 0))
    with pytest.raises(DeviceError, match=r"receive audio delay 1500 ms is out of range"):
        engine.open_device(48000, rx_delay_ms=1500)
