"""rpt.conf node-stanza keys this node does not carry over: which of them change what the node
does (the report says why), and which change nothing (never reported).

A key changes nothing when its value is app_rpt's default (`nounkeyct = 0`, `beaconing = 0`),
when its feature is off (`lnkacttime` with `lnkactenable = 0`), when it serves a feature the
report names once elsewhere (the autopatch's `context`, EchoLink's `erxgain`, the voter's
`votertype`), or when the node does the same on its own (the polite ID's `politeid`). The
defaults are app_rpt's (apps/app_rpt/rpt_config.c, app_rpt.h in AllStarLink/app_rpt); keys it
does not know (HamVOIP's and app_rpt__ultra's own) are reported as they stand.
"""

from __future__ import annotations

from collections.abc import Callable

from node.asl3import.conf import Section
from node.asl3import.plan import Asl3Files, Plan, number, source, truthy

__all__ = ["HANDLED", "report_leftovers"]

Quiet = Callable[[str], bool]


def _off(value: str) -> bool:
    return not truthy(value)


def _is(default: float) -> Quiet:
    def quiet(value: str) -> bool:
        n = number(value)
        return n is None or n == default

    return quiet


def _empty(value: str) -> bool:
    return not value.strip()


_TOT_RESET = "TX time-out reset rules: the node's time-out resets when the conference is quiet"
_LINK_ACTIVITY = "the link activity timer: no equivalent"
_TELEMETRY_LEVEL = "telemetry levels relative to voice: the node's announcement levels are its own"
#: key: (why it is lost, the values that change nothing).
LOST: dict[str, tuple[str, Quiet | None]] = {
    "linktolink": ("link-to-link half duplex: the node mixes links with mix-minus", _off),
    "linkmongain": ("the link-monitor gain: no equivalent", _is(0)),
    "telemnomdb": (_TELEMETRY_LEVEL, _is(-3)),
    "telemduckdb": (_TELEMETRY_LEVEL, _is(-15)),
    "parrot": ('parrot mode: [bridge] mode = "parrot" is the node-wide equivalent', _off),
    "parrotmode": ('parrot mode: [bridge] mode = "parrot" is the node-wide equivalent', _off),
    "time_out_reset_unkey_interval": (_TOT_RESET, _is(0)),
    "time_out_reset_kerchunk_interval": (_TOT_RESET, _is(250)),
    "rxnotch": ("a receive notch filter: no equivalent", None),
    "lnkactenable": (_LINK_ACTIVITY, _off),
    "rptinacttime": ("the repeater inactivity macro: no equivalent", _is(0)),
    "nolocallinkct": ("courtesy-tone selection for local links: no equivalent", _off),
    "archivedir": ("recording all traffic: not supported", _empty),
    "ioport": ("parallel-port I/O: not supported", _empty),
    "txchannel": ("a separate transmit channel: the node's radio is one device", _empty),
    "dtmfkey": ("keying by DTMF: not supported", _off),
    "locallinknodes": ("local link nodes: no equivalent", _empty),
    "funcchar": ("another function lead-in: the node's is *", lambda v: v.strip() in ("", "*")),
    "endchar": ("another end character: the node's is #", lambda v: v.strip() in ("", "#")),
    "nobusyout": ("no busy-out: no equivalent", _off),
    "notelemtx": ("telemetry only to the links, not the radio: no equivalent", _off),
    "propagate_dtmf": ("DTMF passed on to the links as tones: no equivalent", _off),
    "propagate_phonedtmf": ("DTMF passed on to the links as tones: no equivalent", _off),
    "alt_functions": ("an alternate function table: no equivalent", _empty),
    "rxburstfreq": ("tone-burst access: no equivalent", _is(0)),
    "litzcmd": ("long-tone-zero (LiTZ) commands: no equivalent", _empty),
    "connpgm": ("a program run on connect: the node runs no programs", _empty),
    "discpgm": ("a program run on disconnect: the node runs no programs", _empty),
    "lconn": ("link connect commands: no equivalent", _empty),
    "ldisc": ("link disconnect commands: no equivalent", _empty),
    "aprstt": ("APRStt: not supported", _empty),
    "outstreamcmd": ("streaming the audio to a program: the node runs no programs", _empty),
    "elke": ("the Elke link timer: no equivalent", _is(0)),
    "itxctcss": ("CTCSS on transmit only while receiving: no equivalent", _off),
    "inxlat": ("DTMF translation of commands: no equivalent", _empty),
    "outxlat": ("DTMF translation of commands: no equivalent", _empty),
    "ctgroup": ("a courtesy-tone group: no equivalent", lambda v: v.strip() in ("", "0")),
    "locallist": ("local links: no equivalent", _empty),
    "first_keyup_min_time": ("a minimum first key-up: no equivalent", _is(0)),
    "first_keyup_inactivity_time": ("a minimum first key-up: no equivalent", _is(0)),
    "auth_users": ("TOTP logins: not supported", _empty),
    "timezone": ("the time of day is the host's local time here", _empty),
    "remote": ("a remote base: not supported", _empty),
    "sleeptime": ("sleep mode: no equivalent", None),
    "rx_timeout": ("a receiver time-out (HamVOIP, app_rpt__ultra): no equivalent", None),
    "rx_cosflap": ("a COS debounce (HamVOIP, app_rpt__ultra): no equivalent", None),
    "startup_macro_delay": ("a delay before the startup macro: it runs at start here", None),
    "dusbabek": ("no equivalent here", _off),
    "dias": ("no equivalent here", _off),
}
#: Keys that change nothing here (see the module's note), never reported.
SILENT = frozenset(
    {
        # The autopatch and phone mode (the autopatch's functions are reported once).
        "context", "callerid", "accountcode", "autopatch", "apstyle", "patchconnect",
        "tonezone", "simplexpatchdelay", "simplexphonedelay", "voxtimeout", "voxrecover",
        "phonelinkdefault", "phonelinkdynamic",
        # EchoLink, IRLP, chan_tlb (EchoLink is reported once when Asterisk runs it).
        "erxgain", "etxgain", "eannmode", "echolinkdefault", "echolinkdynamic", "eloutbound",
        "irxgain", "itxgain", "irlpann", "trxgain", "ttxgain", "tannmode", "tlbdefault",
        "tlbdynamic",
        # The voter (its rxchannel is refused with the reason), remote bases, rigs.
        "votertype", "votermode", "votermargin", "remotect", "remote_inact_timeout",
        "remote_timeout", "remote_timeout_warning", "remote_timeout_warning_freq", "mars",
        "rptnode", "iobase", "iospeed", "civaddr", "split2m", "split70cm", "txlimits",
        "authlevel", "memory",
        # Features off unless another key turns them on (that key is reported).
        "althangtime", "controlstates", "parrottime", "lnkacttime", "lnkacttimerwarn",
        "lnkactmacro", "rptinactmacro", "litzchar", "litztime", "archiveaudio",
        "archivedatefmt", "archiveformat", "monminblocks", "rxbursttime", "rxburstthreshold",
        "dtmfkeys", "auth_timeout", "auth_lockout_threshold", "auth_lockout_duration",
        "auth_otp_step", "auth_otp_window", "tonemacro", "mdcmacro", "mdclog",
        # Done the same way here, or only there for app_rpt's own plumbing.
        "politeid", "holdofftelem", "statpost_program", "statpost_time", "linkpost_time",
        "linkpost_max_message_len", "extnodefile", "extnodes", "nodenames", "gpsfeet",
        "guilinkdefault", "guilinkdynamic", "guilinkcheck",
        # app_rpt reads it in [general] only: in a node stanza it did nothing there either.
        "node_lookup_method",
    }
)  # fmt: skip
#: Keys the mapper reads itself (radio, ID, functions, links...).
HANDLED = frozenset(
    {
        "rxchannel", "duplex", "functions", "link_functions", "phone_functions",
        "dphone_functions", "macro", "scheduler", "telemetry", "morse", "idrecording",
        "idtalkover", "idtime", "beaconing", "telemdefault", "telemdynamic", "hangtime",
        "totime", "tx_timeout", "unlinkedct", "nounkeyct", "linkunkeyct", "startup_macro",
        "statpost_url", "tailmessagetime", "tailsquashedtime", "tailmessagelist", "nodes",
        "wait_times", "events",
    }
)  # fmt: skip
#: app_rpt's wait times when the stanza leaves them out (rpt_config.c), in ms.
_WAIT_DEFAULTS = {"telemwait": 1000, "idwait": 500, "unkeywait": 1000, "calltermwait": 1500}


