"""The browser guard in front of the control channel (a pure ASGI middleware).

The channel listens on loopback and has no authentication, yet every web page the operator opens
can send requests to it. Two attacks get through loopback binding alone:

- Cross-site request forgery: a page on any site POSTs a "simple" request (`text/plain`, a form)
  which the browser sends without asking first. The page cannot read the reply, but the command
  runs. Refused by the `Origin` / `Sec-Fetch-Site` check, and made impossible in any browser by
  requiring `Content-Type: application/json`: such a request needs a CORS preflight, and the node
  never grants one (it sends no `Access-Control-*` header at all).
- DNS rebinding: a page at evil.example re-points its own name to 127.0.0.1, so the browser treats
  the node as the page's own origin and lets it read `/status` and `/events`. Only the `Host`
  header (`evil.example:8730`) gives it away, so every request, GET included, must name the node
  by a loopback name or address and by the port the server really listens on.

Refusals are 403 (415 for the content type) with `{"error": ...}`; the message never repeats what
the client sent, only what the node accepts. This is pure ASGI, not Starlette's
BaseHTTPMiddleware, which would buffer the SSE stream of `/events`.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["BrowserGuard", "Refusal", "check_request", "is_node_host", "split_host", "split_origin"]

log = logging.getLogger(__name__)

#: Methods that change nothing; every other method must come from the node's own origin.
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: `Sec-Fetch-Site` values that mean another origin sent the request. `same-site` is foreign
#: too: a page on another port of localhost is the same site but another origin.
FOREIGN_FETCH_SITES = frozenset({"cross-site", "same-site"})
#: The one media type commands accept (parameters such as `charset` are allowed).
JSON_TYPE = "application/json"
#: Seconds between two log lines about refused requests, so a hostile page cannot flood the log.
LOG_INTERVAL_SECONDS = 10.0

_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The headers the guard reads (lowercase, as ASGI gives them).
_GUARDED = {
    b"host": "Host",
    b"origin": "Origin",
    b"sec-fetch-site": "Sec-Fetch-Site",
    b"content-type": "Content-Type",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: the HTTP status and the `error` message sent back."""

    status: int
    message: str


def split_host(value: str) -> tuple[str, int | None] | None:
    """`(host, port)` of a Host header (or an origin's authority); None when malformed.

    The host comes back lowercased, without a trailing dot and, for an IPv6 literal, without
    brackets; the port is None when absent. Userinfo, paths, spaces and bare IPv6 are malformed.
    """
    if not value or not value.isascii() or not value.isprintable() or " " in value:
        return None
    if value.startswith("["):
        close = value.find("]")
        if close < 0:
            return None
        host, rest = value[1:close], value[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text_or_host = value.rpartition(":")
        if not sep:
            host, port_text = value, None
        else:
            port_text = port_text_or_host
        if ":" in host or any(c in host for c in "/?#@\\[]"):
            return None
        if host.endswith("."):
            host = host[:-1]  # an absolute name: the same host (browsers send it as typed)
    if not host:
        return None
    port: int | None = None
    if port_text is not None:
        if not (port_text.isdigit() and len(port_text) <= 5):
            return None
        port = int(port_text)
        if port > 65535:
            return None
    return host.lower(), port


def is_node_host(host: str, bind_host: str) -> bool:
    """Whether `host` (as `split_host` gives it) names this node: localhost, an address of
    127.0.0.0/8, ::1, or the control bind host itself. Zoned IPv6 and other names are not."""
    if host == "localhost" or host == bind_host.lower():
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address):
        return addr.scope_id is None and addr == ipaddress.IPv6Address("::1")
    return addr.is_loopback


def split_origin(value: str) -> tuple[str, str, int] | None:
    """`(scheme, host, port)` of a serialized `Origin`; None for `null` or anything malformed.

    The port is the scheme's default when absent; the host is normalized as by `split_host`.
    """
    scheme, sep, authority = value.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _DEFAULT_PORTS:
        return None
    parts = split_host(authority)
    if parts is None:
        return None
    host, port = parts
    return scheme, host, _DEFAULT_PORTS[scheme] if port is None else port


