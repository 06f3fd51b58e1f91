"""One link of the node: its mode, its state and the moves between them, its keying handshake,
and what it knows of the network behind it.

`Link` is data; the machine that moves it is `LinkNetwork` (network.py), which asks
`TRANSITIONS` for every change of a link's state (style rule 6) and keeps one deadline per
`LinkTimer` kind in each link's `timers` (rule 4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from node.links import text as t
from node.machine import DeadlineTable, TransitionTable

__all__ = [
    "TRANSITIONS",
    "Handshake",
    "Link",
    "LinkMode",
    "LinkState",
    "LinkTimer",
    "LinkTrigger",
    "PermanentLink",
    "SavedLink",
]


class LinkMode(Enum):
    """What we do with a link: talk and listen (`*3`), only listen (`*2`), or only listen on
    the local radio (`*75`, app_rpt's local monitor: not relayed to the other links and calls,
    and left out of our `L` lists)."""

    TRANSCEIVE = "transceive"
    MONITOR = "monitor"
    LOCAL_MONITOR = "local_monitor"

    @property
    def letter(self) -> str:
        return "T" if self is LinkMode.TRANSCEIVE else "R"

    @property
    def leg(self) -> str:
        """The engine's leg mode for a link in this mode."""
        return {
            LinkMode.TRANSCEIVE: "transceive",
            LinkMode.MONITOR: "receive_only",
            LinkMode.LOCAL_MONITOR: "local_only",
        }[self]


class LinkState(Enum):
    """Where a link is."""

    #: Being dialled, or called and held, or failed a moment ago.
    CONNECTING = "connecting"
    UP = "up"
    #: Lost (or failed) and waiting to dial again.
    RETRYING = "retrying"


class LinkTrigger(Enum):
    """What moves a link from one state to the next."""

    ANSWERED = "answer"  # the link's call is up: the dialect starts
    FAILED = "fail"  # the call ended or could not be placed
    RETRY_LATER = "wait to retry"  # a failed outbound link will be dialled again
    REDIAL = "redial"  # the retry time came


_S, _T = LinkState, LinkTrigger

#: The one table of legal moves of a link: state -> trigger -> next state. A link that fails
#: for good is dropped from the network in state CONNECTING.
TRANSITIONS: TransitionTable[LinkState, LinkTrigger] = TransitionTable(
    {
        _S.CONNECTING: {_T.ANSWERED: _S.UP, _T.FAILED: _S.CONNECTING, _T.RETRY_LATER: _S.RETRYING},
        _S.UP: {_T.FAILED: _S.CONNECTING},
        _S.RETRYING: {_T.REDIAL: _S.CONNECTING},
    }
)


class LinkTimer(Enum):
    """The deadlines of one link."""

    #: The peer has not sent `!NEWKEY1!` yet: legacy keying when this fires.
    NEWKEY = "newkey"
    #: RADIO_KEY again while we talk to a `!NEWKEY!` peer.
    REDUNDANT = "redundant"
    #: Our periodic `L` list.
    LIST = "list"
    #: The network behind the link (its last `L` list) is forgotten: no list came for too long.
    LIST_EXPIRY = "list expiry"
    #: Dial a lost link again.
    RETRY = "retry"
    #: A redial of a permanent link that nobody answered yet: dial afresh.
    ATTEMPT = "attempt"


class Handshake(Enum):
    """How keying crosses the link (app_rpt `enum newkey`)."""

    #: Answered, no handshake yet: voice presence keys (app_rpt's initial state).
    PENDING = "pending"
    #: `!NEWKEY1!`: voice presence keys; we send voice only while talking, then UNKEY + CNG.
    NEWKEY1 = "newkey1"
    #: `!NEWKEY!`: RADIO_KEY/UNKEY, KEY repeated every 2 s while talking.
    NEWKEY = "newkey"
    #: No handshake within 2 s: RADIO_KEY/UNKEY.
    LEGACY = "legacy"
    #: A `wt-guest` link: we are a web-transceiver guest, keyed by voice presence both ways,
    #: and speak no dialect (app_rpt never sends a guest `!NEWKEY1!`).
    GUEST = "guest"

    @property
    def by_voice(self) -> bool:
        return self in (Handshake.PENDING, Handshake.NEWKEY1, Handshake.GUEST)


