"""Replies that need no call state (sans-I/O).

Asterisk answers some frames "apathetically": from source call number 1, with oseqno 0 and
without creating a call. POKE (a qualify probe) is the one the node needs from the start: it is
answered with PONG echoing the POKE's timestamp, and the prober's ACK of that PONG (sent to call
number 1) is absorbed without a reply.
"""

from __future__ import annotations

from dataclasses import dataclass

from node._core import FullFrame
from node.iax2.constants import FrameType, IaxSubclass
from node.iax2.delivery import echo_reply

__all__ = ["APATHETIC_CALLNO", "StatelessReply", "apathetic_reply", "stateless_reply"]

#: The source call number Asterisk uses for replies that create no call.
APATHETIC_CALLNO = 1


@dataclass(frozen=True, slots=True)
class StatelessReply:
    """What to do with a frame that belongs to no call.

    `frame` is the reply to send (or None), `handled` says whether the frame was fully dealt
    with here (a POKE, or the ACK of our PONG) so no call machinery needs to see it.
    """

    frame: FullFrame | None
    handled: bool


def apathetic_reply(
    request: FullFrame, subclass: int, ies: list[tuple[int, object]] | None = None
) -> FullFrame:
    """An IAX reply from call number 1 that acknowledges `request` without creating a call."""
    return echo_reply(
        request, subclass, scall=APATHETIC_CALLNO, oseq=0, iseq=(request.oseq + 1) & 0xFF, ies=ies
    )


def stateless_reply(frame: FullFrame) -> StatelessReply:
    """Answer the frames that need no call: POKE gets PONG; ACKs to call 1 are absorbed."""
    if frame.ftype != FrameType.IAX:
        return StatelessReply(None, False)
    if frame.subclass == IaxSubclass.POKE and frame.dcall == 0:
        return StatelessReply(apathetic_reply(frame, IaxSubclass.PONG), True)
    if frame.subclass == IaxSubclass.ACK and frame.dcall == APATHETIC_CALLNO:
        return StatelessReply(None, True)
    return StatelessReply(None, False)
