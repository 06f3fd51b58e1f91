"""A userspace impairment relay for audio tests and benches: the talker's voice frames are
delayed from a seeded distribution (so they reorder), lost in bursts (a Gilbert-Elliott chain)
and duplicated; everything else passes with the base delay.

    talker  --->  front  [relay]  back  --->  node
            <---                       <---

Every decision is drawn per voice frame from the seed, so the same seed gives the same losses,
delays and duplicates (what the clock then makes of them is up to the machine). The relay
records which voice frames it lost, by index from the first, so a bench can build the
reference with exactly those frames concealed.
"""

from __future__ import annotations

import heapq
import random
import socket
import time
from dataclasses import dataclass, field

from node._core import FrameError, FullFrame, MiniFrame, parse
from node.iax2.constants import FrameType
from tests.interop.relay import REVERSE, LossyRelay, _Held
from tests.loopback import Address

__all__ = ["Condition", "Draw", "FateDrawer", "Fates", "ImpairmentRelay"]


@dataclass(frozen=True)
class Condition:
    """One network: the delay distribution, Gilbert-Elliott loss and duplicates."""

    name: str
    base_ms: float = 0.0
    #: Standard deviation of the normal delay around `base_ms` (clipped at 0).
    sd_ms: float = 0.0
    #: Mean frames between delay spikes (0: none); a spike delays a frame by `spike_ms` and
    #: the frames after it by 20 ms less each (a queue that fills and drains).
    spike_every: int = 0
    spike_ms: float = 0.0
    loss: float = 0.0
    #: Mean length of a loss burst, in frames.
    burst: float = 2.0
    duplicate: float = 0.0


@dataclass
class Fates:
    """What the relay did to the talker's voice frames, by frame index (0 = first voice)."""

    lost: set[int] = field(default_factory=set)
    duplicated: int = 0
    voice: int = 0
    #: When each voice frame reached the relay (`time.monotonic()`): the talker's own pacing.
    arrived: dict[int, float] = field(default_factory=dict)
    #: The delay drawn for each voice frame that was not lost, in ms.
    delay_ms: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Draw:
    """One voice frame's fate: lost, or delivered after `delay_s` (and again after
    `dup_delay_s` when duplicated)."""

    lost: bool
    delay_s: float
    dup_delay_s: float | None


class FateDrawer:
    """The seeded draws behind a condition, frame by frame: what the relay applies to each
    voice frame it forwards, and what an offline replay of the same seed applies without one
    (`FateDrawer(cond, random.Random(seed))` draws what `ImpairmentRelay(.., cond, seed)` does)."""

    def __init__(self, cond: Condition, rng: random.Random) -> None:
        self.cond = cond
        self._rng = rng
        self._bad = False
        self._spike = 0.0

    def draw(self) -> Draw:
        # Every draw happens for every frame, so one decision never shifts the others.
        lost, delay = self._lost(), self._delay()
        dup = self._rng.random() < self.cond.duplicate
        dup_delay = self._delay() if dup else None
        return Draw(lost, delay, dup_delay)

    def _lost(self) -> bool:
        c = self.cond
        if c.loss <= 0:
            return False
        # Gilbert-Elliott with a lossless good state and a lossy bad state: the bad state
        # lasts `burst` frames on average, and its share of time is `loss`.
        leave = 1.0 / c.burst
        enter = c.loss * leave / (1.0 - c.loss)
        self._bad = self._rng.random() >= leave if self._bad else self._rng.random() < enter
        return self._bad

    def _delay(self) -> float:
        c = self.cond
        d = c.base_ms + (self._rng.gauss(0.0, c.sd_ms) if c.sd_ms else 0.0)
        if c.spike_every and self._rng.random() < 1.0 / c.spike_every:
            self._spike = c.spike_ms
        d += self._spike
        self._spike = max(0.0, self._spike - 20.0)
        return max(0.0, d) / 1000.0


class ImpairmentRelay(LossyRelay):
    """Talker -> node with seeded impairment of voice frames; node -> talker untouched.

    The sockets and the forwarding thread are `LossyRelay`'s; only the fate of each datagram
    differs. Control and signalling full frames pass with the base delay only, never lost
    (IAX2 would retransmit them, which says nothing about audio). Every decision is drawn per
    voice frame from the seed, so the same seed gives the same losses, delays and duplicates.
    """

    def __init__(self, server: Address, cond: Condition, seed: int) -> None:
        super().__init__(server, seed=seed, impair=False)
        self.cond = cond
        self._fate = FateDrawer(cond, self._rng)
        self.fates = Fates()
        self._first_ts: int | None = None

    def _voice_index(self, data: bytes) -> int | None:
        try:
            frame = parse(data)
        except FrameError:
            return None
        if isinstance(frame, MiniFrame):
            ts16 = frame.ts16
        elif isinstance(frame, FullFrame) and frame.ftype == FrameType.VOICE and not frame.retrans:
            ts16 = frame.ts & 0xFFFF
        else:
            return None
        if self._first_ts is None:
            self._first_ts = ts16
        return ((ts16 - self._first_ts) & 0xFFFF) // 20

    def _hold(self, delay: float, sock: socket.socket, data: bytes, to: Address) -> None:
        heapq.heappush(self._held, _Held(time.monotonic() + delay, next(self._seq), sock, data, to))

    def _forward(self, direction: str, data: bytes, sock: socket.socket, to: Address) -> None:
        if direction == REVERSE:
            self._send(sock, data, to)
            return
        index = self._voice_index(data)
        if index is None:
            self._hold(self.cond.base_ms / 1000.0, sock, data, to)
            return
        with self._lock:
            self.fates.voice += 1
            self.fates.arrived.setdefault(index, time.monotonic())
            fate = self._fate.draw()
            if fate.lost:
                self.fates.lost.add(index)
                return
            self.fates.delay_ms.setdefault(index, 1000 * fate.delay_s)
            self._hold(fate.delay_s, sock, data, to)
            if fate.dup_delay_s is not None:
                self.fates.duplicated += 1
                self._hold(fate.dup_delay_s, sock, data, to)
