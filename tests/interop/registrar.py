"""A tiny IAX2 registrar on a real loopback UDP socket, for interop tests.

It speaks the registrar side of iax2.md §4.3-4.4 the way Asterisk does, using the frame core
for every datagram: an empty CALLTOKEN IE earns a stateless CALLTOKEN reply (requests without
the IE are let through, as Asterisk's `calltokenoptional` does for iaxmodem), a bad token gets a
stateless REGREJ, users with a password are challenged with REGAUTH (MD5) and checked, good
credentials get REGACK [USERNAME, DATETIME, REFRESH, APPARENT_ADDR], bad ones REGREJ [CAUSE,
CAUSECODE 29]. REGREL is handled like REGREQ and removes the registration. A repeated request
gets the last reply again, so a client's retransmissions are answered.

`fake_ack = True` makes it answer good credentials with the AllStarLink-style fake REGACK
(APPARENT_ADDR 255.255.255.255). Every frame received is recorded in `received`.

`RegistrarCore` is the protocol alone (`handle(frame, addr, now)` returns what to send), for
simulated links; `Registrar` serves it on a socket from a daemon thread (use it as a context
manager). Test code only: it never retransmits its own frames on a timer.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from node._core import FrameError, FullFrame, parse
from node.iax2.constants import IE, FrameType, IaxSubclass
from node.iax2.stateless import apathetic_reply
from tests.loopback import Address, UdpServer

__all__ = ["Received", "Registrar"]

AUTH_MD5 = 0x2
CAUSE_FACILITY_REJECTED = 29
TOKEN_LIFETIME = 10.0


@dataclass(frozen=True)
class Received:
    """One frame the registrar received, with where it came from and when (monotonic)."""

    frame: FullFrame
    addr: tuple[str, int]
    at: float


@dataclass
class _Dialog:
    callno: int
    peer_callno: int
    addr: tuple[str, int]
    origin: float
    iseq: int = 0
    oseq: int = 0
    last_ts: int = 0
    challenge: str | None = None
    authenticated: bool = False
    last_reply: FullFrame | None = None
    replies: list[FullFrame] = field(default_factory=list)


class RegistrarCore:
    """The registrar's protocol logic without a socket or a clock (so tests can also drive it
    over a simulated link). `users` maps username -> password ("" = no authentication)."""

    def __init__(
        self,
        users: Mapping[str, str],
        *,
        calltokens: bool = True,
        require_token: bool = False,
        fake_ack: bool = False,
        grant_refresh: int | None = None,
        auth_methods: int = AUTH_MD5,
    ) -> None:
        self.users = dict(users)
        self.calltokens = calltokens
        self.require_token = require_token
        self.fake_ack = fake_ack
        self.grant_refresh = grant_refresh
        self.auth_methods = auth_methods
        self.received: list[Received] = []
        self.sent: list[tuple[FullFrame, tuple[str, int]]] = []
        #: username -> (address, refresh) of every current registration.
        self.registrations: dict[str, tuple[tuple[str, int], int]] = {}
        self._key = secrets.token_bytes(32)
        self._callnos = itertools.count(2)
        self._by_peer: dict[tuple[tuple[str, int], int], _Dialog] = {}
        self._by_callno: dict[int, _Dialog] = {}
        self._now = 0.0
        self._out: list[tuple[FullFrame, tuple[str, int]]] = []

    def handle(
        self, frame: FullFrame, addr: tuple[str, int], now: float
    ) -> list[tuple[FullFrame, tuple[str, int]]]:
        """Take one received frame at time `now`; return the frames to send, with addresses."""
        self._now = now
        self._out = []
        self.received.append(Received(frame, addr, now))
        self._handle(frame, addr)
        return self._out

    def _send(self, frame: FullFrame, addr: tuple[str, int]) -> None:
        self.sent.append((frame, addr))
        self._out.append((frame, addr))

    # --- protocol ---

    def _handle(self, frame: FullFrame, addr: tuple[str, int]) -> None:
        if frame.ftype != FrameType.IAX:
            return
        sub = frame.subclass
        if frame.dcall == 0 and sub in (IaxSubclass.REGREQ, IaxSubclass.REGREL):
            dialog = self._by_peer.get((addr, frame.scall))
            if dialog is None:
                if not self._token_ok(frame, addr):
                    return
                dialog = _Dialog(next(self._callnos), frame.scall, addr, self._now)
                self._by_peer[(addr, frame.scall)] = dialog
                self._by_callno[dialog.callno] = dialog
        else:
            dialog = self._by_callno.get(frame.dcall)
            if dialog is None or dialog.addr != addr:
                if sub not in (IaxSubclass.INVAL, IaxSubclass.ACK):
                    # Asterisk `raw_hangup`: from the call number they addressed, ts and seqnos 0.
                    inval = FullFrame(
                        FrameType.IAX, IaxSubclass.INVAL, scall=frame.dcall, dcall=frame.scall
                    )
                    self._send(inval, addr)
                return
        if sub in (IaxSubclass.ACK, IaxSubclass.INVAL):
            return
        if frame.oseq != dialog.iseq:
            if 0 < ((dialog.iseq - frame.oseq) & 0xFF) < 128 and dialog.last_reply is not None:
                again = parse(dialog.last_reply.to_bytes())
                assert isinstance(again, FullFrame)
                again.retrans = True
                again.iseq = dialog.iseq
                self._send(again, addr)
            return
        dialog.iseq = (dialog.iseq + 1) & 0xFF
        if sub in (IaxSubclass.REGREQ, IaxSubclass.REGREL):
            self._request(dialog, frame)
        else:
            self._reply(dialog, IaxSubclass.ACK, ts=frame.ts)

    def _token_ok(self, frame: FullFrame, addr: tuple[str, int]) -> bool:
        """Asterisk's `handle_call_token`: False when the frame was answered statelessly."""
        if not self.calltokens or not frame.has_ie(IE.CALLTOKEN):
            if self.require_token:
                self._send(apathetic_reply(frame, IaxSubclass.REGREJ), addr)
                return False
            return True
        token = next((bytes(d) for i, d in frame.ies if i == IE.CALLTOKEN), b"")
        if not token:
            issued = self._issue(addr)
            reply = apathetic_reply(frame, IaxSubclass.CALLTOKEN, ies=[(IE.CALLTOKEN, issued)])
            self._send(reply, addr)
            return False
        if not self._verify(token, addr):
            self._send(apathetic_reply(frame, IaxSubclass.REGREJ), addr)
            return False
        return True

    def _issue(self, addr: tuple[str, int]) -> str:
        epoch = str(int(self._now))
        mac = hmac.new(self._key, f"{addr[0]}:{addr[1]}{epoch}".encode(), hashlib.sha1)
        return f"{epoch}?{mac.hexdigest()}"

    def _verify(self, token: bytes, addr: tuple[str, int]) -> bool:
        epoch, sep, mac = token.decode(errors="replace").partition("?")
        if not sep or not epoch.isdigit() or self._now - int(epoch) > TOKEN_LIFETIME:
            return False
        want = hmac.new(self._key, f"{addr[0]}:{addr[1]}{epoch}".encode(), hashlib.sha1)
        return hmac.compare_digest(want.hexdigest(), mac)

    def _request(self, dialog: _Dialog, frame: FullFrame) -> None:
        username = frame.ie(IE.USERNAME)
        username = username if isinstance(username, str) else ""
        password = self.users.get(username)
        if password == "":
            dialog.authenticated = True
        if not dialog.authenticated:
            answer = frame.ie(IE.MD5_RESULT)
            if dialog.challenge is None or not isinstance(answer, str):
                # Unknown users are challenged too, so a client cannot probe for names.
                dialog.challenge = str(secrets.randbelow(10**9))
                self._reply(
                    dialog,
                    IaxSubclass.REGAUTH,
                    ies=[
                        (IE.AUTHMETHODS, self.auth_methods),
                        (IE.CHALLENGE, dialog.challenge),
                        (IE.USERNAME, username),
                    ],
                )
                return
            expected = hashlib.md5((dialog.challenge + (password or "")).encode()).hexdigest()
            if password is None or not hmac.compare_digest(expected, answer.lower()):
                self._reply(
                    dialog,
                    IaxSubclass.REGREJ,
                    ies=[
                        (IE.CAUSE, "Registration Refused"),
                        (IE.CAUSECODE, CAUSE_FACILITY_REJECTED),
                    ],
                )
                return
            dialog.authenticated = True
        now = time.gmtime()
        ies: list[tuple[int, Any]] = [
            (IE.USERNAME, username),
            (
                IE.DATETIME,
                (now.tm_year, now.tm_mon, now.tm_mday, now.tm_hour, now.tm_min, now.tm_sec),
            ),
        ]
        if frame.subclass == IaxSubclass.REGREL:
            self.registrations.pop(username, None)
        elif self.fake_ack:
            ies += [(IE.REFRESH, 60), (IE.APPARENT_ADDR, ("255.255.255.255", 0))]
        else:
            asked = frame.ie(IE.REFRESH)
            refresh = self.grant_refresh or (asked if isinstance(asked, int) and asked else 60)
            self.registrations[username] = (dialog.addr, refresh)
            ies += [(IE.REFRESH, refresh), (IE.APPARENT_ADDR, dialog.addr)]
        self._reply(dialog, IaxSubclass.REGACK, ies=ies)

    def _reply(
        self,
        dialog: _Dialog,
        subclass: int,
        *,
        ts: int | None = None,
        ies: list[tuple[int, Any]] | None = None,
    ) -> None:
        if ts is None:
            elapsed = int((self._now - dialog.origin) * 1000)
            ts = dialog.last_ts = max(elapsed, dialog.last_ts + 1)
        frame = FullFrame(
            FrameType.IAX,
            subclass,
            scall=dialog.callno,
            dcall=dialog.peer_callno,
            ts=ts,
            oseq=dialog.oseq,
            iseq=dialog.iseq,
            ies=ies,
        )
        if subclass != IaxSubclass.ACK:
            dialog.oseq = (dialog.oseq + 1) & 0xFF
            dialog.last_reply = frame
        dialog.replies.append(frame)
        self._send(frame, dialog.addr)


class Registrar(RegistrarCore, UdpServer):
    """`RegistrarCore` on a loopback UDP socket, served by a daemon thread; `options` are
    `RegistrarCore`'s."""

    wait_timeout = 10.0

    def __init__(
        self, users: Mapping[str, str], *, host: str = "127.0.0.1", **options: Any
    ) -> None:
        RegistrarCore.__init__(self, users, **options)
        UdpServer.__init__(self, "test-registrar", host=host)

    def frames_from(self, port: int) -> list[FullFrame]:
        """Every frame received from the loopback port `port`, in order."""
        with self._lock:
            return [r.frame for r in self.received if r.addr[1] == port]

    def _on_datagram(self, data: bytes, addr: Address) -> None:
        try:
            frame = parse(data)
        except FrameError:
            return
        if isinstance(frame, FullFrame):
            for reply, to in self.handle(frame, addr, time.monotonic()):
                self.sock.sendto(reply.to_bytes(), to)
