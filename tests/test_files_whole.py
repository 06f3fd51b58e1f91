"""Every file the node writes is whole after a crash or a power cut: the template `node serve`
writes when its config is missing, and `node import-asl3`'s config and nodes file.

strace shows the real program's system calls: each file is put in place by a rename of a
temporary file beside it, flushed to the disk (fsync) before the rename, and is never opened for
writing where it stands; the directory is flushed after the rename. strace's fault injection
then kills the program (SIGKILL) at the flush and at the rename, the worst moments for a crash:
what stands at the file's name is the old file (or nothing) or the whole new one, and the
program started again finishes the job.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from node.config import load_config
from node.config.template import render_template
from tests.strace import Syscall, kill_traced, read_trace, run_traced, strace_argv

SHIPPED = Path(__file__).resolve().parent / "data" / "asl3" / "shipped"
FILE_CALLS = "openat,fsync,rename,renameat,renameat2"
RENAMES = ("rename", "renameat", "renameat2")
#: Python's own .pyc files are written by a rename too: none are written under the trace.
QUIET_PYTHON = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def node_argv(trace: Path, *args: str, kill_at: tuple[str, ...] = ()) -> list[str]:
    return [*strace_argv(trace, FILE_CALLS, kill_at=kill_at), sys.executable, "-m", "node", *args]


def _quoted(args: str) -> list[str]:
    return re.findall(r'"((?:[^"\\]|\\.)*)"', args)


def _fd_path(args: str) -> str:
    match = re.match(r"\d+<(.*?)>", args)
    assert match, args
    return match.group(1)


def put_in_place(calls: list[Syscall], directory: Path) -> list[Path]:
    """The files the traced program put in `directory`, in order, each checked: renamed there
    from a temporary file in the same directory (or one of its own inside it) that was fsynced
    before the rename, never opened for writing at its own name, the directory fsynced after
    the rename."""
    targets: list[Path] = []
    for i, call in enumerate(calls):
        if call.name in RENAMES and call.result == "0":
            source, target = (Path(p) for p in _quoted(call.args))
            if target.parent != directory:
                continue
            assert directory in source.parents, call
            synced = [c for c in calls[:i] if c.name == "fsync" and c.result == "0"]
            assert any(_fd_path(c.args) == str(source) for c in synced), f"{source} not fsynced"
            after = [c for c in calls[i:] if c.name == "fsync" and c.result == "0"]
            assert any(_fd_path(c.args) == str(directory) for c in after), "directory not synced"
            targets.append(target)
    for call in calls:
        if call.name == "openat" and re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", call.args):
            (path,) = _quoted(call.args)
            assert Path(path) not in targets, f"{path} opened for writing in place: {call}"
    return targets


def serve_until_written(config: Path, trace: Path, kill_at: str = "bind") -> int:
    """`node serve` on `config` (missing: it writes the template), killed at `kill_at`, and at
    the latest at its first socket, which it binds once the template is in place: no test here
    takes the template's ports. The exit status (strace's: the node's signal)."""
    kills = tuple(dict.fromkeys((kill_at, "bind")))
    done = run_traced(
        node_argv(trace, "serve", "--config", str(config), kill_at=kills), QUIET_PYTHON
    )
    return done.returncode


def test_the_template_is_renamed_into_place_after_fsync(tmp_path: Path) -> None:
    trace, config = tmp_path / "serve.trace", tmp_path / "etc" / "node.toml"
    assert serve_until_written(config, trace) == -signal.SIGKILL
    assert put_in_place(read_trace(trace), config.parent) == [config]
    assert config.read_text() == render_template()


def test_the_importers_files_are_renamed_into_place_after_fsync(tmp_path: Path) -> None:
    trace, config = tmp_path / "import.trace", tmp_path / "node.toml"
    args = ["import-asl3", "--asterisk-dir", str(SHIPPED), "--node", "1999", "--config"]
    done = run_traced(node_argv(trace, *args, str(config)), QUIET_PYTHON)
    assert done.returncode == 0, done.stderr
    nodes = tmp_path / "node-nodes.conf"
    assert put_in_place(read_trace(trace), tmp_path) == [nodes, config]
    assert load_config(config).nodes_file == nodes


@pytest.mark.parametrize("kill_at", ["fsync", "rename"])
def test_killed_writing_the_template_it_writes_it_whole_when_started_again(
    tmp_path: Path, kill_at: str
) -> None:
    config = tmp_path / "node.toml"
    assert serve_until_written(config, tmp_path / "killed.trace", kill_at) == -signal.SIGKILL
    # Only the temporary file, whole or not, which nothing reads.
    assert not config.exists()
    assert len(list(tmp_path.glob(".node.toml.*.tmp"))) == 1
    # Started again: the template, whole.
    assert serve_until_written(config, tmp_path / "again.trace") == -signal.SIGKILL
    assert config.read_text() == render_template()
    load_config(config)


@pytest.mark.parametrize("kill_at", ["rename:when=1", "rename:when=2"])
def test_killed_importing_over_a_config_it_leaves_whole_files(tmp_path: Path, kill_at: str) -> None:
    config, nodes = tmp_path / "node.toml", tmp_path / "node-nodes.conf"
    working = '[listener]\nbind = "127.0.0.1:4569"\n\n[control]\nbind = "127.0.0.1:8730"\n'
    config.write_text(working)
    args = ["import-asl3", "--asterisk-dir", str(SHIPPED), "--node", "1999", "--config"]
    killed = run_traced(
        node_argv(tmp_path / "killed.trace", *args, str(config), kill_at=(kill_at,)), QUIET_PYTHON
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # Killed before the config's rename (the nodes file's comes first): the working config
    # stands, byte for byte, and the nodes file is not there yet, or there whole.
    assert config.read_text() == working
    if kill_at.endswith("=1"):
        assert not nodes.exists()
    else:
        assert nodes.read_text().splitlines()[0] == "1999=radio@127.0.0.1:4569/1999,NONE"
    # Run again, to the end: both files, whole.
    again = subprocess.run(
        [sys.executable, "-m", "node", *args, str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    cfg = load_config(config)
    assert cfg.node_id == "1999" and cfg.nodes_file == nodes
    assert nodes.read_text().splitlines()[0] == "1999=radio@127.0.0.1:4569/1999,NONE"


def test_strace_kills_where_told(tmp_path: Path) -> None:
    # The kills above land where they say: a program killed at its rename never renames.
    target = tmp_path / "b"
    script = f"import os; open('{tmp_path}/a', 'w').close(); os.replace('{tmp_path}/a', '{target}')"
    trace = tmp_path / "t.trace"
    argv = [*strace_argv(trace, FILE_CALLS, kill_at=("rename",)), sys.executable, "-c", script]
    proc = subprocess.Popen(argv)
    try:
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        kill_traced(proc)
    assert not target.exists() and (tmp_path / "a").exists()
