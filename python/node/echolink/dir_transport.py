"""The directory's I/O: one TCP exchange per `DirectoryRequest`, as `Spawn` work.

Connect to the server from `local_ip` (the address of our UDP ports: the directory lists a
station at the address its login came from), write the request, read the answer until the server
closes, at most `MAX_LIST_BYTES`, all within `TIMEOUT`. The outcome goes back to the sans-I/O
`DirectoryClient` (`completed` / `failed`) by whoever awaits `exchange`.
"""

from __future__ import annotations

import asyncio
import contextlib

from node.echolink.directory import MAX_LIST_BYTES, DirectoryRequest

__all__ = ["TIMEOUT", "ExchangeFailed", "exchange"]

#: One exchange (connect, write, read to the close) takes at most this long.
TIMEOUT = 10.0


class ExchangeFailed(Exception):
    """The exchange could not be completed; the message is safe to show."""


async def exchange(request: DirectoryRequest, local_ip: str | None) -> bytes:
    """The server's whole answer to `request`. `ExchangeFailed` (with a reason safe to show: no
    payload, which may hold the password) when it cannot be had."""
    host, port = request.server
    local = None if local_ip in (None, "0.0.0.0", "") else (local_ip, 0)
    try:
        data = await asyncio.wait_for(_talk(host, port, request.payload, local), TIMEOUT)
    except (TimeoutError, asyncio.TimeoutError):
        raise ExchangeFailed(f"no answer from {host}:{port} within {TIMEOUT:g} s") from None
    except OSError as exc:
        raise ExchangeFailed(f"{host}:{port}: {exc.strerror or type(exc).__name__}") from None
    if len(data) > MAX_LIST_BYTES:
        raise ExchangeFailed(f"{host}:{port} answered more than {MAX_LIST_BYTES} bytes")
    return data


async def _talk(host: str, port: int, payload: bytes, local: tuple[str, int] | None) -> bytes:
    reader, writer = await asyncio.open_connection(host, port, local_addr=local)
    try:
        writer.write(payload)
        await writer.drain()
        chunks: list[bytes] = []
        size = 0
        # One byte past the bound is enough to know the answer is too long.
        while size <= MAX_LIST_BYTES:
            chunk = await reader.read(MAX_LIST_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
