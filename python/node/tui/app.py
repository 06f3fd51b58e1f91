"""The `node tui` screen: the node's state at a glance and a lettered menu over its controller.

The app holds the same `Controller` the control channel serves, in the same event loop: commands
are direct method calls, and the screen follows the controller's event bus (plus a once a second
repaint, so durations and the TX time-out count down). A command the controller refuses shows its
`CommandError` message in the message panel; nothing here lets a traceback reach the terminal.

Keying is sacred: `k` only opens a confirmation that defaults to "no", so no single key stroke
keys the transmitter. Unkeying (`u`) is one stroke, because releasing a transmitter must never
wait on a dialog.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, RichLog, Static

from node.controller import Controller
from node.errors import CommandError
from node.events import Event, Health, IncomingCall, Snapshot
from node.tui import view
from node.tui.dialogs import BridgeDialog, ConfirmDialog, NodePrompt

__all__ = ["LogFeed", "NodeApp"]

log = logging.getLogger(__name__)

#: Messages kept for the panel (it shows the last few; the rest scroll).
MESSAGES_KEPT = 200


class LogFeed(logging.Handler):
    """Log records for the TUI's message panel, instead of stderr (which the screen owns).

    Keeps the last records until an app attaches, so what the node logged while starting is
    shown too. Shows the node's own INFO records (links up and down, calls, registration) and
    everyone's warnings and errors. Put the daemon's redacting filter on it like on any handler.
    """

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        self.addFilter(self._worth_showing)
        self.lines: deque[tuple[int, str]] = deque(maxlen=MESSAGES_KEPT)
        self._sink: Callable[[int, str], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    @staticmethod
    def _worth_showing(record: logging.LogRecord) -> bool:
        node = record.name == "node" or record.name.startswith("node.")
        return record.levelno >= logging.WARNING or node

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if record.levelno < logging.WARNING:
                text = text.removeprefix("INFO ")
        except Exception:
            self.handleError(record)
            return
        self.lines.append((record.levelno, text))
        sink, loop = self._sink, self._loop
        if sink is None or loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            sink(record.levelno, text)
        else:
            loop.call_soon_threadsafe(sink, record.levelno, text)

    def attach(self, sink: Callable[[int, str], None]) -> None:
        """Send every kept and future record to `sink`, in the running loop."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        for level, text in list(self.lines):
            sink(level, text)
        self._sink = sink

    def detach(self) -> None:
        self._sink = None


