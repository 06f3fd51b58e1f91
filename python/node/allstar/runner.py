"""The asyncio glue of the HTTP registration and the status posts: one timer, httpx, tasks.

Each runner feeds its sans-I/O core the clock and the HTTP outcomes and makes the requests the
core asks for; the core's deadline is one of the router's timer kinds (`next_deadline`, `timer`),
and an HTTP outcome reaches the router as an input (`on_events`, even with no event, so that it
reads the moved deadline). Nothing here blocks the event loop, and a failing server never stops
the node: failures become events (for registration) or one log line per outage (for status
posts).

The HTTP client ignores proxy settings from the environment on purpose: a registration sent
through a proxy registers the proxy's address, and callees then refuse our calls because they
come from another one (ASL3 manual, "iaxreg").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import httpx

from node import __version__
from node.allstar.http_registration import HttpOutput, HttpRegistration, RegistrationPost
from node.allstar.statpost import StatOutput, StatPoster, StatReport
from node.iax2.registration import RegistrationEvent
from node.secrets import Secret

__all__ = [
    "MAX_REPLY_BYTES",
    "STATPOST_TIMEOUT",
    "HttpRegistrationRunner",
    "StatPostRunner",
    "make_client",
]

log = logging.getLogger(__name__)

CoreT = TypeVar("CoreT", HttpRegistration, StatPoster)

#: A registrar's reply is a few fields; more than this is cut off and judged as it stands.
MAX_REPLY_BYTES = 64 * 1024
#: app_rpt gives a status post no time limit; we give it one so a dead collector cannot pile
#: requests up.
STATPOST_TIMEOUT = 15.0
#: Status posts waiting while one is under way; more are dropped (and counted).
STATPOST_QUEUE = 8


def make_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        trust_env=False,
        follow_redirects=False,
        headers={"User-Agent": f"iax-node/{__version__}"},
    )


def _reason(exc: Exception, timeout: float) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"no reply within {timeout:g} s"
    detail = str(exc).strip()
    kind = type(exc).__name__
    return f"{kind}: {detail}" if detail else kind


async def _read_limited(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= MAX_REPLY_BYTES:
            break
    return bytes(body[:MAX_REPLY_BYTES])


class _Runner(Generic[CoreT]):
    """What both runners hold: the sans-I/O core, the clock and the HTTP client (closed with the
    runner when it made it)."""

    def __init__(
        self, core: CoreT, clock: Callable[[], float], client: httpx.AsyncClient | None
    ) -> None:
        self.core: CoreT = core
        self._clock = clock
        self._client = client or make_client()
        self._own_client = client is None

    async def _close_client(self) -> None:
        if self._own_client:
            await self._client.aclose()


class HttpRegistrationRunner(_Runner[HttpRegistration]):
    """Runs an `HttpRegistration`: POSTs with httpx; what a reply or a failure reported goes to
    `on_events`, what an input reported is returned."""

    def __init__(
        self,
        core: HttpRegistration,
        on_events: Callable[[Sequence[RegistrationEvent]], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(core, clock, client)
        self._on_events = on_events
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def register(self) -> Sequence[RegistrationEvent]:
        """Post now (the core makes this a no-op while a POST is under way)."""
        return self._apply(self.core.register(self._clock()))

    def deregister(self) -> Sequence[RegistrationEvent]:
        """Stop posting. Raises `LocalProtocolError` when not registered or trying."""
        return self._apply(self.core.deregister(self._clock()))

    def set_secret(self, secret: Secret | None) -> None:
        self.core.set_secret(secret)

    async def aclose(self) -> None:
        """Stop: no more posts; one under way is abandoned."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._close_client()

    def next_deadline(self) -> float | None:
        """When the core next needs `timer` (a retry, a refresh), None once closed."""
        return None if self._closed else self.core.next_deadline()

    def timer(self, now: float) -> Sequence[RegistrationEvent]:
        return self._apply(self.core.timer(now))

    def _apply(self, out: HttpOutput) -> Sequence[RegistrationEvent]:
        if self._closed:
            return ()
        for post in out.posts:
            task = asyncio.create_task(self._post(post))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return out.events

    async def _post(self, post: RegistrationPost) -> None:
        try:
            async with self._client.stream(
                "POST",
                post.url,
                content=post.content(),
                headers=post.headers,
                timeout=post.timeout,
            ) as response:
                body = await _read_limited(response)
        except httpx.HTTPError as exc:
            out = self.core.failed(post.seq, self._clock(), _reason(exc, post.timeout))
        else:
            out = self.core.replied(post.seq, self._clock(), response.status_code, body)
        events = self._apply(out)
        if not self._closed:
            self._on_events(events)


