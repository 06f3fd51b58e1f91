"""Shared test helpers: external tools and the read-only `shared/` reference tree."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["require_tool", "shared_dir"]


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


def shared_dir() -> Path:
    """The read-only `shared/` tree: beside the repository (as CI clones it) or $IAX_NODE_SHARED."""
    override = os.environ.get("IAX_NODE_SHARED")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared"
