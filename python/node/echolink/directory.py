"""The EchoLink directory (TCP 5200), sans-I/O: what to ask which server when, and what the
answers mean.

Each request is one TCP connection: we write the request, the server answers and closes
(`research/echolink.md`). `DirectoryClient` decides the requests and reads the answers; the
transport (`dir_transport.py`) only connects, writes and reads. Two kinds:

- **login** (`login_request`):
  `l<CALL>\\xac\\xac<PASSWORD>\\r<STATUS><VERSION>(HH:MM)\\r<LOCATION>\\r` as SvxLink sends it
  (chan_echolink adds an e-mail line; the directory takes either). The answer starts `OK`. The
  directory lists us at the address the connection came from, so the transport connects from
  the address of our UDP ports. Renewed every `LOGIN_INTERVAL` (as chan_echolink re-registers)
  and at once when our status changes (ONLINE / BUSY).
- **list** (`s`): `@@@\\n<count>\\n` then `count` entries of four lines (callsign, location with
  `[ON HH:MM]` / `[BUSY HH:MM]`, node number, IPv4 address), then `+++`. `parse_list` is strict
  and bounded: the whole answer is refused (`ListError`) unless every part is as described and
  within `MAX_LIST_BYTES` / `MAX_STATIONS`. Fetched after each login, every `LIST_INTERVAL`, and
  soon after an unknown station calls (as SvxLink and chan_echolink refresh on a miss).

Servers are tried in turn: a failure moves to the next; once every server has failed in a row
the client waits (`BACKOFF_FIRST`, doubling up to `BACKOFF_MAX`) before the next round. Failures
are state for the snapshot, never an error of the node. The station list is kept through
failures (the last good one answers who may connect).

No I/O, no clock: inputs take `now`; the local time of day comes from the injected `local_hhmm`.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from node.credential import Secret
from node.machine import DeadlineTable, Outbox

__all__ = [
    "BACKOFF_FIRST",
    "BACKOFF_MAX",
    "DEFAULT_PORT",
    "LIST_INTERVAL",
    "LIST_MISS_HOLDOFF",
    "LOGIN_INTERVAL",
    "MAX_LIST_BYTES",
    "MAX_STATIONS",
    "DirectoryClient",
    "DirectoryEvent",
    "DirectoryRequest",
    "ListError",
    "ListFetched",
    "LoggedIn",
    "LoginFailed",
    "StationList",
    "StationListed",
    "Status",
    "login_request",
    "parse_list",
    "parse_server",
]

#: The directory's TCP port (echolib's is fixed; servers may name another as host:port).
DEFAULT_PORT = 5200
#: chan_echolink re-registers this often (the directory drops a station silent for longer).
LOGIN_INTERVAL = 360.0
#: The station list is refetched this often (and sooner when an unknown station calls).
LIST_INTERVAL = 300.0
#: After an unknown station called, the list is fetched again no sooner than this after the last
#: fetch (a flood of strangers must not become a flood of list requests).
LIST_MISS_HOLDOFF = 5.0
#: Every server failed in a row: wait this long before the next round, doubling up to the max.
BACKOFF_FIRST = 5.0
BACKOFF_MAX = 300.0
#: The largest list answer read (the real directory's is about 1 MB for 30,000 stations).
MAX_LIST_BYTES = 8 << 20
#: The most entries a list may hold.
MAX_STATIONS = 100_000
#: The longest line of a list (callsigns are short; locations are at most a few dozen bytes).
MAX_LINE = 256
#: A count or a node number: ASCII digits (str.isdigit also takes "²").
_NUMBER = re.compile(r"[0-9]{1,7}")
#: Our version strings in the status line (SvxLink's).
_VERSION = {"ONLINE": "3.38", "BUSY": "3.40"}


class Status(enum.Enum):
    """What the directory shows about us."""

    ONLINE = "ONLINE"
    BUSY = "BUSY"


class ListError(ValueError):
    """A list answer that is not the directory's list format."""


