"""Runs the node and the peers as two processes and turns what they report into load figures.

The sequence for one run of N legs:

1. start the node (tests/load/node_proc.py) and the peers (tests/load/peers_proc.py);
2. add N legs to the node's engine, one per peer, then start the peers' 20 ms streams;
3. after a warm-up (jitter buffers settle), take a snapshot of both processes and of the node's
   CPU time (/proc/<pid>/stat utime + stime), wait the measured window, take another;
4. stop the streams, let the node's jitter buffers drain, take the final counts and stop both.

Nothing here asserts timing: the figures are measured and reported against the targets of
research/perf.md §6 (CPU per leg, lost frames, tick jitter, added latency).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
NODE_SCRIPT = HERE / "node_proc.py"
PEERS_SCRIPT = HERE / "peers_proc.py"
FIRST_CALLNO = 100
REPLY_TIMEOUT_S = 20.0
#: After the streams stop: the jitter buffers play out (40-100 ms) and conceal (200 ms).
DRAIN_S = 1.5
#: Impulses from peer A, one every this many seconds of the measured window.
IMPULSE_EVERY_S = 2.0

TARGETS = {
    "cpu_pct_per_leg": 0.05,
    "lost_frames_at_128": 0,
    "tick_p99_ms": 2.0,
    "tick_max_ms": 5.0,
}


class ChildError(RuntimeError):
    """A child process did not answer, answered garbage, or died."""


@dataclass
class Child:
    """One child process speaking JSON lines on stdin/stdout."""

    name: str
    proc: subprocess.Popen[bytes]
    stderr: IO[bytes]

    @classmethod
    def start(cls, name: str, argv: list[str]) -> Child:
        env = dict(os.environ)
        # numpy's BLAS threads would spin on the 2-core CI machine and skew both processes.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        # Kept open for the child's lifetime and closed in close(): a pipe could fill and block.
        err = tempfile.TemporaryFile()  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )
        return cls(name, proc, err)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read(self, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                raise ChildError(f"{self.name}: no reply within {timeout} s{self.tail()}")
        line = self.proc.stdout.readline()
        if not line:
            raise ChildError(f"{self.name} exited ({self.proc.poll()}){self.tail()}")
        return json.loads(line)

    def ask(self, cmd: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"cmd": cmd, **args}).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError as exc:
            raise ChildError(f"{self.name} is gone ({self.proc.poll()}){self.tail()}") from exc
        return self.read()

    def tail(self) -> str:
        self.stderr.seek(0)
        text = self.stderr.read().decode(errors="replace").strip()
        return f"\n--- {self.name} stderr ---\n{text[-3000:]}" if text else ""

    def close(self, timeout: float = 10.0) -> int | None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            return None
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.stderr.close()


def cpu_times(pid: int) -> tuple[float, float]:
    """(utime, stime) of a whole process (every thread), from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name may hold spaces: the fields that follow start after its ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    """utime + stime of a whole process (every thread)."""
    return sum(cpu_times(pid))


