"""The AMI server over real TCP on loopback, in process with a real controller: framing, login,
errors byte for byte, time-outs, limits. (tests/interop/test_ami_nodes.py runs it in `node
serve` with real links.)"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from node.config import (
    Address,
    AmiConfig,
    DnsConfig,
    NodeConfig,
    RegisterConfig,
    SecretsConfig,
)
from node.control.ami import AmiServer
from node.controller import Controller
from node.events import EventBus
from node.secrets import SecretStore
from tests.control.ami_clients import Allmon3, Supermon

PASSWORD = "ami-pass-7f3e-canary"
LOGIN = f"Action: Login\r\nUsername: admin\r\nSecret: {PASSWORD}\r\nEvents: off\r\n".encode()


@asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[tuple[AmiServer, Controller]]:
    # `[ami]` keys a test sets; the rest are AmiServer's own options.
    ami_keys = {
        k: options.pop(k) for k in ("max_connections", "read_only", "lockout_after") if k in options
    }
    config = NodeConfig(
        register=RegisterConfig(peer=Address("127.0.0.1", 9), node_id="2000"),
        # Nothing but loopback: no node-number lookups in DNS.
        dns=DnsConfig(enabled=False),
        secrets=SecretsConfig(source="control"),
        ami=AmiConfig(enabled=True, bind=Address("127.0.0.1", 0), **ami_keys),
    )
    secrets = SecretStore(config, {})
    secrets.set("ami:admin", PASSWORD)
    controller = Controller(config, EventBus(), secrets)
    server = AmiServer(controller, secrets, **options)
    await server.start()
    try:
        yield server, controller
    finally:
        await server.close()
        controller.close()


#: Every client a test opened, closed when the test ends.
_clients: list[asyncio.StreamWriter] = []


def run(scenario: Callable[..., Awaitable[None]], **options: Any) -> None:
    async def main() -> None:
        try:
            async with serving(**options) as (server, controller):
                await asyncio.wait_for(scenario(server, controller), 20)
        finally:
            for writer in _clients:
                writer.close()
                with contextlib.suppress(ConnectionError):
                    await writer.wait_closed()
            _clients.clear()

    asyncio.run(main())


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    _clients.append(writer)
    return reader, writer


class Raw:
    """A bare TCP client: what it sends and reads is exactly bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, *, login: bool = False) -> Raw:
        client = cls(*await connect(port))
        assert await client.reader.readline() == b"Asterisk Call Manager/9.0.0\r\n"
        if login:
            reply = await client.ask(LOGIN + b"\r\n")
            assert reply == b"Response: Success\r\nMessage: Authentication accepted\r\n\r\n"
        return client

    async def ask(self, data: bytes) -> bytes:
        self.writer.write(data)
        await self.writer.drain()
        return await self.block()

    async def block(self) -> bytes:
        return await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 5)

    async def closed(self) -> bool:
        """True when the server closed the socket (with nothing more to read)."""
        return await asyncio.wait_for(self.reader.read(), 5) == b""


# --- login ------------------------------------------------------------------------------------


def test_login_echoes_action_id_and_is_case_insensitive() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port)
        login = f"ACTION: LOGIN\r\nUSERNAME: ADMIN\r\nSECRET: {PASSWORD}\r\nactionid: s-1\r\n"
        reply = await c.ask(login.encode() + b"\r\n")
        assert (
            reply
            == b"Response: Success\r\nActionID: s-1\r\nMessage: Authentication accepted\r\n\r\n"
        )
        assert await c.ask(b"action: LOGIN\r\n\r\n") == (
            b"Response: Success\r\nMessage: Already authenticated\r\n\r\n"
        )
        reply = await c.ask(b"aCtIoN: pInG\r\nactionID: p\r\n\r\n")
        assert reply.startswith(b"Response: Success\r\nActionID: p\r\nPing: Pong\r\n")

    run(scenario)


