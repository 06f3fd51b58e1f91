"""Where an IAX2 call is, the one table of the moves between (style rule 6), and the kinds of
deadline it keeps (rule 4).

`Call` (call.py) asks this table for every change of state, so an illegal move is caught in one
place and raises `LocalProtocolError`. The diagram is in docs/iax2.md.
"""

from __future__ import annotations

from enum import Enum

from node.machine import TransitionTable

__all__ = [
    "LIVE_STATES",
    "MEDIA_STATES",
    "SETUP_STATES",
    "TRANSITIONS",
    "CallState",
    "CallTimer",
    "CallTrigger",
    "Direction",
]


class CallState(Enum):
    """Where a call is. See docs/iax2.md for the diagram."""

    #: Created, nothing sent or received yet.
    IDLE = "idle"
    #: Outbound: NEW sent (possibly again with a call token), waiting for the callee.
    CALLING = "calling"
    #: Outbound: AUTHREP sent. Inbound: AUTHREQ sent, waiting for AUTHREP.
    AUTHENTICATING = "authenticating"
    #: ACCEPT exchanged: media may flow, ringing until answered.
    ACCEPTED = "accepted"
    #: Answered.
    UP = "up"
    #: We sent HANGUP (or REJECT) and wait for its acknowledgement.
    HANGING_UP = "hanging_up"
    #: Over; kept for `LINGER` seconds to re-ACK retransmissions.
    TERMINATED = "terminated"
    #: Gone; the endpoint forgets it.
    CLOSED = "closed"


class Direction(Enum):
    INBOUND = "inbound"
    OUTBOUND = "outbound"


class CallTrigger(Enum):
    """What moves a call from one state to the next."""

    DIAL = "dial"  # start_outbound
    TOKEN = "token"  # CALLTOKEN received, NEW sent again
    AUTH = "auth"  # AUTHREQ sent (inbound) or AUTHREP sent (outbound)
    ACCEPT = "accept"  # ACCEPT sent (inbound) or received (outbound)
    ANSWER = "answer"  # ANSWER sent (inbound) or received (outbound)
    END = "end"  # we sent HANGUP or REJECT
    PEER_END = "peer_end"  # HANGUP or REJECT received
    END_ACKED = "end_acked"  # our HANGUP/REJECT was acknowledged
    LOST = "lost"  # retransmissions exhausted, or INVAL received
    EXPIRED = "expired"  # linger over


_S, _T = CallState, CallTrigger
_LIVE_ENDS = {_T.END: _S.HANGING_UP, _T.PEER_END: _S.TERMINATED, _T.LOST: _S.CLOSED}

#: The one table of legal transitions: state -> trigger -> next state.
TRANSITIONS: TransitionTable[CallState, CallTrigger] = TransitionTable(
    {
        _S.IDLE: {
            _T.DIAL: _S.CALLING,
            _T.AUTH: _S.AUTHENTICATING,
            _T.ACCEPT: _S.ACCEPTED,
            _T.END: _S.HANGING_UP,
        },
        _S.CALLING: {_T.TOKEN: _S.CALLING, _T.AUTH: _S.AUTHENTICATING, _T.ACCEPT: _S.ACCEPTED}
        | _LIVE_ENDS,
        _S.AUTHENTICATING: {_T.ACCEPT: _S.ACCEPTED} | _LIVE_ENDS,
        _S.ACCEPTED: {_T.ANSWER: _S.UP} | _LIVE_ENDS,
        _S.UP: dict(_LIVE_ENDS),
        _S.HANGING_UP: {
            _T.END_ACKED: _S.TERMINATED,
            _T.PEER_END: _S.TERMINATED,
            _T.LOST: _S.CLOSED,
        },
        _S.TERMINATED: {_T.EXPIRED: _S.CLOSED, _T.LOST: _S.CLOSED},
        _S.CLOSED: {},
    }
)

#: Media (voice, DTMF, TEXT, CONTROL) flows only in these.
MEDIA_STATES = frozenset({_S.ACCEPTED, _S.UP})
#: Call setup, watched by the setup time-out.
SETUP_STATES = frozenset({_S.CALLING, _S.AUTHENTICATING})
#: Set up or being set up: not hanging up, terminated or closed.
LIVE_STATES = frozenset({_S.IDLE, _S.CALLING, _S.AUTHENTICATING, _S.ACCEPTED, _S.UP})


class CallTimer(Enum):
    """A call's deadlines beside retransmission (which each queued frame carries itself)."""

    #: The next PING (RTT probe and keep-alive).
    PING = "ping"
    #: The next LAGRQ.
    LAGRQ = "lagrq"
    #: Call setup has taken too long.
    SETUP = "setup"
    #: The end of the linger after the call ended.
    LINGER = "linger"
