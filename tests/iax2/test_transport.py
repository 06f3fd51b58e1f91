"""EngineTransport on a real loop and real loopback sockets."""

from __future__ import annotations

import asyncio
import socket

import pytest

from node._core import FullFrame, parse
from node.errors import EngineError
from node.iax2.constants import FrameType, IaxSubclass
from node.iax2.transport import EngineTransport, FrameBatch


def test_received_frames_arrive_in_batches_and_send_reaches_peer() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        got: FrameBatch = []
        arrived = asyncio.Event()

        def on_frames(batch: FrameBatch) -> None:
            got.extend(batch)
            if len(got) >= 20:
                arrived.set()

        transport = EngineTransport("127.0.0.1:0", on_frames)
        transport.start(loop)
        try:
            peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            peer.bind(("127.0.0.1", 0))
            peer.setblocking(False)
            for i in range(20):
                f = FullFrame(FrameType.IAX, IaxSubclass.POKE, scall=100 + i, ts=i + 1)
                peer.sendto(f.to_bytes(), transport.local_addr)
            peer.sendto(b"\x80", transport.local_addr)  # malformed: counted, never delivered
            await asyncio.wait_for(arrived.wait(), 5)
            assert [f.scall for _, f in got] == list(range(100, 120))
            assert all(addr == peer.getsockname() for addr, _ in got)

            pong = FullFrame(FrameType.IAX, IaxSubclass.PONG, scall=1, dcall=100, ts=1)
            transport.send(pong, peer.getsockname())
            data = await asyncio.wait_for(loop.sock_recv(peer, 4096), 5)
            assert parse(data) == pong
            counters = transport.counters()
            assert counters["full_in"] == 20
            assert counters["datagrams_out"] == 1
            # The malformed datagram was read after the frames; wait until it is counted.
            for _ in range(100):
                if transport.counters()["malformed"] == 1:
                    break
                await asyncio.sleep(0.01)
            assert transport.counters()["malformed"] == 1
            peer.close()
        finally:
            transport.close()

    asyncio.run(scenario())


def test_a_failing_handler_does_not_deafen_the_node() -> None:
    async def scenario() -> None:
        calls = 0
        second = asyncio.Event()

        def on_frames(batch: FrameBatch) -> None:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("handler bug")
            second.set()

        transport = EngineTransport("127.0.0.1:0", on_frames)
        transport.start(asyncio.get_running_loop())
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
                frame = FullFrame(FrameType.IAX, IaxSubclass.POKE, scall=5, ts=1).to_bytes()
                peer.sendto(frame, transport.local_addr)
                for _ in range(200):
                    if calls:
                        break
                    await asyncio.sleep(0.01)
                peer.sendto(frame, transport.local_addr)
                await asyncio.wait_for(second.wait(), 5)
        finally:
            transport.close()

    asyncio.run(scenario())


def test_bind_failure_is_an_engine_error_naming_the_address() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(EngineError, match=str(port)):
            EngineTransport(f"127.0.0.1:{port}", lambda batch: None)


def test_send_to_unreachable_address_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    transport = EngineTransport("127.0.0.1:0", lambda batch: None)
    try:
        frame = FullFrame(FrameType.IAX, IaxSubclass.POKE, scall=5, ts=1)
        transport.send(frame, ("127.0.0.1", 0))  # port 0 is never a valid destination
        assert "send to 127.0.0.1:0 failed" in caplog.text
        assert transport.counters()["send_errors"] == 1
    finally:
        transport.close()
