"""A `Plan` as a commented node.toml and as the operator's report. Deterministic: the same
plan gives the same bytes (no dates, no host names), so importing twice gives the same file."""

from __future__ import annotations

import json
import re
import textwrap

from node.asl3import.plan import Plan

__all__ = ["SHARED", "render_host_report", "render_host_toml", "render_report", "render_toml"]

#: What the nodes of one config share (given once, by the first node; docs/config.md).
SHARED = ("listener", "control", "secrets", "ami", "portal", "wireguard")
#: Top-level keys a further node does not write (its number is its table's name; the codec
#: policy is the host's).
_SHARED_TOP = ("node_id", "codec_policy")

#: Sections in the order the written file lists them (the template's order).
ORDER = (
    "",
    "listener",
    "control",
    "secrets",
    "register",
    "statpost",
    "bridge",
    "audio",
    "usrp",
    "announce",
    "dtmf",
    "links",
    "keying",
    "radio",
    "ami",
    "rpt",
    "functions",
    "macro",
    "schedule",
)
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else json.dumps(k)


def _section_order(plan: Plan) -> list[str]:
    def rank(name: str) -> tuple[int, int, str]:
        head, _, tail = name.partition(".")
        base = ORDER.index(head) if head in ORDER else len(ORDER)
        return (base, int(tail) if tail.isdigit() else -1, name)

    return sorted(plan.sections, key=rank)


def render_toml(plan: Plan, source: str) -> str:
    """The node.toml of `plan`; `source` names the imported directory in the header."""
    out = [
        f"# iax-node configuration for node {plan.node}, imported from the AllStarLink (app_rpt)",
        f"# configuration in {source} by `node import-asl3`. Each key's comment says which",
        "# setting it came from. No secret is in this file: they come from the environment (see",
        "# [secrets] and the importer's report). docs/migrating-from-asl3.md explains the",
        "# mapping; docs/config.md every key.",
    ]
    out += _sections(plan)
    return "\n".join(out) + "\n"


def render_host_toml(plans: list[Plan], source: str) -> str:
    """One node.toml for every node of an rpt.conf: the first node at the top level, the
    others as `[nodes.<number>]` tables of their own sections (never the shared ones)."""
    first, further = plans[0], plans[1:]
    numbers = ", ".join(p.node for p in plans)
    out = [
        f"# iax-node configuration for nodes {numbers}, imported from the AllStarLink (app_rpt)",
        f"# configuration in {source} by `node import-asl3`: one process serves them all on one",
        "# IAX2 port. Each key's comment says which setting it came from. No secret is in this",
        "# file: they come from the environment (see [secrets] and the importer's report).",
        "# docs/migrating-from-asl3.md explains the mapping; docs/config.md every key.",
    ]
    out += _sections(first)
    for plan in further:
        own = {
            name: [s for s in items if not (name == "" and s.key in _SHARED_TOP)]
            for name, items in plan.sections.items()
            if name.partition(".")[0] not in SHARED
        }
        out += ["", f"# Node {plan.node}: its own sections (the shared ones are the first node's)"]
        out.append(f"[nodes.{plan.node}]")
        out += [line for line in _sections(Plan(plan.node, own), prefix=f"nodes.{plan.node}.")]
    return "\n".join(out) + "\n"


def _sections(plan: Plan, prefix: str = "") -> list[str]:
    """The plan's sections as TOML lines; `prefix` puts them under a further node's table."""
    out: list[str] = []
    sections = dict(plan.sections)
    if not prefix:
        sections.setdefault("control", [])
    for name in _section_order(Plan(plan.node, sections)):
        items = sections[name]
        if prefix and not items:
            continue
        out.append("")
        if name:
            out.append(f"[{prefix}{name}]")
        if name == "control" and not items:
            out.append("# The control channel (HTTP, loopback only); ASL has no equivalent.")
            out.append('bind = "127.0.0.1:8730"')
        if name == "control" and plan.commented:
            out.append("")
            out += [line if line.startswith("#") else f"# {line}" for line in plan.commented]
        for s in items:
            out.append(f"# {s.source}" + (f": {s.note}" if s.note else ""))
            out.append(f"{_key(s.key)} = {_value(s.value)}")
    return out


#: The tables whose keys are the operator's: carried as one line each.
_TABLES = ("functions", "macro", "schedule")
_FROM = re.compile(r"(?P<file>[^\s:]+):(?P<line>\d+) (?P<stanza>\[[^\]]*\])")
_WIDTH = 100


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(
        text, _WIDTH, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False
    )