class NodeApp(App[None]):
    """The interactive menu over one controller."""

    TITLE = "iax-node"
    CSS = """
    Screen {
        layout: vertical;
    }
    .line {
        height: 1;
        width: 100%;
        padding: 0 1;
    }
    #tx.keyed {
        text-style: bold reverse;
    }
    #links {
        height: 1fr;
        min-height: 3;
    }
    #calls {
        height: auto;
        max-height: 5;
    }
    #detail {
        height: auto;
        max-height: 2;
        padding: 0 1;
        color: $text-muted;
    }
    #messages {
        height: 4;
        padding: 0 1;
        border-top: solid $secondary;
        scrollbar-size-vertical: 1;
    }
    #menu {
        height: 2;
        padding: 0 1;
        background: $boost;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "dial", "Dial", show=False),
        Binding("a", "command('Answer', 'answer', 'answered')", "Answer", show=False),
        Binding("r", "command('Reject', 'reject', 'rejected')", "Reject", show=False),
        Binding("h", "hangup", "Hang up", show=False),
        Binding("c", "link('connect')", "Connect", show=False),
        Binding("m", "link('monitor')", "Monitor", show=False),
        Binding("x", "disconnect", "Disconnect", show=False),
        Binding("k", "key", "Key…", show=False),
        Binding("u", "unkey", "Unkey", show=False),
        Binding("b", "bridge", "Bridge…", show=False),
        Binding("g", "command('Register', 'register', 'registering')", "Register", show=False),
        Binding(
            "G", "command('Deregister', 'deregister', 'deregistered')", "Deregister", show=False
        ),
        Binding("i", "inbound", "Inbound", show=False),
        Binding("n", "next_node", "Next node", show=False),
        Binding("q", "quit_node", "Quit", show=False),
        Binding("ctrl+c,ctrl+q", "quit_node", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        controller: Controller,
        feed: LogFeed | None = None,
        nodes: Sequence[Controller] = (),
    ) -> None:
        """`nodes`: every node of the process (the first is `controller`); `n` shows the next."""
        super().__init__()
        self.controller = controller
        self.nodes: tuple[Controller, ...] = tuple(nodes) or (controller,)
        self.feed = feed
        self.snap: Mapping[str, Any] = controller.snapshot()

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="status", classes="line")
        yield Static(id="bridge", classes="line")
        yield Static(id="tx", classes="line")
        links: DataTable[Any] = DataTable(id="links", cursor_type="row", zebra_stripes=False)
        for label, width in view.LINK_COLUMNS:
            links.add_column(label, width=width, key=label)
        yield links
        yield Static(id="detail")
        calls: DataTable[Any] = DataTable(id="calls", cursor_type="row", show_cursor=True)
        for label, width in view.CALL_COLUMNS:
            calls.add_column(label, width=width, key=label)
        yield calls
        yield RichLog(id="messages", max_lines=MESSAGES_KEPT, wrap=True, markup=False)
        yield Static(self._menu(), id="menu")

    @staticmethod
    def _menu() -> Text:
        text = Text()
        for i, line in enumerate(view.MENU):
            if i:
                text.append("\n")
            for j, (key, label) in enumerate(line):
                if j:
                    text.append("  ")
                text.append(key, style="bold reverse")
                text.append(f" {label}")
        return text

    def on_mount(self) -> None:
        self.query_one("#links", DataTable).focus()
        self._paint(self.snap)
        if self.feed is not None:
            self.feed.attach(self._log_line)
        self._follow()
        self.set_interval(1.0, self._repaint)

    def on_unmount(self) -> None:
        if self.feed is not None:
            self.feed.detach()

    # --- state --------------------------------------------------------------------------------

    def _follow(self) -> None:
        """Follow the shown node's bus (the one worker of its group: a switch ends the last)."""
        self.run_worker(
            self._follow_bus(), name="bus", group="bus", exclusive=True, exit_on_error=False
        )

    def action_next_node(self) -> None:
        """Show the next node of the host (with one node, nothing to do)."""
        if len(self.nodes) < 2:
            return
        i = self.nodes.index(self.controller)
        self.controller = self.nodes[(i + 1) % len(self.nodes)]
        self._follow()
        self._repaint()

    async def _follow_bus(self) -> None:
        """Repaint on every snapshot the controller publishes, until the bus closes."""
        while True:
            sub = self.controller.bus.subscribe()
            try:
                while (event := await sub.get()) is not None:
                    self._on_event(event)
            finally:
                sub.close()
            if not sub.overflowed:
                return  # the node is stopping
            # The screen fell behind (a burst of events): catch up from a fresh snapshot.
            self._repaint()

    def _on_event(self, event: Event) -> None:
        if isinstance(event, Snapshot):
            self._paint(event.status)
        elif isinstance(event, Health):
            # Fresh figures every few seconds, between the snapshots of state changes.
            self._paint(view.with_health(self.snap, event.calls, event.links))
        elif isinstance(event, IncomingCall):
            self.bell()

    def _repaint(self) -> None:
        self._paint(self.controller.snapshot())

    def _paint(self, snap: Mapping[str, Any]) -> None:
        self.snap = snap
        self.query_one("#status", Static).update(view.status_line(snap))
        self.query_one("#bridge", Static).update(view.bridge_line(snap))
        tx = self.query_one("#tx", Static)
        tx.update(view.tx_line(snap))
        tx.set_class(bool((snap.get("tx") or {}).get("keyed")), "keyed")
        links = list(snap.get("links") or ())
        self._fill(self.query_one("#links", DataTable), [view.link_row(li) for li in links])
        self._fill(
            self.query_one("#calls", DataTable),
            [view.call_row(c) for c in snap.get("calls") or ()],
        )
        self._show_detail()

    @staticmethod
    def _fill(table: DataTable[Any], rows: list[tuple[str, ...]]) -> None:
        """Replace the rows, keeping the cursor on the same row key (the node or call id)."""
        keys = [row[0] for row in rows]
        current = [str(key.value) for key in table.rows]
        cursor_key = current[table.cursor_row] if 0 <= table.cursor_row < len(current) else None
        if keys == current:
            for row in rows:
                for (label, _), value in zip(table.columns.items(), row, strict=False):
                    table.update_cell(row[0], label, _cell(value))
            return
        table.clear()
        for row in rows:
            table.add_row(*(_cell(value) for value in row), key=row[0])
        if cursor_key in keys:
            table.move_cursor(row=keys.index(cursor_key))

    def _highlighted_link(self) -> Mapping[str, Any] | None:
        table = self.query_one("#links", DataTable)
        links = list(self.snap.get("links") or ())
        row = table.cursor_row
        return links[row] if links and 0 <= row < len(links) else None

    def _highlighted_call(self) -> int | None:
        table = self.query_one("#calls", DataTable)
        calls = list(self.snap.get("calls") or ())
        row = table.cursor_row
        return int(calls[row]["id"]) if calls and 0 <= row < len(calls) else None

    def _show_detail(self) -> None:
        self.query_one("#detail", Static).update(view.link_detail(self._highlighted_link()))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "links":
            self._show_detail()

    # --- messages -----------------------------------------------------------------------------

    def _log_line(self, level: int, text: str) -> None:
        style = "bold reverse" if level >= logging.ERROR else "bold" if level >= 30 else ""
        self.query_one("#messages", RichLog).write(Text(text, style=style))

    def say(self, text: str) -> None:
        """A line in the message panel: what a command did."""
        self._log_line(logging.INFO, f"» {text}")

    def complain(self, text: str) -> None:
        self._log_line(logging.ERROR, f"ERROR {text}")

    async def _command(self, what: str, method: Callable[..., Any], *args: Any) -> bool:
        """Run one controller command (plain or async); its refusal becomes a message, never a
        traceback. True when it was carried out."""
        try:
            result = method(*args)
            if inspect.isawaitable(result):
                await result
        except CommandError as exc:
            self.complain(f"{what}: {exc}")
            return False
        except Exception as exc:
            log.error("%s failed", what, exc_info=exc)
            self.complain(f"{what} failed: {type(exc).__name__} (details in the log)")
            return False
        self._repaint()
        return True

    # --- actions ------------------------------------------------------------------------------

    def action_dial(self) -> None:
        async def dialled(answer: tuple[str, str | None] | None) -> None:
            if answer is None:
                return
            node, addr = answer
            if await self._command(f"Dial {node}", self.controller.dial, node, addr):
                self.say(f"dialling {node}")

        self.push_screen(NodePrompt("Dial a call to a node", "Dial"), dialled)

    async def action_command(self, what: str, method: str, done: str) -> None:
        """A command without arguments: the controller's `method`; `done` says it worked."""
        if await self._command(what, getattr(self.controller, method)):
            self.say(done)

    async def action_hangup(self) -> None:
        callno = self._highlighted_call()
        if await self._command("Hang up", self.controller.hangup, callno):
            self.say(f"hung up call {callno}" if callno is not None else "hung up")

    def action_link(self, action: str) -> None:
        title = {
            "connect": "Connect to a node (transceive, *3)",
            "monitor": "Monitor a node (receive only, *2)",
        }[action]

        async def chosen(answer: tuple[str, str | None] | None) -> None:
            if answer is None:
                return
            node, addr = answer
            if await self._command(
                f"{action.capitalize()} {node}", self.controller.link, action, node, addr
            ):
                self.say(f"{action} {node}: linking")

        self.push_screen(NodePrompt(title, action.capitalize()), chosen)

    def action_disconnect(self) -> None:
        link = self._highlighted_link()

        async def chosen(answer: tuple[str, str | None] | None) -> None:
            if answer is None:
                return
            node = answer[0]
            if await self._command(
                f"Disconnect {node}", self.controller.link, "disconnect", node, None
            ):
                self.say(f"disconnected {node}")

        node = str(link["node"]) if link is not None else ""
        self.push_screen(
            NodePrompt("Disconnect a link (*1)", "Disconnect", node, ask_addr=False), chosen
        )

    def action_key(self) -> None:
        tx = self.snap.get("tx") or {}
        if tx.get("keyed"):
            self.say("already keyed: u unkeys")
            return
        timeout = tx.get("timeout_s")
        detail = "It stays keyed until you unkey (u)"
        detail += f" or the TX time-out ends it after {timeout} s." if timeout else "."

        async def confirmed(yes: bool | None) -> None:
            if yes and await self._command("Key", self.controller.key):
                self.say("KEYED: u unkeys")

        self.push_screen(ConfirmDialog("Key the transmitter?", detail, "Yes, key"), confirmed)

    async def action_unkey(self) -> None:
        # Always asked of the controller (it is idempotent): the screen could be a moment old.
        was_keyed = bool(self.controller.snapshot()["tx"]["keyed"])
        if await self._command("Unkey", self.controller.unkey):
            self.say("unkeyed" if was_keyed else "not keyed")

    def action_bridge(self) -> None:
        async def chosen(settings: dict[str, Any] | None) -> None:
            if settings is not None and await self._command(
                "Bridge", lambda: self.controller.set_bridge(**settings)
            ):
                self.say(view.bridge_line(self.snap))

        self.push_screen(BridgeDialog(self.snap.get("bridge") or {}), chosen)

    async def action_inbound(self) -> None:
        enable = not self.snap.get("listening")
        if await self._command("Inbound", self.controller.set_listening, enable):
            self.say("inbound calls " + ("accepted" if enable else "refused"))

    def action_quit_node(self) -> None:
        """Quit, which stops the node: ask first when that would drop links, calls or the key."""
        dropped = view.dropped_on_quit(self.snap)
        if dropped is None:
            self.exit()
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(
            ConfirmDialog(
                "Quit and stop the node?",
                f"Quitting stops this node: {dropped} will be dropped.",
                "Yes, quit",
            ),
            confirmed,
        )


def _cell(value: str) -> Text:
    return Text(value, style="bold reverse" if value == "KEYED" else "")
