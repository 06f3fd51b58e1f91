"""A Pi-class CPU budget: the node in a cgroup limited to a quarter of one core (`cpu.max`
25000/100000, roughly a Pi Zero 2 W's whole core), with a radio on the null backend and ten
inbound links all talking, holds its audio: every link is up and hears the others without a
gap, the engine skips no tick, and no leg's jitter buffer loses a frame. The CPU it used, and so
the headroom under the quota, is reported, not asserted (docs/performance.md, "Sizing a Pi").

Needs a writable cpu cgroup (cgroup v2's `cpu.max`, or v1's `cpu.cfs_quota_us`), as root; the
test is skipped where there is none.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.load.daemon_load import callers, final_line, start_daemon

QUOTA_US, PERIOD_US = 25000, 100000
LINKS = 10
HOLD_S = 20.0


def _v2_root() -> Path | None:
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        controllers = root / "cgroup.controllers"
        if controllers.exists() and "cpu" in controllers.read_text().split():
            return root
    return None


@pytest.fixture
def quarter_core() -> Iterator[Path]:
    """A new cpu cgroup with the quota; yields the file a process enters it through."""
    name = f"iax-node-test-{uuid.uuid4().hex[:8]}"
    v1 = Path("/sys/fs/cgroup/cpu")
    v2 = _v2_root()
    group: Path
    try:
        if v2 is not None and os.access(v2, os.W_OK):
            (v2 / "cgroup.subtree_control").write_text("+cpu")
            group = v2 / name
            group.mkdir()
            (group / "cpu.max").write_text(f"{QUOTA_US} {PERIOD_US}")
        elif (v1 / "cpu.cfs_quota_us").exists() and os.access(v1, os.W_OK):
            group = v1 / name
            group.mkdir()
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
        else:
            pytest.skip("no writable cpu cgroup here (needs root and a cpu controller)")
    except OSError as exc:
        pytest.skip(f"cannot make a cpu cgroup here: {exc}")
    yield group / "cgroup.procs"
    for _ in range(50):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)  # the daemon's last thread is still leaving


def legs_lost(stats: dict[str, object]) -> dict[str, int]:
    legs = stats["legs"]
    assert isinstance(legs, dict)
    return {callno: leg["lost"] for callno, leg in legs.items()}


def test_ten_talking_links_hold_their_audio_in_a_quarter_core(quarter_core: Path) -> None:
    enter = ["sh", "-c", f'echo $$ > {quarter_core} && exec "$@"', "sh"]
    daemon = start_daemon(2 * LINKS, top='node_id = "1999"', wrapper=enter)
    try:
        assert str(daemon.proc.pid) in quarter_core.read_text().split()
        proc = callers(
            daemon,
            "setup",
            *("--calls", str(LINKS), "--talkers", str(LINKS), "--rate", "20"),
            *("--hold", str(HOLD_S), "--as-nodes", "1999"),
        )
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["answered"] == LINKS, ready
        time.sleep(3.0)  # every link's handshake time-out (2 s) passed: legacy keying, talking
        status = daemon.status()
        assert len([x for x in status["links"] if x["state"] == "up"]) == LINKS, status
        before, cpu0, t0 = daemon.stats(), daemon.cpu(), time.monotonic()
        time.sleep(HOLD_S - 8.0)
        after, cpu1, t1 = daemon.stats(), daemon.cpu(), time.monotonic()
        result = final_line(proc, timeout=HOLD_S + 60)
        # Every link heard the others, with no frame missing on the way.
        assert result["up_hearing_audio"] == LINKS, result
        assert result["gaps"] == 0, result
        assert result["lost"] == result["rejected"] == 0, result
        # The engine kept its 20 ms clock, and no jitter buffer lost a frame.
        assert after["tick"]["skipped"] == before["tick"]["skipped"], after["tick"]
        assert legs_lost(after) == legs_lost(before), after["legs"]
        used = (cpu1 - cpu0) / (t1 - t0)
        quota = QUOTA_US / PERIOD_US
        tick = after["tick"]
        print(
            f"\n{LINKS} talking links under a quarter core: {100 * used:.1f} % of a core, "
            f"{100 * used / quota:.0f} % of the quota (headroom {100 * (1 - used / quota):.0f} %); "
            f"tick lateness p99 {tick['p99_us'] / 1000:.1f} ms, max {tick['max_us'] / 1000:.1f} ms"
        )
    finally:
        daemon.stop()
