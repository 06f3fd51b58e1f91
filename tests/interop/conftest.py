"""Fixtures shared by the interop tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.interop.harness import NODE_SECRETS
from tests.interop.iaxmodem import LIBSTDBUF
from tests.interop.registrar import Registrar


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    """A registrar that knows the two nodes of `node_pair`, NODE_A and NODE_B. A test module
    whose nodes register with other names or secrets defines its own `registrar`."""
    with Registrar(NODE_SECRETS) as reg:
        yield reg


@pytest.fixture
def modem_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """iaxmodem installed, and its output line-buffered (through libstdbuf) for the harness."""
    require_tool("iaxmodem")
    require_tool(str(LIBSTDBUF), check=LIBSTDBUF.exists)
    monkeypatch.setenv("LD_PRELOAD", str(LIBSTDBUF))
    monkeypatch.setenv("_STDBUF_O", "L")


@pytest.fixture
def modem_dir() -> Iterator[Path]:
    """A short working directory for iaxmodem: it silently truncates a long `device` path
    (pytest's tmp_path is too long), and then the harness waits for a pty link that never
    appears."""
    path = Path(tempfile.mkdtemp(prefix="iaxm", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
