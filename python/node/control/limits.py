"""Bounds on what one HTTP client can make the control channel hold or wait for.

Two pieces, both in front of the Starlette app:

- `BoundedH11Protocol`, uvicorn's h11 protocol with a request deadline: a connection must
  deliver a complete request head within `request_timeout` seconds of opening (or of its first
  byte after an idle keep-alive), or it is answered 408 and closed. uvicorn itself only times
  out connections idle *between* requests, so without this a client that trickles its head one
  byte at a time (slowloris), or opens a connection and sends nothing, holds it for ever. A head
  larger than the parser's limit (`MAX_HEAD_BYTES`) is answered 431, any other malformed head
  400, both in the project's `{"error": ...}` form instead of uvicorn's plain text.
- `RequestLimits`, a pure ASGI middleware: a request target over `MAX_TARGET_BYTES` is 414; a
  `Content-Length` over `MAX_BODY_BYTES` is 413 before a byte of the body is read; a chunked body
  is counted as it arrives and refused the same way once it passes the limit; a body still
  arriving `request_timeout` seconds after its head is 408. Every refusal closes the connection,
  so the rest of the body is never read into memory.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "MAX_TARGET_BYTES",
    "BoundedH11Protocol",
    "RequestLimits",
    "bounded_protocol",
]

#: Control bodies are a few small fields (the largest, POST /secrets, is well under 1 KiB).
MAX_BODY_BYTES = 64 * 1024
#: Request line plus headers: h11's own default; a browser sends 1-2 KiB, curl a few hundred bytes.
MAX_HEAD_BYTES = 16 * 1024
#: Path plus query string: every control URL is a few dozen bytes.
MAX_TARGET_BYTES = 2 * 1024


def _raw_response(status: int, reason: str, message: str) -> bytes:
    """A complete HTTP/1.1 response that closes the connection, written without h11 (the
    connection may be in a state where h11 would refuse to send one)."""
    body = json.dumps({"error": message}, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head (see the module doc).

    `request_timeout` is set on the class by `bounded_protocol`, since uvicorn builds one
    instance per connection with its own arguments only.
    """

    request_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            # A new request begins (after the keep-alive idle, which uvicorn times itself).
            self._arm_head_deadline()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            # The head is complete; the body's time is the middleware's to watch.
            self._disarm_head_deadline()

    def send_400_response(self, msg: str) -> None:
        if self.transport.is_closing():
            return
        buffered, _ = self.conn.trailing_data
        if len(buffered) > MAX_HEAD_BYTES:
            out = _raw_response(
                431,
                "Request Header Fields Too Large",
                f"request line and headers larger than {MAX_HEAD_BYTES} bytes",
            )
        else:
            out = _raw_response(400, "Bad Request", "malformed HTTP request")
        self.transport.write(out)
        self.transport.close()

    def _arm_head_deadline(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.request_timeout, self._head_timed_out)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self.transport.write(
            _raw_response(
                408,
                "Request Timeout",
                f"request not received within {self.request_timeout:g} s",
            )
        )
        self.transport.close()


def bounded_protocol(request_timeout: float) -> type[BoundedH11Protocol]:
    """A `BoundedH11Protocol` class with this deadline, for `uvicorn.Config(http=...)`."""
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"request_timeout": request_timeout})


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                # The unread rest of the body is never read: the connection ends with the reply.
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestLimits:
    """ASGI middleware bounding a request's target, body size and body time (module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body: int = MAX_BODY_BYTES,
        max_target: int = MAX_TARGET_BYTES,
        body_timeout: float = 10.0,
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.max_target = max_target
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        target = len(scope.get("raw_path") or scope["path"].encode()) + len(
            scope.get("query_string", b"")
        )
        if target > self.max_target:
            await _refuse(send, 414, f"request target longer than {self.max_target} bytes")
            return
        # h11 bounds a head still arriving (`MAX_HEAD_BYTES` in the protocol); one that came
        # whole in a single read is measured here.
        head = len(scope["method"]) + target + sum(len(n) + len(v) + 4 for n, v in scope["headers"])
        if head > MAX_HEAD_BYTES:
            await _refuse(send, 431, f"request line and headers larger than {MAX_HEAD_BYTES} bytes")
            return
        length = self._content_length(scope)
        if length is not None and length > self.max_body:
            await _refuse(send, 413, f"request body larger than {self.max_body} bytes")
            return

        # Read the whole body before the app runs (every command body is small, and GET has
        # none), so a refusal is answered before any handler has begun.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        chunks: list[bytes] = []
        received = 0
        more = True
        while more:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except asyncio.TimeoutError:
                await _refuse(
                    send, 408, f"request body not received within {self.body_timeout:g} s"
                )
                return
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.max_body:
                await _refuse(send, 413, f"request body larger than {self.max_body} bytes")
                return
            chunks.append(chunk)
            more = message.get("more_body", False)

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # only http.disconnect is left (event streams wait on it)

        await self.app(scope, replay, send)

    @staticmethod
    def _content_length(scope: Scope) -> int | None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                # h11 has already refused a malformed or conflicting Content-Length.
                return int(value)
        return None
