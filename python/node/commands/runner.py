"""Where DTMF digits become link commands, and where link commands from DTMF and AMI run.

The router hands every received digit here (`digit`): a call's or a link's IAX2 DTMF frames,
the `D` texts addressed to us, and the digits the engine decodes in audio. Each source gets its
own `CommandMapper` (created at `*`, dropped when its sequence ends), and its inter-digit
time-out is a deadline of the runner's (`next_deadline`, `timer`: one of the router's timer
kinds). Every digit is published as a `dtmf` event; the event that completes a sequence carries
the command. Commands run only with `[dtmf] enabled = true`; otherwise digits are still
published, without commands. A command that completes runs as `Spawn` work the router awaits
(a link command may look a node up); every input returns the `Effects` of what it did.

`execute` runs a `Command` through the links service (what POST /link uses), so AMI
`rpt cmd ... ilink`, AMI `rpt fun` and DTMF all behave the same.

Remote command mode (`*4<node>`, app_rpt's ilink 4) belongs to the source that typed it: its
later digits go to `<node>` as `D` texts until it types `#`, stays silent for
`REMOTE_IDLE_TIMEOUTS` inter-digit time-outs, or `<node>` leaves the network; the other sources'
digits are not affected (app_rpt has one command node for the whole node). Digits that arrived
over a link never enter it, so two nodes cannot bounce digits between them. In a whole string
(`run_digits`), the string's end leaves it.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Protocol

from node.context import NodeContext
from node.effects import NOTHING, Effects, Spawn
from node.errors import CommandError
from node.events import Dtmf
from node.links.commands import END_CHAR, Command, CommandMapper, LastNode
from node.links.network import LinkMode, LinkNetwork
from node.links.resolve import parse_extnodes
from node.machine import DeadlineTable

__all__ = ["CommandRunner", "LinkCommands", "Outcome", "StatusAnnouncer"]

log = logging.getLogger(__name__)

#: What running one command gave: the text to show, or the refusal.
Outcome = tuple[Command, str | CommandError]

#: A digit that arrives both ways from one source within this many seconds counts once.
ECHO_WINDOW_S = 0.5
#: Remote command mode ends after this many inter-digit time-outs without a digit (30 s at the
#: default 3 s), so a forgotten `#` does not send an operator's next commands to another node.
REMOTE_IDLE_TIMEOUTS = 10


class _Echoes:
    """A phone may send a digit as an IAX2 DTMF frame and leave its tones in the audio too;
    the in-band detector then hears the same key press. The second of the two arrivals (either
    order: frames come at once, tones after the jitter buffer and 40 ms of detection) is an echo.
    Repeated digits from one path are never merged."""

    def __init__(self) -> None:
        #: (source, inband) -> (digit, when) of the last arrival not matched yet.
        self._last: dict[tuple[str, bool], tuple[str, float]] = {}

    def is_echo(self, source: str, digit: str, inband: bool, now: float) -> bool:
        other = self._last.get((source, not inband))
        if other is not None and other[0] == digit and now - other[1] <= ECHO_WINDOW_S:
            del self._last[(source, not inband)]
            return True
        if len(self._last) > 256:
            # Sources of ended calls: nothing older than the window matters.
            self._last = {k: v for k, v in self._last.items() if now - v[1] <= ECHO_WINDOW_S}
        self._last[(source, inband)] = (digit, now)
        return False


class LinkCommands(Protocol):
    """What commands do to links (the links service)."""

    network: LinkNetwork

    async def link(
        self, action: str, node: str, addr: str | None = None, *, permanent: bool = False
    ) -> Effects: ...

    def send_remote_digit(self, node: str, digit: str) -> Effects: ...


class StatusAnnouncer(Protocol):
    """What commands say aloud (the announcements service)."""

    telemetry_mode: str

    def status(self, entries: list[str]) -> None: ...

    def last_keyed(self, node: str | None) -> None: ...

    def status_message(
        self, number: int, *, last_user: str | None, entries: list[str], speak: bool = True
    ) -> str: ...

    def set_telemetry(self, mode: str) -> None: ...

    def command_ran(self) -> None: ...

    def flush(self) -> int: ...


#: Link kinds that `cop,12` (link commands disabled) refuses.
_LINK_KINDS = frozenset(
    {"connect", "monitor", "local_monitor", "disconnect", "disconnect_all", "restore", "remote"}
)


class CommandRunner:
    """The node's DTMF sources, and the executor of link commands."""

    def __init__(self, ctx: NodeContext, links: LinkCommands, announce: StatusAnnouncer) -> None:
        self._ctx = ctx
        self._links = links
        self._announce = announce
        self._bus = ctx.bus
        self._clock = ctx.clock
        self._timeout = ctx.config.dtmf.inter_digit_timeout_ms / 1000
        #: The last node any command named (app_rpt `lastlinknode`), for `<node>` = 0.
        self.last = LastNode()
        self._mappers: dict[str, CommandMapper] = {}
        #: ("digits", source): a source's inter-digit time-out; ("remote", source): its remote
        #: command mode's idle time-out.
        self._deadlines: DeadlineTable[tuple[str, str]] = DeadlineTable()
        #: The call each source's digits came on (what its time-out's event shows).
        self._call_of: dict[str, int | None] = {}
        self._echoes = _Echoes()
        #: Sources in remote command mode, and the node their digits go to.
        self._remote: dict[str, str] = {}
        self._file_nodes: tuple[tuple[Path, int, int], frozenset[str]] | None = None
        #: Commands executed since start, today (local date) and the last one, for AMI stats.
        self.executed_total = 0
        self._executed_day: tuple[datetime.date, int] = (datetime.date.today(), 0)
        self.last_executed: str | None = None
        #: app_rpt cop 11/12: whether link commands run.
        self.links_enabled = True
        #: Who typed the last command (app_rpt's DTMF user, `status,5`).
        self.last_user: str | None = None
        #: cop 7/8 switch the TX time-out (the transmit service's).
        self.tot_switch: Callable[[bool], None] | None = None
        #: cop 15/16 switch the scheduler.
        self.scheduler_switch: Callable[[bool], None] | None = None

    def start(self) -> Effects:
        """After start: `[rpt] startup_macro` runs once (the operator's own digits, so whatever
        `[dtmf] enabled` says)."""
        if self._ctx.config.rpt.startup_macro:
            return Effects(events=(Spawn(self._startup(), "the startup macro"),))
        return NOTHING

    async def _startup(self) -> Effects:
        try:
            result, fx = await self.run_macro("0", "startup macro")
        except CommandError as exc:
            log.warning("startup macro refused: %s", exc)
            return NOTHING
        log.info("startup macro: %s", result)
        return fx

    @property
    def enabled(self) -> bool:
        """`[dtmf] enabled`: whether digits from calls and links run commands."""
        return self._ctx.config.dtmf.enabled

    def executed_today(self, today: datetime.date | None = None) -> int:
        day, count = self._executed_day
        return count if day == (today or datetime.date.today()) else 0

    # --- digits from calls and links ----------------------------------------------------------

    def digit(self, source: str, call: int | None, digit: str, *, inband: bool = False) -> Effects:
        """One digit from `source` (e.g. "call 5", "local"); `call` is the call id the event
        shows; `inband` when it was decoded from tones in the audio (one key press that also
        came as an IAX2 DTMF frame counts once)."""
        bus = self._bus
        if self._echoes.is_echo(source, digit, inband, self._clock()):
            log.debug("DTMF %s from %s came as a frame and as tones; counted once", digit, source)
            return NOTHING
        if not self.enabled:
            bus.publish(Dtmf(call=call, digit=digit))
            return NOTHING
        node = self._remote.get(source)
        if node is not None:
            return self._remote_digit(source, call, node, digit)
        mapper = self._mappers.get(source)
        if mapper is None:
            mapper = self._mappers[source] = self._mapper()
        command = mapper.feed(digit, self._clock())
        self._settle(source, call, mapper)
        bus.publish(Dtmf(call=call, digit=digit, command=None if command is None else str(command)))
        if command is not None:
            return self._completed(source, call, command)
        return NOTHING

    def _completed(self, source: str, call: int | None, command: Command) -> Effects:
        self.last_user = self._user_of(source, call)
        if command.kind != "remote":
            return self._launch(source, command, speak=not self._from_link(source, call))
        # At once, not in a task: the very next digit must already go to the remote node.
        assert command.node is not None
        try:
            self._check_remote(source, call, command.node)
        except CommandError as exc:
            log.warning("DTMF %s from %s refused: %s", command, source, exc)
            return NOTHING
        self._remote[source] = command.node
        self._arm_remote(source, call)
        self._count(command)
        log.info("DTMF %s from %s: digits go to node %s until #", command, source, command.node)
        return NOTHING

    def _from_link(self, source: str, call: int | None) -> bool:
        """Digits that came over a link (frames on a link call, `D` texts): another node's
        user typed them, so what they ask is not said on this node's radio (app_rpt 1065)."""
        return source.startswith("remote ") or (
            call is not None and self._links.network.is_link_call(call)
        )

    def _user_of(self, source: str, call: int | None) -> str:
        link = self._links.network.link_for_call(call) if call is not None else None
        if link is not None:
            return link.node
        if source.startswith("remote "):
            return source.split(" ", 1)[1]
        return source

    def _check_remote(self, source: str, call: int | None, node: str) -> None:
        if not self.links_enabled:
            raise CommandError("link commands are disabled (cop,11 enables them)", 409)
        net = self._links.network
        if source.startswith("remote ") or (call is not None and net.is_link_call(call)):
            # app_rpt allows command mode only from its own radio and phone users.
            raise CommandError("remote command mode is not available to digits from a link", 403)
        if node == self._ctx.config.node_id:
            raise CommandError("remote command mode to this node itself", 400)
        if not net.reachable(node):
            raise CommandError(f"node {node} is not in the network", 404)

    def _remote_digit(self, source: str, call: int | None, node: str, digit: str) -> Effects:
        bus = self._bus
        if digit.upper() == END_CHAR:
            self._leave_remote(source)
            ended = Command("remote_end", END_CHAR, node=node)
            bus.publish(Dtmf(call=call, digit=digit, command=str(ended)))
            log.info("DTMF from %s: remote command mode to node %s ended", source, node)
            return NOTHING
        bus.publish(Dtmf(call=call, digit=digit))
        try:
            fx = self._links.send_remote_digit(node, digit)
        except CommandError as exc:
            self._leave_remote(source)
            log.warning("DTMF from %s: remote command mode to node %s ended: %s", source, node, exc)
            return NOTHING
        self._arm_remote(source, call)
        return fx

    def _arm_remote(self, source: str, call: int | None) -> None:
        self._call_of[source] = call
        at = self._clock() + self._timeout * REMOTE_IDLE_TIMEOUTS
        self._deadlines.set(("remote", source), at)

    def _remote_idle(self, source: str) -> None:
        node = self._remote.pop(source, None)
        if node is not None:
            ended = Command("remote_end", node=node)
            call = self._call_of.get(source)
            self._bus.publish(Dtmf(call=call, digit="", command=str(ended)))
            log.info("DTMF from %s: remote command mode to node %s timed out", source, node)

    def _leave_remote(self, source: str) -> None:
        self._remote.pop(source, None)
        self._deadlines.cancel(("remote", source))

    def forget(self, source: str) -> None:
        """`source` is gone (its call ended): drop its sequence and its remote command mode."""
        self._leave_remote(source)
        self._mappers.pop(source, None)
        self._deadlines.cancel(("digits", source))
        self._call_of.pop(source, None)

    # --- time ---------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """The earliest inter-digit or remote-idle time-out of any source."""
        return self._deadlines.earliest()

    def timer(self, now: float) -> Effects:
        """Every time-out that is due: a sequence the time-out completes or ends, a remote
        command mode left idle."""
        fx = NOTHING
        for key in self._deadlines.due(now):
            self._deadlines.cancel(key)
            kind, source = key
            if kind == "remote":
                self._remote_idle(source)
            else:
                fx = fx | self._timed_out(source, now)
        return fx

    def remote_node(self, source: str) -> str | None:
        """The node `source`'s digits go to, in remote command mode."""
        return self._remote.get(source)

    def _mapper(self) -> CommandMapper:
        config = self._ctx.config
        return CommandMapper(
            self._timeout,
            nodes=self._known,
            last=self.last,
            table=config.function_table,
            macros=config.macro,
            echolink=config.echolink is not None,
        )

    def _settle(self, source: str, call: int | None, mapper: CommandMapper) -> None:
        """Re-arm the source's time-out, or forget the source once its sequence is over."""
        deadline = mapper.next_deadline()
        if deadline is None:
            self._deadlines.cancel(("digits", source))
            if not mapper.collecting:
                self._mappers.pop(source, None)
            return
        self._call_of[source] = call
        self._deadlines.set(("digits", source), deadline)

    def _timed_out(self, source: str, now: float) -> Effects:
        mapper = self._mappers.get(source)
        if mapper is None:
            return NOTHING
        call = self._call_of.get(source)
        command = mapper.timer(now)
        self._settle(source, call, mapper)
        if command is None:
            return NOTHING
        # No digit completed it: the event carries the command with an empty digit.
        self._bus.publish(Dtmf(call=call, digit="", command=str(command)))
        return self._completed(source, call, command)

    def _launch(self, source: str, command: Command, *, speak: bool = True) -> Effects:
        work = self._run_logged(source, command, speak)
        return Effects(events=(Spawn(work, f"DTMF {command} from {source}"),))

    async def _run_logged(self, source: str, command: Command, speak: bool) -> Effects:
        try:
            result, fx = await self.execute(command, speak=speak)
        except CommandError as exc:
            log.warning("DTMF %s from %s refused: %s", command, source, exc)
            return NOTHING
        log.info("DTMF %s from %s: %s", command, source, result)
        return fx

    # --- whole strings (AMI rpt fun, POST /dtmf) ---------------------------------

    async def run_digits(
        self, source: str, digits: str, *, execute: bool
    ) -> tuple[list[Outcome], Effects]:
        """Map a whole digit string (its end acts as `#`); run the commands when `execute`, in
        order as they complete.

        Every digit is published as a `dtmf` event with `call` null (with the command it
        completes only when commands run). Returns each completed command with its result (or
        refusal), and the effects of all of them; commands not executed have the result "not
        executed". After `*4<node>` the rest of the string, up to a `#`, goes to `<node>`.
        """
        mapper = self._mapper()
        now = self._clock()
        bus = self._bus
        outcomes: list[Outcome] = []
        fx = NOTHING
        remote: str | None = None
        for digit in digits:
            if remote is not None:
                if digit.upper() == END_CHAR:
                    ended = Command("remote_end", END_CHAR, node=remote)
                    bus.publish(Dtmf(call=None, digit=digit, command=str(ended)))
                    outcomes.append((ended, f"remote command mode to node {remote} ended"))
                    remote = None
                    continue
                bus.publish(Dtmf(call=None, digit=digit))
                try:
                    fx = fx | self._links.send_remote_digit(remote, digit)
                except CommandError as exc:
                    outcomes.append((Command("remote", node=remote), exc))
                    remote = None
                continue
            command = mapper.feed(digit, now)
            shown = None if command is None or not execute else str(command)
            bus.publish(Dtmf(call=None, digit=digit, command=shown))
            if command is None:
                continue
            if command.kind == "remote" and execute:
                assert command.node is not None
                try:
                    self._check_remote(source, None, command.node)
                except CommandError as exc:
                    outcomes.append((command, exc))
                    continue
                remote = command.node
                self._count(command)
                outcomes.append((command, f"digits go to node {remote}"))
                continue
            outcome, done = await self._outcome(source, command, execute)
            outcomes.append(outcome)
            fx = fx | done
        if (command := mapper.end()) is not None:
            bus.publish(Dtmf(call=None, digit="", command=str(command) if execute else None))
            outcome, done = await self._outcome(source, command, execute)
            outcomes.append(outcome)
            fx = fx | done
        return outcomes, fx

    async def _outcome(
        self, source: str, command: Command, execute: bool
    ) -> tuple[Outcome, Effects]:
        if not execute:
            return (command, "not executed"), NOTHING
        try:
            result, fx = await self.execute(command)
        except CommandError as exc:
            log.warning("%s from %s refused: %s", command, source, exc)
            return (command, exc), NOTHING
        return (command, result), fx

    # --- execution ----------------------------------------------------------------------------

    async def execute(self, command: Command, *, speak: bool = True) -> tuple[str, Effects]:
        """Run one command; returns what happened and its effects, raises CommandError when
        refused. With `speak` false (a command from another node) nothing is said aloud here."""
        links, net = self._links, self._links.network
        kind, node = command.kind, command.node
        if kind == "unknown":
            raise CommandError(command.reason or "no such command", 400)
        if kind == "unavailable":
            raise CommandError(command.reason or "not available here", 400)
        if kind in _LINK_KINDS and not self.links_enabled:
            raise CommandError("link commands are disabled (cop,11 enables them)", 409)
        fx = NOTHING
        if kind in ("announce", "cop", "macro"):
            result, fx = await self._function(command, speak)
            self._count(command)
            self._announce.command_ran()
            return result, fx
        if kind in ("connect", "monitor", "local_monitor", "disconnect"):
            assert node is not None
            # The node operated on, whatever comes of it (app_rpt lastlinknode).
            self.last.node = node
            if kind == "disconnect":
                link = net.links.get(node)
                if link is not None and link.permanent and not command.permanent:
                    # app_rpt: a permanent link is dropped only by the permanent variant.
                    raise CommandError(
                        f"node {node} is a permanent link: drop it with ilink 11 or POST /link",
                        409,
                    )
            fx = await links.link(kind, node, permanent=command.permanent)
            done = {
                "connect": "linking",
                "monitor": "monitoring",
                "local_monitor": "monitoring locally",
                "disconnect": "disconnected",
            }
            result = f"{done[kind]} node {node}"
        elif kind == "disconnect_all":
            # app_rpt's ilink 6: permanent links go too.
            dropped = list(net.links)
            fx = await links.link("disconnect_all", "")
            result = f"disconnected {', '.join(dropped)}" if dropped else "no links"
        elif kind == "restore":
            result, fx = await self._restore()
        elif kind in ("status", "full_status"):
            # app_rpt's ilink 5 says our own links, ilink 15 the whole network behind them.
            if kind == "status":
                entries = net.list_entries()
            else:
                entries = [str(e) for e in net.network_entries()]
            result = f"links: {', '.join(entries)}" if entries else "no links"
            if speak:
                self._announce.status(entries)
        elif kind == "last_keyed":
            last = net.last_keyed_node
            result = f"last keyed by node {last}" if last is not None else "no node has keyed"
            if speak:
                self._announce.last_keyed(last)
        elif kind == "remote":
            raise CommandError(
                "remote command mode needs a DTMF source (*4 typed on a call, "
                "the radio, or in an AMI rpt fun string)",
                400,
            )
        else:
            raise CommandError(f"unknown command kind {kind!r}", 400)
        self._count(command)
        self._announce.command_ran()
        return result, fx

    async def _function(self, command: Command, speak: bool) -> tuple[str, Effects]:
        """app_rpt's status, cop and macro functions."""
        arg = command.arg or ""
        net = self._links.network
        if command.kind == "announce":
            number = int(arg)
            if number == 14:
                entries = [str(e) for e in net.network_entries()]
            else:
                entries = net.list_entries()
            said = self._announce.status_message(
                number, last_user=self.last_user, entries=entries, speak=speak
            )
            return f"status {number}: {said}", NOTHING
        if command.kind == "macro":
            return await self.run_macro(arg)
        return self._cop(int(arg)), NOTHING

    def _cop(self, number: int) -> str:
        rpt = self._ctx.config.rpt
        if number in (33, 34, 35):
            if not rpt.telemdynamic:
                raise CommandError("[rpt] telemdynamic is off: the telemetry mode is fixed", 403)
            mode = {33: "on", 34: "off", 35: "timed"}[number]
            self._announce.set_telemetry(mode)
            return f"telemetry {mode}"
        if number in (11, 12):
            self.links_enabled = number == 11
            return f"link commands {'enabled' if self.links_enabled else 'disabled'}"
        if number in (7, 8):
            if self.tot_switch is not None:
                self.tot_switch(number == 7)
            return f"TX time-out {'enabled' if number == 7 else 'disabled'}"
        if number in (15, 16):
            if self.scheduler_switch is not None:
                self.scheduler_switch(number == 15)
            return f"scheduler {'enabled' if number == 15 else 'disabled'}"
        if number == 24:
            return f"flushed {self._announce.flush()} waiting announcements"
        raise CommandError(f"cop {number} is not available here", 400)

    async def run_macro(self, number: str, source: str | None = None) -> tuple[str, Effects]:
        """Run macro `number` (`0`: `[rpt] startup_macro`) as digits from a source of its own;
        what its commands did, and their effects."""
        config = self._ctx.config
        digits = config.rpt.startup_macro if number == "0" else config.macro.get(number)
        if not digits:
            raise CommandError(f"macro {number} not found", 404)
        where = source or f"macro {number}"
        log.info("%s runs %s", where, digits)
        outcomes, fx = await self.run_digits(where, digits, execute=True)
        parts = [f"{cmd.digits or cmd}: {res}" for cmd, res in outcomes]
        return f"macro {number}: " + ("; ".join(parts) if parts else "nothing ran"), fx

    async def _restore(self) -> tuple[str, Effects]:
        """`*74` (app_rpt's ilink 16): redial the links the last disconnect-all dropped, each
        in its mode and permanence; the list is kept, as app_rpt keeps it."""
        saved = self._links.network.saved
        if not saved:
            return "nothing to restore", NOTHING
        done: list[str] = []
        refused: list[str] = []
        fx = NOTHING
        for link in saved:
            action = {
                LinkMode.TRANSCEIVE: "connect",
                LinkMode.MONITOR: "monitor",
                LinkMode.LOCAL_MONITOR: "local_monitor",
            }[link.mode]
            try:
                fx = fx | await self._links.link(action, link.node, permanent=link.permanent)
            except CommandError as exc:
                refused.append(f"{link.node} ({exc})")
            else:
                done.append(link.node)
        result = f"restoring {', '.join(done)}" if done else "restored none"
        return (f"{result}; refused {', '.join(refused)}" if refused else result), fx

    def _count(self, command: Command) -> None:
        self.executed_total += 1
        today = datetime.date.today()
        day, count = self._executed_day
        self._executed_day = (today, count + 1 if day == today else 1)
        self.last_executed = command.digits or str(command)

    # --- node lookup for unambiguous node numbers ---------------------------------------------

    def _known(self, kind: str) -> Collection[str]:
        net = self._links.network
        if kind == "disconnect":
            return frozenset(net.links)
        if kind == "remote":
            return net.tree()
        known = {node for node, cfg in self._ctx.config.links.items() if cfg.addr is not None}
        return known | self._nodes_in_file()

    def _nodes_in_file(self) -> frozenset[str]:
        path = self._ctx.config.nodes_file
        if path is None:
            return frozenset()
        try:
            st = path.stat()
        except OSError:
            return frozenset()
        key = (path, st.st_mtime_ns, st.st_size)
        if self._file_nodes is None or self._file_nodes[0] != key:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                return frozenset()
            self._file_nodes = (key, frozenset(parse_extnodes(text)))
        return self._file_nodes[1]

    def close(self) -> None:
        self._deadlines.clear()
        self._call_of.clear()
        self._remote.clear()
        self._mappers.clear()
