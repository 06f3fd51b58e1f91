"""N emulated IAX2 µ-law peers on loopback, in their own process so the node's CPU is its own.

Each peer has its own UDP socket (its own address, as real peers have). A talking peer talks
all the time: one full VOICE frame, then a mini frame every 20 ms on an absolute schedule, a
steady tone of its own frequency. With `--talkers K` only the first K peers talk; the others
listen (they send nothing but ACKs), the shape of a big hub where a few stations talk at once.
Talkers are spread over up to 8 send phases inside the 20 ms period, as independent callers
would be. Every peer counts what the node sends it; gaps in the timestamps
of a leg's stream are frames the node never sent. Peer 0 ("A") replaces some of its frames with
an impulse and peer 1 ("B") times when the impulse arrives in the mix it hears: the node's
added one-way latency (jitter buffer, tick phase, processing), on one clock.

Protocol with the harness: JSON lines. On start it prints {"ports", "callnos", "pid"}; then it
answers one line per command read on stdin: "start", "stats", "stop_sending", "exit".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import selectors
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from node import _core

FRAME_S = 0.020
SAMPLES = 160
RATE = 8000
#: The peers' first timestamp: 5 s before the 16-bit wrap, so every run's measured window
#: has the mini-frame timestamps wrap (and the full voice frame that announces it).
TS0 = 0x10000 - 5000
MAX_PHASES = 8
VOICE = 2
IAX = 6
IAX_ACK = 4
ULAW = 0x4
IMPULSE_LEVEL = 28000
IMPULSE_SAMPLES = 8
IMPULSE_THRESHOLD = 14000
#: An impulse not heard within this long is counted as missed.
IMPULSE_TIMEOUT_S = 1.0
RCVBUF = 1 << 18


def tone_frames(index: int, legs: int, rng: np.random.Generator) -> np.ndarray:
    """One second (50 frames) of peer `index`'s tone as int16, shape (50, 160).

    Frequencies are 250 + 25*index Hz (whole cycles per second, so the second loops cleanly);
    the level falls with sqrt(legs) so the sum a listener hears stays well inside int16.
    """
    freq = 250.0 + 25.0 * index
    amp = 2400.0 / math.sqrt(legs)
    t = np.arange(RATE) / RATE
    x = amp * np.sin(2 * np.pi * freq * t + rng.uniform(0, 2 * np.pi))
    return np.round(x).astype(np.int16).reshape(50, SAMPLES)


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "max": None}
    v = sorted(values)
    return {"p50": v[len(v) // 2], "p99": v[(len(v) - 1) * 99 // 100], "max": v[-1]}


@dataclass
class Peer:
    index: int
    sock: socket.socket
    callno: int
    frames: list[bytes]
    node_callno: int = 0
    phase: int = 0
    oseq: int = 0
    iseq: int = 0
    sent: int = 0
    acks_sent: int = 0
    # What the node sent this peer.
    received: int = 0
    full_voice_in: int = 0
    acks_in: int = 0
    other_in: int = 0
    misrouted: int = 0
    gaps: int = 0
    out_of_order: int = 0
    last_ts: int | None = None
    last_sent_ts: int | None = None


@dataclass
class Impulses:
    """Impulses A sends (by frame number) and the latency B measured for each."""

    frames: set[int] = field(default_factory=set)
    pending_since: float | None = None
    latencies_ms: list[float] = field(default_factory=list)
    sent: int = 0
    missed: int = 0


class Peers:
    def __init__(self, node: tuple[str, int], legs: int, talkers: int | None = None) -> None:
        self.node = node
        self.talkers = legs if talkers is None else max(2, min(talkers, legs))
        self.sel = selectors.DefaultSelector()
        rng = np.random.default_rng(20261122 + legs)
        tones = [tone_frames(i, self.talkers, rng) for i in range(legs)]
        # What B hears when nobody sends an impulse: everyone but B. Its peak must stay well
        # below the impulse so detection cannot fire on the tones.
        self.background_peak = (
            int(np.abs(np.sum(tones[: self.talkers], axis=0, dtype=np.int32) - tones[1]).max())
            if legs > 1
            else 0
        )
        self.impulse_frames = []
        for f in tones[0]:
            g = f.copy()
            g[:IMPULSE_SAMPLES] = IMPULSE_LEVEL
            self.impulse_frames.append(_core.ulaw_encode(g.tobytes()))
        self.peers: list[Peer] = []
        for i in range(legs):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            sock.bind(("127.0.0.1", 0))
            sock.connect(node)
            sock.setblocking(False)
            frames = [_core.ulaw_encode(f.tobytes()) for f in tones[i]]
            peer = Peer(i, sock, 2000 + i, frames)
            self.peers.append(peer)
            self.sel.register(sock, selectors.EVENT_READ, peer)
        self.phases = min(MAX_PHASES, self.talkers)
        self.groups: list[list[Peer]] = [[] for _ in range(self.phases)]
        for p in self.peers[: self.talkers]:
            p.phase = p.index % self.phases
            self.groups[p.phase].append(p)
        self.t0 = 0.0
        self.next_frame = [0] * self.phases
        self.sending = False
        self.send_lateness_ms: list[float] = []
        self.impulses = Impulses()
        self.started_at: float | None = None

    # --- sending ---------------------------------------------------------------------------

    def due(self, phase: int) -> float:
        return self.t0 + (self.next_frame[phase] + phase / self.phases) * FRAME_S

    def send_due(self, now: float) -> None:
        for phase in range(self.phases):
            while self.due(phase) <= now:
                self.send_lateness_ms.append((now - self.due(phase)) * 1000.0)
                k = self.next_frame[phase]
                for p in self.groups[phase]:
                    self.send_frame(p, k, now)
                self.next_frame[phase] = k + 1

    def send_frame(self, p: Peer, k: int, now: float) -> None:
        ts = TS0 + 20 * k
        if p.index == 0 and k in self.impulses.frames:
            payload = self.impulse_frames[k % 50]
            self.impulses.sent += 1
            if self.impulses.pending_since is not None:
                self.impulses.missed += 1
            self.impulses.pending_since = now
        else:
            payload = p.frames[k % 50]
        # A full frame starts the stream and follows every change of the timestamp's upper
        # 16 bits (what a mini frame cannot carry), as Asterisk does.
        if p.last_sent_ts is None or (ts >> 16) != (p.last_sent_ts >> 16):
            data = _core.FullFrame(
                VOICE,
                ULAW,
                scall=p.callno,
                dcall=p.node_callno,
                ts=ts,
                oseq=p.oseq,
                iseq=p.iseq,
                payload=payload,
            ).to_bytes()
            p.oseq = (p.oseq + 1) & 0xFF
        else:
            data = struct.pack("!HH", p.callno, ts & 0xFFFF) + payload
        p.last_sent_ts = ts
        try:
            p.sock.send(data)
            p.sent += 1
        except OSError:
            # A refused send (the node gone) shows up as frames the node never received.
            pass

    # --- receiving -------------------------------------------------------------------------

    def receive(self, p: Peer) -> None:
        while True:
            try:
                data = p.sock.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            now = time.monotonic()
            if len(data) < 4:
                p.other_in += 1
                continue
            if data[0] & 0x80:
                if len(data) < 12:
                    p.other_in += 1
                    continue
                scall = ((data[0] & 0x7F) << 8) | data[1]
                (ts,) = struct.unpack_from("!I", data, 4)
                ftype, csub = data[10], data[11]
                if ftype == IAX and csub == IAX_ACK:
                    p.acks_in += 1
                    continue
                if ftype != VOICE:
                    p.other_in += 1
                    continue
                p.full_voice_in += 1
                p.iseq = (data[8] + 1) & 0xFF
                self.ack(p, ts)
                payload = data[12:]
            else:
                scall = (data[0] << 8) | data[1]
                ts16 = (data[2] << 8) | data[3]
                last = p.last_ts if p.last_ts is not None else 0
                ts = (last & ~0xFFFF) | ts16
                if ts < last - 0x8000:
                    ts += 0x10000
                elif ts > last + 0x8000 and ts >= 0x10000:
                    ts -= 0x10000
                payload = data[4:]
            if scall != p.node_callno:
                p.misrouted += 1
                continue
            p.received += 1
            if p.last_ts is not None:
                step = ts - p.last_ts
                if step > 20:
                    p.gaps += step // 20 - 1
                elif step <= 0:
                    p.out_of_order += 1
            p.last_ts = ts if p.last_ts is None else max(ts, p.last_ts)
            if p.index == 1:
                self.listen_for_impulse(payload, now)

    def ack(self, p: Peer, ts: int) -> None:
        ack = _core.FullFrame(
            IAX, IAX_ACK, scall=p.callno, dcall=p.node_callno, ts=ts, oseq=p.oseq, iseq=p.iseq
        )
        try:
            p.sock.send(ack.to_bytes())
            p.acks_sent += 1
        except OSError:
            pass

    def listen_for_impulse(self, payload: bytes, now: float) -> None:
        imp = self.impulses
        if imp.pending_since is None:
            return
        if now - imp.pending_since > IMPULSE_TIMEOUT_S:
            imp.missed += 1
            imp.pending_since = None
            return
        pcm = np.frombuffer(_core.ulaw_decode(payload), np.int16)
        if pcm.size and int(np.abs(pcm.astype(np.int32)).max()) >= IMPULSE_THRESHOLD:
            imp.latencies_ms.append((now - imp.pending_since) * 1000.0)
            imp.pending_since = None

    # --- control ---------------------------------------------------------------------------

    def start(self, node_callnos: list[int], impulse_at_s: list[float]) -> None:
        for p, c in zip(self.peers, node_callnos, strict=True):
            p.node_callno = int(c)
        self.t0 = time.monotonic() + 0.05
        self.started_at = self.t0
        self.impulses.frames = {round(t / FRAME_S) for t in impulse_at_s}
        self.sending = True

    def stats(self) -> dict[str, Any]:
        ps = self.peers
        return {
            "sent": sum(p.sent for p in ps),
            "acks_sent": sum(p.acks_sent for p in ps),
            "received_per_leg": [p.received for p in ps],
            "received": sum(p.received for p in ps),
            "full_voice_in": sum(p.full_voice_in for p in ps),
            "acks_in": sum(p.acks_in for p in ps),
            "other_in": sum(p.other_in for p in ps),
            "misrouted": sum(p.misrouted for p in ps),
            "gaps": sum(p.gaps for p in ps),
            "legs_with_gaps": sum(1 for p in ps if p.gaps),
            "out_of_order": sum(p.out_of_order for p in ps),
            "send_lateness_ms": percentiles(self.send_lateness_ms),
            "impulses": {
                "sent": self.impulses.sent,
                "heard": len(self.impulses.latencies_ms),
                "missed": self.impulses.missed,
                "latency_ms": list(self.impulses.latencies_ms),
            },
            "talkers": self.talkers,
            "background_peak": self.background_peak,
            "impulse_threshold": IMPULSE_THRESHOLD,
        }

    def run(self) -> None:
        stdin = sys.stdin.buffer.raw  # type: ignore[attr-defined]
        os.set_blocking(stdin.fileno(), False)
        self.sel.register(stdin, selectors.EVENT_READ, None)
        pending = b""
        reply(
            {
                "ports": [p.sock.getsockname()[1] for p in self.peers],
                "callnos": [p.callno for p in self.peers],
                "pid": os.getpid(),
            }
        )
        while True:
            now = time.monotonic()
            if self.sending:
                self.send_due(now)
                timeout = max(0.0, min(self.due(g) for g in range(self.phases)) - now)
            else:
                timeout = 0.5
            for key, _ in self.sel.select(timeout):
                if key.data is not None:
                    self.receive(key.data)
                    continue
                chunk = stdin.read(65536)
                if chunk == b"":
                    return  # the harness went away
                pending += chunk or b""
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if self.command(json.loads(line)):
                        return

    def command(self, cmd: dict[str, Any]) -> bool:
        name = cmd["cmd"]
        if name == "start":
            self.start(cmd["node_callnos"], cmd["impulse_at_s"])
            reply({"ok": True})
        elif name == "stats":
            reply(self.stats())
        elif name == "stop_sending":
            self.sending = False
            reply({"ok": True})
        elif name == "exit":
            reply(self.stats())
            return True
        else:
            reply({"error": f"unknown command {name!r}"})
        return False


def reply(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--node", required=True, help="host:port of the node's IAX2 socket")
    ap.add_argument("--legs", type=int, required=True)
    ap.add_argument("--talkers", type=int, help="peers that talk (default: all)")
    args = ap.parse_args()
    host, port = args.node.rsplit(":", 1)
    Peers((host, int(port)), args.legs, args.talkers).run()


if __name__ == "__main__":
    main()
