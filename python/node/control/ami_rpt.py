"""app_rpt's status output, byte for byte, from a plain picture of the node (`NodeView`).

What Allmon3 and Supermon parse (research/allmon3-ami.md §3, read against app_rpt's
rpt_manager.c and rpt_cli.c): the `RptStatus` blocks (XStat, SawStat, RptStat, NodeStat) as
lines for an AMI response, and the `rpt ...` CLI texts (lstats, nodes, xnode, stats, localnodes,
show variables) with their `\\n` line ends, which AMI turns into `Output:` lines. The printf
widths are app_rpt's: they pad and never truncate, so trailing blanks are part of the format.

`TxStats` keeps the transmitter counters app_rpt reports (keyups, TX time, today and since
start). No I/O and no clock: times come in as arguments.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "Flags",
    "LinkRow",
    "NodeView",
    "Stats",
    "TxStats",
    "localnodes_text",
    "lstats_text",
    "nodes_text",
    "nodestat_lines",
    "rptstat_lines",
    "sawstat_lines",
    "show_variables_text",
    "sort_tokens",
    "stats_text",
    "variables",
    "xnode_text",
    "xstat_lines",
]


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One direct link as app_rpt's link list holds it."""

    name: str
    #: The peer's IP without port (IAXPEER(CURRENTCHANNEL)), "(none)" while it has no call.
    peer: str
    reconnects: int
    outbound: bool
    #: Milliseconds since the link came up; 0 while not connected.
    connected_ms: int
    established: bool
    #: T (transceive), R (monitor) or C (connecting), as `L` lists write it.
    mode: str
    #: Its receiver is keyed now (app_rpt lastrx1).
    keyed: bool = False
    #: Whole seconds since its receiver last keyed / unkeyed; None when never (SawStat's -1).
    since_key: int | None = None
    since_unkey: int | None = None


@dataclass(frozen=True, slots=True)
class Flags:
    """app_rpt's system-state switches, in app_rpt's sense (True = the thing is disabled)."""

    parrot: bool = False
    tx_disabled: bool = False
    tot_disabled: bool = False
    link_functions_disabled: bool = False
    autopatch_disabled: bool = True
    scheduler_disabled: bool = True
    user_functions_disabled: bool = False
    alternate_tail: bool = False
    incoming_disabled: bool = False
    #: 0 timed out, 1 armed (keyed), 2 reset.
    tot_state: int = 2
    #: 0 queued in tail, 1 queued for cleanup, 2 clean.
    ider_state: int = 2
    #: 0 dialing, 1 connecting, 2 up, 3 failed, 4 down.
    patch_state: int = 4
    #: 1 on, 0 off, 2 by link, 3 not dynamic.
    tel_mode: int = 1


@dataclass(frozen=True, slots=True)
class Stats:
    """The counters of `rpt stats` and NodeStat."""

    timeouts: int = 0
    kerchunks_today: int = 0
    kerchunks_total: int = 0
    keyups_today: int = 0
    keyups_total: int = 0
    commands_today: int = 0
    commands_total: int = 0
    last_command: str | None = None
    tx_ms_today: int = 0
    tx_ms_total: int = 0


@dataclass(frozen=True, slots=True)
class NodeView:
    """What the AMI reports of one local node, taken at one instant."""

    node: str
    #: Direct links, in link-container order.
    links: tuple[LinkRow, ...] = ()
    #: The RPT_LINK list (`T2001`, `R2002`, ...): every direct link (not local-monitor ones)
    #: followed by the nodes behind it, unsorted (app_rpt __mklinklist).
    network: tuple[str, ...] = ()
    #: The local receiver (RPT_RXKEYED) and the transmitter (RPT_TXKEYED).
    rx_keyed: bool = False
    tx_keyed: bool = False
    flags: Flags = field(default_factory=Flags)
    stats: Stats = field(default_factory=Stats)
    uptime_s: int = 0
    #: Whether an iaxrpt/phone pseudo-link (a name starting with 0) is connected.
    reverse_patch_up: bool = False

    @property
    def shown_links(self) -> tuple[LinkRow, ...]:
        """The links app_rpt lists: names starting with 0 are phone pseudo-links."""
        return tuple(link for link in self.links if not link.name.startswith("0"))


# --- helpers ------------------------------------------------------------------------------------


