"""The link reporter alone: what each of the link machine's events becomes (bus `link` events,
announcements, status-post triggers, remote digits)."""

from __future__ import annotations

import logging

import pytest

from node.config import NodeConfig
from node.effects import Announce, AnnounceTelemetry, DigitReceived, LinksChanged
from node.events import Link
from node.links import network as ln
from node.links import text as t
from node.links.health import HealthChanged, Thresholds
from node.links.report import LinkReporter
from tests.service_context import recording_context


def test_each_link_event_reaches_its_audience() -> None:
    recorded = recording_context(NodeConfig())
    ctx, published = recorded.ctx, recorded.published
    report = LinkReporter(ctx)
    effects = [
        report.report(ln.LinkConnected("2001", 5, ln.LinkMode.TRANSCEIVE, "outbound")),
        report.report(ln.LinkKeyed("2001", 5, True)),
        report.report(ln.RemoteDigitReceived("2001", 5, "7")),
        report.report(ln.TelemetryReceived("2001", 5, t.Telemetry("2001", "CONNECTED", ("2002",)))),
        report.report(ln.LinkDisconnected("2001", 5, "hung up")),
    ]
    ctx.stopping.set()
    effects.append(report.report(ln.LinkDisconnected("2002", None, "node shutting down")))
    assert published == [
        Link(kind="connected", node="2001", call=5, mode="transceive", direction="outbound"),
        Link(kind="keyed", node="2001", call=5, keyed=True),
        Link(kind="disconnected", node="2001", call=5, reason="hung up"),
        Link(kind="disconnected", node="2002", call=None, reason="node shutting down"),
    ]
    routed = [event for fx in effects for event in fx.events]
    # No announcement of what ends while the node shuts down; every link that comes or goes
    # is a status post.
    assert [e for e in routed if not isinstance(e, LinksChanged)] == [
        Announce("link_connected", node="2001"),
        DigitReceived("remote 2001", 5, "7"),
        AnnounceTelemetry("CONNECTED", ("2002",)),
        Announce("link_disconnected", node="2001"),
    ]
    assert sum(isinstance(e, LinksChanged) for e in routed) == 3


def test_health_crossings_become_link_events_with_their_figures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorded = recording_context(NodeConfig())
    report = LinkReporter(recorded.ctx)
    limits = Thresholds(loss_pct=5.0, rtt_ms=500)
    with caplog.at_level(logging.INFO, "node.links.report"):
        effects = [
            report.health(HealthChanged("2001", 5, True, 8.0, None, limits, "loss 8 % >= 5 %")),
            report.health(HealthChanged("2001", 5, False, 0.0, 40, limits, "loss and RTT back")),
        ]
    assert recorded.published == [
        Link(
            kind=kind,
            node="2001",
            call=5,
            reason=reason,
            loss_pct=loss,
            rtt_ms=rtt,
            warn_loss_pct=5.0,
            warn_rtt_ms=500,
        )
        for kind, reason, loss, rtt in (
            ("degraded", "loss 8 % >= 5 %", 8.0, None),
            ("recovered", "loss and RTT back", 0.0, 40),
        )
    ]
    # On the wire an unknown figure is null, not left out.
    assert recorded.published[0].to_json() == {
        "event": "link",
        "kind": "degraded",
        "node": "2001",
        "call": 5,
        "reason": "loss 8 % >= 5 %",
        "loss_pct": 8.0,
        "rtt_ms": None,
        "warn_loss_pct": 5.0,
        "warn_rtt_ms": 500,
    }
    # The other kinds keep their shape.
    assert "rtt_ms" not in Link(kind="keyed", node="2001", call=5, keyed=True).to_json()
    assert "link to node 2001 degraded: loss 8 % >= 5 % (loss 8 %, RTT unknown)" in caplog.text
    assert "link to node 2001 recovered (loss 0 %, RTT 40 ms)" in caplog.text
    assert not any(effects)  # nothing is announced on the air
