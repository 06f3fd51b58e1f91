"""The Server-Sent Events stream of `GET /events`.

Each connection gets its own bounded subscription on the bus. The first event is always a full
snapshot (so a page that reconnects is never stale) carrying the `retry:` hint, then every event
as it happens: each one is written and flushed on its own, with no batching delay. A keep-alive
comment goes out every `PING_SECONDS` while nothing happens.

A client that stops reading is dropped, never waited for: once the kernel's socket buffers and
the transport's write buffer are full, its stream blocks, its queue on the bus fills, and the bus
drops it; the connection is then cut at once (`app.state.drop_client`, set by the daemon), so
nothing more is kept for it. On shutdown every client still reading receives a final `shutdown`
event and the stream ends by itself, which lets uvicorn stop without waiting.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import AsyncIterator, Callable

from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.requests import Request

from node.controller import Controller
from node.events import Event, Snapshot

__all__ = ["PING_SECONDS", "RETRY_MS", "event_stream"]

#: Seconds between keep-alive comments, so proxies and half-open sockets are noticed.
PING_SECONDS = 15
#: Milliseconds the browser waits before reconnecting after the stream drops.
RETRY_MS = 1000
#: Events whose JSON is kept for the next client: every client sends the same event object
#: within a moment of the others, so a handful is enough to encode each event once, not once
#: per client.
_ENCODED_KEPT = 8

_encoded: deque[tuple[Event, str]] = deque(maxlen=_ENCODED_KEPT)


def _json(event: Event, node: str | None) -> str:
    """The event's JSON; in a process hosting several nodes with `node_id`, the number of the
    node whose bus carried it (each node has its own bus, so an event is encoded for one node
    only; a one-node process sends events exactly as before)."""
    for seen, text in _encoded:
        if seen is event:
            return text
    body = event.to_json()
    if node is not None:
        # `node_id`, as the snapshot names the node's own number: a link event's `node` is the
        # linked node.
        body["node_id"] = node
    text = json.dumps(body, separators=(",", ":"))
    _encoded.append((event, text))
    return text


def event_stream(controller: Controller, request: Request) -> EventSourceResponse:
    """An SSE response streaming the controller's events until it closes or the client leaves."""
    drop: Callable[[tuple[str, int]], None] | None = getattr(request.app.state, "drop_client", None)
    client = request.scope.get("client")

    def cut() -> None:
        if drop is not None and client is not None:
            drop(tuple(client))  # type: ignore[arg-type]

    sub = controller.bus.subscribe(on_overflow=cut)
    ids = itertools.count(1)

    async def generate() -> AsyncIterator[ServerSentEvent]:
        try:
            node = controller.node_id if len(controller.hosted) > 1 else None
            first = Snapshot(controller.snapshot())
            yield ServerSentEvent(data=_json(first, node), id=str(next(ids)), retry=RETRY_MS)
            while True:
                event = await sub.get()
                if event is None:
                    return
                yield ServerSentEvent(data=_json(event, node), id=str(next(ids)))
        finally:
            sub.close()

    return EventSourceResponse(generate(), ping=PING_SECONDS, headers={"Cache-Control": "no-store"})
