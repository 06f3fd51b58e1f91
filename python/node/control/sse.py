"""The Server-Sent Events stream of `GET /events`.

Each connection gets its own bounded subscription on the bus. The first event is always a full
snapshot (so a page that reconnects is never stale), then every event as it happens: each one is
written and flushed on its own, with no batching delay. On shutdown the client receives a final
`shutdown` event and the stream ends by itself, which lets uvicorn stop without waiting.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator

from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from node.controller import Controller
from node.events import Event, Snapshot

__all__ = ["event_stream"]

#: Seconds between keep-alive comments, so proxies and half-open sockets are noticed.
PING_SECONDS = 15
#: Milliseconds the browser waits before reconnecting after the stream drops.
RETRY_MS = 1000


def _encode(event: Event, event_id: int) -> ServerSentEvent:
    return ServerSentEvent(
        data=json.dumps(event.to_json(), separators=(",", ":")),
        id=str(event_id),
        retry=RETRY_MS,
    )


def event_stream(controller: Controller) -> EventSourceResponse:
    """An SSE response streaming the controller's events until it closes or the client leaves."""
    sub = controller.bus.subscribe()
    ids = itertools.count(1)

    async def generate() -> AsyncIterator[ServerSentEvent]:
        try:
            yield _encode(Snapshot(controller.snapshot()), next(ids))
            while True:
                event = await sub.get()
                if event is None:
                    return
                yield _encode(event, next(ids))
        finally:
            sub.close()

    return EventSourceResponse(generate(), ping=PING_SECONDS, headers={"Cache-Control": "no-store"})
