"""Test harness: two IAX2 endpoints joined by a simulated, impairable link (style rule 14).

`CallPair` carries every datagram as bytes (each frame is serialised and parsed again, so the
wire format is exercised too) with a fixed latency. An `impair` hook decides, per datagram, how
many copies arrive and how late: `[]` drops it, `[0.0, 0.0]` duplicates it, `[0.3]` delays it
past later ones (reordering). Time is a float that only moves when `step()` jumps it to the
earliest delivery or endpoint deadline, so retransmission and keep-alive timing is exact and
tests need no sleeping. `drive()` and `run_until()` are capped in steps so a livelock fails the
test instead of hanging it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from node._core import FullFrame, parse
from node.iax2.call import DialParams
from node.iax2.endpoint import Endpoint, EndpointOutput, InboundPolicy

Address = tuple[str, int]

ADDR_A: Address = ("127.0.0.1", 40001)
ADDR_B: Address = ("127.0.0.1", 40002)
LATENCY = 0.01


@dataclass(frozen=True)
class Datagram:
    """One frame put on the link."""

    sent_at: float
    src: str  # "a" or "b"
    frame: FullFrame


#: Decides the fate of one datagram: extra delays of the copies that arrive ([] = lost).
Impair = Callable[[Datagram], Sequence[float]]


def clean(_d: Datagram) -> Sequence[float]:
    return (0.0,)


def seeded(
    seed: int, *, loss: float = 0.0, dup: float = 0.0, reorder: float = 0.0, spread: float = 0.05
) -> Impair:
    """Random impairment, reproducible from `seed`."""
    rng = random.Random(seed)

    def impair(_d: Datagram) -> Sequence[float]:
        if rng.random() < loss:
            return ()
        delays = [rng.uniform(0, spread) if rng.random() < reorder else 0.0]
        if rng.random() < dup:
            delays.append(rng.uniform(0, spread))
        return delays

    return impair


@dataclass(order=True)
class _InFlight:
    at: float
    seq: int
    dst: str = field(compare=False)
    src_addr: Address = field(compare=False)
    data: bytes = field(compare=False)


def make_endpoint(
    policy: InboundPolicy | None = None,
    codec_policy: str = "prefer_slin16",
    *,
    seed: int = 1,
    secrets: dict[str, str] | None = None,
) -> Endpoint:
    rng = random.Random(seed)
    table = dict(secrets or {})
    return Endpoint(
        policy or InboundPolicy(auth="off"),
        codec_policy,
        token_key=rng.randbytes(32),
        randbelow=rng.randrange,
        peer_secret=table.get,
    )


class CallPair:
    """Endpoint `a` at ADDR_A and endpoint `b` at ADDR_B, on one simulated link."""

    def __init__(
        self,
        a: Endpoint,
        b: Endpoint,
        *,
        latency: float = LATENCY,
        impair: Impair = clean,
        now: float = 1000.0,
    ) -> None:
        self.a, self.b = a, b
        self.addr = {"a": ADDR_A, "b": ADDR_B}
        self.latency = latency
        self.impair = impair
        self.now = now
        self.wire: list[Datagram] = []  # everything sent, before impairment
        self.events: dict[str, list[tuple[float, object]]] = {"a": [], "b": []}
        self._flight: list[_InFlight] = []
        self._seq = itertools.count()

    # --- sending ------------------------------------------------------------------------------

    def endpoint(self, side: str) -> Endpoint:
        return self.a if side == "a" else self.b

    def take(self, side: str, out: EndpointOutput) -> EndpointOutput:
        """Put an endpoint's output on the link and record its events."""
        other = "b" if side == "a" else "a"
        for dst_addr, frame in out.frames:
            assert dst_addr == self.addr[other], f"{side} sent to {dst_addr}"
            d = Datagram(self.now, side, frame)
            self.wire.append(d)
            for extra in self.impair(d):
                self._flight.append(
                    _InFlight(
                        self.now + self.latency + extra,
                        next(self._seq),
                        other,
                        self.addr[side],
                        frame.to_bytes(),
                    )
                )
        self.events[side].extend((self.now, e) for e in out.events)
        return out

    def dial(self, side: str = "a", params: DialParams | None = None) -> int:
        other = "b" if side == "a" else "a"
        callno, out = self.endpoint(side).dial(
            self.now, self.addr[other], params or DialParams("1000", calling_number="2000")
        )
        self.take(side, out)
        return callno

    def act(self, side: str, out: EndpointOutput) -> EndpointOutput:
        """Record the output of a command run on `side` (e.g. `pair.a.key(n, pair.now)`)."""
        return self.take(side, out)

    # --- time ---------------------------------------------------------------------------------

    def _next_time(self) -> float | None:
        times = [f.at for f in self._flight]
        times += [d for d in (self.a.next_deadline(), self.b.next_deadline()) if d is not None]
        return min(times) if times else None

    def step(self) -> bool:
        """Advance to the next delivery or deadline and process it; False when idle."""
        t = self._next_time()
        if t is None:
            return False
        self.now = max(self.now, t)
        self._flight.sort()
        if self._flight and self._flight[0].at <= self.now:
            f = self._flight.pop(0)
            frame = parse(f.data)
            assert isinstance(frame, FullFrame)
            self.take(f.dst, self.endpoint(f.dst).receive(f.src_addr, frame, self.now))
            return True
        for side in ("a", "b"):
            ep = self.endpoint(side)
            deadline = ep.next_deadline()
            if deadline is not None and deadline <= self.now:
                self.take(side, ep.timer(self.now))
        return True

    def drive(self, max_steps: int = 200) -> None:
        """Step until no datagram is in flight (timers due before the last delivery fire)."""
        for _ in range(max_steps):
            if not self._flight:
                return
            self.step()
        raise AssertionError(f"link still busy after {max_steps} steps")

    def run_until(self, t: float, max_steps: int = 10_000) -> None:
        """Process every delivery and timer up to time `t`, then set the clock to `t`."""
        for _ in range(max_steps):
            nxt = self._next_time()
            if nxt is None or nxt > t:
                self.now = max(self.now, t)
                return
            self.step()
        raise AssertionError(f"more than {max_steps} steps before t={t}")

    def run_for(self, seconds: float, max_steps: int = 10_000) -> None:
        self.run_until(self.now + seconds, max_steps)

    # --- inspection ---------------------------------------------------------------------------

    def event_types(self, side: str) -> list[type]:
        return [type(e) for _, e in self.events[side]]

    def events_of(self, side: str, kind: type) -> list:
        return [e for _, e in self.events[side] if isinstance(e, kind)]

    def sent(self, side: str) -> list[FullFrame]:
        return [d.frame for d in self.wire if d.src == side]

    def clear(self) -> None:
        """Forget recorded frames and events (not the link or the endpoints)."""
        self.wire.clear()
        self.events = {"a": [], "b": []}
