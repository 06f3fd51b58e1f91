"""Status posts to a stats collector, as app_rpt's `statpost` does them (sans-I/O).

app_rpt (`do_link_post`, `do_key_post` in apps/app_rpt.c) sends two kinds of GET to
`statpost_url`, every one numbered by a sequence number that grows by one per post:

- a *link post* at start, every `statpost_time` seconds, and 200 ms after a link change:
  `?node=<n>&time=<unix>&seqno=<s>&nodes=<T|R|C><node>,...&apprptvers=<v>&apprptuptime=<s>`
  `&totalkerchunks=<n>&totalkeyups=<n>&totaltxtime=<s>&timeouts=<n>&totalexecdcommands=<n>`
  `&keyed=<0|1>&keytime=<s>`;
- a *key post* on every key and unkey of the node's receiver:
  `?node=<n>&time=<unix>&seqno=<s>&keyed=<0|1>&keytime=<s>`.

`keytime` is the whole seconds since the last key or unkey (0 if there was none); `nodes` lists
only the adjacent links (T transceive, R monitor, C connecting), possibly none. The data comes
from a `StatReport` the controller builds when asked.

`StatPoster` never touches a socket or a clock: inputs carry `now` (monotonic, for scheduling)
and the Unix time (for the `time` field), and return the URLs to GET plus the next deadline.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LINK_CHANGE_DELAY",
    "KeyStats",
    "StatOutput",
    "StatPoster",
    "StatReport",
    "link_list",
]

#: app_rpt LINKPOSTSHORTTIME: a link change is posted this soon (seconds).
LINK_CHANGE_DELAY = 0.2


@dataclass(frozen=True, slots=True)
class StatReport:
    """What a status post tells about the node, as the controller sees it at that moment."""

    #: This node's number.
    node: str
    #: The adjacent links, each as mode letter + node (`"T2000"`, `"R2001"`, `"C2002"`).
    links: tuple[str, ...] = ()
    #: Whether the node's receiver (the local source) is keyed now.
    keyed: bool = False
    #: Seconds since the receiver last keyed or unkeyed; None if it never has.
    key_changed_s: float | None = None
    #: Seconds since the node started.
    uptime_s: float = 0.0
    #: Key-ups too short to carry anything (app_rpt totalkerchunks).
    kerchunks: int = 0
    #: Key-ups in all (app_rpt totalkeyups).
    keyups: int = 0
    #: Seconds the transmitter has been keyed in all (app_rpt totaltxtime).
    tx_s: float = 0.0
    #: Transmit time-outs (app_rpt timeouts).
    timeouts: int = 0
    #: DTMF commands executed (app_rpt totalexecdcommands).
    executed_commands: int = 0

    def __post_init__(self) -> None:
        if not self.node:
            raise ValueError("a status report needs the node number")
        for count in (self.kerchunks, self.keyups, self.timeouts, self.executed_commands):
            if count < 0:
                raise ValueError("counters cannot be negative")


def link_list(links: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The `nodes` entries for the snapshot's `links` objects, as app_rpt's `__mklinklist`
    writes them for a status post: `C` while not up, else `R` for monitor, `T` otherwise."""
    out = []
    for link in links:
        if link.get("mode") == "local_monitor":
            continue  # app_rpt lists no local monitor link
        if link.get("state") != "up":
            letter = "C"
        elif link.get("mode") == "monitor":
            letter = "R"
        else:
            letter = "T"
        out.append(f"{letter}{link['node']}")
    return tuple(out)


