"""Soak: the real daemon with calls coming and going for an hour; is anything growing?

Not part of CI (it takes an hour). It starts `node serve` (through `tests/load/daemon_probe.py`,
which samples the process from inside), then a callers process that keeps `--calls` calls up
(two of them talking, every call hearing the mix) and every `--churn-every` seconds hangs up one
random call and places a new one. Every `--sample-every` seconds it records the daemon's RSS,
open descriptors, Python objects, the engine's queue depths and leg count; at the end it prints
the first, last, minimum and maximum of each, the growth between the first and last 10 % of the
run, and whether the callers saw any failure.

    python benches/soak.py                              # 50 calls, one hour
    python benches/soak.py --duration 600 --json soak.json

Build the extension in release mode first. Only loopback addresses are used.
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
from tests.load.harness import machine  # noqa: E402

SERIES = ("rss_kb", "fds", "objects", "q_frames", "q_events", "q_commands", "legs", "calls")


def sample(daemon: Any, t0: float) -> dict[str, Any]:
    row: dict[str, Any] = {"t": round(time.monotonic() - t0, 1), "cpu_s": round(daemon.cpu(), 2)}
    try:
        st = daemon.stats()
        status = daemon.status()
    except Exception as exc:  # the daemon not answering is itself a finding
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    q = st.get("queues", {})
    row.update(
        q_frames=q.get("frames"),
        q_events=q.get("events"),
        q_commands=q.get("commands"),
        legs=len(st.get("legs", {})),
        calls=len(status.get("calls", [])),
        kernel_drops=st.get("kernel_drops"),
        queue_overflow=st.get("queue_overflow"),
        tick_p99_ms=st.get("tick", {}).get("p99_us", 0) / 1000.0,
    )
    probes = daemon.probes()
    if probes:
        last = probes[-1]
        row.update(rss_kb=last["rss_kb"], fds=last["fds"], objects=last["objects"])
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    good = [r for r in rows if "error" not in r]
    out: dict[str, Any] = {"samples": len(rows), "errors": len(rows) - len(good)}
    tenth = max(1, len(good) // 10)
    for key in SERIES:
        vals = [r[key] for r in good if r.get(key) is not None]
        if not vals:
            continue
        head = sum(vals[:tenth]) / len(vals[:tenth])
        tail = sum(vals[-tenth:]) / len(vals[-tenth:])
        out[key] = {
            "first": vals[0],
            "last": vals[-1],
            "min": min(vals),
            "max": max(vals),
            "first_10pct_mean": round(head, 1),
            "last_10pct_mean": round(tail, 1),
            "growth": round(tail - head, 1),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benches/soak.py", description=__doc__)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--talkers", type=int, default=2)
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds")
    ap.add_argument("--churn-every", type=float, default=3.0, help="seconds between changes")
    ap.add_argument("--sample-every", type=float, default=60.0)
    ap.add_argument("--json", type=Path, help="write every sample and the summary here")
    args = ap.parse_args(argv)

    info = machine()
    daemon = start_daemon(args.calls * 2, probe_every=min(30.0, args.sample_every))
    print(f"daemon pid {daemon.proc.pid}, work dir {daemon.workdir}", flush=True)
    gen = callers(
        daemon,
        "churn",
        "--calls",
        str(args.calls),
        "--talkers",
        str(args.talkers),
        "--duration",
        str(args.duration),
        "--churn-every",
        str(args.churn_every),
        "--report-every",
        str(args.sample_every),
        "--sockets",
        str(args.calls),
    )
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    cpu0 = daemon.cpu()
    try:
        while gen.poll() is None and time.monotonic() - t0 < args.duration + 60:
            time.sleep(
                min(args.sample_every, max(1.0, args.duration + 5 - (time.monotonic() - t0)))
            )
            if gen.poll() is not None:
                break
            row = sample(daemon, t0)
            rows.append(row)
            print(json.dumps(row), flush=True)
        result = final_line(gen, timeout=120)
        wall = time.monotonic() - t0
        cpu = daemon.cpu() - cpu0
    finally:
        if gen.poll() is None:
            gen.kill()
        rc = daemon.stop()
    summary = summarise(rows)
    report = {
        "machine": info,
        "loadavg_at_end": list(os.getloadavg()),
        "args": vars(args) | {"json": str(args.json) if args.json else None},
        "callers": result,
        "daemon_cpu_pct": round(100.0 * cpu / wall, 2),
        "daemon_exit": rc,
        "summary": summary,
    }
    print(json.dumps(report["callers"]))
    print(f"{'series':<11} {'first':>9} {'last':>9} {'min':>9} {'max':>9} {'growth':>9}")
    for key in SERIES:
        s = summary.get(key)
        if s:
            print(
                f"{key:<11} {s['first']:>9} {s['last']:>9} {s['min']:>9} {s['max']:>9} "
                f"{s['growth']:>9}"
            )
    print(
        f"daemon CPU {report['daemon_cpu_pct']} % of a core; load average at end "
        f"{report['loadavg_at_end'][0]:.2f}; daemon exit {rc}"
    )
    if args.json:
        args.json.write_text(json.dumps({"samples": rows, **report}, indent=2))
    failures = result["rejected"] + result["lost"] + result["hung_up_by_node"]
    return 1 if failures or summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
