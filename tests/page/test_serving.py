"""`GET /`, `/app.js`, `/style.css` on a real `node serve`: the files, their headers, and what
the markup and script may not contain for the Content-Security-Policy and the read-only rule."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

import httpx
import pytest

from tests.interop.harness import running_node
from tests.node_process import NodeProcess
from tests.page.served import ASSETS, WEB, assert_page_served

#: The page has no build step and must stay small enough for a Raspberry Pi and a phone: 34 KiB
#: uncompressed (it was under 30 before the loudness meters, the host's node list and EchoLink
#: stations joined it; 32 KiB with them).
SIZE_BUDGET = 34 * 1024


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    with running_node(tmp_path_factory.mktemp("serving"), "serving") as proc:
        yield proc


def test_each_file_is_served_with_its_type_and_security_headers(node: NodeProcess) -> None:
    responses = assert_page_served(node.base_url)
    csp = responses["/"].headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"


def test_revalidation_and_wrong_methods(node: NodeProcess) -> None:
    r = node.get("/app.js")
    etag = r.headers["etag"]
    again = httpx.get(node.base_url + "/app.js", headers={"If-None-Match": etag}, timeout=5)
    assert again.status_code == 304 and again.content == b""
    assert again.headers["cache-control"] == "no-cache"
    head = httpx.head(node.base_url + "/", timeout=5)
    assert head.status_code == 200 and head.content == b""
    post = node.post("/")
    assert post.status_code == 405
    assert post.json() == {"error": "method POST not allowed on /"}
    assert node.get("/index.html").json() == {"error": "not found"}


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self.refs: list[str] = []
        self._tag = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag = tag
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.inline.append(f"<{tag} {name}>")
            if name in ("src", "href") and value is not None:
                self.refs.append(value)
        if tag == "script":
            self.scripts.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        if self._tag in ("script", "style") and data.strip():
            self.inline.append(f"<{self._tag}> body")


def test_markup_has_no_inline_code_and_loads_only_its_own_files() -> None:
    markup = _Markup()
    markup.feed((WEB / "index.html").read_text())
    assert markup.inline == []
    assert markup.scripts == [{"src": "app.js", "defer": None}]
    # Relative references only (the page works behind a reverse proxy's sub-path); the icon is
    # an empty data URL so browsers do not ask for /favicon.ico.
    assert sorted(markup.refs) == ["app.js", "data:,", "style.css"]


def test_script_sends_nothing_and_page_stays_small() -> None:
    script = (WEB / "app.js").read_text()
    # Read-only: no request API but the EventSource, and nothing writes markup from strings.
    for forbidden in ("fetch(", "XMLHttpRequest", "sendBeacon", "WebSocket", "innerHTML", "eval("):
        assert forbidden not in script, forbidden
    assert re.findall(r"new EventSource\(([^)]*)\)", script) == ['"events"']
    total = sum((WEB / name).stat().st_size for name, _ in ASSETS.values())
    assert total < SIZE_BUDGET, f"the page is {total} bytes"


def test_the_package_directory_is_the_single_source() -> None:
    # The wheel ships `node/web`; no top-level copy may drift from it.
    assert sorted(p.name for p in WEB.iterdir()) == sorted(n for n, _ in ASSETS.values())
    assert not (WEB.parents[2] / "web").exists()
