"""Node lookup in DNS as app_rpt's `node_lookup_bydns` does it: the pure part.

app_rpt asks for SRV `_iax._udp.<node>.<domain>`, takes the first record's target and port,
then the target's A record, and dials `radio@<ip>:<port>/<node>` (checking inbound calls from
that node against the same IP). It does so only for node numbers of 4 digits or more. This module
holds what does not need a network: the names, the choice among SRV records, the checks that
turn garbage records into clear failures, and the answer cache. The queries themselves are made
by `node.links.lookup.NodeResolver`.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = [
    "CACHE_SIZE",
    "DEFAULT_DOMAIN",
    "MAX_POSITIVE_TTL",
    "MIN_DNS_DIGITS",
    "NEGATIVE_TTL",
    "AnswerCache",
    "SrvRecord",
    "dns_eligible",
    "pick_srv",
    "positive_ttl",
    "srv_name",
    "srv_problem",
]

#: ASL3's `dns_node_domain` default.
DEFAULT_DOMAIN = "nodes.allstarlink.org"
#: app_rpt never looks up shorter node numbers in DNS (private and test nodes live below 1000).
MIN_DNS_DIGITS = 4
#: Positive answers are kept for their TTL, but never longer than this: ASL updates its records
#: within a minute of a node registering from a new address, and a record claiming a week must
#: not pin a node to an address it has left.
MAX_POSITIVE_TTL = 300.0
#: "No such node" is remembered this long, so an operator dialling a wrong number or a caller
#: retrying does not cost a round trip each time, while a newly registered node appears soon.
NEGATIVE_TTL = 15.0
#: Entries kept at most; the least recently used goes first.
CACHE_SIZE = 1024


def dns_eligible(node: str) -> bool:
    """Whether app_rpt would look `node` up in DNS: ASCII digits, at least 4 of them."""
    return len(node) >= MIN_DNS_DIGITS and node.isascii() and node.isdigit()


def srv_name(node: str, domain: str) -> str:
    """The SRV name app_rpt queries for `node` (absolute, so no search domain is appended)."""
    return f"_iax._udp.{node}.{domain.strip('.')}."


@dataclass(frozen=True, slots=True)
class SrvRecord:
    """One SRV record's data."""

    priority: int
    weight: int
    port: int
    #: The target host name, absolute, in presentation form (`"2000.nodes.example."`), or `"."`.
    target: str


def pick_srv(records: Sequence[SrvRecord]) -> SrvRecord | None:
    """The record to use: the lowest priority, then the highest weight, then the first listed.

    app_rpt takes "the first record"; for ASL's single-record answers this is the same, and for
    several it is the one RFC 2782 says to try first (weighting is not randomised: the choice
    must be repeatable, since the inbound check compares against it).
    """
    best: SrvRecord | None = None
    for rec in records:
        if best is None or (rec.priority, -rec.weight) < (best.priority, -best.weight):
            best = rec
    return best


def srv_problem(rec: SrvRecord) -> str | None:
    """Why a chosen SRV record cannot be dialled, or None when it can."""
    if rec.target in (".", ""):
        return "its SRV target is '.' (the service is declared unavailable)"
    if not 1 <= rec.port <= 65535:
        return f"its SRV record gives port {rec.port}"
    return None


def positive_ttl(*ttls: float) -> float:
    """How long to keep an answer built from records with these TTLs: the smallest, clamped to
    0..MAX_POSITIVE_TTL (a negative or non-finite TTL counts as 0: not cached)."""
    ttl = min(ttls) if ttls else 0.0
    if not math.isfinite(ttl) or ttl <= 0:
        return 0.0
    return min(float(ttl), MAX_POSITIVE_TTL)


_V = TypeVar("_V")


class AnswerCache(Generic[_V]):
    """A bounded cache whose entries expire at a time the caller gives (sans-I/O: `now` is an
    argument). Stores positive and negative answers alike; the value says which."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        if size < 1:
            raise ValueError("the cache needs room for at least one entry")
        self._size = size
        self._entries: OrderedDict[str, tuple[float, _V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, now: float) -> _V | None:
        """The live value for `key`, or None (an expired entry is dropped)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if now >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: str, value: _V, now: float, ttl: float) -> None:
        """Keep `value` until `now + ttl`; a ttl of 0 or less keeps nothing."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (now + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
