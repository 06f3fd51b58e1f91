"""What the node does with the link machine's events: `link` bus events, announcements,
status-post triggers, and the `D` digits a linked node sends us, to the commands service.

The links service hands each `LinkEvent` here (`report`) after carrying out the machine's
actions; nothing here reaches back into the machine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from node.calls.service import Announce, Digits
from node.context import NodeContext
from node.events import Link
from node.links import network as ln
from node.links.health import HealthChanged

__all__ = ["LinkReporter", "Telemetry"]

log = logging.getLogger(__name__)


class Telemetry(Announce, Protocol):
    """The announcements, with the telemetry a linked node sends."""

    def telemetry(self, token: str, args: Iterable[str]) -> None: ...


class LinkReporter:
    """Publishes link events to the bus, the announcer, the status poster and the commands."""

    def __init__(self, ctx: NodeContext, announce: Telemetry, digits: Digits) -> None:
        self._ctx = ctx
        self._bus = ctx.bus
        self._announce = announce
        self._digits = digits
        #: Called when a link comes up or goes down (`[statpost]`).
        self.links_changed: Callable[[], None] | None = None

    def health(self, event: HealthChanged) -> None:
        """A link's loss or RTT crossed a threshold (`[links] warn_loss_pct`, `warn_rtt_ms`)."""
        loss = "unknown" if event.loss_pct is None else f"{event.loss_pct:g} %"
        rtt = "unknown" if event.rtt_ms is None else f"{event.rtt_ms} ms"
        if event.degraded:
            log.warning(
                "link to node %s degraded: %s (loss %s, RTT %s)",
                event.node,
                event.reason,
                loss,
                rtt,
            )
        else:
            log.info("link to node %s recovered (loss %s, RTT %s)", event.node, loss, rtt)
        self._bus.publish(
            Link(
                kind="degraded" if event.degraded else "recovered",
                node=event.node,
                call=event.callno,
                reason=event.reason,
                loss_pct=event.loss_pct,
                rtt_ms=event.rtt_ms,
                warn_loss_pct=event.thresholds.loss_pct,
                warn_rtt_ms=event.thresholds.rtt_ms,
            )
        )

    def report(self, event: ln.LinkEvent) -> None:
        if self.links_changed is not None and isinstance(
            event, ln.LinkConnected | ln.LinkDisconnected
        ):
            self.links_changed()
        if isinstance(event, ln.LinkConnected):
            log.info("link to node %s up (%s, %s)", event.node, event.mode.value, event.direction)
            self._announce.event("link_connected", node=event.node)
            self._bus.publish(
                Link(
                    kind="connected",
                    node=event.node,
                    call=event.callno,
                    mode=event.mode.value,
                    direction=event.direction,
                )
            )
        elif isinstance(event, ln.LinkDisconnected):
            log.info("link to node %s down: %s", event.node, event.reason)
            if not self._ctx.stopping.is_set():
                self._announce.event("link_disconnected", node=event.node)
            self._bus.publish(
                Link(kind="disconnected", node=event.node, call=event.callno, reason=event.reason)
            )
        elif isinstance(event, ln.LinkKeyed):
            self._bus.publish(
                Link(kind="keyed", node=event.node, call=event.callno, keyed=event.keyed)
            )
        elif isinstance(event, ln.RemoteDigitReceived):
            self._digits.digit(f"remote {event.node}", event.callno, event.digit)
        elif isinstance(event, ln.TelemetryReceived):
            tel = event.telemetry
            log.info("telemetry from node %s: %s %s", tel.source, tel.token, ",".join(tel.args))
            self._announce.telemetry(tel.token, tel.args)
