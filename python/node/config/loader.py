"""Reading a TOML file into a `NodeConfig`, and turning every fault into one `ConfigError`.

Each table is checked against its section's declared keys (an unknown key and a missing required
key are errors, never ignored); each value is read by its key's parser or checked by msgspec
against its declared type and bounds; then the rules between keys run. A fault becomes a
`ConfigError` naming the file, the dotted key and what is accepted, worded from the declaration
(never from the library's text, and never repeating a string from the file: an operator may have
pasted a password into the wrong key). tomllib gives line and column for syntax errors; values
carry no position, so value errors name the key.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn, get_args

import msgspec

from node.config.functions import read_functions, read_macros, read_schedule
from node.config.network import LinkConfig, LinksKeys
from node.config.node import (
    FIRST_NODE_ONLY,
    NODES_TABLE,
    SECTIONS,
    SHARED_KEYS,
    TOP_KEYS,
    NodeConfig,
)
from node.config.rules import SECTION_RULES, check_host, check_node, warn_risky
from node.config.schema import Key, keys_of
from node.config.values import NODE_ID, Context, FrozenDict, Invalid, toml_type
from node.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

__all__ = ["load_config"]

_REQUIRED = tuple(s.name for s in SECTIONS if s.required)
#: What a `[nodes.<number>]` table may hold (named in the error for a shared key given there).
_NODE_KEYS = tuple(f"[{s.name}]" for s in SECTIONS if not s.shared)
#: How `_describe` names the members of a union type ("an integer or a string").
_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def load_config(
    path: str | os.PathLike[str], *, exclude: frozenset[str] = frozenset()
) -> NodeConfig:
    """Read and validate a config file. Raises `ConfigError` for every problem found.
    `exclude` leaves those further nodes (`[nodes.<number>]`) out (a reload that keeps a node
    whose table has an error on its running configuration)."""
    return _Loader(Path(path), exclude=exclude).load()


class _Loader:
    def __init__(self, path: Path, prefix: str = "", exclude: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.exclude = exclude
        #: Where the node being read sits in the file: "" for the first node (the top level),
        #: "nodes.<number>." for a further one, so every fault names the node and its key.
        self.prefix = prefix

    def fail(
        self, key: str | None, problem: str, accepted: Iterable[str] | str | None = None
    ) -> NoReturn:
        where = key if key is None else f"{self.prefix}{key}"
        raise ConfigError(str(self.path), where, problem, accepted)

    def load(self) -> NodeConfig:
        doc = _read_toml(self.path)
        further = doc.pop(NODES_TABLE, None)
        first = self.node(doc)
        if further is None:
            return first
        if not isinstance(further, dict):
            self.fail(
                NODES_TABLE,
                f"must be a table of nodes ([nodes.<number>]), got {toml_type(further)}",
            )
        shared = {k: doc[k] for k in SHARED_KEYS if k in doc and k not in FIRST_NODE_ONLY}
        nodes = tuple(
            self.further(number, body, shared)
            for number, body in further.items()
            if number not in self.exclude
        )
        config = dataclasses.replace(first, nodes=nodes)
        check_host(config, self.fail)
        return config

    def further(self, number: str, body: object, shared: dict[str, Any]) -> NodeConfig:
        """One `[nodes.<number>]` table: a node of its own over the file's shared sections."""
        where = f"{NODES_TABLE}.{number}"
        if not NODE_ID.fullmatch(number):
            self.fail(where, "is not a node number", "[nodes.<digits>] tables, e.g. [nodes.2001]")
        if not isinstance(body, dict):
            self.fail(where, f"must be a table ([{where}]), got {toml_type(body)}")
        for key in body:
            if key in SHARED_KEYS:
                self.fail(
                    f"{where}.{key}",
                    "is shared by every node of the host; give it once, at the top of the file",
                    f"the keys of a node: {', '.join(_NODE_KEYS)}",
                )
            if key == "node_id":
                self.fail(
                    f"{where}.node_id",
                    f"the table's name is the node's number ({number})",
                    "no node_id inside [nodes.<number>]",
                )
        return _Loader(self.path, f"{where}.").node({**shared, **body, "node_id": number})

    def node(self, doc: dict[str, Any]) -> NodeConfig:
        """One node: the shared sections and its own, checked as a whole file."""
        names = tuple(s.name for s in SECTIONS)
        for key, value in doc.items():
            if key not in TOP_KEYS and key not in names:
                kind = "section" if isinstance(value, dict) else "top-level key"
                accepted = [*(f"[{s}]" for s in names), *TOP_KEYS]
                if not self.prefix:
                    accepted.append(f"[{NODES_TABLE}.<number>]")
                self.fail(key, f"unknown {kind}", accepted)
        for name in _REQUIRED:
            if name not in doc:
                self.fail(name, f"the required section [{name}] is missing")

        top = {k.name: k for k in keys_of(NodeConfig)}
        fields: dict[str, Any] = {
            name: self.value(top[name], doc[name], name, Context(self.path, doc))
            for name in TOP_KEYS
            if name in doc
        }
        for section in SECTIONS:
            if section.name not in doc:
                continue
            raw = doc[section.name]
            if section.free:
                fields[section.name] = self.free(section.name, raw)
            elif section.model is LinksKeys:
                fields.update(self.links(raw))
            else:
                fields[section.name] = self.table(raw, section.model, section.name)
        config = NodeConfig(**fields, path=self.path)
        check_node(config, self.fail)
        warn_risky(config, self.prefix)
        return config

    def table(self, raw: object, model: type, name: str) -> Any:
        """One table read into its section: keys checked, values read, rules run."""
        keys = keys_of(model)
        t = self.keys(raw, name, tuple(k.name for k in keys), [k.name for k in keys if k.required])
        ctx = Context(self.path, t)
        values = {
            k.name: self.value(k, t[k.name], f"{name}.{k.name}", ctx) for k in keys if k.name in t
        }
        section = model(**values)
        rule = SECTION_RULES.get(name)
        return rule(section, t, self.fail) if rule is not None else section

    def keys(
        self, raw: object, name: str, allowed: tuple[str, ...], required: Iterable[str] = ()
    ) -> dict[str, Any]:
        """Check that `raw` is a table holding only `allowed` keys and every `required` one."""
        if not isinstance(raw, dict):
            self.fail(name, f"must be a table ([{name}]), got {toml_type(raw)}")
        for key in raw:
            if key in TOP_KEYS and key not in allowed:
                # TOML puts every key after a [header] into that table: the classic slip.
                self.fail(
                    f"{name}.{key}",
                    f"{key} is a top-level key; move it above the first [section] of the file",
                )
            if key not in allowed:
                self.fail(f"{name}.{key}", f"unknown key in [{name}]", allowed)
        for key in required:
            if key not in raw:
                self.fail(f"{name}.{key}", f"is required in [{name}]")
        return raw

    def value(self, key: Key, raw: object, dotted: str, ctx: Context) -> Any:
        """One value: a subtable, a parsed value, or a plain one msgspec checks."""
        if key.section is not None:
            return self.table(raw, key.section, dotted)
        if key.tables:
            t = self.keys(raw, dotted, key.tables)
            model = get_args(key.type)[1]
            read = {n: self.table(body, model, f"{dotted}.{n}") for n, body in t.items()}
            return FrozenDict({**key.default, **read})
        # Failures are raised outside the `except` blocks, so no library exception (whose text
        # may quote the value) rides along as the ConfigError's context.
        if key.parse is not None:
            try:
                return key.parse(raw, ctx)
            except Invalid as exc:
                invalid = exc
            where = dotted if invalid.item is None else f"{dotted}[{invalid.item}]"
            self.fail(where, invalid.problem, invalid.accepted)
        try:
            return msgspec.convert(raw, key.hint)
        except msgspec.ValidationError:
            pass
        # Only the key is taken from the fault; the words come from the declaration.
        self.fail(dotted, *_describe(key, raw))

    def free(self, name: str, raw: object) -> Any:
        """`[functions]`, `[macro]`, `[schedule]`: tables whose keys are the operator's."""
        if name == "functions":
            return read_functions(raw, self.fail, self.path)
        if name == "macro":
            return FrozenDict(read_macros(raw, self.fail))
        return read_schedule(raw, self.fail)

    def links(self, raw: object) -> dict[str, Any]:
        """`[links]`: its own keys, spread over `NodeConfig`, and one table per node."""
        if not isinstance(raw, dict):
            self.fail("links", f"must be a table ([links]), got {toml_type(raw)}")
        names = tuple(k.name for k in keys_of(LinksKeys))
        nodes: dict[str, LinkConfig] = {}
        for key, body in raw.items():
            if key in names:
                continue
            if not NODE_ID.fullmatch(key):
                self.fail(
                    f"links.{key}",
                    "is neither a [links] key nor a [links.<node_id>] table with a numeric node id",
                    [*names, "[links.<digits>] tables"],
                )
            nodes[key] = self.table(body, LinkConfig, f"links.{key}")
        own = self.table({k: v for k, v in raw.items() if k in names}, LinksKeys, "links")
        return {
            "links": FrozenDict(nodes),
            "nodes_file": own.nodes_file,
            "verify_source_ip": own.verify_source_ip,
            "dns": own.dns_config(),
            "link_warn_loss_pct": float(own.warn_loss_pct),
            "link_warn_rtt_ms": own.warn_rtt_ms,
        }


