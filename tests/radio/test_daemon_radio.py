"""The radio edge of a running `node serve`: a CM108 interface faked at its hidraw node (a pty,
tests/radio/fake_hidraw.py), a caller on a real IAX2 call, the event stream and /status.

A caller's voice keys the transmitter and the hang time releases it; the TX time-out cuts a
transmission that does not end; the PTT is released on SIGTERM and, after SIGKILL, by
`node ptt-release` as the systemd unit's ExecStopPost runs it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.interop.harness import EventWatcher, running_node
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess
from tests.radio.fake_hidraw import KEY_GPIO3, UNKEY_GPIO3, FakeHidraw

#: The local radio hears the conference: a caller's voice goes to its transmitter.
CONFERENCE = '[bridge]\nmode = "conference"\ninclude_local_radio = true\n\n'


def radio_section(hid: FakeHidraw, extra: str = "") -> str:
    return f'[radio]\nptt = "cm108"\nptt_device = "{hid.path}"\n{extra}\n'


@contextmanager
def radio_node(tmp_path: Path, hid: FakeHidraw, extra: str = "") -> Iterator[NodeProcess]:
    with running_node(
        tmp_path,
        "radio",
        codec_policy="ulaw_only",
        listener='auth = "off"',
        sections=CONFERENCE + radio_section(hid, extra),
    ) as node:
        yield node


def ptt_events(events: EventWatcher) -> list[dict]:
    return [e for e in events.named("radio") if e["kind"] == "ptt"]


def test_a_callers_voice_keys_the_ptt_and_the_hang_time_releases_it(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        radio_node(tmp_path, hid, "hang_time_ms = 1500") as node,
        Softphone(tone_hz=700, name="caller") as phone,
    ):
        # Opened released, nothing else while nobody talks.
        assert hid.reports() == [UNKEY_GPIO3]
        snap = node.get("/status").json()["radio"]
        assert snap["ptt"] == {
            "backend": "cm108",
            "device": hid.path,
            "pin": 3,
            "keyed": False,
            "hang_ms": 1500,
            "timeout_s": 180,
            "timeout_remaining_s": None,
            "timed_out": False,
            "timeouts": 0,
        }
        events = EventWatcher(node)
        callno = phone.dial(node.udp_addr, "1")
        keyed = events.wait_for(lambda e: e["event"] == "radio" and e["kind"] == "ptt")
        assert keyed == {"event": "radio", "kind": "ptt", "on": True}
        assert hid.wait_reports(2)[1] == KEY_GPIO3
        status = node.get("/status").json()["radio"]
        assert status["ptt"]["keyed"] and status["tx_audio"]
        assert 0 < status["ptt"]["timeout_remaining_s"] <= 180
        phone.stop_talking(callno)
        released = events.wait_for(
            lambda e: e["event"] == "radio" and e["kind"] == "ptt" and not e["on"]
        )
        assert released["reason"] == "hang time (1500 ms) over"
        # The transmitter went quiet before the hang time began: the snapshot said so first.
        quiet = [
            i
            for i, e in enumerate(events.events)
            if e["event"] == "snapshot"
            and e.get("radio", {}).get("tx_audio") is False
            and e["radio"]["ptt"]["keyed"]
        ]
        assert quiet and quiet[0] < events.events.index(released)
        assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3, UNKEY_GPIO3]
        assert [e["on"] for e in ptt_events(events)] == [True, False]
        phone.hangup(callno)
        node.signal(signal.SIGTERM)
        assert node.wait() == 0
        # SIGTERM with the PTT released: the line is written released once more on the way out.
        assert hid.reports()[-1] == UNKEY_GPIO3


def test_the_tx_time_out_cuts_a_transmission_that_does_not_end(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        running_node(
            tmp_path,
            "radio",
            codec_policy="ulaw_only",
            listener='auth = "off"',
            sections=CONFERENCE
            + radio_section(hid, "hang_time_ms = 200")
            + "[keying]\ntx_timeout_secs = 1\n",
        ) as node,
        Softphone(tone_hz=700, name="stuck") as phone,
    ):
        events = EventWatcher(node)
        phone.dial(node.udp_addr, "1")
        cut = events.wait_for(
            lambda e: e["event"] == "radio" and e["kind"] == "ptt" and not e["on"]
        )
        assert cut["reason"] == "TX time-out after 1 s"
        radio = node.get("/status").json()["radio"]
        # Held off while the caller talks on: no new key-up.
        assert radio["ptt"]["timed_out"] and radio["ptt"]["timeouts"] == 1
        assert radio["tx_audio"] and not radio["ptt"]["keyed"]
        assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3, UNKEY_GPIO3]


def ptt_release(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "node", "ptt-release", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_after_sigkill_node_ptt_release_releases_the_keyed_ptt(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        radio_node(tmp_path, hid, "hang_time_ms = 60000") as node,
        Softphone(tone_hz=700, name="caller") as phone,
    ):
        events = EventWatcher(node)
        phone.dial(node.udp_addr, "1")
        events.wait_for(lambda e: e["event"] == "radio" and e["kind"] == "ptt" and e["on"])
        node.signal(signal.SIGKILL)
        node.wait()
        # Killed keyed: nothing ran on the way out, the interface's GPIO3 is still high.
        assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3]
        done = ptt_release(node.config)
        assert done.returncode == 0, done.stderr
        assert "PTT released (cm108 on " in done.stderr
        assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3, UNKEY_GPIO3]


def test_ptt_release_without_a_ptt_or_with_a_bad_config(tmp_path: Path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text("[listener]\n[control]\n")
    done = ptt_release(plain)
    assert done.returncode == 0 and "nothing to release" in done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[listener]\n[control]\n[radio]\nptt = "cm108"\n')
    done = ptt_release(bad)
    assert done.returncode == 78 and "radio.ptt_device: is required" in done.stderr
    gone = tmp_path / "gone.toml"
    gone.write_text(f'[listener]\n[control]\n[radio]\nptt = "cm108"\nptt_device = "{tmp_path}/x"\n')
    done = ptt_release(gone)
    assert done.returncode == 1 and "cannot open CM108 hidraw node" in done.stderr
