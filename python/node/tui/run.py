"""`node tui --config PATH`: the node runs in this process, with the menu on top.

The spec's TUI is "an interactive terminal menu over the same controller": so `node tui` starts
the whole node (engine, controller, control channel) in its event loop, exactly as `node serve`
does, and the screen calls that controller directly. The control channel and the status page
keep working meanwhile. Quitting the menu stops the node; `POST /shutdown`, SIGTERM, SIGINT and
SIGHUP (the terminal hung up) stop the node and close the menu; `node serve` is the one that
re-reads its configuration on SIGHUP and outlives a terminal. While the menu is up, log lines go
to its message panel, not to stderr; they go back to stderr for the shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

from node.daemon import EXIT_CONFIG, EXIT_RUNTIME, RunningNode, configure_logging, load_node
from node.errors import StartError
from node.secrets import RedactingFilter

__all__ = ["run"]

log = logging.getLogger("node")


async def _tui(node: RunningNode, stderr: logging.Handler, redact: logging.Filter) -> int:
    # Textual is loaded once the node is up: a bad config or a taken port is reported quicker.
    from node.tui.app import LogFeed, NodeApp

    loop = asyncio.get_running_loop()
    try:
        await node.start()
    except StartError as exc:
        log.error("%s", exc)
        return EXIT_RUNTIME
    feed = LogFeed()
    feed.addFilter(redact)
    root = logging.getLogger()
    root.removeHandler(stderr)
    root.addHandler(feed)
    # SIGHUP is the terminal going away (an SSH session dropped): stop, as on a quit, so that
    # nothing stays keyed behind a screen nobody sees.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, node.stop.set)
    app = NodeApp(node.controller, feed, nodes=node.host.controllers)
    screen = asyncio.create_task(app.run_async())
    running = asyncio.create_task(node.wait())
    try:
        await asyncio.wait({screen, running}, return_when=asyncio.FIRST_COMPLETED)
        if not screen.done():
            app.exit()  # the node was stopped from outside: close the menu
        await screen
    finally:
        node.stop.set()
        code = await running
        root.removeHandler(feed)
        root.addHandler(stderr)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        await node.close()
    return code


def run(config_path: str | Path) -> int:
    """Run the node with the menu until the operator quits it or the node is stopped."""
    handler = configure_logging()
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        log.error("node tui needs a terminal (stdin and stdout); use `node serve` without one")
        return EXIT_RUNTIME
    loaded = load_node(Path(config_path), handler)
    if loaded is None:
        return EXIT_CONFIG
    config, secrets = loaded
    return asyncio.run(_tui(RunningNode(config, secrets), handler, RedactingFilter(secrets)))
