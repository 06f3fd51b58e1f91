"""What announcements say, spoken and in CW."""

from __future__ import annotations

import pytest

from node.announce.phrases import (
    Phrase,
    event_phrase,
    spell,
    station_id,
    status_phrase,
    telemetry_phrase,
)


def test_numbers_and_callsigns_are_spelled_for_speech() -> None:
    assert spell("2000") == "2 0 0 0"
    assert station_id("w1aw/r") == Phrase("W 1 A W stroke R", "W1AW/R")


def test_events() -> None:
    assert event_phrase("link_connected", node="2000") == Phrase(
        "node 2 0 0 0 connected", "2000 CON"
    )
    assert event_phrase("link_disconnected", node="2001").speech == "node 2 0 0 1 disconnected"
    assert event_phrase("incoming_call", peer="3001").speech == "incoming call from 3 0 0 1"
    # Whatever a caller calls itself, only letters, digits and spaces reach the TTS binary.
    said = event_phrase("incoming_call", peer="Bob; rm -rf / $(x)").speech
    assert said == "incoming call from Bob rm rf x"
    assert event_phrase("registered", me="2000").speech == "node 2 0 0 0 registered"
    assert event_phrase("register_failed").cw == "REG FAIL"
    with pytest.raises(ValueError):
        event_phrase("ringing")


def test_telemetry_from_other_nodes_as_app_rpt_says_it() -> None:
    assert telemetry_phrase("CONNECTED", ("2001", "2002"), "2000") == (
        "link_connected",
        Phrase("node 2 0 0 2 connected to node 2 0 0 1", "2002 CON 2001"),
    )
    assert telemetry_phrase("REMDISC", ("2003",), "2000") == (
        "link_disconnected",
        Phrase("node 2 0 0 3 disconnected", "2003 DISC"),
    )
    assert telemetry_phrase("CONNFAIL", ("2004",), None) == (
        "link_disconnected",
        Phrase("node 2 0 0 4 connection failed", "2004 FAIL"),
    )
    # About this node (its own link events say it), or not announced at all.
    assert telemetry_phrase("CONNECTED", ("2000", "2002"), "2000") is None
    assert telemetry_phrase("COMPLETE", (), "2000") is None
    assert telemetry_phrase("REMDISC", ("x",), "2000") is None


def test_status() -> None:
    assert status_phrase([]) == Phrase("no links", "NO LINKS")
    assert status_phrase(["T2001", "R2002", "C2003"]) == Phrase(
        "linked to node 2 0 0 1, node 2 0 0 2 monitor, node 2 0 0 3 connecting",
        "LINKS 2001 2002 2003",
    )