def test_ping_answers_pong_with_a_timestamp() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        before = time.time()
        reply = await c.ask(b"Action: PING\r\nActionID: p\r\n\r\n")
        head, stamp = reply.split(b"Timestamp: ")
        assert head == b"Response: Success\r\nActionID: p\r\nPing: Pong\r\n"
        assert stamp.endswith(b"\r\n\r\n") and b"." in stamp
        assert float(stamp[:-4]) >= before - 1

    run(scenario)


def test_a_bad_login_is_answered_late_then_closed() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port)
        start = time.monotonic()
        reply = await c.ask(
            b"Action: Login\r\nUsername: admin\r\nSecret: wrong\r\nActionID: b\r\n\r\n"
        )
        assert time.monotonic() - start >= 0.3
        assert reply == b"Response: Error\r\nActionID: b\r\nMessage: Authentication failed\r\n\r\n"
        assert await c.closed()

    run(scenario, bad_login_delay=0.3)


def test_a_silent_unauthenticated_socket_is_dropped() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port)
        assert await c.closed()
        # A logged-in session is not subject to the login time-out.
        d = await Raw.open(server.port, login=True)
        await asyncio.sleep(0.4)
        assert await d.ask(b"Action: Ping\r\n\r\n")

    run(scenario, auth_timeout=0.2)


def test_only_login_and_logoff_before_login() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port)
        for action in (b"Ping", b"RptStatus", b"Command", b"Nonsense"):
            reply = await c.ask(b"Action: " + action + b"\r\nActionID: x\r\n\r\n")
            assert reply == b"Response: Error\r\nActionID: x\r\nMessage: Permission denied\r\n\r\n"
        assert await c.ask(b"Action: Logoff\r\n\r\n") == (
            b"Response: Goodbye\r\nMessage: Thanks for all the fish.\r\n\r\n"
        )
        assert await c.closed()

    run(scenario)


# --- errors byte for byte -------------------------------------------------------------------------


#: (request, reply) of a logged-in session, each an error app_rpt and Asterisk word this way.
ERRORS = {
    "unknown action": (
        b"Action: Originate\r\nActionID: 7\r\n\r\n",
        b"Response: Error\r\nActionID: 7\r\nMessage: Invalid/unknown command: Originate. "
        b"Use Action: ListCommands to show available commands.\r\n\r\n",
    ),
    "missing action": (
        b"ActionID: 8\r\n\r\n",
        b"Response: Error\r\nActionID: 8\r\nMessage: Missing action in request\r\n\r\n",
    ),
    "empty request": (b"\r\n", b"Response: Error\r\nMessage: Missing action in request\r\n\r\n"),
    "unknown cli command": (
        b"Action: Command\r\nCommand: foo bar\r\nActionID: c\r\n\r\n",
        b"Response: Error\r\nActionID: c\r\nMessage: Command output follows\r\n"
        b"Output: No such command 'foo bar' (type 'core show help foo bar' for other "
        b"possible commands)\r\n\r\n",
    ),
    "unknown rpt command": (
        b"Action: Command\r\nCommand: rpt frobnicate 2000\r\n\r\n",
        b"Response: Error\r\nMessage: Command output follows\r\n"
        b"Output: No such command 'rpt frobnicate 2000' (type 'core show help rpt "
        b"frobnicate 2000' for other possible commands)\r\n\r\n",
    ),
    "no command": (
        b"Action: Command\r\n\r\n",
        b"Response: Error\r\nMessage: No command provided\r\n\r\n",
    ),
    "usage": (
        b"Action: Command\r\nCommand: rpt stats\r\n\r\n",
        b"Response: Error\r\nMessage: Command output follows\r\n"
        b"Output: Usage: rpt stats <nodename>\r\n"
        b"Output: \tDumps node statistics to console\r\n\r\n",
    ),
}