class StatPostRunner(_Runner[StatPoster]):
    """Runs a `StatPoster`: asks `report()` for the node's state when a post is due and GETs the
    URLs one after another. Never raises into the node; failures are logged once per outage."""

    def __init__(
        self,
        core: StatPoster,
        report: Callable[[], StatReport],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(core, clock, client)
        self._report = report
        self._wall = wall_clock
        self._queue: asyncio.Queue[str] = asyncio.Queue(STATPOST_QUEUE)
        self._worker: asyncio.Task[None] | None = None
        self._failing = False
        #: Posts made and failed, and posts dropped because the queue was full.
        self.sent = 0
        self.failures = 0
        self.dropped = 0
        host = urllib.parse.urlsplit(core.url).hostname or "?"
        self._where = host

    def start(self) -> None:
        """Begin: the first link post goes out at the core's first deadline (now), then one
        every interval."""
        if self._worker is None:
            self._worker = asyncio.create_task(self._work())

    def next_deadline(self) -> float | None:
        """When the next status post is due (None before `start` and after `aclose`)."""
        return None if self._worker is None else self.core.next_deadline()

    def key_changed(self) -> None:
        """The receiver keyed or unkeyed: post it (the report says which)."""
        report = self._take_report()
        if report is not None:
            self._apply(self.core.key_changed(self._wall(), report))

    def links_changed(self) -> None:
        """A link came, went or changed mode: the link post goes out shortly."""
        self._apply(self.core.links_changed(self._clock()))

    async def aclose(self) -> None:
        """Stop: no more posts; one under way is abandoned."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        await self._close_client()

    def timer(self, now: float) -> None:
        if now < self.core.next_deadline():
            return
        report = self._take_report()
        if report is None:
            self._apply(self.core.skipped(now))
            return
        self._apply(self.core.timer(now, self._wall(), report))

    def _take_report(self) -> StatReport | None:
        try:
            return self._report()
        except Exception:
            log.exception("statpost: building the status report failed")
            return None

    def _apply(self, out: StatOutput) -> None:
        for url in out.urls:
            try:
                self._queue.put_nowait(url)
            except asyncio.QueueFull:
                self.dropped += 1
                log.debug("statpost: %d posts waiting; dropping one", self._queue.qsize())

    async def _work(self) -> None:
        while True:
            url = await self._queue.get()
            await self._send(url)

    async def _send(self, url: str) -> None:
        problem: str | None = None
        try:
            async with self._client.stream("GET", url, timeout=STATPOST_TIMEOUT) as response:
                await _read_limited(response)
            if not 200 <= response.status_code <= 299:
                problem = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            problem = _reason(exc, STATPOST_TIMEOUT)
        if problem is None:
            self.sent += 1
            if self._failing:
                log.info("statpost to %s works again", self._where)
            self._failing = False
            return
        self.failures += 1
        # One line per outage, as app_rpt logs only the first of a run of failures; the query
        # is left out, the host is enough to find the problem.
        if not self._failing:
            log.warning("statpost to %s failed: %s", self._where, problem)
        self._failing = True
