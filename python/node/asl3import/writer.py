"""A `Plan` as a commented node.toml and as the operator's report. Deterministic: the same
plan gives the same bytes (no dates, no host names), so importing twice gives the same file."""

from __future__ import annotations

import json
import re

from node.asl3import.plan import Plan

__all__ = ["render_report", "render_toml"]

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
        f"# iax-node configuration for node {plan.node}, imported from the ASL3 configuration",
        f"# in {source} by `node import-asl3`. Each key's comment says which ASL3 setting it",
        "# came from. No secret is in this file: they come from the environment (see",
        "# [secrets] and the importer's report). docs/migrating-from-asl3.md explains the",
        "# mapping; docs/config.md every key.",
    ]
    sections = dict(plan.sections)
    sections.setdefault("control", [])
    for name in _section_order(Plan(plan.node, sections)):
        items = sections[name]
        out.append("")
        if name:
            out.append(f"[{name}]")
        if name == "control" and not items:
            out.append("# The control channel (HTTP, loopback only); ASL3 has no equivalent.")
            out.append('bind = "127.0.0.1:8730"')
        if name == "control" and plan.commented:
            out.append("")
            out += [line if line.startswith("#") else f"# {line}" for line in plan.commented]
        for s in items:
            out.append(f"# {s.source}" + (f": {s.note}" if s.note else ""))
            out.append(f"{_key(s.key)} = {_value(s.value)}")
    return "\n".join(out) + "\n"


def render_report(plan: Plan, config: str, nodes_file: str | None) -> str:
    lines = [
        f"Imported node {plan.node} into {config}" + (f" and {nodes_file}" if nodes_file else "")
    ]
    lines.append("")
    lines.append(f"Carried over ({len(plan.carried)}):")
    lines += [f"  {c}" for c in plan.carried]
    lines.append("")
    lines.append(f"No equivalent here ({len(plan.dropped)}):")
    lines += [f"  {d}" for d in plan.dropped] or ["  (nothing)"]
    lines.append("")
    lines.append("Secrets to provide (never copied into the config):")
    lines += [f"  {s}" for s in plan.secrets] or ["  (none)"]
    if plan.checks:
        lines.append("")
        lines.append("Check before serving:")
        lines += [f"  {c}" for c in plan.checks]
    return "\n".join(lines) + "\n"
