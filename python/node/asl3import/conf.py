"""Asterisk's configuration file format, read as Asterisk reads it, without touching the disk.

The rules (learnt from Asterisk's config loader and how app_rpt looks values up):

- `[name]` opens a section; `[name](opts)` takes a comma list of options: `!` marks a template
  (kept for inheritance, not listed among the sections), `+` appends to an earlier section of
  the same name (a section, never a template), any other word names a section or template whose
  keys are copied in first, as they stand at that point of the file (later changes to it are
  not inherited).
- `key = value` and `key => value` are the same to a lookup; keys are case-insensitive; a
  section may hold a key more than once, and a lookup takes the last one (so a stanza overrides
  what its template set), while list lookups (`allow`, `register`) take them all in order.
  `key += value` appends to the last value of `key`.
- `;` starts a comment, `\\;` is a literal semicolon, `;--` ... `--;` is a block comment (they
  nest).
- `#include file`, `#tryinclude file` and `#includeifexists file` (quoted or not, relative to
  the configuration directory, glob patterns allowed) read another file in place; a missing
  `#include` is an error, a missing `#tryinclude` or `#includeifexists` is not.
  `#includeifexists` is ASL 1.x's Asterisk 1.4 spelling of `#tryinclude` (ASL-Asterisk's
  `main/config.c`), which every ASL 1.x, DIAL and HamVOIP rpt.conf ends with; ASL3's
  Asterisk no longer knows it, but a file that says it was written for one that did. `#exec`
  runs a program, which an importer must not do: it is noted, as an unknown directive is
  (Asterisk warns about those and goes on).
- A second `[name]` without `+` is a separate section; a lookup by name finds the first.

Stricter than Asterisk in one place: a line with no `=` is an error here, where Asterisk skips
it with a warning, because carrying a mistake over silently is worse than stopping.

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
#: The include directives: `include` must find its file, the others may not.
_INCLUDES = ("include", "tryinclude", "includeifexists")


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
    #: Lines Asterisk would skip with a warning: file:line and why.
    notes: list[str] = field(default_factory=list)

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


def _strip_comments(text: str, depth: list[int]) -> str:
    """The line without its comments. `depth[0]` counts the `;--` block comments open (they
    nest); inside one only `--;` matters."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == ";":
            if i > 0 and text[i - 1] == "\\" and depth[0] == 0:
                out[-1] = ";"  # an escaped semicolon is text
                i += 1
                continue
            if text.startswith(";--", i) and not text.startswith(";---", i):
                depth[0] += 1
                i += 3
                continue
            if depth[0] > 0 and i >= 2 and text[i - 2 : i] == "--":
                depth[0] -= 1
                i += 1
                continue
            if depth[0] == 0:
                break
        elif depth[0] == 0:
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
        block = [0]
        for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
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
                    # Asterisk skips such a line with a warning; an importer that guessed
                    # would carry a mistake over silently.
                    raise Asl3ConfError(name, number, "no '=' in this line (not 'key = value')")
                if key.endswith("+"):
                    self.append_value(current, key[:-1].strip(), value, name, number)
                    continue
                arrow = value.startswith(">")
                if arrow:
                    value = value[1:]
                key = key.strip()
                if not key:
                    raise Asl3ConfError(name, number, "a line with '=' but no key before it")
                current.entries.append(Entry(key, value.strip(), name, number, arrow))
        return current

    @staticmethod
    def append_value(current: Section, key: str, value: str, name: str, number: int) -> None:
        """`key += value`: appended to the last value of `key` (case-sensitive, as Asterisk
        compares), or a new key when there is none."""
        if not key:
            raise Asl3ConfError(name, number, "a line with '+=' but no key before it")
        for i in range(len(current.entries) - 1, -1, -1):
            old = current.entries[i]
            if old.key == key:
                joined = (old.value + value).strip()
                current.entries[i] = Entry(key, joined, old.file, old.line, old.arrow)
                return
        current.entries.append(Entry(key, value.strip(), name, number))

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
            # Appending finds a section, never a template (Asterisk's lookup skips those).
            earlier = next(
                (
                    s
                    for s in self.conf.sections
                    if s.name.lower() == title.lower() and not s.template
                ),
                None,
            )
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
        word, arg = line[1:], ""
        for i, ch in enumerate(line[1:]):
            if ch <= " ":  # the directive ends at the first blank, as Asterisk reads it
                word, arg = line[1 : i + 1], line[i + 2 :]
                break
        word, arg = word.lower(), arg.strip()
        if len(arg) > 1 and (arg[0], arg[-1]) in (('"', '"'), ("<", ">")):
            arg = arg[1:-1]
        if word == "exec":
            # Asterisk runs #exec only with execincludes set; an importer never runs it.
            self.conf.notes.append(f"{name}:{number}: #exec not run: inline its output")
            return
        if word not in _INCLUDES or not arg:
            # Asterisk warns and goes on.
            self.conf.notes.append(f"{name}:{number}: #{word} ignored, as Asterisk ignores it")
            return
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