@dataclass(frozen=True, slots=True)
class StationListed:
    """One entry of the directory's list."""

    callsign: str
    #: The location or description, without the status in brackets.
    location: str
    #: "ON", "BUSY" or "" when the entry shows none (conferences, links that do not say).
    status: str
    node: str
    ip: str


class StationList:
    """The list as last fetched, indexed both ways."""

    __slots__ = ("_by_call", "_by_node", "stations")

    def __init__(self, stations: tuple[StationListed, ...] = ()) -> None:
        self.stations = stations
        self._by_call = {s.callsign: s for s in stations}
        self._by_node = {s.node: s for s in stations}

    def __repr__(self) -> str:
        return f"StationList({len(self.stations)} stations)"

    def by_call(self, callsign: str) -> StationListed | None:
        return self._by_call.get(callsign.upper())

    def by_node(self, node: str) -> StationListed | None:
        return self._by_node.get(node.lstrip("0") or "0") or self._by_node.get(node)

    def listed_at(self, callsign: str, ip: str) -> bool:
        """Whether `callsign` is listed at `ip` (who may call us)."""
        entry = self.by_call(callsign)
        return entry is not None and entry.ip == ip

    def __len__(self) -> int:
        return len(self.stations)


def login_request(
    callsign: str, password: Secret, status: Status, hhmm: str, location: str
) -> bytes:
    """The login (SvxLink's form). The password goes into these bytes and nowhere else."""
    text = (
        f"l{callsign.upper()}\xac\xac{password.reveal()}\r"
        f"{status.value}{_VERSION[status.value]}({hhmm})\r{location}\r"
    )
    return text.encode("latin-1", "replace")


def _status(location: str) -> tuple[str, str]:
    """Split `Some place [ON 14:09]` into the place and the status word."""
    text = location.rstrip()
    if text.endswith("]") and "[" in text:
        head, _, inside = text.rpartition("[")
        word = inside[:-1].split(" ", 1)[0]
        if word in ("ON", "BUSY"):
            return head.rstrip(), word
    return text, ""


def parse_list(data: bytes) -> StationList:
    """Read a list answer (`@@@`, count, entries, `+++`). `ListError` unless every part is
    well-formed and within bounds."""
    if len(data) > MAX_LIST_BYTES:
        raise ListError(f"list longer than {MAX_LIST_BYTES} bytes")
    lines = data.decode("latin-1").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if any(len(line) > MAX_LINE for line in lines):
        raise ListError(f"a line longer than {MAX_LINE} bytes")
    if len(lines) < 3 or lines[0] != "@@@":
        raise ListError("the list does not start with @@@")
    count_text = lines[1].strip()
    if not _NUMBER.fullmatch(count_text):
        raise ListError("the list's entry count is not a number")
    count = int(count_text)
    if count > MAX_STATIONS:
        raise ListError(f"more than {MAX_STATIONS} entries")
    if len(lines) != 2 + 4 * count + 1 or lines[-1] != "+++":
        raise ListError(f"the list does not hold {count} entries of 4 lines and then +++")
    stations = []
    for i in range(count):
        call, location, node, ip = lines[2 + 4 * i : 6 + 4 * i]
        call, node, ip = call.strip(), node.strip(), ip.strip()
        if not call or any(ch.isspace() for ch in call):
            raise ListError(f"entry {i + 1}: no callsign")
        if not _NUMBER.fullmatch(node):
            raise ListError(f"entry {i + 1}: the node number is not a number")
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise ListError(f"entry {i + 1}: not an IPv4 address") from None
        place, status = _status(location)
        stations.append(StationListed(call.upper(), place.strip(), status, node, ip))
    return StationList(tuple(stations))


