"""The announcements service: the node's one door to the announcer and the player's events.

With `[announce] enabled` it holds the `Announcer` (made once the media bridge runs); without
it every input is a no-op, so the other services announce without asking whether they may. The
engine's `play_started` / `play_finished` come here too and become `announcement_*` bus events
(never for the radio's courtesy tone).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from node.announce.announcer import Announcer
from node.announce.phrases import last_keyed_phrase
from node.context import NodeContext
from node.events import AnnouncementFinished, AnnouncementStarted
from node.media.bridge import MediaBridge

__all__ = ["Announcements"]


class Announcements:
    """Station ID, event, telemetry and command announcements; the player's events."""

    def __init__(self, ctx: NodeContext, quiet_kinds: Iterable[str]) -> None:
        self._ctx = ctx
        #: Player kinds that are no announcement (the courtesy tone).
        self._quiet = frozenset(quiet_kinds)
        self._bridge: MediaBridge | None = None
        #: `[announce] enabled`: the announcer, made by `attach`.
        self.announcer: Announcer | None = None

    def attach(self, bridge: MediaBridge) -> None:
        """The media bridge runs: with `[announce] enabled`, the announcer starts on it."""
        self._bridge = bridge
        config = self._ctx.config
        if config.announce.enabled:
            self.announcer = Announcer(config.announce, bridge, config.node_id, self._ctx.clock)

    def start(self) -> None:
        if self.announcer is not None:
            self.announcer.start()

    def event(self, name: str, *, peer: str = "", node: str = "") -> None:
        """`[announce.events.<name>]`: the announcer plays it when enabled."""
        if self.announcer is not None:
            self.announcer.event(name, peer=peer, node=node)

    def telemetry(self, token: str, args: Iterable[str]) -> None:
        if self.announcer is not None:
            self.announcer.telemetry(token, args)

    def status(self, entries: list[str]) -> None:
        """`*70` / `*73`: announce the link list."""
        if self.announcer is not None:
            self.announcer.status(entries)

    def last_keyed(self, node: str | None) -> None:
        """AMI ilink 7: announce the last node that keyed us up."""
        if self.announcer is not None:
            self.announcer.command(last_keyed_phrase(node))

    def activity(self, active: bool) -> None:
        if self.announcer is not None:
            self.announcer.activity(active)

    def playback(self, event: tuple[Any, ...]) -> None:
        """An announcement started or ended in the engine: `announcement_*` events."""
        if self._bridge is None:
            return
        started = event[0] == "play_started"
        completed = bool(event[2]) if not started else True
        kind = self._bridge.playback_event(started, event[1], completed)
        if kind is None or kind in self._quiet:
            return
        if started:
            self._ctx.bus.publish(AnnouncementStarted(kind=kind))
        else:
            self._ctx.bus.publish(AnnouncementFinished(kind=kind, completed=completed))

    def stats(self) -> dict[str, object] | None:
        return None if self.announcer is None else self.announcer.stats()

    def close(self) -> None:
        if self.announcer is not None:
            self.announcer.close()
