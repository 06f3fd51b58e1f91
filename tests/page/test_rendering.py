"""The page's rendering in a real browser, fed by a scripted stream of recorded events.

Links do not exist in the daemon yet; these tests feed the page snapshots and `link` events of
the link contract (BRIEF: `links`, `tx`, `registration`) through `ScriptedNode`, which serves
the page with the daemon's own routes and SSE framing, and assert what the browser shows: rows
appear, key, sort and leave; the transmit line and time-out countdown; the event list; text from
the network is shown as text; the stream is reopened after it ends or is refused.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.page.browser import StatusPage, expect
from tests.page.scripted import ScriptedNode

BASE: dict[str, Any] = {
    "node_id": "1999",
    "listening": True,
    "registered": True,
    "registration": {
        "method": "iax2",
        "state": "registered",
        "perceived_addr": "192.0.2.10:4569",
        "last_failure": None,
    },
    "tx": {"keyed": False, "timeout_s": 180, "timeout_remaining_s": None},
    "calls": [],
    "links": [],
    "bridge": {"mode": "bridge", "mix_minus": True, "include_local_radio": False},
    "audio": {"backend": "none", "rate": 16000, "input": None, "output": None, "running": True},
}


def link(node: str, call: int | None, **fields: Any) -> dict[str, Any]:
    return {
        "node": node,
        "call": call,
        "mode": "transceive",
        "direction": "outbound",
        "state": "up",
        "keyed": False,
        "last_keyed_s": None,
        "connected_s": 10.0,
        "codec": "ulaw",
        "nodes": [],
        "permanent": False,
        "addr": "192.0.2.20:4569",
        "newkey": "newkey",
        **fields,
    }


def keyed(node: str, call: int | None, on: bool) -> dict[str, Any]:
    return {"event": "link", "kind": "keyed", "node": node, "call": call, "keyed": on}


def expect_row(view: StatusPage, node: str, cells: str) -> Any:
    """The connections table's row of `node`, once its cells read `cells`: the texts split at
    "|", where one starting with "~" is a regular expression."""
    texts = [re.compile(c[1:]) if c.startswith("~") else c for c in cells.split("|")]
    row = view.page.locator(f'#conn-rows tr[data-node="{node}"]')
    expect(row.locator("td")).to_have_text(texts)
    return row


@pytest.fixture
def scripted() -> Iterator[ScriptedNode]:
    with ScriptedNode(copy.deepcopy(BASE)) as node:
        yield node


@pytest.fixture
def view(browser: Any, scripted: ScriptedNode) -> Iterator[StatusPage]:
    page = StatusPage(browser, scripted.base_url).open()
    try:
        expect(page.page.locator("#conn")).to_have_text("Live")
        yield page
        page.assert_read_only_and_local()
    finally:
        page.close()


def test_link_rows_appear_key_sort_and_leave(scripted: ScriptedNode, view: StatusPage) -> None:
    loc = view.page.locator
    expect(loc("#node-id")).to_have_text("1999")
    expect(loc("#reg")).to_have_text("Registered (IAX2), seen as 192.0.2.10:4569")
    expect(loc("#reg-failure")).to_have_text("none")
    expect(loc("#tx")).to_have_text("Idle")
    expect(loc("#tot")).to_have_text("Time-out timer: 3:00")
    expect(loc("#no-conns")).to_be_visible()
    expect(loc("#conns")).to_be_hidden()

    # The lifecycle event alone puts the row up; the snapshot after it fills in the rest.
    scripted.send(
        {
            "event": "link",
            "kind": "connected",
            "node": "2000",
            "call": 7,
            "mode": "transceive",
            "direction": "outbound",
        }
    )
    row_2000 = expect_row(view, "2000", r"Never|~00:00:0\d|OUT|Established|Transceive|—|—")
    expect(loc("#events li").first).to_have_text(
        re.compile(r"^\d\d:\d\d:\d\d\s*Link 2000 connected \(Transceive, outbound\)$")
    )
    scripted.snapshot_now(
        links=[
            link("2000", 7, connected_s=65.0, nodes=["T2001", "R2002", "C2003"]),
            link("2005", 9, direction="inbound", codec="slin16", permanent=True),
            link(
                "2010",
                None,
                mode="connecting",
                state="connecting",
                connected_s=None,
                codec=None,
            ),
        ]
    )
    expect_row(
        view,
        "2000",
        r"Never|~00:01:0[5-9]|OUT|Established|Transceive|µ-law|"
        "2001, 2002 (monitor), 2003 (connecting)",
    )
    row_2005 = expect_row(
        view, "2005", r"Never|~00:00:1\d|IN|Established|Transceive (permanent)|slin16|—"
    )
    row_2010 = expect_row(view, "2010", "Never|—|OUT|Connecting|Connecting|—|—")
    expect(row_2010).to_have_class(re.compile(r"\bpending\b"))
    expect(loc("#conn-count")).to_have_text("(3)")
    # Connected time counts on between snapshots.
    expect(row_2000.locator("td").nth(1)).to_have_text(re.compile(r"00:01:(0[7-9]|1\d)"))
    order = loc("#conn-rows tr th")
    expect(order).to_have_text(["2000", "2005", "2010"])

    # A link keys: its row says so at once and moves to the top; the TX line names the network.
    scripted.send(keyed("2005", 9, True))
    expect(row_2005).to_have_class(re.compile(r"\bkeyed\b"))
    expect(row_2005.locator("td").first).to_have_text("Keyed now")
    expect(loc("#tx")).to_have_text("Transmit - Network Source")
    expect(loc("#tx")).to_have_attribute("aria-live", "polite")
    expect(order).to_have_text(["2005", "2000", "2010"])
    view.screenshots("page-links")
    scripted.send(keyed("2005", 9, False))
    expect(row_2005.locator("td").first).to_have_text(re.compile(r"00:00:0\d"))
    expect(row_2005).not_to_have_class(re.compile(r"\bkeyed\b"))
    expect(loc("#tx")).to_have_text("Idle")
    # Most recently heard first, then the never-heard by node number.
    expect(order).to_have_text(["2005", "2000", "2010"])
    scripted.send(keyed("2000", 7, True))
    expect(order).to_have_text(["2000", "2005", "2010"])
    scripted.send(keyed("2000", 7, False))

    # The operator's own PTT is the local source; the time-out timer counts down locally.
    scripted.send(keyed("1999", None, True))
    expect(loc("#tx")).to_have_text("Transmit - Local Source")
    expect(loc("#events li").first).to_have_text(re.compile(r"Local source keyed$"))
    scripted.snapshot_now(tx={"keyed": True, "timeout_s": 180, "timeout_remaining_s": 170.0})
    expect(loc("#tot")).to_have_text(re.compile(r"^Time-out timer: 2:(50|4\d) left$"))
    expect(loc("#tot")).to_have_text(re.compile(r"^Time-out timer: 2:4\d left$"))
    scripted.send(keyed("1999", None, False))
    expect(loc("#tx")).to_have_text("Idle")
    expect(loc("#tot")).to_have_text("Time-out timer: 3:00")

    # Links leave: the event removes the row at once, the snapshot confirms.
    scripted.send(
        {"event": "link", "kind": "disconnected", "node": "2000", "call": 7, "reason": "by peer"}
    )
    expect(row_2000).to_have_count(0)
    expect(loc("#events li").first).to_have_text(re.compile(r"Link 2000 disconnected: by peer$"))
    scripted.snapshot_now(links=[])
    expect(loc("#conn-rows tr")).to_have_count(0)
    expect(loc("#no-conns")).to_be_visible()


def test_registration_failure_and_calls_from_the_contract(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    scripted.send({"event": "register_failed", "reason": "Registration refused (cause 29)"})
    expect(loc("#reg")).to_have_text("Registration failed (IAX2), seen as 192.0.2.10:4569")
    expect(loc("#reg")).to_have_class(re.compile(r"\breg-failed\b"))
    expect(loc("#reg-failure")).to_have_text("Registration refused (cause 29)")
    scripted.snapshot_now(
        registered=False,
        registration={
            "method": "http",
            "state": "registering",
            "perceived_addr": None,
            "last_failure": "timed out",
        },
        listening=False,
        bridge={"mode": "conference", "mix_minus": False, "include_local_radio": True},
        calls=[
            {
                "id": 3,
                "peer": "2600",
                "addr": "192.0.2.30:4569",
                "direction": "inbound",
                "state": "ringing",
                "codec": "alaw",
                "duration_s": 3.0,
            }
        ],
    )
    expect(loc("#reg")).to_have_text("Registering… (HTTP)")
    expect(loc("#reg-failure")).to_have_text("timed out")
    expect(loc("#listening")).to_have_text("Refusing")
    expect(loc("#bridge")).to_have_text("Conference, full mix, local radio included")
    expect(loc("#audio")).to_have_text("null backend, 16 kHz")
    scripted.snapshot_now(
        audio={
            "backend": "cpal",
            "rate": 8000,
            "device_rate": 48000,
            "input": "USB Audio",
            "output": "USB Audio",
            "running": True,
            "rx": {"gain_db": -3.5, "peak_dbfs": -13.2},
            "tx": {"gain_db": 2.0, "peak_dbfs": -100.0},
        }
    )
    expect(loc("#audio")).to_have_text(
        "cpal, 8 kHz, card 48 kHz, in: USB Audio, out: USB Audio, gain rx -3.5 dB, tx +2 dB"
    )
    call = loc('#conn-rows tr[data-kind="call"][data-call="3"]')
    expect(call.locator("th")).to_have_text("2600")
    expect(call.locator("td")).to_have_text(
        ["—", re.compile(r"00:00:0\d"), "IN", "Ringing", "Call", "A-law", "—"]
    )
    scripted.send({"event": "registered"})
    expect(loc("#reg")).to_have_text("Registered (HTTP)")


def test_the_tunnel_line_shows_only_with_a_tunnel(scripted: ScriptedNode, view: StatusPage) -> None:
    loc = view.page.locator
    expect(loc("#audio")).to_have_text("null backend, 16 kHz")
    expect(loc("#tunnel-fact")).to_be_hidden()
    tunnel = {
        "address": "10.8.0.2:4569",
        "public_key": "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
        "listen": "0.0.0.0:40000",
        "endpoint": "192.0.2.50:51820",
        "state": "handshaking",
        "last_handshake_s": None,
        "handshakes": 0,
        "rx_bytes": 0,
        "tx_bytes": 444,
        "dropped": 0,
    }
    scripted.snapshot_now(tunnel=tunnel)
    expect(loc("#tunnel-fact")).to_be_visible()
    expect(loc("#tunnel")).to_have_text(
        "WireGuard handshaking (no answer yet), 10.8.0.2:4569 via 192.0.2.50:51820"
    )
    scripted.snapshot_now(
        tunnel={**tunnel, "state": "up", "last_handshake_s": 3.2, "handshakes": 1, "dropped": 2}
    )
    expect(loc("#tunnel")).to_have_text(
        "WireGuard up, 10.8.0.2:4569 via 192.0.2.50:51820, 2 dropped"
    )
    scripted.snapshot_now(tunnel={**tunnel, "state": "down", "endpoint": None})
    expect(loc("#tunnel")).to_have_text("WireGuard down, 10.8.0.2:4569, waiting for the peer")
    scripted.snapshot_now(tunnel=None)
    expect(loc("#tunnel-fact")).to_be_hidden()


def test_event_list_is_newest_first_bounded_and_plain_text(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    expect(loc("#no-events")).to_be_visible()
    hostile = '<img src=x onerror="window.__pwned=1">'
    scripted.send({"event": "incoming_call", "from": hostile})
    expect(loc("#events li").first).to_have_text(re.compile(re.escape(f"call from {hostile}")))
    scripted.snapshot_now(
        calls=[
            {
                "id": 4,
                "peer": "<b>x</b>",
                "addr": "192.0.2.30:4569",
                "direction": "inbound",
                "state": "up",
                "codec": "ulaw",
                "duration_s": 0.0,
            }
        ]
    )
    expect(loc('#conn-rows tr[data-call="4"] th')).to_have_text("<b>x</b>")
    scripted.send({"event": "announcement_started", "kind": "id"})
    expect(loc("#events li").first).to_have_text(re.compile(r"announcement_started kind=id$"))
    for n in range(60):
        scripted.send({"event": "dtmf", "call": n, "digit": "5"})
    expect(loc("#events li").first).to_have_text(re.compile(r"DTMF 5 on call 59$"))
    expect(loc("#events li")).to_have_count(50)
    expect(loc("#events li").last).to_have_text(re.compile(r"DTMF 5 on call 10$"))
    scripted.send({"event": "dtmf", "call": 4, "digit": "3", "command": "*32000"})
    expect(loc("#events li").first).to_have_text(
        re.compile(r"DTMF 3 on call 4 \(command \*32000\)$")
    )
    scripted.send({"event": "dtmf", "call": 4, "digit": "", "command": "*3200 connect 200"})
    expect(loc("#events li").first).to_have_text(
        re.compile(r"DTMF time-out on call 4 \(command \*3200 connect 200\)$")
    )
    scripted.send({"event": "dtmf", "call": None, "digit": "7"})
    expect(loc("#events li").first).to_have_text(re.compile(r"DTMF 7 from the local radio or AMI$"))
    assert loc("#events img, #conn-rows b").count() == 0
    assert view.page.evaluate("window.__pwned") is None
    expect(loc("#no-events")).to_be_hidden()


def test_reopens_the_stream_when_it_ends_or_is_refused(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    assert scripted.connections == 1
    scripted.snapshot_now(links=[link("2000", 7, connected_s=30.0)])
    up_time = loc('#conn-rows tr[data-node="2000"] td').nth(1)
    expect(up_time).to_have_text(re.compile(r"00:00:3\d"))
    # Durations stay on screen while the stream is down (they stop counting, never go blank).
    view.watch("blank", "#conn-rows td[data-at]:empty")
    # The stream ends without a word: EventSource reconnects by itself; the new snapshot wins.
    view.watch("down", "#conn", "disconnected — reconnecting…")
    view.watch("stale", "main.stale")
    view.watch("unknown", "#tx", "Transmit state unknown")
    scripted.snapshot = {**scripted.snapshot, "node_id": "2001", "links": []}
    scripted.drop()
    for name in ("down", "stale", "unknown"):
        view.mark(name)
    expect(loc("#conn")).to_have_text("Live")
    expect(loc("#node-id")).to_have_text("2001")
    expect(loc("#tx")).to_have_text("Idle")
    expect(loc("#conn-rows tr")).to_have_count(0)
    assert scripted.connections == 2
    assert view.page.evaluate("window.__marks.blank") is None

    # A shutdown event, then the next stream is refused with 503: EventSource gives up for
    # good, and the page opens a new one itself.
    view.watch("down-again", "#conn", "disconnected — reconnecting…")
    scripted.refuse = 1
    scripted.snapshot = {**scripted.snapshot, "node_id": "2002"}
    scripted.send({"event": "shutdown"})
    scripted.drop()
    view.mark("down-again")
    expect(loc("#node-id")).to_have_text("2002")
    expect(loc("#conn")).to_have_text("Live")
    assert scripted.connections == 4
    # The browser logs the refused request; that one is expected, nothing else is.
    refused = "the server responded with a status of 503 (Service Unavailable)"
    view.errors.remove(f"Failed to load resource: {refused}")
    expect(loc('#events li[data-event="shutdown"]')).to_have_text(
        re.compile(r"Node shutting down$")
    )


def linked_tree() -> dict[str, Any]:
    """The snapshot's `network` of a node 1999 with a tree behind it, as the node builds it."""
    from node.links.network import LinkMode, LinkNetwork

    net = LinkNetwork("1999", rand=lambda: 0.5)
    for callno, (node, mode) in enumerate(
        [("2000", LinkMode.TRANSCEIVE), ("2005", LinkMode.MONITOR), ("2010", LinkMode.TRANSCEIVE)],
        start=10,
    ):
        net.connect(node, mode, 0.0)
        net.dialled(node, callno, ("192.0.2.20", 4569), 0.0)
        if node != "2010":
            net.call_up(callno, "ulaw", 0.0)
    net.text(10, "L T2001,R2002,C2003", 1.0)
    net.text(11, "L " + ",".join(f"T{3000 + i}" for i in range(40)), 1.0)
    return net.graph()


