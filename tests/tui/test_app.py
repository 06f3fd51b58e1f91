"""`node tui` headless: Textual's pilot presses keys on the real app, which drives the real
controller of a node running in the test's loop (engine on loopback, control channel up), linked
to a second, real `node serve` process. Assertions read the 80x24 screen as the terminal shows it.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import RichLog

from node.events import Health, Snapshot
from node.iax2 import call as call_module
from node.tui.app import NodeApp
from node.tui.dialogs import BridgeDialog, ConfirmDialog, NodePrompt
from tests.in_process import NO_DNS, in_process_node, node_config
from tests.node_process import NodeProcess, free_port, write_config
from tests.tui.screen import screen_colours, screen_lines

SIZE = (80, 24)
NODE_A, NODE_B = "2001", "2002"


def node_sections(node_id: str) -> str:
    # A node number needs [register]; nothing answers at its registrar, and with the `control`
    # secret source no registration starts by itself.
    return (
        f'[register]\npeer = "127.0.0.1:9"\nnode_id = "{node_id}"\n\n'
        '[secrets]\nsource = "control"\n'
    )


@pytest.fixture
def node_b(tmp_path: Path) -> Iterator[NodeProcess]:
    """The far end of the link: a real `node serve` admitting link calls without a secret."""
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    path = write_config(
        tmp_path / "b.toml", udp_port=udp, http_port=http, extra=NO_DNS + node_sections(NODE_B)
    )
    path.write_text(path.read_text().replace("[listener]\n", '[listener]\nauth = "off"\n'))
    node = NodeProcess(path, udp, http)
    node.wait_ready()
    yield node
    node.kill()


async def until(
    pilot: Pilot[Any], what: str, predicate: Callable[[], Any], timeout: float = 15.0
) -> Any:
    """Let the app run until `predicate` holds (returned), failing with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)
    return value


def row_of(app: NodeApp, node: str) -> str | None:
    """The screen line of the links table row for `node`."""
    return next((line for line in screen_lines(app) if line.split()[:1] == [node]), None)


def screen_text(app: NodeApp) -> str:
    """The screen as one line of text (wrapped lines joined, runs of spaces as one)."""
    return re.sub(r"\s+", " ", " ".join(screen_lines(app)))


def assert_fits(lines: list[str]) -> None:
    assert len(lines) == SIZE[1]
    assert all(len(line) <= SIZE[0] for line in lines), lines


def b_link(node_b: NodeProcess) -> dict | None:
    links = node_b.get("/status").json()["links"]
    return links[0] if links else None


