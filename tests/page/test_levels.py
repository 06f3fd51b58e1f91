"""The page's loudness line per link and call, and the radio's, in a real browser fed a scripted
stream: the snapshot's `levels` and the `levels` event that refreshes them every second
(without a line in the event list)."""

from __future__ import annotations

from typing import Any

from tests.page import test_rendering as rendering
from tests.page.browser import StatusPage, expect
from tests.page.scripted import ScriptedNode
from tests.page.test_rendering import link

scripted = rendering.scripted
view = rendering.view


def reading(lufs: float | None, peak: float = -100.0, clipped: int = 0) -> dict[str, Any]:
    return {"lufs": lufs, "peak_dbfs": peak, "clipped": clipped, "speech": False}


def levels(rx: dict[str, Any], tx: dict[str, Any], gain: float | None) -> dict[str, Any]:
    return {"rx": rx, "tx": tx, "gain_db": gain}


CALL = {
    "id": 3,
    "peer": "2600",
    "addr": "192.0.2.30:4569",
    "direction": "inbound",
    "state": "up",
    "codec": "ulaw",
    "duration_s": 3.0,
    "keyed": False,
}


def test_levels_show_per_link_call_and_radio_and_follow_the_levels_event(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    scripted.snapshot_now(
        links=[link("2000", 7), link("2010", None, mode="connecting", state="connecting")],
        calls=[CALL],
        levels={
            "calls": [{"id": 3, **levels(reading(-31.87, -14.19), reading(-20.2, -6.3), 11.83)}],
            "links": [
                {
                    "node": "2000",
                    "call": 7,
                    **levels(reading(-13.8, -0.17, 508), reading(None), None),
                }
            ],
            "radio": {"rx": reading(None), "tx": reading(-24.0, -9.5)},
        },
    )
    link_line = loc('#conn-rows tr[data-node="2000"] th .levels')
    expect(link_line).to_have_text("Level in -13.8 LUFS (peak -0.2 dBFS), 508 clipped · out —")
    call_line = loc('#conn-rows tr[data-kind="call"] th .levels')
    expect(call_line).to_have_text(
        "Level in -31.9 LUFS (peak -14.2 dBFS) · out -20.2 LUFS (peak -6.3 dBFS) · gain +11.8 dB"
    )
    # A link with no call has no meters.
    expect(loc('#conn-rows tr[data-node="2010"] th .levels')).to_have_count(0)
    expect(loc("#radio-levels")).to_have_text("Level in — · out -24.0 LUFS (peak -9.5 dBFS)")

    events_before = loc("#events li").count()
    scripted.send(
        {
            "event": "levels",
            "calls": [{"id": 3, **levels(reading(-30.5, -12.0), reading(-20.0, -6.0), 10.5)}],
            "links": [],
            "radio": None,
        }
    )
    expect(call_line).to_have_text(
        "Level in -30.5 LUFS (peak -12.0 dBFS) · out -20.0 LUFS (peak -6.0 dBFS) · gain +10.5 dB"
    )
    expect(link_line).to_have_count(0)
    expect(loc("#radio-levels-fact")).to_be_hidden()
    assert loc("#events li").count() == events_before
