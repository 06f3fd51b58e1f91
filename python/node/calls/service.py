"""The plain calls: the IAX2 calls that are not links (a phone, a softphone, an operator's
`POST /dial`).

One owner of calls on the node's IAX2 port (`node.port`), beside the links and the
registration. The router hands it the events of the calls it owns (`on_call_event`); a plain
call gets a `CallInfo` for the snapshot, a media leg once answered, and `incoming_call` /
`hangup` bus events. Every input returns `Effects`: the snapshot changed, and the announcements
and digit-source endings for the router to route. Its commands go down to the port.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from node.config import NodeConfig
from node.context import NodeContext
from node.effects import CHANGED, NOTHING, Announce, DigitReceived, DigitSourceGone, Effects
from node.errors import CommandError, LocalProtocolError
from node.events import Hangup, IncomingCall
from node.iax2 import call as c
from node.iax2.call_events import end_reason
from node.iax2.constants import CODEC_NAMES
from node.iax2.endpoint import InboundPolicy
from node.iax2.transport import Address
from node.media.bridge import MediaBridge
from node.port import IaxPort

__all__ = ["OWNER", "CallInfo", "CallService"]

log = logging.getLogger(__name__)

#: The port's tag for the calls this service owns.
OWNER = "calls"


@dataclass(slots=True)
class CallInfo:
    """What the snapshot shows of one call."""

    callno: int
    direction: str
    #: The peer as it presented itself (node number, else username), or the dialled node.
    peer: str
    addr: Address
    started: float
    state: str = "setup"
    codec: str | None = None
    answered: float | None = None
    media: bool = False
    ended: bool = False
    #: The caller is talking into the conference now (VOX).
    keyed: bool = False

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "id": self.callno,
            "peer": self.peer,
            "addr": f"{self.addr[0]}:{self.addr[1]}",
            "direction": self.direction,
            "state": self.state,
            "codec": self.codec,
            "duration_s": round(now - (self.answered or self.started), 1),
            "keyed": self.keyed,
        }


class CallService:
    """The plain calls on the node's IAX2 port."""

    def __init__(self, ctx: NodeContext, port: IaxPort) -> None:
        self._ctx = ctx
        self._port = port
        #: The plain calls, by call number.
        self.calls: dict[int, CallInfo] = {}
        self.bridge: MediaBridge | None = None

    def attach(self, bridge: MediaBridge) -> None:
        self.bridge = bridge

    def reconfigure(self, config: NodeConfig) -> None:
        """SIGHUP: calls admitted so far keep their rules; the next inbound call meets these."""
        port = self._port
        port.set_policy(
            InboundPolicy.from_listener(
                config.listener, enabled=port.listening, numbers=port.inbound.numbers
            )
        )

    # --- inputs (the router) ------------------------------------------------------------------

    def on_call_event(self, event: c.CallEvent, now: float) -> Effects:
        """One event of a plain call: its state, its media and what it says."""
        call = self._port.call(event.callno)
        info = self.calls.get(event.callno)
        if isinstance(event, c.CallIncoming):
            peer = event.calling_number or event.username or "unknown"
            self.calls[event.callno] = info = CallInfo(
                event.callno, "inbound", peer, call.peer_addr if call else ("", 0), now
            )
            info.codec = CODEC_NAMES.get(event.format)
            info.state = "ringing" if self._port.inbound.answer == "manual" else "setup"
            log.info("incoming call %d from %s (%s)", event.callno, peer, info.codec)
            self._ctx.bus.publish(IncomingCall(from_=peer))
            return Effects(True, (Announce("incoming_call", peer=peer),))
        if info is None:
            return NOTHING
        if isinstance(event, c.CallAccepted):
            info.codec = CODEC_NAMES.get(event.format)
            return CHANGED
        if isinstance(event, c.CallRinging):
            info.state = "ringing"
            return CHANGED
        if isinstance(event, c.CallAnswered):
            info.state = "up"
            info.answered = now
            if call is not None and call.format is not None and not info.media:
                # A plain call talks into the links only while its caller speaks (VOX): a
                # phone that streams silence must not hold every link keyed.
                self._bridge().add_call_leg(
                    call, now, keying="vox", dtmf=self._ctx.config.dtmf.inband_on("calls")
                )
                info.media = True
                return Effects(True, (Announce("answered", peer=info.peer),))
            return CHANGED
        if isinstance(event, c.DtmfReceived):
            # A plain call's digits are commands, as a link's are.
            digit = DigitReceived(f"call {event.callno}", event.callno, event.digit)
            return Effects(events=(digit,))
        if isinstance(event, c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed):
            if info.media:
                self._bridge().push_received(event)
            return NOTHING
        if isinstance(event, c.CallHungUp | c.CallRejected | c.CallLost):
            return self._ended(info, end_reason(event))
        return NOTHING

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> Effects:
        """A plain call's caller started or stopped talking (VOX on its received audio)."""
        info = self.calls.get(callno)
        if info is None or info.keyed == keyed:
            return NOTHING
        info.keyed = keyed
        return CHANGED

    def _bridge(self) -> MediaBridge:
        if self.bridge is None:
            raise CommandError("the media bridge is not running", 500)
        return self.bridge

    def _ended(self, info: CallInfo, reason: str) -> Effects:
        if info.ended:
            return NOTHING
        info.ended = True
        if info.media and self.bridge is not None:
            self.bridge.remove_leg(info.callno)
        info.keyed = False
        self.calls.pop(info.callno, None)
        log.info("call %d with %s ended: %s", info.callno, info.peer, reason)
        self._ctx.bus.publish(Hangup(reason=reason))
        # A later call may get the same number: it must not inherit this one's digits.
        events: tuple[object, ...] = (DigitSourceGone(f"call {info.callno}"),)
        if not self._ctx.stopping.is_set():
            events += (Announce("hangup"),)
        return Effects(True, events)

    # --- commands -----------------------------------------------------------------------------

    def _pick(self, callno: int | None, states: tuple[str, ...], what: str) -> CallInfo:
        if callno is not None:
            info = self.calls.get(callno)
            if info is None:
                raise CommandError(f"no call {callno}", 404)
            return info
        candidates = [i for i in self.calls.values() if i.state in states]
        if not candidates:
            raise CommandError(f"no {what} call", 409)
        # The most recent one: what an operator who just heard it ring or connect means.
        return max(candidates, key=lambda i: i.started)

    def dial(self, node: str, addr: Address, username: str | None) -> Effects:
        """Place an outbound call to `node` at `addr` (as `username` unless we share a peer
        secret with it: then as our own node number)."""
        node_id = self._ctx.config.node_id
        peer_secret = self._ctx.secrets.peer_secret(node)
        params = c.DialParams(
            called_number=node,
            calling_number=node_id,
            username=node_id if peer_secret is not None and node_id else username,
            secret=peer_secret,
            datetime=time.localtime()[:6],
        )
        now = self._ctx.clock()
        try:
            callno = self._port.dial(OWNER, now, addr, params)
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 500) from None
        self.calls[callno] = CallInfo(callno, "outbound", node, addr, now)
        return CHANGED

    def hangup(self, callno: int | None = None) -> Effects:
        """End a call: `callno`, else the most recently started call."""
        info = self._pick(callno, ("setup", "ringing", "up"), "active")
        try:
            self._port.hangup(info.callno, self._ctx.clock())
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        return self._ended(info, "hung up by operator")

    def answer(self, callno: int | None = None) -> Effects:
        info = self._pick(callno, ("ringing",), "ringing inbound")
        if info.direction != "inbound":
            raise CommandError(f"call {info.callno} is outbound", 409)
        try:
            self._port.answer(info.callno, self._ctx.clock())
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        return NOTHING

    def reject(self, callno: int | None = None) -> Effects:
        info = self._pick(callno, ("ringing",), "ringing inbound")
        try:
            self._port.reject(info.callno, self._ctx.clock(), "Call rejected by operator", 21)
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        return self._ended(info, "rejected by operator")

    def set_listening(self, enabled: bool) -> Effects:
        self._port.set_listening(enabled)
        return CHANGED

    # --- what the snapshot shows --------------------------------------------------------------

    def snapshot(
        self, now: float, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        if legs is None and self.calls:
            legs = self._port.leg_stats()
        return [
            {**info.to_json(now), "health": self._port.health(info.callno, legs)}
            for info in self.calls.values()
        ]

    def health_snapshot(
        self, legs: Mapping[int, dict[str, int]] | None = None
    ) -> list[dict[str, Any]]:
        """The `health` event's `calls`: each plain call's id and health."""
        if legs is None and self.calls:
            legs = self._port.leg_stats()
        return [{"id": callno, "health": self._port.health(callno, legs)} for callno in self.calls]

    def close(self, now: float) -> None:
        """Shutdown: hang up every plain call (frames only: nothing is waited for)."""
        for info in list(self.calls.values()):
            with contextlib.suppress(LocalProtocolError):
                self._port.hangup(info.callno, now)
            self._ended(info, "node shutting down")
