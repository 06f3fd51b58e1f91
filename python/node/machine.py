"""The parts a sans-I/O machine of the node is built from: its transitions, its deadlines, and
the outbox its inputs fill.

`TransitionTable` holds every legal move of a machine's states, state -> trigger -> next state, in
one place (h11/_state.py). A move the table does not list is our own misuse, never the peer's:
it raises `LocalProtocolError`.

`DeadlineTable` holds one absolute deadline per timer kind (quinn-proto connection/timer.rs):
the machine's next deadline is the earliest, and `due(now)` names every kind that has expired.
Deadlines are monotonic seconds, the same clock as the `now` the machine is fed (style rule 3).

`Outbox` collects what one input produces, the things to send (frames, actions, POSTs) in order
and the events, until the machine packs them into its one frozen output (style rule 2) with
`take()`, which also empties it for the next input.

All three are plain data: no clock, no I/O, no callbacks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Generic, TypeVar

from node.errors import LocalProtocolError

__all__ = ["DeadlineTable", "Outbox", "TransitionTable"]

S = TypeVar("S", bound=Enum)
T = TypeVar("T", bound=Enum)
K = TypeVar("K")
ItemT = TypeVar("ItemT")
EventT = TypeVar("EventT")


class TransitionTable(Mapping[S, Mapping[T, S]], Generic[S, T]):
    """A machine's legal moves: `table[state][trigger]` is the next state.

    Every state is a row (a final state has an empty one), so the table can be checked for
    completeness against its Enum.
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: Mapping[S, Mapping[T, S]]) -> None:
        self._rows = {state: dict(row) for state, row in rows.items()}

    def __getitem__(self, state: S) -> Mapping[T, S]:
        return self._rows[state]

    def __iter__(self) -> Iterator[S]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def move(self, state: S, trigger: T, who: str) -> S:
        """The state after `trigger` in `state`; `who` names the machine in the error."""
        nxt = self._rows[state].get(trigger)
        if nxt is None:
            raise LocalProtocolError(f"{who}: cannot {trigger.value} in state {state.value}")
        return nxt


class DeadlineTable(Generic[K]):
    """One named deadline per timer kind; a kind that is not set is not pending."""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        self._at: dict[K, float] = {}

    def __repr__(self) -> str:
        return f"DeadlineTable({self._at!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeadlineTable) and self._at == other._at

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __bool__(self) -> bool:
        return bool(self._at)

    def __contains__(self, kind: object) -> bool:
        return kind in self._at

    def __getitem__(self, kind: K) -> float:
        return self._at[kind]

    def get(self, kind: K) -> float | None:
        return self._at.get(kind)

    def set(self, kind: K, at: float) -> None:
        """Arm (or re-arm) `kind` for absolute time `at`."""
        self._at[kind] = at

    def cancel(self, *kinds: K) -> None:
        """Disarm each of `kinds` that is set."""
        for kind in kinds:
            self._at.pop(kind, None)

    def clear(self) -> None:
        self._at.clear()

    def earliest(self) -> float | None:
        """The next deadline, or None when nothing is pending."""
        return min(self._at.values()) if self._at else None

    def due(self, now: float) -> list[K]:
        """Every kind whose deadline is at or before `now`, in the order they were first armed
        (a fixed order, so simultaneous timers fire the same way every time). They stay armed:
        the caller cancels or re-arms each as it fires it."""
        return [kind for kind, at in self._at.items() if at <= now]


class Outbox(Generic[ItemT, EventT]):
    """What the current input has produced: items to send, in order, and events."""

    __slots__ = ("_events", "_items", "report", "send")

    def __init__(self) -> None:
        self._items: list[ItemT] = []
        self._events: list[EventT] = []
        #: Queue an item to send (the list's own append: frames go through here per frame).
        self.send = self._items.append
        #: Record an event.
        self.report = self._events.append

    def take(self) -> tuple[tuple[ItemT, ...], tuple[EventT, ...]]:
        """Everything produced since the last `take()`, in order; the outbox is then empty."""
        items, events = tuple(self._items), tuple(self._events)
        self._items.clear()
        self._events.clear()
        return items, events
