"""DTMF link commands: `*` sequences mapped to link commands, as app_rpt collects them.

One `CommandMapper` per digit source (a call, a link, AMI `rpt fun`), so digits from two sources
never mix into one sequence. `*` starts a sequence (and restarts one in progress); the digits
after it are matched on every digit against `FUNCTIONS`, first entry whose code is a prefix of
the buffer (app_rpt `collect_function_digits`); `#` ends the sequence; so does the inter-digit
time-out. research/allstar.md §3 has app_rpt's rules.

The table is the operator's `[functions]` (app_rpt function strings, read by
`node.config.functions`), or ASL3's shipped table plus this node's extensions (`*73` full
status, `*74` restore, `*75` local monitor, `*76` disconnect all); docs/dtmf.md lists every
function. Entries are tried in table order, as app_rpt does: the first whose code begins the
digits wins, so a code that an earlier one begins never runs. Status and cop entries are
complete at once, `ilink` entries with a node wait for the node number, `macro` (whatever its
parameter, as app_rpt's `function_macro` ignores it) for a macro number.

`<node>` = `0` means the last node a `*1`/`*2`/`*3` named (from any source).

When a node number is complete: app_rpt stops as soon as the digits resolve to a node (or reach
the longest node number). Here the number is complete when

- it names a node the source's lookup knows (`*1`: a current link; `*2`/`*3`: a node with a
  configured address or in the nodes file) and no other known node starts with these digits
  (so 2000 does not cut off 20001, app_rpt's complaint #372),
- or it has `MAX_NODE_DIGITS` (6) digits (7 for an EchoLink station's link number, `3` and six
  digits, when the node is an EchoLink station: ASL3's `*33123456`),
- or `#` ends it, or the inter-digit time-out passes with at least one node digit.

A sequence that fits no entry is reported as a `Command` of kind "unknown", never guessed at.
No I/O and no clock: inputs take `now` (monotonic seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from node.config.functions import (
    DEFAULT_FUNCTIONS,
    DIGITS,
    END_CHAR,
    FUNCTION_CHAR,
    Function,
    could_run,
    first_function,
    macro_found,
    macro_number_done,
)

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

#: Node numbers have at most this many digits (AllStarLink's longest; app_rpt `longestnode`).
MAX_NODE_DIGITS = 6

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
    "announce": "status",
    "cop": "cop",
    "macro": "macro",
    "unavailable": "not available here",
    "unknown": "unknown",
}

#: The table when none is given: ASL3's shipped one plus the extensions (docs/dtmf.md).
FUNCTIONS: tuple[Function, ...] = DEFAULT_FUNCTIONS


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
    #: The status or cop number, the macro number, or what an "unavailable" entry is.
    arg: str | None = None
    #: The app_rpt function string of the table entry ("status,2"); "" when not typed.
    spec: str = field(default="", compare=False)

    def __str__(self) -> str:
        words = [self.digits, _WORDS.get(self.kind, self.kind)]
        if self.arg is not None and self.kind != "unavailable":
            words.append(self.arg)
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
        macros: Mapping[str, str] | None = None,
        echolink: bool = False,
    ) -> None:
        """`echolink`: numbers that start with `3` are EchoLink link numbers, 7 digits long."""
        if timeout <= 0:
            raise ValueError("the inter-digit time-out must be positive")
        self.timeout = timeout
        self._nodes = nodes
        self.last = last if last is not None else LastNode()
        self._table = table
        self._macros = macros if macros is not None else {}
        self._macro_longest = max((len(m) for m in self._macros), default=1)
        self._echolink = echolink
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
        fn = first_function(self._table, buf)
        if fn is None:
            if not final and could_run(self._table, buf):
                return None
            return self._done(Command("unknown", typed, reason="no such command"))
        if fn.kind == "macro":
            return self._macro(fn, buf[len(fn.code) :], typed, final=final)
        if not fn.takes_node:
            if fn.kind == "unavailable":
                reason = f"{fn.spec} ({fn.arg}) is not available here"
                return self._done(Command("unavailable", typed, reason=reason, spec=fn.spec))
            return self._done(Command(fn.kind, typed, arg=fn.arg, spec=fn.spec))
        node = buf[len(fn.code) :]
        refused = self._number(typed, node, "node", final=final)
        if refused is not None or not node:
            return refused
        target: str | None = node
        if node == "0":
            target = self.last.node
            if target is None:
                return self._done(Command("unknown", typed, reason="no last node yet"))
        elif not (final or len(node) >= self._longest(node) or self._unambiguous(fn.kind, node)):
            return None
        return self._done(
            Command(fn.kind, typed, node=target, permanent=fn.permanent, spec=fn.spec)
        )

    def _number(self, typed: str, number: str, what: str, *, final: bool) -> Command | None:
        """The end of a sequence whose number (after the code) is wrong: none typed by the
        end, or not all digits; None while it may still be right."""
        if not number and final:
            return self._done(Command("unknown", typed, reason=f"no {what} number"))
        if number and not number.isdigit():
            reason = f"a {what} number has only digits"
            return self._done(Command("unknown", typed, reason=reason))
        return None

    def _macro(self, fn: Function, number: str, typed: str, *, final: bool) -> Command | None:
        """app_rpt's `function_macro`: the entry's parameter is ignored and the digits typed
        after the code name the macro; the number is complete once it names one, or has as
        many digits as the longest macro number (then: not found); `0` is the startup
        macro."""
        refused = self._number(typed, number, "macro", final=final)
        if refused is not None or not number:
            return refused
        if macro_found(number, self._macros):
            return self._done(Command("macro", typed, arg=number, spec=fn.spec))
        if final or macro_number_done(number, self._macros, self._macro_longest):
            reason = f"macro {number} not found"
            return self._done(Command("unknown", typed, reason=reason, spec=fn.spec))
        return None

    def _longest(self, node: str) -> int:
        return MAX_NODE_DIGITS + 1 if self._echolink and node.startswith("3") else MAX_NODE_DIGITS

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
