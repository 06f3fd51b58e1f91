"""The announcer: the periodic station ID and the event announcements, rendered and played one
after another through the engine's player (`MediaBridge.play`).

The controller calls it (all methods return at once): `activity` with the conference's talker
edges (the engine's `ActivityChanged` events), `event` for `[announce.events.<name>]` events,
`telemetry` for `T` telemetry from other nodes, `status` for `*70`. What plays:

- the station ID: kind `id`, `to_air` (never the links), keys the local transmitter only with
  `cw_keys_when_idle`; CW (`id_mode = "cw"`) or speech (`"tts"`);
- `[announce.events.*]`: kind `event`, the event's `destination` (with `to_links`, `to_air` goes
  over the links too, except link connects and disconnects); speech with `[announce.tts]`
  enabled, else CW;
- `*70`'s link status: kind `command`, `to_air` (and the links with `to_links`), as events.

Speech comes from the TTS binary (`tts.py`); a binary that fails or takes longer than
`timeout_ms` is logged and counted, and the announcement goes out in CW instead: the node never
waits on it longer than that. Announcements play in turn; the ID goes ahead of the waiting ones.
docs/announce.md describes levels, timing and politeness.

Its two timers are deadlines of the router's table: the station ID (`id_deadline`, `id_timer_due`)
and the give-up time of the announcement playing (`playback_deadline`, `playback_timer`), for a
playback whose end the engine never reports.
"""

from __future__ import annotations

import array
import asyncio
import collections
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from node.announce.phrases import (
    Phrase,
    event_phrase,
    link_phrase,
    station_id,
    status_phrase,
    telemetry_phrase,
)
from node.announce.schedule import IdTimer
from node.announce.tts import render
from node.config import SPEC_EVENT_NAMES, AnnounceConfig
from node.errors import NodeError, TtsError
from node.media.bridge import Destination, MediaBridge

__all__ = ["CW_DBFS", "ID_CW_DBFS", "MAX_QUEUED", "SPEECH_PEAK_DBFS", "Announcer"]

log = logging.getLogger(__name__)

#: Peak level of the CW station ID: app_rpt's `idamplitude` 2048 of a 16-bit tone peak.
ID_CW_DBFS = -24.0
#: Peak level of other CW (event announcements in CW, the fallback): app_rpt's telemetry
#: `amplitude` 4096.
CW_DBFS = -18.0
#: Speech is brought to this peak before `[announce.tts] gain_db`: the network's nominal voice
#: peak (3 kHz deviation, research/allstar.md §8).
SPEECH_PEAK_DBFS = -13.0
#: Announcements waiting beyond this many: the oldest non-ID one is dropped.
MAX_QUEUED = 8
#: How long past its length a playback may take to report its end before it is given up.
PLAYBACK_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class _Item:
    kind: str
    phrase: Phrase
    destination: Destination
    #: Render with the TTS binary (CW when it fails); else CW.
    speak: bool
    cw_dbfs: float
    #: May key the local transmitter (the ID under cw_keys_when_idle only; POST /play).
    keys: bool = False
    #: Audio already at the station rate (POST /play of a file): played as it is.
    pcm: bytes | None = None
    #: Called once it ended: True when it played out (tail messages).
    done: Callable[[bool], None] | None = None


def _peak_dbfs(pcm: bytes) -> float:
    samples = array.array("h", pcm)
    peak = max(max(samples, default=0), -min(samples, default=0))
    return 20 * math.log10(peak / 32767) if peak else -math.inf


