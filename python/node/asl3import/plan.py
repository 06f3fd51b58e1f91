"""What the importer builds: a `Plan` of the node.toml to write, from the parsed ASL3 files, and
the small readers of conf entries the mapping steps share."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from node.asl3import.conf import Asl3ConfError, ConfFile, Entry

__all__ = ["Asl3Files", "Plan", "Setting", "integer", "source", "yes"]


@dataclass(frozen=True, slots=True)
class Setting:
    """One key to write, with the ASL3 setting it came from (the comment above it) and why
    it maps as it does."""

    key: str
    value: object
    source: str  # file:line [section] key
    note: str = ""


@dataclass(slots=True)
class Plan:
    """What to write: `sections` in order ("" is the top level), the nodes file's text."""

    node: str
    sections: dict[str, list[Setting]] = field(default_factory=dict)
    nodes_file: str | None = None
    carried: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    #: Lines written commented out after [control] (a section the operator may want).
    commented: list[str] = field(default_factory=list)

    def set(self, section: str, key: str, value: object, source: str, note: str = "") -> None:
        items = self.sections.setdefault(section, [])
        items[:] = [s for s in items if s.key != key]
        items.append(Setting(key, value, source, note))
        where = f"[{section}] {key}" if section else key
        self.carried.append(f"{source} -> {where}")

    def get(self, section: str, key: str) -> object:
        return next((s.value for s in self.sections.get(section, []) if s.key == key), None)

    def drop(self, source: str, why: str) -> None:
        self.dropped.append(f"{source}: {why}")


@dataclass(frozen=True, slots=True)
class Asl3Files:
    """The parsed files (None when absent)."""

    rpt: ConfFile
    iax: ConfFile | None = None
    simpleusb: ConfFile | None = None
    usbradio: ConfFile | None = None
    manager: ConfFile | None = None
    http_registrations: ConfFile | None = None
    echolink: ConfFile | None = None
    modules: ConfFile | None = None


def source(entry: Entry, section: str) -> str:
    return f"{entry.where} [{section}] {entry.key}"


def integer(entry: Entry, section: str) -> int:
    text = entry.value.strip()
    if not re.fullmatch(r"-?\d+", text):
        raise Asl3ConfError(entry.file, entry.line, f"[{section}] {entry.key} is not a number")
    return int(text)


def yes(value: str) -> bool:
    return value.strip().lower() in ("yes", "y", "true", "t", "1", "on")
