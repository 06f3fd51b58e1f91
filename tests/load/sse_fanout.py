"""Measure the event stream under load: how long a state change takes to reach 1 and 50 clients,
and whether 50 clients slow the media clock. A script, not a test (nothing here asserts timing):

    python -m tests.load.sse_fanout                      # docs/performance.md figures (~4 min)
    python -m tests.load.sse_fanout --tick-seconds 20    # a quicker, rougher run

1. Delay: a fresh `node serve`; a separate process (tests/load/sse_clients.py) opens N streams
   and makes `--changes` state changes one after the other (`POST /enable_inbound` and
   `/disable_inbound` in turn), timing each from just before its POST to the snapshot's arrival
   at every client. Reported: the delay to the last of the N clients (for N = 50, "the 50th
   client") and to each client, median and p99, for N = 1 and N = 50.
2. Media clock: a fresh node per phase, each run for `--tick-seconds` (the engine keeps the
   lateness of its last 3000 ticks, 60 s), then `GET /stats` `tick`: p50, p99 and max lateness
   of the 20 ms clock, plus the node's CPU use. Phases: idle; state changes at `--rate` per
   second with no client; the same with 50 clients reading every event.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests.node_process import NodeProcess, free_port, write_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def start_node(workdir: Path) -> NodeProcess:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    node = NodeProcess(write_config(workdir / "node.toml", udp_port=udp, http_port=http), udp, http)
    node.wait_ready()
    return node


def stop_node(node: NodeProcess) -> None:
    node.post("/shutdown")
    node.wait()
    node.kill()


def port_of(node: NodeProcess) -> int:
    return int(node.base_url.rsplit(":", 1)[1])


def clients_process(node: NodeProcess, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.load.sse_clients", "--port", str(port_of(node)), *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def delay(workdir: Path, clients: int, changes: int) -> dict[str, Any]:
    node = start_node(workdir)
    try:
        proc = clients_process(node, "--clients", str(clients), "--changes", str(changes))
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"the clients failed ({proc.returncode})")
        return json.loads(out.strip().splitlines()[-1])
    finally:
        stop_node(node)


def tick_phase(workdir: Path, clients: int, rate: float, seconds: float) -> dict[str, Any]:
    node = start_node(workdir)
    proc = None
    try:
        if clients:
            proc = clients_process(node, "--clients", str(clients), "--hold")
            assert proc.stdout is not None
            ready = json.loads(proc.stdout.readline())
            assert ready == {"ready": clients}, ready
        cpu0, t0 = cpu_seconds(node.proc.pid), time.monotonic()
        changes, listening = 0, True
        with httpx.Client(
            base_url=node.base_url, headers={"Content-Type": "application/json"}, timeout=5
        ) as http:
            while (now := time.monotonic()) < t0 + seconds:
                if rate > 0 and changes < (now - t0) * rate:
                    listening = not listening
                    http.post("/enable_inbound" if listening else "/disable_inbound", json={})
                    changes += 1
                else:
                    time.sleep(0.005)
            stats = http.get("/stats").json()
        cpu = cpu_seconds(node.proc.pid) - cpu0
        elapsed = time.monotonic() - t0
        received = None
        if proc is not None:
            out, _ = proc.communicate("", timeout=60)
            received = json.loads(out.strip().splitlines()[-1])["events"]
        tick = stats["tick"]
        return {
            "clients": clients,
            "changes_per_s": round(changes / elapsed, 1),
            "events_per_client": None if received is None else min(received),
            "tick_p50_us": tick["p50_us"],
            "tick_p99_us": tick["p99_us"],
            "tick_max_us": tick["max_us"],
            "ticks_skipped": tick["skipped"],
            "node_cpu_pct": round(100 * cpu / elapsed, 1),
            "dropped_subscribers": stats["events"]["dropped"],
        }
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        stop_node(node)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=300, help="state changes timed per run")
    parser.add_argument("--tick-seconds", type=float, default=65.0, help="length of a phase")
    parser.add_argument("--rate", type=float, default=20.0, help="state changes per second")
    parser.add_argument("--out", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "delay": [],
        "tick": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for clients in (1, 50):
            result = delay(workdir, clients, args.changes)
            report["delay"].append(result)
            print(json.dumps(result), flush=True)
        for clients, rate in ((0, 0.0), (0, args.rate), (50, args.rate)):
            result = tick_phase(workdir, clients, rate, args.tick_seconds)
            report["tick"].append(result)
            print(json.dumps(result), flush=True)
    print("\nclients  last client median / p99   each client median / p99   POST median")
    for r in report["delay"]:
        last, each, rtt = r["last_client"], r["each_client"], r["post_round_trip"]
        print(
            f"{r['clients']:>7}  {last['median_ms']:>8.2f} / {last['p99_ms']:<8.2f} ms"
            f"  {each['median_ms']:>9.2f} / {each['p99_ms']:<8.2f} ms   {rtt['median_ms']:.2f} ms"
        )
    print("\nclients  changes/s  tick p50 / p99 / max (µs)  skipped  node CPU")
    for r in report["tick"]:
        print(
            f"{r['clients']:>7}  {r['changes_per_s']:>9}  {r['tick_p50_us']:>8} / "
            f"{r['tick_p99_us']} / {r['tick_max_us']}  {r['ticks_skipped']:>7}  "
            f"{r['node_cpu_pct']} %"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
