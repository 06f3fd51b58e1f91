"""What the importer builds: a `Plan` of the node.toml to write, from the parsed ASL3 files, and
the small readers of conf entries the mapping steps share."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from node.asl3import.conf import Asl3ConfError, ConfFile, Entry

__all__ = [
    "Asl3Files",
    "Lost",
    "Plan",
    "Setting",
    "integer",
    "number",
    "source",
    "truthy",
    "where_of",
    "yes",
]


@dataclass(frozen=True, slots=True)
class Setting:
    """One key to write, with the ASL3 setting it came from (the comment above it) and why
    it maps as it does."""

    key: str
    value: object
    source: str  # file:line [section] key
    note: str = ""


@dataclass(frozen=True, slots=True)
class Lost:
    """A setting that is not carried over and changes what the node does: where, and why.
    Lines with the same `why` are reported as one."""

    source: str
    why: str

    def __str__(self) -> str:
        return f"{self.source}: {self.why}"


@dataclass(slots=True)
class Plan:
    """What to write: `sections` in order ("" is the top level), the nodes file's text, and the
    report's parts."""

    node: str
    sections: dict[str, list[Setting]] = field(default_factory=dict)
    nodes_file: str | None = None
    #: (ASL3 setting, the key it became), in the order they were mapped.
    moved: list[tuple[str, str]] = field(default_factory=list)
    lost: list[Lost] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    #: What the operator must look at before serving (a device name, a second node).
    checks: list[str] = field(default_factory=list)
    #: What stops the import: a radio the node cannot drive. `--force` writes the node anyway.
    blockers: list[str] = field(default_factory=list)
    #: Lines written commented out after [control] (a section the operator may want).
    commented: list[str] = field(default_factory=list)

    def set(self, section: str, key: str, value: object, source: str, note: str = "") -> None:
        items = self.sections.setdefault(section, [])
        items[:] = [s for s in items if s.key != key]
        items.append(Setting(key, value, source, note))
        where = f"[{section}] {key}" if section else key
        self.moved.append((source, where))

    def get(self, section: str, key: str) -> object:
        return next((s.value for s in self.sections.get(section, []) if s.key == key), None)

    def drop(self, source: str, why: str) -> None:
        self.lost.append(Lost(source, why))

    def setting_of(self, dotted: str) -> Setting | None:
        """The setting a loader error names by its dotted key (`rpt.startup_macro`,
        `links.2501.mode`, `node_id`): the longest section that begins it."""
        for name in sorted(self.sections, key=len, reverse=True):
            prefix = f"{name}." if name else ""
            if dotted.startswith(prefix):
                key = dotted[len(prefix) :]
                found = next((s for s in self.sections[name] if s.key == key), None)
                if found is not None:
                    return found
        return None

    @property
    def carried(self) -> list[str]:
        return [f"{src} -> {where}" for src, where in self.moved]

    @property
    def dropped(self) -> list[str]:
        return [str(lost) for lost in self.lost]


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
    alsaradio: ConfFile | None = None
    rpiradio: ConfFile | None = None


def source(entry: Entry, section: str) -> str:
    return f"{entry.where} [{section}] {entry.key}"


_WHERE = re.compile(r"(?P<file>[^\s:]+):(?P<line>\d+)\b")


def where_of(source: str) -> tuple[str, int | None]:
    """The file and line a source string begins with ("rpt.conf:129 [2500] startup_macro");
    the whole string and no line when it names none."""
    m = _WHERE.match(source)
    return (m["file"], int(m["line"])) if m else (source, None)


def integer(entry: Entry, section: str) -> int:
    text = entry.value.strip()
    if not re.fullmatch(r"-?\d+", text):
        raise Asl3ConfError(entry.file, entry.line, f"[{section}] {entry.key} is not a number")
    return int(text)


def number(value: str) -> float | None:
    """A value as app_rpt's `atoi`/`atof` would mostly take it, or None when it is not a
    number (the tables of defaults compare with it)."""
    m = re.match(r"\s*(-?\d+(?:\.\d*)?)", value)
    return float(m[1]) if m else None


def yes(value: str) -> bool:
    return value.strip().lower() in ("yes", "y", "true", "t", "1", "on")


def truthy(value: str) -> bool:
    """Asterisk's `ast_true`, and a number other than 0 (app_rpt reads some flags with atoi)."""
    n = number(value)
    return yes(value) or (n is not None and n != 0)
