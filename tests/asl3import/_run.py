"""Running `node import-asl3` in the tests: in process (the config loaded back) and as the
command an operator types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from node.asl3import.command import import_asl3
from node.config import load_config
from node.config.node import NodeConfig


def imported(
    out_dir: Path, src: Path, node: str | None = None, *, force: bool = False
) -> tuple[NodeConfig, str]:
    """Import `src` into `out_dir`/node.toml (which must be written) and load it back; the
    loaded config and the report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "node.toml"
    done = import_asl3(src, node, out, force=force)
    assert done.written
    return load_config(out), done.report


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`node import-asl3 <args>` as a child process."""
    return subprocess.run(
        [sys.executable, "-m", "node", "import-asl3", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
