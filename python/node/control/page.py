"""The read-only status page: three static files shipped inside the package (`node/web/`).

They are read once when the application is built, so a broken install fails at start-up rather
than on the first visit. The page loads nothing but itself and the event stream, which is what
the Content-Security-Policy allows: no inline script or style, no other origin, no framing.
"""

from __future__ import annotations

import hashlib
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["CONTENT_SECURITY_POLICY", "page_routes"]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

#: URL path -> (file in node/web, content type).
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}


def _asset_route(path: str, name: str, media_type: str) -> Route:
    body = files("node").joinpath("web", name).read_bytes()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {
        # Revalidate on every load, so an upgraded node never runs with a cached older page.
        "Cache-Control": "no-cache",
        "ETag": etag,
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }

    async def serve(request: Request) -> Response:
        if etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=media_type, headers=headers)

    return Route(path, serve, methods=["GET"])


def page_routes() -> list[Route]:
    """GET routes for the page and its two assets."""
    return [_asset_route(path, name, media) for path, (name, media) in ASSETS.items()]
