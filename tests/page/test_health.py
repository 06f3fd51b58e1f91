"""The page's network-health line per link and call, in a real browser fed a scripted stream:
the snapshot's `health` objects, the `health` event that refreshes them every few seconds
(without a line in the event list), `link` degraded/recovered, and the registration warning."""

from __future__ import annotations

import re
from typing import Any

from tests.page import test_rendering as rendering
from tests.page.browser import StatusPage, expect
from tests.page.scripted import ScriptedNode
from tests.page.test_rendering import link

# The fixtures of the rendering tests: a scripted node, and the page open on it.
scripted = rendering.scripted
view = rendering.view


def health(
    rtt: int | None, jitter: int, loss: float, delay: int, peer: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "rtt_ms": rtt,
        "rx": {
            "jitter_ms": jitter,
            "loss_pct": loss,
            "lost": 3,
            "late": 0,
            "frames_in": 997,
            "delay_ms": delay,
            "target_ms": 60,
        },
        "peer": peer,
        "degraded": False,
    }


PEER = {
    "jitter_ms": 7,
    "loss_pct": 1,
    "lost": 9,
    "packets": 900,
    "delay_ms": 40,
    "dropped": 0,
    "out_of_order": 0,
}


def crossing(kind: str, reason: str, loss: float, rtt: int) -> dict[str, Any]:
    """A `link` event of kind degraded or recovered for link 2000 (call 7)."""
    return {
        "event": "link",
        "kind": kind,
        "node": "2000",
        "call": 7,
        "reason": reason,
        "loss_pct": loss,
        "rtt_ms": rtt,
        "warn_loss_pct": 5.0,
        "warn_rtt_ms": 500,
    }


def test_health_figures_show_per_link_and_call_and_follow_the_health_event(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    scripted.snapshot_now(
        links=[
            link("2000", 7, health=health(42, 3, 0.3, 60, PEER)),
            # Just up: no round measured yet, no PONG from the far end yet.
            link("2005", 9, health={**health(None, 0, 0.0, 0), "peer": None}),
            link("2010", None, mode="connecting", state="connecting", health=None),
        ],
        calls=[
            {
                "id": 3,
                "peer": "2600",
                "addr": "192.0.2.30:4569",
                "direction": "inbound",
                "state": "up",
                "codec": "ulaw",
                "duration_s": 3.0,
                "keyed": False,
                "health": health(18, 1, 0.0, 40),
            }
        ],
    )
    line_2000 = loc('#conn-rows tr[data-node="2000"] th .health')
    expect(line_2000).to_have_text(
        "RTT 42 ms · in: jitter 3 ms, loss 0.3 %, buffer 60 ms · out: jitter 7 ms, loss 1 %"
    )
    expect(loc('#conn-rows tr[data-node="2005"] th .health')).to_have_text(
        "RTT — · in: jitter 0 ms, loss 0 %, buffer 0 ms"
    )
    # A link with no call has no figures at all: its header is the node alone.
    expect(loc('#conn-rows tr[data-node="2010"] th')).to_have_text("2010")
    call_line = loc('#conn-rows tr[data-kind="call"] th .health')
    expect(call_line).to_have_text("RTT 18 ms · in: jitter 1 ms, loss 0 %, buffer 40 ms")
    # The cells of the row are what they were: the health line lives in the row's header.
    expect(loc('#conn-rows tr[data-node="2000"] td')).to_have_count(7)

    events_before = loc("#events li").count()
    scripted.send(
        {
            "event": "health",
            "calls": [{"id": 3, "health": health(20, 2, 0.0, 40)}],
            "links": [
                {"node": "2000", "call": 7, "health": health(610, 25, 6.5, 120, PEER)},
                {"node": "2005", "call": 9, "health": health(55, 4, 0.0, 60, PEER)},
            ],
        }
    )
    expect(line_2000).to_have_text(
        "RTT 610 ms · in: jitter 25 ms, loss 6.5 %, buffer 120 ms · out: jitter 7 ms, loss 1 %"
    )
    expect(loc('#conn-rows tr[data-node="2005"] th .health')).to_have_text(re.compile("^RTT 55 ms"))
    expect(call_line).to_have_text(re.compile("^RTT 20 ms"))
    # Figures every few seconds are not events anyone needs listed.
    assert loc("#events li").count() == events_before

    scripted.send(crossing("degraded", "loss 6.5 % >= 5 % and RTT 610 ms >= 500 ms", 6.5, 610))
    expect(line_2000).to_have_text(re.compile(r"^Degraded · RTT 610 ms"))
    expect(line_2000).to_have_class(re.compile(r"\bdegraded\b"))
    expect(loc("#events li").first).to_have_text(
        re.compile(r"Link 2000 degraded: loss 6\.5 % >= 5 % and RTT 610 ms >= 500 ms$")
    )
    scripted.snapshot_now(
        registration={
            "method": "iax2",
            "state": "registered",
            "perceived_addr": "198.51.100.7:61234",
            "last_failure": None,
            "warning": "the registrar sees us at port 61234 but we are bound to port 4569",
        }
    )
    expect(loc("#reg")).to_have_text(
        "Registered (IAX2), seen as 198.51.100.7:61234 — warning: the registrar sees us at port "
        "61234 but we are bound to port 4569"
    )
    # The snapshot carries the links' health as the node last judged it.
    scripted.snapshot_now(
        links=[
            link("2000", 7, health={**health(610, 25, 6.5, 120, PEER), "degraded": True}),
            link("2005", 9, health=health(55, 4, 0.0, 60, PEER)),
        ],
    )
    expect(line_2000).to_have_class(re.compile(r"\bdegraded\b"))
    view.screenshots("page-health")

    scripted.send(crossing("recovered", "loss and RTT back in limits", 0.0, 45))
    expect(line_2000).not_to_have_class(re.compile(r"\bdegraded\b"))
    expect(line_2000).to_have_text(re.compile(r"^RTT 45 ms"))
    expect(loc("#events li").first).to_have_text(
        re.compile(r"Link 2000 recovered: loss and RTT back in limits$")
    )