def _text(value: bytes | None) -> str:
    # Latin-1 maps every byte, so odd bytes reach the parsers (which refuse them) intact.
    return value.decode("latin-1") if value is not None else ""


def _accepted(port: int) -> str:
    return f"localhost, 127.0.0.1 or [::1] on port {port}"


def check_request(
    method: str,
    headers: Iterable[tuple[bytes, bytes]],
    *,
    port: int | None,
    bind_host: str,
) -> Refusal | None:
    """Why the request must be refused, or None to let it through.

    `port` is the port the server really listens on (None when unknown: everything is
    refused); `headers` are the raw ASGI headers, names lowercase.
    """
    seen: dict[bytes, bytes | None] = {}
    for name, value in headers:
        if name in _GUARDED:
            # A repeated header is ambiguous (which one did the browser check?): refuse it.
            seen[name] = None if name in seen else value
    if port is None:
        return Refusal(403, "the control channel cannot tell which port it listens on")
    for name in (b"host", b"origin", b"sec-fetch-site"):
        if name in seen and seen[name] is None:
            return Refusal(403, f"more than one {_GUARDED[name]} header")

    if b"host" not in seen:
        return Refusal(403, f"a Host header is required, naming this node ({_accepted(port)})")
    parts = split_host(_text(seen[b"host"]))
    if parts is None or not is_node_host(parts[0], bind_host):
        return Refusal(
            403,
            f"the Host header does not name this node (accepted: {_accepted(port)}); "
            "a request for another name is refused as DNS rebinding",
        )
    if parts[1] is not None and parts[1] != port:
        return Refusal(403, f"the Host header names another port (accepted: {_accepted(port)})")

    if method in SAFE_METHODS:
        return None

    if b"origin" in seen:
        origin = split_origin(_text(seen[b"origin"]))
        if (
            origin is None
            or origin[0] != "http"
            or origin[2] != port
            or not is_node_host(origin[1], bind_host)
        ):
            return Refusal(
                403,
                "cross-origin request refused: commands are accepted only from this node's own "
                f"origin (http://localhost:{port}, http://127.0.0.1:{port} or "
                f"http://[::1]:{port}) or from clients that send no Origin",
            )
    if _text(seen.get(b"sec-fetch-site")).lower() in FOREIGN_FETCH_SITES:
        return Refusal(
            403, "cross-site request refused: the browser reports another site or origin"
        )

    if method == "POST":
        media_type = _text(seen.get(b"content-type")).partition(";")[0].strip().lower()
        if media_type != JSON_TYPE:
            return Refusal(415, f"commands need Content-Type: {JSON_TYPE} (even with no body)")
    return None


class BrowserGuard:
    """ASGI middleware refusing what `check_request` refuses, before the app sees the request."""

    def __init__(self, app: ASGIApp, bind_host: str) -> None:
        self.app = app
        self.bind_host = bind_host
        self._logged_at: float | None = None
        self._unlogged = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # No WebSocket endpoint exists, and browsers let any page open one without CORS:
            # refusing them here keeps a future endpoint from skipping the checks.
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        port = server[1] if server is not None else None
        refusal = check_request(
            scope["method"], scope["headers"], port=port, bind_host=self.bind_host
        )
        if refusal is None:
            await self.app(scope, receive, send)
            return
        self._log(scope["method"], refusal)
        response = JSONResponse({"error": refusal.message}, status_code=refusal.status)
        await response(scope, receive, send)

    def _log(self, method: str, refusal: Refusal) -> None:
        now = time.monotonic()
        if self._logged_at is not None and now - self._logged_at < LOG_INTERVAL_SECONDS:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more refused since the last report)" if self._unlogged else ""
        log.warning(
            "control channel refused a %s request (%d): %s%s",
            method,
            refusal.status,
            refusal.message,
            more,
        )
        self._logged_at, self._unlogged = now, 0
