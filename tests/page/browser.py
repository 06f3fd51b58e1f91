"""Debian's Chromium, driven headless by Playwright from PyPI, looking at the status page.

Playwright's own browser builds are never downloaded: every launch names Debian's binary. Each
`StatusPage` records every request the page makes (to prove it only GETs its own origin) and
carries an injected MutationObserver that timestamps DOM changes, so a test can tell how long
after an event reached an SSE client the page showed it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # imported lazily, so a machine without Playwright skips instead of erroring
    from playwright.sync_api import Browser, Locator, LocatorAssertions, Page

__all__ = [
    "ARTIFACTS",
    "CHROMIUM_ARGS",
    "VIEWS",
    "WRITTEN",
    "StatusPage",
    "chromium_path",
    "expect",
]

#: Screenshots land here (ignored by git; CI keeps the working tree's files).
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
#: Every screenshot written in this test session (listed at the end of the run).
WRITTEN: list[Path] = []

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: The screenshot matrix: phone and desktop widths, light and dark.
VIEWS = [
    ("phone", {"width": 360, "height": 740}),
    ("desktop", {"width": 1280, "height": 800}),
]

# Runs before the page's own script. `__watch(name, selector, text, absent)` records in
# `__marks[name]` the wall-clock time (ms since the epoch, sub-millisecond) at which the DOM first
# had an element matching `selector` (whose trimmed text is `text`, when given), or none (when
# `absent`). The observer's callback runs as a microtask right after the script that changed the
# DOM, so the mark is when the page's event handler finished rendering, not when it was painted.
MARKS_JS = """
(() => {
  const marks = {};
  const watches = [];
  const clock = () => performance.timeOrigin + performance.now();
  function hit(w) {
    const node = document.querySelector(w.selector);
    if (w.absent) return node === null;
    return node !== null && (w.text === null || node.textContent.trim() === w.text);
  }
  function check() {
    const t = clock();
    for (let i = watches.length - 1; i >= 0; i--) {
      if (hit(watches[i])) {
        marks[watches[i].name] = t;
        watches.splice(i, 1);
      }
    }
  }
  window.__marks = marks;
  window.__watch = (name, selector, text, absent) => {
    const w = { name, selector, text, absent };
    if (hit(w)) return false;
    watches.push(w);
    return true;
  };
  new MutationObserver(check).observe(document, {
    subtree: true, childList: true, characterData: true, attributes: true,
  });
})();
"""


def expect(locator: Locator) -> LocatorAssertions:
    """Playwright's auto-waiting assertions (imported on first use)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def chromium_path() -> str:
    return shutil.which("chromium") or "/usr/bin/chromium"


class StatusPage:
    """One browser context on the status page at `base_url`, with its requests recorded."""

    def __init__(self, browser: Browser, base_url: str, view: str = "desktop") -> None:
        self.base_url = base_url
        self.context = browser.new_context(viewport=dict(VIEWS)[view])
        #: (method, url) of every request the page made, in order.
        self.requests: list[tuple[str, str]] = []
        #: Uncaught exceptions and console errors of the page.
        self.errors: list[str] = []
        self.context.on("request", lambda r: self.requests.append((r.method, r.url)))
        self.page: Page = self.context.new_page()
        self.page.add_init_script(MARKS_JS)
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)

    def open(self) -> StatusPage:
        response = self.page.goto(self.base_url + "/")
        assert response is not None and response.status == 200
        return self

    def close(self) -> None:
        self.context.close()

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text().strip()

    def watch(
        self, name: str, selector: str, text: str | None = None, absent: bool = False
    ) -> None:
        """Start timing the moment the DOM reaches the described state (it must not be there
        already, or the test would measure nothing)."""
        armed = self.page.evaluate(
            "([n, s, t, a]) => window.__watch(n, s, t, a)", [name, selector, text, absent]
        )
        assert armed, f"{name}: {selector} is already in the watched state"

    def mark(self, name: str, timeout_ms: float = 15_000) -> float:
        """When the watched state `name` was reached (ms since the epoch), waiting for it."""
        self.page.wait_for_function(
            "n => window.__marks[n] !== undefined", arg=name, timeout=timeout_ms
        )
        value: Any = self.page.evaluate("n => window.__marks[n]", name)
        return float(value)

    def assert_read_only_and_local(self) -> None:
        """Every request was a GET to the page's own origin: no command, no third party."""
        origin = urlsplit(self.base_url)[:2]
        assert self.requests, "the page made no request at all"
        for method, url in self.requests:
            assert method == "GET", f"the page sent {method} {url}"
            assert urlsplit(url)[:2] == origin, f"the page loaded a foreign resource: {url}"
        assert not self.errors, self.errors

    def screenshots(self, stem: str) -> list[Path]:
        """The page at each width of `VIEWS`, light and dark, saved under `ARTIFACTS`."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        paths = []
        for scheme in ("light", "dark"):
            self.page.emulate_media(color_scheme=scheme)
            for view, size in VIEWS:
                self.page.set_viewport_size(size)
                path = ARTIFACTS / f"{stem}-{view}-{scheme}.png"
                self.page.screenshot(path=str(path), full_page=True)
                print(f"screenshot: {path}")
                paths.append(path)
                WRITTEN.append(path)
        self.page.emulate_media(color_scheme="light")
        self.page.set_viewport_size(dict(VIEWS)["desktop"])
        return paths
