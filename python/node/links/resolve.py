"""Node number -> IAX2 address, from an AllStarLink `extnodes`-format file (pure parsing).

Each useful line reads `<node>=radio@<ip>:<port>/<node>,<ip>` (the format ASL's node list
updater writes into `rpt_extnodes`). Lines that are comments, section headers or not in this form
are skipped; they never stop the node. DNS resolution of node numbers (the ASL3 default) is the
links issue's; an explicit address always wins over the file.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NodeAddress", "parse_address", "parse_extnodes", "resolve"]

_LINE = re.compile(
    r"^\s*(?P<node>\d+)\s*=\s*(?P<user>[^@\s]+)@(?P<host>[^:/\s]+):(?P<port>\d+)/(?P<target>\d+)"
)


@dataclass(frozen=True, slots=True)
class NodeAddress:
    """Where a node is reached and as whom we present ourselves."""

    node: str
    host: str
    port: int
    #: USERNAME for the NEW (AllStarLink nodes accept "radio" without authentication).
    username: str = "radio"

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)


def parse_address(text: str, node: str) -> NodeAddress:
    """An explicit `host:port` (or `[v6]:port`, or a bare host on port 4569). Raises ValueError."""
    text = text.strip()
    host, port = text, 4569
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"address {text!r}: missing ']'")
        host = text[1:end]
        rest = text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"address {text!r}: expected ':port' after ']'")
            port = int(rest[1:])
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        port = int(port_text)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"address {text!r}: the host must be an IP address") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"address {text!r}: port must be 1-65535")
    return NodeAddress(node, host, port)


def parse_extnodes(text: str) -> dict[str, NodeAddress]:
    """Every well-formed `<node>=user@ip:port/<node>,ip` line; the last one for a node wins."""
    nodes: dict[str, NodeAddress] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        try:
            ipaddress.ip_address(m["host"])
        except ValueError:
            continue
        port = int(m["port"])
        if 1 <= port <= 65535:
            nodes[m["node"]] = NodeAddress(m["node"], m["host"], port, m["user"])
    return nodes


def resolve(node: str, addr: str | None, nodes_file: Path | None) -> NodeAddress:
    """The address to dial for `node`: `addr` if given, else the nodes file. Raises LookupError."""
    if addr:
        return parse_address(addr, node)
    if nodes_file is None:
        raise LookupError(f"node {node} has no address: give 'addr' or set [links] nodes_file")
    try:
        text = nodes_file.read_text(errors="replace")
    except OSError as exc:
        raise LookupError(f"cannot read the nodes file {nodes_file}: {exc.strerror}") from None
    found = parse_extnodes(text).get(node)
    if found is None:
        raise LookupError(f"node {node} is not in the nodes file {nodes_file}")
    return found