class Announcer:
    """Station ID and announcements for one node (see the module docs)."""

    def __init__(
        self,
        config: AnnounceConfig,
        bridge: MediaBridge,
        node_id: str | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._bridge = bridge
        self._me = node_id
        self._clock = clock
        periodic = config.id_mode != "off" and config.id_interval_secs > 0 and config.callsign
        self.id_timer = IdTimer(config.id_interval_secs, clock()) if periodic else None
        self._queue: collections.deque[_Item] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.played = 0
        self.dropped = 0
        self.tts_failures = 0
        self.last_tts_failure: str | None = None
        #: `[rpt] link_telemetry = "short"`: "1 9 9 9 connected".
        self.short_links = False
        #: Whether link telemetry is heard now (`[rpt] telemdefault`, cop 33-35).
        self.telemetry_on: Callable[[], bool] = lambda: True
        #: The item playing and its playback id.
        self._current: tuple[_Item, int] | None = None
        #: The playing item's end, and when it is given up if the engine never reports it.
        self._ended: asyncio.Future[bool] | None = None
        self._give_up_at: float | None = None

    # --- inputs (the controller) --------------------------------------------------------------

    def activity(self, active: bool) -> None:
        """The conference got a talker, or has had none for the engine's activity hang."""
        if self.id_timer is not None:
            self.id_timer.activity(active, self._clock())

    def event(self, name: str, *, peer: str = "", node: str = "") -> None:
        """An `[announce.events.<name>]` event happened: announce it if it is enabled."""
        cfg = self.config.events.get(name)
        if cfg is None or not cfg.enabled:
            return
        if name in ("link_connected", "link_disconnected"):
            if not self.telemetry_on():
                return
            phrase = link_phrase(name, node, short=True) if self.short_links else None
        else:
            phrase = None
        if phrase is None:
            phrase = event_phrase(name, peer=peer, node=node, me=self._me or "")
        self._announce("event", phrase, self._destination(cfg.destination, name))

    def telemetry(self, token: str, args: Iterable[str]) -> None:
        """`T` telemetry another node sent over a link (CONNECTED, REMDISC, CONNFAIL)."""
        found = telemetry_phrase(token, args, self._me)
        if found is None or not self.telemetry_on():
            return
        name, phrase = found
        if self.short_links:
            nodes = [a for a in args if a.isdigit()]
            phrase = link_phrase(name, nodes[-1], short=True)
        cfg = self.config.events.get(name)
        if cfg is not None and cfg.enabled:
            self._announce("event", phrase, self._destination(cfg.destination, name))

    def status(self, entries: Iterable[str]) -> None:
        """`*70` / `*73`: say which nodes are linked."""
        self.command(status_phrase(entries))

    def command(self, phrase: Phrase, destination: Destination | None = None) -> None:
        """What a DTMF or AMI command reports aloud (kind `command`); `destination` overrides
        the usual one (a local-only status message: "to_monitor")."""
        where = destination or self._destination("to_air", "command")
        self._announce("command", phrase, where)

    def say(
        self,
        kind: str,
        phrase: Phrase,
        destination: Destination,
        *,
        keys: bool = False,
        done: Callable[[bool], None] | None = None,
    ) -> None:
        """Queue `phrase` (speech with TTS, else CW) as `kind` to `destination`."""
        speak = self.config.tts.enabled
        self._enqueue(_Item(kind, phrase, destination, speak, CW_DBFS, keys, done=done))

    def play_pcm(
        self,
        kind: str,
        label: str,
        pcm: bytes,
        destination: Destination,
        *,
        keys: bool,
        done: Callable[[bool], None] | None = None,
    ) -> None:
        """Queue audio already at the station rate (POST /play of a file)."""
        item = _Item(kind, Phrase(label, ""), destination, False, CW_DBFS, keys, pcm, done)
        self._enqueue(item)

    @property
    def rate(self) -> int:
        return self._bridge.rate

    def stop_kind(self, kind: str) -> bool:
        """Cut short the playing item if it is a `kind` (a tail message a talker keyed over);
        whether one was."""
        current = self._current
        if current is None or current[0].kind != kind:
            return False
        self._bridge.stop_playing(current[1])
        return True

    def flush(self) -> int:
        """app_rpt's cop,24: drop every waiting announcement but the ID; how many."""
        kept = [i for i in self._queue if i.kind == "id"]
        dropped = len(self._queue) - len(kept)
        self._queue.clear()
        self._queue.extend(kept)
        return dropped

    def stats(self) -> dict[str, object]:
        """For `GET /stats`: what played, what was dropped, TTS failures, the next ID."""
        timer = self.id_timer
        deadline = timer.next_deadline() if timer is not None else None
        return {
            "played": self.played,
            "queued": len(self._queue),
            "dropped": self.dropped,
            "tts_failures": self.tts_failures,
            "last_tts_failure": self.last_tts_failure,
            "id_owed": timer.owed if timer is not None else False,
            "next_id_in_s": None if deadline is None else round(deadline - self._clock(), 1),
        }

    def close(self) -> None:
        self._closed = True
        self._give_up_at = None
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._queue.clear()

    # --- queueing -----------------------------------------------------------------------------

    def _destination(self, configured: str, name: str) -> Destination:
        if configured == "to_monitor":
            return "to_monitor"
        # The operator's to_links sends events and command answers over the links too; link
        # telemetry and the ID never (every node announces those for itself).
        if self.config.to_links and name in (*SPEC_EVENT_NAMES, "command"):
            return "to_air_and_links"
        return "to_air"

    def _announce(self, kind: str, phrase: Phrase, destination: Destination) -> None:
        speak = self.config.tts.enabled
        self._enqueue(_Item(kind, phrase, destination, speak, CW_DBFS))

    def _enqueue(self, item: _Item, *, first: bool = False) -> None:
        if self._closed:
            return
        if len(self._queue) >= MAX_QUEUED:
            victim = next((i for i in self._queue if i.kind != "id"), None)
            if victim is not None:
                self._queue.remove(victim)
                self.dropped += 1
                log.warning("announcement queue full: dropped %r", victim.phrase.speech)
        if first:
            self._queue.appendleft(item)
        else:
            self._queue.append(item)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    # --- the station ID -----------------------------------------------------------------------

    def id_deadline(self) -> float | None:
        """When the station ID timer next needs `id_timer_due` (None: no periodic ID)."""
        timer = self.id_timer
        return timer.next_deadline() if timer is not None and not self._closed else None

    def id_timer_due(self, now: float) -> None:
        """The ID timer's deadline came: the ID goes ahead of the waiting announcements when
        it is due (and polite)."""
        timer = self.id_timer
        if timer is not None and not self._closed and timer.timer(now):
            cfg = self.config
            self._enqueue(
                _Item(
                    "id",
                    station_id(cfg.callsign),
                    "to_air",
                    speak=cfg.id_mode == "tts",
                    cw_dbfs=ID_CW_DBFS,
                    keys=cfg.cw_keys_when_idle,
                ),
                first=True,
            )

    # --- the playing item's watchdog ----------------------------------------------------------

    def playback_deadline(self) -> float | None:
        """When the announcement playing is given up if its end is not reported by then."""
        return self._give_up_at

    def playback_timer(self, now: float) -> None:
        current, ended = self._current, self._ended
        if self._give_up_at is None or now < self._give_up_at:
            return
        self._give_up_at = None
        if current is not None:
            log.warning("announcement %d did not report its end; stopping it", current[1])
            self._bridge.stop_playing(current[1])
        if ended is not None and not ended.done():
            ended.set_result(False)

    # --- playing ------------------------------------------------------------------------------

    async def _run(self) -> None:
        while self._queue and not self._closed:
            item = self._queue.popleft()
            completed = False
            try:
                completed = await self._play(item)
            except asyncio.CancelledError:
                raise
            except (NodeError, OSError, ValueError) as exc:
                # The media path refused (engine stopped, bad audio): this announcement is
                # lost, the next ones still play.
                log.warning("announcement %r not played: %s", item.phrase.speech, exc)
            if item.done is not None:
                item.done(completed)

    async def _render(self, item: _Item) -> bytes:
        cfg = self.config
        if item.pcm is not None:
            return item.pcm
        if item.speak:
            try:
                speech = await render(cfg.tts, item.phrase.speech)
            except TtsError as exc:
                self.tts_failures += 1
                self.last_tts_failure = str(exc)
                log.warning("TTS failed (%s); sending %r in CW instead", exc, item.phrase.cw)
            else:
                gain = SPEECH_PEAK_DBFS - _peak_dbfs(speech.pcm) + cfg.tts.gain_db
                if math.isfinite(gain):
                    return self._bridge.to_station_rate(speech.pcm, speech.rate, gain)
                log.warning("TTS wrote only silence; sending %r in CW", item.phrase.cw)
        return self._bridge.cw_pcm(item.phrase.cw, cfg.cw_wpm, cfg.cw_tone_hz, item.cw_dbfs)

    async def _play(self, item: _Item) -> bool:
        """Play one item; whether it played out."""
        pcm = await self._render(item)
        if self._closed:
            return False
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[bool] = loop.create_future()

        def on_ended(completed: bool) -> None:
            if not ended.done():
                ended.set_result(completed)

        if item.kind == "id" and self.id_timer is not None:
            self.id_timer.identified(self._clock())
        playback = self._bridge.play(
            pcm, item.destination, item.kind, keys_transmitter=item.keys, on_ended=on_ended
        )
        self._current = (item, playback)
        self._ended = ended
        self.played += 1
        log.info("announcing (%s, %s): %s", item.kind, item.destination, item.phrase.speech)
        length = len(pcm) / 2 / self._bridge.rate
        self._give_up_at = self._clock() + length + PLAYBACK_GRACE_S
        try:
            return await ended
        finally:
            self._current = None
            self._ended = None
            self._give_up_at = None