# --- what the client asks for and reports -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class DirectoryRequest:
    """One TCP exchange for the transport: connect to `server` (host, port), write `payload`,
    read the answer until the server closes; report it with `request_id`."""

    request_id: int
    kind: str  # "login" or "list"
    server: tuple[str, int]
    payload: bytes

    def __repr__(self) -> str:
        # The login payload holds the password: never in a repr.
        host, port = self.server
        return f"DirectoryRequest({self.request_id}, {self.kind}, {host}:{port})"


class DirectoryEvent:
    """Base of what the directory client reports."""


@dataclass(frozen=True, slots=True)
class LoggedIn(DirectoryEvent):
    server: str


@dataclass(frozen=True, slots=True)
class LoginFailed(DirectoryEvent):
    """A login (or list) failed at `server`; the client goes on trying."""

    server: str
    reason: str


@dataclass(frozen=True, slots=True)
class ListFetched(DirectoryEvent):
    stations: int


class _Timer(enum.Enum):
    LOGIN = "login"
    LIST = "list"


def parse_server(text: str) -> tuple[str, int]:
    """`host` or `host:port` (TCP 5200 by default)."""
    host, sep, port = text.rpartition(":")
    if sep and re.fullmatch(r"[0-9]{1,5}", port) and host:
        return host.strip("[]"), int(port)
    return text, DEFAULT_PORT


