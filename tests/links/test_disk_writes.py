"""SD cards wear out by writes: a node with links up and talking writes nothing to the disk.

Two linked nodes, a phone talking into each, and an idle node beside them, for 30 s
(benches/disk_writes.py; its 10-minute run is the figure in docs/raspberry-pi.md). Each node's
`write_bytes` (`/proc/<pid>/io`) must not move, nor may any file appear in their directory;
their logs go to stderr, the journal under systemd.
"""

from __future__ import annotations

from pathlib import Path

from benches.disk_writes import measure

WINDOW_S = 30.0


def file_system(path: Path) -> str:
    """The type of the file system `path` is on (the longest mount point above it)."""
    mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    points = {m[1]: m[2] for m in mounts if path.resolve().is_relative_to(m[1])}
    return points[max(points, key=len)]


def test_linked_and_talking_nodes_write_nothing_to_the_disk(tmp_path: Path) -> None:
    # On a disk, as /etc/iax-node is: a tmpfs has no block I/O for write_bytes to count.
    assert file_system(tmp_path) not in ("tmpfs", "ramfs"), file_system(tmp_path)
    result = measure(WINDOW_S, tmp_path)
    # The window had talk on it: voice crossed the link both ways and reached both phones.
    assert all(n > 0 for n in result["link_frames_in"].values()), result
    assert all(ms > 0 for ms in result["heard_ms"].values()), result
    written = {name: row["write_bytes"] for name, row in result["nodes"].items()}
    assert written == {"2001": 0, "2002": 0, "2003 idle": 0}, result
    # Nothing but the configs the test wrote.
    names = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")}
    assert names == {"a.toml", "b.toml", "idle", "idle/idle.toml"}, names
