"""The commented template `node serve` writes when the config file is missing, generated from the
declarations, so it can never drift from what the loader accepts.

It loads with `load_config` to exactly `NodeConfig()` and never holds a secret. Conventions,
relied on by the tests: prose comments start with `# `; settings that are switched off start with
`#` directly followed by the setting (`#mode = ...`, `#[bridge]`), so removing that one `#`
switches them on with the value shown (the default, or the key's example).
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from typing import Any, get_args

from node.config.files import write_whole
from node.config.network import LinkConfig, LinksKeys
from node.config.node import SECTIONS, TOP_KEYS, NodeConfig
from node.config.schema import Key, keys_of
from node.config.values import Address

__all__ = ["iter_template_keys", "render_template", "write_template"]

#: Comment text is wrapped to this width, so a line with its `# ` stays within 97 characters.
_WIDTH = 95

_HEADER = """\
# iax-node configuration (TOML).
#
# Written because the config file did not exist; the node runs with these safe defaults.
# Required sections: [listener] and [control]. Everything else is optional. Unknown sections
# and keys are errors, never silently ignored.
#
# Lines such as `#mode = "bridge"` are settings switched off: remove the `#` to use them. The
# value shown is the default, unless the comment says it is an example.
# Keys marked EXTENSION are not in the product spec; they exist because operators need them.
#
# SIGHUP (systemctl reload) re-reads this file and the peers file: [listener] settings other
# than bind, [secrets] peers_file and [links] nodes_file apply to new calls at once, calls that
# are up stay up; any other change needs a restart and the log names it. A file that does not
# load changes nothing.
"""


def _comment(text: str, *, ext: bool = False) -> list[str]:
    """`text` as comment lines: each line a paragraph, wrapped; indented lines kept as written."""
    if ext:
        text = f"EXTENSION. {text}" if text else "EXTENSION."
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            wrapped = textwrap.wrap(
                " ".join(paragraph),
                _WIDTH,
                break_long_words=False,
                break_on_hyphens=False,
            )
            out.extend(f"# {line}" for line in wrapped)
            paragraph.clear()

    for line in text.split("\n") if text else []:
        if line.startswith(" "):
            out.append(f"# {line}")
        else:
            paragraph.append(line)
            flush()
    return out


def _toml(value: Any) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Address)):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _keys(model: type, name: str, *, on: bool) -> list[str]:
    """The keys of one table, then its subtables."""
    lines: list[str] = []
    later: list[str] = []
    for key in keys_of(model):
        if key.section is not None:
            later += ["", *_table(key.section, f"{name}.{key.name}", on=False)]
        elif key.tables:
            later += ["", *_subtables(key, name)]
        elif key.show != "hidden":
            lines += _comment(key.doc, ext=key.ext)
            lines.append(_setting(key, on=on))
    return lines + later


def _setting(key: Key, *, on: bool) -> str:
    setting = f"{key.name} = {_toml(key.shown)}"
    if key.show == "prose":
        return f"# {setting}"
    return setting if on and key.show == "on" else f"#{setting}"


def _subtables(key: Key, name: str) -> list[str]:
    """A mapping key written as one switched-off table per name (`[announce.events.*]`)."""
    model = get_args(key.type)[1]
    lines = _comment(key.doc, ext=key.ext)
    for table in key.tables:
        lines += _comment(key.notes.get(table, ""))
        lines.append(f"#[{name}.{key.name}.{table}]")
        lines += _keys(model, f"{name}.{key.name}.{table}", on=False)
    return lines


def _table(model: type, name: str, *, on: bool) -> list[str]:
    note = _comment(getattr(model, "NOTE", ""))
    if on:
        return [f"[{name}]", *note, *_keys(model, name, on=True)]
    return [*note, f"#[{name}]", *_keys(model, name, on=False)]


def render_template() -> str:
    """The template's text."""
    lines = [_HEADER]
    top = {k.name: k for k in keys_of(NodeConfig)}
    for name in TOP_KEYS:
        lines += [*_comment(top[name].doc, ext=top[name].ext), _setting(top[name], on=True)]
    for section in SECTIONS:
        if section.free:
            # Its keys are the operator's: an example in prose, never a setting.
            lines += ["", f"# [{section.name}]", *_comment(getattr(section.model, "NOTE", ""))]
            continue
        lines += ["", *_table(section.model, section.name, on=section.written)]
        if section.model is LinksKeys:
            example = f"{section.name}.{LinkConfig.EXAMPLE_NODE}"
            lines += _table(LinkConfig, example, on=False)
    return "\n".join(lines) + "\n"


def iter_template_keys() -> Iterator[str]:
    """Every dotted key the loader accepts, for tests and docs that must cover them all."""
    yield from TOP_KEYS
    for section in SECTIONS:
        yield from _dotted(section.model, section.name)
    yield from _dotted(LinkConfig, "links.<node_id>")


def _dotted(model: type, name: str) -> Iterator[str]:
    for key in keys_of(model):
        if key.section is not None:
            yield from _dotted(key.section, f"{name}.{key.name}")
        elif key.tables:
            for table in key.tables:
                yield from _dotted(get_args(key.type)[1], f"{name}.{key.name}.{table}")
        else:
            yield f"{name}.{key.name}"


def write_template(path: str | os.PathLike[str]) -> None:
    """Write the commented template to `path` whole (`write_whole`, mode 0644: it holds no
    secret and the operator should read it without sudo), creating parent dirs.

    The template loads to exactly `NodeConfig()`.
    """
    write_whole(path, render_template(), mode=0o644)
