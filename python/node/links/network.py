"""Every link of the node in the AllStarLink dialect, as one sans-I/O machine.

A link is an IAX2 call that speaks app_rpt's link dialect on top (research/allstar.md §1): the
newkey handshake, keying by voice presence or by RADIO_KEY/UNKEY, `L` link lists, `T`
telemetry, polite `!!DISCONNECT!!`, retries and permanent links. `LinkNetwork` holds all links
because most of the dialect is about the links together: the list sent to one link is built from
the others, telemetry and messages are forwarded to the others, and a connect is refused when
the node is already anywhere in the tree.

No I/O and no clock: inputs take `now` (monotonic seconds) and return one `LinkOutput` of
actions for the controller to carry out on calls and media legs (in order), events, and whether
the snapshot changed. The controller routes; it never interprets the dialect.

Lists go out when a link is added (dialled or answered) and every 30 s, as app_rpt sends them,
and also 150-250 ms after a neighbour's list changed what we hold (app_rpt waits for its next
periodic list there, so a change two hops away took up to 30 s per hop). Not when a link goes
away: app_rpt sends none then (the captures show no list after a `!!DISCONNECT!!`), and the rest
of the network learns of a departure with the next list. A neighbour's list replaces what we
held behind it, and expires when no list comes for `LIST_EXPIRY` (app_rpt keeps a list until the
link drops: its issue 1197). A list we send is at most `MAX_LIST_BYTES` long (see there).

One link's data, states and timers are in link.py, and the actions, events and `LinkOutput`
in link_output.py; their public names are importable from here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from node.errors import CommandError
from node.links import link_output, lists
from node.links import text as t
from node.links.link import (
    Handshake,
    Link,
    LinkMode,
    LinkState,
    LinkTimer,
    LinkTrigger,
    PermanentLink,
    SavedLink,
)
from node.links.link_output import (
    CAUSE_LINK_END,
    CAUSE_NOT_HERE,
    Answer,
    Dial,
    Hangup,
    LinkAction,
    LinkConnected,
    LinkDisconnected,
    LinkEvent,
    LinkKeyed,
    LinkOutput,
    MessageReceived,
    RemoteDigitReceived,
    SendCng,
    SendKey,
    SendText,
    SendUnkey,
    SetLeg,
    TelemetryReceived,
    VerifySource,
)
from node.links.lists import (
    LIST_EXPIRY,
    LIST_INTERVAL,
    LIST_KICK,
    LIST_KICK_SPREAD,
    MAX_LIST_BYTES,
)
from node.machine import DeadlineTable, Outbox

__all__ = [
    "Handshake",
    "Link",
    "LinkMode",
    "LinkNetwork",
    "LinkState",
    "LinkTimer",
    "PermanentLink",
    "SavedLink",
]
# The actions, events and output of the network (link_output.py) are names of this module too.
__all__ += link_output.__all__

log = logging.getLogger(__name__)

#: A link that has not completed the newkey handshake this long after answer is a legacy
#: peer (app_rpt NEWKEYTIME).
NEWKEY_TIMEOUT = 2.0
#: RADIO_KEY is repeated this often while we talk to a `!NEWKEY!` peer (REDUNDANT_TX_TIME).
REDUNDANT_KEY_INTERVAL = 2.0
#: Retries of a lost or failed outbound link: first after RETRY_FIRST, doubling up to RETRY_MAX
#: (app_rpt redials every 5 s); at most MAX_RETRIES unless the link is permanent.
RETRY_FIRST = 5.0
RETRY_MAX = 60.0
MAX_RETRIES = 5
#: A permanent link is redialled for ever, so its back-off stops here: once the path is back
#: the link is up again within this (plus the call set-up), however long the outage lasted.
PERMANENT_RETRY_MAX = 8.0
#: A redial of a permanent link that is not answered within this is dialled afresh: the call's
#: own NEW retransmissions are 10 s apart by then, and the path may have come back meanwhile.
PERMANENT_ATTEMPT = 6.0
#: After `!!DISCONNECT!!` the peer's HANGUP follows at once; if it does not, end the call.
DEAD_CALL_GRACE = 1.0
#: After our own `!!DISCONNECT!!` the far end hangs up first: app_rpt hangs up on reading the
#: text, but ASL3 runs its IAX2 jitter buffer forced on, so it reads the text only when the
#: buffer releases it, and a HANGUP from us would overtake it (app_rpt then takes the drop for a
#: lost link: it keeps the link for 10 s and redials a permanent one). Bounded, so a far end
#: that never hangs up is still ended: beyond the 1 s most jitter buffers are allowed to hold.
TEARDOWN_WAIT = 2.0
#: A web-transceiver host that answers and hangs up this soon refused the guest: app_rpt's
#: `[allstar-public]` dialplan answers a bad token, waits 1 s and hangs up.
GUEST_REFUSAL_WINDOW = 1.5


# --- the network --------------------------------------------------------------------------------


class LinkNetwork:
    """All links of the node `me` (None: the node has no number and cannot link)."""

    def __init__(
        self,
        me: str | None,
        *,
        rand: Callable[[], float],
        permanent: Iterable[PermanentLink] = (),
        verify_source: bool = False,
        dstar_nodes: Iterable[str] = (),
        guest_nodes: Iterable[str] = (),
    ) -> None:
        """`rand()` returns a float in [0, 1) (the list kick's spread); `verify_source` checks an
        inbound link's source address against its node's (app_rpt's default for `radio`
        callers); `dstar_nodes` are nodes whose link is a D-Star session; `guest_nodes` are
        dialled as web-transceiver guests (`wt-guest`)."""
        self.me = me
        self._rand = rand
        self._permanent: Mapping[str, PermanentLink] = {p.node: p for p in permanent}
        self._verify = verify_source
        self._dstar = frozenset(dstar_nodes)
        self._guests = frozenset(guest_nodes)
        self._links: dict[str, Link] = {}
        self._by_call: dict[int, Link] = {}
        #: Calls we no longer talk into (peer sent `!!DISCONNECT!!`, we sent ours and wait for
        #: its HANGUP, or we replaced the link): hung up by us when their time is due.
        self._dead: DeadlineTable[int] = DeadlineTable()
        #: The cause our HANGUP will carry, for the dead calls we have not hung up yet.
        self._dead_cause: dict[int, int] = {}
        self._kick_at: float | None = None
        self._kick_skip: set[str] = set()
        self._local_keyed = False
        self._local_key_change: float | None = None
        #: Texts received by kind ("L", "T", ..., "unknown"), for /stats.
        self.text_counts: dict[str, int] = {}
        #: Builds the lists we send (and counts what did not fit in one).
        self._lists = lists.ListBuilder(MAX_LIST_BYTES)
        #: Neighbours' lists forgotten because no newer one came within `LIST_EXPIRY`.
        self.lists_expired = 0
        #: The links the last `disconnect_all` dropped, for `*74` (app_rpt's savednodes).
        self.saved: tuple[SavedLink, ...] = ()
        #: The last node whose link keyed us up (app_rpt's ilink 7).
        self.last_keyed_node: str | None = None
        #: Sequence number of the `D` texts we send (app_rpt's dtmfidx).
        self._dtmf_seq = 0
        self._out: Outbox[LinkAction, LinkEvent] = Outbox()
        self._changed = False
        #: Links of another protocol (EchoLink stations, `3<number>`): listed after ours.
        self._foreign: tuple[t.LinkEntry, ...] = ()

    def __repr__(self) -> str:
        return f"LinkNetwork(me={self.me}, links={len(self._links)})"

    # --- getters ------------------------------------------------------------------------------

    @property
    def links(self) -> Mapping[str, Link]:
        return self._links

    def link_for_call(self, callno: int) -> Link | None:
        return self._by_call.get(callno)

    def is_link_call(self, callno: int) -> bool:
        """Whether the call carries (or carried) a link: such calls are not plain calls."""
        return callno in self._by_call or callno in self._dead

    def tree(self) -> frozenset[str]:
        """Every node reachable through our links, the adjacent ones included."""
        nodes = set(self._links)
        for link in self._links.values():
            nodes.update(e.node for e in link.behind)
        return frozenset(nodes)

    def graph(self) -> dict[str, Any]:
        """The network as a graph for the snapshot (`lists.graph`)."""
        return lists.graph(
            self.me, self._links.values(), self._lists.entries_dropped, self.lists_expired
        )

    def dstar_active(self) -> bool:
        """Whether a D-Star session is active: a link to a node declared `network = "dstar"`
        is up or being set up."""
        return any(node in self._dstar for node in self._links)

    def keyed_links(self) -> list[Link]:
        return [link for link in self._links.values() if link.rx_keyed]

    def list_entries(self) -> list[str]:
        """Our links as app_rpt's statpost and AMI write them (`T2000`, `R2001`, `C2002`);
        local monitor links are not listed."""
        return [
            f"{link.list_letter}{link.node}"
            for link in self._links.values()
            if link.mode is not LinkMode.LOCAL_MONITOR
        ] + [str(e) for e in self._foreign]

    def network_entries(self, recipient: Link | None = None) -> list[t.LinkEntry]:
        """Every node of our network as an `L` list shows it: each link and everything behind
        it, except `recipient` (app_rpt's __mklinklist, also AMI's LinkedNodes)."""
        entries: list[t.LinkEntry] = []
        for link in lists.listed_links(self._links.values(), recipient):
            entries.extend(link.listed())
        return entries + list(self._foreign)

    def set_foreign(self, entries: Iterable[tuple[str, str]], now: float) -> LinkOutput:
        """The links of another protocol (mode letter, node): our lists carry them from now
        on; a change goes out to every link soon, as a link of our own coming or going does."""
        foreign = tuple(t.LinkEntry(mode, node) for mode, node in entries)
        if foreign != self._foreign:
            self._foreign = foreign
            self._kick(now)
            self._changed = True
        return self._output()

    @property
    def list_entries_dropped(self) -> int:
        """Nodes left out of the lists we sent, as no TEXT frame carried them all."""
        return self._lists.entries_dropped

    def snapshot(self, now: float) -> list[dict[str, Any]]:
        return [link.to_json(now) for link in self._links.values()]

    def next_deadline(self) -> float | None:
        times = [link.timers.earliest() for link in self._links.values()]
        times += (self._dead.earliest(), self._kick_at)
        pending = [at for at in times if at is not None]
        return min(pending) if pending else None

    # --- plumbing -----------------------------------------------------------------------------

    def _output(self) -> LinkOutput:
        actions, events = self._out.take()
        changed, self._changed = self._changed, False
        return LinkOutput(actions, events, changed, self.next_deadline())

    def _send(self, link: Link, text: str) -> None:
        # A guest speaks no dialect: the host treats it as a web transceiver, not a node.
        if link.callno is not None and link.up and not link.guest:
            self._out.send(SendText(link.callno, text))

    def _kick(self, now: float, *, skip: str | None = None) -> None:
        """Send every link our list soon (once, however many changes come meanwhile).

        `skip` names a link that already has the list as it stands now (a callee's list went
        out at answer; a neighbour's own list does not change with what it told us). A later
        change before the kick fires is news to every link, so it clears the skips: a link
        that came up just before another one must hear of the second one too."""
        if self._kick_at is None:
            self._kick_at = now + LIST_KICK + LIST_KICK_SPREAD * self._rand()
            self._kick_skip = set()
            if skip is not None:
                self._kick_skip.add(skip)
        elif skip is None:
            self._kick_skip.clear()

    def _list_for(self, recipient: Link, every: lists.Segments | None = None) -> str:
        if every is None:
            every = self._lists.all_segments(self._links.values())
        text = self._lists.list_for(recipient, every, self._links.values())
        for entry in self._foreign:
            # Each foreign link is one short entry: it goes in while the list has room.
            extra = str(entry) if text == "L " else "," + str(entry)
            if len(text.encode()) + len(extra) <= self._lists.max_bytes:
                text += extra
        return text

    def _send_list(
        self,
        link: Link,
        now: float,
        every: lists.Segments | None = None,
    ) -> None:
        self._send(link, self._list_for(link, every))
        link.timers.set(LinkTimer.LIST, now + LIST_INTERVAL)

    def _telemetry(self, token: str, *args: str) -> None:
        """Our telemetry to every transceive link (app_rpt send_tele_link)."""
        assert self.me is not None
        text = t.telemetry(self.me, token, *args)
        for link in self._links.values():
            if link.transceive_up:
                self._send(link, text)

    def _forward(self, source: Link | None, text: str, *, transceive_only: bool) -> None:
        for link in self._links.values():
            if link is source or not link.up:
                continue
            if transceive_only and link.mode is not LinkMode.TRANSCEIVE:
                continue
            self._send(link, text)

    def _route(self, source: Link | None, dest: str, text: str) -> None:
        """Send `text` towards node `dest`: to the link it is behind, else to every link but
        the one it came from (app_rpt floods what it cannot place)."""
        for link in self._links.values():
            if link is not source and link.up and (link.node == dest or dest in link.behind_nodes):
                self._send(link, text)
                return
        self._forward(source, text, transceive_only=False)

    def _bind(self, link: Link, callno: int) -> None:
        if link.callno is not None:
            self._by_call.pop(link.callno, None)
        link.callno = callno
        self._by_call[callno] = link

    def _drop(self, link: Link) -> None:
        """Forget the link (its call, if any, is ended by whoever called this)."""
        self._links.pop(link.node, None)
        self._lists.forget(link.node)
        if link.callno is not None:
            self._by_call.pop(link.callno, None)
        self._changed = True

    def _go_dead(self, callno: int, now: float) -> None:
        """Stop talking into `callno`; hang it up if it is still there after the grace time."""
        self._dead.set(callno, now + DEAD_CALL_GRACE)

    def _tear_down(self, link: Link, now: float, cause: int = CAUSE_LINK_END) -> None:
        """End the link's call after our `!!DISCONNECT!!`: the far end hangs up first (see
        `TEARDOWN_WAIT`). A link that is not up yet, or a guest (sent no text), is hung up at
        once: it has no text to read first."""
        callno = link.callno
        if callno is None:
            return
        if link.up and not link.guest:
            self._dead.set(callno, now + TEARDOWN_WAIT)
            self._dead_cause[callno] = cause
        else:
            self._out.send(Hangup(callno, cause))
            self._go_dead(callno, now)

    # --- commands -----------------------------------------------------------------------------

    def start(self, now: float) -> LinkOutput:
        """Dial every permanent link."""
        if self.me is not None:
            for perm in self._permanent.values():
                if perm.node not in self._links and perm.node != self.me:
                    link = Link(
                        perm.node,
                        perm.mode,
                        "outbound",
                        permanent=True,
                        guest=perm.node in self._guests,
                    )
                    self._links[perm.node] = link
                    self._out.send(Dial(link.node, link.mode))
                    self._changed = True
        return self._output()

    def check_connect(self, node: str, mode: LinkMode, *, permanent: bool = False) -> Link | None:
        """Refuse a connect that cannot be done (CommandError); return the existing link to
        `node` if there is one (a mode change, or making it permanent), else None."""
        if self.me is None:
            raise CommandError("this node has no node number (node_id)", 409)
        if node == self.me:
            raise CommandError(f"node {node} is this node", 400)
        existing = self._links.get(node)
        if existing is not None:
            if existing.mode is mode and (existing.permanent or not permanent):
                raise CommandError(f"node {node} is already linked ({mode.value})", 409)
            return existing
        for link in self._links.values():
            if node in link.behind_nodes:
                # app_rpt's REMALREADY: a second path to a node makes a loop.
                raise CommandError(
                    f"node {node} is already in the network behind node {link.node}; "
                    "linking it again would make a loop",
                    409,
                )
        return None

    def connect(
        self, node: str, mode: LinkMode, now: float, *, permanent: bool = False
    ) -> LinkOutput:
        """Link to `node` (`*3` transceive, `*2` monitor), or change an existing link's mode
        in place. `permanent` (app_rpt's ilink 12/13) redials the link for ever once lost, for
        the life of the process. Raises CommandError when refused (see `check_connect`)."""
        existing = self.check_connect(node, mode, permanent=permanent)
        if existing is not None and existing.mode is mode:
            existing.permanent = True
            self._changed = True
            return self._output()
        if existing is not None:
            existing.permanent = existing.permanent or permanent
            existing.mode = mode
            if existing.callno is not None and existing.up:
                self._out.send(SetLeg(existing.callno, mode=mode.leg))
            self._telemetry("COMPLETE")
            self._kick(now)
            self._changed = True
            return self._output()
        link = Link(
            node,
            mode,
            "outbound",
            permanent=permanent or node in self._permanent,
            guest=node in self._guests,
        )
        self._links[node] = link
        self._out.send(Dial(node, mode))
        # The others learn of the new (connecting) link at once, as app_rpt's rpt_link_add.
        self._kick(now)
        self._changed = True
        return self._output()

    def dialled(self, node: str, callno: int, addr: tuple[str, int], now: float) -> LinkOutput:
        """The controller placed the call for a `Dial`."""
        link = self._links.get(node)
        if link is None or link.state is not LinkState.CONNECTING:
            # Disconnected while it was being resolved: end the call we just placed.
            self._out.send(Hangup(callno))
            return self._output()
        self._bind(link, callno)
        link.addr = addr
        self._changed = True
        return self._output()

    def dial_failed(self, node: str, reason: str, now: float) -> LinkOutput:
        """A `Dial` could not even place a call (e.g. the node did not resolve)."""
        link = self._links.get(node)
        if link is not None and link.state is LinkState.CONNECTING and link.callno is None:
            self._failed(link, f"cannot reach node {node}: {reason}", now, retry=True)
        return self._output()

    def disconnect(
        self, node: str, now: float, reason: str = "disconnected by operator"
    ) -> LinkOutput:
        """`*1`: politely end the link to `node` (never redialled, permanent or not)."""
        link = self._links.get(node)
        if link is None:
            raise CommandError(f"node {node} is not linked", 404)
        callno = link.callno
        if link.up and callno is not None:
            self._send(link, t.DISCONNECT)
            # COMPLETE is telemetry of the command: it goes to every transceive link,
            # the one being dropped included (it is still up).
            self._telemetry("COMPLETE")
        self._tear_down(link, now, CAUSE_NOT_HERE if link.guest else CAUSE_LINK_END)
        self._drop(link)
        self._out.report(LinkDisconnected(node, callno, reason))
        return self._output()

    def disconnect_all(self, now: float, reason: str = "disconnected by operator") -> LinkOutput:
        """app_rpt's `ilink 6`: every link gets `!!DISCONNECT!!`, our COMPLETE telemetry, then
        its HANGUP. The links are remembered (`saved`) for `*74`."""
        links = list(self._links.values())
        self.saved = tuple(SavedLink(link.node, link.mode, link.permanent) for link in links)
        for link in links:
            self._send(link, t.DISCONNECT)
        if self.me is not None:
            self._telemetry("COMPLETE")
        for link in links:
            self._tear_down(link, now)
            self._drop(link)
            self._out.report(LinkDisconnected(link.node, link.callno, reason))
        return self._output()

    def shutdown(self, now: float) -> LinkOutput:
        """The node is stopping. Links we dialled get `!!DISCONNECT!!` and end when the far end
        hangs up (`TEARDOWN_WAIT`): otherwise app_rpt takes our going for a lost link and holds
        it for 10 s; we redial our permanent links ourselves when we come back. Links the far
        end dialled get a plain HANGUP, which app_rpt answers by dropping the link at once and
        redialling it, so they come back by themselves when this node does. Nothing is
        remembered for `*74`, and no telemetry is sent."""
        for link in list(self._links.values()):
            if link.direction == "outbound":
                self._send(link, t.DISCONNECT)
                self._tear_down(link, now)
            elif link.callno is not None:
                self._out.send(Hangup(link.callno, CAUSE_LINK_END))
                self._go_dead(link.callno, now)
            self._drop(link)
            self._out.report(LinkDisconnected(link.node, link.callno, "node shutting down"))
        return self._output()

    def tearing_down(self) -> bool:
        """Whether a call is still waiting for the far end's HANGUP after our `!!DISCONNECT!!`."""
        return bool(self._dead_cause)

    def reachable(self, node: str) -> bool:
        """Whether a text addressed to `node` has somewhere to go: an up link to it, or an up
        link it is behind."""
        return any(
            link.up and (link.node == node or node in link.behind_nodes)
            for link in self._links.values()
        )

    def send_remote_digit(self, dest: str, digit: str) -> LinkOutput:
        """Remote command mode (`*4<dest>`): one digit to node `dest` as a `D` text, towards
        the link it is behind (app_rpt send_link_dtmf). Raises CommandError when `dest` is not
        reachable any more."""
        if self.me is None or not self.reachable(dest):
            raise CommandError(f"node {dest} is not in the network", 404)
        self._dtmf_seq += 1
        text = t.remote_dtmf(dest, self.me, self._dtmf_seq, digit)
        self._route(None, dest, text)
        return self._output()

    def set_local_keyed(self, keyed: bool, now: float) -> None:
        """Our own transmitter state, for `K` key-query replies."""
        if keyed != self._local_keyed:
            self._local_keyed = keyed
            self._local_key_change = now

    # --- inbound ------------------------------------------------------------------------------

    def inbound(
        self, callno: int, node: str, called: str, addr: tuple[str, int], now: float
    ) -> LinkOutput:
        """A `radio` call from node `node` to `called` passed the listener's gates (the call is
        held: not answered yet)."""
        if self.me is None or called != self.me or node == self.me:
            # app_rpt's dialplan: a call to a node not hosted here is hung up after ACCEPT.
            log.info("link call from %s to %s refused: not this node", node, called or "-")
            self._out.send(Hangup(callno, CAUSE_NOT_HERE))
            self._go_dead(callno, now)
            return self._output()
        old = self._links.get(node)
        if old is not None:
            # A node that calls again replaces its old link (app_rpt kills the old one).
            log.info("node %s linked again: replacing its old link", node)
            if old.callno is not None:
                self._out.send(Hangup(old.callno))
                self._go_dead(old.callno, now)
            self._drop(old)
        link = Link(node, LinkMode.TRANSCEIVE, "inbound", addr=addr)
        self._links[node] = link
        self._bind(link, callno)
        self._changed = True
        if self._verify:
            link.verifying = True
            self._out.send(VerifySource(callno, node, addr[0]))
        else:
            self._out.send(Answer(callno))
        return self._output()

    def source_checked(self, callno: int, matches: bool | None, now: float) -> LinkOutput:
        """Result of a `VerifySource`: True matches, False does not, None could not resolve."""
        link = self._by_call.get(callno)
        if link is None or not link.verifying:
            return self._output()
        link.verifying = False
        if matches:
            self._out.send(Answer(callno))
            return self._output()
        why = "does not match its node's address" if matches is False else "cannot be resolved"
        log.warning("link call from node %s refused: source %s", link.node, why)
        # What app_rpt does to a caller it cannot verify: hang up with cause 0, no ANSWER.
        self._out.send(Hangup(callno))
        self._drop(link)
        self._go_dead(callno, now)
        self._out.report(LinkDisconnected(link.node, callno, f"refused: source address {why}"))
        return self._output()

    # --- call events --------------------------------------------------------------------------

    def call_up(self, callno: int, codec: str | None, now: float) -> LinkOutput:
        """The link's call is answered (for a guest: ringing, as the web transceiver counts
        it): start the dialect."""
        link = self._by_call.get(callno)
        if link is None or link.state is not LinkState.CONNECTING:
            return self._output()
        assert self.me is not None
        link.go(LinkTrigger.ANSWERED)
        link.codec = codec
        link.connected_at = now
        link.retries = 0
        link.timers.cancel(LinkTimer.RETRY, LinkTimer.ATTEMPT)
        if link.guest:
            # The host rings for seconds (with early audio) before it answers; the web
            # transceiver is up from the first ring. No texts: the others hear of us by list.
            link.handshake = Handshake.GUEST
            self._changed = True
            self._kick(now)
            self._out.report(LinkConnected(link.node, callno, link.mode, link.direction))
            return self._output()
        link.handshake = Handshake.PENDING
        link.timers.set(LinkTimer.NEWKEY, now + NEWKEY_TIMEOUT)
        self._changed = True
        self._send(link, t.NEWKEY1)
        if link.direction == "outbound":
            # The order app_rpt's *3 produces (captures asl_2node/asl_3node): COMPLETE to
            # every transceive link, our list to the new link, CONNECTED to every transceive
            # link; the list kick then refreshes everyone.
            self._telemetry("COMPLETE")
            self._send_list(link, now)
            self._telemetry("CONNECTED", self.me, link.node)
        else:
            # The callee only answers the handshake and sends its list.
            self._send_list(link, now)
        self._kick(now, skip=link.node if link.direction != "outbound" else None)
        self._out.report(LinkConnected(link.node, callno, link.mode, link.direction))
        return self._output()

    def answered(self, callno: int, now: float) -> None:
        """A guest link's call was answered (it has been up since it rang)."""
        link = self._by_call.get(callno)
        if link is not None and link.guest and link.answered_at is None:
            link.answered_at = now

    def call_ended(self, callno: int, reason: str, now: float, *, refused: bool) -> LinkOutput:
        """The link's call ended: `refused` when the peer rejected the NEW (no retry)."""
        if callno in self._dead:
            self._dead.cancel(callno)
            self._dead_cause.pop(callno, None)
            return self._output()
        link = self._by_call.pop(callno, None)
        if link is None:
            return self._output()
        link.callno = None
        if (
            link.guest
            and link.answered_at is not None
            and now - link.answered_at < GUEST_REFUSAL_WINDOW
        ):
            # Answer, one second, hangup: how the host's dialplan turns a guest away.
            reason = (
                f"node {link.node} answered and hung up at once: it did not accept the "
                "web-transceiver token, or it refuses this account (allowlist, or web "
                "transceiver access off)"
            )
            refused = True
        link.answered_at = None
        self._failed(link, reason, now, retry=not refused)
        return self._output()

    def _failed(self, link: Link, reason: str, now: float, *, retry: bool) -> None:
        link.go(LinkTrigger.FAILED)
        link.rx_keyed = False
        link.keyed_at = link.unkeyed_at = None
        link.talking = False
        link.behind = ()
        link.connected_at = None
        link.list_at = None
        link.timers.cancel(
            LinkTimer.NEWKEY,
            LinkTimer.REDUNDANT,
            LinkTimer.LIST,
            LinkTimer.LIST_EXPIRY,
            LinkTimer.ATTEMPT,
        )
        self._changed = True
        can_retry = link.direction == "outbound" and retry
        if can_retry and (link.permanent or link.retries < MAX_RETRIES):
            cap = PERMANENT_RETRY_MAX if link.permanent else RETRY_MAX
            delay = min(cap, RETRY_FIRST * 2 ** min(link.retries, 8))
            link.retries += 1
            link.go(LinkTrigger.RETRY_LATER)
            link.timers.set(LinkTimer.RETRY, now + delay)
            self._out.report(
                LinkDisconnected(
                    link.node, None, f"{reason}; retry {link.retries} in {delay:.0f} s"
                )
            )
            return
        if link.retries:
            reason = f"{reason}; gave up after {link.retries} retries"
        self._drop(link)
        self._out.report(LinkDisconnected(link.node, None, reason))

    def text(self, callno: int, text: str, now: float) -> LinkOutput:
        """A TEXT frame arrived on the link's call."""
        link = self._by_call.get(callno)
        if link is None or not link.up:
            return self._output()
        item = t.parse(text)
        kind = t.kind_of(item)
        self.text_counts[kind] = self.text_counts.get(kind, 0) + 1
        if link.guest and isinstance(item, t.NewKey1 | t.NewKey | t.Disconnect):
            pass  # the host treats us as a web transceiver: no handshake, and it just hangs up
        elif isinstance(item, t.NewKey1):
            self._handshake(link, Handshake.NEWKEY1)
        elif isinstance(item, t.NewKey):
            if link.handshake in (Handshake.PENDING, Handshake.LEGACY):
                self._handshake(link, Handshake.NEWKEY)
                self._send(link, t.NEWKEY)
        elif isinstance(item, t.Disconnect):
            self._peer_disconnected(link, now)
        elif isinstance(item, t.LinkList):
            # It replaces what we held behind the link (a node that left is gone from it),
            # and holds until a newer list, or until none came for too long.
            link.list_at = now
            link.timers.set(LinkTimer.LIST_EXPIRY, now + LIST_EXPIRY)
            behind = lists.own_view(item.entries, self.me, link.node)
            if behind != link.behind:
                link.behind = behind
                self._changed = True
                # A change like any other: the others hear of it within a kick. The sender's
                # own list does not change with what it told us.
                self._kick(now, skip=link.node)
        elif isinstance(item, t.Telemetry):
            if item.source != self.me:
                self._forward(link, text, transceive_only=True)
                self._out.report(TelemetryReceived(link.node, callno, item))
        elif isinstance(item, t.Message):
            log.info("message from node %s to %s: %s", item.source, item.dest, item.text[:160])
            self._out.report(MessageReceived(link.node, callno, item))
            if item.dest != self.me:
                self._forward(link, text, transceive_only=False)
        elif isinstance(item, t.RemoteDtmf):
            if item.dest == self.me:
                self._out.report(RemoteDigitReceived(link.node, callno, item.digit))
            else:
                self._route(link, item.dest, text)
        elif isinstance(item, t.KeyQuery):
            if self.me is not None:
                since = 0 if self._local_key_change is None else int(now - self._local_key_change)
                self._send(link, t.key_reply(item.source, self.me, self._local_keyed, since))
            self._forward(link, text, transceive_only=False)
        elif isinstance(item, t.KeyReply):
            if item.dest != self.me:
                self._route(link, item.dest, text)
        elif isinstance(item, t.MdcId | t.Gps):
            self._forward(link, text, transceive_only=False)
        else:
            # CTCSS groups (we belong to none), voter and remote-base texts, `!IAXKEY!`, and
            # anything else: counted, never answered, never passed on.
            log.debug("link %s: ignored %s text", link.node, kind)
        return self._output()

    def _handshake(self, link: Link, handshake: Handshake) -> None:
        previous = link.handshake
        link.handshake = handshake
        link.timers.cancel(LinkTimer.NEWKEY)
        if link.callno is not None and previous.by_voice != handshake.by_voice:
            self._out.send(SetLeg(link.callno, keying="voice" if handshake.by_voice else "control"))
        self._changed = True

    def _peer_disconnected(self, link: Link, now: float) -> None:
        callno = link.callno
        self._drop(link)
        if callno is not None:
            self._go_dead(callno, now)
        self._out.report(LinkDisconnected(link.node, callno, "disconnected by peer"))

    def rx_keyed(self, callno: int, keyed: bool, now: float) -> LinkOutput:
        """The engine's keying edge of the link's receiver."""
        link = self._by_call.get(callno)
        if link is not None and link.up and link.rx_keyed != keyed:
            link.rx_keyed = keyed
            link.last_keyed = now
            if keyed:
                link.keyed_at = now
                self.last_keyed_node = link.node
            else:
                link.unkeyed_at = now
            self._changed = True
            self._out.report(LinkKeyed(link.node, callno, keyed))
        return self._output()

    def spurt(self, callno: int, started: bool, now: float) -> LinkOutput:
        """We start (before its first voice frame) or end a talk spurt towards the link."""
        link = self._by_call.get(callno)
        if link is None or not link.up or callno in self._dead:
            return self._output()
        if started:
            link.talking = True
            if not link.handshake.by_voice:
                self._out.send(SendKey(callno))
                if link.handshake is Handshake.NEWKEY:
                    link.timers.set(LinkTimer.REDUNDANT, now + REDUNDANT_KEY_INTERVAL)
        elif link.talking:
            link.talking = False
            link.timers.cancel(LinkTimer.REDUNDANT)
            self._out.send(SendUnkey(callno))
            if link.handshake.by_voice:
                self._out.send(SendCng(callno))
        return self._output()

    # --- time ---------------------------------------------------------------------------------

    def timer(self, now: float) -> LinkOutput:
        for callno in self._dead.due(now):
            self._dead.cancel(callno)
            # The call is still here (else `call_ended` forgot it): end it ourselves.
            self._out.send(Hangup(callno, self._dead_cause.pop(callno, CAUSE_LINK_END)))
        for link in list(self._links.values()):
            for kind in link.timers.due(now):
                link.timers.cancel(kind)
                self._fire(link, kind, now)
        if self._kick_at is not None and self._kick_at <= now:
            self._kick_at = None
            skip, self._kick_skip = self._kick_skip, set()
            every = self._lists.all_segments(self._links.values())
            for link in self._links.values():
                if link.up and link.node not in skip:
                    self._send_list(link, now, every)
        return self._output()

    def _fire(self, link: Link, kind: LinkTimer, now: float) -> None:
        if kind is LinkTimer.NEWKEY and link.handshake is Handshake.PENDING:
            log.warning("node %s did not send !NEWKEY1! within 2 s: legacy keying", link.node)
            self._handshake(link, Handshake.LEGACY)
        elif kind is LinkTimer.REDUNDANT and link.talking and link.callno is not None:
            self._out.send(SendKey(link.callno))
            link.timers.set(LinkTimer.REDUNDANT, now + REDUNDANT_KEY_INTERVAL)
        elif kind is LinkTimer.LIST and link.up:
            self._send_list(link, now)
        elif kind is LinkTimer.LIST_EXPIRY and link.behind:
            log.warning(
                "node %s sent no link list for %.0f s: forgetting the %d nodes behind it",
                link.node,
                LIST_EXPIRY,
                len(link.behind),
            )
            link.behind = ()
            self.lists_expired += 1
            self._changed = True
            self._kick(now, skip=link.node)
        elif kind is LinkTimer.RETRY and link.state is LinkState.RETRYING:
            link.go(LinkTrigger.REDIAL)
            self._redial(link, now)
        elif kind is LinkTimer.ATTEMPT and link.state is LinkState.CONNECTING:
            # Nobody answered the redial: the path may still be dead, or it may have come back
            # while the call waits out its NEW retransmissions. End that call and dial afresh.
            callno = link.callno
            if callno is not None:
                self._by_call.pop(callno, None)
                link.callno = None
                self._out.send(Hangup(callno))
                self._go_dead(callno, now)
            self._redial(link, now)

    def _redial(self, link: Link, now: float) -> None:
        link.reconnects += 1
        self._changed = True
        if link.permanent:
            link.timers.set(LinkTimer.ATTEMPT, now + PERMANENT_ATTEMPT)
        self._out.send(Dial(link.node, link.mode))
