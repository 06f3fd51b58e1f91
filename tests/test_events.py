"""The event bus: wire form, fan-out, bounded queues, shutdown."""

from __future__ import annotations

import asyncio

from node.events import (
    AnnouncementFinished,
    AnnouncementStarted,
    Dtmf,
    EventBus,
    Hangup,
    IncomingCall,
    Registered,
    RegisterFailed,
    Snapshot,
)


def test_wire_forms_follow_the_spec() -> None:
    assert Snapshot({"node_id": None, "listening": True}).to_json() == {
        "event": "snapshot",
        "node_id": None,
        "listening": True,
    }
    assert IncomingCall(from_="1999").to_json() == {"event": "incoming_call", "from": "1999"}
    assert Registered().to_json() == {"event": "registered"}
    assert RegisterFailed(reason="timeout").to_json() == {
        "event": "register_failed",
        "reason": "timeout",
    }
    assert Hangup(reason="peer hung up").to_json() == {"event": "hangup", "reason": "peer hung up"}
    assert Dtmf(call=7, digit="5").to_json() == {"event": "dtmf", "call": 7, "digit": "5"}
    assert Dtmf(call=7, digit="3", command="*32000").to_json()["command"] == "*32000"
    assert AnnouncementStarted(kind="id").to_json() == {
        "event": "announcement_started",
        "kind": "id",
    }
    assert AnnouncementFinished(kind="command", completed=False).to_json() == {
        "event": "announcement_finished",
        "kind": "command",
        "completed": False,
    }


def test_every_subscriber_gets_every_event_then_shutdown() -> None:
    async def scenario() -> None:
        bus = EventBus()
        a, b = bus.subscribe(), bus.subscribe()
        bus.publish(Registered())
        bus.close()
        for sub in (a, b):
            assert await sub.get() == Registered()
            last = await sub.get()
            assert last is not None and last.to_json() == {"event": "shutdown"}
            assert await sub.get() is None
        assert bus.subscriber_count == 0

    asyncio.run(scenario())


def test_a_slow_subscriber_is_dropped_and_never_blocks_publish() -> None:
    async def scenario() -> None:
        bus = EventBus(queue_size=4)
        slow, fast = bus.subscribe(), bus.subscribe()
        for i in range(3):
            bus.publish(Hangup(reason=str(i)))
            assert await fast.get() == Hangup(reason=str(i))
        for i in range(3, 10):
            bus.publish(Hangup(reason=str(i)))  # never blocks
            assert await fast.get() == Hangup(reason=str(i))
        assert slow.overflowed and slow.closed
        assert bus.subscriber_count == 1
        # The dropped subscriber drains what it had, then sees the end.
        seen = []
        while (event := await slow.get()) is not None:
            seen.append(event)
        assert seen and all(isinstance(e, Hangup) for e in seen)

    asyncio.run(scenario())