def _describe(key: Key, raw: object) -> tuple[str, Iterable[str] | str | None]:
    """What is wrong with `raw` for `key`, and what is accepted, worded from the declaration.

    The value itself is not repeated: it may be a secret pasted into the wrong key.
    """
    got = toml_type(raw)
    choices = key.choices
    if choices is not None:
        if type(raw) is not str:
            return f"must be a string, got {got}", choices
        return "is not one of the accepted values", choices
    if key.type is bool:
        return f"must be a boolean, got {got}", "true, false"
    if key.type is int:
        accepted = f"an integer from {key.ge} to {key.le}"
        if type(raw) is not int:
            return f"must be an integer, got {got}", accepted
        return f"{raw} is out of range", accepted
    if key.type is float:
        accepted = f"a number from {key.ge} to {key.le}"
        if type(raw) not in (int, float):
            return f"must be a number, got {got}", accepted
        return f"{float(raw)} is out of range", accepted  # type: ignore[arg-type]
    if key.type is str:
        return f"must be a string, got {got}", key.accepted
    kinds = [_KINDS[t] for t in get_args(key.type) if t in _KINDS]
    return f"must be {' or '.join(kinds) or 'another type'}, got {got}", key.accepted


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(str(path), None, "file not found") from None
    except IsADirectoryError:
        raise ConfigError(str(path), None, "is a directory, not a config file") from None
    except OSError as exc:
        raise ConfigError(str(path), None, f"cannot read the file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(str(path), None, f"not UTF-8 text (line {line})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message names the position ("(at line 3, column 7)") and never the value.
        raise ConfigError(str(path), None, f"TOML syntax error: {exc}") from None