def _carried(plan: Plan) -> list[str]:
    """One line per ASL setting (every key it became), and one per operator's table."""
    # Keyed by the setting, or by ("table", name) for a table's entries, in first-seen order.
    targets: dict[str | tuple[str, str], list[str]] = {}
    rows: dict[str, list[tuple[str, int, str]]] = {}
    for src, where in plan.moved:
        table = where[1:].partition("]")[0]
        m = _FROM.match(src)
        if table in _TABLES and m is not None:
            rows.setdefault(table, []).append((m["file"], int(m["line"]), m["stanza"]))
            targets.setdefault(("table", table), [])
        else:
            targets.setdefault(src, []).append(where)
    lines = []
    for key, keys in targets.items():
        if isinstance(key, tuple):
            table = key[1]
            file, first, stanza = rows[table][0]
            last = max(line for f, line, _ in rows[table] if f == file)
            span = f"{first}-{last}" if last != first else f"{first}"
            count = len(rows[table])
            noun = "entries" if count > 1 else "entry"
            lines.append(f"{file}:{span} {stanza}: {count} {noun} -> [{table}]")
        else:
            lines.append(f"{key} -> {_keys(keys)}")
    return lines


def _keys(targets: list[str]) -> str:
    """`[register] method, [register] peer, node_id` as `[register] method, peer; node_id`."""
    by_section: dict[str, list[str]] = {}
    for where in dict.fromkeys(targets):
        section, _, key = where.rpartition(" ")
        by_section.setdefault(section, []).append(key)
    return "; ".join(
        f"{section} {', '.join(keys)}" if section else ", ".join(keys)
        for section, keys in by_section.items()
    )


def _lost(plan: Plan) -> list[str]:
    """One line per reason: the settings that share it, listed after it."""
    by_why: dict[str, list[str]] = {}
    for lost in plan.lost:
        by_why.setdefault(lost.why, []).append(lost.source)
    lines = []
    for why, sources in by_why.items():
        if len(sources) == 1:
            lines.append(f"{sources[0]}: {why}")
        else:
            lines.append(f"{why} ({len(sources)}): {'; '.join(sources)}")
    return lines


def render_report(plan: Plan, config: str, nodes_file: str | None, *, written: bool = True) -> str:
    """The operator's report: what to check first, the secrets, what was carried over, and
    what was not and what that changes, each reason once."""
    if written:
        head = f"Imported node {plan.node} into {config}"
        head += f" and {nodes_file}" if nodes_file else ""
        head += " (--force: see NOT CARRIED below)" if plan.blockers else ""
    else:
        head = (
            f"Not imported: node {plan.node}'s radio cannot be driven by this node, so nothing "
            "was written (--force writes the node without it)"
        )
    lines = [head]
    checks = [f"NOT CARRIED: {b}" for b in plan.blockers] + plan.checks
    if checks:
        lines.append("")
        lines.append(f"Check before serving ({len(checks)}):")
        for c in checks:
            lines += _wrapped(c)
    lines.append("")
    lines.append("Secrets to provide (never copied into the config):")
    lines += [w for s in plan.secrets for w in _wrapped(s)] or ["  (none)"]
    carried = _carried(plan)
    lines.append("")
    lines.append(f"Carried over ({len(plan.moved)} settings):")
    lines += [w for c in carried for w in _wrapped(c)]
    lost = _lost(plan)
    lines.append("")
    lines.append(f"Not carried over, and what that changes ({len(plan.lost)}):")
    lines += [w for d in lost for w in _wrapped(d)] or ["  (nothing)"]
    return "\n".join(lines) + "\n"


def render_host_report(
    plans: list[Plan], config: str, nodes_file: str | None, *, written: bool = True
) -> str:
    """Every node's report, one after the other, under one line naming them all."""
    numbers = ", ".join(p.node for p in plans)
    if written:
        head = f"Imported nodes {numbers} into {config}, one process on one IAX2 port"
        head += f" (and {nodes_file})" if nodes_file else ""
    else:
        head = "Not imported: a node's radio cannot be driven here, so nothing was written"
    parts = [head]
    for plan in plans:
        body = render_report(plan, config, nodes_file, written=written).split("\n", 1)[1]
        parts.append(f"\n=== Node {plan.node} ===" + body.rstrip("\n"))
    return "\n".join(parts) + "\n"