def report_leftovers(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    """Every key of the node stanza the mapper did not take: reported when it changes what the
    node does, with why."""
    node = stanza.name
    for entry in stanza.effective():
        k = entry.key.lower()
        if k in HANDLED or k in SILENT:
            continue
        why, quiet = LOST.get(k, ("no equivalent here", None))
        if quiet is not None and quiet(entry.value):
            continue
        plan.drop(source(entry, node), why)
    _wait_times(plan, files, stanza)
    _events(plan, files, stanza)


def _wait_times(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    name = stanza.value("wait_times") or ""
    waits = files.rpt.section(name) if name else None
    if waits is None:
        return
    changed = [
        e
        for e in waits.effective()
        if e.key.lower() in _WAIT_DEFAULTS and number(e.value) != _WAIT_DEFAULTS[e.key.lower()]
    ]
    if changed:
        what = ", ".join(f"{e.key} = {e.value}" for e in changed)
        plan.drop(
            f"{waits.file}:{waits.line} [{name}]",
            f"telemetry wait times ({what}): the node times its own announcements",
        )


def _events(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    """`events` names a stanza (`events` by default); it matters when it holds any."""
    entry = stanza.get("events")
    name = entry.value.strip() if entry is not None else "events"
    events = files.rpt.section(name)
    if events is not None and events.entries:
        where = source(entry, stanza.name) if entry is not None else f"{events.file}:{events.line}"
        plan.drop(f"{where} [{name}]", "event management (rpt events): no equivalent")
