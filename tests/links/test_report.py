"""The link reporter alone: what each of the link machine's events becomes (bus `link` events,
announcements, status-post triggers, remote digits)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pytest

from node.config import NodeConfig
from node.events import Link
from node.links import network as ln
from node.links import text as t
from node.links.health import HealthChanged, Thresholds
from node.links.report import LinkReporter
from tests.service_context import recording_context


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def event(self, name: str, *, peer: str = "", node: str = "") -> None:
        self.seen.append(("announce", name, node))

    def telemetry(self, token: str, args: Iterable[str]) -> None:
        self.seen.append(("telemetry", token, tuple(args)))

    def digit(self, source: str, call: int | None, digit: str, *, inband: bool = False) -> None:
        self.seen.append(("digit", source, call, digit))

    def forget(self, source: str) -> None:
        raise AssertionError("links never forget a source")


def test_each_link_event_reaches_its_audience() -> None:
    recorded = recording_context(NodeConfig())
    ctx, published = recorded.ctx, recorded.published
    rec = Recorder()
    report = LinkReporter(ctx, rec, rec)
    changed: list[str] = []
    report.links_changed = lambda: changed.append("links")
    report.report(ln.LinkConnected("2001", 5, ln.LinkMode.TRANSCEIVE, "outbound"))
    report.report(ln.LinkKeyed("2001", 5, True))
    report.report(ln.RemoteDigitReceived("2001", 5, "7"))
    report.report(ln.TelemetryReceived("2001", 5, t.Telemetry("2001", "CONNECTED", ("2002",))))
    report.report(ln.LinkDisconnected("2001", 5, "hung up"))
    ctx.stopping.set()
    report.report(ln.LinkDisconnected("2002", None, "node shutting down"))
    assert published == [
        Link(kind="connected", node="2001", call=5, mode="transceive", direction="outbound"),
        Link(kind="keyed", node="2001", call=5, keyed=True),
        Link(kind="disconnected", node="2001", call=5, reason="hung up"),
        Link(kind="disconnected", node="2002", call=None, reason="node shutting down"),
    ]
    # No announcement of what ends while the node shuts down.
    assert rec.seen == [
        ("announce", "link_connected", "2001"),
        ("digit", "remote 2001", 5, "7"),
        ("telemetry", "CONNECTED", ("2002",)),
        ("announce", "link_disconnected", "2001"),
    ]
    assert changed == ["links"] * 3


def test_health_crossings_become_link_events_with_their_figures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorded = recording_context(NodeConfig())
    rec = Recorder()
    report = LinkReporter(recorded.ctx, rec, rec)
    limits = Thresholds(loss_pct=5.0, rtt_ms=500)
    with caplog.at_level(logging.INFO, "node.links.report"):
        report.health(HealthChanged("2001", 5, True, 8.0, None, limits, "loss 8 % >= 5 %"))
        report.health(HealthChanged("2001", 5, False, 0.0, 40, limits, "loss and RTT back"))
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
    assert rec.seen == []  # nothing is announced on the air
