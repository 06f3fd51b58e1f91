"""Shared test helpers: external tools and the reference captures in `tests/data/`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["HEAVY", "interop_dir", "require_tool"]

#: Test files that run one at a time when the suite runs in parallel (pytest-xdist,
#: `--dist loadgroup`), by kind: the ones that load the host (hundreds of legs, thousands of
#: calls) never beside each other, and the ones that start a real ASL3 node (each its own
#: Asterisk) never beside each other. One load test and one ASL3 test may run at once, as the
#: loaded third of the suite runs each of them beside two CPU hogs anyway; in one group the
#: two kinds made a five-minute serial path that bounded that whole run.
HEAVY = {"tests/load/": "heavy-load", "tests/interop/test_asl3_": "heavy-asl3"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One xdist group per test file (a file's tests share its module fixtures and order, as
    `--dist loadfile` keeps them), and one for each kind of heavy file."""
    root = Path(__file__).resolve().parent.parent
    for item in items:
        where = item.path.resolve().relative_to(root).as_posix()
        group = next((g for prefix, g in HEAVY.items() if where.startswith(prefix)), where)
        item.add_marker(pytest.mark.xdist_group(group))


def require_tool(name: str, check: Callable[[], bool] | None = None) -> None:
    """Skip the calling test when `name` is missing, but fail it under CI (CI must have it).

    `check` replaces the default test (`name` found on PATH), for libraries and the like.
    """
    present = check() if check is not None else shutil.which(name) is not None
    if present:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{name} is required under CI but is not installed")
    pytest.skip(f"{name} is not installed")


def interop_dir() -> Path:
    """Real traffic the tests replay: captures of Asterisk, iaxclient and AllStarLink (ASL3)
    nodes, copied from the team's shared reference tree so a clone alone runs every test."""
    return Path(__file__).resolve().parent / "data" / "interop"
