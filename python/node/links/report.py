"""What the node does with the link machine's events: `link` bus events, and the
announcements, status-post triggers and `D` digits (a linked node's, for the commands) they mean.

The router routes each `LinkEvent` the links service returned here (`report`), and each health
crossing (`health`); what they mean for other rooms comes back as `Effects` for the router to
route. Nothing here reaches back into the machine or across to another service.
"""

from __future__ import annotations

import logging

from node.context import NodeContext
from node.effects import NOTHING, Announce, AnnounceTelemetry, DigitReceived, Effects, LinksChanged
from node.events import Link
from node.links import network as ln
from node.links.health import HealthChanged

__all__ = ["LinkReporter"]

log = logging.getLogger(__name__)


class LinkReporter:
    """Publishes link events to the bus; what they mean for the announcements, the status
    poster and the commands, as effects."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx
        self._bus = ctx.bus

    def health(self, event: HealthChanged) -> Effects:
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
        return NOTHING

    def report(self, event: ln.LinkEvent) -> Effects:
        if isinstance(event, ln.LinkConnected):
            log.info("link to node %s up (%s, %s)", event.node, event.mode.value, event.direction)
            self._bus.publish(
                Link(
                    kind="connected",
                    node=event.node,
                    call=event.callno,
                    mode=event.mode.value,
                    direction=event.direction,
                )
            )
            return Effects(events=(Announce("link_connected", node=event.node), LinksChanged()))
        if isinstance(event, ln.LinkDisconnected):
            log.info("link to node %s down: %s", event.node, event.reason)
            self._bus.publish(
                Link(kind="disconnected", node=event.node, call=event.callno, reason=event.reason)
            )
            if self._ctx.stopping.is_set():
                return Effects(events=(LinksChanged(),))
            return Effects(events=(Announce("link_disconnected", node=event.node), LinksChanged()))
        if isinstance(event, ln.LinkKeyed):
            self._bus.publish(
                Link(kind="keyed", node=event.node, call=event.callno, keyed=event.keyed)
            )
        elif isinstance(event, ln.RemoteDigitReceived):
            digit = DigitReceived(f"remote {event.node}", event.callno, event.digit)
            return Effects(events=(digit,))
        elif isinstance(event, ln.TelemetryReceived):
            tel = event.telemetry
            log.info("telemetry from node %s: %s %s", tel.source, tel.token, ",".join(tel.args))
            return Effects(events=(AnnounceTelemetry(tel.token, tuple(tel.args)),))
        return NOTHING
