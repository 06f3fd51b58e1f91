"""A small HTTP server on loopback (stdlib `http.server` in a thread) that records requests and
answers as a test tells it: an HTTP registrar or a stats collector of our own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

__all__ = ["HttpServer", "Reply", "Request"]


@dataclass(frozen=True)
class Request:
    method: str
    #: The raw request target: path and query exactly as sent.
    target: str
    headers: dict[str, str]
    body: bytes
    #: The client's source address.
    client: str = ""


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    #: Wait for `HttpServer.release` before answering (a server that hangs).
    hang: bool = False


class HttpServer:
    """`with HttpServer(answer) as srv:`; `answer(request)` returns the `Reply`."""

    def __init__(self, answer: Callable[[Request], Reply] = lambda r: Reply()) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.release = threading.Event()
        self._cond = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                    self.client_address[0],
                )
                with outer._cond:
                    outer.requests.append(request)
                    outer._cond.notify_all()
                reply = outer.answer(request)
                if reply.hang:
                    outer.release.wait(30)
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = _handle

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Request]:
        """The first `count` requests, once they have arrived."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= count, timeout)
            assert ok, f"only {len(self.requests)} of {count} requests arrived"
            return self.requests[:count]

    def wait_until(
        self, predicate: Callable[[list[Request]], bool], timeout: float = 15.0
    ) -> list[Request]:
        """Every request so far, once `predicate` holds for them."""
        with self._cond:
            ok = self._cond.wait_for(lambda: predicate(self.requests), timeout)
            assert ok, f"waited in vain; requests: {[r.target for r in self.requests]}"
            return list(self.requests)

    def __enter__(self) -> HttpServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
