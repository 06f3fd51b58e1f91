"""Files the node writes (the template, imported configs), written whole: never half a file after
a crash or a power cut.

The text goes to a temporary file in the target's own directory (so the rename stays on one
file system), is flushed to the disk, and is renamed over the target; then the directory is
flushed, so the rename itself survives a power cut. At every moment the target is the old file
(or absent) or the whole new one. A crash part-way leaves at most a `.<name>.*.tmp` beside it.
`node import-asl3` stages its two files in a directory of its own beside them and uses the
parts, `write_synced` and `sync_dir`, the same way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["sync_dir", "write_synced", "write_whole"]


def write_whole(path: str | os.PathLike[str], text: str, *, mode: int = 0o644) -> None:
    """Write `text` to `path` whole (mode `mode`), creating parent directories."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write_synced(tmp, text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    sync_dir(target.parent)


def write_synced(path: Path, text: str) -> None:
    """Write `text` to `path` and flush it to the disk before returning (a file that a rename
    will put in place: the rename must never land before the data)."""
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def sync_dir(directory: Path) -> None:
    """Make the renames in `directory` durable (a file system that cannot is let be)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
