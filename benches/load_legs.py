"""End-to-end load at hub scale: node CPU per leg, losses, tick lateness and added latency.

Not a pytest benchmark (nothing here is collected): a script that runs the load harness of
`tests/load/` (a node process with the engine and the daemon's media Python, a separate peers
process with one UDP socket per leg) at each size in turn, never two at once, and prints one
row per run. By default two legs talk and every other leg listens, the shape of a big hub:
every listener hears the same mix.

    python benches/load_legs.py                      # 500, 1000 and 2000 legs, 20 s each
    python benches/load_legs.py --legs 100 2000 --seconds 60 --repeat 3 --json out.json
    python benches/load_legs.py --daemon             # the same through `node serve`

`--daemon` measures the whole daemon instead: `node serve` (µ-law, call tokens on) takes N real
IAX2 calls from `tests/load/callers_proc.py` (placed at 200 calls/s from 40 loopback sockets,
each answering the node's keep-alives), so node CPU includes the Python side of every call:
signalling, PING/LAGRQ, the controller. Lost frames are then the gaps in what each caller heard
plus the node's jitter-buffer losses and kernel drops; latency is not measured in this mode.

Build the extension in release mode first (`maturin develop --release`, or `pip install .`).
CPU is the node process's utime + stime over the measured window (every thread), as a share of
one core; the load average of the host is printed with every run because other work on a
shared host changes the figures. Targets (issue 11): 2,000 legs under 50 % of one core, 0 lost
frames, tick lateness p99 under 2 ms, CPU per leg flat from 100 to 2,000 legs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.load.daemon_load import callers, final_line, start_daemon  # noqa: E402
from tests.load.harness import cpu_times, machine, run_load, save_figures  # noqa: E402
from tests.load.test_legs_loopback import consistent  # noqa: E402

TARGET_CPU_PCT_AT_2000 = 50.0
TARGET_TICK_P99_MS = 2.0


def row(r: dict[str, Any]) -> str:
    c, f, t, lat = r["cpu"], r["frames"], r["ticks"], r["latency"]
    last = r["snapshots"]["node"][-1]
    counters = last.get("counters", last)
    drops = counters.get("kernel_drops", "-")
    med = f"{lat['median_ms']:.1f}" if lat["median_ms"] is not None else "-"
    load = r["loadavg"]
    return (
        f"{r['legs']:>5} {r['talkers']:>3} {c['node_pct_of_core']:>8.2f}% "
        f"{c['node_pct_per_leg']:>8.4f}% {c['node_us_per_leg_frame']:>7.2f} "
        f"{f['lost']:>6} {drops!s:>6} {t['p50_ms']:>6.2f} {t['p99_ms']:>6.2f} "
        f"{t['max_ms']:>7.2f} {med:>7} {c['peers_pct_of_core']:>7.1f}% "
        f"{load[0]:>5.2f}/{load[1]:<5.2f}"
    )


HEAD = (
    f"{'legs':>5} {'tlk':>3} {'node CPU':>9} {'per leg':>9} {'µs/l·f':>7} {'lost':>6} "
    f"{'kdrop':>6} {'tick50':>6} {'p99':>6} {'max':>7} {'lat ms':>7} {'peers':>8} "
    f"{'load 1/5m':>11}"
)

LEGEND = (
    "per leg = node CPU / legs; µs/l·f = node CPU µs per leg per 20 ms frame; lost = frames "
    "lost either way + jitter-buffer lost/late/dropped + gaps in the node's streams; kdrop = "
    "datagrams the kernel dropped on the node's socket (SO_RXQ_OVFL); tick = tick lateness "
    "(ms, whole run); lat = added one-way latency, talker A's impulse heard by B (median); "
    "peers = CPU of the load generator; load = host load average after the run"
)


def run_daemon_load(legs: int, seconds: float, warmup: float, talkers: int) -> dict[str, Any]:
    """N real calls through `node serve`; the same figures as `run_load` where they apply."""
    daemon = start_daemon(legs, probe_every=60.0)
    try:
        gen = callers(
            daemon,
            "setup",
            *("--calls", str(legs), "--rate", "200", "--talkers", str(talkers)),
            *("--hold", str(warmup + seconds + 2.0)),
        )
        assert gen.stdout is not None
        ready: dict[str, Any] = {}
        while not ready.get("ready"):
            line = gen.stdout.readline()
            if not line:
                raise RuntimeError(f"callers exited before all calls were up\n{daemon.log_tail()}")
            ready = json.loads(line)
        time.sleep(warmup)
        cpu0, s0, t0 = daemon.cpu(), daemon.stats(), time.monotonic()
        sys0 = cpu_times(daemon.proc.pid)[1]
        time.sleep(seconds)
        cpu1, s1, t1 = daemon.cpu(), daemon.stats(), time.monotonic()
        sys1 = cpu_times(daemon.proc.pid)[1]
        result = final_line(gen, timeout=seconds + 120)
    finally:
        daemon.stop()
    window = t1 - t0
    cpu_pct = 100.0 * (cpu1 - cpu0) / window
    jitter = {
        k: sum(leg[k] for leg in s1["legs"].values()) - sum(leg[k] for leg in s0["legs"].values())
        for k in ("lost", "late", "dropped")
    }
    tick = s1["tick"]
    return {
        "mode": "daemon",
        "legs": legs,
        "talkers": talkers,
        "window_s": round(window, 2),
        "cpu": {
            "node_pct_of_core": round(cpu_pct, 3),
            "node_pct_per_leg": round(cpu_pct / legs, 4),
            "node_system_share": round((sys1 - sys0) / max(1e-9, cpu1 - cpu0), 3),
            "node_us_per_leg_frame": round(1e6 * (cpu1 - cpu0) / window / legs / 50.0, 2),
            "peers_pct_of_core": float("nan"),
        },
        "frames": {
            "lost": result["gaps"] + sum(jitter.values()) + s1.get("kernel_drops", 0),
            "gaps_heard_by_callers": result["gaps"],
            "jitter_in_window": jitter,
            "kernel_drops": s1.get("kernel_drops"),
        },
        "ticks": {
            "p50_ms": tick["p50_us"] / 1000.0,
            "p99_ms": tick["p99_us"] / 1000.0,
            "max_ms": tick["max_us"] / 1000.0,
        },
        "latency": {"median_ms": None},
        "setup": {k: ready[k] for k in ("placed", "answered", "rejected", "lost", "setup_ms")},
        "callers": result,
        "snapshots": {"node": [s0, s1, s1]},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benches/load_legs.py", description=__doc__)
    ap.add_argument("--legs", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--talkers", type=int, default=2, help="legs that talk (the rest listen)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured window per run")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=1, help="runs per size")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--daemon", action="store_true", help="real calls through `node serve`")
    args = ap.parse_args(argv)

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    info = machine()
    print(
        f"host: {info['machine']}, {info['cpu']}, nproc {info['nproc']}, "
        f"Python {info['python']}, load average at start {info['loadavg_at_start'][0]:.2f}",
        flush=True,
    )
    print(HEAD)
    print("-" * len(HEAD), flush=True)
    results: list[dict[str, Any]] = []
    rc = 0
    for n in args.legs:
        for _ in range(args.repeat):
            if args.daemon:
                r = run_daemon_load(n, args.seconds, args.warmup, args.talkers)
            else:
                r = run_load(n, args.seconds, warmup=args.warmup, talkers=args.talkers)
                r["talkers"] = r["snapshots"]["peers"][-1].get("talkers", args.talkers)
            r["loadavg"] = list(os.getloadavg())
            results.append(r)
            print(row(r), flush=True)
            if args.daemon:
                setup = r["setup"]
                if setup["answered"] != n:
                    print(f"!! {n} legs: only {setup['answered']} calls answered", file=sys.stderr)
                    rc = 1
                continue
            if not consistent(r):
                rc = 1
    print(LEGEND)
    big = [r for r in results if r["legs"] >= 2000]
    for r in big:
        ok = (
            r["cpu"]["node_pct_of_core"] < TARGET_CPU_PCT_AT_2000
            and r["frames"]["lost"] == 0
            and r["ticks"]["p99_ms"] < TARGET_TICK_P99_MS
        )
        print(f"2,000-leg target ({r['legs']} legs): {'met' if ok else 'NOT met'}")
    save_figures(args.json, results)
    return rc


if __name__ == "__main__":
    sys.exit(main())
