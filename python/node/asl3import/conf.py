"""Asterisk's configuration file format, read as Asterisk reads it, without touching the disk.

The rules (learnt from Asterisk's config loader and how app_rpt looks values up):

- `[name]` opens a section; `[name](opts)` takes a comma list of options: `!` marks a template
  (kept for inheritance, not listed among the sections), `+` appends to an earlier section of
  the same name, any other word names a section whose keys are copied in first, as they stand at
  that point of the file (later changes to the template are not inherited).
- `key = value` and `key => value` are the same to a lookup; keys are case-insensitive; a
  section may hold a key more than once, and a lookup takes the last one (so a stanza overrides
  what its template set), while list lookups (`allow`, `register`) take them all in order.
- `;` starts a comment, `\\;` is a literal semicolon, `;--` ... `--;` is a block comment.
- `#include file` and `#tryinclude file` (quoted or not, relative to the configuration
  directory, glob patterns allowed) read another file in place; a missing `#include` is an
  error, a missing `#tryinclude` is not. `#exec` runs a program, which an importer must not do.
- A second `[name]` without `+` is a separate section; a lookup by name finds the first.

Every fault is an `Asl3ConfError` naming the file and the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Asl3ConfError", "ConfFile", "Entry", "Files", "Section", "parse_conf"]

#: Includes deeper than this are a loop (Asterisk stops at a similar depth).
MAX_INCLUDE_DEPTH = 10


class Asl3ConfError(Exception):
    """A configuration Asterisk would not load, or that cannot be imported: file, line, why."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        self.file = file
        self.line = line
        self.problem = problem
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {problem}")


class Files(Protocol):
    """Where the reader gets file texts: names are as written in the files (relative to the
    configuration directory unless absolute)."""

    def read(self, name: str) -> str | None:
        """The text of `name`, or None when there is no such file."""
        ...

    def glob(self, pattern: str) -> list[str]:
        """The names matching a pattern with `*`, `?` or `[`, sorted."""
        ...


@dataclass(frozen=True, slots=True)
class Entry:
    """One `key = value` line: the key as written, the value trimmed, and where it was."""

    key: str
    value: str
    file: str
    line: int
    arrow: bool = False

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class Section:
    name: str
    file: str
    line: int
    template: bool = False
    bases: tuple[str, ...] = ()
    entries: list[Entry] = field(default_factory=list)

    def get(self, key: str) -> Entry | None:
        """The effective entry of `key` (the last one), or None."""
        found = None
        for entry in self.entries:
            if entry.key.lower() == key.lower():
                found = entry
        return found

    def value(self, key: str, default: str | None = None) -> str | None:
        entry = self.get(key)
        return entry.value if entry is not None else default

    def all(self, key: str) -> list[Entry]:
        return [e for e in self.entries if e.key.lower() == key.lower()]

    def effective(self) -> list[Entry]:
        """One entry per key, the effective one, in the order the keys first appear (the
        order app_rpt gives a function table its priority by)."""
        last: dict[str, Entry] = {}
        order: list[str] = []
        for entry in self.entries:
            k = entry.key.lower()
            if k not in last:
                order.append(k)
            last[k] = entry
        return [last[k] for k in order]


@dataclass(slots=True)
class ConfFile:
    """A parsed file with everything it included: its sections in file order."""

    name: str
    sections: list[Section] = field(default_factory=list)

    def section(self, name: str) -> Section | None:
        """The first non-template section called `name` (case-insensitive), as Asterisk's
        lookup by name finds it; a template is found only when nothing else has the name."""
        matches = [s for s in self.sections if s.name.lower() == name.lower()]
        plain = [s for s in matches if not s.template]
        return (plain or matches or [None])[0]

    def names(self) -> Iterator[str]:
        """The names of the non-template sections, in order, each once."""
        seen: set[str] = set()
        for s in self.sections:
            if not s.template and s.name.lower() not in seen:
                seen.add(s.name.lower())
                yield s.name


_HEADER = re.compile(r"\[(?P<name>[^\]]*)\](?P<rest>.*)")
_OPTS = re.compile(r"\((?P<opts>[^)]*)\)\s*")


