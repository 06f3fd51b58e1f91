"""A scripted node: the real page routes plus an `/events` stream the test writes by hand.

It lets the browser tests feed the page recorded snapshots and events the daemon cannot produce
yet (links), in the daemon's own SSE framing (id, data, retry), and misbehave on purpose: end
every stream without a `shutdown` event, or refuse new streams with 503 (after which
EventSource gives up and the page must reopen the stream itself). uvicorn runs in a thread;
every stream is owned by the server's loop and fed through `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from sse_starlette import ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from node.control.page import page_routes
from node.control.sse import RETRY_MS
from tests.node_process import free_port

__all__ = ["ScriptedNode"]


class ScriptedNode:
    """Serves the status page and a scripted event stream on a free loopback port."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        #: The first event of every new stream (the daemon's contract); replace it at will.
        self.snapshot = snapshot
        #: How many `/events` requests arrived (refused ones included).
        self.connections = 0
        #: How many of the next `/events` requests to refuse with 503.
        self.refuse = 0
        self._streams: list[asyncio.Queue[dict[str, Any] | None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        app = Starlette(routes=[*page_routes(), Route("/events", self._events)])
        self._server = uvicorn.Server(
            uvicorn.Config(
                app,
                host="127.0.0.1",
                port=port,
                log_config=None,
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=1,
            )
        )
        self._thread = threading.Thread(target=self._server.run, name="scripted-node", daemon=True)

    def __enter__(self) -> ScriptedNode:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            assert time.monotonic() < deadline, "the scripted node did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()
        self._server.should_exit = True
        self._thread.join(timeout=10)

    async def _events(self, request: Request) -> Response:
        self._loop = asyncio.get_running_loop()
        with self._lock:
            self.connections += 1
            if self.refuse > 0:
                self.refuse -= 1
                return Response("refused by the script", status_code=503)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._streams.append(queue)
        ids = itertools.count(1)

        def frame(event: dict[str, Any]) -> bytes:
            data = json.dumps(event, separators=(",", ":"))
            return ServerSentEvent(data=data, id=str(next(ids)), retry=RETRY_MS).encode()

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield frame({"event": "snapshot", **self.snapshot})
                while (event := await queue.get()) is not None:
                    yield frame(event)
            finally:
                self._streams.remove(queue)

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
        )

    def _each_stream(self, item: dict[str, Any] | None) -> None:
        def put() -> None:
            for queue in self._streams:
                queue.put_nowait(item)

        if self._loop is not None:
            self._loop.call_soon_threadsafe(put)

    def send(self, event: dict[str, Any]) -> None:
        """Write one event (a JSON object with its `event` field) to every open stream."""
        self._each_stream(event)

    def snapshot_now(self, **changes: Any) -> None:
        """Update the snapshot with `changes` and send it as a `snapshot` event."""
        self.snapshot = {**self.snapshot, **changes}
        self.send({"event": "snapshot", **self.snapshot})

    def drop(self) -> None:
        """End every open stream, without a `shutdown` event (as a crashed node would)."""
        self._each_stream(None)
