"""A flood of IAX2 NEW and REGREQ frames from spoofed sources: what it costs a call in progress.

Not a pytest benchmark (nothing here is collected): a script that starts `node serve` (µ-law,
call tokens `required` unless `--calltoken auto`), sets up a call in progress from
`tests/load/callers_proc.py` (two calls: one talks, the other hears it through the node's
mix), then floods the node's IAX2 port from a raw socket with NEW and REGREQ frames whose source
address (in 127.0.0.0/8) and port are random for every datagram, so no reply can reach the
sender and no call token can be completed, as from an attacker who spoofs its sources. The
frames are a mix: NEW asking for a call token (an empty CALLTOKEN IE), NEW with a forged token,
NEW without one, REGREQ asking for a token and REGREQ with a forged one.

It runs the call twice, once quiet and once under the flood, and prints one JSON line per run:

- `rss_kb`: the node's resident memory before the flood, right after it and after a settle;
  `rss_growth_kb` is after-settle minus before, `rss_kb_each_second` the flood's course and
  `rss_growth_second_half_kb` the growth over its second half (a high-water mark reached early
  is no leak; steady growth is);
- `audio`: what the listening call heard over the hold (mini frames, timestamp gaps, and what
  the callers' own sockets dropped, which is the load generator's loss, not the node's);
- `node`: the node's counters over the flood (datagrams in, kernel drops at its socket, frames
  the engine-to-Python queue dropped, calls held at the end).

Needs root (a raw socket); sends on loopback only.

    sudo python benches/flood.py                      # 20,000 datagrams/s for 10 s
    sudo python benches/flood.py --rate 50000 --seconds 20 --calltoken auto

The node runs whichever `node` package the environment imports (set PYTHONPATH=python to
measure this tree rather than an installed build).

Figures on a busy 2-vCPU host, 20,000 datagrams/s for 30 s (600,000 NEW/REGREQ frames, call
tokens required): the call heard 1,750 of 1,750 frames with no gap; the node's RSS rose 5 MB in
the first seconds (buffers reaching their high-water mark) and not at all over the second half;
the kernel dropped about 0.7 % of the flood at the node's socket, and the engine-to-Python
queue about 1.2 % (full frames only: a call's own signalling is recovered by retransmission).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import random
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from tests.load.daemon_load import callers, start_daemon  # noqa: E402

from node._core import FullFrame  # noqa: E402
from node.iax2.constants import IE, FrameType, IaxSubclass  # noqa: E402

ULAW = 0x4
#: Distinct datagrams prepared ahead, cycled through while flooding.
POOL = 8192
#: Seconds the node keeps running after the flood before memory is read again.
SETTLE_S = 3.0


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# --- the flood ------------------------------------------------------------------------------


def iax_payload(rng: random.Random, kind: int) -> bytes:
    """One NEW or REGREQ full frame (`kind` picks which, and what it says about tokens)."""
    scall = rng.randrange(1, 0x8000)
    forged = bytes(rng.getrandbits(8) for _ in range(rng.choice((20, 40, 64))))
    if kind < 3:
        ies: list[tuple[int, Any]] = [
            (IE.VERSION, 2),
            (IE.CALLED_NUMBER, str(rng.randrange(2000, 700000))),
            (IE.CALLING_NUMBER, str(rng.randrange(2000, 700000))),
            (IE.FORMAT, ULAW),
            (IE.CAPABILITY, ULAW),
        ]
        if kind == 0:
            ies.append((IE.CALLTOKEN, b""))  # "give me a token"
        elif kind == 1:
            ies.append((IE.CALLTOKEN, forged))
        subclass = IaxSubclass.NEW
    else:
        ies = [(IE.USERNAME, str(rng.randrange(2000, 700000))), (IE.REFRESH, 60)]
        ies.append((IE.CALLTOKEN, b"" if kind == 3 else forged))
        subclass = IaxSubclass.REGREQ
    frame = FullFrame(FrameType.IAX, subclass, scall=scall, ts=rng.randrange(1 << 20), ies=ies)
    return frame.to_bytes()


def datagram(src: tuple[str, int], dst: tuple[str, int], payload: bytes) -> bytes:
    """An IPv4 + UDP datagram from a source of our choosing (the kernel fills the IP checksum;
    a UDP checksum of 0 means none, which IPv4 allows)."""
    udp = struct.pack("!HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(udp),
        0,
        0,
        64,
        socket.IPPROTO_UDP,
        0,
        socket.inet_aton(src[0]),
        socket.inet_aton(dst[0]),
    )
    return ip + udp


def flood(
    dst: tuple[str, int], rate: float, seconds: float, seed: int, each_second: Callable[[], None]
) -> int:
    """Send `rate` datagrams a second for `seconds` from random sources, calling `each_second`
    once a second; the number sent."""
    rng = random.Random(seed)
    pool = []
    for i in range(POOL):
        src_ip = str(ipaddress.IPv4Address((127 << 24) | rng.randrange(1, 1 << 24)))
        pool.append(datagram((src_ip, rng.randrange(1024, 65536)), dst, iax_payload(rng, i % 5)))
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sent = 0
    start = time.monotonic()
    end = start + seconds
    batch = max(1, int(rate / 200))  # every 5 ms
    next_second = start + 1.0
    while (now := time.monotonic()) < end:
        if now >= next_second:
            each_second()
            next_second += 1.0
        due = int((now - start) * rate)
        while sent < due:
            for _ in range(min(batch, due - sent)):
                # A full send buffer loses the datagram, as a wire would.
                with contextlib.suppress(OSError):
                    sock.sendto(pool[sent % POOL], (dst[0], 0))
                sent += 1
        time.sleep(0.005)
    sock.close()
    return sent


# --- one run ----------------------------------------------------------------------------------


def run(calltoken: str, rate: float, seconds: float, with_flood: bool) -> dict[str, Any]:
    node = start_daemon(16, probe_every=60.0, calltoken=calltoken)
    hold = seconds + SETTLE_S + 2.0
    try:
        # The callers print one line when both calls are up, then hold them for `--hold`.
        proc = callers(
            node, "setup", "--calls", "2", "--talkers", "1", "--rate", "5", "--hold", str(hold)
        )
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        before_stats = node.stats()
        rss = {"before": rss_kb(node.proc.pid)}
        series: list[int] = []

        def sample() -> None:
            series.append(rss_kb(node.proc.pid))

        sent = 0
        t0 = time.monotonic()
        if with_flood:
            sent = flood(("127.0.0.1", node.udp_port), rate, seconds, 21, sample)
        else:
            for _ in range(int(seconds)):
                time.sleep(1.0)
                sample()
        flood_s = time.monotonic() - t0
        rss["after_flood"] = rss_kb(node.proc.pid)
        time.sleep(SETTLE_S)
        rss["after_settle"] = rss_kb(node.proc.pid)
        after_stats = node.stats()
        calls_now = len(node.status().get("calls", []))
        out, _ = proc.communicate(timeout=hold + 60)
        final = [json.loads(x) for x in out.splitlines() if x.strip()][-1]
    finally:
        node.stop()

    def delta(key: str) -> int:
        return int(after_stats.get(key, 0)) - int(before_stats.get(key, 0))

    return {
        "flood": with_flood,
        "calltoken": calltoken,
        "sent": sent,
        "sent_per_s": round(sent / flood_s) if with_flood else 0,
        "calls_answered": ready.get("answered"),
        "rss_kb": rss,
        "rss_growth_kb": rss["after_settle"] - rss["before"],
        # A high-water mark reached early and kept is no leak: growth over the second half is.
        "rss_growth_second_half_kb": series[-1] - series[len(series) // 2] if series else 0,
        "rss_kb_each_second": series,
        "audio": {
            "expected_minis": int(hold * 50),
            "minis_in": final["minis_in"],
            "gaps": final["gaps"],
            "caller_socket_drops": final["socket_drops"],
            "up_hearing_audio": final["up_hearing_audio"],
        },
        "node": {
            "datagrams_in": delta("datagrams_in"),
            "kernel_drops": delta("kernel_drops"),
            "queue_overflow": delta("queue_overflow"),
            "malformed": delta("malformed"),
            "calls_at_end": calls_now,
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=float, default=20000.0, help="datagrams per second")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the flood")
    ap.add_argument("--calltoken", choices=("required", "auto"), default="required")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("flood.py needs root for its raw socket", file=sys.stderr)
        return 2
    for with_flood in (False, True):
        print(json.dumps(run(args.calltoken, args.rate, args.seconds, with_flood)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
