"""The TUI's text: every field fits its column at 80 columns, in the worst cases a snapshot can
hold (7-digit EchoLink-style node numbers, long lists of nodes behind a link, day-long links)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from node.tui import view
from node.tui.app import NodeApp
from tests.in_process import in_process_node, node_config
from tests.tui.screen import screen_lines

LINE_WIDTH = view.LINE_WIDTH


def link(node: str, **fields: Any) -> dict[str, Any]:
    base = {
        "node": node,
        "call": 1234,
        "mode": "transceive",
        "direction": "outbound",
        "state": "up",
        "keyed": False,
        "last_keyed_s": None,
        "connected_s": 12.0,
        "codec": "ulaw",
        "nodes": [],
        "permanent": False,
        "addr": "192.0.2.10:4569",
        "newkey": "newkey1",
    }
    return {**base, **fields}


WORST = {
    "node_id": "3999999",
    "listening": False,
    "registered": False,
    "registration": {
        "method": "iax2",
        "state": "registering",
        "perceived_addr": None,
        "last_failure": None,
    },
    "calls": [
        {
            "id": 32767,
            "peer": "a-very-long-username-indeed",
            "addr": "192.0.2.1:4569",
            "direction": "inbound",
            "state": "ringing",
            "codec": "slin16",
            "duration_s": 400000.0,
            "keyed": True,
            "health": {"rtt_ms": 59999, "rx": {"loss_pct": 100.0}, "peer": None},
        }
    ],
    "links": [
        link(
            "3123456",
            mode="connecting",
            state="connecting",
            connected_s=None,
            nodes=[f"T{n}" for n in range(2000, 2040)],
        ),
        link("2000", state="retrying", keyed=True, last_keyed_s=0.0, connected_s=None),
        link("2001", mode="monitor", last_keyed_s=100000.0, connected_s=3 * 86400.0),
    ]
    + [link(str(4000 + i), nodes=["R4100", "C4101"]) for i in range(8)],
    "tx": {"keyed": True, "timeout_s": 180, "timeout_remaining_s": 179.9},
    "bridge": {"mode": "conference", "mix_minus": True, "include_local_radio": True},
    "audio": {"backend": "sounddevice", "running": False},
}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0, "0:00"), (59.9, "0:59"), (61, "1:01"), (3600, "1:00:00"), (90061, "1d01h")],
)
def test_clock(seconds: float | None, text: str) -> None:
    assert view.clock(seconds) == text


def test_nodes_behind_shortens_with_a_count() -> None:
    assert view.nodes_behind([], 17) == "-"
    assert view.nodes_behind(["T2001", "R2002"], 17) == "T2001 R2002"
    many = [f"T{n}" for n in range(2000, 2010)]
    short = view.nodes_behind(many, 17)
    assert short == "T2000 T2001 +8" and len(short) <= 17
    assert view.nodes_behind(["T3123456"], 5) == "+1"


def test_every_cell_fits_its_column() -> None:
    for row in (view.link_row(li) for li in WORST["links"]):
        for value, (label, width) in zip(row, view.LINK_COLUMNS, strict=True):
            assert len(value) <= width, (label, value)
    for row in (view.call_row(c) for c in WORST["calls"]):
        # The peer is the one free-form field: shortened by the table, the rest fit.
        for value, (label, width) in zip(row, view.CALL_COLUMNS, strict=True):
            assert label == "Peer" or len(value) <= width, (label, value)
    widths = [w + 2 for _, w in view.LINK_COLUMNS]  # one column of padding on each side
    assert sum(widths) <= 80 - 1  # and the vertical scroll bar


def test_status_lines_fit_and_say_everything_in_words() -> None:
    lines = [view.status_line(WORST), view.bridge_line(WORST), view.tx_line(WORST)]
    assert all(len(line) <= LINE_WIDTH for line in lines), lines
    assert lines[0] == "Node 3999999 · Inbound: OFF · Registration: registering"
    assert (
        lines[1] == "Bridge: conference, mix-minus, local radio in · Audio: sounddevice (stopped)"
    )
    assert lines[2] == "TX: KEYED by operator · time-out in 2:59 · u unkeys · RX: 2000 +1"
    idle = {**WORST, "tx": {"keyed": False, "timeout_s": 180}, "links": [], "calls": []}
    assert view.tx_line(idle) == "TX: idle (time-out 180 s)"
    assert all(
        len("  ".join(f"{k} {label}" for k, label in line)) <= LINE_WIDTH for line in view.MENU
    )


def test_registration_words() -> None:
    assert view.registration_text({"node_id": None}) == "not configured"
    assert view.registration_text({"node_id": "2001", "registered": True}) == "registered"
    unconfigured = {"node_id": None, "registration": {"method": None, "state": "unregistered"}}
    assert view.registration_text(unconfigured) == "not configured"
    reg = {"state": "registered", "method": "iax2", "perceived_addr": "203.0.113.5:4569"}
    assert view.registration_text({"registration": reg}) == "registered (iax2) as 203.0.113.5:4569"
    failed = {"state": "failed", "method": "http", "last_failure": "HTTP 403 " + "x" * 100}
    snap = {"node_id": "2001", "listening": True, "registration": failed}
    assert view.registration_text(snap).startswith("failed: HTTP 403")
    line = view.status_line(snap)
    assert len(line) == view.LINE_WIDTH and line.endswith("…")
    # A tunnel's state comes before the registration, so a long failure cannot hide it.
    line = view.status_line({**snap, "tunnel": {"state": "handshaking"}})
    assert line.startswith("Node 2001 · Inbound: ON · WG: handshaking · Registration: failed")
    assert len(line) == view.LINE_WIDTH


def test_what_quitting_drops() -> None:
    assert view.dropped_on_quit({"links": [], "calls": [], "tx": {"keyed": False}}) is None
    assert view.dropped_on_quit(WORST) == "11 links, 1 call and the key"


def test_the_worst_case_on_an_80x24_screen(tmp_path: Path) -> None:
    """The app painted with the worst snapshot: every link row that is on screen shows its
    node, mode, state and keyed state whole; the menu and the status lines are all there."""

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml")) as node:
            app = NodeApp(node.controller)
            async with app.run_test(size=(80, 24)) as pilot:
                app._paint(WORST)
                await pilot.pause()
                lines = screen_lines(app)
                assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
                assert lines[0].strip() == view.status_line(WORST)
                assert lines[2].strip().startswith("TX: KEYED")
                rows = {
                    li["node"]: line.split()
                    for line in lines
                    for li in WORST["links"]
                    if line.split()[:1] == [li["node"]]
                }
                assert len(rows) >= 5  # the table shows several links at once, the rest scroll
                for li in WORST["links"]:
                    if li["node"] in rows:
                        cells = rows[li["node"]]
                        assert cells[1:4] == [
                            li["mode"],
                            li["state"],
                            "KEYED" if li["keyed"] else "-",
                        ]
                assert rows["3123456"][-2:] == ["T2001", "+38"]
                assert lines[-2].strip().startswith("d Dial") and lines[-1].strip().endswith(
                    "q Quit"
                )

    asyncio.run(scenario())


HEALTH = {
    "rtt_ms": 42,
    "rx": {
        "jitter_ms": 3,
        "loss_pct": 0.3,
        "lost": 3,
        "late": 0,
        "frames_in": 997,
        "delay_ms": 60,
        "target_ms": 60,
    },
    "peer": {"jitter_ms": 7, "loss_pct": 1, "lost": 9, "packets": 900, "delay_ms": 40},
    "degraded": False,
}


def test_health_in_words() -> None:
    assert view.health_text(HEALTH) == (
        "RTT 42 ms · in: jitter 3 ms, loss 0.3 %, buffer 60 ms · out: jitter 7 ms, loss 1 %"
    )
    fresh = {"rtt_ms": None, "rx": None, "peer": None}
    assert view.health_text(fresh) == "RTT -"
    assert view.health_text(None) == "no figures yet"
    assert view.health_text({**HEALTH, "peer": None, "degraded": True}) == (
        "DEGRADED · RTT 42 ms · in: jitter 3 ms, loss 0.3 %, buffer 60 ms"
    )
    assert view.health_cell(HEALTH) == "42ms 0.3%"
    assert view.health_cell(fresh) == "- -"
    assert view.health_cell(None) == "-"
    # The detail line of a link with a call carries its health; a degraded link says so in
    # its State column.
    assert "RTT 42 ms · in: jitter 3 ms" in view.link_detail(link("2000", health=HEALTH))
    assert "RTT" not in view.link_detail(link("2000", call=None, health=None))
    assert view.link_row(link("2000", health={**HEALTH, "degraded": True}))[2] == "DEGRADED"
    assert view.link_row(link("2000", health=HEALTH))[2] == "up"


def test_the_health_event_patches_the_rows_it_names() -> None:
    snap = {
        "calls": [{"id": 3, "health": None}, {"id": 4, "health": None}],
        "links": [link("2000", call=7), link("2001", call=8)],
    }
    patched = view.with_health(
        snap,
        [{"id": 3, "health": HEALTH}],
        [{"node": "2001", "call": 8, "health": HEALTH}, {"node": "2002", "call": 9, "health": {}}],
    )
    assert [c["health"] for c in patched["calls"]] == [HEALTH, None]
    assert [li.get("health") for li in patched["links"]] == [None, HEALTH]
    assert snap["calls"][0]["health"] is None  # the snapshot itself is left alone


def test_a_usrp_caller_shows_on_the_tx_line_while_they_talk() -> None:
    caller = {"callsign": "N0CALL", "source_id": 3112345, "talkgroup": 91}
    snap = {"tx": {"keyed": False, "timeout_s": 180}, "radio": {"usrp": {"caller": caller}}}
    assert view.tx_line(snap) == "TX: idle (time-out 180 s) · RX: N0CALL TG 91"
    snap["radio"]["usrp"]["caller"] = None
    assert view.tx_line(snap) == "TX: idle (time-out 180 s)"


def test_an_echolink_station_shows_its_callsign_not_a_handshake() -> None:
    station = link(
        "3123456",
        call=None,
        codec="gsm",
        newkey=None,
        health=None,
        echolink={"callsign": "W1XYZ-R", "name": "Pat", "leg": 32768},
    )
    detail = view.link_detail(station)
    assert "EchoLink W1XYZ-R (Pat)" in detail and "handshake" not in detail
    assert view.link_row(station)[0] == "3123456"


def reading(lufs: float | None, peak: float = -100.0, clipped: int = 0) -> dict:
    return {"lufs": lufs, "peak_dbfs": peak, "clipped": clipped, "speech": False}


LEVELS = {
    "calls": [{"id": 3, "rx": reading(-31.87, -14.19), "tx": reading(-20.2), "gain_db": 11.83}],
    "links": [
        {
            "node": "2000",
            "call": 7,
            "rx": reading(-13.8, -0.17, 508),
            "tx": reading(None),
            "gain_db": None,
        }
    ],
    "radio": {"rx": reading(None), "tx": reading(-24.0, -9.5)},
}


def test_levels_in_words_and_on_one_line() -> None:
    assert view.levels_text(LEVELS["links"][0]) == (
        "level in -13.8 LUFS (peak -0.2 dBFS, 508 clipped), out - LUFS"
    )
    assert view.levels_text(LEVELS["calls"][0]) == (
        "level in -31.9 LUFS (peak -14.2 dBFS), out -20.2 LUFS, gain +11.8 dB"
    )
    assert view.levels_text(None) == "no level yet"
    assert view.levels_line({"levels": LEVELS}) == (
        "LUFS in/out: radio -/-24.0 · 2000 -13.8/- · call 3 -31.9/-20.2 +11.8dB"
    )
    assert view.levels_line({}) == "LUFS in/out: -"
    # A hub's many calls: what fits, and a count of the rest.
    many = {**LEVELS, "calls": [{**LEVELS["calls"][0], "id": i} for i in range(40)]}
    line = view.levels_line({"levels": many})
    assert len(line) <= view.LINE_WIDTH and line.endswith(" · +39"), line
    # The detail line of a link carries its meters.
    assert "level in -13.8 LUFS" in view.link_detail(link("2000", call=7), LEVELS)
    assert "level" not in view.link_detail(link("2000", call=7))
