"""The link reporter alone: what each of the link machine's events becomes (bus `link` events,
announcements, status-post triggers, remote digits)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from node.config import NodeConfig
from node.events import Link
from node.links import network as ln
from node.links import text as t
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
