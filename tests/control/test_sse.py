"""The event stream's framing in-process: the reconnect hint, keep-alive comments while nothing
happens, every event flushed on its own, and the final `shutdown` event."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from node.control import sse
from tests.in_process import in_process_node, node_config
from tests.load.sse_clients import SseClient


def test_retry_hint_keepalives_events_and_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keep-alives every 15 s in service; a fraction of a second here.
    monkeypatch.setattr(sse, "PING_SECONDS", 0.1)

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "node.toml")) as node:
            bind = node.config.control.bind
            client = SseClient(bind.host, bind.port)
            await client.start()
            await client.wait_for(1)
            first = client.events[0]
            assert first.json()["event"] == "snapshot" and (first.id, first.retry) == ("1", 1000)
            while client.comments < 2:
                await asyncio.sleep(0.05)
            assert len(client.events) == 1  # keep-alives are comments, not events

            node.controller.set_listening(False)
            await client.wait_for(2)
            event = client.events[1]
            assert (event.id, event.retry) == ("2", None)
            assert event.json()["event"] == "snapshot" and event.json()["listening"] is False
        # Leaving the block stopped the node: the stream got its farewell and ended.
        await client.wait_ended()
        assert client.ended == "eof"
        assert client.events[-1].json() == {"event": "shutdown"}

    asyncio.run(scenario())
