"""Audio backends: the paced null device, device selection by name and rate, and the sounddevice
backend on ALSA's null PCM (a 48 kHz-only card among them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from node.errors import CommandError
from node.media.audio import NullAudio, block_samples, find_device, open_audio
from tests.conftest import require_tool
from tests.media.alsa_child import TONE_PEAK, asoundrc, write_tone

REPO = Path(__file__).resolve().parents[2]

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


def test_the_null_device_has_no_clock_and_trades_no_blocks() -> None:
    """The null backend: nothing is exchanged and no thread runs (an idle node must not wake
    50 times a second to hand the engine silence it would ignore)."""
    calls: list[bytes] = []
    before = threading.active_count()
    dev = NullAudio(16000)
    dev.start(lambda mic: calls.append(mic) or b"")
    time.sleep(0.1)
    assert threading.active_count() == before and calls == []
    dev.stop()
    assert dev.stats.blocks == 0
    assert dev.describe() == {
        "backend": "none",
        "rate": 16000,
        "device_rate": 16000,
        "block_ms": None,
        "input": None,
        "output": None,
    }


def test_null_device_runs_at_the_device_rate_it_is_given() -> None:
    dev = NullAudio(8000, device_rate=48000)
    assert (dev.rate, dev.device_rate) == (8000, 48000)
    assert dev.describe()["device_rate"] == 48000
    assert NullAudio(16000).device_rate == 16000


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
        open_audio("alsa", 8000)


def run_on_alsa(tmp_path: Path, scenario: str) -> dict[str, Any]:
    """Run a scenario of tests/media/alsa_child.py with the test PCMs in its HOME."""
    require_tool(
        "libportaudio2",
        check=lambda: (
            Path("/usr/lib/x86_64-linux-gnu/libportaudio.so.2").exists()
            or Path("/usr/lib/aarch64-linux-gnu/libportaudio.so.2").exists()
        ),
    )
    tone = tmp_path / "tone48k.raw"
    write_tone(tone)
    (tmp_path / ".asoundrc").write_text(asoundrc(tone))
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "tests.media.alsa_child", scenario],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_a_card_that_takes_the_station_rate_is_opened_at_it(tmp_path: Path) -> None:
    """sounddevice opens an ALSA null PCM by name and calls back with 5 ms int16 blocks."""
    seen = run_on_alsa(tmp_path, "station_rate_device")
    assert seen["device_rate"] == 8000
    assert seen["sizes"] == [2 * block_samples(8000)] == [80]
    assert seen["blocks"] > 0


def test_a_48k_only_card_refuses_the_station_rate_with_the_accepted_rates(
    tmp_path: Path,
) -> None:
    seen = run_on_alsa(tmp_path, "radio48_refuses_8k")
    assert seen["status"] == 500
    msg = seen["error"]
    assert "8000 Hz:" in msg and "radio48" in msg
    assert "accepted device rates: 8000 (the station rate), 48000 (44100 is not supported)" in msg


def test_a_48k_only_card_is_opened_at_48k_and_audio_flows_at_the_station_rate(
    tmp_path: Path,
) -> None:
    seen = run_on_alsa(tmp_path, "radio48_flow")
    audio = seen["audio"]
    assert (audio["backend"], audio["rate"], audio["device_rate"]) == ("cpal", 8000, 48000)
    assert audio["block_ms"] == 5 and audio["filter_delay_ms"] == 2.49
    assert audio["running"] is True and audio["blocks"] > 0
    # The card's 1 kHz tone (-12.25 dBFS at 48 kHz) is metered at 8 kHz after the conversion...
    assert audio["rx"]["frames"] > 0
    assert abs(audio["rx"]["peak_dbfs"] - (-12.25)) <= 0.2, audio["rx"]
    # ... and reaches the call as 20 ms µ-law frames at 8 kHz, at its level within 0.5 dB.
    assert seen["frames"] == 40
    levels = sorted(seen["levels"])
    median = levels[len(levels) // 2]
    assert abs(median / TONE_PEAK - 1) < 0.06, levels
    # The conference plays to the card too (silence here: nobody else talks).
    assert audio["tx"]["frames"] > 0
    for key in ("late", "dropped", "gain_db", "peak_dbfs", "rms_dbfs", "peak_hold_dbfs"):
        assert key in audio["rx"] and key in audio["tx"]
    assert "overflows" in audio["rx"] and "underflows" in audio["tx"]
