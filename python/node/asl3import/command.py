"""`node import-asl3`: the I/O around the pure reader, mapper and writer."""

from __future__ import annotations

import glob as globmod
import logging
import os
import sys
from pathlib import Path

from node.asl3import.conf import Asl3ConfError, ConfFile, parse_conf
from node.asl3import.mapper import Asl3Files, map_node
from node.asl3import.writer import render_report, render_toml
from node.errors import ConfigError

__all__ = ["DirFiles", "import_asl3", "run"]

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
    )


def import_asl3(root: Path, node: str | None, out: Path) -> str:
    """Write `out` (and its nodes file) for `node`; the report. Raises Asl3ConfError."""
    nodes_name = f"{out.stem}-nodes.conf"
    plan = map_node(read_asl3(root), node, nodes_name)
    nodes_path = out.parent / nodes_name
    if plan.nodes_file is not None:
        nodes_path.write_text(plan.nodes_file)
    # Written beside the target and checked with the node's own loader first, so a mapping
    # this importer got wrong never replaces a config that works.
    tmp = out.with_name(out.name + ".import-tmp")
    tmp.write_text(render_toml(plan, str(root)))
    from node.config import load_config

    # The loader's warnings repeat what the report says (functions not available here).
    config_log = logging.getLogger("node.config")
    level = config_log.level
    config_log.setLevel(logging.ERROR)
    try:
        load_config(tmp)
    except ConfigError as exc:
        tmp.unlink()
        raise Asl3ConfError(str(out), None, f"the written config does not load: {exc}") from exc
    finally:
        config_log.setLevel(level)
    os.replace(tmp, out)
    return render_report(plan, str(out), str(nodes_path) if plan.nodes_file else None)


def run(asterisk_dir: str, node: str | None, config: str) -> int:
    try:
        report = import_asl3(Path(asterisk_dir), node, Path(config))
    except Asl3ConfError as exc:
        print(f"import-asl3: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:
        print(f"import-asl3: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    sys.stdout.write(report)
    return 0