@pytest.mark.parametrize(("request_", "reply"), ERRORS.values(), ids=ERRORS.keys())
def test_errors_byte_for_byte(request_: bytes, reply: bytes) -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        assert await c.ask(request_) == reply

    run(scenario)


def test_rptstatus_errors() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        cases = {
            b"": b"RptStatus missing command",
            b"Command: Bogus\r\n": b"RptStatus unknown command",
            # app_rpt compares the command case-sensitively.
            b"Command: xstat\r\nNode: 2000\r\n": b"RptStatus unknown command",
            b"Command: XStat\r\n": b"RptStatus unknown or missing node",
            b"Command: XStat\r\nNode: 2001\r\n": b"RptStatus unknown or missing node",
            b"Command: SawStat\r\nNode: 2000 \r\n": b"RptStatus unknown or missing node",
        }
        for headers, message in cases.items():
            reply = await c.ask(b"Action: RptStatus\r\n" + headers + b"ActionID: r\r\n\r\n")
            assert reply == b"Response: Error\r\nActionID: r\r\nMessage: " + message + b"\r\n\r\n"

    run(scenario)


def test_an_overlong_line_is_an_error_and_the_session_goes_on() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        reply = await c.ask(b"Action: Ping\r\nActionID: L\r\nJunk: " + b"x" * 5000 + b"\r\n\r\n")
        assert reply == (
            b"Response: Error\r\nActionID: L\r\nMessage: Failed to parse message: line too "
            b"long\r\n\r\n"
        )
        assert (await c.ask(b"Action: Ping\r\n\r\n")).startswith(b"Response: Success\r\nPing: Pong")

    run(scenario)


def test_pipelined_requests_are_answered_in_order_one_block_each() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        c.writer.write(
            b"Action: Ping\r\nActionID: 1\r\n\r\n"
            b"Action: Command\r\nCommand: core show uptime seconds\r\nActionID: 2\r\n\r\n"
            b"Action: RptStatus\r\nCommand: RptStat\r\nActionID: 3\r\n\r\n"
        )
        first, second, third = [await c.block() for _ in range(3)]
        assert first.startswith(b"Response: Success\r\nActionID: 1\r\nPing: Pong\r\n")
        lines = second.split(b"\r\n")
        assert lines[:3] == [
            b"Response: Success",
            b"ActionID: 2",
            b"Message: Command output follows",
        ]
        assert lines[3].startswith(b"Output: System uptime: ") and lines[3][23:].isdigit()
        assert lines[4].startswith(b"Output: Last reload: ")
        assert (
            third
            == b"Response: Success\r\nActionID: 3\r\nNodes: 2000\r\nRptUptime: 00:00:00\r\n\r\n"
        )

    run(scenario)


def test_connections_beyond_the_limit_are_closed_at_once() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        held = [await Raw.open(server.port) for _ in range(2)]
        reader, _writer = await connect(server.port)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        held[0].writer.close()
        await held[0].closed()
        await asyncio.sleep(0.05)
        again = await Raw.open(server.port)  # a slot is free again
        assert again is not None

    run(scenario, max_connections=2)


# --- content ------------------------------------------------------------------------------------


def test_xstat_of_an_idle_node_byte_for_byte() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        c = await Raw.open(server.port, login=True)
        reply = await c.ask(
            b"ACTION: RPTSTATUS\r\nCOMMAND: XStat\r\nNODE: 2000\r\nActionID: x\r\n\r\n"
        )
        assert reply == (
            b"Response: Success\r\nActionID: x\r\nNode: 2000\r\nLinkedNodes: <NONE>\r\n"
            b"Var: RPT_NUMLINKS=0\r\nVar: RPT_LINKS=0\r\nVar: RPT_NUMALINKS=0\r\n"
            b"Var: RPT_ALINKS=\r\nVar: RPT_RXKEYED=0\r\nVar: RPT_TXKEYED=0\r\n"
            b"Var: RPT_ETXKEYED=0\r\nVar: RPT_AUTOPATCHUP=0\r\n"
            b"parrot_ena: 0\r\nsys_ena: 0\r\ntot_ena: 0\r\nlink_ena: 1\r\npatch_ena: 1\r\n"
            b"patch_state: 4\r\nsch_ena: 1\r\nuser_funs: 1\r\ntail_type: 0\r\niconns: 0\r\n"
            b"tot_state: 2\r\nider_state: 2\r\ntel_mode: 1\r\n\r\n"
        )
        assert await c.ask(b"Action: RptStatus\r\nCommand: SawStat\r\nNode: 2000\r\n\r\n") == (
            b"Response: Success\r\nNode: 2000\r\n\r\n"
        )

    run(scenario)


