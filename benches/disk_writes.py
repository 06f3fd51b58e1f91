"""Disk writes of a running node, for SD cards: two nodes linked and talking, and one idle.

Nodes 2001 and 2002 are linked with a phone talking into each (tests/links/talking_pair.py);
a third node runs beside them with nothing connected. Over the window each node's
`/proc/<pid>/io` counters are read at the start and the end: `write_bytes` is what the process
sent toward the disk (their configs and work directory are on the host's disk, not a tmpfs).
The logs go to stderr (the journal under systemd): their lines and bytes are counted apart,
over the whole run. CI runs this for 30 s in tests/links/test_disk_writes.py, which asserts that
no node wrote a byte; the figure in docs/raspberry-pi.md is a 10-minute run:

    python benches/disk_writes.py                    # 600 s
    python benches/disk_writes.py --seconds 60 --json writes.json

Only loopback addresses are used.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.interop.harness import running_node  # noqa: E402
from tests.links.talking_pair import io_counters, link_frames_in, talking_pair  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

__all__ = ["measure"]


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in ("write_bytes", "wchar", "syscw")}


def _log(node: NodeProcess) -> dict[str, int]:
    err = node.communicate()[1]
    return {"log_lines": len(err.splitlines()), "log_bytes": len(err.encode())}


def measure(seconds: float, workdir: Path) -> dict[str, Any]:
    """Run the pair and the idle node for `seconds` of talking; what each node wrote."""
    idle_dir = workdir / "idle"
    idle_dir.mkdir()
    with (
        running_node(idle_dir, "idle", top='node_id = "2003"') as idle,
        talking_pair(workdir) as pair,
    ):
        nodes = {"2001": pair.a, "2002": pair.b, "2003 idle": idle}
        before = {name: io_counters(n.proc.pid) for name, n in nodes.items()}
        frames = {"2001": link_frames_in(pair.a, "2002"), "2002": link_frames_in(pair.b, "2001")}
        heard = (pair.p.heard_ms(pair.p_call), pair.q.heard_ms(pair.q_call))
        t0 = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - t0
        after = {name: io_counters(n.proc.pid) for name, n in nodes.items()}
        frames = {
            "2001": link_frames_in(pair.a, "2002") - frames["2001"],
            "2002": link_frames_in(pair.b, "2001") - frames["2002"],
        }
        heard = (
            pair.p.heard_ms(pair.p_call) - heard[0],
            pair.q.heard_ms(pair.q_call) - heard[1],
        )
    return {
        "seconds": round(elapsed, 1),
        "nodes": {name: _delta(before[name], after[name]) | _log(n) for name, n in nodes.items()},
        "link_frames_in": frames,
        "heard_ms": {"P on 2001": heard[0], "Q on 2002": heard[1]},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="the talking window")
    ap.add_argument("--json", type=Path, help="write the result here too")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="iax-disk-", dir=Path.home()) as tmp:
        result = measure(args.seconds, Path(tmp))
    for name, row in result["nodes"].items():
        per_day = row["write_bytes"] * 86400 / result["seconds"]
        print(
            f"node {name}: write_bytes {row['write_bytes']} in {result['seconds']} s "
            f"({per_day:.0f} B/day), log {row['log_lines']} lines / {row['log_bytes']} bytes "
            f"over the whole run"
        )
    print(f"link voice frames received: {result['link_frames_in']}; heard: {result['heard_ms']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
