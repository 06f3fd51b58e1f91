"""The TUI's dialogs: a yes/no confirmation that defaults to no, a node-number prompt, and the
bridge settings. Each is a modal screen that returns its answer to the app (None: cancelled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, RadioButton, RadioSet

__all__ = ["BridgeDialog", "ConfirmDialog", "NodePrompt"]

_Result = TypeVar("_Result")

DIALOG_CSS = """
ConfirmDialog, NodePrompt, BridgeDialog {
    align: center middle;
}
.dialog {
    width: 64;
    max-width: 100%;
    height: auto;
    border: heavy $accent;
    padding: 0 1;
    background: $panel;
}
.dialog .question {
    text-style: bold;
    margin-bottom: 1;
}
.dialog Horizontal {
    height: auto;
    align-horizontal: right;
}
.dialog Button {
    margin-left: 1;
    min-width: 10;
}
.dialog Label {
    width: 100%;
}
.dialog .hint {
    margin-top: 1;
    text-style: italic;
}
.dialog Input {
    margin-bottom: 1;
}
"""


class _Dialog(ModalScreen[_Result]):
    """A dialog box: its question, what it asks, and a row of buttons."""

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question")
            yield from self.body()
            with Horizontal():
                yield from self.buttons()

    def body(self) -> ComposeResult:
        raise NotImplementedError

    def buttons(self) -> ComposeResult:
        raise NotImplementedError


class ConfirmDialog(_Dialog[bool]):
    """A question whose answer is "no" unless the operator picks the other button on purpose.

    "No" has the focus: Enter, Escape and `n` all answer no. "Yes" must be reached first (Tab or
    an arrow key, or a click) and then pressed, so no single key stroke says yes.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer(False)", "No", show=False),
        Binding("n", "answer(False)", "No", show=False),
        Binding("left,right", "app.focus_next", show=False),
    ]

    def __init__(self, question: str, detail: str, yes_label: str) -> None:
        super().__init__(question)
        self.detail = detail
        self.yes_label = yes_label

    def body(self) -> ComposeResult:
        yield Label(self.detail)
        yield Label(
            f"Enter or Esc: No. To answer yes: Tab to {self.yes_label!r}, Enter.",
            classes="hint",
        )

    def buttons(self) -> ComposeResult:
        yield Button("No", id="no", variant="primary")
        yield Button(self.yes_label, id="yes", variant="error")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class _CancellableDialog(_Dialog[_Result | None]):
    """A dialog that Escape or its "Cancel" button closes with None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", show=False)]

    #: The label of the button that applies the answer.
    ok_label = "OK"

    def buttons(self) -> ComposeResult:
        yield Button("Cancel", id="cancel")
        yield Button(self.ok_label, id="ok", variant="primary")

    def action_cancel(self) -> None:
        self.dismiss(None)


class NodePrompt(_CancellableDialog[tuple[str, str | None]]):
    """Asks for a node number and, optionally, the address to reach it at.

    Returns (node, address or None), or None when cancelled. The address is for nodes that are
    not in the nodes file (`ip:port`); the controller checks both and explains what is wrong.
    """

    def __init__(self, title: str, action: str, node: str = "", ask_addr: bool = True) -> None:
        super().__init__(title)
        self.ok_label = action
        self.node = node
        self.ask_addr = ask_addr

    def body(self) -> ComposeResult:
        yield Label("Node number:")
        yield Input(self.node, placeholder="e.g. 2000", restrict=r"[0-9]*", id="node")
        if self.ask_addr:
            yield Label("Address (ip:port), empty to look the node up:")
            yield Input(placeholder="optional, e.g. 192.0.2.10:4569", id="addr")

    def on_mount(self) -> None:
        self.query_one("#node", Input).focus()

    def _answer(self) -> tuple[str, str | None]:
        node = self.query_one("#node", Input).value.strip()
        addr = self.query_one("#addr", Input).value.strip() if self.ask_addr else ""
        return node, addr or None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(self._answer())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self._answer() if event.button.id == "ok" else None)


BRIDGE_MODES = ("handset", "bridge", "conference", "parrot")


class BridgeDialog(_CancellableDialog[dict[str, Any]]):
    """The conference topology, mix-minus and whether the local radio is in the conference.
    Returns the three settings, or None when cancelled."""

    ok_label = "Apply"

    def __init__(self, current: Mapping[str, Any]) -> None:
        super().__init__("Bridge mode (applied live)")
        self.current = current

    def body(self) -> ComposeResult:
        mode = self.current.get("mode", "bridge")
        with RadioSet(id="mode"):
            for name in BRIDGE_MODES:
                yield RadioButton(name, value=name == mode, id=f"mode-{name}")
        yield Checkbox("mix-minus", bool(self.current.get("mix_minus", True)), id="mix")
        yield Checkbox(
            "local radio in the conference",
            bool(self.current.get("include_local_radio", False)),
            id="local",
        )

    def on_mount(self) -> None:
        self.query_one("#mode", RadioSet).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id != "ok":
            self.dismiss(None)
            return
        pressed = self.query_one("#mode", RadioSet).pressed_button
        mode = str(pressed.label) if pressed is not None else self.current.get("mode")
        self.dismiss(
            {
                "mode": mode,
                "mix_minus": self.query_one("#mix", Checkbox).value,
                "include_local_radio": self.query_one("#local", Checkbox).value,
            }
        )