def test_rpt_cmd_answers_as_app_rpt() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        assert await server.command("rpt cmd 2001 ilink 3 2002") == (
            True,
            "Unknown node number 2001.\n",
        )
        assert await server.command("rpt cmd 2000 frob 3") == (True, "Unknown action name frob.\n")
        ok, text = await server.command("rpt cmd 2000 ilink")
        assert not ok and text.startswith("Usage: rpt cmd <nodename>")
        assert await server.command("rpt cmd 2000 ilink 9 2002") == (
            False,
            "ilink 9 is not supported by this node\nCommand 'rpt cmd 2000 ilink 9 2002' failed.\n",
        )
        ok, text = await server.command("rpt cmd 2000 ilink 4 2002")
        assert not ok and text.startswith("ilink 4: use rpt fun with *4<node>")
        # ilink 16 with nothing dropped, 7 with nobody keyed, 15 with no links: all succeed.
        for number in (16, 7, 15):
            assert await server.command(f"rpt cmd 2000 ilink {number}") == (True, "")
        assert await server.command("rpt cmd 2000 ilink 3 0") == (
            False,
            "no last node yet (0 means the last node operated on)\n"
            "Command 'rpt cmd 2000 ilink 3 0' failed.\n",
        )
        ok, text = await server.command("rpt cmd 2000 ilink 1 2002")
        assert not ok and text.startswith("node 2002 is not linked\n")
        # 2002 is now the last node operated on.
        ok, text = await server.command("rpt cmd 2000 ilink 3 0")
        assert not ok and text.startswith("node 2002 not found")
        # ilink 8 (local monitor) is a link command like 2 and 3.
        ok, text = await server.command("rpt cmd 2000 ilink 8 2003")
        assert not ok and text.startswith("node 2003 not found")
        # An unknown node for a report command: nothing, and success (app_rpt's res2cli).
        assert await server.command("rpt stats 1999") == (True, "")
        assert await server.command("rpt fun 1999 *32001") == (True, "")
        assert (await server.command("RPT LOCALNODES"))[1] == " " * 25 + "\nNode\n----\n2000\n\n"

    run(scenario)


def test_iax2_listings_without_calls() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        ok, text = await server.command("iax2 show registry")
        lines = text.split("\n")
        assert ok and lines[0].split() == [
            "Host",
            "dnsmgr",
            "Username",
            "Perceived",
            "Refresh",
            "State",
        ]
        assert lines[1].split() == [
            "127.0.0.1:9",
            "N",
            "2000",
            "<Unregistered>",
            "60",
            "Unregistered",
        ]
        assert lines[2] == "1 IAX2 registrations."
        ok, text = await server.command("iax2 show channels")
        assert ok and text.endswith("\n0 active IAX channels\n")

    run(scenario)