def test_link_key_unkey_disconnect_through_the_menu(tmp_path: Path, node_b: NodeProcess) -> None:
    b_port = node_b.udp_addr[1]

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml", node_sections(NODE_A))) as a:
            app = NodeApp(a.controller)
            async with app.run_test(size=SIZE) as pilot:
                # c: connect (transceive), with the address of B as it is in no nodes file.
                await pilot.press("c")
                assert isinstance(app.screen, NodePrompt)
                await pilot.press(*NODE_B, "tab", *f"127.0.0.1:{b_port}", "enter")
                row = await until(pilot, "the link row", lambda: row_of(app, NODE_B))
                await until(pilot, "the link up", lambda: " up " in (row_of(app, NODE_B) or ""))
                row = row_of(app, NODE_B)
                assert row is not None and row.split()[:5] == [
                    NODE_B,
                    "transceive",
                    "up",
                    "-",
                    "never",
                ]
                assert b_link(node_b)["node"] == NODE_A

                # k asks first, and the answer is no unless "Yes" is chosen on purpose.
                await pilot.press("k")
                await pilot.pause()
                assert isinstance(app.screen, ConfirmDialog)
                assert "Key the transmitter?" in "\n".join(screen_lines(app))
                await pilot.press("enter")
                assert not isinstance(app.screen, ConfirmDialog)
                assert a.controller.snapshot()["tx"]["keyed"] is False
                await pilot.press("k", "escape", "k", "n")
                assert a.controller.snapshot()["tx"]["keyed"] is False
                assert not any("KEYED" in line for line in screen_lines(app))

                await pilot.press("k", "tab", "enter")
                tx = await until(
                    pilot,
                    "TX keyed on screen",
                    lambda: next((ln for ln in screen_lines(app) if "TX: KEYED" in ln), None),
                )
                assert "time-out in" in tx
                assert a.controller.snapshot()["tx"]["keyed"] is True
                # B hears us: its link from A shows keyed (voice presence over the link).
                await until(pilot, "B sees A keyed", lambda: b_link(node_b)["keyed"])
                lines = screen_lines(app)
                assert_fits(lines)

                await pilot.press("u")
                await until(pilot, "TX idle", lambda: "TX: idle" in "\n".join(screen_lines(app)))
                assert a.controller.snapshot()["tx"]["keyed"] is False

                # B's operator keys: A's screen shows the link keyed, live from the bus.
                assert node_b.post("/key").json()["tx"]["keyed"] is True
                await until(pilot, "RX KEYED", lambda: "KEYED" in (row_of(app, NODE_B) or ""))
                assert f"RX: {NODE_B}" in "\n".join(screen_lines(app))
                assert_fits(screen_lines(app))
                node_b.post("/unkey")
                await until(pilot, "RX clear", lambda: "KEYED" not in (row_of(app, NODE_B) or ""))

                # x offers the highlighted link; Enter disconnects it.
                await pilot.press("x")
                await pilot.pause()
                assert isinstance(app.screen, NodePrompt)
                assert NODE_B in "\n".join(screen_lines(app))
                await pilot.press("enter")
                await until(pilot, "the row gone", lambda: row_of(app, NODE_B) is None)
                assert a.controller.snapshot()["links"] == []
                assert f"disconnected {NODE_B}" in "\n".join(screen_lines(app))
        await asyncio.to_thread(
            lambda: _wait(lambda: b_link(node_b) is None, "the link gone from B")
        )

    asyncio.run(scenario())


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def messages(app: NodeApp) -> str:
    """The message panel's whole text (wrapped lines joined back)."""
    lines = app.query_one("#messages", RichLog).lines
    return " ".join(" ".join(strip.text for strip in lines).split())


REFUSALS = [
    (("d", *"2000", "enter"), "ERROR Dial 2000: node 2000 not found"),
    (("G",), "ERROR Deregister: not registered"),
    (("c", *NODE_A, "enter"), "ERROR Connect 2001: node 2001 is this node"),
    (("m", *"77", "tab", *"not-an-address", "enter"), "ERROR Monitor 77:"),
    (("h",), "ERROR Hang up: no active call"),
    (("a",), "ERROR Answer: no ringing inbound call"),
]


