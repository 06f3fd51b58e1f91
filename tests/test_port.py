"""The node's IAX2 port: owners of call numbers, and what it logs of refused callers."""

from __future__ import annotations

import logging

import pytest

from node.config import NodeConfig
from node.iax2.endpoint import EndpointOutput, InboundRejected
from node.port import REFUSAL_LOG_INTERVAL
from tests.port import make_port
from tests.service_context import recording_context


def test_refused_calls_are_logged_at_most_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A flood of NEW frames from spoofed sources is refused frame by frame: the log says so
    # once per interval, with the count of the others, not once per datagram.
    clock = [100.0]
    rec = recording_context(NodeConfig(), lambda: clock[0])
    port = make_port(rec.ctx)
    refused = InboundRejected(("192.0.2.1", 4569), "", "", "call token required", 0)
    with caplog.at_level(logging.INFO, logger="node.port"):
        port._take(EndpointOutput(events=tuple([refused] * 1000)))
        clock[0] += REFUSAL_LOG_INTERVAL
        port._take(EndpointOutput(events=(refused,)))
    lines = [r.getMessage() for r in caplog.records if "refused inbound call" in r.getMessage()]
    assert lines == [
        "refused inbound call from 192.0.2.1: call token required",
        "refused inbound call from 192.0.2.1: call token required (999 more refused since the "
        "last report)",
    ]
    # Refusals are the port's own: nothing goes up to an owner.
    assert port.take_events() == []


def test_owners_are_recorded_by_number_and_forgotten_when_released() -> None:
    rec = recording_context(NodeConfig(), lambda: 5.0)
    port = make_port(rec.ctx)
    callno = port.allocate_callno("registration", 5.0)
    assert port.owner(callno) == "registration"
    port.release_callno(callno, 5.0)
    assert port.owner(callno) is None
    port.claim(42, "links")
    assert port.owner(42) == "links"
    port.disown(42)
    assert port.owner(42) is None
