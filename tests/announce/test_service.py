"""The announcements service alone: without `[announce] enabled` every input is a no-op, and
the player's events become `announcement_*` bus events, never for the courtesy tone."""

from __future__ import annotations

from node._core import PlayFinished, PlayStarted
from node.announce.service import Announcements
from node.config import NodeConfig
from node.events import AnnouncementFinished, AnnouncementStarted
from tests.service_context import recording_context


class FakeBridge:
    def __init__(self) -> None:
        self.kinds = {1: "id", 2: "courtesy"}

    def playback_event(self, started: bool, playback: int, completed: bool = True) -> str | None:
        return self.kinds.get(playback)


def test_disabled_announcements_are_no_ops_and_the_player_still_reports() -> None:
    rec = recording_context(NodeConfig())
    published = rec.published
    service = Announcements(rec.ctx, quiet_kinds=("courtesy",))
    service.playback(PlayStarted(1))  # before the bridge runs: nothing to say
    service.attach(FakeBridge())  # type: ignore[arg-type]
    assert service.announcer is None and service.stats() is None
    assert service.id_deadline() is None and service.playback_deadline() is None
    service.id_timer(10.0)
    service.playback_timer(10.0)
    service.event("hangup")
    service.telemetry("CONNECTED", ["2001"])
    service.status(["T2001"])
    service.last_keyed(None)
    service.activity(True)
    service.playback(PlayStarted(1))
    service.playback(PlayFinished(1, False))
    service.playback(PlayStarted(2))
    service.playback(PlayFinished(3, True))
    service.close()
    assert published == [
        AnnouncementStarted(kind="id"),
        AnnouncementFinished(kind="id", completed=False),
    ]
