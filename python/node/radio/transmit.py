"""The transmit service: keying the local source, the TX time-out, the radio's PTT and squelch,
the courtesy tone and the D-Star guard.

`key` is the only path that keys the local source (operator commands: POST /key, the TUI, AMI;
and the radio's squelch, through `_squelch`). It refuses while a D-Star session is active:
D-Star transmit is never keyed remotely (spec Errors rule 3). The local source stays keyed while
any source holds it; the TX time-out releases every hold.

Every input returns `Effects` (the snapshot changed; `KeyingChanged` for the status poster). Its
two deadlines are in the router's table: the TX time-out (`next_deadline`, `timer`) and the
radio's hang time and carrier on-delay (`radio_deadline`, `radio_timer`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from node._core import tone_sequence_pcm
from node.allstar.statpost import KeyStats
from node.context import NodeContext
from node.effects import CHANGED, NOTHING, Effects, KeyingChanged
from node.errors import CommandError
from node.events import Link, Radio
from node.media.bridge import MediaBridge
from node.radio.radio import Radio as RadioEdge
from node.radio.radio import RadioChange
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
        #: When the TX time-out unkeys (None: not keyed, or the time-out is off).
        self._tot_at: float | None = None
        #: The operator's keying as status posts count it.
        self.key_stats = KeyStats()
        self._bridge: MediaBridge | None = None
        #: `[radio]`: the PTT and carrier detect.
        self.radio: RadioEdge | None = None
        #: app_rpt cop 7/8: whether the TX time-out runs (for the next keying).
        self.tot_enabled = True
        #: The USRP peer's current digital caller (callsign, ids, talkgroup) while they talk.
        self.usrp_caller: dict[str, Any] | None = None

    def attach(self, bridge: MediaBridge, radio: RadioEdge | None) -> None:
        """The media bridge and the radio's lines (the router starts the radio's carrier
        detector, whose edges come to `carrier_changed`)."""
        self._bridge = bridge
        self.radio = radio

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

    def key(self, source: str = "operator") -> Effects:
        """Key the local source for `source` ("operator", or "carrier" for the radio's
        squelch); CommandError while a D-Star session is active."""
        # Checked on every key command, before anything else: D-Star is never keyed
        # remotely (spec Errors rule 3), by an operator or by a carrier.
        self.dstar_guard(source)
        keyed = bool(self._keyed_by)
        self._keyed_by.add(source)
        if keyed:
            return NOTHING
        if self._bridge is None:
            raise CommandError("the media bridge is not running", 500)
        now = self._ctx.clock()
        self._bridge.set_local_keyed(True)
        self.keyed_at = now
        self._links.set_local_keyed(True, now)
        self.key_stats.keyed(now)
        timeout = self._ctx.config.keying.tx_timeout_secs
        if self.tot_enabled:
            self._tot_at = now + timeout
        shown = f"{timeout} s" if self._tot_at is not None else "off"
        log.info("keyed by the %s (TX time-out %s)", source, shown)
        self._ctx.bus.publish(
            Link(kind="keyed", node=self._ctx.config.node_id, call=None, keyed=True)
        )
        return Effects(True, (KeyingChanged(),))

    def set_tot(self, on: bool) -> None:
        """app_rpt cop 7/8: the TX time-out on or off (from the next keying)."""
        self.tot_enabled = on

    def dstar_guard(self, source: str = "operator") -> None:
        """CommandError (409) while the D-Star guard refuses `source` (`dstar_active`):
        anything that would key (POST /key, POST /play to the air) asks here first."""
        if self.dstar_active(source):
            raise CommandError(DSTAR_REFUSAL, 409)

    def unkey(self, reason: str | None = None, source: str | None = None) -> Effects:
        """Release `source`'s hold (None: every hold: POST /unkey, the TX time-out, shutdown);
        the local source unkeys once nothing holds it."""
        if source is None:
            self._keyed_by.clear()
        else:
            self._keyed_by.discard(source)
        if self.keyed_at is None or self._keyed_by:
            return NOTHING
        self._tot_at = None
        self.keyed_at = None
        if self._bridge is not None:
            self._bridge.set_local_keyed(False)
        self._links.set_local_keyed(False, self._ctx.clock())
        self.key_stats.unkeyed(self._ctx.clock())
        log.info("unkeyed%s", f" ({reason})" if reason else "")
        self._ctx.bus.publish(
            Link(kind="keyed", node=self._ctx.config.node_id, call=None, keyed=False, reason=reason)
        )
        return Effects(True, (KeyingChanged(),))

    def next_deadline(self) -> float | None:
        """The TX time-out (None while unkeyed or with the time-out off)."""
        return self._tot_at

    def timer(self, now: float) -> Effects:
        """The TX time-out: every hold is released."""
        if self._tot_at is None or now < self._tot_at:
            return NOTHING
        self._tot_at = None
        self.key_stats.timeouts += 1
        timeout = self._ctx.config.keying.tx_timeout_secs
        log.warning("TX time-out: keyed for %d s, unkeying", timeout)
        return self.unkey(f"TX time-out after {timeout} s")

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

    def radio_deadline(self) -> float | None:
        """The radio's next hang-time, time-out or carrier on-delay deadline."""
        return self.radio.next_deadline() if self.radio is not None else None

    def radio_timer(self, now: float) -> Effects:
        if self.radio is None:
            return NOTHING
        return self._radio_change(self.radio.timer(now))

    def carrier_changed(self, active: bool) -> Effects:
        """The radio's carrier detector saw the carrier come or go."""
        if self.radio is None:
            return NOTHING
        return self._radio_change(self.radio.carrier_changed(active))

    def _radio_change(self, change: RadioChange) -> Effects:
        # The squelch first: a squelch that closes and a hang time that ends at the same
        # deadline happen in that order, as the radio's machines run them.
        fx = NOTHING if change.squelch is None else self._on_squelch(change.squelch)
        if change.ptt is not None:
            fx = fx | self._ptt(change.ptt)
        return fx

    def _on_squelch(self, opened: bool) -> Effects:
        """The radio's squelch opened or closed: key or release the carrier's hold on the
        local source, exactly as POST /key and POST /unkey do."""
        if not opened:
            held = "carrier" in self._keyed_by
            self._ctx.bus.publish(Radio(kind="carrier", on=False))
            fx = self.unkey("carrier dropped", source="carrier")
            if held:
                self._courtesy_tone()
            return fx | CHANGED
        try:
            fx = self.key("carrier")
        except CommandError as exc:
            log.warning("carrier detected, not keying: %s", exc)
            self._ctx.bus.publish(Radio(kind="carrier", on=True, reason=str(exc)))
            return CHANGED
        self._ctx.bus.publish(Radio(kind="carrier", on=True))
        return fx | CHANGED

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

    def _ptt(self, change: PttChange) -> Effects:
        """The radio's transmitter keyed or released (the conference's audio, the hang time,
        the TX time-out)."""
        if change.timed_out:
            log.warning("transmitter %s: released", change.reason)
        else:
            log.info("transmitter %s", "keyed" if change.keyed else f"released ({change.reason})")
        self._ctx.bus.publish(Radio(kind="ptt", on=change.keyed, reason=change.reason))
        return CHANGED

    def tx_demand(self, on: bool) -> Effects:
        """The engine's `local_tx` edge: the conference has audio for the transmitter."""
        if self.radio is None:
            return NOTHING
        return self._radio_change(self.radio.tx_demand(on))

    def vox_changed(self, open: bool) -> Effects:
        """The engine's VOX on the local receiver (carrier detect by audio)."""
        if self.radio is None:
            return NOTHING
        return self._radio_change(self.radio.vox_changed(open))

    def usrp_carrier_changed(self, on: bool) -> Effects:
        """The USRP peer's carrier (its keyup voice) came or went."""
        fx = NOTHING if self.radio is None else self._radio_change(self.radio.carrier_changed(on))
        if not on:
            self.usrp_caller = None
        return fx

    def usrp_meta_received(self, meta: Mapping[str, Any]) -> Effects:
        """The digital caller's metadata (callsign, ids, talkgroup) while they talk."""
        self.usrp_caller = caller = dict(meta)
        log.info(
            "USRP caller %s (id %s, talkgroup %s)",
            caller.get("callsign") or "?",
            caller.get("source_id"),
            caller.get("talkgroup"),
        )
        self._ctx.bus.publish(Radio(kind="caller", on=True, reason=None, caller=caller))
        return CHANGED

    def usrp_peer_changed(self, heard: bool) -> Effects:
        """The USRP peer was lost mid-transmission, or is heard again."""
        if heard:
            log.info("USRP peer heard again")
        else:
            log.warning("USRP peer lost: its transmission stopped without its end packet")
        self._ctx.bus.publish(Radio(kind="peer", on=heard, reason=None if heard else "peer lost"))
        return CHANGED

    def close_radio(self) -> None:
        """Shutdown, first of all: nothing that fails later may leave the transmitter keyed."""
        if self.radio is not None:
            change = self.radio.close()
            if change is not None:
                self._ptt(change)
