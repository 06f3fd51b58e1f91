"""The AMI subset Allmon3 and Supermon need, served on loopback (`[ami]`, off by default).

One asyncio TCP server; each connection gets the banner, logs in with the `[ami]` user, and
sends requests that each get exactly one response, in order, in one write. No event is ever
sent unasked (both dashboards log in with `Events: 0/off` and frame on the blank line).
What each action and command answers is research/allmon3-ami.md §1-§5; the formats are in
`ami_rpt`, the framing in `ami_protocol`. The data comes from the controller at the moment of
the request; link commands (`rpt cmd ... ilink`, `rpt fun`) run through the controller's
`CommandRunner`, as DTMF commands do.

Asterisk's manners kept: header names and action names are case-insensitive, RptStatus's
`Command` is not; a bad login is answered late and the socket closed; a socket that has not
logged in within `[ami] login_timeout` (30 s) is closed; anything but Login/Logoff before login
is "Permission denied"; an unknown action or CLI command gets Asterisk's own error text.

Beyond Asterisk, against guessing (`ami_guard`): the delay before a bad login's answer doubles
with each failure from the same source, and `[ami] lockout_after` failures lock the source out
for `lockout_seconds` (its connections are closed on accept). With `[ami] read_only = true` the
user can read everything the dashboards poll but `rpt cmd` and `rpt fun` answer "Permission
denied", as Asterisk answers a manager user without the `command` write class.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from node import __version__
from node.config.functions import parse_function
from node.config.values import Invalid
from node.control import ami_protocol as p
from node.control import ami_rpt as rpt
from node.control.ami_guard import LoginGuard, source_of
from node.controller import Controller
from node.errors import CommandError
from node.events import Snapshot
from node.iax2.constants import CODEC_NAMES, Format
from node.links.commands import Command

if TYPE_CHECKING:
    from node.secrets import SecretStore

__all__ = ["BAD_LOGIN_DELAY", "MAX_LOGIN_DELAY", "AmiServer"]

log = logging.getLogger(__name__)

#: Asterisk sleeps this long before answering a failed login (and then closes); here it is the
#: first failure's delay, doubled at each further failure from the same source.
BAD_LOGIN_DELAY = 1.0
#: The longest wait before a failed login's answer.
MAX_LOGIN_DELAY = 8.0
#: Actions allowed before login (Asterisk also lets Challenge through, which we lack).
_OPEN_ACTIONS = ("login", "logoff", "challenge")
_READ_SIZE = 4096


class Cli(Enum):
    """What a CLI handler returned (Asterisk's CLI_SUCCESS / CLI_SHOWUSAGE / CLI_FAILURE)."""

    SUCCESS = "success"
    SHOWUSAGE = "showusage"
    FAILURE = "failure"


_Handler = Callable[[list[str]], Awaitable[tuple[Cli, str]]]


@dataclass(frozen=True, slots=True)
class _Entry:
    words: tuple[str, ...]
    usage: str
    handler: _Handler
    #: It changes the node (links, DTMF functions): refused to a read-only user.
    writes: bool = False


# app_rpt's rpt cmd function names (rpt_functions.c function_table), with their minimum
# argument counts; ilink, status, cop, macro, playback and localplay are carried out here.
_RPT_FUNCTIONS = {
    "cop": 1,
    "autopatchup": 0,
    "autopatchdn": 0,
    "ilink": 1,
    "status": 1,
    "remote": 1,
    "macro": 2,
    "playback": 1,
    "localplay": 1,
    "meter": 1,
    "userout": 1,
    "cmd": 0,
    "auth": 0,
}
# ilink numbers (app_rpt function_ilink): kind, permanent variant.
_ILINK: dict[int, tuple[str, bool]] = {
    1: ("disconnect", False),
    2: ("monitor", False),
    3: ("connect", False),
    5: ("status", False),
    6: ("disconnect_all", False),
    7: ("last_keyed", False),
    8: ("local_monitor", False),
    11: ("disconnect", True),
    12: ("monitor", True),
    13: ("connect", True),
    15: ("full_status", False),
    16: ("restore", False),
    18: ("local_monitor", True),
}
_LEADING_INT = re.compile(r"\s*([+-]?\d+)")


def _myatoi(text: str) -> int:
    """app_rpt's myatoi: the leading integer (sscanf %d), -1 when there is none."""
    m = _LEADING_INT.match(text)
    return int(m.group(1)) if m else -1


def _uptime_words(seconds: int) -> str:
    """Asterisk's print_uptimestr: "1 hour, 23 minutes, 45 seconds " (its trailing blank and
    its strict `>` comparisons included)."""
    parts = []
    for name, size in (
        ("year", 365 * 86400),
        ("week", 7 * 86400),
        ("day", 86400),
        ("hour", 3600),
        ("minute", 60),
    ):
        if seconds > size:
            n, seconds = divmod(seconds, size)
            parts.append(f"{n} {name}{'' if n == 1 else 's'}{',' if seconds else ''} ")
    if seconds > 0 or not parts:
        parts.append(f"{seconds} second{'' if seconds == 1 else 's'} ")
    return "".join(parts)


def _transmitting(ptt: bool, links_keyed: bool, calls_keyed: bool) -> tuple[bool, bool]:
    """(RPT_RXKEYED, RPT_TXKEYED): the local source is the operator's push-to-talk or a call's
    talker; the transmitter carries it and anything a link brings in."""
    rx = ptt or calls_keyed
    return rx, rx or links_keyed


class _Session:
    """One connection's state."""

    __slots__ = ("authenticated", "peer", "source")

    def __init__(self, peer: str) -> None:
        self.peer = peer
        #: What failed logins are counted under (`ami_guard.source_of`).
        self.source = source_of(peer)
        self.authenticated = False


class AmiServer:
    """The AMI listener of one controller. `start()` binds (OSError when it cannot)."""

    def __init__(
        self,
        controller: Controller,
        secrets: SecretStore,
        *,
        nodes: Sequence[Controller] = (),
        auth_timeout: float | None = None,
        bad_login_delay: float = BAD_LOGIN_DELAY,
        lockout_seconds: float | None = None,
    ) -> None:
        """`auth_timeout` and `lockout_seconds` replace `[ami] login_timeout` and
        `lockout_seconds` (tests use fractions of a second). `nodes` are every node the process
        hosts (the first is `controller`): `rpt` actions name the node they act on, as
        Asterisk's do."""
        self._controller = controller
        self._nodes: tuple[Controller, ...] = tuple(nodes) or (controller,)
        self._config = config = controller.config.ami
        self._secrets = secrets
        self._auth_timeout = config.login_timeout if auth_timeout is None else auth_timeout
        self._guard = LoginGuard(
            base_delay=bad_login_delay,
            max_delay=max(bad_login_delay, MAX_LOGIN_DELAY),
            lockout_after=config.lockout_after,
            lockout_seconds=config.lockout_seconds if lockout_seconds is None else lockout_seconds,
        )
        self._started = controller.now()
        self._server: asyncio.Server | None = None
        #: Open connections: their tasks and writers.
        self._sessions: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._stats_task: asyncio.Task[None] | None = None
        self._tx = rpt.TxStats(datetime.date.today())
        self._refused_at = 0.0
        self._cli: list[_Entry] = [
            _Entry(("core", "show", "uptime"), _USAGE_UPTIME, self._core_show_uptime),
            _Entry(("core", "show", "version"), _USAGE_VERSION, self._core_show_version),
            _Entry(("rpt", "stats"), _USAGE_STATS, self._node_text(rpt.stats_text)),
            _Entry(("rpt", "lstats"), _USAGE_LSTATS, self._node_text(rpt.lstats_text)),
            _Entry(("rpt", "nodes"), _USAGE_NODES, self._node_text(rpt.nodes_text)),
            _Entry(("rpt", "xnode"), _USAGE_XNODE, self._node_text(rpt.xnode_text)),
            _Entry(("rpt", "localnodes"), _USAGE_LOCALNODES, self._rpt_localnodes),
            _Entry(
                ("rpt", "show", "variables"),
                _USAGE_VARIABLES,
                self._node_text(rpt.show_variables_text, argc=4),
            ),
            _Entry(("rpt", "fun"), _USAGE_FUN, self._rpt_fun, writes=True),
            _Entry(("rpt", "cmd"), _USAGE_CMD, self._rpt_cmd, writes=True),
            _Entry(("rpt", "playback"), _USAGE_PLAYBACK, self._rpt_playback, writes=True),
            _Entry(("rpt", "localplay"), _USAGE_LOCALPLAY, self._rpt_localplay, writes=True),
            _Entry(("iax2", "show", "registry"), _USAGE_REGISTRY, self._iax2_show_registry),
            _Entry(("iax2", "show", "channels"), _USAGE_CHANNELS, self._iax2_show_channels),
        ]

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        bind = self._config.bind
        self._server = await asyncio.start_server(
            self._connection, bind.host, bind.port, reuse_address=True
        )
        self._stats_task = asyncio.get_running_loop().create_task(self._watch_tx())
        log.info("AMI listening on %s (TCP)", self.address)

    @property
    def address(self) -> str:
        """Where it listens, `host:port` (the real port when `bind` asked for port 0)."""
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every connection (a request being answered is finished)."""
        if self._server is not None:
            self._server.close()
        sessions = dict(self._sessions)
        for writer in sessions.values():
            # The session reads EOF and ends by itself: asyncio's stream server logs an error
            # for a connection task that is cancelled instead.
            writer.close()
        if sessions:
            _, late = await asyncio.wait(sessions, timeout=2.0)
            for task in late:
                task.cancel()
        if self._stats_task is not None:
            self._stats_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stats_task
        if self._server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)

    async def _watch_tx(self) -> None:
        """Keyups and TX time need every edge of the transmitter: follow the snapshots."""
        while True:
            sub = self._controller.bus.subscribe()
            while (event := await sub.get()) is not None:
                if isinstance(event, Snapshot):
                    status = event.status
                    _, tx = _transmitting(
                        bool(status.get("tx", {}).get("keyed")),
                        any(link.get("keyed") for link in status.get("links", ())),
                        any(call.get("keyed") for call in status.get("calls", ())),
                    )
                    self._tx.observe(tx, self._controller.now(), datetime.date.today())
            if not sub.overflowed:
                return  # the bus closed: the node is stopping
            log.warning("AMI statistics fell behind the event bus; resubscribed")

    # --- connections --------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._sessions) >= self._config.max_connections:
            now = time.monotonic()
            if now - self._refused_at > 10:
                self._refused_at = now
                log.warning(
                    "AMI: refusing a connection: %d connections already (ami.max_connections)",
                    len(self._sessions),
                )
            writer.close()
            return
        peer = writer.get_extra_info("peername")
        session = _Session(peer[0] if peer else "?")
        if self._guard.locked(session.source, asyncio.get_running_loop().time()):
            # Logged once, when the lockout began.
            writer.close()
            return
        self._sessions[task] = writer
        try:
            await self._serve(session, reader, writer)
        except (ConnectionError, OSError):
            pass
        finally:
            self._sessions.pop(task, None)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _serve(
        self, session: _Session, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        loop = asyncio.get_running_loop()
        writer.write(p.BANNER)
        await writer.drain()
        parser = p.RequestParser()
        auth_deadline = loop.time() + self._auth_timeout
        while True:
            timeout = None if session.authenticated else auth_deadline - loop.time()
            if timeout is not None and timeout <= 0:
                log.info("AMI: %s did not log in within %.0f s", session.peer, self._auth_timeout)
                return
            try:
                data = await asyncio.wait_for(reader.read(_READ_SIZE), timeout)
            except asyncio.TimeoutError:
                continue  # checked above
            if not data:
                return
            for request in parser.feed(data):
                try:
                    reply, close = await self._handle(session, request)
                except Exception:
                    # Allmon3 waits for an answer for ever: a failure must still answer.
                    log.exception("AMI: request from %s failed", session.peer)
                    reply, close = p.error(request.action_id, "Internal error"), True
                writer.write(reply)
                await writer.drain()
                if close:
                    return

    # --- actions ------------------------------------------------------------------------------

    async def _handle(self, session: _Session, req: p.Request) -> tuple[bytes, bool]:
        """The response to one request, and whether to close the connection after it."""
        aid = req.action_id
        if req.problem is not None:
            return p.error(aid, req.problem), False
        action = req.action
        if not action:
            return p.error(aid, "Missing action in request"), False
        name = action.lower()
        if not session.authenticated and name not in _OPEN_ACTIONS:
            return p.error(aid, "Permission denied"), False
        if name == "login":
            return await self._login(session, req)
        if name == "logoff":
            return p.response("Goodbye", aid, ["Message: Thanks for all the fish."]), True
        if name == "ping":
            return p.response(
                "Success", aid, ["Ping: Pong", f"Timestamp: {time.time():.6f}"]
            ), False
        if name == "rptstatus":
            return self._rpt_status(req), False
        if name == "rptlocalnodes":
            return self._rpt_local_nodes(), False
        if name == "command":
            command = req.header("Command")
            if not command:
                return p.error(aid, "No command provided"), False
            if self._config.read_only and self._writes(command):
                return p.error(aid, "Permission denied"), False
            ok, text = await self.command(command)
            return p.command_output(ok, aid, text), False
        return p.error(
            aid,
            f"Invalid/unknown command: {action}. Use Action: ListCommands to show available "
            "commands.",
        ), False

    async def _login(self, session: _Session, req: p.Request) -> tuple[bytes, bool]:
        aid = req.action_id
        if session.authenticated:
            return p.response("Success", aid, ["Message: Already authenticated"]), False
        user, secret = req.header("Username") or "", req.header("Secret") or ""
        now = asyncio.get_running_loop().time()
        # A locked-out source is refused without a look at the password, so logins already in
        # flight on parallel connections cannot go on guessing.
        if not self._guard.locked(session.source, now) and self._secrets.ami_login(user, secret):
            self._guard.succeeded(session.source)
            session.authenticated = True
            log.info("AMI: login from %s%s", session.peer, " (read-only)" * self._config.read_only)
            return p.response("Success", aid, ["Message: Authentication accepted"]), False
        delay, locked = self._guard.failed(session.source, now)
        # Neither the name nor the password is logged: either may be a mistyped secret.
        if locked:
            log.warning(
                "AMI: %s locked out for %.0f s after %d failed logins (ami.lockout_after)",
                session.source,
                self._guard.lockout_seconds,
                self._guard.lockout_after,
            )
        else:
            log.warning("AMI: failed login from %s", session.peer)
        await asyncio.sleep(delay)
        return p.error(aid, "Authentication failed"), True

    def _writes(self, text: str) -> bool:
        """Whether the CLI command `text` changes the node (refused to a read-only user)."""
        args = p.parse_cli_args(text)
        entry = self._find(args) if args else None
        return entry is not None and entry.writes

    def _rpt_status(self, req: p.Request) -> bytes:
        aid = req.action_id
        command = req.header("Command") or ""
        if not command:
            return p.error(aid, "RptStatus missing command")
        if command not in ("RptStat", "NodeStat", "XStat", "SawStat"):
            return p.error(aid, "RptStatus unknown command")
        if command == "RptStat":
            return p.response(
                "Success", aid, rpt.rptstat_lines(self._local_nodes(), self._uptime())
            )
        view = self.view(req.header("Node") or "")
        if view is None:
            return p.error(aid, "RptStatus unknown or missing node")
        lines = {
            "XStat": rpt.xstat_lines,
            "SawStat": rpt.sawstat_lines,
            "NodeStat": rpt.nodestat_lines,
        }[command](view)
        return p.response("Success", aid, lines)

    def _rpt_local_nodes(self) -> bytes:
        # app_rpt's quirk: no Response line at all.
        body = ['<?xml version="1.0"?>', "<nodes>"]
        body += [f"  <node>{n}</node>" for n in self._local_nodes()]
        body.append("</nodes>")
        return ("\r\n".join(body) + "\r\n\r\n").encode("latin-1")

    # --- the node, as app_rpt would report it -------------------------------------------------

    def _local_nodes(self) -> list[str]:
        return [c.node_id for c in self._nodes if c.node_id is not None]

    def _node(self, number: str) -> Controller | None:
        """The hosted node `number` (exact match), or None."""
        return next((c for c in self._nodes if number and c.node_id == number), None)

    def _uptime(self) -> int:
        return int(self._controller.now() - self._started)

    def view(self, node: str) -> rpt.NodeView | None:
        """The local node `node` now; None when no hosted node has that number (exact match)."""
        ctl = self._node(node)
        if ctl is None:
            return None
        now = ctl.now()

        def secs(at: float | None) -> int | None:
            return None if at is None else int(now - at)

        rows = tuple(
            rpt.LinkRow(
                name=link.node,
                peer=link.addr[0] if link.addr else "(none)",
                reconnects=link.reconnects,
                outbound=link.outbound,
                connected_ms=0
                if link.connected_at is None
                else int((now - link.connected_at) * 1000),
                established=link.up,
                mode=link.mode,
                keyed=link.keyed,
                since_key=secs(link.keyed_at),
                since_unkey=secs(link.unkeyed_at),
            )
            for link in ctl.link_views()
        )
        ptt = ctl.ptt_keyed
        rx, tx = _transmitting(ptt, any(r.keyed for r in rows), ctl.plain_calls_keyed())
        commands = ctl.command_stats()
        dtmf_off = not ctl.config.dtmf.enabled
        keyups_today, keyups_total, tx_today, tx_total = self._tx.report(now, datetime.date.today())
        return rpt.NodeView(
            node=node,
            links=rows,
            network=ctl.network_entries(),
            rx_keyed=rx,
            tx_keyed=tx,
            flags=rpt.Flags(
                parrot=ctl.bridge_mode == "parrot",
                link_functions_disabled=dtmf_off,
                user_functions_disabled=dtmf_off,
                incoming_disabled=not ctl.listening,
                tot_state=1 if ptt else 2,
            ),
            stats=rpt.Stats(
                timeouts=ctl.tx_timeouts,
                keyups_today=keyups_today,
                keyups_total=keyups_total,
                commands_today=commands.today,
                commands_total=commands.total,
                last_command=commands.last,
                tx_ms_today=tx_today,
                tx_ms_total=tx_total,
            ),
            uptime_s=int(now - self._started),
        )

    # --- the CLI (Action: Command) ------------------------------------------------------------

    async def command(self, text: str) -> tuple[bool, str]:
        """Run one CLI command as Asterisk's ast_cli_command does: (success, output text)."""
        args = p.parse_cli_args(text)
        if not args:
            return True, ""
        entry = self._find(args)
        if entry is None:
            return False, (
                f"No such command '{text}' (type 'core show help {self._best(args)}' for other "
                "possible commands)\n"
            )
        try:
            result, out = await entry.handler(args)
        except CommandError as exc:
            result, out = Cli.FAILURE, f"{exc}\n"
        if result is Cli.SHOWUSAGE:
            return False, out + entry.usage
        if result is Cli.FAILURE:
            return False, out + f"Command '{text}' failed.\n"
        return True, out

    def _find(self, args: list[str]) -> _Entry | None:
        """The longest command whose words begin `args` (case-insensitive)."""
        low = [a.lower() for a in args]
        found = [e for e in self._cli if tuple(low[: len(e.words)]) == e.words]
        return max(found, key=lambda e: len(e.words)) if found else None

    def _best(self, args: list[str]) -> str:
        """Asterisk's find_best: the words up to the first that no command can continue. (Any
        single word passes there, because Asterisk has a one-word command, `!`.)"""
        low = [a.lower() for a in args]
        taken: list[str] = []
        for i, word in enumerate(args):
            taken.append(word)
            if i > 0 and not self._near(low[: i + 1]):
                break
        return " ".join(taken)

    def _near(self, words: list[str]) -> bool:
        """Asterisk's find_cli(words, -1): some command equals `words`, or differs only in the
        last word of both."""
        for e in self._cli:
            if list(e.words) == words:
                return True
            if len(e.words) == len(words) and list(e.words[:-1]) == words[:-1]:
                return True
        return False

    def _node_text(self, render: Callable[[rpt.NodeView], str], argc: int = 3) -> _Handler:
        """`rpt <what> <node>`: app_rpt answers an unknown node with nothing (and success)."""

        async def handler(args: list[str]) -> tuple[Cli, str]:
            if len(args) != argc:
                return Cli.SHOWUSAGE, ""
            view = self.view(args[argc - 1])
            return Cli.SUCCESS, "" if view is None else render(view)

        return handler

    async def _core_show_uptime(self, args: list[str]) -> tuple[Cli, str]:
        seconds = len(args) == 4 and args[3].lower() == "seconds"
        if len(args) != 3 and not seconds:
            return Cli.SHOWUSAGE, ""
        up = self._uptime()
        # The node never reloads: its last reload is its start.
        if seconds:
            return Cli.SUCCESS, f"System uptime: {up}\nLast reload: {up}\n"
        words = _uptime_words(up)
        return Cli.SUCCESS, f"System uptime: {words}\nLast reload: {words}\n"

    async def _core_show_version(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) != 3:
            return Cli.SHOWUSAGE, ""
        return Cli.SUCCESS, (
            f"iax-node {__version__} (Asterisk Call Manager/{p.AMI_VERSION} subset for app_rpt "
            "dashboards)\n"
        )

    async def _rpt_localnodes(self, args: list[str]) -> tuple[Cli, str]:
        return Cli.SUCCESS, rpt.localnodes_text(self._local_nodes())

    async def _rpt_fun(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) != 4:
            return Cli.SHOWUSAGE, ""
        ctl = self._node(args[2])
        if ctl is None:
            return Cli.SUCCESS, ""
        # Behind the AMI login, so it runs whatever `[dtmf] enabled` says (that switch guards
        # digits from anyone on a call or a link).
        outcomes = await ctl.dtmf_command("ami", args[3], authorized=True)
        refused = [f"{cmd}: {result}" for cmd, result in outcomes if isinstance(result, Exception)]
        if refused:
            return Cli.FAILURE, "".join(line + "\n" for line in refused)
        return Cli.SUCCESS, ""

    async def _rpt_cmd(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) < 4:
            return Cli.SHOWUSAGE, ""
        ctl = self._node(args[2])
        if ctl is None:
            return Cli.SUCCESS, f"Unknown node number {args[2]}.\n"
        function = args[3].lower()
        if function not in _RPT_FUNCTIONS:
            return Cli.SUCCESS, f"Unknown action name {args[3]}.\n"
        if len(args) < 4 + _RPT_FUNCTIONS[function]:
            return Cli.SHOWUSAGE, ""
        if function in ("playback", "localplay"):
            return await self._play(args[2], args[4], function)
        if function in ("status", "cop", "macro"):
            return await self._function(ctl, function, args[4:])
        if function != "ilink":
            return Cli.FAILURE, f"rpt cmd {function} is not available here\n"
        number = _myatoi(args[4])
        target = args[5] if len(args) > 5 else ""
        if number == 4:
            # Command mode belongs to a digit source; a whole `rpt fun` string is one.
            return Cli.FAILURE, "ilink 4: use rpt fun with *4<node> and the digits to send\n"
        if number not in _ILINK:
            return Cli.FAILURE, f"ilink {args[4]} is not supported by this node\n"
        kind, permanent = _ILINK[number]
        node = None
        if kind in ("connect", "monitor", "local_monitor", "disconnect"):
            if not target.isdigit():
                return Cli.FAILURE, f"ilink {number} needs a node number\n"
            node = target
            if node == "0":
                # app_rpt: 0 is the last node operated on.
                node = ctl.last_node
                if node is None:
                    return Cli.FAILURE, "no last node yet (0 means the last node operated on)\n"
        await ctl.run_command(Command(kind, node=node, permanent=permanent))
        return Cli.SUCCESS, ""

    async def _function(self, ctl: Controller, function: str, params: list[str]) -> tuple[Cli, str]:
        """`rpt cmd <node> status|cop|macro ...`: the function run as a table entry would."""
        spec = f"{function},{params[0]}" if function != "macro" else "macro"
        try:
            fn = parse_function("", spec)
        except Invalid:
            return Cli.FAILURE, f"{function} {params[0]} is not available here\n"
        if fn.kind == "unavailable":
            return Cli.FAILURE, f"{spec} is not available here\n"
        arg = fn.arg if function != "macro" else params[-1]
        try:
            await ctl.run_command(Command(fn.kind, arg=arg, spec=spec))
        except CommandError as exc:
            return Cli.FAILURE, f"{spec}: {exc}\n"
        return Cli.SUCCESS, ""

    async def _play(self, node: str, file: str, how: str) -> tuple[Cli, str]:
        """app_rpt's playback (the node and its links hear it) and localplay (the local radio
        only), as POST /play of a file."""
        ctl = self._node(node)
        if ctl is None:
            return Cli.SUCCESS, ""
        to = "air_and_links" if how == "playback" else "local"
        try:
            ctl.play(file=file, to=to)
        except CommandError as exc:
            return Cli.FAILURE, f"rpt {how}: {exc}\n"
        return Cli.SUCCESS, ""

    async def _rpt_playback(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) != 4:
            return Cli.SHOWUSAGE, ""
        return await self._play(args[2], args[3], "playback")

    async def _rpt_localplay(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) != 4:
            return Cli.SHOWUSAGE, ""
        return await self._play(args[2], args[3], "localplay")

    async def _iax2_show_registry(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) != 3:
            return Cli.SHOWUSAGE, ""
        row = "{:<45.45}  {:<6.6}  {:<10.10}  {:<45.45} {:>8.8}  {}\n"
        out = [row.format("Host", "dnsmgr", "Username", "Perceived", "Refresh", "State")]
        cfg = self._controller.config.register
        # Only IAX2 registrations are listed (ASL3's HTTP registration is not chan_iax2's).
        if cfg is not None and cfg.peer is not None:
            reg = self._controller.registration_view()
            state = reg.state if reg is not None else "idle"
            apparent = reg.apparent_addr if reg is not None else None
            refresh = (reg.granted_refresh if reg is not None else None) or cfg.refresh
            dns = "N" if _is_ip(cfg.peer.host) else "Y"
            perceived = f"{apparent[0]}:{apparent[1]}" if apparent else "<Unregistered>"
            shown = {
                "registered": "Registered",
                "refreshing": "Registered",
                "registering": "Request Sent",
            }.get(state, "Unregistered")
            out.append(row.format(str(cfg.peer), dns, cfg.node_id, perceived, str(refresh), shown))
        out.append(f"{len(out) - 1} IAX2 registrations.\n")
        return Cli.SUCCESS, "".join(out)

    async def _iax2_show_channels(self, args: list[str]) -> tuple[Cli, str]:
        if len(args) != 3:
            return Cli.SHOWUSAGE, ""
        ctl = self._controller
        row = (
            "{:<20.20}  {:<15.15}  {:<10.10}  {:<11.11}  {:<11.11}  {:<7.7}  {:<6.6}  {:<6.6}  {}\n"
        )
        out = [
            row.format(
                "Channel",
                "Peer",
                "Username",
                "ID (Lo/Rem)",
                "Seq (Tx/Rx)",
                "Lag",
                "Jitter",
                "JitBuf",
                "Format",
            )
        ]
        legs: dict[str, Any] = ctl.counters().get("legs", {})
        channels = ctl.channels()
        for ch in channels:
            user, callno = ch.name, ch.callno
            leg = legs.get(str(callno), {})
            out.append(
                row.format(
                    f"IAX2/{user or ch.peer_addr[0]}-{callno}",
                    ch.peer_addr[0],
                    user,
                    f"{callno:05d}/{ch.peer_callno:05d}",
                    f"{ch.oseq:05d}/{ch.iseq:05d}",
                    f"{int(ch.rtt_s * 1000)}ms",
                    f"{max(0, leg.get('jitter_ms', 0))}ms",
                    f"{max(0, leg.get('delay_ms', 0))}ms",
                    _format_name(ch.format),
                )
            )
        n = len(channels)
        out.append(f"{n} active IAX channel{'' if n == 1 else 's'}\n")
        return Cli.SUCCESS, "".join(out)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _format_name(fmt: int | None) -> str:
    if fmt is None:
        return "(none)"
    return CODEC_NAMES.get(Format(fmt), f"0x{fmt:x}")


_USAGE_UPTIME = (
    "Usage: core show uptime [seconds]\n"
    "       Shows Asterisk uptime information.\n"
    "       The seconds word returns the uptime in seconds only.\n"
)
_USAGE_VERSION = "Usage: core show version\n       Shows Asterisk version information.\n"
_USAGE_STATS = "Usage: rpt stats <nodename>\n\tDumps node statistics to console\n"
_USAGE_LSTATS = "Usage: rpt lstats <nodename>\n\tDumps link statistics to console\n"
_USAGE_NODES = (
    "Usage: rpt nodes <nodename>\n"
    "\tDumps a list of directly and indirectly connected nodes to the console\n"
)
_USAGE_XNODE = "Usage: rpt xnode <nodename>\n\tDumps extended node info to the console\n"
_USAGE_LOCALNODES = (
    "Usage: rpt localnodes\n\tDumps a list of the locally configured node numbers to the console.\n"
)
_USAGE_VARIABLES = (
    "Usage: rpt show variables <nodename>\n"
    "\tDisplay all the Asterisk channel variables for a node.\n"
)
_USAGE_FUN = "Usage: rpt fun <nodename> <command>\n\tSend a DTMF function to a node\n"
_USAGE_PLAYBACK = (
    "Usage: rpt playback <nodename> <sound_file_base_name>\n"
    "\tSend an Audio File to a node, send to all other connected nodes (global)\n"
)
_USAGE_LOCALPLAY = (
    "Usage: rpt localplay <nodename> <sound_file_base_name>\n"
    "\tSend an Audio File to a node, do not send to other connected nodes (local)\n"
)
_USAGE_CMD = (
    "Usage: rpt cmd <nodename> <cmd-name> <cmd-index> <cmd-args>\n"
    "\tSend a command to a node.\n"
    "\ti.e. rpt cmd 2000 ilink 3 2001\n"
    "\t     rpt cmd 2000 localplay rpt/goodafternoon\n"
    "\t     rpt cmd 2000 status 12\n"
)
_USAGE_REGISTRY = (
    "Usage: iax2 show registry\n       Displays the states of all IAX registrations.\n"
)
_USAGE_CHANNELS = "Usage: iax2 show channels\n       Lists all currently active IAX channels.\n"
