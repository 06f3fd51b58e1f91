"""The network behind our links, as `L` lists carry it: the lists we send, what we keep of a
neighbour's list, and the graph the snapshot shows.

Pure functions and one cache, used by `network.LinkNetwork` (sans-I/O, no clock). A list to a
link names every other link and what its own list said stands behind it; app_rpt sends it as
one TEXT frame, so a list longer than a frame carries is cut, our own links kept first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from node.links import text as t
from node.links.link import Link, LinkMode

__all__ = [
    "LIST_EXPIRY",
    "LIST_INTERVAL",
    "LIST_KICK",
    "LIST_KICK_SPREAD",
    "MAX_LIST_BYTES",
    "MODE_NAMES",
    "ListBuilder",
    "Segments",
    "graph",
    "listed_links",
    "own_view",
]

log = logging.getLogger(__name__)

#: Every link gets our `L` list this often (app_rpt linkpost_time default; HamVoIP needs <= 40).
LIST_INTERVAL = 30.0
#: What a neighbour's list is held for when no newer one comes. app_rpt's linkpost_time is
#: 30 s by default and at most 40 s (its config clamps it to 10-40), so a live app_rpt (or us)
#: sends at least one list every 40 s; two missed lists in a row, plus slack for a late one,
#: mean the neighbour no longer speaks for the network behind it.
LIST_EXPIRY = 2 * 40.0 + 10.0
#: The longest `L` text we send, in bytes without the NUL. Asterisk's chan_iax2 reads each
#: datagram into a 4,096-byte buffer (a longer one is cut) and builds each frame it sends in a
#: 4,096-byte buffer (a longer TEXT loses its end), and the full-frame header takes 12 of them:
#: 4,084 bytes of payload, NUL included. app_rpt sends its list as one TEXT, never split, and a
#: received list replaces the whole previous one, so a longer list cannot be split either.
MAX_LIST_BYTES = 4096 - 12 - 1
#: After a change of links, lists go out within 150 ms + random(0-100 ms) (__kickshort).
LIST_KICK = 0.15
LIST_KICK_SPREAD = 0.10
#: A list's mode letters, spelled out for the snapshot.
MODE_NAMES = {"T": "transceive", "R": "monitor", "C": "connecting"}

#: One link's part of a list: its entries, joined, and their length in bytes.
Segment = tuple[tuple[str, ...], str, int]
#: Every listed link with its segment, built once for all the lists of a kick.
Segments = list[tuple[Link, Segment]]


def listed_links(links: Iterable[Link], recipient: Link | None) -> list[Link]:
    """The links a list to `recipient` shows: not itself, no link whose number starts with 0
    (no node), no local monitor link."""
    return [
        link
        for link in links
        if link is not recipient
        and not link.node.startswith("0")
        and link.mode is not LinkMode.LOCAL_MONITOR
    ]


def own_view(
    entries: tuple[t.LinkEntry, ...], me: str | None, sender: str
) -> tuple[t.LinkEntry, ...]:
    """A neighbour's list as we hold it: without us and the neighbour itself (a list that
    comes back round a loop names them), and each node once. This keeps our lists, and the
    lists built from them by the next node, from growing round a loop."""
    out: list[t.LinkEntry] = []
    seen = {me, sender}
    for e in entries:
        if e.node not in seen:
            seen.add(e.node)
            out.append(e)
    return tuple(out)


def graph(
    me: str | None, links: Iterable[Link], entries_dropped: int, expired: int
) -> dict[str, Any]:
    """The network as a graph for the snapshot: every node once, with how far it is and the
    mode in which we reach it, and the edges: our own links (`adjacent`), and for each link the
    nodes its list says stand behind it. An `L` list is flat (app_rpt sends no hops), so a node
    two or more hops away hangs off the neighbour it is behind."""
    links = list(links)
    nodes: list[dict[str, Any]] = [{"node": me, "hops": 0, "mode": None, "via": None}]
    edges: list[dict[str, Any]] = []
    seen = {me}
    for link in links:
        mode = link.mode.value if link.up else "connecting"
        if link.node not in seen:
            seen.add(link.node)
            nodes.append({"node": link.node, "hops": 1, "mode": mode, "via": None})
        edges.append({"from": me, "to": link.node, "mode": mode, "adjacent": True})
        for e in link.listed()[1:]:
            if e.node in seen:
                continue
            seen.add(e.node)
            emode = MODE_NAMES.get(e.mode, "connecting")
            nodes.append({"node": e.node, "hops": 2, "mode": emode, "via": link.node})
            edges.append({"from": link.node, "to": e.node, "mode": emode, "adjacent": False})
    return {
        "nodes": nodes,
        "edges": edges,
        "lists": {
            "entries_dropped": entries_dropped,
            "cut": sum(1 for link in links if link.list_dropped),
            "expired": expired,
        },
    }


class ListBuilder:
    """Builds the `L` lists we send, at most `max_bytes` long, from each link's segment (kept
    until the link's list or state changes, as a kick builds one list per link out of all the
    others' segments)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        #: Entries left out of the lists we sent to keep them within `max_bytes`, over all
        #: lists (each link's last cut is its `list_dropped`).
        self.entries_dropped = 0
        self._segments: dict[str, tuple[Any, Segment]] = {}

    def forget(self, node: str) -> None:
        self._segments.pop(node, None)

    def segment(self, link: Link) -> Segment:
        """The link and everything behind it as its neighbours' lists show it."""
        key = (link.list_letter, link.behind)
        cached = self._segments.get(link.node)
        if cached is not None and cached[0] == key:
            return cached[1]
        entries = tuple(str(e) for e in link.listed())
        joined = ",".join(entries)
        segment = (entries, joined, len(joined.encode()))
        self._segments[link.node] = (key, segment)
        return segment

    def all_segments(self, links: Iterable[Link]) -> Segments:
        """Every listed link with its segment: a kick builds them once for all its lists."""
        return [(link, self.segment(link)) for link in listed_links(links, None)]

    def list_for(self, recipient: Link, every: Segments, links: Iterable[Link]) -> str:
        """The list `recipient` gets: every other link's segment, cut to `max_bytes`."""
        segments = [seg for link, seg in every if link is not recipient]
        size = len("L ") + sum(seg[2] for seg in segments) + max(0, len(segments) - 1)
        if size <= self.max_bytes:
            recipient.list_dropped = 0
            return "L " + ",".join(seg[1] for seg in segments)
        text, dropped = t.link_list_within([seg[0] for seg in segments], self.max_bytes)
        if not any(link.list_dropped for link in links):
            log.warning(
                "our link list holds %d nodes, more than one TEXT frame carries (%d bytes): "
                "%d of the nodes behind our links are left out of it",
                sum(len(seg[0]) for seg in segments),
                self.max_bytes,
                dropped,
            )
        recipient.list_dropped = dropped
        self.entries_dropped += dropped
        return text
