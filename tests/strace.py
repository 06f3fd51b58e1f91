"""Debian's strace around a real `node` process: which system calls it made, in what order, and
a SIGKILL at the very call a test names (strace's fault injection), as a crash, the OOM killer
or a power cut would land there.

The trace names each file descriptor's path (`-y`) and prints bytes that are not printable in
hex (`-x`); every thread is followed (`-f`). A traced node outlives a killed strace (this
strace has no `--kill-on-exit`): `kill_traced` ends the node first, and `run_traced` does so
whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import require_tool

__all__ = ["Syscall", "hex_bytes", "kill_traced", "read_trace", "run_traced", "strace_argv"]

#: `PID name(args) = result`, or the first half of a call another thread interrupted.
_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*?)(?:\)\s+=\s+(.*)| <unfinished \.\.\.>)$")


@dataclass(frozen=True)
class Syscall:
    pid: int
    name: str
    #: The arguments as strace prints them (paths in `<...>` after each descriptor).
    args: str
    #: What it returned, `?` for a call the process died in; None while another thread ran.
    result: str | None


def strace_argv(trace: Path, calls: str, *, kill_at: tuple[str, ...] = ()) -> list[str]:
    """The command prefix that traces `calls` (strace's `trace=` list) into `trace`, with a
    SIGKILL at the entry of each call of `kill_at` (`"rename"`, `"fsync:when=2"`)."""
    require_tool("strace")
    strace = shutil.which("strace")
    assert strace is not None
    argv = [strace, "-f", "-qq", "-y", "-x", "-o", str(trace)]
    for at in kill_at:
        # strace injects into traced calls only.
        name, _, when = at.partition(":")
        calls += f",{name}"
        argv += ["-e", f"inject={name}:signal=KILL" + (f":{when}" if when else "")]
    return [*argv, "-e", f"trace={calls}"]


def read_trace(trace: Path) -> list[Syscall]:
    """The calls of `trace` in the order they began (signals and exits left out)."""
    calls = []
    for line in trace.read_text().splitlines():
        match = _LINE.match(line)
        if match:
            pid, name, args, result = match.groups()
            calls.append(Syscall(int(pid), name, args, result))
    return calls


def hex_bytes(data: bytes) -> str:
    """`data` (control bytes only, as a CM108 report) as strace's `-x` prints it."""
    assert all(b < 0x20 for b in data)
    return '"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def kill_traced(proc: subprocess.Popen[str]) -> None:
    """SIGKILL strace's child (the node) and then strace `proc`, if they still run."""
    if proc.poll() is None:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        with contextlib.suppress(OSError):
            for pid in children.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        proc.kill()
    proc.wait(timeout=30)


def run_traced(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the `strace_argv(...) + program` command line `argv` to its end (output captured);
    the node and strace are killed if the test stops waiting."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        kill_traced(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
