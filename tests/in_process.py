"""A node running in the test's own event loop: the real engine on loopback, the real controller
and the real control channel (uvicorn), as `node serve` and `node tui` run them."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from node.config import load_config
from node.daemon import RunningNode
from node.secrets import SecretStore
from tests.node_process import free_port, write_config

__all__ = ["NO_DNS", "in_process_node", "node_config"]


#: Node numbers are looked up in the nodes file only: tests never ask a real DNS.
NO_DNS = "[links]\ndns = false\n"


def node_config(path: Path, extra: str = "") -> Path:
    """A config on free loopback ports, null audio, no DNS lookups; `extra` adds sections."""
    return write_config(
        path, udp_port=free_port(socket.SOCK_DGRAM), http_port=free_port(), extra=NO_DNS + extra
    )


@asynccontextmanager
async def in_process_node(config: Path) -> AsyncIterator[RunningNode]:
    """Start the node from `config` in the running loop; stopped (hung up, unkeyed) on exit."""
    loaded = load_config(config)
    node = RunningNode(loaded, SecretStore(loaded))
    await node.start()
    try:
        yield node
    finally:
        await node.close()
