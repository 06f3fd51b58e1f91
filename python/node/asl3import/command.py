"""`node import-asl3`: the I/O around the pure reader, mapper and writer."""

from __future__ import annotations

import glob as globmod
import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from node.asl3import.conf import Asl3ConfError, ConfFile, parse_conf
from node.asl3import.mapper import Asl3Files, map_host, map_node, node_numbers
from node.asl3import.plan import Plan, where_of
from node.asl3import.writer import (
    render_host_report,
    render_host_toml,
    render_report,
    render_toml,
)
from node.config.files import sync_dir, write_synced
from node.errors import ConfigError

__all__ = ["DirFiles", "Imported", "import_asl3", "run"]

DEFAULT_DIR = "/etc/asterisk"
#: Exit status for a configuration that cannot be read or imported (as `serve`'s).
EXIT_CONFIG = 78


class DirFiles:
    """`Files` over a configuration directory; names are relative to it unless absolute."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, name: str) -> Path:
        p = Path(name)
        return p if p.is_absolute() else self.root / p

    def read(self, name: str) -> str | None:
        try:
            return self._path(name).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            raise Asl3ConfError(name, None, f"cannot be read: {exc.strerror}") from exc

    def glob(self, pattern: str) -> list[str]:
        base = self._path(pattern)
        found = sorted(globmod.glob(str(base)))
        if Path(pattern).is_absolute():
            return found
        return [os.path.relpath(f, self.root) for f in found]


def read_asl3(root: Path) -> Asl3Files:
    files = DirFiles(root)

    def conf(name: str) -> ConfFile | None:
        return parse_conf(name, files)

    rpt = conf("rpt.conf")
    if rpt is None:
        raise Asl3ConfError(str(root / "rpt.conf"), None, "does not exist (is this /etc/asterisk?)")
    return Asl3Files(
        rpt=rpt,
        iax=conf("iax.conf"),
        simpleusb=conf("simpleusb.conf"),
        usbradio=conf("usbradio.conf"),
        manager=conf("manager.conf"),
        http_registrations=conf("rpt_http_registrations.conf"),
        echolink=conf("echolink.conf"),
        modules=conf("modules.conf"),
        alsaradio=conf("alsaradio.conf"),
        rpiradio=conf("rpiradio.conf"),
    )


@dataclass(frozen=True, slots=True)
class Imported:
    """What a run did: the report, and whether the files were written."""

    report: str
    written: bool


def import_asl3(root: Path, node: str | None, out: Path, *, force: bool = False) -> Imported:
    """Write `out` and its nodes file for `node` (without `node`, every node of rpt.conf into
    one config), unless a node's radio cannot be driven here and `force` is false. Raises
    Asl3ConfError naming the operator's file and line; a run that raises writes nothing."""
    nodes_name = f"{out.stem}-nodes.conf"
    files = read_asl3(root)
    if node is None and len(node_numbers(files.rpt)) > 1:
        plans = map_host(files, nodes_name)
        _one_node_list(plans)
        _further_passwords(plans)
    else:
        plans = [map_node(files, node, nodes_name)]
    plan = plans[0]
    nodes_path = out.parent / nodes_name
    nodes_shown = str(nodes_path) if plan.nodes_file is not None else None
    host = len(plans) > 1
    if any(p.blockers for p in plans) and not force:
        report = (
            render_host_report(plans, str(out), nodes_shown, written=False)
            if host
            else render_report(plan, str(out), nodes_shown, written=False)
        )
        return Imported(report, False)
    text = render_host_toml(plans, str(root)) if host else render_toml(plan, str(root))
    # Both files are written to a directory of their own beside the target and loaded with the
    # node's own loader there, then moved into place: a mapping this importer got wrong never
    # replaces a config that works, and a failed run leaves nothing behind. Each is on the disk
    # before its rename, and the renames are made durable after: a crash or a power cut leaves
    # the old file or the new one at each name, never half of one.
    with tempfile.TemporaryDirectory(prefix=".import-asl3-", dir=out.parent) as tmp:
        staged = Path(tmp) / out.name
        if plan.nodes_file is not None:
            write_synced(Path(tmp) / nodes_name, plan.nodes_file)
        write_synced(staged, text)
        _check_loads(plans, staged)
        if plan.nodes_file is not None:
            os.replace(Path(tmp) / nodes_name, nodes_path)
        os.replace(staged, out)
    sync_dir(out.parent)
    if host:
        return Imported(render_host_report(plans, str(out), nodes_shown), True)
    return Imported(render_report(plan, str(out), nodes_shown), True)


def _one_node_list(plans: list[Plan]) -> None:
    """The nodes of one config share one nodes file: the first node's node list. A node whose
    own list differs is told so in its report."""
    first = plans[0]
    for plan in plans[1:]:
        if plan.nodes_file is not None and plan.nodes_file != first.nodes_file:
            plan.checks.append(
                f"node {plan.node}'s node list differs from node {first.node}'s; the one nodes "
                f"file holds node {first.node}'s: add what node {plan.node} needs to it"
            )


def _further_passwords(plans: list[Plan]) -> None:
    """A further node that registers takes its password from NET_SECRET_<number> (the first
    node's is NET_SECRET): its report says so."""
    for plan in plans[1:]:
        if "register" not in plan.sections:
            continue
        plan.secrets[:] = [
            f"NET_SECRET_{plan.node}: the password node {plan.node} registered with in ASL "
            "(register => " + f"{plan.node}:<password>@...), in the service's environment "
            "file (mode 0600)"
        ]


def _check_loads(plans: list[Plan], staged: Path) -> None:
    """Load the staged config; a fault is reported where the operator wrote the setting."""
    from node.config import load_config

    # The loader's warnings repeat what the report says (functions not available here).
    config_log = logging.getLogger("node.config")
    level = config_log.level
    config_log.setLevel(logging.ERROR)
    try:
        load_config(staged)
    except ConfigError as exc:
        raise _at_source(plans, exc) from exc
    finally:
        config_log.setLevel(level)


def _at_source(plans: list[Plan], exc: ConfigError) -> Asl3ConfError:
    """A loader error on the written config, named by the ASL setting it came from (a key of
    a further node, `nodes.<number>.<key>`, by that node's)."""
    accepted = f"; accepted: {exc.accepted}" if exc.accepted else ""
    plan, key = plans[0], exc.key
    if key is not None and key.startswith("nodes."):
        number, _, rest = key.removeprefix("nodes.").partition(".")
        plan = next((p for p in plans if p.node == number), plan)
        key = rest or None
    setting = plan.setting_of(key) if key else None
    if setting is None:
        what = f"{exc.key}: " if exc.key else ""
        problem = f"cannot be imported: {what}{exc.problem}"
        return Asl3ConfError(f"node {plan.node}", None, problem + accepted.replace(";", ",", 1))
    file, line = where_of(setting.source)
    named = setting.source.removeprefix(f"{file}:{line}").strip() if line else setting.source
    return Asl3ConfError(file, line, f"{named}: {exc.problem} (as {exc.key} here{accepted})")


def run(asterisk_dir: str, node: str | None, config: str, *, force: bool = False) -> int:
    try:
        done = import_asl3(Path(asterisk_dir), node, Path(config), force=force)
    except Asl3ConfError as exc:
        print(f"import-asl3: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:
        print(f"import-asl3: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    sys.stdout.write(done.report)
    if not done.written:
        print(
            "import-asl3: nothing written: the node's radio cannot be driven here (see Check "
            "before serving); --force writes the node without it",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    return 0
