"""The README's first command, run as it is written, on Debian 12's own Python.

`/usr/bin/python3` (3.11, externally managed: PEP 668) comes first on the PATH, as on a fresh
Debian 12 or Raspberry Pi OS Bookworm host. The command runs from a copy of the checkout's
tracked files, builds the package into its own venv (pip takes the dependencies and maturin from
PyPI; cargo stays offline and takes the crates the suite's Rust phases already fetched), and
starts the node on the template it writes; the test waits for `GET /status`, then stops the node
with `POST /shutdown` and checks it exited 0. The command block is read out of README.md, so a
README that changes its command changes what this test runs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import require_tool
from tests.test_docs import ROOT, readme_section

SYSTEM_PYTHON = Path("/usr/bin/python3")
#: The template's control channel and IAX2 port, which the command's node binds.
CONTROL = ("127.0.0.1", 8730)
IAX2 = ("0.0.0.0", 4569)
#: The build and the dependencies' download, on a busy two-core host, with room to spare.
INSTALL_SECONDS = 1800


def first_command_block() -> str:
    (block, *_) = re.findall(r"```sh\n(.*?)```", readme_section("On a fresh machine"), re.S)
    return block


def copy_checkout(dest: Path) -> None:
    """The files git tracks (as they are in the work tree), nothing else: a fresh clone's."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def port_taken(kind: int, addr: tuple[str, int]) -> bool:
    with socket.socket(socket.AF_INET, kind) as s:
        try:
            s.bind(addr)
        except OSError:
            return True
    return False


def child_env(bin_dir: Path) -> dict[str, str]:
    """The test's environment with `bin_dir` (holding `python3`) first on the PATH, without
    what points Python at this checkout or a venv, with cargo kept off the network."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("NET_")
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["CARGO_NET_OFFLINE"] = "true"
    env["PIP_NO_INPUT"] = "1"
    return env


@pytest.mark.slow
def test_the_readmes_first_command_installs_and_runs_on_the_system_python(tmp_path: Path) -> None:
    require_tool("/usr/bin/python3", lambda: SYSTEM_PYTHON.exists())
    require_tool(
        "python3-venv",
        lambda: subprocess.run([SYSTEM_PYTHON, "-c", "import ensurepip"]).returncode == 0,
    )
    require_tool("cargo")
    require_tool("git")
    if port_taken(socket.SOCK_STREAM, CONTROL) or port_taken(socket.SOCK_DGRAM, IAX2):
        # The template's ports: another node (a developer's) holds them.
        if os.environ.get("CI"):
            pytest.fail("the template's ports (TCP 8730, UDP 4569) are taken")
        pytest.skip("the template's ports (TCP 8730, UDP 4569) are taken on this host")
    block = first_command_block()
    checkout, bin_dir = tmp_path / "iax-node", tmp_path / "bin"
    copy_checkout(checkout)
    assert not (checkout / "node.toml").exists() and not (checkout / ".venv").exists()
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(SYSTEM_PYTHON)
    env = child_env(bin_dir)
    assert shutil.which("python3", path=env["PATH"]) == str(bin_dir / "python3")

    log_path = tmp_path / "command.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            ["bash", "-c", block],
            cwd=checkout,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://{CONTROL[0]}:{CONTROL[1]}"
    try:
        deadline = time.monotonic() + INSTALL_SECONDS
        status = None
        while status is None:
            assert proc.poll() is None, f"the command ended ({proc.returncode}):\n" + tail(log_path)
            assert time.monotonic() < deadline, "no /status in time:\n" + tail(log_path)
            try:
                status = httpx.get(base + "/status", timeout=2)
            except httpx.TransportError:
                time.sleep(0.5)
        assert status.status_code == 200
        assert status.json()["listening"] is True
        # The node the command built: the venv's program, on the template it wrote.
        assert (checkout / ".venv" / "bin" / "node").exists()
        assert "safe defaults" in (checkout / "node.toml").read_text()
        venv_python = (checkout / ".venv" / "bin" / "python3").resolve()
        assert venv_python == SYSTEM_PYTHON.resolve()
        reply = httpx.post(
            base + "/shutdown", content=b"{}", headers={"Content-Type": "application/json"}
        )
        assert reply.status_code == 200, reply.text
        assert proc.wait(timeout=60) == 0, tail(log_path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    # Nothing of the command's process group is left (pip's build, cargo, the node).
    assert not any(group_members(proc.pid)), group_members(proc.pid)


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command's ")": state, ppid, pgrp.
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def tail(path: Path, lines: int = 60) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
