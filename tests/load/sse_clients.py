"""Many Server-Sent Events clients of one node, on raw asyncio sockets, and the fan-out measure.

A client here is what a browser's `EventSource` is on the wire: `GET /events` over HTTP/1.1, the
chunked body parsed into events (`id:`, `data:`, `retry:` fields, `:` comments). Each event is
stamped with `time.monotonic()` (one clock for every process on the machine) when its last byte
has been read, which makes a client cheap enough that 50 of them in one process measure the node,
not themselves.

Run as a script, it is the client side of `tests/load/sse_fanout.py`: it opens the clients,
drives state changes through `POST /enable_inbound` and `/disable_inbound`, and prints one JSON
object with the arrival delays (see `measure`). The pytest checks (tests/load/test_sse_fanout.py)
use the classes directly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SseClient", "SseEvent", "measure", "post", "stalled_client"]


@dataclass
class SseEvent:
    """One event as received: its fields and when its last byte arrived."""

    id: str | None
    data: str
    retry: int | None
    arrived: float

    def json(self) -> dict[str, Any]:
        return json.loads(self.data)


@dataclass
class SseClient:
    """One `GET /events` connection, read until the stream ends."""

    host: str
    port: int
    events: list[SseEvent] = field(default_factory=list)
    comments: int = 0
    #: Set when the stream ended: "eof" (the server finished it), or the error's name.
    ended: str | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect and start reading in a task; returns once the response headers are in."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.write(
            (
                f"GET /events HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Accept: text/event-stream\r\n\r\n"
            ).encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0]
        if b" 200 " not in status + b" ":
            raise RuntimeError(f"GET /events answered {status.decode(errors='replace')}")
        if b"transfer-encoding: chunked" not in head.lower():
            raise RuntimeError("expected a chunked event stream")
        self._writer = writer
        self._task = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        buffer = b""
        try:
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0], 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    self.ended = "eof"
                    return
                buffer += chunk[:-2]
                arrived = time.monotonic()
                while True:
                    end = _event_end(buffer)
                    if end is None:
                        break
                    block, buffer = buffer[: end[0]], buffer[end[1] :]
                    self._parse(block.decode(), arrived)
                self._changed.set()
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self.ended = type(exc).__name__
        finally:
            self._changed.set()
            self._writer.close()

    def _parse(self, block: str, arrived: float) -> None:
        data: list[str] = []
        event_id: str | None = None
        retry: int | None = None
        is_comment = True
        for line in block.splitlines():
            if line.startswith(":"):
                continue
            is_comment = False
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
            elif name == "retry":
                retry = int(value)
        if is_comment:
            self.comments += 1
        else:
            self.events.append(SseEvent(event_id, "\n".join(data), retry, arrived))

    async def wait_for(self, count: int, timeout: float = 15.0) -> None:
        """Until `count` events have arrived (or the stream ended)."""

        async def arrived() -> None:
            while len(self.events) < count and self.ended is None:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(arrived(), timeout)

    async def wait_ended(self, timeout: float = 15.0) -> None:
        if self._task is not None:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _event_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first complete event of `buffer` ends: (end of block, start of the next)."""
    found = [(i, i + len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := buffer.find(sep)) >= 0]
    return min(found) if found else None


def stalled_client(host: str, port: int, rcvbuf: int = 4096) -> socket.socket:
    """A client that asks for the stream and then never reads: its receive buffer (kept small)
    fills, the window closes, and the node's writes to it block. Close it to end the stall."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect((host, port))
    sock.sendall(
        f"GET /events HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    return sock


async def post(host: str, port: int, path: str) -> dict[str, Any]:
    """One control command on its own connection (`Connection: close`); the JSON reply."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            (
                f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 2\r\n"
                "Connection: close\r\n\r\n{}"
            ).encode()
        )
        raw = await reader.read()
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n", 1)[0] + b" ":
        raise RuntimeError(f"POST {path}: {head.decode(errors='replace')}")
    return json.loads(body)


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


async def measure(
    host: str, port: int, clients: int, changes: int, gap_s: float = 0.02
) -> dict[str, Any]:
    """Open `clients` streams, make `changes` state changes one after the other, and time each
    change from just before its `POST` to the snapshot's arrival at every client.

    Returns, in milliseconds: for each change the delay to the last client to get it (`last`:
    the "50th client" of 50) and to each client (`each`), as median/p99/max, and the POST round
    trip for comparison.
    """
    streams = [SseClient(host, port) for _ in range(clients)]
    for s in streams:
        await s.start()
    await asyncio.gather(*(s.wait_for(1) for s in streams))
    last: list[float] = []
    each: list[float] = []
    round_trip: list[float] = []
    listening = bool(streams[0].events[0].json()["listening"])
    try:
        for _ in range(changes):
            listening = not listening
            counts = [len(s.events) for s in streams]
            t0 = time.monotonic()
            reply = await post(host, port, "/enable_inbound" if listening else "/disable_inbound")
            round_trip.append((time.monotonic() - t0) * 1000)
            assert reply["listening"] is listening
            await asyncio.gather(*(s.wait_for(n + 1) for s, n in zip(streams, counts, strict=True)))
            arrivals = []
            for s, n in zip(streams, counts, strict=True):
                event = s.events[n]
                if event.json().get("listening") is not listening:
                    raise RuntimeError(f"unexpected event {event.data[:80]}")
                arrivals.append((event.arrived - t0) * 1000)
            last.append(max(arrivals))
            each.extend(arrivals)
            await asyncio.sleep(gap_s)
    finally:
        for s in streams:
            await s.close()

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "median_ms": round(statistics.median(values), 2),
            "p99_ms": round(_percentile(values, 99), 2),
            "max_ms": round(max(values), 2),
        }

    return {
        "clients": clients,
        "changes": changes,
        "last_client": summary(last),
        "each_client": summary(each),
        "post_round_trip": summary(round_trip),
    }


async def _hold(host: str, port: int, clients: int) -> None:
    """Keep `clients` streams open and read until stdin closes (for the tick measurement)."""
    streams = [SseClient(host, port) for _ in range(clients)]
    for s in streams:
        await s.start()
    await asyncio.gather(*(s.wait_for(1) for s in streams))
    print(json.dumps({"ready": clients}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(json.dumps({"events": [len(s.events) for s in streams]}), flush=True)
    for s in streams:
        await s.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True, help="the node's control port")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument(
        "--hold", action="store_true", help="only hold the streams open until stdin closes"
    )
    args = parser.parse_args()
    if args.hold:
        asyncio.run(_hold("127.0.0.1", args.port, args.clients))
    else:
        result = asyncio.run(measure("127.0.0.1", args.port, args.clients, args.changes))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
