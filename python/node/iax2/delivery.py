"""The reliable half of an IAX2 call: sequence numbers, retransmission, ACK and VNAK, and the RTT
that times the retries (research/iax2.md §1.8-1.11).

`ReliableDelivery` is the base of `Call` (call.py): it owns the 8-bit counters, the queue of
frames waiting for acknowledgement and the frames produced by one input. `Call` decides what
to send and what an acknowledgement or an exhausted retry means for the call.

* 8-bit sequence numbers, mod-256 arithmetic. ACK, INVAL, VNAK, TXCNT and TXACC advance
  neither counter. Every received full frame's iseqno cumulatively acknowledges our queue.
* An old duplicate is ACKed again; a frame from the future gets a VNAK and is dropped. A VNAK
  makes us resend every unacknowledged frame from the seqno it asks for.
* Reliable frames are retransmitted with R set and the *current* iseqno: first after
  2 x RTT clamped to [0.1 s, 10 s] (RTT starts at 1 s and follows PING/PONG and LAGRQ/LAGRP
  echoes), then x10 capped at 10 s, at most `MAX_SENDS` transmissions in all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from node._core import FullFrame
from node.iax2.constants import FrameType, IaxSubclass
from node.iax2.timestamps import CallClock
from node.machine import Outbox

if TYPE_CHECKING:
    from node.iax2.call_events import CallEvent
    from node.iax2.call_ies import IeList

__all__ = [
    "ACK_LIKE",
    "INITIAL_RTT",
    "MAX_RETRY",
    "MAX_SENDS",
    "MIN_RETRY",
    "RETRY_BACKOFF",
    "Pending",
    "ReliableDelivery",
    "echo_reply",
    "first_retry",
]

#: Retransmission: first retry at 2 x RTT within these bounds, then x10 up to the maximum.
MIN_RETRY = 0.1
MAX_RETRY = 10.0
RETRY_BACKOFF = 10.0
#: A reliable frame is sent at most this many times (t = 0, 2, 12, 22 s with the default RTT);
#: when the last retry also goes unanswered the call is lost (t = 32 s).
MAX_SENDS = 4
#: RTT assumed before any measurement (Asterisk's DEFAULT_RETRY_TIME).
INITIAL_RTT = 1.0

#: IAX frames that acknowledge or count, and are neither numbered nor acknowledged themselves.
ACK_LIKE = frozenset(
    {IaxSubclass.ACK, IaxSubclass.INVAL, IaxSubclass.VNAK, IaxSubclass.TXCNT, IaxSubclass.TXACC}
)
_MASK8 = 0xFF
#: Outstanding PING/LAGRQ probes remembered for RTT samples.
_MAX_PROBES = 8


def first_retry(rtt: float) -> float:
    """The first retransmission delay for a measured RTT: 2 x RTT within [0.1 s, 10 s]."""
    return min(MAX_RETRY, max(MIN_RETRY, 2.0 * rtt))


def echo_reply(
    frame: FullFrame,
    subclass: int,
    *,
    scall: int,
    oseq: int,
    iseq: int,
    ies: IeList | None = None,
) -> FullFrame:
    """An IAX frame that answers `frame` without taking a sequence number (ACK, VNAK, call 1's
    stateless replies): it echoes the timestamp and goes to the call number that sent it."""
    return FullFrame(
        FrameType.IAX,
        subclass,
        scall=scall,
        dcall=frame.scall,
        ts=frame.ts,
        oseq=oseq,
        iseq=iseq,
        ies=ies,
    )


@dataclass(slots=True)
class Pending:
    """A reliable frame waiting for acknowledgement, kept as constructor arguments so each
    retransmission is a fresh frame (frames already handed out are never mutated)."""

    ftype: int
    subclass: int
    ts: int
    oseq: int
    ies: IeList | None
    payload: bytes
    keep_dcall_zero: bool
    next_at: float
    interval: float
    #: Timer-driven transmissions so far (VNAK resends do not count, as in Asterisk).
    sends: int = 1


class ReliableDelivery:
    """Numbered, acknowledged, retransmitted full frames between our `callno` and the peer's."""

    def __init__(self, callno: int) -> None:
        self.callno = callno
        #: The peer's call number (0 until known).
        self.peer_callno = 0
        #: Round-trip time in seconds: the latest PING/PONG or LAGRQ/LAGRP sample, as
        #: Asterisk's `pingtime` (it sets the first retransmission delay).
        self.rtt = INITIAL_RTT
        #: Whether `rtt` is a measurement (False while it is still the assumed `INITIAL_RTT`).
        self.rtt_sampled = False
        self.clock = CallClock()
        self.oseq = 0
        self.iseq = 0
        self._queue: list[Pending] = []
        # Our outstanding PING/LAGRQ by timestamp: when sent, and whether retransmitted.
        self._probes: dict[int, tuple[float, bool]] = {}
        self._vnak_served: tuple[int, float] | None = None  # (iseqno, when)
        #: Frames and events produced by the current input, in order.
        self._out: Outbox[FullFrame, CallEvent] = Outbox()
        # Set while handling one in-order frame: did a reply carry the ack, or must none go out?
        self._replied = False
        self._suppress_ack = False

    @property
    def unacked(self) -> int:
        """How many reliable frames wait for acknowledgement."""
        return len(self._queue)

    @property
    def measured_rtt(self) -> float | None:
        """The latest RTT sample in seconds, or None before the first echo came back (what
        the status shows: the assumed 1 s of `INITIAL_RTT` is no figure of the path)."""
        return self.rtt if self.rtt_sampled else None

    def _retry_deadline(self) -> float | None:
        """When the next retransmission is due, or None with nothing unacknowledged."""
        return min(p.next_at for p in self._queue) if self._queue else None

    # --- sending ------------------------------------------------------------------------------

    def _send(
        self,
        now: float,
        ftype: int,
        subclass: int,
        *,
        ies: IeList | None = None,
        payload: bytes = b"",
        ts: int | None = None,
        dcall_zero: bool = False,
    ) -> None:
        """Send a reliable full frame: it takes the next oseqno and is retransmitted until
        acknowledged."""
        if ts is None:
            ts = self.clock.stamp(now)
        pending = Pending(
            ftype,
            subclass,
            ts,
            self.oseq,
            ies,
            payload,
            dcall_zero,
            next_at=now + first_retry(self.rtt),
            interval=first_retry(self.rtt),
        )
        self._queue.append(pending)
        self.oseq = (self.oseq + 1) & _MASK8
        self._out.send(self._build(pending, retrans=False))
        self._replied = True

    def _build(self, p: Pending, *, retrans: bool) -> FullFrame:
        return FullFrame(
            p.ftype,
            p.subclass,
            scall=self.callno,
            dcall=0 if p.keep_dcall_zero else self.peer_callno,
            ts=p.ts,
            oseq=p.oseq,
            iseq=self.iseq,
            retrans=retrans,
            ies=p.ies,
            payload=p.payload,
        )

    def _answer_frame(self, subclass: int, frame: FullFrame) -> None:
        """ACK or VNAK of `frame`: echoes its timestamp, takes no seqno, never retransmitted.

        Like Asterisk, the oseqno field repeats the iseqno of the frame answered (normally our
        own oseqno); nobody reads it, but the wire then matches Asterisk's byte for byte.
        """
        self._out.send(
            echo_reply(frame, subclass, scall=self.callno, oseq=frame.iseq, iseq=self.iseq)
        )

    def _ack(self, frame: FullFrame) -> None:
        self._answer_frame(IaxSubclass.ACK, frame)

    def _retransmit(self, p: Pending) -> None:
        if p.ftype == FrameType.IAX and p.ts in self._probes:
            self._probes[p.ts] = (self._probes[p.ts][0], True)
        self._out.send(self._build(p, retrans=True))

    def _retransmit_due(self, now: float) -> bool:
        """Resend every frame whose retry time has come. True when one of them has been sent
        `MAX_SENDS` times already: the peer is gone (nothing more is resent then)."""
        for p in list(self._queue):
            if p.next_at > now:
                continue
            if p.sends >= MAX_SENDS:
                return True
            self._retransmit(p)
            p.sends += 1
            p.interval = min(MAX_RETRY, p.interval * RETRY_BACKOFF)
            p.next_at = now + p.interval
        return False

    # --- receiving ----------------------------------------------------------------------------

    def _take_acked(self, iseq: int) -> list[Pending]:
        """Drop and return every queued frame below `iseq` (a cumulative ACK); none when `iseq`
        is outside the window of what we sent."""
        if not self._queue:
            return []
        first = self._queue[0].oseq
        k = (iseq - first) & _MASK8
        if k == 0 or k > ((self.oseq - first) & _MASK8):
            return []
        acked = [p for p in self._queue if ((p.oseq - first) & _MASK8) < k]
        self._queue = self._queue[len(acked) :]
        return acked

    def _in_order(self, frame: FullFrame) -> bool:
        """Take `frame` if it is the next one the peer numbered (iseq advances); otherwise ACK
        an old duplicate again or VNAK a frame from the future, and drop it."""
        if frame.oseq != self.iseq:
            if ((self.iseq - frame.oseq) & _MASK8) < 128:
                # An old duplicate: our ACK was lost, say it again.
                self._ack(frame)
            else:
                # From the future: something in between is missing. Ask for it and drop this.
                self._answer_frame(IaxSubclass.VNAK, frame)
            return False
        self.iseq = (self.iseq + 1) & _MASK8
        self._replied = False
        self._suppress_ack = False
        return True

    def _vnak(self, iseq: int, now: float) -> None:
        # Every frame that arrives after a gap makes the peer send a VNAK with the same iseqno.
        # The first one is served at once; its echoes within half an RTT are not, or a burst
        # of N frames would cost N x N retransmissions.
        last = self._vnak_served
        if last is not None and last[0] == iseq and now - last[1] < self.rtt / 2:
            return
        self._vnak_served = (iseq, now)
        for p in self._queue:
            if ((p.oseq - iseq) & _MASK8) < 128:
                self._retransmit(p)

    # --- round-trip time ----------------------------------------------------------------------

    def _probe(self, now: float, subclass: int) -> None:
        """Send a PING or LAGRQ whose echo will give an RTT sample."""
        self._send(now, FrameType.IAX, subclass)
        ts = self._queue[-1].ts
        self._probes[ts] = (now, False)
        while len(self._probes) > _MAX_PROBES:
            del self._probes[next(iter(self._probes))]

    def _rtt_sample(self, echoed_ts: int, now: float) -> None:
        probe = self._probes.pop(echoed_ts, None)
        if probe is None or probe[1]:
            return  # not our probe, or ambiguous after a retransmission (Karn): no sample
        sample = now - probe[0]
        if 0 <= sample < 60.0:
            self.rtt = max(sample, 0.001)
            self.rtt_sampled = True