def test_the_network_tree_shows_who_is_linked_behind_whom(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    expect(loc("#no-net")).to_be_visible()
    expect(loc("#net")).to_be_hidden()
    scripted.snapshot_now(
        links=[link("2000", 10), link("2005", 11, mode="monitor")], network=linked_tree()
    )
    expect(loc("#net-count")).to_have_text("(46 nodes)")
    root = loc("#net > li")
    expect(root.locator("> .net-node")).to_have_text("1999")
    adjacent = root.locator("> ul > li")
    expect(adjacent.locator("> .net-node")).to_have_text(["2000", "2005", "2010"])
    expect(adjacent.locator("> .net-mode")).to_have_text(["Transceive", "Monitor", "Connecting"])
    behind_2000 = loc('#net li[data-node="2000"] > ul > li')
    expect(behind_2000.locator("> .net-node")).to_have_text(["2001", "2002", "2003"])
    expect(behind_2000.locator("> .net-mode")).to_have_text(["Transceive", "Monitor", "Connecting"])
    # Behind a monitor link everything reads as monitor; a long list folds away.
    fold = loc('#net li[data-node="2005"] > details')
    expect(fold.locator("summary")).to_have_text("40 nodes behind")
    expect(fold.locator("li").first).to_be_hidden()
    fold.locator("summary").click()
    expect(fold.locator("li")).to_have_count(40)
    expect(fold.locator("li .net-mode").first).to_have_text("Monitor")
    view.screenshots("page-network")
    # The links go: the tree empties.
    scripted.snapshot_now(links=[], network={"nodes": [], "edges": []})
    expect(loc("#no-net")).to_be_visible()
    expect(loc("#net")).to_be_hidden()


def test_a_usrp_callers_callsign_shows_while_they_talk(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    audio = {"backend": "usrp", "rate": 16000, "device_rate": 8000, "running": True}
    usrp = {"network": "dmr", "dstar_guard": False, "caller": None}
    scripted.snapshot_now(audio=audio, radio={"usrp": usrp})
    expect(loc("#audio")).to_have_text("usrp, dmr, 16 kHz, stream 8 kHz")
    caller = {"callsign": "N0CALL", "source_id": 3112345, "talkgroup": 91}
    scripted.snapshot_now(audio=audio, radio={"usrp": {**usrp, "caller": caller}})
    expect(loc("#audio")).to_have_text("usrp, dmr, talking: N0CALL on TG 91, 16 kHz, stream 8 kHz")
    scripted.snapshot_now(
        audio=audio, radio={"usrp": {**usrp, "network": "dstar", "dstar_guard": True}}
    )
    expect(loc("#audio")).to_have_text("usrp, dstar, D-Star guard on, 16 kHz, stream 8 kHz")


def test_a_host_of_several_nodes_lists_them_with_this_one_marked(
    scripted: ScriptedNode, view: StatusPage
) -> None:
    loc = view.page.locator
    expect(loc("#hosted")).to_be_hidden()  # one node: nothing to list
    scripted.snapshot_now(hosted=["1999", "1998"])
    links = loc("#hosted a")
    expect(links).to_have_text(["1999", "1998"])
    expect(links.nth(1)).to_have_attribute("href", "/nodes/1998/")
    expect(loc('#hosted a[aria-current="page"]')).to_have_text("1999")
    scripted.snapshot_now(hosted=["1999"])
    expect(loc("#hosted")).to_be_hidden()
