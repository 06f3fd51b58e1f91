"""Two nodes in one process against two processes of one node each: CPU and memory.

The same two nodes (1000 and 1001, an 8 kHz µ-law station each), the same radios and the same
calls, run two ways in the same run:

- **one process**: one `node serve` with `[nodes.1001]`, both nodes on one IAX2 port (one engine
  thread, two stations);
- **two processes**: one `node serve` per node, each on its own port (what an operator would
  run without `[nodes]`: the alternative the one-process shape is measured against).

Each node has a USRP radio whose peer (a thread here) sends keyed voice every 20 ms, and one
caller (a softphone in this process) talking a tone into its conference and hearing it back.
Measured over `--seconds` after the streams settle: % of one core of the node process(es)
(utime + stime from /proc, every thread), and their VmRSS summed; each scenario `--runs` times,
alternating, the medians reported with the ratio (one process / two processes).

    python benches/multinode.py                   # 3 runs of 20 s
    python benches/multinode.py --runs 5 --seconds 30 --json multinode.json

Only loopback addresses are used. docs/multi-node.md has this host's figures.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.interop.softphone import Softphone  # noqa: E402
from tests.load.harness import cpu_seconds, machine  # noqa: E402
from tests.node_process import NodeProcess, free_port  # noqa: E402

SETTLE_S = 3.0
NODES = ("1000", "1001")


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise KeyError("VmRSS")


def node_sections(number: str, usrp: tuple[int, int], prefix: str = "") -> str:
    """A node's own sections: a USRP radio (listen, peer) whose audio is in the conference."""
    listen, peer = usrp
    return (
        f'[{prefix}audio]\nbackend = "usrp"\n'
        f'[{prefix}usrp]\nlisten = "127.0.0.1:{listen}"\npeer = "127.0.0.1:{peer}"\n'
        f'[{prefix}bridge]\nmode = "conference"\ninclude_local_radio = true\n'
        f"[{prefix}links]\ndns = false\n"
    )


def shared(udp: int, http: int, number: str) -> str:
    return (
        f'node_id = "{number}"\ncodec_policy = "ulaw_only"\n'
        f'[listener]\nbind = "127.0.0.1:{udp}"\nauth = "off"\n'
        f'[control]\nbind = "127.0.0.1:{http}"\n'
    )


@contextmanager
def one_process(work: Path, radios: dict[str, tuple[int, int]]) -> Iterator[list[NodeProcess]]:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    path = work / "host.toml"
    path.write_text(
        shared(udp, http, NODES[0])
        + node_sections(NODES[0], radios[NODES[0]])
        + f"[nodes.{NODES[1]}]\n"
        + node_sections(NODES[1], radios[NODES[1]], f"nodes.{NODES[1]}.")
    )
    node = NodeProcess(path, udp, http)
    try:
        node.wait_ready()
        yield [node, node]
    finally:
        node.kill()


@contextmanager
def two_processes(work: Path, radios: dict[str, tuple[int, int]]) -> Iterator[list[NodeProcess]]:
    procs: list[NodeProcess] = []
    try:
        for number in NODES:
            udp, http = free_port(socket.SOCK_DGRAM), free_port()
            path = work / f"node{number}.toml"
            path.write_text(shared(udp, http, number) + node_sections(number, radios[number]))
            procs.append(NodeProcess(path, udp, http))
        for proc in procs:
            proc.wait_ready()
        yield procs
    finally:
        for proc in procs:
            proc.kill()


def usrp_peer(port: int, stop: threading.Event) -> None:
    """What Analog_Bridge sends while its radio receives: keyed voice every 20 ms."""
    tone = struct.pack("<160h", *(8000 if (i // 4) % 2 else -8000 for i in range(160)))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        seq, next_at = 0, time.monotonic()
        while not stop.is_set():
            s.sendto(
                b"USRP" + struct.pack(">7I", seq, 0, 1, 0, 0, 0, 0) + tone, ("127.0.0.1", port)
            )
            seq += 1
            next_at += 0.02
            stop.wait(max(0.0, next_at - time.monotonic()))


def run(scenario: str, seconds: float) -> dict[str, float]:
    radios = {n: (free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)) for n in NODES}
    start = one_process if scenario == "one process" else two_processes
    stop = threading.Event()
    with TemporaryDirectory(prefix="iax-multinode-") as tmp, ExitStack() as stack:
        nodes = stack.enter_context(start(Path(tmp), radios))
        peers = [
            threading.Thread(target=usrp_peer, args=(radios[n][0], stop), daemon=True)
            for n in NODES
        ]
        for t in peers:
            t.start()
        stack.callback(stop.set)
        for number, node in zip(NODES, nodes, strict=True):
            phone = stack.enter_context(Softphone(tone_hz=700, name=f"caller{number}"))
            callno = phone.dial(node.udp_addr, number)
            deadline = time.monotonic() + 10
            while not phone.answered(callno):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node {number} did not answer")
                time.sleep(0.05)
        time.sleep(SETTLE_S)
        pids = sorted({n.proc.pid for n in nodes})
        c0, t0 = sum(cpu_seconds(p) for p in pids), time.monotonic()
        time.sleep(seconds)
        cpu = 100 * (sum(cpu_seconds(p) for p in pids) - c0) / (time.monotonic() - t0)
        rss = sum(vm_rss_kib(p) for p in pids) / 1024
        for n in NODES:
            status = nodes[NODES.index(n)].get(
                f"/nodes/{n}/status" if scenario == "one process" else "/status"
            )
            if status.status_code != 200:
                raise RuntimeError(f"node {n}: {status.status_code}")
        for t in peers:
            stop.set()
            t.join(2)
    return {"cpu_pct": cpu, "rss_mib": rss, "processes": len(pids)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"one process": [], "two processes": []}
    for _ in range(args.runs):
        for scenario in results:
            results[scenario].append(run(scenario, args.seconds))
    summary = {}
    for scenario, runs in results.items():
        summary[scenario] = {
            "cpu_pct": statistics.median(r["cpu_pct"] for r in runs),
            "rss_mib": statistics.median(r["rss_mib"] for r in runs),
        }
    one, two = summary["one process"], summary["two processes"]
    ratio = {k: one[k] / two[k] for k in one}
    print(f"{'':16} {'CPU % of a core':>16} {'RSS MiB':>10}")
    for scenario, s in summary.items():
        print(f"{scenario:16} {s['cpu_pct']:16.1f} {s['rss_mib']:10.1f}")
    print(f"{'ratio (1/2)':16} {ratio['cpu_pct']:16.2f} {ratio['rss_mib']:10.2f}")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"machine": machine(), "runs": results, "median": summary, "ratio": ratio})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
