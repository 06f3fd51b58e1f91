"""What a Textual app shows, as the terminal would: lines of text, and the colours drawn."""

from __future__ import annotations

import io

from rich.console import Console
from rich.segment import Segment
from textual.app import App

__all__ = ["screen_colours", "screen_lines"]


def _render(app: App) -> Console:
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
    )
    # What export_screenshot() draws, kept as text instead of SVG.
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console


def screen_lines(app: App) -> list[str]:
    """The screen, one string per terminal row, trailing blanks removed."""
    return [line.rstrip() for line in _render(app).export_text().splitlines()]


def screen_colours(app: App) -> set[tuple[int, int, int]]:
    """Every foreground and background colour on the screen, as RGB."""
    colours = set()
    for segment in Segment.filter_control(_render(app)._record_buffer):
        style = segment.style
        if style is None:
            continue
        for colour in (style.color, style.bgcolor):
            if colour is not None and not colour.is_default:
                colours.add(tuple(colour.get_truecolor()))
    return colours
