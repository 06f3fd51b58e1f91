"""The page ships inside the wheel: build it, install it into a fresh virtual environment (no
system site packages, dependencies from the package index), run the installed `node serve` and
fetch `/status`, `/`, `/app.js` and `/style.css` from it. The wheel installs the program under
both its names, `node` and `iax-node` (the one the systemd unit runs), and both answer `--help`."""

from __future__ import annotations

import configparser
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.node_process import NodeProcess, free_port, write_config
from tests.page.served import ASSETS, assert_page_served

REPO = Path(__file__).resolve().parents[2]


def run(*args: str | Path, timeout: float) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_installed_wheel_serves_the_status_page(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # The PEP 517 build users get from `pip install .` (maturin, release profile).
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, REPO, timeout=1800)
    (wheel,) = dist.glob("iax_node-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name, _ in ASSETS.values():
        assert f"node/web/{name}" in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    scripts = configparser.ConfigParser()
    scripts.read_string(zipfile.ZipFile(wheel).read(entry_points).decode())
    installed = dict(scripts["console_scripts"])
    assert installed == {"node": "node.cli:main", "iax-node": "node.cli:main"}

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, timeout=300)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, timeout=900)
    # The installed copy is what runs, not the source tree.
    where = run(python, "-c", "import node; print(node.__file__)", timeout=60).strip()
    assert Path(where).is_relative_to(venv), where
    for program in ("node", "iax-node"):
        usage = run(venv / "bin" / program, "--help", timeout=60)
        assert usage.startswith(f"Usage: {program} [OPTIONS] COMMAND"), usage
        assert "serve" in usage and "iax-node" in usage
        serve = run(venv / "bin" / program, "serve", "--help", timeout=60)
        assert serve.startswith(f"Usage: {program} serve [OPTIONS]") and "--config" in serve

    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    config = write_config(tmp_path / "node.toml", udp_port=udp, http_port=http)
    node = NodeProcess(config, udp, http, program=[str(venv / "bin" / "node")], cwd=tmp_path)
    try:
        node.wait_ready()
        status = node.get("/status")
        assert status.status_code == 200 and status.json()["listening"] is True
        assert_page_served(node.base_url)
    finally:
        node.kill()
