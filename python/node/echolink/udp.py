"""The engine's EchoLink side: the thin wrapper over `node._core.Engine`'s EchoLink ports and
legs, as `media/bridge.py` is over its conference.

The engine binds UDP 5198 (audio, text) and 5199 (control) on `[echolink] bind` and polls them
in its own thread; control and text datagrams come back as `EchoLinkReceived` engine events
(routed to the EchoLink service by the router), audio stays in the engine. This class sends
what the service asks and adds and removes the stations' media legs.
"""

from __future__ import annotations

import logging
from typing import Any

from node.errors import EngineError

__all__ = ["EngineEchoLink"]

log = logging.getLogger(__name__)


class EngineEchoLink:
    """EchoLink's ports and legs on a running engine."""

    def __init__(self, engine: Any, bind_ip: str, *, dtmf: bool = False) -> None:
        """`dtmf`: decode DTMF tones in the stations' audio (`[dtmf] inband` for links)."""
        self._engine = engine
        self._dtmf = dtmf
        try:
            self.audio_addr, self.control_addr = engine.echolink_open(bind_ip)
        except OSError as exc:
            raise EngineError(f"EchoLink ports on {bind_ip}: {exc}") from exc
        log.info("EchoLink ports %s:%d and :%d", bind_ip, self.audio_addr[1], self.control_addr[1])

    def send(self, kind: str, data: bytes, ip: str) -> None:
        try:
            self._engine.echolink_send(kind, data, ip)
        except OSError as exc:
            # A datagram that cannot go is a lost datagram (the protocol resends), never fatal.
            log.debug("EchoLink %s to %s not sent: %s", kind, ip, exc)

    def add_leg(self, leg: int, ip: str) -> None:
        self._engine.add_echolink_leg(leg, ip, dtmf=self._dtmf)

    def remove_leg(self, leg: int) -> None:
        self._engine.remove_echolink_leg(leg)

    def counters(self) -> dict[str, int]:
        return dict(self._engine.echolink_counters())

    def leg_stats(self, leg: int) -> dict[str, int] | None:
        stats = self._engine.echolink_leg_stats(leg)
        return None if stats is None else dict(stats)

    def close(self) -> None:
        self._engine.echolink_close()
