"""The loopback HTTP control channel (Starlette).

Conventions of the spec: commands are POST with JSON bodies; a command that returns state replies
with the snapshot, one with nothing to report replies `{"ok": true}`; errors reply
`{"error": <message>}`; any other path is 404 `{"error": "not found"}`. Before any handler runs,
`guard.BrowserGuard` refuses what a web page could send (foreign Host or Origin, commands not sent
as `application/json`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from node.control.guard import BrowserGuard
from node.control.limits import MAX_BODY_BYTES, RequestLimits
from node.control.page import page_routes
from node.control.sse import event_stream
from node.controller import Controller
from node.errors import CommandError

if TYPE_CHECKING:
    from node.host import Host

__all__ = ["create_app", "node_routes", "node_summary", "read_json_body"]

log = logging.getLogger(__name__)


def error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def read_json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object; an empty body is `{}`. Raises CommandError(400) otherwise."""
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        # `RequestLimits` refuses such a body (413) before a handler runs; this guards callers
        # that mount the handlers without it.
        raise CommandError(f"request body larger than {MAX_BODY_BYTES} bytes", 413)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CommandError(
            f"request body is not valid JSON: {exc.msg if hasattr(exc, 'msg') else exc}", 400
        ) from None
    if not isinstance(body, dict):
        raise CommandError("request body must be a JSON object", 400)
    return body


def optional(body: dict[str, Any], key: str, kind: type) -> Any:
    """`body[key]` if present, checked to be of `kind` (bool is not an int, nor an int a bool)."""
    if key not in body or body[key] is None:
        return None
    value = body[key]
    if type(value) is not kind:
        raise CommandError(f"field {key!r} must be a {kind.__name__}", 400)
    return value


def required(body: dict[str, Any], key: str, kind: type) -> Any:
    """`body[key]`, which must be present, of `kind`, and (for strings) not empty."""
    value = optional(body, key, kind)
    if value is None or value == "":
        raise CommandError(f"field {key!r} is required", 400)
    return value


def gain(body: dict[str, Any], key: str) -> float | None:
    """`body[key]` as a number of dB if present (JSON integers count; booleans do not)."""
    if key not in body or body[key] is None:
        return None
    value = body[key]
    if type(value) not in (int, float) or not math.isfinite(value):
        raise CommandError(f"field {key!r} must be a number (dB)", 400)
    return float(value)


def node_summary(controller: Controller, first: bool) -> dict[str, Any]:
    """One hosted node as `GET /nodes` lists it."""
    config = controller.config
    return {
        "node": controller.node_id,
        "first": first,
        "path": f"/nodes/{controller.node_id}",
        "radio": config.audio.backend,
        "links": len(controller.link_views()),
        "registered": controller.registered,
        "ptt_keyed": controller.ptt_keyed,
    }


def create_app(controller: Controller, *, host: Host | None = None) -> Starlette:
    """The control application: the top-level endpoints act on `controller` (the first node),
    and each node of `host` has them all again under `/nodes/<number>/`."""
    nodes: Sequence[Controller] = tuple(host) if host is not None else (controller,)

    async def list_nodes(request: Request) -> JSONResponse:
        return JSONResponse({"nodes": [node_summary(c, c is controller) for c in nodes]})

    async def secrets(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        username = required(body, "username", str)
        # A further node's registration password goes to that node (its registration starts).
        owner = next((c for c in nodes if c.node_id == username), controller)
        owner.set_secret(username, required(body, "secret", str))
        return JSONResponse({"ok": True})

    async def shutdown(request: Request) -> JSONResponse:
        await read_json_body(request)
        controller.request_shutdown()
        return JSONResponse({"ok": True})

    async def not_found(request: Request, exc: Exception) -> Response:
        return error("not found", 404)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return error("not found", 404)
        if exc.status_code == 405:
            return error(f"method {request.method} not allowed on {request.url.path}", 405)
        return error(str(exc.detail), exc.status_code)

    async def command_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, CommandError)
        return error(str(exc), exc.status)

    async def server_error(request: Request, exc: Exception) -> Response:
        # The traceback goes to the log; the client learns only that the command failed.
        log.error("control request %s %s failed", request.method, request.url.path, exc_info=exc)
        return error("internal error", 500)

    routes: list[BaseRoute] = [
        *page_routes(),
        Route("/nodes", list_nodes, methods=["GET"]),
        Route("/shutdown", shutdown, methods=["POST"]),
        Route("/secrets", secrets, methods=["POST"]),
        *node_routes(controller),
        *(
            Mount(f"/nodes/{c.node_id}", routes=[*page_routes(), *node_routes(c)])
            for c in nodes
            if c.node_id
        ),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(RequestLimits, body_timeout=controller.config.control.request_timeout),
            Middleware(BrowserGuard, bind_host=controller.config.control.bind.host),
        ],
        exception_handlers={
            404: not_found,
            HTTPException: http_error,
            CommandError: command_error,
            Exception: server_error,
        },
    )


