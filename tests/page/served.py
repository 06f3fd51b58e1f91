"""What a node must serve for the status page: the three files of `python/node/web`, byte for
byte, each with its content type and the security headers."""

from __future__ import annotations

from pathlib import Path

import httpx

__all__ = ["ASSETS", "WEB", "assert_page_served"]

#: The page's single source in the repository (the wheel ships this directory).
WEB = Path(__file__).resolve().parents[2] / "python" / "node" / "web"

ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}


def assert_page_served(base_url: str) -> dict[str, httpx.Response]:
    """GET each asset from the node; check body, type and headers; return the responses."""
    responses = {}
    for path, (name, content_type) in ASSETS.items():
        r = httpx.get(base_url + path, timeout=5)
        assert r.status_code == 200, (path, r.status_code, r.text)
        assert r.content == (WEB / name).read_bytes(), f"{path} differs from {name}"
        assert r.headers["content-type"] == content_type
        assert r.headers["cache-control"] == "no-cache"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "unsafe-inline" not in csp
        responses[path] = r
    return responses
