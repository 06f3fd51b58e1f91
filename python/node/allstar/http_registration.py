"""HTTP registration as ASL3's `res_rpt_http_registrations` does it (sans-I/O).

Every `interval` seconds the node POSTs JSON to the registrar:

    POST <url>   Content-Type: application/json   (15 s timeout)
    {"port": <our IAX2 port>,
     "data": {"nodes": {"<node>": {"node": "<node>", "passwd": "<password>", "remote": 0}}}}

and the registrar answers `{"ipaddr": "<our address as it sees it>", "port": <n>,
"refresh": <n>, "data": ...}`. The registration took only if the reply is 2xx JSON whose `data`,
dumped as JSON, contains `successfully registered`: the registrar answers 2xx to a wrong password
too (app_rpt #325), and may leave `data` out (app_rpt #355, a crash there). Like ASL, the node
re-posts every interval whatever the reply's `refresh` says; there is no HTTP unregister, so
`deregister()` only stops the posts.

`HttpRegistration` never touches a socket or a clock: commands and replies carry `now`, and each
returns an `HttpOutput` with the POSTs to make, the events and the next deadline. The events are
those of the IAX2 machine (`node.iax2.registration`), so the controller treats both alike. The
password is held as a `Secret`; it is in the body a `RegistrationPost` builds when sent and in
nothing else: not in a repr, event, reason or log line.
"""

from __future__ import annotations

import enum
import ipaddress
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from node.errors import LocalProtocolError
from node.iax2.registration import (
    Deregistered,
    Registered,
    RegistrationEvent,
    RegistrationFailed,
    RegistrationStanding,
)
from node.machine import Outbox
from node.secrets import Secret, shown_text

__all__ = [
    "POST_TIMEOUT",
    "SUCCESS_TEXT",
    "HttpOutput",
    "HttpRegistration",
    "HttpRegistrationState",
    "RegistrationPost",
    "ReplyOutcome",
    "interpret_reply",
]

#: ASL's curl connect and total timeouts, seconds.
POST_TIMEOUT = 15.0
#: What the dumped `data` of a reply must contain for the registration to count.
SUCCESS_TEXT = "successfully registered"


