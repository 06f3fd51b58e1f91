"""Our USRP radio against the real chan_usrp of an ASL3 node, both directions with audio.

ASL3's nodes 1999 and 1998 each have a USRP radio; our node takes the far end of 1998's (we
listen where 1998 transmits, we send where it listens) and a softphone calls into our conference.
ASL3 links 1999 to 1998 itself. A tone keyed into 1999's receiver crosses the ASL3 link and
1998's USRP radio and is heard by the caller; the caller's voice keys our USRP transmitter, which
keys 1998's receiver, and 1999 transmits it on its own USRP radio, where this test listens.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.interop.asl3 import Asl3Node, require_asl3
from tests.interop.harness import free_udp_port, wait_until
from tests.interop.softphone import Softphone
from tests.interop.test_asl3_live import key_asl3_receiver
from tests.node_process import NodeProcess, free_port


@pytest.fixture(scope="module")
def asl3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Asl3Node]:
    node = Asl3Node.install(tmp_path_factory.mktemp("asl3usrp"), require_asl3())
    node.start()
    try:
        yield node
    finally:
        node.stop()


def dominant_hz(pcm: np.ndarray, rate: int) -> float:
    x = pcm.astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spectrum) * rate / len(x))


def usrp_node(tmp_path: Path, asl3: Asl3Node) -> NodeProcess:
    rx_1998, tx_1998 = asl3.usrp["1998"]
    udp, http = free_udp_port(), free_port()
    cfg = tmp_path / "usrp.toml"
    cfg.write_text(
        f"""
[listener]
bind = "127.0.0.1:{udp}"
auth = "off"

[control]
bind = "127.0.0.1:{http}"

[audio]
backend = "usrp"

[usrp]
listen = "127.0.0.1:{tx_1998}"
peer = "127.0.0.1:{rx_1998}"

[bridge]
mode = "conference"
include_local_radio = true
"""
    )
    node = NodeProcess(cfg, udp, http)
    node.wait_ready()
    return node


class Listener:
    """Stands where node 1999's USRP radio sends: what ASL3 transmits there."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.1)

    def voice(self, seconds: float) -> np.ndarray:
        """The keyup-1 voice received within `seconds`."""
        frames: list[bytes] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                data, _ = self.sock.recvfrom(2048)
            except TimeoutError:
                continue
            keyup = struct.unpack_from(">I", data, 12)[0]
            if data[:4] == b"USRP" and keyup and len(data) == 32 + 320:
                frames.append(data[32:])
        return np.frombuffer(b"".join(frames), dtype="<i2")


def test_both_directions_through_asl3_chan_usrp(tmp_path: Path, asl3: Asl3Node) -> None:
    asl3.cli("rpt fun 1999 *31998")
    wait_until("1999 linked to 1998", lambda: asl3.links("1999").get("1998") == "ESTABLISHED", 30)
    node = usrp_node(tmp_path, asl3)
    listener = Listener(asl3.usrp["1999"][1])
    try:
        with Softphone(codec_policy="ulaw_only", name="P") as phone:
            callno = phone.dial(node.udp_addr, "1")
            assert phone.wait_for(lambda s: s.answered(callno))

            # ASL3 -> us: a 1 kHz tone keyed into 1999 reaches our caller through 1998's USRP.
            key_asl3_receiver(asl3, "1999", 2.0)
            assert phone.wait_for(lambda s: s.heard_ms(callno) >= 1000, timeout=20)
            heard = phone.recording(callno).pcm()
            loud = heard[np.abs(heard) > 500]
            assert len(loud) > 4000, "the tone, not silence"
            assert abs(dominant_hz(heard, 8000) - 1000) < 30
            stats = node.get("/status").json()["audio"]
            assert stats["rx"]["voice"] >= 50 and stats["rx"]["garbage"] == 0
            wait_until(
                "our carrier drops", lambda: not node.get("/status").json()["audio"]["carrier"], 20
            )
            wait_until("1999 idle", lambda: "RPT_TXKEYED=0" in _txkeyed(asl3, "1999"), 30)
            listener.voice(0.5)  # whatever 1999 sent on its own (telemetry) is not ours

            # us -> ASL3: the caller's 600 Hz keys our USRP transmitter, 1998's receiver, and
            # 1999 transmits it.
            t = np.arange(int(2.5 * 8000)) / 8000
            phone.send_pcm(callno, (8000 * np.sin(2 * np.pi * 600 * t)).astype(np.int16))
            got = listener.voice(6.0)
            assert len(got) >= 8000, f"{len(got)} samples from 1999's transmitter"
            loudest = got[np.abs(got) > 300]
            assert len(loudest) > 2000
            assert abs(dominant_hz(got, 8000) - 600) < 30
            tx = node.get("/status").json()["audio"]["tx"]
            assert tx["frames"] >= 50
            wait_until(
                "our PTT released",
                lambda: not node.get("/status").json()["radio"]["ptt"]["keyed"],
                20,
            )
            assert node.get("/status").json()["audio"]["tx"]["dropped"] == 0  # no send errors
    finally:
        listener.sock.close()
        node.kill()
        asl3.cli("rpt fun 1999 *11998")


def _txkeyed(asl3: Asl3Node, node: str) -> str:
    v = asl3.variables(node)
    return f"RPT_TXKEYED={v.get('RPT_TXKEYED', '')}"
