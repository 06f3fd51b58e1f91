"""A tone on the receiver, with COS asserted, reaches a linked node.

Node A runs a 48 kHz-only "USB interface" on ALSA: the `radio48` PCM of tests/media/alsa_child.py
(a `file` PCM over the null PCM, behind a plug that refuses every other rate) whose capture
comes from a named pipe the test writes a 1 kHz tone into, 20 ms at a time. ALSA's null PCM has
no clock; the pipe is the receiver's clock: the capture blocks until the next 20 ms arrive. The
COS input is the fake hidraw node's volume-down pin. Node B (null audio) is linked to A, and a
softphone on B records what the link brings. With the carrier gate, the tone reaches B only
while COS is asserted.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import pytest

from tests.interop.harness import EventWatcher, running_node, wait_until
from tests.interop.softphone import Softphone, band_levels_db, rate_of
from tests.loopback import ServiceThread
from tests.media.alsa_child import asoundrc
from tests.node_process import NodeProcess, free_port
from tests.radio.fake_hidraw import FakeHidraw

pytest.importorskip("sounddevice", exc_type=OSError)

TONE_HZ = 1000.0
VOL_DOWN = 0x02
B_SECTIONS = '[register]\npeer = "127.0.0.1:9"\nnode_id = "2002"\n\n[links]\ndns = false\n'


def rx_level(node: NodeProcess) -> float:
    return float(node.get("/status").json()["audio"]["rx"]["rms_dbfs"])


class ReceiverTone(ServiceThread):
    """Writes a 1 kHz tone at 48 kHz into the pipe the `radio48` capture reads, in real time."""

    def __init__(self, fifo: Path) -> None:
        super().__init__("receiver-tone")
        os.mkfifo(fifo)
        # Read-write: the open does not wait for ALSA's reader, and the pipe never sees EOF.
        self.fd = os.open(fifo, os.O_RDWR)
        n = np.arange(960 * 50)
        wave = np.round(8000 * np.sin(2 * np.pi * TONE_HZ * n / 48000)).astype(np.int16)
        self.blocks = [wave[i : i + 960].tobytes() for i in range(0, wave.size, 960)]

    def _run(self) -> None:
        next_at = time.monotonic()
        i = 0
        while not self._stop.is_set():
            try:
                os.write(self.fd, self.blocks[i % len(self.blocks)])
            except OSError:
                return
            i += 1
            next_at += 0.02
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _release(self) -> None:
        os.close(self.fd)


@contextmanager
def radio_node_a(tmp_path: Path, hid: FakeHidraw, fifo: Path) -> Iterator[NodeProcess]:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".asoundrc").write_text(asoundrc(fifo))
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    config = tmp_path / "a.toml"
    config.write_text(
        'codec_policy = "ulaw_only"\n\n'
        f'[listener]\nbind = "127.0.0.1:{udp}"\nauth = "off"\n\n'
        f'[control]\nbind = "127.0.0.1:{http}"\n\n'
        '[audio]\nbackend = "cpal"\ninput = "radio48"\noutput = "radio48"\n\n'
        '[register]\npeer = "127.0.0.1:9"\nnode_id = "2001"\n\n[links]\ndns = false\n\n'
        f'[radio]\ncarrier = "cm108"\ncarrier_device = "{hid.path}"\nrx_audio_delay_ms = 60\n'
    )
    config.chmod(0o600)
    node = NodeProcess(
        config, udp, http, env={"HOME": str(home), "NET_NODE": "2001", "NET_SECRET": "x"}
    )
    try:
        node.wait_ready()
        yield node
    finally:
        node.kill()


def test_a_tone_on_the_receiver_with_cos_reaches_the_linked_node(tmp_path: Path) -> None:
    fifo = tmp_path / "receiver.raw"
    with ExitStack() as stack:
        hid = stack.enter_context(FakeHidraw())
        tone = ReceiverTone(fifo)
        stack.enter_context(tone)
        a = stack.enter_context(radio_node_a(tmp_path, hid, fifo))
        b = stack.enter_context(
            running_node(
                tmp_path,
                "b",
                codec_policy="ulaw_only",
                listener='auth = "off"',
                sections=B_SECTIONS,
                env={"NET_NODE": "2002", "NET_SECRET": "x"},
            )
        )
        phone = stack.enter_context(Softphone(name="listener"))
        audio = a.get("/status").json()["audio"]
        assert (audio["device_rate"], audio["rx"]["delay_ms"]) == (48000, 60)
        r = a.post(
            "/link",
            json={"action": "connect", "node": "2002", "addr": f"127.0.0.1:{b.udp_addr[1]}"},
        )
        assert r.status_code == 200, r.text
        wait_until("the link up on B", lambda: b.get("/status").json()["links"])
        callno = phone.dial(b.udp_addr, "1")
        assert phone.wait_for(lambda s: s.answered(callno))
        # The receiver hears the tone, but without a carrier nothing goes out.
        wait_until(
            "the tone on A's rx meter",
            lambda: a.get("/status").json()["audio"]["rx"]["rms_dbfs"] > -20,
        )
        time.sleep(0.5)
        assert phone.heard_ms(callno) == 0
        events = EventWatcher(a)
        hid.send_input(VOL_DOWN)
        events.wait_for(lambda e: e["event"] == "link" and e.get("keyed") is True)
        assert phone.wait_for(lambda s: s.heard_ms(callno) >= 1000, 20)
        rec = phone.recording(callno)
        (level,) = band_levels_db(rec.pcm(skip_ms=200), rate_of(rec.fmt), [TONE_HZ])
        assert level > -3.0, level  # the tone holds nearly all of what B's caller heard
        hid.send_input(0)
        events.wait_for(lambda e: e["event"] == "link" and e.get("keyed") is False)