@dataclass(frozen=True, slots=True)
class PermanentLink:
    """A link the node keeps up by itself ("permalink"): dialled at start, redialled forever."""

    node: str
    mode: LinkMode = LinkMode.TRANSCEIVE


@dataclass(frozen=True, slots=True)
class SavedLink:
    """A link `disconnect_all` dropped, as `*74` brings it back."""

    node: str
    mode: LinkMode
    permanent: bool


@dataclass(slots=True)
class Link:
    """One link's state (the machine is `LinkNetwork`)."""

    node: str
    mode: LinkMode
    direction: str
    state: LinkState = LinkState.CONNECTING
    callno: int | None = None
    addr: tuple[str, int] | None = None
    codec: str | None = None
    permanent: bool = False
    handshake: Handshake = Handshake.PENDING
    rx_keyed: bool = False
    last_keyed: float | None = None
    #: When its receiver last keyed and last unkeyed (app_rpt's lastkeytime/lastunkeytime,
    #: what AMI SawStat reports); cleared when the link is lost.
    keyed_at: float | None = None
    unkeyed_at: float | None = None
    connected_at: float | None = None
    #: The network behind this link, from its latest `L` list.
    behind: tuple[t.LinkEntry, ...] = ()
    #: When its latest `L` list came (None: none yet since the link came up).
    list_at: float | None = None
    #: Entries left out of the last list we sent it, to keep it within one TEXT frame.
    list_dropped: int = 0
    #: We are sending it a talk spurt.
    talking: bool = False
    #: Outbound retries since the link was last up.
    retries: int = 0
    #: Redials since the link was created (app_rpt's `reconnects`, shown by AMI XStat).
    reconnects: int = 0
    #: A `wt-guest` link (we dial as a web-transceiver guest; no link texts either way).
    guest: bool = False
    #: When the guest call was answered (a refusal answers and hangs up at once).
    answered_at: float | None = None
    #: An inbound call held until the caller's source address is verified.
    verifying: bool = False
    timers: DeadlineTable[LinkTimer] = field(default_factory=DeadlineTable)

    def go(self, trigger: LinkTrigger) -> None:
        """Move the link's state as `TRANSITIONS` says (LocalProtocolError if it says no)."""
        self.state = TRANSITIONS.move(self.state, trigger, f"link to node {self.node}")

    @property
    def up(self) -> bool:
        return self.state is LinkState.UP

    @property
    def transceive_up(self) -> bool:
        return self.up and self.mode is LinkMode.TRANSCEIVE

    @property
    def behind_nodes(self) -> frozenset[str]:
        return frozenset(e.node for e in self.behind)

    @property
    def list_letter(self) -> str:
        """How this link appears in `L` lists: T, R, or C while not up."""
        return self.mode.letter if self.up else "C"

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "node": self.node,
            "call": self.callno,
            "mode": self.mode.value if self.up else "connecting",
            "direction": self.direction,
            "state": self.state.value,
            "keyed": self.rx_keyed,
            "last_keyed_s": None if self.last_keyed is None else round(now - self.last_keyed, 1),
            "connected_s": None if self.connected_at is None else round(now - self.connected_at, 1),
            "codec": self.codec,
            "nodes": [str(e) for e in self.behind],
            "list_s": None if self.list_at is None else round(now - self.list_at, 1),
            "permanent": self.permanent,
            "addr": None if self.addr is None else f"{self.addr[0]}:{self.addr[1]}",
            "newkey": self.handshake.value,
        }

    def listed(self) -> list[t.LinkEntry]:
        """This link and everything behind it as its neighbours see it: behind a monitor link
        every transceive entry reads as monitor, behind a link that is not up everything as
        connecting (app_rpt __mklinklist)."""
        letter = self.list_letter
        out = [t.LinkEntry(letter, self.node)]
        for e in self.behind:
            if letter == "C":
                out.append(t.LinkEntry("C", e.node))
            elif letter == "R" and e.mode == "T":
                out.append(t.LinkEntry("R", e.node))
            else:
                out.append(e)
        return out
