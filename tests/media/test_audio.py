"""Audio backends: the paced null device and device selection by name."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from node.errors import CommandError
from node.media.audio import NullAudio, block_samples, find_device, open_audio
from tests.conftest import require_tool

DEVICES = [
    {
        "name": "USB PnP Sound Device: Audio (hw:1,0)",
        "max_input_channels": 1,
        "max_output_channels": 2,
    },
    {"name": "bcm2835 Headphones: - (hw:0,0)", "max_input_channels": 0, "max_output_channels": 8},
    {"name": "default", "max_input_channels": 32, "max_output_channels": 32},
    {"name": "C-Media USB Headset", "max_input_channels": 1, "max_output_channels": 2},
]


def test_null_device_keeps_real_time_over_ten_seconds() -> None:
    blocks: list[int] = []
    lock = threading.Lock()

    def exchange(mic: bytes) -> bytes:
        with lock:
            blocks.append(len(mic))
        return b""

    dev = NullAudio(16000, exchange)
    start = time.monotonic()
    dev.start()
    time.sleep(10.0)
    dev.stop()
    elapsed = time.monotonic() - start
    expected = elapsed / 0.020
    assert abs(len(blocks) - expected) <= 0.01 * expected, (len(blocks), expected)
    assert set(blocks) == {2 * block_samples(16000)}  # 20 ms of silent int16 at 16 kHz
    assert dev.stats.blocks == len(blocks)


def test_null_device_skips_missed_blocks_instead_of_bursting() -> None:
    now = [0.0]
    calls = []

    def clock() -> float:
        return now[0]

    def exchange(mic: bytes) -> bytes:
        calls.append(now[0])
        if len(calls) == 3:
            now[0] += 0.5  # the host stalled for half a second inside one block
        if len(calls) >= 6:
            dev._stop.set()
        return b""

    dev = NullAudio(8000, exchange, clock=clock)
    dev._run()
    assert dev.stats.late_blocks >= 20
    assert len(calls) == 6  # no burst of 25 catch-up blocks


@pytest.mark.parametrize(
    ("query", "kind", "index"),
    [
        ("usb pnp", "input", 0),
        ("USB PnP Sound Device", "output", 0),
        ("headphones", "output", 1),
        ("default", "input", 2),
        ("C-Media", "input", 3),
        ("", "input", None),
    ],
)
def test_devices_are_chosen_by_name_substring(query: str, kind: str, index: int | None) -> None:
    assert find_device(query, kind, DEVICES) == index


def test_no_match_lists_the_available_devices() -> None:
    with pytest.raises(CommandError) as err:
        find_device("Blue Yeti", "input", DEVICES)
    msg = str(err.value)
    assert "Blue Yeti" in msg and "USB PnP Sound Device" in msg and "C-Media USB Headset" in msg
    assert "bcm2835" not in msg  # it has no input channels
    assert err.value.status == 400


def test_ambiguous_match_names_the_candidates() -> None:
    with pytest.raises(CommandError, match=r"ambiguous.*USB PnP.*C-Media"):
        find_device("usb", "input", DEVICES)


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(CommandError, match="cpal, none"):
        open_audio("alsa", 8000, lambda b: b"")


def test_real_portaudio_stream_on_alsa_null_device(tmp_path: Path) -> None:
    """sounddevice opens an ALSA null PCM by name and calls back with 20 ms int16 blocks.

    The null PCM has no clock, so this checks wiring (matching, open, callback, close), not timing.
    """
    require_tool(
        "libportaudio2",
        check=lambda: (
            Path("/usr/lib/x86_64-linux-gnu/libportaudio.so.2").exists()
            or Path("/usr/lib/aarch64-linux-gnu/libportaudio.so.2").exists()
        ),
    )
    (tmp_path / ".asoundrc").write_text(
        "pcm.nulldev { type null }\nctl.nulldev { type hw card 0 }\n"
    )
    script = textwrap.dedent(
        """
        import time
        from node.media.audio import SoundDeviceAudio
        sizes = []
        def exchange(mic):
            sizes.append(len(mic))
            return b"\\x01\\x00" * (len(mic) // 2)
        dev = SoundDeviceAudio(8000, exchange, input="nulldev", output="nulldev")
        dev.start()
        time.sleep(0.3)
        dev.stop()
        assert sizes and set(sizes) == {320}, set(sizes)
        print("blocks", len(sizes))
        """
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("blocks")
