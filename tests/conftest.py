"""Shared test helpers: external tools and the reference captures in `tests/data/`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["interop_dir", "require_tool"]


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
