"""When a link's network health crosses the operator's limits (`[links] warn_loss_pct`,
`warn_rtt_ms`), with hysteresis so a link on the edge does not flap.

Sans-I/O: the links service hands each up link's figures (`Sample`) and `now` to
`HealthWatch.check` every few seconds and publishes what it returns. A link turns degraded as
soon as its loss or round-trip time reaches a threshold; it recovers only once every figure has
stayed below `RECOVER_RATIO` of its threshold for `RECOVER_HOLD` seconds.

Loss is judged over the window since the previous check, not since the call began: a link that
lost a burst an hour ago is not degraded now. A window with too few frames to say anything (no
one talked: app_rpt sends no audio while unkeyed) keeps the last judged figure, so a degraded
link does not recover merely by falling silent.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MIN_WINDOW_FRAMES",
    "RECOVER_HOLD",
    "RECOVER_RATIO",
    "HealthChanged",
    "HealthWatch",
    "Sample",
    "Thresholds",
]

#: A degraded link recovers once every figure stays below this share of its threshold...
RECOVER_RATIO = 0.7
#: ...for this many seconds in a row.
RECOVER_HOLD = 15.0
#: Loss over fewer frames than this (1 s of 20 ms audio) is no figure.
MIN_WINDOW_FRAMES = 50


@dataclass(frozen=True, slots=True)
class Thresholds:
    """`[links] warn_loss_pct` and `warn_rtt_ms`; 0 turns that check off."""

    loss_pct: float = 5.0
    rtt_ms: int = 500


@dataclass(frozen=True, slots=True)
class Sample:
    """One link's figures at a check: the latest RTT and the cumulative frame counters of both
    directions (ours from the jitter buffer, the peer's from its PONG's RR IEs)."""

    rtt_ms: int | None = None
    rx_lost: int = 0
    rx_frames: int = 0
    #: The peer's RR_LOSS count and RR_PKTS (None until a PONG carried them).
    peer_lost: int | None = None
    peer_packets: int | None = None


@dataclass(frozen=True, slots=True)
class HealthChanged:
    """A link turned degraded or recovered, with the figures that decided it."""

    node: str
    callno: int | None
    degraded: bool
    #: The worse of both directions' loss over the last window, percent (None: not known).
    loss_pct: float | None
    rtt_ms: int | None
    thresholds: Thresholds
    #: What crossed (degraded) or that every figure is back under its limit (recovered).
    reason: str


@dataclass(slots=True)
class _Link:
    callno: int | None
    degraded: bool = False
    #: Since when every figure has been below its recovery level (None: not now).
    good_since: float | None = None
    rx: tuple[int, int] | None = None  # (lost, frames) at the previous check
    peer: tuple[int, int] | None = None
    rx_loss: float | None = None
    peer_loss: float | None = None


def _window_loss(
    prev: tuple[int, int] | None, cur: tuple[int, int], known: float | None
) -> tuple[float | None, tuple[int, int]]:
    """Loss percent between two (lost, received) counter readings, and the reading to keep as
    the next window's start. A window too small to judge keeps `known` and its start."""
    if prev is None:
        return known, cur
    lost, frames = cur[0] - prev[0], cur[1] - prev[1]
    if lost < 0 or frames < 0:
        return known, cur  # counters restarted (a new leg): start a new window
    if lost + frames < MIN_WINDOW_FRAMES:
        return known, prev
    return 100.0 * lost / (lost + frames), cur


class HealthWatch:
    """Per-link degraded/recovered state with hysteresis; inputs carry non-decreasing `now`."""

    def __init__(self) -> None:
        self._links: dict[str, _Link] = {}

    def degraded(self, node: str) -> bool:
        link = self._links.get(node)
        return link is not None and link.degraded

    def check(
        self, node: str, callno: int | None, sample: Sample, limits: Thresholds, now: float
    ) -> HealthChanged | None:
        """Judge one link's figures at `now`; an event when it turned degraded or recovered."""
        link = self._links.get(node)
        if link is None or link.callno != callno:
            # A new link, or the same node on a new call: its counters start afresh.
            link = self._links[node] = _Link(callno)
        link.rx_loss, link.rx = _window_loss(
            link.rx, (sample.rx_lost, sample.rx_frames), link.rx_loss
        )
        if sample.peer_lost is not None and sample.peer_packets is not None:
            link.peer_loss, link.peer = _window_loss(
                link.peer, (sample.peer_lost, sample.peer_packets), link.peer_loss
            )
        losses = [x for x in (link.rx_loss, link.peer_loss) if x is not None]
        loss = round(max(losses), 1) if losses else None
        rtt = sample.rtt_ms
        over = _crossed(loss, rtt, limits, 1.0)
        if not link.degraded:
            if not over:
                return None
            link.degraded, link.good_since = True, None
            return HealthChanged(node, callno, True, loss, rtt, limits, " and ".join(over))
        if _crossed(loss, rtt, limits, RECOVER_RATIO):
            link.good_since = None
            return None
        if link.good_since is None:
            link.good_since = now
        if now - link.good_since < RECOVER_HOLD:
            return None
        link.degraded, link.good_since = False, None
        return HealthChanged(node, callno, False, loss, rtt, limits, "loss and RTT back in limits")

    def forget(self, keep: set[str]) -> None:
        """Drop the state of every link not in `keep` (gone links; a relink starts fresh)."""
        for node in [n for n in self._links if n not in keep]:
            del self._links[node]


def _crossed(loss: float | None, rtt: int | None, limits: Thresholds, ratio: float) -> list[str]:
    """Which figures are at or over `ratio` times their threshold (a threshold of 0 is off)."""
    out = []
    if loss is not None and limits.loss_pct > 0 and loss >= limits.loss_pct * ratio:
        out.append(f"loss {loss:g} % >= {limits.loss_pct * ratio:g} %")
    if rtt is not None and limits.rtt_ms > 0 and rtt >= limits.rtt_ms * ratio:
        out.append(f"RTT {rtt} ms >= {limits.rtt_ms * ratio:g} ms")
    return out