class DirectoryClient:
    """Our presence in the directory and the station list, across servers tried in turn."""

    def __init__(
        self,
        callsign: str,
        password: Secret,
        location: str,
        servers: Sequence[str],
        *,
        local_hhmm: Callable[[], str],
    ) -> None:
        if not servers:
            raise ValueError("no directory server")
        self.callsign = callsign.upper()
        self._password = password
        self.location = location
        self._servers = [parse_server(s) for s in servers]
        self._local_hhmm = local_hhmm
        self._server_index = 0
        #: Failures in a row (across servers); a whole round of them starts the back-off.
        self._failures = 0
        self._backoff = BACKOFF_FIRST
        self._timers: DeadlineTable[_Timer] = DeadlineTable()
        self._in_flight: DirectoryRequest | None = None
        self._next_id = 1
        self.status = Status.ONLINE
        #: The status the login in flight (or the last one) said.
        self._sent_status = Status.ONLINE
        self.logged_in = False
        self.logged_in_at: float | None = None
        self.last_error: str | None = None
        self.list = StationList()
        self.list_at: float | None = None
        self._list_wanted = False
        self._out: Outbox[DirectoryRequest, DirectoryEvent] = Outbox()

    # --- getters ------------------------------------------------------------------------------

    @property
    def server(self) -> str:
        host, port = self._servers[self._server_index]
        return host if port == DEFAULT_PORT else f"{host}:{port}"

    def next_deadline(self) -> float | None:
        return None if self._in_flight is not None else self._timers.earliest()

    def snapshot(self, now: float) -> dict[str, Any]:
        """The snapshot's `echolink.directory` object (never the password)."""
        login_at = self._timers.get(_Timer.LOGIN)
        return {
            "server": self.server,
            "logged_in": self.logged_in,
            "status": self.status.value,
            "stations": len(self.list),
            "list_age_s": None if self.list_at is None else round(now - self.list_at, 1),
            "failures": self._failures,
            "last_error": self.last_error,
            "next_attempt_s": None if login_at is None else max(0.0, round(login_at - now, 1)),
        }

    # --- inputs -------------------------------------------------------------------------------

    def start(self, now: float) -> tuple[tuple[DirectoryRequest, ...], tuple[DirectoryEvent, ...]]:
        """Log in now."""
        self._timers.set(_Timer.LOGIN, now)
        return self.timer(now)

    def set_status(
        self, status: Status, now: float
    ) -> tuple[tuple[DirectoryRequest, ...], tuple[DirectoryEvent, ...]]:
        """Our status changed (a station connected, the last one left): log in again now."""
        if status is not self.status:
            self.status = status
            self._timers.set(_Timer.LOGIN, now)
        return self.timer(now)

    def want_list(
        self, now: float
    ) -> tuple[tuple[DirectoryRequest, ...], tuple[DirectoryEvent, ...]]:
        """A station we do not know called: fetch the list again soon."""
        at = now if self.list_at is None else max(now, self.list_at + LIST_MISS_HOLDOFF)
        current = self._timers.get(_Timer.LIST)
        if self.logged_in and (current is None or at < current):
            self._timers.set(_Timer.LIST, at)
        return self.timer(now)

    def timer(self, now: float) -> tuple[tuple[DirectoryRequest, ...], tuple[DirectoryEvent, ...]]:
        """Start the request whose time has come (one at a time: a login first)."""
        if self._in_flight is None:
            due = self._timers.due(now)
            if _Timer.LOGIN in due:
                self._timers.cancel(_Timer.LOGIN)
                self._send("login", self._login_payload())
            elif _Timer.LIST in due:
                self._timers.cancel(_Timer.LIST)
                self._send("list", b"s")
        return self._out.take()

    def completed(
        self, request_id: int, answer: bytes, now: float
    ) -> tuple[tuple[DirectoryRequest, ...], tuple[DirectoryEvent, ...]]:
        """The server answered request `request_id` and closed."""
        request = self._take_request(request_id)
        if request is None:
            return self._out.take()
        if request.kind == "login":
            if answer[:2].upper() == b"OK":
                self._succeeded()
                self.logged_in, self.logged_in_at = True, now
                # A status change while the login was on its way needs another one now.
                again = self._sent_status is not self.status
                self._timers.set(_Timer.LOGIN, now if again else now + LOGIN_INTERVAL)
                if _Timer.LIST not in self._timers:
                    self._timers.set(_Timer.LIST, now)
                self._out.report(LoggedIn(self.server))
            else:
                self._failed("the directory refused the login", now)
        else:
            try:
                stations = parse_list(answer)
            except ListError as exc:
                self._failed(f"bad station list: {exc}", now)
            else:
                self._succeeded()
                self.list, self.list_at = stations, now
                self._timers.set(_Timer.LIST, now + LIST_INTERVAL)
                self._out.report(ListFetched(len(stations)))
        return self.timer(now)

    def failed(
        self, request_id: int, reason: str, now: float
    ) -> tuple[tuple[DirectoryRequest, ...], tuple[DirectoryEvent, ...]]:
        """Request `request_id` could not be done (no connection, a time-out, a reset)."""
        if self._take_request(request_id) is not None:
            self._failed(reason, now)
        return self.timer(now)

    # --- inside -------------------------------------------------------------------------------

    def _login_payload(self) -> bytes:
        self._sent_status = self.status
        return login_request(
            self.callsign, self._password, self.status, self._local_hhmm(), self.location
        )

    def _send(self, kind: str, payload: bytes) -> None:
        request = DirectoryRequest(self._next_id, kind, self._servers[self._server_index], payload)
        self._next_id += 1
        self._in_flight = request
        self._out.send(request)

    def _take_request(self, request_id: int) -> DirectoryRequest | None:
        request = self._in_flight
        if request is None or request.request_id != request_id:
            return None
        self._in_flight = None
        return request

    def _succeeded(self) -> None:
        self._failures = 0
        self._backoff = BACKOFF_FIRST
        self.last_error = None

    def _failed(self, reason: str, now: float) -> None:
        """Move to the next server; after a whole round of failures, back off. A failed list
        is retried through a fresh login (the server we were on may be gone)."""
        server = self.server
        self.last_error = reason
        self.logged_in = False
        self._failures += 1
        self._server_index = (self._server_index + 1) % len(self._servers)
        self._timers.cancel(_Timer.LIST)
        if self._failures % len(self._servers):
            self._timers.set(_Timer.LOGIN, now)
        else:
            self._timers.set(_Timer.LOGIN, now + self._backoff)
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)
        self._out.report(LoginFailed(server, reason))
