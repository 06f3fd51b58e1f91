"""DTMF link commands: `*` sequences mapped to link commands, as app_rpt collects them.

One `CommandMapper` per digit source (a call, a link, AMI `rpt fun`), so digits from two sources
never mix into one sequence. `*` starts a sequence (and restarts one in progress); the digits
after it are matched on every digit against `FUNCTIONS`, first entry whose code is a prefix of
the buffer (app_rpt `collect_function_digits`); `#` ends the sequence; so does the inter-digit
time-out. research/allstar.md §3 has app_rpt's rules.

The table (docs/commands.md):

    *1<node>  disconnect      *2<node>  monitor      *3<node>  connect (transceive)
    *4<node>  remote command mode: later digits go to <node> as `D` texts until `#`
    *70       status (our links)        *73  full status (the whole network)
    *74       restore the links *76 dropped             *76  disconnect all links
    *75<node> local monitor: the local radio alone hears <node>

`<node>` = `0` means the last node a `*1`/`*2`/`*3` named (from any source). `*76`, not the
`*71` of the AllStarLink docs: ASL3's shipped rpt.conf has `711`..`714` (local status), and a
`*711` typed from habit would otherwise drop every link at its third digit.

When a node number is complete: app_rpt stops as soon as the digits resolve to a node (or reach
the longest node number). Here the number is complete when

- it names a node the source's lookup knows (`*1`: a current link; `*2`/`*3`: a node with a
  configured address or in the nodes file) and no other known node starts with these digits
  (so 2000 does not cut off 20001, app_rpt's complaint #372),
- or it has `MAX_NODE_DIGITS` (6) digits,
- or `#` ends it, or the inter-digit time-out passes with at least one node digit.

A sequence that fits no entry is reported as a `Command` of kind "unknown", never guessed at.
No I/O and no clock: inputs take `now` (monotonic seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

__all__ = [
    "END_CHAR",
    "FUNCTIONS",
    "FUNCTION_CHAR",
    "MAX_NODE_DIGITS",
    "Command",
    "CommandMapper",
    "Function",
    "LastNode",
]

#: Starts (or restarts) a sequence (app_rpt `funcchar`).
FUNCTION_CHAR = "*"
#: Ends a sequence (app_rpt `endchar`).
END_CHAR = "#"
#: Node numbers have at most this many digits (AllStarLink's longest; app_rpt `longestnode`).
MAX_NODE_DIGITS = 6
#: What a DTMF digit can be (IAX2 DTMF frames carry these).
DIGITS = "0123456789ABCD"

#: How each kind reads in a command's text.
_WORDS = {
    "disconnect": "disconnect",
    "monitor": "monitor",
    "local_monitor": "local monitor",
    "connect": "connect",
    "status": "status",
    "disconnect_all": "disconnect all",
    "remote": "remote command mode",
    "remote_end": "end remote command mode",
    "full_status": "full status",
    "restore": "restore links",
    "last_keyed": "last node keyed",
    "unknown": "unknown",
}


@dataclass(frozen=True, slots=True)
class Function:
    """One table entry: the digits after `*`, the command kind, and whether a node follows."""

    code: str
    kind: str
    takes_node: bool


FUNCTIONS: tuple[Function, ...] = (
    Function("1", "disconnect", True),
    Function("2", "monitor", True),
    Function("3", "connect", True),
    Function("4", "remote", True),
    Function("70", "status", False),
    Function("73", "full_status", False),
    Function("74", "restore", False),
    Function("75", "local_monitor", True),
    Function("76", "disconnect_all", False),
)


@dataclass(frozen=True, slots=True)
class Command:
    """A completed sequence (or a link command from AMI, which has no digits)."""

    #: "disconnect", "monitor", "connect", "remote", "status", "full_status", "restore",
    #: "disconnect_all", "last_keyed" (AMI ilink 7), "remote_end" (the `#` that ends remote
    #: command mode) or "unknown".
    kind: str
    #: The sequence as typed, from the `*` (`#` left out); "" for a command not typed as DTMF.
    digits: str = ""
    #: The node a disconnect/monitor/connect names (`0` already replaced by the last node).
    node: str | None = None
    #: app_rpt's ilink 11/12/13: drop a permanent link, or link permanently.
    permanent: bool = False
    #: Why an "unknown" sequence is not a command.
    reason: str | None = None

    def __str__(self) -> str:
        words = [self.digits, _WORDS.get(self.kind, self.kind)]
        if self.node is not None:
            words.append(self.node)
        if self.permanent:
            words.append("(permanent)")
        return " ".join(w for w in words if w)


@dataclass(slots=True)
class LastNode:
    """The last node a command named, shared by every mapper of the node (app_rpt
    `lastlinknode`)."""

    node: str | None = None


def _no_nodes(kind: str) -> Collection[str]:
    return ()


class CommandMapper:
    """The `*` sequence of one digit source.

    `timeout` is the inter-digit time-out in seconds. `nodes(kind)` returns the node numbers
    known for a command kind, which lets a node number end as soon as it is unambiguous.
    """

    def __init__(
        self,
        timeout: float,
        *,
        nodes: Callable[[str], Collection[str]] = _no_nodes,
        last: LastNode | None = None,
        table: tuple[Function, ...] = FUNCTIONS,
    ) -> None:
        if timeout <= 0:
            raise ValueError("the inter-digit time-out must be positive")
        self.timeout = timeout
        self._nodes = nodes
        self.last = last if last is not None else LastNode()
        self._table = table
        #: The digits after `*`; None outside a sequence.
        self._buffer: str | None = None
        self._deadline: float | None = None

    def __repr__(self) -> str:
        return f"CommandMapper(buffer={self._buffer!r})"

    @property
    def collecting(self) -> bool:
        """Whether a sequence is in progress."""
        return self._buffer is not None

    def next_deadline(self) -> float | None:
        """When the inter-digit time-out ends the sequence in progress."""
        return self._deadline

    def feed(self, digit: str, now: float) -> Command | None:
        """One received digit; the command it completes, if any. Anything that is not a DTMF
        digit is ignored, as are digits outside a sequence."""
        d = digit.upper() if len(digit) == 1 else ""
        if d == FUNCTION_CHAR:
            self._buffer = ""
            self._deadline = now + self.timeout
            return None
        if self._buffer is None or not d:
            return None
        if d == END_CHAR:
            return self.end()
        if d not in DIGITS:
            return None
        self._buffer += d
        self._deadline = now + self.timeout
        return self._match(final=False)

    def timer(self, now: float) -> Command | None:
        """The inter-digit time-out: ends the sequence as `#` would."""
        if self._deadline is None or now < self._deadline:
            return None
        return self.end()

    def end(self) -> Command | None:
        """End the sequence in progress (`#`, the time-out, or the end of an AMI `rpt fun`)."""
        if not self._buffer:
            self._reset()
            return None
        return self._match(final=True)

    # --- matching -----------------------------------------------------------------------------

    def _match(self, *, final: bool) -> Command | None:
        buf = self._buffer
        assert buf is not None
        typed = FUNCTION_CHAR + buf
        fn = next((f for f in self._table if buf.startswith(f.code)), None)
        if fn is None:
            if not final and any(f.code.startswith(buf) for f in self._table):
                return None
            return self._done(Command("unknown", typed, reason="no such command"))
        if not fn.takes_node:
            return self._done(Command(fn.kind, typed))
        node = buf[len(fn.code) :]
        if not node:
            if final:
                return self._done(Command("unknown", typed, reason="no node number"))
            return None
        if not node.isdigit():
            return self._done(Command("unknown", typed, reason="a node number has only digits"))
        if node == "0":
            last = self.last.node
            if last is None:
                return self._done(Command("unknown", typed, reason="no last node yet"))
            return self._done(Command(fn.kind, typed, node=last))
        if final or len(node) >= MAX_NODE_DIGITS or self._unambiguous(fn.kind, node):
            return self._done(Command(fn.kind, typed, node=node))
        return None

    def _unambiguous(self, kind: str, node: str) -> bool:
        known = self._nodes(kind)
        if node not in known:
            return False
        return not any(other != node and other.startswith(node) for other in known)

    def _done(self, command: Command) -> Command:
        if command.node is not None:
            self.last.node = command.node
        self._reset()
        return command

    def _reset(self) -> None:
        self._buffer = None
        self._deadline = None
