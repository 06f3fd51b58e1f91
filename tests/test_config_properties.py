"""Property tests of the config loader: arbitrary TOML documents.

Whatever the document, `load_config` returns a `NodeConfig` or raises `ConfigError`, never
another exception, and neither the error nor any warning logged while loading repeats a string
value planted in the file (an operator may have pasted a password into the wrong key).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from node.config import NodeConfig, iter_template_keys, load_config
from node.config.node import SECTIONS, TOP_KEYS
from node.errors import ConfigError

CANARY = "Planted-7f3a-hunter2"

#: Every declared key, with a node id where the template has a placeholder.
KEYS = [k.replace("<node_id>", "2000") for k in iter_template_keys()]
NAMES = [s.name for s in SECTIONS]

planted = st.one_of(
    st.just(CANARY),
    st.builds(lambda a, b: f"{a}{CANARY}{b}", st.text(max_size=6), st.text(max_size=6)),
    # Shapes the parsers split before judging: an address, a list entry, a path, a key.
    st.sampled_from(
        [f"{CANARY}:4569", f"127.0.0.1:{CANARY}", f"/etc/{CANARY}", f"{CANARY}=", f"T{CANARY}"]
    ),
)
scalars = st.one_of(
    planted,
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["", "0", "auto", "off", "none", "127.0.0.1:4569", "2000", "ulaw"]),
)
nested = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=8), inner, max_size=3),
    ),
    max_leaves=8,
)
#: Mostly scalars, so that most documents get past the type checks to the parsers and rules.
values = st.one_of(scalars, scalars, scalars, nested)


def put(doc: dict[str, Any], dotted: str, value: object) -> None:
    """Set `dotted` in `doc`, unless a scalar already sits on the way (first one wins)."""
    *parents, leaf = dotted.split(".")
    table = doc
    for part in parents:
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            return
    table.setdefault(leaf, value)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    # The required sections, most of the time, so that the values are judged at all.
    for name in ("listener", "control"):
        if draw(st.integers(0, 19)) > 0:
            doc[name] = {}
    for dotted in draw(st.lists(st.sampled_from(KEYS), max_size=8)):
        put(doc, dotted, draw(values))
    for dotted in draw(st.lists(st.sampled_from([*NAMES, *TOP_KEYS, "x"]), max_size=1)):
        put(doc, f"{dotted}.{draw(st.text(max_size=6))}", draw(values))
    return doc


def key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return key(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f"{key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def to_toml(doc: dict[str, Any]) -> str:
    """Top-level scalars first, then each top-level table with its keys as dotted keys."""
    lines = [f"{key(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{key(name)}]")
            lines.extend(f"{key(k)} = {toml_value(v)}" for k, v in table.items())
    return "\n".join(lines) + "\n"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


def load_checked(path: Path, text: str) -> NodeConfig | ConfigError:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    records = Records()
    root = logging.getLogger()
    root.addHandler(records)
    try:
        config = load_config(path)
    except ConfigError as err:
        shown = [str(err), repr(err), *map(str, err.args), str(err.accepted), str(err.key)]
        assert not any(CANARY in s for s in shown), str(err)
        result: NodeConfig | ConfigError = err
    else:
        assert isinstance(config, NodeConfig)
        result = config
    finally:
        root.removeHandler(records)
    assert not any(CANARY in s for s in records.texts), records.texts
    return result


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("config") / "node.toml"


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents())
def test_any_document_is_a_config_or_a_config_error(path: Path, doc: dict[str, Any]) -> None:
    load_checked(path, to_toml(doc))


@settings(max_examples=200)
@given(text=st.text(max_size=120), at=st.integers(0, 120))
def test_any_text_is_a_config_or_a_config_error(path: Path, text: str, at: int) -> None:
    load_checked(path, text[:at] + CANARY + text[at:])
