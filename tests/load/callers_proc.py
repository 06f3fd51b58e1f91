"""IAX2 callers on loopback that place real calls to a running node (`node serve`).

Each caller socket runs the node's own sans-I/O `Endpoint` for signalling (NEW with a call
token, ACCEPT, ANSWER, keep-alives, HANGUP), so every call goes through the node's full Python
path: admission, call token, its `Call` machine, the controller and an engine leg. Calls are
spread over `--sockets` UDP sockets (distinct peer addresses). The first `--talkers` answered
calls talk: a full µ-law VOICE frame, then a mini frame every 20 ms; every call counts the mini
frames the node sends it.

Modes (one run, then a JSON summary on stdout):

- `setup`: place `--calls` calls at `--rate` new calls per second, hold them `--hold` seconds,
  hang them all up. Reports how many were answered, refused or lost, and setup times.
- `churn`: keep about `--calls` calls up for `--duration` seconds; every `--churn-every`
  seconds hang up one random call and place a new one (calls coming and going, for the soak).

With `--as-nodes NODE` every call presents itself as an AllStarLink node linking to NODE (user
`radio`, node numbers 3000 and up), so the node takes them as inbound links.

Only loopback addresses are used; every loop is bounded by the run's duration.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import json
import math
import random
import secrets
import selectors
import socket
import struct
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from node._core import FullFrame, parse, ulaw_encode
from node.iax2.call import (
    CallAnswered,
    CallHungUp,
    CallLost,
    CallRejected,
    DialParams,
)
from node.iax2.endpoint import Endpoint, InboundPolicy, InboundRejected

ULAW = 0x4
VOICE = 2
FRAME_S = 0.020
RCVBUF = 1 << 21


@dataclass
class Placed:
    sock: int
    callno: int
    placed_at: float
    answered_at: float | None = None
    ended: str | None = None
    talker: bool = False
    node_callno: int = 0
    minis_in: int = 0
    frames_out: int = 0
    #: The node's last audio timestamp (low 16 bits) and the frames missing between them.
    last_ts16: int | None = None
    gaps: int = 0


#: What the callers count of their calls, in the order the summary lists it.
COUNTS = ("placed", "answered", "rejected", "lost", "hung_up_by_node", "hung_up_by_us")


@dataclass
class Stats:
    #: Calls by what became of them, one of COUNTS each.
    calls: Counter[str] = field(default_factory=Counter)
    setup_ms: list[float] = field(default_factory=list)
    #: Rejections by cause.
    causes: Counter[str] = field(default_factory=Counter)


class Callers:
    def __init__(
        self, node: tuple[str, int], sockets: int, talkers: int, as_nodes: str | None = None
    ) -> None:
        """`as_nodes`: call node `as_nodes` as AllStarLink nodes do (user `radio`, a node number
        calling), so that the node takes every call as an inbound link."""
        self.node = node
        self.talkers = talkers
        self.as_nodes = as_nodes
        self.sel = selectors.DefaultSelector()
        self.socks: list[socket.socket] = []
        self.eps: list[Endpoint] = []
        for i in range(sockets):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            self.socks.append(s)
            self.sel.register(s, selectors.EVENT_READ, i)
            self.eps.append(
                Endpoint(
                    InboundPolicy(enabled=False, auth="off"),
                    "ulaw_only",
                    token_key=secrets.token_bytes(32),
                    randbelow=secrets.randbelow,
                )
            )
        self.calls: dict[tuple[int, int], Placed] = {}
        self.by_node_callno: dict[tuple[int, int], Placed] = {}
        self.stats = Stats()
        self.timers: list[tuple[float, int]] = []
        self.talking: list[Placed] = []
        self.next_voice = 0.0
        self.voice_k = 0
        #: Talkers send only while this is set (`--talk-after-setup` clears it during set-up).
        self.voice_on = True

    # --- signalling -----------------------------------------------------------------------

    def _send(self, i: int, out: Any, now: float) -> None:
        for addr, frame in out.frames:
            with contextlib.suppress(OSError):
                self.socks[i].sendto(frame.to_bytes(), addr)
        for ev in out.events:
            self._event(i, ev, now)
        deadline = self.eps[i].next_deadline()
        if deadline is not None:
            heapq.heappush(self.timers, (deadline, i))

    def _event(self, i: int, ev: Any, now: float) -> None:
        if isinstance(ev, InboundRejected):
            return
        call = self.calls.get((i, getattr(ev, "callno", -1)))
        if call is None:
            return
        if isinstance(ev, CallAnswered) and call.answered_at is None:
            call.answered_at = now
            self.stats.calls["answered"] += 1
            self.stats.setup_ms.append((now - call.placed_at) * 1000.0)
            c = self.eps[i].call(call.callno)
            if c is not None and c.peer_callno is not None:
                call.node_callno = c.peer_callno
                self.by_node_callno[(i, c.peer_callno)] = call
            if len(self.talking) < self.talkers:
                if not self.talking:
                    self.next_voice = now
                call.talker = True
                self.talking.append(call)
        elif isinstance(ev, CallRejected) and call.ended is None:
            call.ended = "rejected"
            self.stats.calls["rejected"] += 1
            self.stats.causes[ev.cause] += 1
            self._forget(i, call)
        elif isinstance(ev, CallLost) and call.ended is None:
            call.ended = "lost"
            self.stats.calls["lost"] += 1
            self._forget(i, call)
        elif isinstance(ev, CallHungUp) and call.ended is None:
            call.ended = "hung_up_by_node"
            self.stats.calls["hung_up_by_node"] += 1
            self._forget(i, call)

    def _forget(self, i: int, call: Placed) -> None:
        self.calls.pop((i, call.callno), None)
        self.by_node_callno.pop((i, call.node_callno), None)
        if call in self.talking:
            self.talking.remove(call)

    def place(self, now: float) -> None:
        placed = self.stats.calls["placed"]
        i = placed % len(self.socks)
        if self.as_nodes is not None:
            params = DialParams(self.as_nodes, calling_number=str(3000 + placed), username="radio")
        else:
            params = DialParams("1000", calling_number=f"9{placed:05d}")
        callno, out = self.eps[i].dial(now, self.node, params)
        self.stats.calls["placed"] += 1
        self.calls[(i, callno)] = Placed(i, callno, now)
        self._send(i, out, now)

    def hangup(self, call: Placed, now: float) -> None:
        if call.ended is not None:
            return
        call.ended = "hung_up_by_us"
        self.stats.calls["hung_up_by_us"] += 1
        self._forget(call.sock, call)
        self._send(call.sock, self.eps[call.sock].hangup(call.callno, now), now)

    def up(self) -> list[Placed]:
        return [c for c in self.calls.values() if c.answered_at is not None and not c.ended]

    # --- media ----------------------------------------------------------------------------

    def _voice(self, now: float) -> None:
        while self.voice_on and self.talking and now >= self.next_voice:
            k = self.voice_k
            for call in self.talking:
                ts = 20 * k + 1000
                if call.frames_out == 0:
                    ep = self.eps[call.sock]
                    if call.callno in ep.calls:
                        self._send(
                            call.sock,
                            ep.send_voice_full(call.callno, now, ULAW, TONE[k % 50], ts),
                            now,
                        )
                else:
                    data = struct.pack("!HH", call.callno, ts & 0xFFFF) + TONE[k % 50]
                    with contextlib.suppress(OSError):
                        self.socks[call.sock].sendto(data, self.node)
                call.frames_out += 1
            self.voice_k += 1
            self.next_voice += FRAME_S

    # --- the loop -------------------------------------------------------------------------

    def poll(self, timeout: float) -> None:
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, i = heapq.heappop(self.timers)
            ep = self.eps[i]
            d = ep.next_deadline()
            if d is not None and d <= now:
                self._send(i, ep.timer(now), now)
            elif d is not None:
                heapq.heappush(self.timers, (d, i))
        self._voice(now)
        if self.timers:
            timeout = min(timeout, max(0.0, self.timers[0][0] - now))
        if self.voice_on and self.talking:
            timeout = min(timeout, max(0.0, self.next_voice - now))
        for key, _ in self.sel.select(timeout):
            self._readable(key.data)

    def _readable(self, i: int) -> None:
        sock = self.socks[i]
        for _ in range(256):
            try:
                data, addr = sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if len(data) < 4:
                continue
            if data[0] & 0x80:
                now = time.monotonic()
                if len(data) >= 12 and data[10] == VOICE:
                    self._audio(i, data)
                frame = parse(data)
                if isinstance(frame, FullFrame):
                    self._send(i, self.eps[i].receive(addr, frame, now), now)
            else:
                self._audio(i, data)

    def _audio(self, i: int, data: bytes) -> None:
        """Count a frame of the node's audio (mini, or full voice) and the gaps before it."""
        if data[0] & 0x80:
            key, ts16 = ((data[0] & 0x7F) << 8) | data[1], (data[6] << 8) | data[7]
        else:
            key, ts16 = (data[0] << 8) | data[1], (data[2] << 8) | data[3]
        call = self.by_node_callno.get((i, key))
        if call is None:
            return
        call.minis_in += 1
        if call.last_ts16 is None:
            call.last_ts16 = ts16
            return
        step = (ts16 - call.last_ts16) & 0xFFFF
        # A frame older than the newest (a full voice frame sent by the node's Python may
        # arrive after the engine's next mini frame) is late, not a gap, and moves nothing.
        if step < 0x8000:
            if step > 20:
                call.gaps += step // 20 - 1
            call.last_ts16 = ts16

    def run_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.poll(min(left, 0.05))

    def summary(self) -> dict[str, Any]:
        s = self.stats
        setup = sorted(s.setup_ms)

        def pct(p: int) -> float | None:
            return round(setup[(len(setup) - 1) * p // 100], 1) if setup else None

        up = self.up()
        return {
            **{name: s.calls[name] for name in COUNTS},
            "causes": dict(s.causes),
            "setup_ms": {"p50": pct(50), "p99": pct(99), "max": setup[-1] if setup else None},
            "up_now": len(up),
            "up_hearing_audio": sum(1 for c in up if c.minis_in > 0),
            "minis_in": sum(c.minis_in for c in self.calls.values()),
            "gaps": sum(c.gaps for c in self.calls.values()),
            "socket_drops": socket_drops({s.getsockname()[1] for s in self.socks}),
        }


def socket_drops(ports: set[int]) -> int:
    """Datagrams the kernel dropped at these UDP ports' full receive buffers (the `drops`
    column of /proc/net/udp): what an overloaded host, not the node, lost on the way to us."""
    total = 0
    with open("/proc/net/udp") as f:
        next(f)
        for line in f:
            cols = line.split()
            if int(cols[1].rsplit(":", 1)[1], 16) in ports:
                total += int(cols[-1])
    return total


def _tone() -> list[bytes]:
    """One second of a 400 Hz tone as 50 µ-law frames."""
    frames = []
    for k in range(50):
        pcm = [
            round(3000 * math.sin(2 * math.pi * 400.0 * (k * 160 + n) / 8000.0)) for n in range(160)
        ]
        frames.append(ulaw_encode(struct.pack("<160h", *pcm)))
    return frames


TONE: list[bytes] = []


def run_setup(
    c: Callers, calls: int, rate: float, hold: float, talk_after_setup: bool = False
) -> dict[str, Any]:
    # With talkers the node sends every answered call the mix, 50 datagrams a second each: at
    # 2,000 calls that is more than this one Python process can read on a busy host, and the
    # kernel then drops set-up frames with the audio. `talk_after_setup` keeps the talkers
    # quiet until every call is answered, so set-up is measured apart from the flood.
    c.voice_on = not talk_after_setup
    t0 = time.monotonic()
    while c.stats.calls["placed"] < calls:
        due = t0 + c.stats.calls["placed"] / rate
        now = time.monotonic()
        if now >= due:
            c.place(now)
            continue
        c.poll(due - now)
    # Every call answered (or refused): the load is in place.
    settle = time.monotonic() + 30.0
    while c.stats.calls["answered"] + c.stats.calls["rejected"] + c.stats.calls["lost"] < calls:
        if time.monotonic() > settle:
            break
        c.poll(0.05)
    print(json.dumps({"ready": True, **c.summary()}), flush=True)
    if not c.voice_on:
        c.voice_on = True
        c.next_voice = time.monotonic()
    c.run_for(hold)
    result = c.summary()
    now = time.monotonic()
    for call in c.up():
        c.hangup(call, now)
    c.run_for(2.0)
    result["after_hangup"] = {"hung_up_by_us": c.stats.calls["hung_up_by_us"]}
    return result


def run_churn(
    c: Callers, calls: int, duration: float, every: float, seed: int, report_every: float
) -> dict[str, Any]:
    rng = random.Random(seed)
    t0 = time.monotonic()
    while c.stats.calls["placed"] < calls:
        c.place(time.monotonic())
        c.run_for(0.05)
    next_churn = time.monotonic() + every
    next_report = time.monotonic() + report_every
    end = t0 + duration
    while time.monotonic() < end:
        c.poll(0.05)
        now = time.monotonic()
        if now >= next_churn:
            up = [x for x in c.up() if not x.talker]
            if up:
                c.hangup(rng.choice(up), now)
            c.place(now)
            next_churn += every
        if now >= next_report:
            print(json.dumps({"t": round(now - t0, 1), **c.summary()}), flush=True)
            next_report += report_every
    result = c.summary()
    now = time.monotonic()
    for call in c.up():
        c.hangup(call, now)
    c.run_for(2.0)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--node", required=True, help="host:port of the node's IAX2 socket")
    ap.add_argument("mode", choices=("setup", "churn"))
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--rate", type=float, default=100.0, help="new calls per second (setup)")
    ap.add_argument("--hold", type=float, default=5.0, help="seconds every call stays up (setup)")
    ap.add_argument("--talkers", type=int, default=0)
    ap.add_argument(
        "--talk-after-setup",
        action="store_true",
        help="talkers start once every call is answered (setup)",
    )
    ap.add_argument("--sockets", type=int, default=0, help="caller sockets (default: calls/50)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds (churn)")
    ap.add_argument("--churn-every", type=float, default=3.0)
    ap.add_argument("--report-every", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--as-nodes", metavar="NODE", help="call node NODE as links (user radio, node numbers)"
    )
    args = ap.parse_args(argv)
    host, port = args.node.rsplit(":", 1)
    TONE.extend(_tone())
    sockets = args.sockets or max(1, args.calls // 50)
    c = Callers((host, int(port)), sockets, args.talkers, args.as_nodes)
    if args.mode == "setup":
        result = run_setup(c, args.calls, args.rate, args.hold, args.talk_after_setup)
    else:
        result = run_churn(
            c, args.calls, args.duration, args.churn_every, args.seed, args.report_every
        )
    print(json.dumps({"final": True, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
