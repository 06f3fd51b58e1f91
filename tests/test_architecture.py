"""The map stays true: docs/architecture.md names every room of the house (a package or a
top-level module of python/node/, a module or folder of rust/) and no room that is gone; the
floors it gives hold (no room imports a room above its own floor, and no imports make a
circle); config/ imports nothing above the ground; no service or protocol core calls the router
or arms a loop timer of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "node"
RUST = ROOT / "rust"
DOC = ROOT / "docs" / "architecture.md"

CODE = re.compile(r"`([^`]+)`")


def python_rooms() -> set[str]:
    rooms = set()
    for path in PACKAGE.iterdir():
        if path.is_dir() and not path.name.startswith("__"):
            if (path / "__init__.py").exists() or any(path.glob("*.*")):
                rooms.add(path.name + "/")
        elif path.suffix == ".py" and path.name != "__init__.py":
            rooms.add(path.name)
    return rooms


def rust_rooms() -> set[str]:
    rooms = set()
    for path in RUST.iterdir():
        if path.is_dir():
            rooms.add(f"rust/{path.name}/")
        elif path.suffix == ".rs":
            rooms.add(f"rust/{path.name}")
    return rooms


def doc_text() -> str:
    """The page without its fenced drawing (whose fences would pair backticks wrongly)."""
    return re.sub(r"```.*?```", "", DOC.read_text(), flags=re.S)


def floors() -> list[tuple[str, list[str]]]:
    """The floors table of the doc, top down: (floor, rooms)."""
    text = doc_text()
    start = text.index("| floor | rooms |")
    out = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        _, floor, rooms, _ = line.split("|")
        out.append((floor.strip(), CODE.findall(rooms)))
    return out


def named() -> set[str]:
    """Every room the doc names in backticks (python rooms as `x/` or `x.py`, Rust ones as
    `rust/x.rs` or `rust/x/`)."""
    return set(CODE.findall(doc_text()))


def test_every_room_is_on_the_map_and_every_room_on_the_map_exists() -> None:
    rooms = python_rooms() | rust_rooms()
    missing = sorted(rooms - named())
    assert not missing, f"docs/architecture.md does not name {missing}"
    shown = {r for r in named() if r.startswith("rust/") and r.endswith((".rs", "/"))} - {"rust/"}
    assert not shown - rust_rooms(), f"named but gone: {sorted(shown - rust_rooms())}"
    on_floors = [room for _, rs in floors() for room in rs]
    assert sorted(on_floors) == sorted(set(on_floors)), "a room on two floors"
    assert set(on_floors) == python_rooms(), (
        f"floors table: missing {sorted(python_rooms() - set(on_floors))}, "
        f"gone {sorted(set(on_floors) - python_rooms())}"
    )


def _room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "node" or len(parts) < 2 or parts[1] in ("_core", "__version__"):
        return None  # the package itself, or the native module under everything
    name = parts[1]
    return name + "/" if (PACKAGE / name).is_dir() else name + ".py"


def imports() -> dict[str, dict[str, set[str]]]:
    """room -> room it imports -> the files that do (at any depth: lazy imports count)."""
    edges: dict[str, dict[str, set[str]]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        room = rel.parts[0] + "/" if len(rel.parts) > 1 else rel.name
        if room == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            modules: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
                if node.module == "node":
                    modules = [f"node.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            for module in modules:
                target = _room_of(module)
                if target is not None and target != room:
                    edges.setdefault(room, {}).setdefault(target, set()).add(rel.as_posix())
    return edges


def test_no_room_imports_a_room_above_its_floor() -> None:
    level = {room: i for i, (_, rooms) in enumerate(floors()) for room in rooms}
    upward = [
        f"{room} imports {target} ({', '.join(sorted(files))})"
        for room, targets in imports().items()
        for target, files in targets.items()
        if level[target] < level[room]
    ]
    assert not upward, "\n".join(upward)


def test_the_rooms_imports_make_no_circle() -> None:
    edges = {room: set(targets) for room, targets in imports().items()}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(room: str) -> None:
        state[room] = 1
        path.append(room)
        for target in sorted(edges.get(room, ())):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[room] = 2

    for room in sorted(edges):
        if room not in state:
            visit(room)


def test_config_imports_nothing_above_the_ground() -> None:
    allowed = {"errors.py", "credential.py", "wg_key.py", "secrets.py"}
    assert set(imports().get("config/", {})) <= allowed, imports()["config/"]


SERVICES_AND_CORES = [
    "calls",
    "links",
    "registration",
    "radio",
    "announce",
    "commands",
    "iax2",
    "allstar",
    "port.py",
    "machine.py",
]


def _sources() -> list[Path]:
    out: list[Path] = []
    for name in SERVICES_AND_CORES:
        where = PACKAGE / name
        out += [where] if where.suffix == ".py" else sorted(where.rglob("*.py"))
    return out


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_services_and_cores_never_call_the_router_or_arm_a_timer(path: Path) -> None:
    """The router's callbacks are gone from the context, and only the router holds a loop
    timer: no `call_later`/`call_at`, no `DeadlineTimer`, no `asyncio.sleep` in a loop. The
    serial COS poll of `radio/carrier.py` is the hardware edge's own."""
    rel = path.relative_to(PACKAGE).as_posix()
    text = path.read_text()
    assert "ctx.changed" not in text and "ctx.rearm" not in text
    assert "controller" not in {
        alias.name.split(".")[1]
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("node.")
        for alias in [ast.alias(node.module)]
    }
    if rel == "radio/carrier.py":
        return
    for word in ("call_later(", "call_at(", "DeadlineTimer(", "asyncio.sleep("):
        assert word not in text, f"{rel} arms its own timer ({word})"
