"""Fixtures of the status-page tests: one headless Chromium per test module."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import require_tool


def _have_playwright() -> bool:
    return importlib.util.find_spec("playwright") is not None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright; skipped where either is missing (failed under CI)."""
    require_tool("chromium")
    require_tool("playwright (pip)", check=_have_playwright)
    from playwright.sync_api import expect, sync_playwright

    from tests.page.browser import CHROMIUM_ARGS, chromium_path

    # The host is shared and slow at times: give the page time before an assertion gives up.
    expect.set_options(timeout=15_000)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the screenshots the page tests kept, so a CI log says where to find them."""
    from tests.page.browser import WRITTEN

    if WRITTEN:
        terminalreporter.section("status page screenshots")
        for path in WRITTEN:
            terminalreporter.write_line(str(path))
