"""Node number -> IAX2 address: explicit addresses and the `extnodes` file format (pure parsing).

Each useful extnodes line reads `<node>=radio@<ip>[:<port>]/<node>[,<check>]` (the format ASL's
node list updater writes into `rpt_extnodes`; a missing port means 4569, as app_rpt's
`parse_node_format` reads it). `<check>` is the address inbound calls claiming that node must
come from, or `NONE` for no check. Lines that are comments, section headers or not in this form
are skipped; they never stop the node. The asynchronous lookup that puts these together with
DNS, in app_rpt's order, is `node.links.lookup.NodeResolver`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "IAX2_PORT",
    "NO_CHECK",
    "NodeAddress",
    "find_extnode",
    "parse_address",
    "parse_extnodes",
    "resolve",
    "same_ip",
]

IAX2_PORT = 4569

#: The extnodes 2nd field that turns off the inbound source-IP check for a node.
NO_CHECK = "NONE"

_ENTRY = (
    r"(?P<user>[^@\s]+)@(?P<host>[^:/\s]+)(?::(?P<port>\d+))?/(?P<target>\d+)"
    r"(?:[ \t]*,[ \t]*(?P<check>[^,\s]+))?"
)
_LINE = re.compile(rf"^\s*(?P<node>\d+)\s*=\s*{_ENTRY}")


@dataclass(frozen=True, slots=True)
class NodeAddress:
    """Where a node is reached and as whom we present ourselves."""

    node: str
    host: str
    port: int
    #: USERNAME for the NEW (AllStarLink nodes accept "radio" without authentication).
    username: str = "radio"
    #: What inbound calls from this node are checked against (extnodes 2nd field): an IP, a
    #: host name, `NONE` (no check), or None when the entry has no such field.
    check_ip: str | None = None

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)


def parse_address(text: str, node: str) -> NodeAddress:
    """An explicit `host:port` (or `[v6]:port`, or a bare host on port 4569). Raises ValueError."""
    text = text.strip()
    host, port = text, IAX2_PORT
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"address {text!r}: missing ']'")
        host = text[1:end]
        rest = text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"address {text!r}: expected ':port' after ']'")
            port = _port(rest[1:], text)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        port = _port(port_text, text)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"address {text!r}: the host must be an IP address") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"address {text!r}: port must be 1-65535")
    return NodeAddress(node, host, port, check_ip=host)


def _port(digits: str, text: str) -> int:
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"address {text!r}: the port must be a number")
    return int(digits)


def _entry(m: re.Match[str]) -> NodeAddress | None:
    try:
        ipaddress.ip_address(m["host"])
    except ValueError:
        return None
    port = int(m["port"]) if m["port"] else IAX2_PORT
    if not 1 <= port <= 65535:
        return None
    return NodeAddress(m["node"], m["host"], port, m["user"], m["check"])


def parse_extnodes(text: str) -> dict[str, NodeAddress]:
    """Every well-formed `<node>=user@ip[:port]/<node>[,check]` line; the last one for a node
    wins (as Asterisk's config reader does for a repeated key)."""
    nodes: dict[str, NodeAddress] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is not None and (found := _entry(m)) is not None:
            nodes[found.node] = found
    return nodes


def find_extnode(text: str, node: str) -> NodeAddress | None:
    """The entry for `node` in an extnodes text, or None: `parse_extnodes(text).get(node)`
    without building the whole table (ASL's file lists some 50 000 nodes and is re-read on
    every lookup)."""
    if not (node.isascii() and node.isdigit()):
        return None
    pattern = re.compile(rf"(?m)^[ \t]*(?P<node>{node})[ \t]*=[ \t]*{_ENTRY}")
    found = None
    for m in pattern.finditer(text):
        entry = _entry(m)
        if entry is not None:
            found = entry
    return found


def same_ip(a: str, b: str) -> bool:
    """Whether two textual IPs are the same host (an IPv4-mapped IPv6 equals its IPv4)."""
    try:
        x, y = ipaddress.ip_address(a), ipaddress.ip_address(b)
    except ValueError:
        return False
    if isinstance(x, ipaddress.IPv6Address) and x.ipv4_mapped is not None:
        x = x.ipv4_mapped
    if isinstance(y, ipaddress.IPv6Address) and y.ipv4_mapped is not None:
        y = y.ipv4_mapped
    return x == y


def resolve(node: str, addr: str | None, nodes_file: Path | None) -> NodeAddress:
    """The address to dial for `node`: `addr` if given, else the nodes file (no DNS; the
    asynchronous `NodeResolver.lookup` adds that). Raises LookupError or ValueError."""
    if addr:
        return parse_address(addr, node)
    if nodes_file is None:
        raise LookupError(f"node {node} has no address: give 'addr' or set [links] nodes_file")
    try:
        text = nodes_file.read_text(errors="replace")
    except OSError as exc:
        raise LookupError(f"cannot read the nodes file {nodes_file}: {exc.strerror}") from None
    found = find_extnode(text, node)
    if found is None:
        raise LookupError(f"node {node} is not in the nodes file {nodes_file}")
    return found