def _strip_comments(text: str, state: list[bool]) -> str:
    """The line without its comments; `state[0]` is True inside a `;--` block comment."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if state[0]:
            end = text.find("--;", i)
            if end < 0:
                return "".join(out)
            state[0] = False
            i = end + 3
            continue
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == ";":
            out.append(";")
            i += 2
        elif ch == ";":
            if text.startswith(";--", i):
                state[0] = True
                i += 3
            else:
                break
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class _Reader:
    def __init__(self, files: Files, conf: ConfFile) -> None:
        self.files = files
        self.conf = conf

    def find(self, name: str) -> Section | None:
        for s in self.conf.sections:
            if s.name.lower() == name.lower():
                return s
        return None

    def read_file(
        self, name: str, text: str, current: Section | None, depth: int
    ) -> Section | None:
        block = [False]
        for number, raw in enumerate(text.splitlines(), start=1):
            line = _strip_comments(raw, block).strip()
            if not line:
                continue
            if line.startswith("#"):
                self.directive(name, number, line, current, depth)
            elif line.startswith("["):
                current = self.header(name, number, line)
            else:
                if current is None:
                    raise Asl3ConfError(name, number, "a key before any [section]")
                key, sep, value = line.partition("=")
                if not sep:
                    raise Asl3ConfError(name, number, "no '=' in this line (not 'key = value')")
                arrow = value.startswith(">")
                if arrow:
                    value = value[1:]
                key = key.strip()
                if not key:
                    raise Asl3ConfError(name, number, "a line with '=' but no key before it")
                current.entries.append(Entry(key, value.strip(), name, number, arrow))
        return current

    def header(self, name: str, number: int, line: str) -> Section:
        m = _HEADER.fullmatch(line)
        if m is None:
            raise Asl3ConfError(name, number, "no closing ']' in this section header")
        title = m["name"].strip()
        if not title:
            raise Asl3ConfError(name, number, "a section header with no name")
        rest = m["rest"].strip()
        opts: list[str] = []
        if rest:
            o = _OPTS.fullmatch(rest)
            if o is None:
                raise Asl3ConfError(
                    name, number, "text after the section header (expected '(options)')"
                )
            opts = [p.strip() for p in o["opts"].split(",") if p.strip()]
        template = "!" in opts
        if "+" in opts:
            earlier = self.find(title)
            if earlier is None:
                raise Asl3ConfError(
                    name, number, f"[{title}](+) appends to a section that does not exist"
                )
            return earlier
        section = Section(title, name, number, template=template)
        bases = []
        for base in opts:
            if base == "!":
                continue
            if base == "+":
                continue
            parent = self.find(base)
            if parent is None:
                raise Asl3ConfError(
                    name, number, f"[{title}] inherits from '{base}', which is not defined above"
                )
            bases.append(parent.name)
            section.entries.extend(parent.entries)
        section.bases = tuple(bases)
        self.conf.sections.append(section)
        return section

    def directive(
        self, name: str, number: int, line: str, current: Section | None, depth: int
    ) -> None:
        m = re.match(r"#\s*(\w+)\s*(.*)", line)
        word = m[1].lower() if m else ""
        arg = (m[2] if m else "").strip().strip('"').strip("<>").strip()
        if word == "exec":
            raise Asl3ConfError(
                name,
                number,
                "#exec runs a program; the importer does not run it (inline its output)",
            )
        if word not in ("include", "tryinclude"):
            raise Asl3ConfError(name, number, f"unknown directive #{word}")
        if not arg:
            raise Asl3ConfError(name, number, f"#{word} without a file name")
        if depth >= MAX_INCLUDE_DEPTH:
            raise Asl3ConfError(name, number, "#include nested too deep (a loop?)")
        names = self.files.glob(arg) if any(c in arg for c in "*?[") else [arg]
        found = False
        for included in names:
            text = self.files.read(included)
            if text is None:
                continue
            found = True
            # The including file goes on in its own section: the included file's sections
            # end where it ends.
            self.read_file(included, text, current, depth + 1)
        if not found and word == "include" and not any(c in arg for c in "*?["):
            raise Asl3ConfError(name, number, f"#include of {arg}, which does not exist")


def parse_conf(name: str, files: Files) -> ConfFile | None:
    """`name` and what it includes, as Asterisk would load it; None when `name` is absent."""
    text = files.read(name)
    if text is None:
        return None
    conf = ConfFile(name)
    _Reader(files, conf).read_file(name, text, None, 0)
    return conf


def parse_text(name: str, text: str, files: Files | None = None) -> ConfFile:
    """`text` as the file `name` (includes come from `files`, or are all missing)."""

    class _Only:
        def read(self, n: str) -> str | None:
            if n == name:
                return text
            return files.read(n) if files is not None else None

        def glob(self, pattern: str) -> list[str]:
            return files.glob(pattern) if files is not None else []

    conf = parse_conf(name, _Only())
    assert conf is not None
    return conf
