"""Sizing a Pi: the CPU each thing a node does costs, on this host, measured on the real daemon.

Each scenario starts `node serve` (µ-law, an 8 kHz station, null audio backend unless the
scenario is a radio) on free loopback ports, waits for it to settle, and reads the process's CPU
over `--seconds`; the table gives each scenario's % of one core and what it adds over idle:

- idle: nothing connected;
- an IAX2 leg: one plain call talking (a tone, every 20 ms) and hearing the conference;
- a link: one inbound link (a node calling as `radio`) talking;
- ten links: ten inbound links, all talking, each hearing the nine others;
- in-band DTMF detection: one talking call with detection on, against the same with it off;
- a USRP radio: `[audio] backend = "usrp"`, its peer sending keyed voice every 20 ms;
- an announcement: a 400-character text played in CW to the local radio (no TTS);
- a 48 kHz sound card: the device edge (48 kHz <-> station rate conversion, gains, meters) fed
  5 ms blocks in real time by a thread standing in for PortAudio's callback, on an engine in
  this process (no clocked sound card exists on a build host; PortAudio's own work is not in).

    python benches/pi_sizing.py                      # 20 s per scenario
    python benches/pi_sizing.py --seconds 60 --json sizing.json

On a Pi the figures scale with its core (docs/performance.md, "Sizing a Pi", has this host's
table and the method). Only loopback addresses are used.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.load.daemon_load import Daemon, callers, start_daemon  # noqa: E402
from tests.load.harness import cpu_seconds, machine  # noqa: E402
from tests.node_process import free_port  # noqa: E402

SETTLE_S = 4.0


def window(daemon: Daemon, seconds: float) -> float:
    """% of one core the daemon used over `seconds`."""
    c0, t0 = daemon.cpu(), time.monotonic()
    time.sleep(seconds)
    return 100 * (daemon.cpu() - c0) / (time.monotonic() - t0)


def with_callers(
    seconds: float, calls: int, *, as_nodes: bool = False, sections: str = ""
) -> float:
    daemon = start_daemon(2 * calls + 4, top='node_id = "1999"', sections=sections)
    try:
        args = ["--calls", str(calls), "--talkers", str(calls), "--rate", "20"]
        args += ["--hold", str(seconds + SETTLE_S + 2)]
        if as_nodes:
            args += ["--as-nodes", "1999"]
        proc = callers(daemon, "setup", *args)
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        if ready["answered"] != calls:
            raise RuntimeError(f"calls not answered: {ready}")
        time.sleep(SETTLE_S)  # links past their handshake time-out; every stream running
        used = window(daemon, seconds)
        proc.wait(timeout=seconds + 60)
        return used
    finally:
        daemon.stop()


def idle(seconds: float) -> float:
    daemon = start_daemon(4)
    try:
        time.sleep(SETTLE_S)
        return window(daemon, seconds)
    finally:
        daemon.stop()


def usrp_radio(seconds: float) -> float:
    listen, peer = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    daemon = start_daemon(
        4,
        audio='backend = "usrp"',
        sections=f'[usrp]\nlisten = "127.0.0.1:{listen}"\npeer = "127.0.0.1:{peer}"\n',
    )
    stop = threading.Event()

    def talk() -> None:
        # chan_usrp's voice packet: `USRP`, seven big-endian u32 (sequence, memory, keyup,
        # talkgroup, type 0 = voice, mpxid, reserved), 160 little-endian samples of a tone.
        tone = struct.pack("<160h", *(8000 if (i // 4) % 2 else -8000 for i in range(160)))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            seq, next_at = 0, time.monotonic()
            while not stop.is_set():
                head = b"USRP" + struct.pack(">7I", seq, 0, 1, 0, 0, 0, 0)
                s.sendto(head + tone, ("127.0.0.1", listen))
                seq += 1
                next_at += 0.02
                stop.wait(max(0.0, next_at - time.monotonic()))

    sender = threading.Thread(target=talk, daemon=True)
    sender.start()
    try:
        time.sleep(SETTLE_S)
        return window(daemon, seconds)
    finally:
        stop.set()
        sender.join(2)
        daemon.stop()


def announcement(seconds: float) -> float:
    daemon = start_daemon(4)
    try:
        time.sleep(SETTLE_S)
        text = ("CQ CQ DE N0CALL " * 30)[:400]
        with httpx.Client(base_url=daemon.base_url, timeout=10, trust_env=False) as http:
            r = http.post("/play", json={"text": text, "to": "local"})
            r.raise_for_status()
        return window(daemon, seconds)
    finally:
        daemon.stop()


def sound_card(seconds: float) -> float:
    """The 48 kHz device edge on an engine in this process, fed in real time."""
    from node._core import Engine

    engine = Engine("127.0.0.1:0", rate=8000)
    port = engine.open_device(48000)
    engine.set_local_radio(True)
    block = bytes(2 * 240)  # 5 ms at 48 kHz
    stop = threading.Event()

    def card() -> None:
        next_at = time.monotonic()
        while not stop.is_set():
            port.exchange(block)
            next_at += 0.005
            stop.wait(max(0.0, next_at - time.monotonic()))

    thread = threading.Thread(target=card, daemon=True)
    try:
        thread.start()
        time.sleep(1.0)
        c0, t0 = cpu_seconds(os.getpid()), time.monotonic()
        time.sleep(seconds)
        return 100 * (cpu_seconds(os.getpid()) - c0) / (time.monotonic() - t0)
    finally:
        stop.set()
        thread.join(2)
        port.close()
        engine.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python benches/pi_sizing.py", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--seconds", type=float, default=20.0, help="measured window per scenario")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    s = args.seconds
    no_dtmf = "[dtmf]\ninband = false\n"
    scenarios: dict[str, Callable[[], float]] = {
        "idle": lambda: idle(s),
        "an IAX2 leg (talking)": lambda: with_callers(s, 1),
        "a link (talking)": lambda: with_callers(s, 1, as_nodes=True),
        "ten links (all talking)": lambda: with_callers(s, 10, as_nodes=True),
        "a talking leg, DTMF detection off": lambda: with_callers(s, 1, sections=no_dtmf),
        "a USRP radio (receiving)": lambda: usrp_radio(s),
        "an announcement (CW, local)": lambda: announcement(s),
        "a 48 kHz sound card (device edge)": lambda: sound_card(s),
    }
    results: dict[str, float] = {}
    for name, run in scenarios.items():
        results[name] = round(run(), 3)
        print(f"{name:40} {results[name]:7.3f} % of a core", flush=True)
    base = results["idle"]
    print(f"\n{'':40} {'% core':>8} {'over idle':>10}")
    for name, pct in results.items():
        print(f"{name:40} {pct:8.3f} {pct - base:10.3f}")
    print(
        f"in-band DTMF detection, one leg: "
        f"{results['an IAX2 leg (talking)'] - results['a talking leg, DTMF detection off']:.3f}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": machine(), "pct_core": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
