"""The asyncio runners against HTTP servers of our own on loopback."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable, Sequence

import pytest

from node import __version__
from node.allstar.http_registration import HttpRegistration
from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
from node.allstar.statpost import StatPoster, StatReport
from node.iax2.registration import Registered, RegistrationEvent, RegistrationFailed
from node.secrets import Secret
from tests.allstar.httpserver import HttpServer, Reply, Request

CANARY = "canary-http-runner-secret-2a91"
OK = {"ipaddr": "127.0.0.1", "port": 4570, "refresh": 179, "data": "successfully registered"}


async def fire_deadlines(
    runner: HttpRegistrationRunner | StatPostRunner,
    on_events: Callable[[Sequence[RegistrationEvent]], None] | None = None,
) -> None:
    """Run the runner's timer at its deadline, as the router does (the deadline is one of its
    timer kinds); cancel to stop."""
    loop = asyncio.get_running_loop()
    while True:
        at = runner.next_deadline()
        await asyncio.sleep(0.01 if at is None else max(0.0, min(at - loop.time(), 0.05)))
        at = runner.next_deadline()
        if at is not None and at <= loop.time():
            events = runner.timer(loop.time())
            if events and on_events is not None:
                on_events(events)


def registration(url: str, interval: float = 60, timeout: float = 15) -> HttpRegistration:
    return HttpRegistration(url, "2000", Secret(CANARY), 4570, interval, 0.0, timeout=timeout)


async def run_until(
    url: str,
    count: int,
    *,
    interval: float = 60,
    timeout: float = 15,
) -> tuple[list[RegistrationEvent], HttpRegistrationRunner]:
    """Register once and collect events until `count` have arrived."""
    events: list[RegistrationEvent] = []
    enough = asyncio.Event()

    def on_events(batch: Sequence[RegistrationEvent]) -> None:
        events.extend(batch)
        if len(events) >= count:
            enough.set()

    loop = asyncio.get_running_loop()
    core = HttpRegistration(
        url, "2000", Secret(CANARY), 4570, interval, loop.time(), timeout=timeout
    )
    runner = HttpRegistrationRunner(core, on_events, clock=loop.time)
    on_events(runner.register())
    timers = asyncio.create_task(fire_deadlines(runner, on_events))
    try:
        await asyncio.wait_for(enough.wait(), 20)
    finally:
        timers.cancel()
        await runner.aclose()
    return events, runner


def reply_json(obj: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(obj).encode())


def test_success_posts_asl_json_and_reports_the_perceived_address() -> None:
    with HttpServer(lambda r: reply_json(OK)) as srv:
        events, runner = asyncio.run(run_until(srv.url, 1))
        (request,) = srv.wait_for(1)
    assert events == [Registered(refresh=60, apparent_addr=("127.0.0.1", 4570))]
    assert runner.core.registered
    assert request.method == "POST" and request.target == "/"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == {
        "port": 4570,
        "data": {"nodes": {"2000": {"node": "2000", "passwd": CANARY, "remote": 0}}},
    }


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (reply_json({**OK, "data": "Node 2000 password incorrect"}), "did not confirm"),
        (reply_json({"ipaddr": "127.0.0.1"}), "reply has no data"),
        (reply_json(OK, status=500), "registrar answered HTTP 500"),
        (reply_json(OK, status=302), "registrar answered HTTP 302"),
        (Reply(200, b"{not json"), "reply is not JSON"),
    ],
)
def test_failures_are_events_with_a_reason(reply: Reply, reason: str) -> None:
    with HttpServer(lambda r: reply) as srv:
        events, runner = asyncio.run(run_until(srv.url, 1))
    assert len(events) == 1 and isinstance(events[0], RegistrationFailed)
    assert reason in events[0].reason and CANARY not in events[0].reason
    assert runner.core.last_failure == events[0].reason


def test_a_registrar_that_never_answers_times_out() -> None:
    with HttpServer(lambda r: Reply(hang=True)) as srv:
        events, _ = asyncio.run(run_until(srv.url, 1, timeout=0.3))
    assert events == [RegistrationFailed("no reply within 0.3 s")]


def test_an_unreachable_registrar_is_a_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the POST: nothing listens
    events, _ = asyncio.run(run_until(f"http://127.0.0.1:{port}/", 1))
    assert isinstance(events[0], RegistrationFailed)
    assert events[0].reason.startswith("ConnectError")


def test_the_runner_reposts_every_interval() -> None:
    answers = iter([reply_json(OK), reply_json(OK, status=503), reply_json(OK)])

    def answer(request: Request) -> Reply:
        return next(answers, reply_json(OK))

    with HttpServer(answer) as srv:
        events, _ = asyncio.run(run_until(srv.url, 3, interval=0.05))
        assert len(srv.wait_for(3)) >= 3
    assert [type(e) for e in events[:3]] == [Registered, RegistrationFailed, Registered]


def test_closing_abandons_a_post_under_way() -> None:
    async def scenario(srv: HttpServer) -> HttpRegistrationRunner:
        loop = asyncio.get_running_loop()
        runner = HttpRegistrationRunner(registration(srv.url), lambda e: None, clock=loop.time)
        runner.register()
        while not srv.requests:
            await asyncio.sleep(0.01)
        await runner.aclose()
        return runner

    with HttpServer(lambda r: Reply(hang=True)) as srv:
        runner = asyncio.run(scenario(srv))
    assert runner.core.state.value == "registering"
    assert runner.core.next_deadline() is None


# --- status posts -----------------------------------------------------------------------------

UNIX = 1_700_000_000.0
REPORT = StatReport(
    node="2000",
    links=("T2001", "R2002", "C2003"),
    keyed=True,
    key_changed_s=7.9,
    uptime_s=3600.4,
    kerchunks=1,
    keyups=5,
    tx_s=42.7,
    timeouts=0,
    executed_commands=2,
)
LINK_POST = (
    f"/uhandler?node=2000&time=1700000000&seqno={{}}&nodes=T2001,R2002,C2003"
    f"&apprptvers={__version__}&apprptuptime=3600&totalkerchunks=1&totalkeyups=5"
    f"&totaltxtime=42&timeouts=0&totalexecdcommands=2&keyed=1&keytime=7"
)


async def statpost_scenario(srv: HttpServer, report: object = REPORT) -> StatPostRunner:
    loop = asyncio.get_running_loop()
    poster = StatPoster(srv.url + "uhandler", 600, __version__, loop.time())
    runner = StatPostRunner(
        poster,
        report if callable(report) else (lambda: REPORT),
        clock=loop.time,
        wall_clock=lambda: UNIX,
    )
    runner.start()
    timers = asyncio.create_task(fire_deadlines(runner))
    while len(srv.requests) < 1:
        await asyncio.sleep(0.01)
    runner.key_changed()
    while len(srv.requests) < 2:
        await asyncio.sleep(0.01)
    runner.links_changed()
    while len(srv.requests) < 3:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # let the worker finish with the last reply
    timers.cancel()
    await runner.aclose()
    return runner


def test_status_posts_have_app_rpt_s_exact_query_strings() -> None:
    with HttpServer(lambda r: Reply(200, b"OK", "text/plain")) as srv:
        runner = asyncio.run(statpost_scenario(srv))
        first, key, links = srv.wait_for(3)
    assert first.method == "GET" and first.target == LINK_POST.format(1)
    assert key.target == "/uhandler?node=2000&time=1700000000&seqno=2&keyed=1&keytime=7"
    assert links.target == LINK_POST.format(3)
    assert runner.sent == 3 and runner.failures == 0


def test_an_idle_node_posts_an_empty_link_list() -> None:
    poster = StatPoster("http://127.0.0.1:9/u", 60, "1.2.3", now=0.0)
    url = poster.link_post(UNIX, StatReport(node="2000"))
    assert url == (
        "http://127.0.0.1:9/u?node=2000&time=1700000000&seqno=1&nodes=&apprptvers=1.2.3"
        "&apprptuptime=0&totalkerchunks=0&totalkeyups=0&totaltxtime=0&timeouts=0"
        "&totalexecdcommands=0&keyed=0&keytime=0"
    )


def test_failing_posts_are_logged_once_and_never_stop_the_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="node.allstar.runner")
    with HttpServer(lambda r: Reply(401, b"unregistered node", "text/plain")) as srv:
        runner = asyncio.run(statpost_scenario(srv))
    assert runner.failures == 3 and runner.sent == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].getMessage() == "statpost to 127.0.0.1 failed: HTTP 401"
    assert "seqno" not in caplog.text


def test_a_failing_report_skips_the_post(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> StatReport:
        raise RuntimeError("no report today")

    async def scenario() -> tuple[StatPostRunner, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        poster = StatPoster("http://127.0.0.1:9/u", 600, "1", started)
        runner = StatPostRunner(poster, broken, clock=loop.time)
        runner.start()
        timers = asyncio.create_task(fire_deadlines(runner))
        while poster.next_deadline() == started:  # the first post was due at once
            await asyncio.sleep(0.01)
        runner.key_changed()
        timers.cancel()
        await runner.aclose()
        return runner, started

    runner, started = asyncio.run(scenario())
    assert runner.sent == runner.failures == 0
    assert runner.core.seqno == 0
    # The post was skipped, not retried in a loop: the next attempt is an interval away.
    assert runner.core.next_deadline() >= started + 600
    assert "building the status report failed" in caplog.text
