"""CPU per EchoLink leg against CPU per IAX2 µ-law leg, in one run: the engine thread's own CPU
time (schedstat, nanoseconds) while N legs of one kind take part in the conference.

Not a pytest benchmark (nothing here is collected): a script. Each run starts an engine at the
station rate, adds N legs of one kind, and feeds them from a peer thread in this process (only
the engine thread is measured) for `--seconds`:

- "talk": every leg talks (a tone each; EchoLink: a 144-byte GSM packet every 80 ms, made by our
  encoder; IAX2: a µ-law mini frame every 20 ms), so each leg decodes its own audio and encodes
  the mix-minus the others make for it: the whole cost of a leg in a busy conference;
- "listen": one IAX2 leg talks and the N legs listen (each encodes the mix it hears).

The cost per leg is (engine CPU with N legs - engine CPU with the talker alone) / N, printed as
µs of engine time per second of conference and as a share of one core. Build the extension in
release mode first (`maturin develop --release`).

    python benches/echolink_legs.py                 # 20 legs of each kind, 10 s per run
    python benches/echolink_legs.py --legs 5 20 --seconds 20 --rate 16000
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from node._core import Engine, GsmEncoder, MiniFrame, ulaw_encode

ULAW = 0x4
FRAME = 160
FIRST_ECHOLINK_LEG = 32768
NODE_IP = "127.0.0.61"

#: Builds the datagram of one tick from a payload.
Wire = Callable[[int, bytes], bytes]


def engine_ns() -> int:
    """CPU time of the engine thread ("iax-engine") so far, in ns."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        if (task / "comm").read_text().strip() == "iax-engine":
            return int((task / "schedstat").read_text().split()[0])
    raise RuntimeError("no engine thread")


def tone_frames(freq: float, count: int) -> list[bytes]:
    n = np.arange(count * FRAME)
    pcm = (6000 * np.sin(2 * np.pi * freq * n / 8000)).astype(np.int16)
    return [pcm[i * FRAME : (i + 1) * FRAME].tobytes() for i in range(count)]


class Peers:
    """The far ends: one UDP socket per leg, talking on a 20 ms clock from a thread."""

    def __init__(self, engine: Engine, kind: str, legs: int, talkers: str) -> None:
        self.engine, self.kind, self.stop = engine, kind, threading.Event()
        self.sockets: list[socket.socket] = []
        # (socket, payloads, destination, ticks between sends, header maker)
        self.sends: list[tuple[socket.socket, list[bytes], tuple[str, int], int, Wire]] = []
        (_, audio_port), _ = engine.echolink_open(NODE_IP, 0, 0)
        if talkers == "listen" or legs == 0:
            self._iax_leg(1, talks=True)
        for i in range(legs):
            talks = talkers == "talk"
            if kind == "echolink":
                self._echolink_leg(i, audio_port, talks)
            else:
                self._iax_leg(100 + i, talks)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _socket(self, ip: str) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        s.bind((ip, 0))
        self.sockets.append(s)
        return s

    def _iax_leg(self, callno: int, talks: bool) -> None:
        s = self._socket("127.0.0.1")
        self.engine.add_leg(callno, callno + 1000, s.getsockname(), ULAW, keying="voice", link=True)
        frames = [ulaw_encode(f) for f in tone_frames(300 + callno % 700, 50)]
        self.engine.push_voice(callno, ULAW, 0, frames[0])
        if talks:
            scall = callno + 1000

            def mini(tick: int, payload: bytes) -> bytes:
                return MiniFrame(scall, (tick * 20) & 0xFFFF, payload).to_bytes()

            self.sends.append((s, frames, self.engine.local_addr, 1, mini))

    def _echolink_leg(self, i: int, audio_port: int, talks: bool) -> None:
        ip = f"127.0.1.{i + 1}"
        s = self._socket(ip)
        self.engine.add_echolink_leg(FIRST_ECHOLINK_LEG + i, ip, port=s.getsockname()[1])
        if talks:
            gsm = GsmEncoder().encode(b"".join(tone_frames(300 + 37 * i, 48)))
            payloads = [gsm[k * 132 : (k + 1) * 132] for k in range(12)]

            def packet(tick: int, payload: bytes) -> bytes:
                return struct.pack(">BBH", 0xC0, 0x03, (tick // 4) & 0xFFFF) + bytes(8) + payload

            self.sends.append((s, payloads, (NODE_IP, audio_port), 4, packet))

    def _run(self) -> None:
        start, tick = time.monotonic(), 0
        while not self.stop.is_set():
            for s, payloads, to, every, wire in self.sends:
                if tick % every == 0:
                    s.sendto(wire(tick, payloads[(tick // every) % len(payloads)]), to)
            tick += 1
            time.sleep(max(0.0, start + tick * 0.02 - time.monotonic()))

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for s in self.sockets:
            s.close()


def measure(kind: str, legs: int, talkers: str, rate: int, seconds: float) -> float:
    """Engine CPU in µs per second of conference."""
    engine = Engine(f"{NODE_IP}:0", rate=rate, legs=max(legs, 8))
    peers = Peers(engine, kind, legs, talkers)
    peers.thread.start()
    time.sleep(1.0)  # the jitter buffers settle
    t0, c0 = time.monotonic(), engine_ns()
    time.sleep(seconds)
    used = (engine_ns() - c0) / 1e3 / (time.monotonic() - t0)
    peers.close()
    engine.stop()
    return used


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--legs", type=int, nargs="+", default=[20])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=8000, choices=[8000, 16000])
    args = ap.parse_args(argv)
    print(f"station {args.rate} Hz, {args.seconds:.0f} s per run, load {os.getloadavg()[0]:.2f}")
    head = f"{'shape':<8}{'kind':<10}{'legs':>5}{'engine µs/s':>13}{'per leg µs/s':>14}"
    print(f"{head}{'% core/leg':>12}")
    for talkers in ("talk", "listen"):
        base = measure("iax2", 0, "listen", args.rate, args.seconds)
        print(f"{talkers:<8}{'(talker)':<10}{0:>5}{base:>13.0f}{'':>14}{'':>12}")
        for legs in args.legs:
            for kind in ("echolink", "iax2"):
                used = measure(kind, legs, talkers, args.rate, args.seconds)
                per = (used - base) / legs
                line = f"{talkers:<8}{kind:<10}{legs:>5}{used:>13.0f}{per:>14.1f}"
                print(f"{line}{per / 1e4:>11.3f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
