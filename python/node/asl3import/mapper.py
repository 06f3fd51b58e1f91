"""An ASL configuration (ASL3, ASL 1.x, DIAL, HamVOIP), parsed (`conf`), mapped to this node's
keys: a `Plan` of sections and keys, the nodes file, and the report's lines. Pure: the files
come in parsed, nothing is read or written here.

The steps: the listener and registration (`iax`), the radio (`radio`), the transmitter's
timers and courtesy tone, the station ID (`ident`), the function table, macros and schedule,
the links, AMI; then every key of the node stanza not taken is reported when it changes what
the node does (`keys`). Keys are read under every name app_rpt and its forks give them (HamVOIP
1.3 renamed `totime` to `tx_timeout`).

Secrets are never put in the plan or the report: a password found in the files is only named,
with the environment variable (or peers file) that must carry it here.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable

from node.asl3import.conf import Asl3ConfError, ConfFile, Entry, Section
from node.asl3import.iax import listener, register
from node.asl3import.ident import courtesy_tone, identify
from node.asl3import.keys import report_leftovers
from node.asl3import.plan import Asl3Files, Plan, Setting, integer, source, truthy, yes
from node.asl3import.radio import map_radio
from node.config.functions import DEFAULT_FUNCTIONS, Function, parse_function, parse_schedule
from node.config.values import Invalid

__all__ = ["Asl3Files", "Plan", "Setting", "map_host", "map_node", "node_numbers"]

#: app_rpt's hang time when `hangtime` is left out (HANGTIME), in ms.
_HANGTIME = 5000
#: What function entries that load but do nothing here are (one report line for them all).
_UNAVAILABLE = "not available here (typing one says so)"


def node_numbers(rpt: ConfFile) -> list[str]:
    """The node stanzas of rpt.conf: the sections named by a number, as app_rpt finds them."""
    return [n for n in rpt.names() if n.isdigit()]


def map_node(
    files: Asl3Files, node: str | None, nodes_file: str = "nodes.conf", *, host: bool = False
) -> Plan:
    """The plan for `node` (the only node stanza when None); `nodes_file` is the name the nodes
    file will have beside the config; `host`: the node is one of every node of rpt.conf
    imported together (`map_host`)."""
    rpt = files.rpt
    nodes = node_numbers(rpt)
    if node is None:
        if len(nodes) != 1:
            raise Asl3ConfError(
                rpt.name,
                None,
                f"defines nodes {', '.join(nodes) or '(none)'}: choose one with --node",
            )
        node = nodes[0]
    stanza = rpt.section(node)
    if stanza is None or not node.isdigit():
        raise Asl3ConfError(
            rpt.name, None, f"has no node stanza [{node}] (it has: {', '.join(nodes) or 'none'})"
        )
    plan = Plan(node)
    plan.sections[""] = []
    # The node's number stands on its own: links, statpost and AMI need it whether or not the
    # node registers (ASL3's shipped nodes 1999 and 1998 never do).
    plan.set("", "node_id", node, f"{stanza.file}:{stanza.line} [{node}]", "the node stanza")
    if len(nodes) > 1 and not host:
        plan.checks.append(
            f"{rpt.name} defines nodes {', '.join(nodes)}: this imported node {node} only "
            "(--node picks one; without --node every node is imported into one config, all on "
            "this host's one IAX2 port)"
        )
    listener(plan, files)
    register(plan, files, node)
    radio_on = map_radio(plan, files, stanza)
    _transmitter(plan, files, stanza, radio_on)
    _rpt_keys(plan, files, stanza)
    _links(plan, files, stanza, nodes_file)
    _ami(plan, files)
    _elsewhere(plan, files)
    for conf in (rpt, files.iax, files.simpleusb, files.usbradio, files.manager):
        for note in conf.notes if conf is not None else []:
            where, _, why = note.rpartition(": ")
            plan.drop(where, why)
    report_leftovers(plan, files, stanza)
    return plan


def map_host(files: Asl3Files, nodes_file: str = "nodes.conf") -> list[Plan]:
    """One plan per node stanza of rpt.conf, in its order: the nodes of one host, which one
    config serves on one IAX2 port (the first at the top level, the others as
    `[nodes.<number>]`)."""
    numbers = node_numbers(files.rpt)
    if not numbers:
        raise Asl3ConfError(files.rpt.name, None, "defines no node stanza (a [<number>] section)")
    return [map_node(files, n, nodes_file, host=True) for n in numbers]


# --- rpt.conf ------------------------------------------------------------------------------------


def _transmitter(plan: Plan, files: Asl3Files, stanza: Section, radio_on: bool) -> None:
    """Duplex, the hang time, the courtesy tone and the station ID of a radio; the TX time-out
    of any node (it bounds the operator's key too)."""
    node = stanza.name
    if radio_on:
        duplex = stanza.get("duplex")
        if duplex is not None and integer(duplex, node) >= 2:
            plan.drop(
                source(duplex, node),
                "full duplex (the receiver repeated on the transmitter): the node is half "
                "duplex; [bridge] mix_minus = false repeats it",
            )
        h = stanza.get("hangtime")
        ms = max(0, integer(h, node)) if h is not None else _HANGTIME
        src = source(h, node) if h is not None else f"{stanza.file}:{stanza.line} [{node}]"
        note = "" if h is not None else "app_rpt's default hang time, 5000 ms"
        plan.set("radio", "hang_time_ms", min(60000, ms), src, note)
        courtesy_tone(plan, files, stanza)
        if (e := stanza.get("linkunkeyct")) is not None and e.value.strip():
            plan.drop(
                source(e, node),
                "the courtesy tone after a link's transmission: the node's courtesy tone "
                "follows its own receiver",
            )
        identify(plan, files, stanza)
    _timeout(plan, stanza)


def _timeout(plan: Plan, stanza: Section) -> None:
    """`[keying] tx_timeout_secs` from `totime` (app_rpt), or `tx_timeout` (HamVOIP's name
    since its 1.3), both in ms."""
    node = stanza.name
    totime, tx_timeout = stanza.get("totime"), stanza.get("tx_timeout")
    e = totime or tx_timeout
    if e is None:
        return
    note = "milliseconds to seconds" + ("" if totime else " (HamVOIP's name for totime)")
    secs = max(1, min(3600, math.ceil(integer(e, node) / 1000)))
    plan.set("keying", "tx_timeout_secs", secs, source(e, node), note)
    if totime is not None and tx_timeout is not None and totime.value != tx_timeout.value:
        plan.checks.append(
            f"{tx_timeout.where}: tx_timeout = {tx_timeout.value} (HamVOIP's name) and totime "
            f"= {totime.value} ({totime.where}) disagree: [keying] tx_timeout_secs took totime, "
            "as ASL's app_rpt does; HamVOIP's reads tx_timeout"
        )


def _stanza(
    files: Asl3Files, stanza: Section, key: str, default: str
) -> tuple[Section | None, str]:
    name = stanza.value(key, default) or default
    return files.rpt.section(name), name


def _rpt_keys(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    node = stanza.name
    for key in ("telemdefault",):
        if (e := stanza.get(key)) is not None:
            plan.set("rpt", key, max(0, min(2, integer(e, node))), source(e, node))
    if (e := stanza.get("telemdynamic")) is not None:
        plan.set("rpt", "telemdynamic", truthy(e.value), source(e, node))
    for key in ("tailmessagetime", "tailsquashedtime"):
        if (e := stanza.get(key)) is not None:
            plan.set("rpt", key, max(0, min(200000000, integer(e, node))), source(e, node))
    if (e := stanza.get("tailmessagelist")) is not None:
        items = [i.strip() for i in e.value.split(",") if i.strip()]
        plan.set(
            "rpt", "tailmessagelist", items, source(e, node), "CHECK: sound files need .wav/.ul"
        )
        plan.checks.append(f"{e.where}: tail messages name sound files; give their .wav/.ul paths")
    table = _functions(plan, files, stanza)
    _macros(plan, files, stanza, table)
    if (e := stanza.get("statpost_url")) is not None and e.value.strip():
        plan.set("statpost", "url", e.value.strip(), source(e, node))


def _functions(plan: Plan, files: Asl3Files, stanza: Section) -> list[Function]:
    """`[functions]` in the stanza's order, `[dtmf] enabled`; the other tables' names."""
    node = stanza.name
    functions, fname = _stanza(files, stanza, "functions", "functions")
    table: list[Function] = []
    if functions is None:
        return table
    unavailable: dict[str, list[str]] = {}  # function name: the codes that have it
    for e in functions.effective():
        code = e.key.strip().upper()
        try:
            fn = parse_function(code, e.value)
        except Invalid as exc:
            plan.drop(source(e, fname), f"{e.value}: {exc.problem}")
            continue
        if not re.fullmatch(r"[0-9A-D]{1,16}", code):
            plan.drop(source(e, fname), "not a DTMF code")
            continue
        plan.set("functions", code, fn.spec, source(e, fname))
        if fn.kind == "unavailable":
            unavailable.setdefault(fn.spec.partition(",")[0].strip().lower(), []).append(code)
        table.append(fn)
    if unavailable:
        where = f"{functions.file}:{functions.line} [{fname}]"
        count = sum(len(codes) for codes in unavailable.values())
        listed = "; ".join(f"{name} (at {', '.join(codes)})" for name, codes in unavailable.items())
        what = "1 function loads, but is" if count == 1 else f"{count} functions load, but are"
        plan.drop(where, f"{what} {_UNAVAILABLE}: {listed}")
    plan.set(
        "dtmf",
        "enabled",
        True,
        f"{functions.file}:{functions.line} [{fname}]",
        "app_rpt runs the function table for the radio and every link",
    )
    for key, who in (
        ("link_functions", "the links"),
        ("phone_functions", "phone callers"),
        ("dphone_functions", "phone callers"),
    ):
        e = stanza.get(key)
        if e is not None and e.value.strip() and e.value.strip().lower() != fname.lower():
            plan.drop(
                source(e, node), f"a table of its own for {who}: [functions] serves every source"
            )
    return table


def _macros(plan: Plan, files: Asl3Files, stanza: Section, table: list[Function]) -> None:
    """`[macro]`, `[schedule]` and the startup macro."""
    node = stanza.name
    macros, mname = _stanza(files, stanza, "macro", "macro")
    if macros is not None:
        for e in macros.effective():
            digits = e.value.replace(" ", "").upper()
            if not e.key.strip().isdigit() or not re.fullmatch(r"[0-9A-D*#]{1,256}", digits):
                plan.drop(source(e, mname), "not a macro of DTMF digits")
                continue
            plan.set("macro", e.key.strip(), digits, source(e, mname))
    # app_rpt has no default scheduler stanza: without `scheduler =` nothing is scheduled.
    sname = stanza.value("scheduler") or ""
    sched = files.rpt.section(sname) if sname else None
    if sched is not None:
        for e in sched.effective():
            try:
                parse_schedule(e.key.strip(), e.value)
            except Invalid as exc:
                plan.drop(source(e, sname), exc.problem)
                continue
            plan.set("schedule", e.key.strip(), " ".join(e.value.split()), source(e, sname))
    startup = stanza.get("startup_macro")
    if startup is not None:
        _startup(plan, startup, node, table or None)


def _commands(digits: str, table: Iterable[Function]) -> list[tuple[str, Function | None, str]]:
    """A DTMF string cut into its commands: (text, function or None, the rest of the digits)."""
    out = []
    for part in digits.split("*"):
        if not part:
            continue
        fn = next((f for f in table if part.startswith(f.code)), None)
        out.append((part, fn, part[len(fn.code) :].rstrip("#") if fn else ""))
    return out


def _startup(plan: Plan, entry: Entry, node: str, table: list[Function] | None) -> None:
    """`startup_macro`: permanent links become `[links.N] permanent`, the rest stays a
    startup macro run through the function table."""
    digits = entry.value.replace(" ", "").upper()
    rest = []
    for text, fn, arg in _commands(digits, table or DEFAULT_FUNCTIONS):
        if fn is not None and fn.permanent and arg.isdigit():
            mode = {"connect": "transceive", "monitor": "monitor"}.get(fn.kind, "local_monitor")
            src = f"{source(entry, node)} *{text} ({fn.spec})"
            plan.set(f"links.{arg}", "permanent", True, src)
            plan.set(f"links.{arg}", "mode", mode, src)
        else:
            rest.append(text)
    if rest:
        plan.set("rpt", "startup_macro", "".join("*" + r for r in rest), source(entry, node))


def _links(plan: Plan, files: Asl3Files, stanza: Section, nodes_file: str) -> None:
    rpt = files.rpt
    general = rpt.section("general")
    method = general.get("node_lookup_method") if general else None
    nodes_name = stanza.value("nodes", "nodes") or "nodes"
    nodes = rpt.section(nodes_name)
    lines = []
    if nodes is not None:
        for e in nodes.effective():
            if not e.key.strip().isdigit():
                plan.drop(source(e, nodes_name), "not a node number")
                continue
            lines.append(f"{e.key.strip()}={e.value.strip()}")
    if lines:
        plan.nodes_file = "\n".join(lines) + "\n"
        count = f"{len(lines)} node{'s' if len(lines) > 1 else ''}"
        plan.set("links", "nodes_file", nodes_file, f"rpt.conf [{nodes_name}] ({count})")
    if method is not None:
        dns = method.value.strip().lower() in ("dns", "both")
        plan.set("links", "dns", dns, source(method, "general"))


def _ami(plan: Plan, files: Asl3Files) -> None:
    mgr = files.manager
    general = mgr.section("general") if mgr else None
    if general is None or mgr is None:
        return
    enabled = yes(general.value("enabled", "no") or "no")
    users = [mgr.section(n) for n in mgr.names() if n.lower() != "general"]
    users = [u for u in users if u is not None and u.get("secret") is not None]
    if not enabled:
        return  # no AMI there, none here
    src = f"{general.file}:{general.line} manager.conf [general]"
    plan.set("ami", "enabled", True, src)
    addr = general.value("bindaddr", "127.0.0.1") or "127.0.0.1"
    port = general.get("port")
    plan.set("ami", "bind", f"{addr}:{integer(port, 'general') if port else 5038}", src)
    try:
        loopback = ipaddress.ip_address(addr).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        plan.set("ami", "allow_remote", True, src, "ASL listened beyond loopback")
    if users:
        user = users[0]
        usrc = f"{user.file}:{user.line} manager.conf [{user.name}]"
        plan.set("ami", "username", user.name, usrc)
        write = (user.value("write", "") or "").lower()
        if not any(w in write for w in ("all", "command", "system", "call")):
            plan.set("ami", "read_only", True, usrc, "its write permission is empty")
        secret = user.get("secret")
        assert secret is not None
        plan.secrets.append(
            f"NET_AMI_SECRET: the AMI password of manager.conf [{user.name}] ({secret.where})"
        )
        for other in users[1:]:
            plan.drop(f"{other.file}:{other.line} manager.conf [{other.name}]", "one AMI user here")


def _loaded(files: Asl3Files, module: str) -> bool:
    """Whether Asterisk loads `module` (modules.conf: `load =>` it, or `autoload = yes` and no
    `noload =>`); without modules.conf Asterisk loads every module."""
    mods = files.modules.section("modules") if files.modules else None
    if mods is None:
        return True
    named = {e.key.lower(): True for e in mods.entries if e.value.strip() == module}
    if "noload" in named:
        return False
    return "load" in named or yes(mods.value("autoload", "no") or "no")


def _elsewhere(plan: Plan, files: Asl3Files) -> None:
    """Features configured outside rpt.conf that have no equivalent, when Asterisk runs them."""
    echo = files.echolink
    if echo is not None and _loaded(files, "chan_echolink.so"):
        for name in echo.names():
            s = echo.section(name)
            call = s.value("call", "") if s else ""
            if s is not None and call and call.upper() != "INVALID":
                plan.drop(f"{s.file}:{s.line} [{name}]", "EchoLink: not supported")
