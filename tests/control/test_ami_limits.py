"""AMI against guessing and for least privilege, over real TCP on loopback: a growing delay
and a lockout per source, and the read-only user (docs/ami.md "Limits")."""

from __future__ import annotations

import asyncio
import logging

import pytest

from node.control.ami import AmiServer
from node.control.ami_guard import LoginGuard, source_of
from node.controller import Controller
from tests.control.test_ami_server import LOGIN, PASSWORD, Raw, connect, run

BAD_LOGIN = b"Action: Login\r\nUsername: admin\r\nSecret: guess-%d\r\nActionID: g\r\n\r\n"
REFUSED = b"Response: Error\r\nActionID: g\r\nMessage: Authentication failed\r\n\r\n"
DENIED = b"Response: Error\r\nActionID: w\r\nMessage: Permission denied\r\n\r\n"


# --- the guard alone (its clock is ours) ------------------------------------------------------


def test_the_delay_doubles_per_failure_up_to_the_cap_then_locks_out() -> None:
    guard = LoginGuard(base_delay=1.0, max_delay=8.0, lockout_after=5, lockout_seconds=300)
    answers = [guard.failed("10.0.0.1", now=float(i)) for i in range(5)]
    assert answers == [(1.0, False), (2.0, False), (4.0, False), (8.0, False), (8.0, True)]
    assert guard.locked("10.0.0.1", now=10.0)
    assert not guard.locked("10.0.0.2", now=10.0)  # per source
    assert not guard.locked("10.0.0.1", now=4.0 + 300)  # served its time
    assert guard.failed("10.0.0.1", now=305.0) == (1.0, False)  # and starts afresh


def test_a_success_or_a_quiet_spell_forgets_the_failures() -> None:
    guard = LoginGuard(base_delay=1.0, max_delay=8.0, lockout_after=3, lockout_seconds=60)
    guard.failed("a", 0.0)
    guard.failed("a", 1.0)
    guard.succeeded("a")
    assert guard.failed("a", 2.0) == (1.0, False)
    assert guard.failed("a", 2.0 + 61) == (1.0, False)


def test_remembered_sources_are_bounded() -> None:
    guard = LoginGuard(
        base_delay=1.0, max_delay=8.0, lockout_after=1, lockout_seconds=60, max_sources=3
    )
    for n in range(10):
        guard.failed(f"10.0.0.{n}", 0.0)
    assert [guard.locked(f"10.0.0.{n}", 1.0) for n in range(10)] == [False] * 7 + [True] * 3


@pytest.mark.parametrize(
    ("peer", "source"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8::1", "2001:db8::/64"),
        ("2001:db8::ffff:1", "2001:db8::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("fe80::1%eth0", "fe80::/64"),
        ("?", "?"),
    ],
)
def test_sources_are_addresses_or_ipv6_slash_64(peer: str, source: str) -> None:
    assert source_of(peer) == source


# --- over TCP ---------------------------------------------------------------------------------


def test_repeated_failures_lock_the_source_out_even_with_the_right_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        for n in range(3):
            c = await Raw.open(server.port)
            assert await c.ask(BAD_LOGIN % n) == REFUSED
            assert await c.closed()
        # Locked out: a new connection is closed at once, without the banner.
        reader, _writer = await connect(server.port)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        # Served its time, the right password works again.
        await asyncio.sleep(0.6)
        await Raw.open(server.port, login=True)

    with caplog.at_level(logging.WARNING, logger="node.control.ami"):
        run(scenario, bad_login_delay=0.01, lockout_after=3, lockout_seconds=0.5)
    lockouts = [r for r in caplog.records if "locked out" in r.getMessage()]
    assert len(lockouts) == 1  # logged once
    assert all(
        PASSWORD not in r.getMessage() and "guess" not in r.getMessage() for r in caplog.records
    )


def test_a_login_in_flight_when_the_lockout_begins_is_refused() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        # Parallel connections opened before the lockout gain nothing from it.
        clients = [await Raw.open(server.port) for _ in range(3)]
        for n, c in enumerate(clients[:2]):
            assert await c.ask(BAD_LOGIN % n) == REFUSED
        reply = await clients[2].ask(LOGIN + b"ActionID: g\r\n\r\n")
        assert reply == REFUSED
        assert await clients[2].closed()

    run(scenario, bad_login_delay=0.01, lockout_after=2, lockout_seconds=60)


def test_a_client_that_never_logs_in_is_closed() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port)
        c.writer.write(b"Action: Ping\r\n")  # half a request, then nothing
        assert await c.closed()

    run(scenario, auth_timeout=0.2)


def test_an_oversized_action_is_refused_and_the_session_goes_on() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        lines = b"".join(b"X-Filler-%d: %s\r\n" % (n, b"a" * 900) for n in range(200))
        reply = await c.ask(b"Action: Ping\r\nActionID: big\r\n" + lines + b"\r\n")
        assert reply.startswith(b"Response: Error\r\n")
        assert b"Too many lines" in reply
        assert (await c.ask(b"Action: Ping\r\n\r\n")).startswith(b"Response: Success\r\n")

    run(scenario)


def test_the_read_only_user_reads_but_may_not_command() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        for command in (
            b"rpt cmd 2000 ilink 3 2001",
            b"RPT  Fun 2000 *32001",
            b"rpt cmd 2000 playback rpt/goodafternoon",
        ):
            reply = await c.ask(b"Action: Command\r\nActionID: w\r\nCommand: %s\r\n\r\n" % command)
            assert reply == DENIED, command
        # What the dashboards poll still answers.
        reply = await c.ask(b"Action: RptStatus\r\nCommand: XStat\r\nNode: 2000\r\n\r\n")
        assert reply.startswith(b"Response: Success\r\n")
        reply = await c.ask(b"Action: Command\r\nCommand: rpt lstats 2000\r\n\r\n")
        assert reply.startswith(b"Response: Success\r\n")

    run(scenario, read_only=True)


def test_a_full_user_may_still_command() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        reply = await c.ask(
            b"Action: Command\r\nActionID: w\r\nCommand: rpt cmd 2000 ilink 5\r\n\r\n"
        )
        assert b"Permission denied" not in reply

    run(scenario)
