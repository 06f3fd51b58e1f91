"""The event stream under load: 50 clients of a real `node serve`, and one that stops reading.

Correctness only, no timing: every reading client gets every event, in order, while the stalled
one is cut off after a bounded amount (its queue, the transport's buffer and the kernel's capped
send buffer) and the others carry on; every client that is still reading gets the final
`shutdown` event. The delays are measured by `tests/load/sse_fanout.py` (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest

from tests.load.sse_clients import SseClient, post, stalled_client
from tests.node_process import NodeProcess, free_port, write_config

CLIENTS = 50
#: State changes after the stalled client was dropped: the others must get these too.
CHANGES_AFTER_DROP = 20
#: More than the bus queue (256) plus what the buffers hold at a few hundred bytes an event; a
#: stream still not dropped after this many is not bounded.
MAX_CHANGES = 3000
#: What the stalled client may still read once cut: the kernel's send buffer for it (64 KiB,
#: doubled by Linux) and its own receive buffer, with room to spare; a stream that kept
#: everything for it would hold the whole run (MAX_CHANGES snapshots, over a megabyte).
STALLED_MAX_BYTES = 512 * 1024


def stats(node: NodeProcess) -> dict:
    return httpx.get(node.base_url + "/stats", timeout=5).json()["events"]


def drain(sock: socket.socket) -> tuple[int, str]:
    """Read what the stalled client was sent, until the node's cut: (bytes, how it ended)."""
    sock.settimeout(10)
    total = 0
    try:
        while chunk := sock.recv(65536):
            total += len(chunk)
    except ConnectionResetError:
        return total, "reset"
    return total, "eof"


@pytest.mark.slow
def test_fifty_clients_get_every_event_and_a_stalled_one_is_dropped(tmp_path: Path) -> None:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    node = NodeProcess(
        write_config(tmp_path / "node.toml", udp_port=udp, http_port=http), udp, http
    )
    node.wait_ready()
    host = "127.0.0.1"

    async def scenario() -> None:
        clients = [SseClient(host, http) for _ in range(CLIENTS)]
        for c in clients:
            await c.start()
        stalled = stalled_client(host, http)
        await asyncio.gather(*(c.wait_for(1) for c in clients))
        for c in clients:
            first = c.events[0]
            assert first.json()["event"] == "snapshot" and first.json()["listening"] is True
            assert (first.id, first.retry) == ("1", 1000)  # the reconnect hint, once
        assert stats(node)["subscribers"] == CLIENTS + 1

        posted: list[bool] = []
        listening = True
        after_drop = None
        while after_drop is None or len(posted) < after_drop + CHANGES_AFTER_DROP:
            assert len(posted) < MAX_CHANGES, "the stalled client was never dropped"
            listening = not listening
            reply = await post(host, http, "/enable_inbound" if listening else "/disable_inbound")
            assert reply["listening"] is listening
            posted.append(listening)
            # The next change only once every reading client has this one: the queue of a
            # client that keeps up never holds more than one event.
            await asyncio.gather(*(c.wait_for(len(posted) + 1) for c in clients))
            if after_drop is None and len(posted) % 50 == 0 and stats(node)["dropped"]:
                after_drop = len(posted)

        assert stats(node) == {"subscribers": CLIENTS, "dropped": 1}
        got, ended = drain(stalled)
        stalled.close()
        assert ended == "reset" and got < STALLED_MAX_BYTES

        for c in clients:
            assert c.ended is None
            assert [e.id for e in c.events] == [str(i) for i in range(1, len(posted) + 2)]
            assert [e.json()["listening"] for e in c.events[1:]] == posted
            assert all(e.retry is None for e in c.events[1:])

        await post(host, http, "/shutdown")
        await asyncio.gather(*(c.wait_ended() for c in clients))
        for c in clients:
            assert c.ended == "eof"
            assert c.events[-1].json() == {"event": "shutdown"}
            assert len(c.events) == len(posted) + 2

    try:
        asyncio.run(scenario())
        assert node.wait() == 0
    finally:
        node.kill()
    err = node.communicate()[1]
    assert "dropping it" in err
    assert "Traceback" not in err and "ASGI" not in err
