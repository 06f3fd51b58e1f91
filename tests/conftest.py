"""Shared test helpers: external tools and the reference captures in `tests/data/`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["HEAVY", "interop_dir", "require_tool"]

#: Test files that never run beside each other when the suite runs in parallel (pytest-xdist,
#: `--dist loadgroup`): the ones that load the host (hundreds of legs, thousands of calls) and
#: the ones whose real peer (the ASL3 node) must keep real time beside them.
HEAVY = ("tests/load/", "tests/interop/test_asl3_")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One xdist group per test file (a file's tests share its module fixtures and order, as
    `--dist loadfile` keeps them), and one for all the heavy files together."""
    root = Path(__file__).resolve().parent.parent
    for item in items:
        where = item.path.resolve().relative_to(root).as_posix()
        group = "heavy" if where.startswith(HEAVY) else where
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