def _hms(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _hms_ms(ms: int) -> str:
    """app_rpt's `%02d:%02d:%02d:%02d` of milliseconds (the last field is not padded to 3)."""
    return f"{_hms(ms // 1000)}:{ms % 1000:02d}"


def sort_tokens(tokens: Iterable[str]) -> list[str]:
    """app_rpt's mycompar: strcmp on the node name, a leading mode letter skipped."""

    def key(token: str) -> str:
        return token[1:] if token and not token[0].isdigit() else token

    return sorted(tokens, key=key)


def _linked(view: NodeView, sep: str) -> str:
    tokens = sort_tokens(view.network)
    return sep.join(tokens) if tokens else "<NONE>"


def _conn(link: LinkRow, ms: bool) -> str:
    """The shared columns of XStat, xnode and lstats (state column left to the caller)."""
    elapsed = _hms_ms(link.connected_ms) if ms else _hms(link.connected_ms // 1000)
    direction = "OUT" if link.outbound else "IN"
    return f"{link.name:<10}{link.peer:<20}{link.reconnects:<12d}{direction:<11}{elapsed:<20}"


def _state(link: LinkRow) -> str:
    return "ESTABLISHED" if link.established else "CONNECTING"


def _strverscmp_key(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def variables(view: NodeView) -> list[tuple[str, str]]:
    """The node's channel variables, most recently set first (as Asterisk lists them after a
    link change). With no links app_rpt leaves RPT_ALINKS empty and RPT_LINKS "0" (its
    rpt_update_links reuses one buffer)."""
    direct = view.shown_links
    alinks = ",".join(f"{link.name}{link.mode}{'K' if link.keyed else 'U'}" for link in direct)
    network = view.network
    return [
        ("RPT_NUMLINKS", str(len(network))),
        ("RPT_LINKS", f"{len(network)},{','.join(network)}" if network else "0"),
        ("RPT_NUMALINKS", str(len(direct))),
        ("RPT_ALINKS", f"{len(direct)},{alinks}" if direct else ""),
        ("RPT_RXKEYED", "1" if view.rx_keyed else "0"),
        ("RPT_TXKEYED", "1" if view.tx_keyed else "0"),
        ("RPT_ETXKEYED", "0"),
        ("RPT_AUTOPATCHUP", "0"),
    ]


def _flag_values(view: NodeView, *, xnode: bool) -> list[tuple[str, str]]:
    """The 13 status flags. XStat writes the disable switches as 1 = disabled, xnode inverts
    them (1 = enabled); parrot, tail type and the states read the same in both."""
    f = view.flags

    def switch(disabled: bool) -> str:
        return "1" if disabled != xnode else "0"

    return [
        ("parrot_ena", "1" if f.parrot else "0"),
        ("sys_ena", switch(f.tx_disabled)),
        ("tot_ena", switch(f.tot_disabled)),
        ("link_ena", switch(f.link_functions_disabled)),
        ("patch_ena", switch(f.autopatch_disabled)),
        ("patch_state", str(f.patch_state)),
        ("sch_ena", switch(f.scheduler_disabled)),
        ("user_funs", switch(f.user_functions_disabled)),
        ("tail_type", "1" if f.alternate_tail else "0"),
        ("iconns", switch(f.incoming_disabled)),
        ("tot_state", str(f.tot_state)),
        ("ider_state", str(f.ider_state)),
        ("tel_mode", str(f.tel_mode)),
    ]


# --- RptStatus ----------------------------------------------------------------------------------


def xstat_lines(view: NodeView) -> list[str]:
    """The lines of `RptStatus` / `XStat` after `Response` and `ActionID`."""
    lines = [f"Node: {view.node}"]
    lines.extend(f"Conn: {_conn(link, False)}{_state(link):<20}" for link in view.shown_links)
    lines.append(f"LinkedNodes: {_linked(view, ', ')}")
    lines.extend(f"Var: {name}={value}" for name, value in variables(view))
    lines.extend(f"{name}: {value}" for name, value in _flag_values(view, xnode=False))
    return lines


def sawstat_lines(view: NodeView) -> list[str]:
    """`RptStatus` / `SawStat`: per link, keyed now and seconds since it last keyed/unkeyed."""

    def secs(value: int | None) -> int:
        return -1 if value is None else value

    lines = [f"Node: {view.node}"]
    lines.extend(
        f"Conn: {link.name} {int(link.keyed)} {secs(link.since_key)} {secs(link.since_unkey)}"
        for link in view.shown_links
    )
    return lines


def rptstat_lines(nodes: Iterable[str], uptime_s: int) -> list[str]:
    """`RptStatus` / `RptStat`: the local nodes and the uptime."""
    names = list(nodes)
    first = f"Nodes: {','.join(names)}" if names else "<NONE>"
    return [first, f"RptUptime: {_hms(uptime_s)}"]


def _yes(value: bool) -> str:
    return "YES" if value else "NO"


def _enabled(disabled: bool) -> str:
    return "DISABLED" if disabled else "ENABLED"


_TOT_STATES = {0: "TIMED OUT!", 1: "ARMED", 2: "RESET"}
_IDER_STATES = {0: "QUEUED IN TAIL", 1: "QUEUED FOR CLEANUP", 2: "CLEAN"}
_PATCH_STATES = {0: "DIALING", 1: "CONNECTING", 2: "UP", 3: "CALL FAILED", 4: "DOWN"}


def nodestat_lines(view: NodeView) -> list[str]:
    """`RptStatus` / `NodeStat` of a repeater (not remote-base) node."""
    f, s = view.flags, view.stats
    names = [link.name for link in view.links]
    return [
        "IsRemoteBase: NO",
        "NodeState: 0",
        f"SignalOnInput: {_yes(view.rx_keyed)}",
        f"TransmitterKeyed: {_yes(view.tx_keyed)}",
        f"Transmitter: {_enabled(f.tx_disabled)}",
        f"Parrot: {_enabled(not f.parrot)}",
        f"Scheduler: {_enabled(f.scheduler_disabled)}",
        f"TailLength: {'ALTERNATE' if f.alternate_tail else 'STANDARD'}",
        f"TimeOutTimer: {_enabled(f.tot_disabled)}",
        f"TimeOutTimerState: {_TOT_STATES[f.tot_state]}",
        f"TimeOutsSinceSystemInitialization: {s.timeouts}",
        f"IdentifierState: {_IDER_STATES[f.ider_state]}",
        f"KerchunksToday: {s.kerchunks_today}",
        f"KerchunksSinceSystemInitialization: {s.kerchunks_total}",
        f"KeyupsToday: {s.keyups_today}",
        f"KeyupsSinceSystemInitialization: {s.keyups_total}",
        f"DtmfCommandsToday: {s.commands_today}",
        f"DtmfCommandsSinceSystemInitialization: {s.commands_total}",
        f"LastDtmfCommandExecuted: {s.last_command or 'N/A'}",
        f"TxTimeToday: {_hms_ms(s.tx_ms_today)}",
        f"TxTimeSinceSystemInitialization: {_hms_ms(s.tx_ms_total)}",
        f"NodesCurrentlyConnectedToUs: {','.join(names) if names else '<NONE>'}",
        f"Autopatch: {_enabled(f.autopatch_disabled)}",
        f"AutopatchState: {_PATCH_STATES[f.patch_state]}",
        "AutopatchCalledNumber: N/A",
        f"ReversePatchIaxrptConnected: {'UP' if view.reverse_patch_up else 'DOWN'}",
        f"UserLinkingCommands: {_enabled(f.link_functions_disabled)}",
        f"UserFunctions: {_enabled(f.user_functions_disabled)}",
    ]


# --- CLI texts ----------------------------------------------------------------------------------


def lstats_text(view: NodeView) -> str:
    """`rpt lstats <node>`: links in natural node order, connect time with milliseconds."""
    out = [
        "NODE      PEER                RECONNECTS  DIRECTION  CONNECT TIME        CONNECT STATE\n",
        "----      ----                ----------  ---------  ------------        -------------\n",
    ]
    for link in sorted(view.shown_links, key=lambda row: _strverscmp_key(row.name)):
        out.append(f"{_conn(link, True)}{_state(link)}\n")
    return "".join(out)


def nodes_text(view: NodeView) -> str:
    """`rpt nodes <node>`: every node of the network, eight to a line."""
    out = ["\n", "************************* CONNECTED NODES *************************\n\n"]
    tokens = sort_tokens(view.network)
    if not tokens:
        out.append("<NONE>")
    for i, token in enumerate(tokens):
        out.append(token)
        if i % 8 == 7:
            out.append("\n")
        elif i + 1 < len(tokens):
            out.append(", ")
    out.append("\n\n")
    return "".join(out)


def xnode_text(view: NodeView) -> str:
    """`rpt xnode <node>` (Supermon's stats page): links, network, variables, flags (1 =
    enabled here)."""
    out = [f"{_conn(link, False)}{_state(link)}\n" for link in view.shown_links]
    out.append("\n\n")
    out.append(_linked(view, ", "))
    out.append("\n\n")
    out.extend(f"{name}={value}\n" for name, value in variables(view))
    out.append("\n")
    out.extend(f"{name}={value}\n" for name, value in _flag_values(view, xnode=True))
    out.append("\n")
    return "".join(out)


_LABEL_WIDTH = 49


def _stat(label: str, value: object) -> str:
    return f"{label:.<{_LABEL_WIDTH}}: {value}\n"


def stats_text(view: NodeView) -> str:
    """`rpt stats <node>`: app_rpt's statistics page."""
    f, s = view.flags, view.stats
    out = [
        f"************************ NODE {view.node} STATISTICS *************************\n\n",
        _stat("Selected system state", 0),
        _stat("Signal on input", _yes(view.rx_keyed)),
        _stat("System", _enabled(f.tx_disabled)),
        _stat("Parrot Mode", _enabled(not f.parrot)),
        _stat("Scheduler", _enabled(f.scheduler_disabled)),
        _stat("Tail Time", "ALTERNATE" if f.alternate_tail else "STANDARD"),
        _stat("Time out timer", _enabled(f.tot_disabled)),
        _stat("Incoming connections", _enabled(f.incoming_disabled)),
        _stat("Time out timer state", _TOT_STATES[f.tot_state]),
        _stat("Time outs since system initialization", s.timeouts),
        _stat("Identifier state", _IDER_STATES[f.ider_state]),
        _stat("Kerchunks today", s.kerchunks_today),
        _stat("Kerchunks since system initialization", s.kerchunks_total),
        _stat("Keyups today", s.keyups_today),
        _stat("Keyups since system initialization", s.keyups_total),
        _stat("DTMF commands today", s.commands_today),
        _stat("DTMF commands since system initialization", s.commands_total),
        _stat("Last DTMF command executed", s.last_command or "N/A"),
        _stat("TX time today", _hms_ms(s.tx_ms_today)),
        _stat("TX time since system initialization", _hms_ms(s.tx_ms_total)),
        _stat("Uptime", _hms(view.uptime_s)),
        f"{'Nodes currently connected to us':.<{_LABEL_WIDTH}}: ",
    ]
    # app_rpt's loop: four names to a line; its comma test counts the pseudo-links it skips.
    count = len(view.links)
    shown = 0
    for link in view.links:
        if link.name.startswith("0"):
            continue
        out.append(link.name)
        if shown % 4 == 3:
            out.append("\n")
            out.append(f"{'':<{_LABEL_WIDTH}}: ")
        elif (count - 1) - shown > 0:
            out.append(", ")
        shown += 1
    if not shown:
        out.append("<NONE>")
    out.append("\n")
    out += [
        _stat("Autopatch", _enabled(f.autopatch_disabled)),
        _stat("Autopatch state", _PATCH_STATES[f.patch_state]),
        _stat("Autopatch called number", "N/A"),
        _stat("Reverse patch/IAXRPT connected", "UP" if view.reverse_patch_up else "DOWN"),
        _stat("User linking commands", _enabled(f.link_functions_disabled)),
        _stat("User functions", _enabled(f.user_functions_disabled)) + "\n",
    ]
    return "".join(out)


def localnodes_text(nodes: Iterable[str]) -> str:
    """`rpt localnodes`."""
    return "".join([" " * 25 + "\nNode\n----\n", *(f"{n}\n" for n in nodes), "\n"])


def show_variables_text(view: NodeView) -> str:
    """`rpt show variables <node>`."""
    pairs = variables(view)
    lines = [f"Variable listing for node {view.node}:\n"]
    lines.extend(f"   {name}={value}\n" for name, value in pairs)
    lines.append(f"    -- {len(pairs)} variables\n")
    return "".join(lines)


# --- the transmitter's counters -----------------------------------------------------------------


class TxStats:
    """Keyups and TX time, today (local date) and since start, from the transmitter's keyed
    state as it changes (app_rpt counts a keyup per TX key and TX time while keyed)."""

    def __init__(self, today: datetime.date) -> None:
        self._day = today
        self._keyed_since: float | None = None
        self.keyups_total = 0
        self._keyups_today = 0
        self._ms_total = 0.0
        self._ms_today = 0.0

    def _roll(self, now: float, today: datetime.date) -> None:
        if today == self._day:
            return
        # The first look after midnight starts the new day (app_rpt zeroes at 00:00:00); TX
        # time of a key that spans midnight counts from here into the new day.
        if self._keyed_since is not None:
            self._close(now)
            self._keyed_since = now
        self._day = today
        self._keyups_today = 0
        self._ms_today = 0.0

    def _close(self, now: float) -> None:
        assert self._keyed_since is not None
        ms = max(0.0, now - self._keyed_since) * 1000
        self._ms_total += ms
        self._ms_today += ms

    def observe(self, keyed: bool, now: float, today: datetime.date) -> None:
        self._roll(now, today)
        if keyed and self._keyed_since is None:
            self._keyed_since = now
            self.keyups_total += 1
            self._keyups_today += 1
        elif not keyed and self._keyed_since is not None:
            self._close(now)
            self._keyed_since = None

    def report(self, now: float, today: datetime.date) -> tuple[int, int, int, int]:
        """(keyups today, keyups since start, TX ms today, TX ms since start)."""
        self._roll(now, today)
        running = 0.0 if self._keyed_since is None else (now - self._keyed_since) * 1000
        return (
            self._keyups_today,
            self.keyups_total,
            int(self._ms_today + running),
            int(self._ms_total + running),
        )
