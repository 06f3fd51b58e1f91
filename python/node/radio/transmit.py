"""The transmit service: keying the local source, the TX time-out, the radio's PTT and squelch,
the courtesy tone and the D-Star guard.

`key` is the only path that keys the local source (operator commands: POST /key, the TUI, AMI;
and the radio's squelch, through `_on_squelch`). It refuses while a D-Star session is active:
D-Star transmit is never keyed remotely (spec Errors rule 3). The local source stays keyed while
any source holds it; the TX time-out releases every hold.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from node._core import tone_sequence_pcm
from node.allstar.statpost import KeyStats
from node.context import NodeContext
from node.errors import CommandError
from node.events import Link, Radio
from node.media.bridge import MediaBridge
from node.radio.radio import Radio as RadioEdge
from node.radio.transmitter import PttChange

__all__ = ["COURTESY", "DSTAR_REFUSAL", "KeyingLinks", "TransmitService"]

log = logging.getLogger(__name__)

#: The spec's refusal of POST /key while a D-Star session is active.
DSTAR_REFUSAL = (
    "refusing to key: a D-Star session is active and D-Star transmit is not remotely keyable"
)

#: The player's kind for the radio's courtesy tone (no `announcement_*` events).
COURTESY = "courtesy"


class KeyingLinks(Protocol):
    """What keying needs of the link network (`node.links.network.LinkNetwork`)."""

    def dstar_active(self) -> bool: ...

    def set_local_keyed(self, keyed: bool, now: float) -> None: ...


class TransmitService:
    """The local source's keying and the radio's transmitter and receiver."""

    def __init__(self, ctx: NodeContext, links: KeyingLinks) -> None:
        self._ctx = ctx
        self._links = links
        #: When the local source keyed (monotonic), None while unkeyed.
        self.keyed_at: float | None = None
        #: What holds the local source keyed: "operator" (POST /key and the like), "carrier"
        #: (the radio's squelch).
        self._keyed_by: set[str] = set()
        self._tot: asyncio.TimerHandle | None = None
        #: The operator's keying as status posts count it.
        self.key_stats = KeyStats()
        #: `[statpost]`: told of every key change.
        self.key_changed: Callable[[], None] | None = None
        self._bridge: MediaBridge | None = None
        #: `[radio]`: the PTT and carrier detect.
        self.radio: RadioEdge | None = None
        #: app_rpt cop 7/8: whether the TX time-out runs (for the next keying).
        self.tot_enabled = True
        #: The USRP peer's current digital caller (callsign, ids, talkgroup) while they talk.
        self.usrp_caller: dict[str, Any] | None = None

    def attach(self, bridge: MediaBridge, radio: RadioEdge | None) -> None:
        self._bridge = bridge
        self.radio = radio
        if radio is not None:
            radio.start(self._on_ptt, self._on_squelch)

    # --- keying -------------------------------------------------------------------------------

    def dstar_active(self, source: str = "operator") -> bool:
        """Whether the D-Star guard refuses keying for `source`: a D-Star link session is
        active (any source), or the local radio is a USRP radio whose network is D-Star (every
        source but its own carrier: the D-Star side's voice may key the node, nothing may key
        the D-Star side from here). A `dstar` USRP radio counts as an active session for as long
        as it is configured: Analog_Bridge holds its gateway whether or not it sent a packet
        lately, so no silence can make keying it safe."""
        if self._links.dstar_active():
            return True
        return self.usrp_dstar and source != "carrier"

    @property
    def usrp_dstar(self) -> bool:
        """The local radio is a USRP radio to D-Star."""
        usrp = self._ctx.config.usrp
        return (
            usrp is not None
            and usrp.network == "dstar"
            and self._ctx.config.audio.backend == "usrp"
        )

    def key(self, source: str = "operator") -> None:
        """Key the local source for `source` ("operator", or "carrier" for the radio's
        squelch); CommandError while a D-Star session is active."""
        # Checked on every key command, before anything else: D-Star is never keyed
        # remotely (spec Errors rule 3), by an operator or by a carrier.
        self.dstar_guard(source)
        keyed = bool(self._keyed_by)
        self._keyed_by.add(source)
        if keyed:
            return
        if self._bridge is None:
            raise CommandError("the media bridge is not running", 500)
        now = self._ctx.clock()
        self._bridge.set_local_keyed(True)
        self.keyed_at = now
        self._links.set_local_keyed(True, now)
        self.key_stats.keyed(now)
        if self.key_changed is not None:
            self.key_changed()
        timeout = self._ctx.config.keying.tx_timeout_secs
        if self.tot_enabled:
            self._tot = asyncio.get_running_loop().call_later(timeout, self._tx_timed_out)
        log.info("keyed by the %s (TX time-out %s)", source, f"{timeout} s" if self._tot else "off")
        self._ctx.bus.publish(
            Link(kind="keyed", node=self._ctx.config.node_id, call=None, keyed=True)
        )
        self._ctx.changed()

    def dstar_guard(self, source: str = "operator") -> None:
        """CommandError (409) while the D-Star guard refuses `source` (`dstar_active`):
        anything that would key (POST /key, POST /play to the air) asks here first."""
        if self.dstar_active(source):
            raise CommandError(DSTAR_REFUSAL, 409)

    def unkey(self, reason: str | None = None, source: str | None = None) -> None:
        """Release `source`'s hold (None: every hold: POST /unkey, the TX time-out, shutdown);
        the local source unkeys once nothing holds it."""
        if source is None:
            self._keyed_by.clear()
        else:
            self._keyed_by.discard(source)
        if self.keyed_at is None or self._keyed_by:
            return
        if self._tot is not None:
            self._tot.cancel()
            self._tot = None
        self.keyed_at = None
        if self._bridge is not None:
            self._bridge.set_local_keyed(False)
        self._links.set_local_keyed(False, self._ctx.clock())
        self.key_stats.unkeyed(self._ctx.clock())
        if self.key_changed is not None:
            self.key_changed()
        log.info("unkeyed%s", f" ({reason})" if reason else "")
        self._ctx.bus.publish(
            Link(kind="keyed", node=self._ctx.config.node_id, call=None, keyed=False, reason=reason)
        )
        self._ctx.changed()

    def _tx_timed_out(self) -> None:
        self._tot = None
        self.key_stats.timeouts += 1
        timeout = self._ctx.config.keying.tx_timeout_secs
        log.warning("TX time-out: keyed for %d s, unkeying", timeout)
        self.unkey(f"TX time-out after {timeout} s")

    def tx_json(self, now: float) -> dict[str, Any]:
        """The snapshot's `tx` object."""
        timeout = self._ctx.config.keying.tx_timeout_secs
        keyed_at = self.keyed_at
        return {
            "keyed": keyed_at is not None,
            "timeout_s": timeout,
            "timeout_remaining_s": None
            if keyed_at is None
            else round(max(0.0, keyed_at + timeout - now), 1),
        }

    # --- the radio ----------------------------------------------------------------------------

    def _on_squelch(self, opened: bool) -> None:
        """The radio's squelch opened or closed: key or release the carrier's hold on the
        local source, exactly as POST /key and POST /unkey do."""
        if not opened:
            held = "carrier" in self._keyed_by
            self._ctx.bus.publish(Radio(kind="carrier", on=False))
            self.unkey("carrier dropped", source="carrier")
            if held:
                self._courtesy_tone()
            self._ctx.changed()
            return
        try:
            self.key("carrier")
        except CommandError as exc:
            log.warning("carrier detected, not keying: %s", exc)
            self._ctx.bus.publish(Radio(kind="carrier", on=True, reason=str(exc)))
        else:
            self._ctx.bus.publish(Radio(kind="carrier", on=True))
        self._ctx.changed()

    def _courtesy_tone(self) -> None:
        """A received transmission that keyed the node ended: the courtesy tone goes out on the
        local transmitter (keying it through the hang time), never to the calls or links, as
        app_rpt plays its courtesy tones on the local transmitter only."""
        steps = self._ctx.config.radio.courtesy_tone
        if not steps or self._bridge is None or self.dstar_active():
            # The D-Star guard: no tone keys a D-Star transmitter from here.
            return
        pcm = tone_sequence_pcm(
            self._bridge.rate, list(steps), self._ctx.config.radio.courtesy_tone_level_db
        )
        self._bridge.play(pcm, "to_monitor", COURTESY, keys_transmitter=True)

    def _on_ptt(self, change: PttChange) -> None:
        """The radio's transmitter keyed or released (the conference's audio, the hang time,
        the TX time-out)."""
        if change.timed_out:
            log.warning("transmitter %s: released", change.reason)
        else:
            log.info("transmitter %s", "keyed" if change.keyed else f"released ({change.reason})")
        self._ctx.bus.publish(Radio(kind="ptt", on=change.keyed, reason=change.reason))
        self._ctx.changed()

    def tx_demand(self, on: bool) -> None:
        """The engine's `local_tx` edge: the conference has audio for the transmitter."""
        if self.radio is not None:
            self.radio.tx_demand(on)

    def vox_changed(self, open: bool) -> None:
        """The engine's VOX on the local receiver (carrier detect by audio)."""
        if self.radio is not None:
            self.radio.vox_changed(open)

    def usrp_carrier_changed(self, on: bool) -> None:
        """The engine's USRP radio: its carrier (the peer's keyup voice) rose or fell; the
        digital caller is forgotten when it falls."""
        if self.radio is not None:
            self.radio.carrier_changed(on)
        if not on:
            self.usrp_caller = None

    def usrp_meta_received(self, meta: Mapping[str, Any]) -> None:
        """The engine's USRP radio: the digital caller's metadata."""
        self.usrp_caller = caller = dict(meta)
        log.info(
            "USRP caller %s (id %s, talkgroup %s)",
            caller.get("callsign") or "?",
            caller.get("source_id"),
            caller.get("talkgroup"),
        )
        self._ctx.bus.publish(Radio(kind="caller", on=True, reason=None, caller=caller))
        self._ctx.changed()

    def usrp_peer_changed(self, heard: bool) -> None:
        """The engine's USRP radio: the peer lost mid-transmission (`heard` False) or heard
        again."""
        if heard:
            log.info("USRP peer heard again")
        else:
            log.warning("USRP peer lost: its transmission stopped without its end packet")
        self._ctx.bus.publish(Radio(kind="peer", on=heard, reason=None if heard else "peer lost"))
        self._ctx.changed()

    def close_radio(self) -> None:
        """Shutdown, first of all: nothing that fails later may leave the transmitter keyed."""
        if self.radio is not None:
            self.radio.close()