@dataclass(slots=True)
class KeyStats:
    """The local source's keying, counted as app_rpt counts it for status posts (sans-I/O:
    every input carries `now`). Kerchunks stay 0: app_rpt declares the counter but never
    increments it."""

    #: Key-ups since start.
    keyups: int = 0
    #: Transmit time-outs since start.
    timeouts: int = 0
    #: Seconds keyed, from key-ups already released.
    released_s: float = 0.0
    #: When the current key-up began, while keyed.
    keyed_at: float | None = None
    #: When the source last keyed or unkeyed.
    changed_at: float | None = None

    def keyed(self, now: float) -> None:
        if self.keyed_at is None:
            self.keyups += 1
            self.keyed_at = now
            self.changed_at = now

    def unkeyed(self, now: float) -> None:
        if self.keyed_at is not None:
            self.released_s += max(0.0, now - self.keyed_at)
            self.keyed_at = None
            self.changed_at = now

    def report(self, node: str, links: tuple[str, ...], now: float, uptime_s: float) -> StatReport:
        held = max(0.0, now - self.keyed_at) if self.keyed_at is not None else 0.0
        return StatReport(
            node=node,
            links=links,
            keyed=self.keyed_at is not None,
            key_changed_s=None if self.changed_at is None else now - self.changed_at,
            uptime_s=uptime_s,
            keyups=self.keyups,
            tx_s=self.released_s + held,
            timeouts=self.timeouts,
        )


@dataclass(frozen=True, slots=True)
class StatOutput:
    """What one input produced: URLs to GET, in order, and the next deadline."""

    urls: tuple[str, ...] = ()
    deadline: float | None = None


def _secs(value: float | None) -> int:
    if value is None or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _q(value: str) -> str:
    # Node lists are digits, letters and commas; anything else (a web-transceiver name with a
    # space) is escaped rather than breaking the query.
    return urllib.parse.quote(value, safe=",-")


class StatPoster:
    """Builds app_rpt's status posts and schedules the periodic one (sans-I/O).

    The first link post is due at `now` (app_rpt posts as soon as it starts). Inputs must carry
    non-decreasing `now`.
    """

    def __init__(self, url: str, interval: float, version: str, now: float) -> None:
        if interval <= 0:
            raise ValueError("the post interval must be positive")
        self.url = url
        self.interval = float(interval)
        self.version = version
        self.seqno = 0
        self._due = now

    def next_deadline(self) -> float:
        return self._due

    def timer(self, now: float, unix_time: float, report: StatReport) -> StatOutput:
        """The link post, if it is due."""
        if now < self._due:
            return StatOutput((), self._due)
        self._due = now + self.interval
        return StatOutput((self.link_post(unix_time, report),), self._due)

    def skipped(self, now: float) -> StatOutput:
        """A due link post could not be made (no report): the next one is an interval away."""
        self._due = now + self.interval
        return StatOutput((), self._due)

    def links_changed(self, now: float) -> StatOutput:
        """A link came, went or changed mode: post the link list soon."""
        self._due = min(self._due, now + LINK_CHANGE_DELAY)
        return StatOutput((), self._due)

    def key_changed(self, unix_time: float, report: StatReport) -> StatOutput:
        """The receiver keyed or unkeyed (`report` already says which): the key post."""
        return StatOutput((self.key_post(unix_time, report),), self._due)

    def link_post(self, unix_time: float, report: StatReport) -> str:
        pairs = (
            f"&nodes={_q(','.join(report.links))}"
            f"&apprptvers={_q(self.version)}"
            f"&apprptuptime={_secs(report.uptime_s)}"
            f"&totalkerchunks={report.kerchunks}"
            f"&totalkeyups={report.keyups}"
            f"&totaltxtime={_secs(report.tx_s)}"
            f"&timeouts={report.timeouts}"
            f"&totalexecdcommands={report.executed_commands}"
            f"&keyed={int(report.keyed)}"
            f"&keytime={_secs(report.key_changed_s)}"
        )
        return self._url(unix_time, report, pairs)

    def key_post(self, unix_time: float, report: StatReport) -> str:
        pairs = f"&keyed={int(report.keyed)}&keytime={_secs(report.key_changed_s)}"
        return self._url(unix_time, report, pairs)

    def _url(self, unix_time: float, report: StatReport, pairs: str) -> str:
        self.seqno += 1
        head = f"?node={_q(report.node)}&time={int(unix_time)}&seqno={self.seqno}"
        return f"{self.url}{head}{pairs}"
