"""Call set-up bursts through the real daemon: what the engine-to-Python queue drops.

Not a pytest benchmark (nothing here is collected): a script that starts `node serve` (µ-law,
call tokens on, `max_calls` = the burst) and places `--calls` real IAX2 calls at `--rate` new
calls per second from `tests/load/callers_proc.py`, holds them, and prints one JSON line per run:
how many were answered, the set-up times, and what was lost on the way in:

- `queue_overflow`: full frames and engine events the engine dropped because Python fell a
  whole queue behind (the figure `tests/load/test_call_setup.py` reports but does not fail on:
  on a loaded host it depends on the host, and the callers' retransmissions recover every call);
- `kernel_drops`: datagrams the kernel dropped before the engine read them (SO_RXQ_OVFL);
- `caller_socket_drops`: what the callers' own sockets dropped: with talkers during set-up the
  node sends every answered call the mix, more than the one Python process playing all callers
  reads on a small host, and a set-up frame lost there is the load generator's loss, not ours.

    python benches/call_setup.py                         # 2,000 calls at 100/s, 3 runs
    python benches/call_setup.py --calls 1000 --rate 200 --repeat 1

On an idle 2-vCPU host the documented rate (100 calls/s up to 2,000 calls) should drop nothing;
run it beside a CPU hog to see what an overloaded host costs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.load.daemon_load import callers, final_line, start_daemon  # noqa: E402


def run(calls: int, rate: float, hold: float, talkers: int, talk_after: bool) -> dict[str, object]:
    daemon = start_daemon(calls, probe_every=60.0)
    try:
        cpu0 = daemon.cpu()
        args = ["--calls", str(calls), "--rate", str(rate), "--hold", str(hold)]
        args += ["--talkers", str(talkers)] + (["--talk-after-setup"] if talk_after else [])
        gen = callers(daemon, "setup", *args)
        r = final_line(gen, timeout=max(120.0, 3 * calls / rate + hold))
        stats = daemon.stats()
        return {
            "calls": calls,
            "rate": rate,
            "answered": r["answered"],
            "rejected": r["rejected"],
            "lost": r["lost"],
            "up_hearing_audio": r["up_hearing_audio"],
            "setup_ms": r["setup_ms"],
            "caller_socket_drops": r["socket_drops"],
            "queue_overflow": stats["queue_overflow"],
            "kernel_drops": stats.get("kernel_drops"),
            "node_cpu_s": round(daemon.cpu() - cpu0, 2),
            "loadavg_1m": os.getloadavg()[0],
        }
    finally:
        daemon.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=100.0, help="new calls per second")
    ap.add_argument("--hold", type=float, default=5.0, help="seconds every call is held")
    ap.add_argument("--talkers", type=int, default=2, help="callers that talk into the mix")
    ap.add_argument(
        "--talk-after-setup",
        action="store_true",
        help="talkers start once every call is answered (as the test does)",
    )
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    for _ in range(args.repeat):
        r = run(args.calls, args.rate, args.hold, args.talkers, args.talk_after_setup)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
