"""Idle footprint: what `node serve` costs with nothing connected, beside astar-server.

Starts `node serve` on the commented template it writes (its defaults: null audio backend, no
registration, no AMI; only the two ports are moved to free ones) and measures, per run:

- **start**: seconds from the process start until `GET /status` answers (Python's byte code
  is cached after the first run, as a pip install caches it), and the CPU seconds the process
  used until then (which a busy host hardly changes);
- **RSS** (VmRSS) and **threads** a few seconds after start;
- **CPU**: % of one core over `--seconds` of idle, from /proc/<pid>/stat;
- **wake-ups per second** of each thread (voluntary context switches): the engine thread sleeps
  without a clock when nothing needs it, and uvicorn's loop wakes once a second.

With `--astar PATH` (astar-server built from rcludwick/astar: `cargo build --release -p
astar-server`, which needs libasound2-dev) the same figures are taken of the reference daemon on
its own sample configuration's listener and control ports, in the same run.

    python benches/idle.py                       # 5 runs of 30 s
    python benches/idle.py --runs 3 --seconds 60 --astar /path/to/astar-server --json idle.json
    python benches/idle.py --python .venv/bin/python --python python3   # the README's install too

Only loopback addresses are used. docs/performance.md ("Idle") has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def status_field(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise KeyError(name)


def switches(pid: int) -> dict[str, int]:
    """Voluntary context switches of each thread, by `comm` (numbered when names repeat)."""
    out: dict[str, int] = {}
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        try:
            name = (task / "comm").read_text().strip()
            text = (task / "status").read_text()
        except OSError:
            continue
        value = next(
            int(line.split()[1]) for line in text.splitlines() if line.startswith("voluntary_ctxt")
        )
        key, n = name, 2
        while key in out:
            key, n = f"{name}#{n}", n + 1
        out[key] = value
    return out


def wait_status(url: str, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> float:
    """Seconds until `url` answers 200 (raises if the process dies or it never does)."""
    t0 = time.monotonic()
    with httpx.Client(timeout=1.0, trust_env=False) as http:
        while time.monotonic() - t0 < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"the process exited with {proc.returncode}")
            try:
                if http.get(url).status_code == 200:
                    return time.monotonic() - t0
            except httpx.HTTPError:
                pass
            time.sleep(0.005)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def measure(
    argv: list[str], cwd: Path, url: str, seconds: float, env: dict[str, str]
) -> dict[str, Any]:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        started = wait_status(url, proc)
        start_s = time.monotonic() - t0 if started else None
        # The CPU the start took (user + system): unlike the wall time, a busy host hardly moves
        # it, so it tells a slow start from a shared core.
        start_cpu_s = cpu_ticks(proc.pid) / CLK_TCK
        time.sleep(3.0)  # settle: start-up work done
        rss_kb = status_field(proc.pid, "VmRSS")
        threads = status_field(proc.pid, "Threads")
        c0, s0, w0 = cpu_ticks(proc.pid), switches(proc.pid), time.monotonic()
        time.sleep(seconds)
        c1, s1, w1 = cpu_ticks(proc.pid), switches(proc.pid), time.monotonic()
        elapsed = w1 - w0
        return {
            "start_s": round(start_s or 0.0, 3),
            "start_cpu_s": round(start_cpu_s, 2),
            "rss_mb": round(rss_kb / 1024, 1),
            "threads": threads,
            "cpu_pct": round(100 * (c1 - c0) / CLK_TCK / elapsed, 3),
            "wakeups_per_s": {
                name: round((s1[name] - s0.get(name, 0)) / elapsed, 1) for name in s1
            },
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ours(workdir: Path, python: str) -> tuple[list[str], str, dict[str, str]]:
    """`node serve` under `python` on the template it writes itself, on free ports."""
    workdir.mkdir(exist_ok=True)
    config = workdir / "node.toml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NET_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its byte code cached
    subprocess.run(
        [
            python,
            "-c",
            "from node._template import TEMPLATE; import sys; sys.stdout.write(TEMPLATE)",
        ],
        check=True,
        stdout=config.open("w"),
        env=env,
    )
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    text = config.read_text()
    text = text.replace('bind = "0.0.0.0:4569"', f'bind = "127.0.0.1:{udp}"', 1)
    text = text.replace('bind = "127.0.0.1:8730"', f'bind = "127.0.0.1:{http}"', 1)
    config.write_text(text)
    return (
        [python, "-m", "node", "serve", "--config", str(config)],
        f"http://127.0.0.1:{http}/status",
        env,
    )


def astar(binary: Path, workdir: Path) -> tuple[list[str], str, dict[str, str]]:
    """astar-server on a minimal configuration of its own: its listener and control ports."""
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    config = workdir / "astar.toml"
    config.write_text(
        f'[listener]\nbind = "127.0.0.1:{udp}"\nanswer = "auto"\nmax_calls = 8\n'
        f'auth = "required"\n\n[control]\nbind = "127.0.0.1:{http}"\n\n'
        '[secrets]\nsource = "control"\n'
    )
    env = dict(os.environ)
    return [str(binary), "serve", "--config", str(config)], f"http://127.0.0.1:{http}/status", env


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str) -> float:
        return round(statistics.median(r[key] for r in runs), 3)

    threads = sorted({t for r in runs for t in r["wakeups_per_s"]})
    return {
        "runs": len(runs),
        "start_s": med("start_s"),
        "start_s_max": max(r["start_s"] for r in runs),
        "start_cpu_s": med("start_cpu_s"),
        "rss_mb": med("rss_mb"),
        "threads": runs[-1]["threads"],
        "cpu_pct": med("cpu_pct"),
        "wakeups_per_s": {
            t: round(statistics.median(r["wakeups_per_s"].get(t, 0.0) for r in runs), 1)
            for t in threads
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benches/idle.py", description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0, help="idle window per run")
    ap.add_argument("--astar", type=Path, help="astar-server binary, measured in the same run")
    ap.add_argument(
        "--python",
        action="append",
        metavar="PATH",
        help="run the node under this interpreter (one that imports node, such as the README's "
        ".venv/bin/python); repeat for several; default: this one",
    )
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="idle-") as tmp:
        work = Path(tmp)
        pythons = args.python or [sys.executable]
        subjects = {
            ("iax-node" if len(pythons) == 1 else f"iax-node ({python})"): ours(
                work / f"node{i}", python
            )
            for i, python in enumerate(pythons)
        }
        if args.astar is not None:
            subjects["astar-server"] = astar(args.astar, work)
        for name in subjects:
            report[name] = []
        for _ in range(args.runs):
            # Interleaved, so both see the same host.
            for name, (command, url, env) in subjects.items():
                report[name].append(measure(command, ROOT, url, args.seconds, env))
    table = {name: summary(runs) for name, runs in report.items()}
    width = max(14, *(len(name) + 1 for name in table))
    heads = f"{'start s':>9}{'max':>7}{'CPU s':>7}{'RSS MB':>8}{'threads':>9}{'CPU %':>8}"
    print(f"\n{'':{width}}{heads}  wake-ups/s")
    for name, s in table.items():
        wake = ", ".join(f"{t} {v:g}" for t, v in s["wakeups_per_s"].items())
        print(
            f"{name:{width}}{s['start_s']:>9}{s['start_s_max']:>7}{s['start_cpu_s']:>7}{s['rss_mb']:>8}{s['threads']:>9}"
            f"{s['cpu_pct']:>8}  {wake}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": table, "runs": report}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