def test_refusals_are_shown_not_raised(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml", node_sections(NODE_A))) as a:
            app = NodeApp(a.controller)
            async with app.run_test(size=SIZE) as pilot:
                for keys, shown in REFUSALS:
                    await pilot.press(*keys)
                    await until(pilot, shown, lambda shown=shown: shown in messages(app))
                # The latest refusal is on screen, not only in the panel's history.
                assert "no ringing inbound call" in " ".join(screen_lines(app))
                assert app.is_running  # nothing escaped
                assert a.controller.snapshot()["calls"] == []
                assert a.controller.snapshot()["links"] == []

    asyncio.run(scenario())


def test_inbound_and_bridge_reach_the_controller_the_control_channel_serves(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml")) as a:
            bind = a.config.control.bind
            url = f"http://{bind.host}:{bind.port}/status"
            app = NodeApp(a.controller)
            async with (
                app.run_test(size=SIZE) as pilot,
                httpx.AsyncClient(timeout=5) as http,
            ):
                assert "Inbound: ON" in screen_lines(app)[0]
                await pilot.press("i")
                await until(pilot, "Inbound: OFF", lambda: "Inbound: OFF" in screen_lines(app)[0])
                assert (await http.get(url)).json()["listening"] is False

                await pilot.press("b")
                assert isinstance(app.screen, BridgeDialog)
                # The mode buttons, in order: down to "conference", select; then Apply.
                await pilot.press("down", "down", "enter")
                await pilot.click("#ok")
                await until(
                    pilot, "the dialog closed", lambda: not isinstance(app.screen, BridgeDialog)
                )
                bridge = (await http.get(url)).json()["bridge"]
                assert bridge == {
                    "mode": "conference",
                    "mix_minus": True,
                    "include_local_radio": False,
                }
                assert screen_lines(app)[1].strip().startswith("Bridge: conference, mix-minus")

                # A change made over HTTP shows on the screen: one controller, one bus.
                headers = {"Content-Type": "application/json"}
                await http.post(url.replace("/status", "/enable_inbound"), json={}, headers=headers)
                await until(pilot, "Inbound: ON", lambda: "Inbound: ON" in screen_lines(app)[0])

    asyncio.run(scenario())


def test_quit_asks_only_when_it_would_drop_something(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml")) as a:
            app = NodeApp(a.controller)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("k", "tab", "enter")
                await until(pilot, "keyed", lambda: a.controller.snapshot()["tx"]["keyed"])
                await pilot.press("q")
                await pilot.pause()
                assert isinstance(app.screen, ConfirmDialog)
                assert app.screen.detail == "Quitting stops this node: the key will be dropped."
                assert "Quit and stop the node?" in "\n".join(screen_lines(app))
                await pilot.press("enter")  # no
                assert app.is_running
                await pilot.press("u", "q")
                await until(pilot, "the app to exit", lambda: not app.is_running)

    asyncio.run(scenario())


def test_no_colour_mode_renders_every_state_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml")) as a:
            app = NodeApp(a.controller)
            assert app.no_color
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("k", "tab", "enter")
                await until(pilot, "keyed", lambda: "TX: KEYED" in screen_lines(app)[2])
                lines = screen_lines(app)
                assert_fits(lines)
                assert lines[0].strip().startswith("Node (no node number) · Inbound: ON")
                assert lines[-2].strip().startswith("d Dial") and lines[-1].strip().startswith(
                    "k Key…"
                )
                # Every colour left is a grey: the state is carried by the words.
                colours = screen_colours(app)
                assert colours and all(r == g == b for r, g, b in colours), colours
                await pilot.press("u")

    asyncio.run(scenario())


def test_colour_mode_uses_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side of the no-colour check: without NO_COLOR the screen is not all grey."""
    monkeypatch.delenv("NO_COLOR", raising=False)

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml")) as a:
            app = NodeApp(a.controller)
            assert not app.no_color
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                assert any(not (r == g == b) for r, g, b in screen_colours(app))

    asyncio.run(scenario())


def test_a_screen_that_falls_behind_catches_up(tmp_path: Path) -> None:
    """A burst larger than the screen's queue on the bus drops its subscription; the screen
    subscribes again and repaints from a fresh snapshot instead of going stale."""

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml")) as a:
            a.bus._queue_size = 2  # a tiny queue, so that a burst of five overflows it
            app = NodeApp(a.controller)
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, "subscribed", lambda: a.bus.subscriber_count == 1)
                for enabled in (False, True, False, True, False):  # one burst, no yield
                    a.controller.set_listening(enabled)
                assert a.bus.dropped == 1
                await until(pilot, "Inbound: OFF", lambda: "Inbound: OFF" in screen_lines(app)[0])
                await until(pilot, "subscribed again", lambda: a.bus.subscriber_count == 1)
                a.controller.set_listening(True)
                await until(pilot, "Inbound: ON", lambda: "Inbound: ON" in screen_lines(app)[0])

    asyncio.run(scenario())


def test_a_link_shows_its_measured_health(
    tmp_path: Path, node_b: NodeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detail line of the highlighted link shows its round-trip time once a LAGRQ round
    measured one (every 0.5 s here instead of 10 s), and what our jitter buffer receives."""
    monkeypatch.setattr(call_module, "LAGRQ_INTERVAL", 0.5)
    b_port = node_b.udp_addr[1]

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml", node_sections(NODE_A))) as a:
            app = NodeApp(a.controller)
            async with app.run_test(size=SIZE) as pilot:
                await a.controller.link("connect", NODE_B, f"127.0.0.1:{b_port}")
                await until(pilot, "the link up", lambda: " up " in (row_of(app, NODE_B) or ""))
                # The detail line wraps: read the screen as one text.
                measured = re.compile(
                    r"RTT \d+ ms · in: jitter \d+ ms, loss [\d.]+ %, buffer \d+ ms"
                )
                await until(
                    pilot, "the RTT on the detail line", lambda: measured.search(screen_text(app))
                )
                assert_fits(screen_lines(app))

    asyncio.run(scenario())


def test_the_health_event_refreshes_the_screen_between_snapshots(tmp_path: Path) -> None:
    """Health changes without a state change: the screen takes the figures of the `health`
    event into the rows it shows (the once-a-second repaint is off here, to see that alone)."""

    class BusOnly(NodeApp):
        def _repaint(self) -> None:
            pass

    link = {
        "node": NODE_B,
        "call": 5,
        "mode": "transceive",
        "direction": "outbound",
        "state": "up",
        "keyed": False,
        "last_keyed_s": None,
        "connected_s": 3.0,
        "codec": "ulaw",
        "nodes": [],
        "permanent": False,
        "addr": "127.0.0.1:4570",
        "newkey": "newkey",
        "health": None,
    }
    figures = {
        "rtt_ms": 612,
        "rx": {
            "jitter_ms": 9,
            "loss_pct": 6.5,
            "lost": 13,
            "late": 0,
            "frames_in": 187,
            "delay_ms": 80,
            "target_ms": 60,
        },
        "peer": None,
        "degraded": True,
    }

    async def scenario() -> None:
        async with in_process_node(node_config(tmp_path / "a.toml", node_sections(NODE_A))) as a:
            app = BusOnly(a.controller)
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, "subscribed", lambda: a.bus.subscriber_count == 1)
                snap = {**a.controller.snapshot(), "links": [link]}
                a.bus.publish(Snapshot(snap))
                await until(pilot, "the link row", lambda: row_of(app, NODE_B))
                assert any("no figures yet" in ln for ln in screen_lines(app))
                a.bus.publish(Health(links=({"node": NODE_B, "call": 5, "health": figures},)))
                await until(pilot, "degraded", lambda: "DEGRADED" in (row_of(app, NODE_B) or ""))
                row = row_of(app, NODE_B)
                assert row is not None and row.split()[:3] == [NODE_B, "transceive", "DEGRADED"]
                text = screen_text(app)
                assert "DEGRADED · RTT 612 ms · in: jitter 9 ms, loss 6.5 %, buffer 80 ms" in text

    asyncio.run(scenario())


def test_n_shows_the_next_node_of_a_host(tmp_path: Path) -> None:
    async def scenario() -> None:
        further = "[nodes.1001]\n[nodes.1001.links]\ndns = false\n"
        path = node_config(tmp_path / "host.toml", further)
        path.write_text('node_id = "1000"\n' + path.read_text())
        async with in_process_node(path) as host:
            app = NodeApp(host.controller, nodes=host.host.controllers)
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, "node 1000 shown", lambda: "Node 1000 (1/2" in screen_text(app))
                await pilot.press("n")
                await until(pilot, "node 1001 shown", lambda: "Node 1001 (2/2" in screen_text(app))
                await pilot.press("n")
                await until(pilot, "back to 1000", lambda: "Node 1000 (1/2" in screen_text(app))

    asyncio.run(scenario())
