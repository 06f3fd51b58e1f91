"""CPU per EchoLink station: our node and SvxLink, each with the same stations talking to it, in
one run.

Not a pytest benchmark (nothing here is collected): a script, like benches/pi_sizing.py.

N stand-in EchoLink stations (each on its own 127.0.x.y with real UDP 5198/5199, speaking RTCP
from `node.echolink.packets`) connect to the station under test through a directory stand-in,
then all talk at once: an audio packet every 80 ms (four GSM frames of a tone, encoded by libgsm),
as EchoLink clients send. The station under test decodes every station's audio, mixes, and
encodes a mix for each. The script reads the process's CPU over `--seconds` idle (the stations
connected, silent) and talking, and prints the % of one core per talking station for both, and
the ratio.

    python benches/echolink_stations.py                   # 10 stations, 20 s
    python benches/echolink_stations.py --stations 10 --seconds 30

SvxLink (Debian `svxlink-server`) holds at most `MAX_QSOS` stations; the stand-ins connect to it
as to our node. Needs libgsm1. Only loopback addresses are used.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.echolink.conftest import NODE_CALL, NODE_NUMBER, NODE_PASSWORD, start_node, stop  # noqa: E402
from tests.echolink.directory_standin import Account, DirectoryStandIn  # noqa: E402
from tests.echolink.svxlink import SvxLink  # noqa: E402
from tests.libgsm import LibGsm, load  # noqa: E402
from tests.load.harness import cpu_seconds  # noqa: E402

from node.echolink import packets as p  # noqa: E402

SVX_CALL = "SV1AAA-L"


class Talker:
    """A stand-in station on `ip`: connects to `target` and, while `talking`, sends audio."""

    def __init__(self, ip: str, callsign: str, packets: list[bytes]) -> None:
        self.ip, self.callsign, self.packets = ip, callsign, packets
        self.control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.control.bind((ip, 5199))
        self.control.settimeout(0.5)
        self.audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.audio.bind((ip, 5198))
        self.audio.setblocking(False)

    def connect(self, target: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.control.sendto(p.build_sdes(self.callsign, "bench"), (target, 5199))
            try:
                data, _ = self.control.recvfrom(2048)
            except TimeoutError:
                continue
            if isinstance(p.parse_control(data), p.Sdes):
                return
        raise RuntimeError(f"{self.callsign} could not connect to {target}")

    def drain(self) -> None:
        while True:
            try:
                self.audio.recv(2048)
            except BlockingIOError:
                return

    def close(self, target: str) -> None:
        self.control.sendto(p.build_bye(), (target, 5199))
        self.control.close()
        self.audio.close()


def gsm_packets(seconds: float) -> list[bytes]:
    lib = load()
    if lib is None:
        sys.exit("libgsm1 is needed")
    n = np.arange(int(8000 * seconds))
    pcm = np.round(6000 * np.sin(2 * np.pi * 600 * n / 8000)).astype(np.int16)
    frames = LibGsm(lib).encode_all(pcm)
    out = []
    for seq, i in enumerate(range(0, len(frames) - 132 + 1, 132)):
        out.append(
            bytes((0xC0, 0x03)) + (seq & 0xFFFF).to_bytes(2, "big") + bytes(8) + frames[i : i + 132]
        )
    return out


def measure(pid: int, talkers: list[Talker], target: str, seconds: float) -> tuple[float, float]:
    """(% of a core idle, % of a core with every station talking) of process `pid`."""

    def window(talking: bool) -> float:
        stop = threading.Event()

        def pump() -> None:
            start, i = time.monotonic(), 0
            while not stop.is_set():
                for t in talkers:
                    if talking:
                        t.audio.sendto(t.packets[i % len(t.packets)], (target, 5198))
                    t.drain()
                i += 1
                ahead = start + i * 0.08 - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        time.sleep(2.0)
        c0, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        used = 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        stop.set()
        thread.join()
        return used

    return window(False), window(True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stations", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    n = args.stations
    prefix = "127.0.77"
    packets = gsm_packets(8.0)
    accounts = [Account(NODE_CALL, NODE_PASSWORD, NODE_NUMBER), Account(SVX_CALL, "svx", "111111")]
    work = Path(tempfile.mkdtemp(prefix="el-bench-"))
    results = {}
    for who in ("node", "svxlink"):
        talkers = [Talker(f"{prefix}.{10 + i}", f"BN{i:02d}CH-L", packets) for i in range(n)]
        extra = [(Account(t.callsign, "x", str(300000 + i)), t.ip) for i, t in enumerate(talkers)]
        with DirectoryStandIn(f"{prefix}.1", accounts, extra=extra) as directory:
            if who == "node":
                target = f"{prefix}.3"
                (work / "node").mkdir()
                node = start_node(work / "node", target, directory.host, max_stations=n)
                pid, finish = node.proc.pid, lambda node=node: stop(node)
                time.sleep(2.0)
            else:
                target = f"{prefix}.2"
                (work / "svx").mkdir()
                svx = SvxLink(
                    work / "svx",
                    ip=target,
                    callsign=SVX_CALL,
                    password="svx",
                    directory_host=directory.host,
                )
                svx.start()
                assert svx.proc is not None
                pid, finish = svx.proc.pid, svx.stop
            try:
                for t in talkers:
                    t.connect(target)
                idle, talking = measure(pid, talkers, target, args.seconds)
            finally:
                for t in talkers:
                    t.close(target)
                finish()
        results[who] = (idle, talking)
        print(
            f"{who:8s} {n} stations: idle {idle:5.1f} % of a core, talking {talking:5.1f} %, "
            f"{(talking - idle) / n:5.2f} % per talking station"
        )
    per = {k: (v[1] - v[0]) / n for k, v in results.items()}
    print(f"ratio (node / SvxLink, per talking station): {per['node'] / per['svxlink']:.2f}")


if __name__ == "__main__":
    main()
