"""Failed AMI logins per source: a growing delay, then a lockout (sans-I/O: `now` is passed in).

AMI's password is the only thing between a dashboard's port and `rpt cmd`, and Allmon3 or
Supermon keep it in a file any local user may read; guessing must not be cheap. A source is an
IPv4 address or an IPv6 /64 (a host can pick any address of its /64 at will). Each failed login
from a source doubles the delay before the answer (`base_delay`, 2x, 4x, ... up to `max_delay`);
the `lockout_after`-th failure locks the source out for `lockout_seconds`: its connections are
closed on accept and a login already in flight is refused without looking at the password, so
parallel connections gain nothing. A success forgets the source's failures; so does a quiet
`lockout_seconds`. At most `max_sources` are remembered (the oldest are forgotten first), so a
crowd of sources costs bounded memory.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

__all__ = ["LoginGuard", "source_of"]


def source_of(address: str) -> str:
    """The key failures are counted under: the address itself, or its /64 for IPv6."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass(slots=True)
class _Record:
    failures: int
    last_failure: float
    locked_until: float | None = None


@dataclass(slots=True, kw_only=True)
class LoginGuard:
    """The failure record of every recent source (see the module doc)."""

    #: Seconds before the answer to a source's first failure; doubled at each further one.
    base_delay: float
    #: The longest wait before an answer.
    max_delay: float
    #: Failures that lock a source out.
    lockout_after: int
    #: Seconds a lockout lasts, and a quiet spell after which failures are forgotten.
    lockout_seconds: float
    #: Sources remembered at most.
    max_sources: int = 4096
    _records: dict[str, _Record] = field(default_factory=dict, init=False)

    def locked(self, source: str, now: float) -> bool:
        """Whether `source` is locked out at `now`."""
        record = self._current(source, now)
        return record is not None and record.locked_until is not None

    def failed(self, source: str, now: float) -> tuple[float, bool]:
        """Count a failed login: (seconds to wait before answering it, whether this failure
        locked the source out just now, which the caller logs once)."""
        record = self._current(source, now)
        if record is None:
            if len(self._records) >= self.max_sources:
                # Dicts keep insertion order: the first key is the longest remembered.
                del self._records[next(iter(self._records))]
            record = self._records[source] = _Record(0, now)
        record.failures += 1
        record.last_failure = now
        newly_locked = False
        if record.locked_until is None and record.failures >= self.lockout_after:
            record.locked_until = now + self.lockout_seconds
            newly_locked = True
        delay = min(self.base_delay * 2 ** (record.failures - 1), self.max_delay)
        return delay, newly_locked

    def succeeded(self, source: str) -> None:
        """A good login forgets the source's failures."""
        self._records.pop(source, None)

    def _current(self, source: str, now: float) -> _Record | None:
        record = self._records.get(source)
        if record is None:
            return None
        if record.locked_until is not None:
            if now < record.locked_until:
                return record
        elif now - record.last_failure < self.lockout_seconds:
            return record
        # Served its lockout, or quiet long enough: a fresh start.
        del self._records[source]
        return None
