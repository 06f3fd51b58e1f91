"""A small EchoLink directory for the tests (not a product feature): TCP, one command per
connection, as SvxLink's echolib and chan_echolink speak to the real one (research/echolink.md).

- `l<CALL>\\xac\\xac<PASSWORD>\\r<STATUS>(HH:MM)\\r<LOCATION>\\r[<EMAIL>\\r]`: answered `OK` when
  the callsign is known and the password is its own (else `BAD`); the station is listed at the
  address the connection came from, ON or BUSY as its status line says (`OFF` removes it).
- `s` or `F<snapshot>\\r`: the list, `@@@\\n<n>\\n` then four lines per station and `+++\\n`.

It runs in a thread (the tests run SvxLink as a process and our node in an event loop), binds
`host:port` (SvxLink's directory port is fixed at 5200, so each test gets its own 127.0.x.y),
and can be stopped and started again on the same address (the directory-down test). It records
every login it took, for the tests to read.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field

__all__ = ["Account", "DirectoryStandIn", "Login"]


@dataclass(frozen=True)
class Account:
    callsign: str
    password: str
    node: str


@dataclass(frozen=True)
class Login:
    callsign: str
    status: str
    location: str
    ip: str
    at: float


@dataclass
class _Entry:
    account: Account
    location: str
    status: str
    ip: str
    hhmm: str


@dataclass
class DirectoryStandIn:
    host: str
    accounts: list[Account]
    port: int = 5200
    logins: list[Login] = field(default_factory=list)
    list_requests: int = 0
    #: Stations listed without logging in (stand-ins for "a station somewhere else").
    extra: list[tuple[Account, str]] = field(default_factory=list)
    #: Callsigns whose login is taken but that the list leaves out (a station whose entry a
    #: list fetched elsewhere does not hold).
    hidden: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        for account, ip in self.extra:
            self._entries[account.callsign] = _Entry(account, "elsewhere", "ON", ip, "00:00")
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer._handle(self.request, self.client_address[0])

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server((self.host, self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> DirectoryStandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what the tests read ------------------------------------------------------------------

    def listed(self) -> dict[str, str]:
        """Callsign -> IP of every listed station."""
        with self._lock:
            return {call: e.ip for call, e in self._entries.items()}

    def logins_of(self, callsign: str) -> list[Login]:
        with self._lock:
            return [login for login in self.logins if login.callsign == callsign]

    def list_bytes(self) -> bytes:
        with self._lock:
            entries = [e for e in self._entries.values() if e.account.callsign not in self.hidden]
        lines = ["@@@", str(len(entries))]
        for e in entries:
            status = f"[{e.status} {e.hhmm}]"
            lines += [e.account.callsign, f"{e.location} {status}", e.account.node, e.ip]
        lines.append("+++")
        return ("\n".join(lines) + "\n").encode("latin-1")

    # --- the protocol -------------------------------------------------------------------------

    def _read_request(self, sock: socket.socket) -> bytes:
        """A login ends with its location line (three `\\r`, or four with an e-mail line); a
        list request is one byte `s` or `F...\\r`. Read until one of those is complete."""
        sock.settimeout(5.0)
        data = b""
        while True:
            if data[:1] == b"s" or (data[:1] == b"F" and b"\r" in data):
                return data
            if data[:1] == b"l" and data.count(b"\r") >= 3:
                # The e-mail line, if any, follows at once.
                sock.settimeout(0.2)
                try:
                    more = sock.recv(4096)
                except TimeoutError:
                    more = b""
                return data + more
            chunk = sock.recv(4096)
            if not chunk:
                return data
            data += chunk
            if len(data) > 4096:
                return data

    def _handle(self, sock: socket.socket, ip: str) -> None:
        try:
            data = self._read_request(sock)
        except OSError:
            return
        if data[:1] in (b"s", b"F"):
            with self._lock:
                self.list_requests += 1
            sock.sendall(self.list_bytes())
            return
        if data[:1] != b"l":
            return
        sock.sendall(self._login(data[1:].decode("latin-1"), ip))

    def _login(self, text: str, ip: str) -> bytes:
        first, _, rest = text.partition("\r")
        call, sep, password = first.partition("\xac\xac")
        lines = rest.split("\r")
        if not sep or len(lines) < 2:
            return b"BAD"
        account = next((a for a in self.accounts if a.callsign == call.upper()), None)
        if account is None or account.password != password:
            return b"BAD"
        status_line, location = lines[0], lines[1]
        status = "BUSY" if status_line.startswith("BUSY") else "ON"
        hhmm = status_line[status_line.find("(") + 1 : status_line.find(")")]
        with self._lock:
            self.logins.append(Login(account.callsign, status_line, location, ip, time.monotonic()))
            if status_line.startswith("OFF"):
                self._entries.pop(account.callsign, None)
            else:
                self._entries[account.callsign] = _Entry(account, location, status, ip, hhmm)
        return b"OK"
