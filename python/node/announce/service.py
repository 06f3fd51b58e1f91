"""The announcements service: the node's one door to the announcer and the player's events.

With `[announce] enabled` it holds the `Announcer` (made once the media bridge runs); without
it every input is a no-op, so the other services announce without asking whether they may. The
engine's `PlayStarted` / `PlayFinished` events come here too and become `announcement_*` bus
events (never for the radio's courtesy tone).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from node.announce.announcer import Announcer
from node.announce.phrases import (
    Phrase,
    last_keyed_phrase,
    last_user_phrase,
    station_id,
    status_phrase,
    time_phrase,
    version_phrase,
)
from node.announce.play import DESTINATIONS, read_sound, sound_path
from node.announce.tail import TailMessages
from node.context import NodeContext
from node.errors import CommandError
from node.events import AnnouncementFinished, AnnouncementStarted
from node.iax2.transport import PlayFinished, PlayStarted
from node.media.bridge import Destination, MediaBridge

log = logging.getLogger(__name__)

#: app_rpt's TELEM_HANG_TIME: timed telemetry stays on this long after a command.
TELEM_HANG_S = 120.0
#: `[rpt] telemdefault` and cop 33/34/35, by name.
TELEMETRY_MODES = {0: "off", 1: "on", 2: "timed"}

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
        #: What the operator asked for (status messages, POST /play, tail messages): the
        #: announcer, or without `[announce] enabled` a player of its own with no ID.
        self.player: Announcer | None = None
        rpt = ctx.config.rpt
        #: `[rpt] telemdefault`, changed live by cop 33/34/35: "off", "on" or "timed".
        self.telemetry_mode = TELEMETRY_MODES[rpt.telemdefault]
        self._telem_until = 0.0
        self.tail = TailMessages(
            rpt.tailmessagelist,
            rpt.tailmessagetime / 1000,
            rpt.tailsquashedtime / 1000,
            ctx.clock(),
        )
        #: The wall clock, local time (tests inject one).
        self.wall: Callable[[], float] = time.time

    def attach(self, bridge: MediaBridge) -> None:
        """The media bridge runs: with `[announce] enabled`, the announcer starts on it."""
        self._bridge = bridge
        config = self._ctx.config
        if config.announce.enabled:
            self.announcer = Announcer(config.announce, bridge, config.node_id, self._ctx.clock)
            self.player = self.announcer
        else:
            quiet = dataclasses.replace(config.announce, id_interval_secs=0)
            self.player = Announcer(quiet, bridge, config.node_id, self._ctx.clock)
        for announcer in {id(a): a for a in (self.announcer, self.player) if a}.values():
            announcer.short_links = config.rpt.link_telemetry == "short"
            announcer.telemetry_on = self.telemetry_on

    # --- time (two of the router's timer kinds) ------------------------------------------------

    def id_deadline(self) -> float | None:
        """The station ID timer's next deadline."""
        return self.announcer.id_deadline() if self.announcer is not None else None

    def id_timer(self, now: float) -> None:
        if self.announcer is not None:
            self.announcer.id_timer_due(now)

    def _players(self) -> list[Announcer]:
        return list({id(a): a for a in (self.announcer, self.player) if a is not None}.values())

    def playback_deadline(self) -> float | None:
        """When an announcement playing is given up if the engine has not reported its end."""
        deadlines = [d for a in self._players() if (d := a.playback_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def playback_timer(self, now: float) -> None:
        for announcer in self._players():
            announcer.playback_timer(now)

    # --- telemetry modes (app_rpt telemdefault, cop 33/34/35) ---------------------------------

    def telemetry_on(self) -> bool:
        """Whether link telemetry is heard now."""
        mode = self.telemetry_mode
        return mode == "on" or (mode == "timed" and self._ctx.clock() < self._telem_until)

    def set_telemetry(self, mode: str) -> None:
        self.telemetry_mode = mode
        self._telem_until = 0.0
        log.info("telemetry %s", mode)

    def command_ran(self) -> None:
        """A command ran: timed telemetry is on for a while (app_rpt's rpt_telem_select)."""
        if self.telemetry_mode == "timed":
            self._telem_until = self._ctx.clock() + TELEM_HANG_S

    # --- status messages (app_rpt status,N) ---------------------------------------------------

    def status_message(
        self, number: int, *, last_user: str | None, entries: list[str], speak: bool = True
    ) -> str:
        """`status,N`: say it (1-3, 5 to the air and the links; 11-14 the local radio only;
        nothing when not `speak`); what it says."""
        from node import __version__

        config = self._ctx.config
        local = number >= 11
        if number in (1, 11):
            ident = config.announce.callsign or config.node_id or ""
            phrase = (
                station_id(ident)
                if config.announce.callsign
                else Phrase(f"node {' '.join(ident)}" if ident else "no station ID", ident or "ID")
            )
        elif number in (2, 12):
            now = time.localtime(self.wall())
            phrase = time_phrase(now.tm_hour, now.tm_min)
        elif number == 3:
            phrase = version_phrase(__version__)
        elif number == 5:
            phrase = last_user_phrase(last_user)
        else:
            phrase = status_phrase(entries)
        if speak:
            self.say(phrase, "to_monitor" if local else "to_air_and_links")
        return phrase.speech

    def say(self, phrase: Phrase, destination: Destination, *, keys: bool = False) -> None:
        if self.player is not None:
            self.player.say("command", phrase, destination, keys=keys)

    def play_pcm(self, label: str, pcm: bytes, destination: Destination, *, keys: bool) -> None:
        """POST /play of a file: queued with the other announcements."""
        if self.player is None:
            raise RuntimeError("the media bridge is not running")
        self.player.play_pcm("command", label, pcm, destination, keys=keys)

    def flush(self) -> int:
        return self.player.flush() if self.player is not None else 0

    # --- POST /play -------------------------------------------------------------------------

    def read_sound(self, path: str) -> bytes:
        """A sound file as PCM at the station rate (CommandError when it cannot be)."""
        bridge = self._bridge
        if bridge is None:
            raise CommandError("the media bridge is not running", 503)
        return read_sound(path, bridge.rate, lambda pcm, rate: bridge.to_station_rate(pcm, rate))

    def play(self, *, text: str | None, file: str | None, to: str) -> dict[str, Any]:
        """Queue `text` (spoken, CW without TTS) or the sound `file` to `to` ("local", "air",
        "air_and_links"), after the announcements already waiting. The caller checked the
        D-Star guard for anything that keys."""
        destination = DESTINATIONS.get(to)
        if destination is None:
            raise CommandError(f"field 'to' must be one of {', '.join(DESTINATIONS)}", 400)
        if (text is None) == (file is None):
            raise CommandError("give exactly one of 'text' and 'file'", 400)
        if file is not None:
            sound_path(file)
        if self.player is None:
            raise CommandError("the media bridge is not running", 503)
        keys = to != "local"
        if file is not None:
            pcm = self.read_sound(file)
            self.play_pcm(Path(file).name, pcm, destination, keys=keys)
            seconds = round(len(pcm) / 2 / self.player.rate, 2)
            log.info("playing %s to %s (%.1f s)", file, to, seconds)
            return {"queued": "file", "to": to, "seconds": seconds}
        assert text is not None
        if not text.strip() or len(text) > 400:
            raise CommandError("field 'text' must be 1-400 characters", 400)
        self.say(Phrase(text, text.upper()), destination, keys=keys)
        log.info("speaking to %s: %s", to, text)
        return {"queued": "text", "to": to}

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
        self._tail(active)

    def _tail(self, active: bool) -> None:
        """Tail messages: one due plays when the conference goes quiet; a talker who keys
        over it cuts it short."""
        tail, player, now = self.tail, self.player, self._ctx.clock()
        if player is None or not tail.enabled:
            return
        if active:
            if tail.playing is not None and player.stop_kind("tail"):
                log.info("tail message cut short by a talker")
                tail.squash(now)
            return
        message = tail.tail(now)
        if message is None:
            return

        def done(completed: bool) -> None:
            if completed:
                tail.ended(self._ctx.clock())
            else:
                tail.squash(self._ctx.clock())

        if message.lower().endswith((".wav", ".ul", ".ulaw", ".pcm")):
            try:
                pcm = self.read_sound(message)
            except CommandError as exc:
                log.warning("tail message %s not played: %s", message, exc)
                tail.ended(now)
                return
            player.play_pcm("tail", message, pcm, "to_air", keys=False, done=done)
            return
        player.say("tail", Phrase(message, message.upper()), "to_air", done=done)

    def playback(self, event: PlayStarted | PlayFinished) -> None:
        """An announcement started or ended in the engine: `announcement_*` events."""
        if self._bridge is None:
            return
        if isinstance(event, PlayStarted):
            started, completed = True, True
        else:
            started, completed = False, event.completed
        kind = self._bridge.playback_event(started, event.id, completed)
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
        if self.player is not None and self.player is not self.announcer:
            self.player.close()
