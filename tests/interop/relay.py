"""A lossy UDP relay for interop tests: two loopback sockets and a thread that forwards between
them, dropping, duplicating and delaying (reordering) datagrams from a seeded generator.

    client  --->  front  [relay]  back  --->  server
            <---                        <---

The client (a node dialling) sends to `front`; the relay sends those datagrams on from `back`
to `server` (so the server sees one stable peer address), and everything the server sends to
`back` goes to the last client address seen. Every datagram that parses as a full IAX2 frame
is recorded with its direction, time and fate, so a test can count retransmissions (R flag) and
pair them with their originals.

Retransmissions (R set) are never dropped at random: a lost first transmission is then always
recovered by its first retry, which bounds the test's duration. The longer back-off chains are
covered on the simulated link of tests/iax2/callpair.py. `drop_first` predicates force the
loss of the first transmission of chosen frames, so a test can rely on a retransmission, and
`impair` switches the random part on and off (a test can set a call up on a clean link, whose
stateless CALLTOKEN replies are never retransmitted and could otherwise cost 2 s, 12 s, 22 s).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import random
import select
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from node._core import FrameError, FullFrame, MiniFrame, parse
from tests.loopback import Address, ServiceThread, udp_socket

__all__ = ["FORWARD", "REVERSE", "LossyRelay", "Seen"]

#: Directions: client -> server, and server -> client.
FORWARD, REVERSE = "forward", "reverse"

#: Decides whether the first transmission of a frame going in a direction is dropped.
DropRule = Callable[[str, FullFrame], bool]


@dataclass(frozen=True)
class Seen:
    """One full frame that reached the relay."""

    at: float
    direction: str
    frame: FullFrame
    #: "sent", "dropped", "duplicated" or "delayed".
    fate: str


@dataclass(order=True)
class _Held:
    at: float
    seq: int
    sock: socket.socket = field(compare=False)
    data: bytes = field(compare=False)
    to: Address = field(compare=False)


class LossyRelay(ServiceThread):
    """Forward between a client and `server` with seeded loss, duplication and reordering."""

    def __init__(
        self,
        server: Address,
        *,
        seed: int,
        loss: float = 0.1,
        duplicate: float = 0.03,
        reorder: float = 0.05,
        delay: float = 0.06,
        drop_first: list[DropRule] | None = None,
        impair: bool = True,
        front_port: int = 0,
    ) -> None:
        """`front_port`: where clients send (a free port by default)."""
        super().__init__("lossy-relay")
        self.server = server
        #: Whether the random impairment is on (forced drops apply either way).
        self.impair = impair
        #: A dead path: while set, every datagram either way is dropped (counted "blackout").
        self.blackout = False
        self.loss, self.duplicate, self.reorder, self.delay = loss, duplicate, reorder, delay
        self._rng = random.Random(seed)
        self._rules = list(drop_first or [])
        self.front = udp_socket(port=front_port)
        self.back = udp_socket()
        self.client: Address | None = None
        self.seen: list[Seen] = []
        #: Per direction: "datagrams", "mini" frames, "retransmissions" (R set), and each fate.
        self.counters: dict[str, Counter[str]] = {FORWARD: Counter(), REVERSE: Counter()}
        self._held: list[_Held] = []
        self._seq = itertools.count()

    @property
    def front_addr(self) -> Address:
        return self.front.getsockname()[:2]

    @property
    def back_addr(self) -> Address:
        return self.back.getsockname()[:2]

    def _release(self) -> None:
        self.front.close()
        self.back.close()

    # --- inspection ---------------------------------------------------------------------------

    def frames(self, direction: str | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if direction is None or s.direction == direction]

    def retransmissions(self, direction: str | None = None) -> list[Seen]:
        return [s for s in self.frames(direction) if s.frame.retrans]

    def original_of(self, retry: Seen) -> Seen | None:
        """The first transmission of a retransmitted frame (same call, oseqno, timestamp)."""
        f = retry.frame
        for s in self.frames(retry.direction):
            g = s.frame
            if (
                not g.retrans
                and (g.scall, g.oseq, g.ts, g.ftype, g.subclass)
                == (f.scall, f.oseq, f.ts, f.ftype, f.subclass)
                and s.at <= retry.at
            ):
                return s
        return None

    # --- forwarding ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            timeout = 0.05
            if self._held:
                timeout = max(0.0, min(timeout, self._held[0].at - now))
            try:
                ready, _, _ = select.select([self.front, self.back], [], [], timeout)
            except (OSError, ValueError):
                return
            for sock in ready:
                try:
                    data, addr = sock.recvfrom(65535)
                except OSError:
                    return
                if sock is self.front:
                    self.client = addr[:2]
                    self._forward(FORWARD, data, self.back, self.server)
                elif self.client is not None:
                    self._forward(REVERSE, data, self.front, self.client)
            now = time.monotonic()
            while self._held and self._held[0].at <= now:
                held = heapq.heappop(self._held)
                self._send(held.sock, held.data, held.to)

    def _send(self, sock: socket.socket, data: bytes, to: Address) -> None:
        # A far end that is gone shows up in the test as missing frames.
        with contextlib.suppress(OSError):
            sock.sendto(data, to)

    def _forward(self, direction: str, data: bytes, sock: socket.socket, to: Address) -> None:
        counters = self.counters[direction]
        counters["datagrams"] += 1
        if self.blackout:
            counters["blackout"] += 1
            return
        try:
            frame = parse(data)
        except FrameError:
            frame = None
        full = frame if isinstance(frame, FullFrame) else None
        if isinstance(frame, MiniFrame):
            counters["mini"] += 1
        retrans = full is not None and full.retrans
        if retrans:
            counters["retransmissions"] += 1

        forced = False
        if full is not None and not retrans:
            for rule in self._rules:
                if rule(direction, full):
                    self._rules.remove(rule)
                    forced = True
                    break
        if forced or (self.impair and not retrans and self._rng.random() < self.loss):
            fate = "dropped"
        elif self.impair and self._rng.random() < self.reorder:
            fate = "delayed"
            heapq.heappush(
                self._held, _Held(time.monotonic() + self.delay, next(self._seq), sock, data, to)
            )
        else:
            fate = "sent"
            self._send(sock, data, to)
            if self.impair and self._rng.random() < self.duplicate:
                fate = "duplicated"
                self._send(sock, data, to)
        counters[fate] += 1
        if full is not None:
            with self._lock:
                self.seen.append(Seen(time.monotonic(), direction, full, fate))