def node_routes(controller: Controller) -> list[BaseRoute]:
    """The endpoints of one node (at the top level for the first node, and under
    `/nodes/<number>/` for every node)."""

    async def status(request: Request) -> JSONResponse:
        return JSONResponse(controller.snapshot())

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(controller.counters())

    async def bridge(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        mode = optional(body, "mode", str)
        mix_minus = optional(body, "mix_minus", bool)
        local = optional(body, "include_local_radio", bool)
        return JSONResponse(controller.set_bridge(mode, mix_minus, local))

    async def devices(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        return JSONResponse(
            controller.set_devices(optional(body, "input", str), optional(body, "output", str))
        )

    async def levels(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        return JSONResponse(
            controller.set_levels(gain(body, "rx_gain_db"), gain(body, "tx_gain_db"))
        )

    async def dial(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        node = required(body, "node", str)
        return JSONResponse(await controller.dial(node, optional(body, "addr", str)))

    async def link(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        action = required(body, "action", str)
        node = optional(body, "node", str) if action == "disconnect_all" else None
        if node is None and action != "disconnect_all":
            node = required(body, "node", str)
        return JSONResponse(await controller.link(action, node or "", optional(body, "addr", str)))

    def bare_command(method: Callable[[], dict[str, Any]]) -> Callable[..., Any]:
        """A command without fields (its body must still be JSON) that replies the snapshot."""

        async def handler(request: Request) -> JSONResponse:
            await read_json_body(request)
            return JSONResponse(method())

        return handler

    def call_command(method: Callable[[int | None], dict[str, Any]]) -> Callable[..., Any]:
        async def handler(request: Request) -> JSONResponse:
            body = await read_json_body(request)
            return JSONResponse(method(optional(body, "call", int)))

        return handler

    async def events(request: Request) -> Response:
        return event_stream(controller, request)

    async def play(request: Request) -> JSONResponse:
        # Extension: text or a sound file, queued with the announcements.
        body = await read_json_body(request)
        to = required(body, "to", str)
        text, file = optional(body, "text", str), optional(body, "file", str)
        return JSONResponse(controller.play(text=text, file=file, to=to))

    enable_inbound = bare_command(partial(controller.set_listening, True))
    disable_inbound = bare_command(partial(controller.set_listening, False))
    return [
        Route("/status", status, methods=["GET"]),
        Route("/events", events, methods=["GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/bridge", bridge, methods=["POST"]),
        Route("/dial", dial, methods=["POST"]),
        Route("/link", link, methods=["POST"]),
        Route("/key", bare_command(controller.key), methods=["POST"]),
        Route("/unkey", bare_command(controller.unkey), methods=["POST"]),
        Route("/hangup", call_command(controller.hangup), methods=["POST"]),
        Route("/answer", call_command(controller.answer), methods=["POST"]),
        Route("/reject", call_command(controller.reject), methods=["POST"]),
        Route("/enable_inbound", enable_inbound, methods=["POST"]),
        Route("/disable_inbound", disable_inbound, methods=["POST"]),
        Route("/register", bare_command(controller.register), methods=["POST"]),
        Route("/deregister", bare_command(controller.deregister), methods=["POST"]),
        Route("/devices", devices, methods=["POST"]),
        Route("/levels", levels, methods=["POST"]),
        Route("/play", play, methods=["POST"]),
    ]