def test_rpt_cmd_status_cop_macro_and_playback(tmp_path: Path) -> None:
    async def scenario(server: AmiServer, controller: Controller) -> None:
        # status and cop run as the function table's entries; GPS and phone PTT do not apply.
        assert await server.command("rpt cmd 2000 status 2") == (True, "")
        assert await server.command("rpt cmd 2000 cop 34") == (True, "")
        assert controller._announcements.telemetry_mode == "off"
        refused = {
            "rpt cmd 2000 status 4": "status,4 is not available here\n",
            "rpt cmd 2000 cop 6": "cop,6 is not available here\n",
            "rpt cmd 2000 macro x 7": "macro: macro 7 not found\n",
            # playback / localplay play files as POST /play does.
            f"rpt playback 2000 {tmp_path / 'none.ul'}": "rpt playback: no such file\n",
            f"rpt cmd 2000 localplay {tmp_path / 'x.mp3'}": "rpt localplay: file must be a .wav",
            "rpt localplay 2000": "Usage: rpt localplay <nodename>",
        }
        for cmd, prefix in refused.items():
            ok, text = await server.command(cmd)
            assert not ok and text.startswith(prefix), (cmd, text)
        assert await server.command("rpt playback 1999 /x.ul") == (True, "")

    run(scenario)


def test_rpt_fun_reports_what_it_refused() -> None:
    async def scenario(server: AmiServer, controller: Controller) -> None:
        sub = controller.bus.subscribe()
        # *8: nothing in ASL3's shipped table begins with 8 (*9 now begins *99, cop,6).
        ok, text = await server.command("rpt fun 2000 *8")
        assert not ok
        assert text == "*8 unknown: no such command\nCommand 'rpt fun 2000 *8' failed.\n"
        digits = []
        while not sub.queue.empty():
            event = sub.queue.get_nowait()
            if event is not None and event.name == "dtmf":
                digits.append(event.to_json())
        assert digits == [
            {"event": "dtmf", "call": None, "digit": "*"},
            {"event": "dtmf", "call": None, "digit": "8", "command": "*8 unknown"},
        ]

    run(scenario)


def test_uptime_in_words() -> None:
    from node.control.ami import _uptime_words

    assert _uptime_words(5025) == "1 hour, 23 minutes, 45 seconds "
    assert _uptime_words(3600) == "60 minutes "
    assert _uptime_words(61) == "1 minute, 1 second "
    assert _uptime_words(0) == "0 seconds "
    assert _uptime_words(90061) == "1 day, 1 hour, 1 minute, 1 second "


# --- the dashboards' own clients ----------------------------------------------------------------


def test_allmon3_and_supermon_log_in_and_poll_an_idle_node() -> None:
    async def scenario(server: AmiServer, _: Controller) -> None:
        allmon = Allmon3("127.0.0.1", server.port, "admin", PASSWORD)
        assert await allmon.connect()
        status = await allmon.poll("2000")
        assert status["CONNS"] == {} and status["UPTIME"] >= 0 and status["RELOADTIME"] >= 0
        assert status["TXKEYED"] is False and status["CONNKEYED"] is False
        assert (await allmon.command("core show version")).startswith("OK:\r\niax-node ")
        # The hint names the words up to the first no command of ours continues.
        assert await allmon.command("iax2 show peers") == (
            "ERR: No such command 'iax2 show peers' (type 'core show help iax2 show' for "
            "other possible commands)"
        )
        await allmon.logoff()
        assert not await Allmon3("127.0.0.1", server.port, "admin", "nope").connect()

        def supermon(ng: bool) -> None:
            sm = Supermon("127.0.0.1", server.port, ng=ng)
            try:
                assert sm.banner_ok() and sm.login("admin", PASSWORD)
                xstat = sm.xstat("2000")
                assert xstat["conns"] == {} and xstat["modes"] == {}
                assert xstat["vars"]["RPT_RXKEYED"] == "0" and xstat["vars"]["RPT_TXKEYED"] == "0"
                assert sm.sawstat("2000") == {}
                ok, lines = sm.command("rpt localnodes")
                assert ok and lines[1:3] == ["Node", "----"]
            finally:
                sm.close()

        await asyncio.to_thread(supermon, False)
        await asyncio.to_thread(supermon, True)

    run(scenario, bad_login_delay=0.05)