def thread_cpu_seconds(pid: int, name: str) -> float | None:
    """CPU time of the thread called `name` (ns resolution, /proc/.../schedstat), if any."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            if (task / "comm").read_text().strip() == name:
                return int((task / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return None


def machine() -> dict[str, Any]:
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model")):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "machine": platform.machine(),
        "cpu": model,
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_at_start": list(os.getloadavg()),
    }


def _delta(after: dict[str, Any], before: dict[str, Any], key: str) -> int:
    return int(after[key]) - int(before[key])


def run_load(
    legs: int, seconds: float, warmup: float = 3.0, talkers: int | None = None
) -> dict[str, Any]:
    """Run N legs for `seconds` of measured window; returns every figure and raw snapshot.

    `talkers` peers talk (default: every leg); the others only listen."""
    info = machine()
    node = Child.start("node", [str(NODE_SCRIPT), str(legs)])
    peers: Child | None = None
    try:
        hello = node.read()
        node_port = int(hello["port"])
        argv = [str(PEERS_SCRIPT), "--node", f"127.0.0.1:{node_port}", "--legs", str(legs)]
        if talkers is not None:
            argv += ["--talkers", str(talkers)]
        peers = Child.start("peers", argv)
        phello = peers.read()
        legs_spec = [
            ["127.0.0.1", port, callno]
            for port, callno in zip(phello["ports"], phello["callnos"], strict=True)
        ]
        callnos = node.ask("add_legs", peers=legs_spec, first_callno=FIRST_CALLNO)["callnos"]
        # Commands are applied by the engine thread at its next wakeup (at most one tick).
        time.sleep(0.1)
        impulses = [
            warmup + 0.5 + i * IMPULSE_EVERY_S
            for i in range(max(1, int((seconds - 1.0) // IMPULSE_EVERY_S)))
        ]
        peers.ask("start", node_callnos=callnos, impulse_at_s=impulses)
        time.sleep(warmup)

        wall0, cpu0 = time.monotonic(), cpu_seconds(node.pid)
        sys0 = cpu_times(node.pid)[1]
        eng0 = thread_cpu_seconds(node.pid, "iax-engine")
        pcpu0 = cpu_seconds(peers.pid)
        n0, p0 = node.ask("stats"), peers.ask("stats")
        time.sleep(seconds)
        n1, p1 = node.ask("stats"), peers.ask("stats")
        wall1, cpu1 = time.monotonic(), cpu_seconds(node.pid)
        sys1 = cpu_times(node.pid)[1]
        eng1 = thread_cpu_seconds(node.pid, "iax-engine")
        pcpu1 = cpu_seconds(peers.pid)
        node_alive = node.proc.poll() is None

        peers.ask("stop_sending")
        time.sleep(DRAIN_S)
        node_final = node.ask("stop")
        peers_final = peers.ask("exit")
        node_rc = node.close()
        peers_rc = peers.close()
    finally:
        if peers is not None and peers.proc.poll() is None:
            peers.close(timeout=2.0)
        if node.proc.poll() is None:
            node.close(timeout=2.0)

    window = wall1 - wall0
    return figures(
        legs=legs,
        window=window,
        warmup=warmup,
        cpu=(cpu1 - cpu0),
        sys_cpu=sys1 - sys0,
        engine_cpu=None if eng0 is None or eng1 is None else eng1 - eng0,
        peers_cpu=pcpu1 - pcpu0,
        snapshots={"node": (n0, n1, node_final), "peers": (p0, p1, peers_final)},
        node_alive=node_alive,
        exit_codes={"node": node_rc, "peers": peers_rc},
        info=info,
    )


def figures(
    *,
    legs: int,
    window: float,
    warmup: float,
    cpu: float,
    engine_cpu: float | None,
    sys_cpu: float | None = None,
    peers_cpu: float,
    snapshots: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]],
    node_alive: bool,
    exit_codes: dict[str, int | None],
    info: dict[str, Any],
) -> dict[str, Any]:
    n0, n1, nf = snapshots["node"]
    p0, p1, pf = snapshots["peers"]
    cf = nf["counters"]
    jf = nf["jitter"]
    ticks_window = n1["ticks"]["ticks"] - n0["ticks"]["ticks"]
    recv_window = [
        b - a for a, b in zip(p0["received_per_leg"], p1["received_per_leg"], strict=True)
    ]
    # Whole run, after the streams stopped and the buffers drained: every count is final.
    lost_in_transit_to_node = pf["sent"] + pf["acks_sent"] - cf["datagrams_in"]
    lost_in_transit_to_peers = cf["datagrams_out"] - (
        pf["received"] + pf["acks_in"] + pf["other_in"] + pf["misrouted"]
    )
    # Jitter-buffer losses count over the measured window: after the streams stop, every
    # buffer conceals its last ten slots and counts them lost (nobody sent UNKEY or hung up),
    # which is the buffer doing its job, not a loss. Those are reported apart.
    keys = ("lost", "late", "dropped", "interpolated", "resyncs", "duplicate", "reordered")
    jw = {k: n1["jitter"][k] - n0["jitter"][k] for k in (*keys, "frames_in", "frames_out")}
    jitter_loss = jw["lost"] + jw["late"] + jw["dropped"]
    lost_frames = (
        max(0, lost_in_transit_to_node)
        + max(0, lost_in_transit_to_peers)
        + jitter_loss
        + pf["gaps"]
    )
    latencies = sorted(pf["impulses"]["latency_ms"])
    ticks = nf["ticks"]
    cpu_pct = 100.0 * cpu / window
    return {
        "legs": legs,
        "window_s": round(window, 3),
        "warmup_s": warmup,
        "machine": info,
        "targets": TARGETS,
        "cpu": {
            "node_pct_of_core": round(cpu_pct, 3),
            "node_pct_per_leg": round(cpu_pct / legs, 4),
            # From the kernel's tick-sampled accounting: erratic under some hypervisors (4 % to
            # 98 % between like runs on the development VM); a profile is the better source.
            "node_system_share": None if sys_cpu is None or cpu <= 0 else round(sys_cpu / cpu, 3),
            "engine_thread_pct_of_core": (
                None if engine_cpu is None else round(100.0 * engine_cpu / window, 3)
            ),
            "node_us_per_leg_frame": round(1e6 * cpu / window / legs / 50.0, 2),
            "peers_pct_of_core": round(100.0 * peers_cpu / window, 3),
        },
        "frames": {
            "lost": lost_frames,
            "peers_sent": pf["sent"],
            "node_datagrams_in": cf["datagrams_in"],
            "lost_in_transit_to_node": lost_in_transit_to_node,
            "node_datagrams_out": cf["datagrams_out"],
            "peers_received_audio": pf["received"],
            "lost_in_transit_to_peers": lost_in_transit_to_peers,
            "gaps_in_node_streams": pf["gaps"],
            "legs_with_gaps": pf["legs_with_gaps"],
            "out_of_order_at_peers": pf["out_of_order"],
            **{f"jitter_{k}": v for k, v in jw.items()},
            "jitter_warmup": {k: n0["jitter"][k] for k in keys},
            "jitter_after_streams_stopped": {k: jf[k] - n1["jitter"][k] for k in keys},
            "jitter_run_frames_in": jf["frames_in"],
            "legs_with_jitter_loss_in_run": jf["legs_with_loss"],
            "window_ticks": ticks_window,
            "window_expected": ticks_window * legs,
            "window_received": sum(recv_window),
            "window_received_per_leg_min": min(recv_window) if recv_window else 0,
            "window_received_per_leg_max": max(recv_window) if recv_window else 0,
        },
        "ticks": {
            "count": ticks["ticks"],
            "skipped": ticks["skipped"],
            "p50_ms": ticks["p50_us"] / 1000.0,
            "p99_ms": ticks["p99_us"] / 1000.0,
            "max_ms": ticks["max_us"] / 1000.0,
        },
        "latency": {
            "impulses_sent": pf["impulses"]["sent"],
            "impulses_heard": pf["impulses"]["heard"],
            "impulses_missed": pf["impulses"]["missed"],
            "median_ms": round(latencies[len(latencies) // 2], 2) if latencies else None,
            "min_ms": round(latencies[0], 2) if latencies else None,
            "max_ms": round(latencies[-1], 2) if latencies else None,
            # Levels at the end of the window, while every stream still flowed.
            "jitter_target_ms_median": n1["jitter"]["target_ms"]["median"],
            "jitter_delay_ms_median": n1["jitter"]["delay_ms"]["median"],
            "jitter_estimate_ms_max": n1["jitter"]["jitter_ms"]["max"],
            "background_peak": pf["background_peak"],
            "impulse_threshold": pf["impulse_threshold"],
        },
        "peers_send_lateness_ms": pf["send_lateness_ms"],
        "node_alive_after_window": node_alive,
        "exit_codes": exit_codes,
        "snapshots": {"node": [n0, n1, nf], "peers": [p0, p1, pf]},
    }


def save_figures(path: Path | None, results: list[dict[str, Any]]) -> None:
    """Write every run's figures as JSON to `path` (the command lines' `--json`), if given."""
    if path:
        path.write_text(json.dumps(results, indent=2))
        print(f"figures: {path}")


def table(results: list[dict[str, Any]]) -> str:
    """The figures of several runs as a fixed-width text table, with the targets."""
    head = (
        f"{'legs':>5} {'window':>7} {'node CPU':>9} {'per leg':>8} {'lost':>5} "
        f"{'jb l/l/d':>9} {'gaps':>5} {'tick p50':>9} {'p99':>6} {'max':>6} "
        f"{'latency':>8} {'jb tgt':>7} {'received/expected':>19}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        f, t, lat, c = r["frames"], r["ticks"], r["latency"], r["cpu"]
        med = f"{lat['median_ms']:.1f}" if lat["median_ms"] is not None else "-"
        jbl = f"{f['jitter_lost']}/{f['jitter_late']}/{f['jitter_dropped']}"
        lines.append(
            f"{r['legs']:>5} {r['window_s']:>6.0f}s {c['node_pct_of_core']:>8.2f}% "
            f"{c['node_pct_per_leg']:>7.4f}% {f['lost']:>5} {jbl:>9} "
            f"{f['gaps_in_node_streams']:>5} {t['p50_ms']:>7.2f}ms {t['p99_ms']:>6.2f} "
            f"{t['max_ms']:>6.2f} {med:>6}ms {lat['jitter_target_ms_median']!s:>5}ms "
            f"{f['window_received']:>9}/{f['window_expected']:<9}"
        )
    m = results[0]["machine"] if results else machine()
    lines.append(
        f"targets: <= {TARGETS['cpu_pct_per_leg']} % of a core per leg, 0 lost frames at 128 "
        f"legs, tick p99 <= {TARGETS['tick_p99_ms']} ms (max <= {TARGETS['tick_max_ms']} ms)"
    )
    lines.append(
        f"machine: {m['machine']}, {m['cpu']}, nproc {m['nproc']}, Python {m['python']}, "
        f"load average at start {m['loadavg_at_start'][0]:.2f}"
    )
    lines.append(
        "lost = transit both ways + node jitter-buffer lost/late/dropped in the window (jb l/l/d) "
        "+ gaps in the node's streams at the peers; latency = peer A's impulse heard by peer B "
        "(median); jb tgt = jitter-buffer target delay (median over legs); received/expected = "
        "frames the peers got in the window / legs x node ticks in the window"
    )
    return "\n".join(lines)