class HttpRegistrationState(enum.Enum):
    """Where the HTTP registration stands (the snapshot's `registration.state`)."""

    #: Not posting (the start, and after `deregister()`).
    UNREGISTERED = "unregistered"
    #: The first POST since `register()` is under way.
    REGISTERING = "registering"
    #: The last reply confirmed the registration.
    REGISTERED = "registered"
    #: The last POST failed; the next one is scheduled.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RegistrationPost:
    """One POST to make, then to report with `replied()` or `failed()` under its `seq`."""

    headers: ClassVar[dict[str, str]] = {"Content-Type": "application/json"}

    seq: int
    url: str
    node_id: str
    #: Our IAX2 port, which the registrar records beside the address it sees.
    port: int
    secret: Secret
    timeout: float = POST_TIMEOUT

    def content(self) -> bytes:
        """The JSON body. It holds the password: build it only to send it."""
        node = {"node": self.node_id, "passwd": self.secret.reveal(), "remote": 0}
        body = {"port": self.port, "data": {"nodes": {self.node_id: node}}}
        return json.dumps(body, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class HttpOutput:
    """What one input produced: POSTs to make, events, and the next deadline."""

    posts: tuple[RegistrationPost, ...] = ()
    events: tuple[RegistrationEvent, ...] = ()
    #: Absolute time (same clock as `now`) at which to call `timer()`, or None for never.
    deadline: float | None = None


@dataclass(frozen=True, slots=True)
class ReplyOutcome:
    """What a registrar's reply says."""

    ok: bool
    #: Our address as the registrar saw it (`ipaddr`, `port`; port 0 when it gave none), on
    #: success only, and only when `ipaddr` is an IP address.
    perceived: tuple[str, int] | None = None
    #: Why it failed, fit to show; None on success.
    reason: str | None = None


def interpret_reply(status: int, body: bytes, private: tuple[str, ...] = ()) -> ReplyOutcome:
    """Judge one reply the way ASL does. `private` strings are blanked out of the reason."""
    if not 200 <= status <= 299:
        return ReplyOutcome(False, reason=f"registrar answered HTTP {status}")
    try:
        reply = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return ReplyOutcome(False, reason="registrar reply is not JSON")
    if not isinstance(reply, dict):
        return ReplyOutcome(False, reason="registrar reply is not a JSON object")
    if "data" not in reply:
        return ReplyOutcome(False, reason="registrar reply has no data")
    said = json.dumps(reply["data"])
    if SUCCESS_TEXT not in said:
        shown = shown_text(said, private)
        return ReplyOutcome(False, reason=f"registrar did not confirm the registration: {shown}")
    return ReplyOutcome(True, perceived=_perceived(reply.get("ipaddr"), reply.get("port")))


def _perceived(ipaddr: Any, port: Any) -> tuple[str, int] | None:
    if not isinstance(ipaddr, str):
        return None
    try:
        ip = str(ipaddress.ip_address(ipaddr.strip()))
    except ValueError:
        return None
    ok_port = type(port) is int and 1 <= port <= 65535
    return (ip, port if ok_port else 0)


class HttpRegistration(RegistrationStanding[HttpRegistrationState]):
    """The HTTP registration client for one node (sans-I/O). Inputs carry non-decreasing `now`."""

    def __init__(
        self,
        url: str,
        node_id: str,
        secret: Secret | None,
        iax_port: int,
        interval: float,
        now: float,
        *,
        timeout: float = POST_TIMEOUT,
    ) -> None:
        if not node_id:
            raise ValueError("node_id must not be empty")
        if interval <= 0:
            raise ValueError("the re-post interval must be positive")
        super().__init__(HttpRegistrationState.UNREGISTERED, now)
        self.url = url
        self.node_id = node_id
        self.iax_port = iax_port
        self.interval = float(interval)
        self.timeout = timeout
        self._secret = secret
        self._seq = 0
        #: The seq of the POST under way, if any.
        self._in_flight: int | None = None
        #: When the next POST is due (interval after the previous one started); None when idle.
        self._due: float | None = None
        self._out: Outbox[RegistrationPost, RegistrationEvent] = Outbox()

    # --- properties ---

    @property
    def registered(self) -> bool:
        return self._state is HttpRegistrationState.REGISTERED

    def next_deadline(self) -> float | None:
        # While a POST is under way its reply (or failure) decides what comes next.
        return self._due if self._in_flight is None else None

    def set_secret(self, secret: Secret | None) -> None:
        """Provide or replace the password (POST /secrets); used from the next POST on."""
        self._secret = secret

    def __repr__(self) -> str:
        return (
            f"HttpRegistration(url={self.url!r}, node_id={self.node_id!r}, "
            f"state={self._state.value})"
        )

    # --- commands ---

    def register(self, now: float) -> HttpOutput:
        """Post now (also when registered: re-post now). A no-op while a POST is under way."""
        self._advance(now)
        if self._in_flight is not None:
            return self._output()
        if self._state is HttpRegistrationState.UNREGISTERED:
            self._state = HttpRegistrationState.REGISTERING
        self._post(now)
        return self._output()

    def deregister(self, now: float) -> HttpOutput:
        """Stop posting (there is no HTTP unregister: the registrar's record lapses). A reply
        to a POST still under way is ignored."""
        self._advance(now)
        if self._state is HttpRegistrationState.UNREGISTERED:
            raise LocalProtocolError("not registered: nothing to deregister")
        self._state = HttpRegistrationState.UNREGISTERED
        self._in_flight = None
        self._due = None
        self._apparent = None
        self._out.report(Deregistered())
        return self._output()

    # --- inputs ---

    def timer(self, now: float) -> HttpOutput:
        """Post if one is due."""
        self._advance(now)
        if self._in_flight is None and self._due is not None and self._due <= now:
            self._post(now)
        return self._output()

    def replied(self, seq: int, now: float, status: int, body: bytes) -> HttpOutput:
        """The registrar answered POST `seq` with HTTP `status` and `body`."""
        self._advance(now)
        if seq != self._in_flight:
            return self._output()
        secret = self._secret.reveal() if self._secret is not None else ""
        outcome = interpret_reply(status, body, (secret,))
        if not outcome.ok:
            assert outcome.reason is not None
            self._finish_failed(outcome.reason, now)
            return self._output()
        self._in_flight = None
        changed = not self.registered or outcome.perceived != self._apparent
        self._state = HttpRegistrationState.REGISTERED
        self._apparent = outcome.perceived
        self._last_failure = None
        if changed:
            refresh = max(1, round(self.interval))
            self._out.report(Registered(refresh=refresh, apparent_addr=outcome.perceived))
        self._after_post(now)
        return self._output()

    def failed(self, seq: int, now: float, reason: str) -> HttpOutput:
        """POST `seq` got no HTTP reply (unreachable, timed out, cut off): `reason` says how."""
        self._advance(now)
        if seq != self._in_flight:
            return self._output()
        secret = self._secret.reveal() if self._secret is not None else ""
        self._finish_failed(shown_text(reason, (secret,)) or "no reply", now)
        return self._output()

    # --- plumbing ---

    def _post(self, now: float) -> None:
        self._due = now + self.interval
        if self._secret is None:
            self._finish_failed(
                f"no password for node {self.node_id} (set NET_SECRET or POST /secrets)", now
            )
            return
        self._seq += 1
        self._in_flight = self._seq
        post = RegistrationPost(
            self._seq, self.url, self.node_id, self.iax_port, self._secret, self.timeout
        )
        self._out.send(post)

    def _finish_failed(self, reason: str, now: float) -> None:
        self._in_flight = None
        self._state = HttpRegistrationState.FAILED
        self._apparent = None
        self._last_failure = reason
        self._out.report(RegistrationFailed(reason))
        self._after_post(now)

    def _after_post(self, now: float) -> None:
        """A POST ended: the next is due an interval after it started, or now if that is past
        (a reply slower than the interval)."""
        if self._due is not None and self._due <= now:
            self._post(now)

    def _output(self) -> HttpOutput:
        posts, events = self._out.take()
        return HttpOutput(posts, events, self.next_deadline())
