"""The announcer over a real engine: where each kind of announcement goes, with `to_links` and
without, and that the station ID never reaches a link. Legs are UDP sockets of the test."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time

from node._core import Engine, EngineEvent, PlayFinished, PlayStarted
from node.announce.announcer import Announcer
from node.config import AnnounceConfig, AnnounceEventConfig
from node.iax2.constants import Format
from node.media.bridge import MediaBridge, Topology


def config(to_links: bool) -> AnnounceConfig:
    events = dict(AnnounceConfig().events)
    for name in ("hangup", "link_connected"):
        events[name] = AnnounceEventConfig(enabled=True, destination="to_air")
    return AnnounceConfig(
        enabled=True,
        id_mode="cw",
        id_interval_secs=1,
        cw_wpm=60,
        callsign="N0CALL",
        to_links=to_links,
        events=events,
    )


async def drive(
    engine: Engine, bridge: MediaBridge, announcer: Announcer, finished: int = 1
) -> list[EngineEvent]:
    """Hand the engine's playback events to the bridge and fire the announcer's ID timer at
    its deadline, as the controller does, until `finished` playbacks ended (then a little
    more, for the last frames to arrive)."""
    seen: list[EngineEvent] = []
    deadline = time.monotonic() + 20
    while sum(isinstance(e, PlayFinished) for e in seen) < finished:
        assert time.monotonic() < deadline, seen
        due = announcer.id_deadline()
        if due is not None and due <= time.monotonic():
            announcer.id_timer_due(time.monotonic())
        for event in engine.drain_events():
            seen.append(event)
            if isinstance(event, PlayStarted):
                bridge.playback_event(True, event.id)
            elif isinstance(event, PlayFinished):
                bridge.playback_event(False, event.id, event.completed)
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    return seen


def received(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            sock.recv(4096)
        except BlockingIOError:
            return count
        count += 1


def run(to_links: bool) -> tuple[int, int, list[str]]:
    """(datagrams the link got, datagrams the call got, kinds played) for a link connect
    announcement, a hangup announcement and one station ID."""

    async def main() -> tuple[int, int, list[str]]:
        engine = Engine("127.0.0.1:0")
        call, link = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
        for s in (call, link):
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
        try:
            bridge = MediaBridge(engine, Topology())
            bridge.add_leg(7, 9, call.getsockname(), int(Format.ULAW), 0)
            bridge.add_leg(
                8, 10, link.getsockname(), int(Format.ULAW), 0, keying="voice", link=True
            )
            announcer = Announcer(config(to_links), bridge, "2000")
            announcer.event("link_connected", node="2001")
            await drive(engine, bridge, announcer)
            link_after_telemetry = received(link)
            call_after_telemetry = received(call)
            announcer.event("hangup")
            await drive(engine, bridge, announcer)
            link_after_event = received(link)
            # The station transmitted: the ID is owed, and due at once (interval 1 s).
            announcer.activity(True)
            announcer.activity(False)
            events = await drive(engine, bridge, announcer)
            assert announcer.stats()["played"] == 3
            link_after_id = received(link)
            played = [e for e in events if isinstance(e, PlayStarted)]
            announcer.close()
            assert call_after_telemetry > 0
            return link_after_telemetry + link_after_id, link_after_event, [str(p) for p in played]
        finally:
            engine.stop()
            call.close()
            link.close()

    return asyncio.run(main())


def test_links_hear_event_announcements_only_with_to_links_and_never_the_id() -> None:
    never, event, _ = run(to_links=False)
    assert (never, event) == (0, 0)
    never, event, played = run(to_links=True)
    assert never == 0, "link telemetry and the ID never go to links"
    assert event > 10, "the hangup announcement went over the link"
    assert len(played) == 1


def test_an_id_needs_a_callsign_and_a_positive_interval() -> None:
    engine = Engine("127.0.0.1:0")
    try:
        bridge = MediaBridge(engine, Topology())
        off = dataclasses.replace(config(False), id_interval_secs=0)
        assert Announcer(off, bridge, None).id_timer is None
        assert Announcer(config(False), bridge, None).id_timer is not None
    finally:
        engine.stop()
