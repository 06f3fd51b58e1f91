"""The node under load: one engine with N µ-law legs, driven the way the daemon drives it.

Run as its own process (`python node_proc.py`) so its CPU time can be read alone from
/proc/<pid>/stat. The engine thread owns the socket and the 20 ms clock; this asyncio loop does
only what the daemon's Python does for media: it turns the engine's `FullVoiceNeeded` events into
real IAX2 full VOICE frames with the call's sequence numbers, feeds the peers' full voice
frames back with push_voice, and acknowledges full frames. Mini frames never reach Python.

Protocol with the harness: JSON lines. On start it prints {"port", "pid"}; then it answers one
line per command read on stdin: "add_legs", "stats", "stop".
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from node import _core

VOICE = 2
IAX = 6
IAX_ACK = 4
#: The calls' clock when their media starts: 6 s before the 16-bit wrap of the timestamps, so
#: every run's window sees the node's mini frames wrap and a full voice frame go out for it.
CALL_TS_MS = 0x10000 - 6000
JITTER_SUMS = (
    "frames_in",
    "frames_out",
    "lost",
    "late",
    "dropped",
    "duplicate",
    "reordered",
    "interpolated",
    "resyncs",
)
JITTER_LEVELS = ("target_ms", "delay_ms", "jitter_ms")
#: IAX_LOAD_DTMF=1 runs in-band DTMF detection on every leg (`[dtmf] inband`), to measure its
#: cost against a run without.
DTMF = os.environ.get("IAX_LOAD_DTMF") == "1"


@dataclass
class Leg:
    callno: int
    peer_callno: int
    addr: tuple[str, int]
    oseq: int = 0
    iseq: int = 0

    def frame(self, ftype: int, subclass: int, ts: int, payload: bytes = b"") -> _core.FullFrame:
        """A full frame of this leg's call, at its current sequence numbers."""
        call = {"scall": self.callno, "dcall": self.peer_callno}
        seq = {"oseq": self.oseq, "iseq": self.iseq}
        return _core.FullFrame(ftype, subclass, ts=ts, payload=payload, **call, **seq)


#: Engine events only counted: class -> counter.
COUNTED: dict[type[_core.EngineEvent], str] = {
    _core.SpurtEnded: "spurts_ended",
    _core.MiniBeforeFull: "mini_before_full",
    _core.RxKeyed: "rx_key_edges",
    _core.ControlPlayed: "control_events",
    _core.ActivityChanged: "activity_edges",
    _core.DtmfDecoded: "dtmf_digits",
}


@dataclass
class Node:
    engine: _core.Engine
    legs: dict[int, Leg] = field(default_factory=dict)
    counts: dict[str, int] = field(
        default_factory=lambda: {
            "full_voice_in": 0,
            "full_voice_out": 0,
            "rx_key_edges": 0,
            "acks_in": 0,
            "other_full_in": 0,
            "spurts_ended": 0,
            "mini_before_full": 0,
            "control_events": 0,
            "activity_edges": 0,
            "dtmf_digits": 0,
            "wakeups": 0,
        }
    )
    failures: list[str] = field(default_factory=list)

    def on_wakeup(self) -> None:
        # Frames first, then events: both queues share the one wakeup byte.
        self.counts["wakeups"] += 1
        for addr, frame in self.engine.drain():
            leg = self.legs.get(frame.dcall)
            if leg is None:
                self.counts["other_full_in"] += 1
                continue
            if frame.ftype == IAX and frame.subclass == IAX_ACK:
                self.counts["acks_in"] += 1
                continue
            if frame.ftype != VOICE:
                self.counts["other_full_in"] += 1
                continue
            self.counts["full_voice_in"] += 1
            leg.iseq = (frame.oseq + 1) & 0xFF
            self.engine.push_voice(leg.callno, frame.subclass, frame.ts, frame.payload)
            self.engine.send_to(leg.frame(IAX, IAX_ACK, frame.ts).to_bytes(), addr)
        for event in self.engine.drain_events():
            self.on_event(event)

    def on_event(self, event: _core.EngineEvent) -> None:
        kind = type(event)
        if isinstance(event, _core.FullVoiceNeeded):
            leg = self.legs[event.callno]
            frame = leg.frame(VOICE, event.format, event.ts, event.payload)
            leg.oseq = (leg.oseq + 1) & 0xFF
            self.engine.send_to(frame.to_bytes(), leg.addr)
            self.counts["full_voice_out"] += 1
        elif kind in COUNTED:
            self.counts[COUNTED[kind]] += 1
        elif isinstance(event, _core.CommandFailed):
            self.failures.append(event.message)
        else:
            self.failures.append(f"unexpected engine event {event!r}")

    def add_legs(self, peers: list[list[Any]], first_callno: int) -> list[int]:
        callnos = []
        for i, (host, port, peer_callno) in enumerate(peers):
            leg = Leg(first_callno + i, int(peer_callno), (str(host), int(port)))
            self.legs[leg.callno] = leg
            self.engine.add_leg(
                leg.callno, leg.peer_callno, leg.addr, 0x4, "transceive", CALL_TS_MS, dtmf=DTMF
            )
            callnos.append(leg.callno)
        return callnos

    def stats(self) -> dict[str, Any]:
        per_leg = self.engine.jitter_stats()
        jitter: dict[str, Any] = {k: sum(s[k] for _, s in per_leg) for k in JITTER_SUMS}
        for k in JITTER_LEVELS:
            values = sorted(s[k] for _, s in per_leg)
            jitter[k] = {
                "median": values[len(values) // 2] if values else None,
                "max": values[-1] if values else None,
            }
        jitter["legs_with_loss"] = sum(
            1 for _, s in per_leg if s["lost"] or s["late"] or s["dropped"]
        )
        return {
            "running": self.engine.running,
            "legs": len(per_leg),
            "counters": self.engine.counters(),
            "ticks": self.engine.tick_stats(),
            "jitter": jitter,
            "node": dict(self.counts),
            "failures": list(self.failures),
        }


def start_engine(legs: int) -> _core.Engine:
    try:
        return _core.Engine("127.0.0.1:0", rate=8000, legs=legs)
    except TypeError:
        # An engine from before socket buffers were sized (measuring an older build).
        return _core.Engine("127.0.0.1:0", rate=8000)


async def serve(legs: int) -> None:
    engine = start_engine(legs)
    node = Node(engine)
    loop = asyncio.get_running_loop()
    loop.add_reader(engine.wakeup_fd(), node.on_wakeup)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    reply({"port": engine.local_addr[1], "pid": os.getpid()})
    try:
        while line := await reader.readline():
            cmd = json.loads(line)
            if cmd["cmd"] == "add_legs":
                reply({"callnos": node.add_legs(cmd["peers"], cmd["first_callno"])})
            elif cmd["cmd"] == "stats":
                reply(node.stats())
            elif cmd["cmd"] == "stop":
                final = node.stats()
                loop.remove_reader(engine.wakeup_fd())
                engine.stop()
                final["running_after_stop"] = engine.running
                reply(final)
                return
            else:
                reply({"error": f"unknown command {cmd['cmd']!r}"})
    finally:
        engine.stop()


def reply(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]) if len(sys.argv) > 1 else 64))
