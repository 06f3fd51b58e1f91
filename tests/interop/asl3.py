"""A real AllStarLink ASL3 node (Asterisk 22 + app_rpt) as a test peer.

The team's shared tree holds a self-contained build (`shared/peers/asl3/`, beside the clone in
CI); `Asl3Node.install` extracts a writable copy into a temporary directory and moves every
fixed port of its configuration to a free one (Asterisk's IAX2 port, the addresses of nodes
1000 and 1001 in its node list, the USRP ports of 1999 and 1998), so it runs beside anything
else on the machine. Nothing of it is committed here: the tests use it like tshark or iaxmodem.

Nodes: 1999 and 1998 are app_rpt nodes on one Asterisk; 1000 and 1001 are in their node list at
`radio@127.0.0.1:<port>`: run the node under test as one of those (`node_port`).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.interop.harness import wait_until
from tests.node_process import free_ports

ROOT = Path(__file__).resolve().parent.parent.parent


def shared_peer_dir() -> Path | None:
    """`shared/peers/asl3` beside the clone (CI) or beside any folder above it."""
    for parent in ROOT.parents:
        candidate = parent / "shared" / "peers" / "asl3"
        if (candidate / "install.sh").is_file():
            return candidate
    return None


def require_asl3() -> Path:
    """The shared ASL3 peer, or skip (fail under CI, which must have it)."""
    found = shared_peer_dir()
    if found is not None:
        return found
    if os.environ.get("CI"):
        pytest.fail("the ASL3 peer (shared/peers/asl3 beside the clone) is required under CI")
    pytest.skip("the ASL3 peer (shared/peers/asl3) is not beside this checkout")


@dataclass
class Asl3Node:
    """One installed copy of the ASL3 peer, with its ports."""

    root: Path
    #: Asterisk's IAX2 port (nodes 1999 and 1998 live behind it).
    iax_port: int
    #: Where ASL3's node list says nodes 1000 and 1001 are.
    node_ports: dict[str, int]
    #: USRP radios: node -> (port ASL3 listens on, port ASL3 transmits to).
    usrp: dict[str, tuple[int, int]]
    #: Length of the messages log when `mark()` was last called.
    _mark: int = field(default=0)

    @classmethod
    def install(cls, dest: Path, source: Path) -> Asl3Node:
        subprocess.run(
            ["bash", str(source / "install.sh"), str(dest)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        iax, n1000, n1001, rx1999, tx1999, rx1998, tx1998 = free_ports(7)
        node = cls(
            dest,
            iax,
            {"1000": n1000, "1001": n1001},
            {"1999": (rx1999, tx1999), "1998": (rx1998, tx1998)},
        )
        etc = dest / "etc" / "asterisk"
        iax_conf = etc / "iax.conf"
        iax_conf.write_text(
            re.sub(r"(?m)^bindport = 4569", f"bindport = {iax}", iax_conf.read_text())
        )
        rpt = (etc / "rpt.conf").read_text()
        for name, port in (("1999", iax), ("1998", iax), ("1000", n1000), ("1001", n1001)):
            rpt = re.sub(
                rf"(?m)^{name} = radio@127\.0\.0\.1:\d+/{name},NONE",
                f"{name} = radio@127.0.0.1:{port}/{name},NONE",
                rpt,
            )
        for name, (rx, tx) in node.usrp.items():
            rpt = re.sub(
                rf"(?m)^(\[{name}\]\(node-main\)\nrxchannel = )USRP/127\.0\.0\.1:\d+:\d+",
                rf"\g<1>USRP/127.0.0.1:{tx}:{rx}",
                rpt,
            )
        (etc / "rpt.conf").write_text(rpt)
        return node

    @property
    def aslpeer(self) -> str:
        return str(self.root / "bin" / "aslpeer")

    @property
    def iax_addr(self) -> str:
        return f"127.0.0.1:{self.iax_port}"

    def start(self, attempts: int = 3) -> None:
        """Start Asterisk and wait for app_rpt's nodes. app_rpt now and then dies while it
        starts its node threads on a loaded host (its log stops after the first node's init):
        such a start is retried from scratch, a few times."""
        for attempt in range(1, attempts + 1):
            # Asterisk runs with -g: a crash dumps core in its working directory, the copy.
            subprocess.run(
                [self.aslpeer, "start", "asterisk"], check=True, timeout=60, cwd=self.root
            )
            try:
                wait_until("app_rpt's nodes", self._nodes_ready, 60)
                return
            except AssertionError:
                self.stop()
                if attempt == attempts:
                    raise
                time.sleep(1.0)

    def _nodes_ready(self) -> bool:
        if not self.running():
            raise AssertionError("asterisk exited while app_rpt started")
        return all("RPT_TXKEYED" in self.cli(f"rpt show variables {n}") for n in ("1999", "1998"))

    def running(self) -> bool:
        r = subprocess.run([self.aslpeer, "status", "asterisk"], capture_output=True, timeout=30)
        return r.returncode == 0

    def stop(self) -> None:
        subprocess.run([self.aslpeer, "stop", "asterisk"], timeout=60, capture_output=True)

    def cli(self, command: str) -> str:
        r = subprocess.run(
            [self.aslpeer, "cli", "asterisk", command], capture_output=True, text=True, timeout=30
        )
        return r.stdout

    def variables(self, node: str) -> dict[str, str]:
        """`rpt show variables N` as a dict (`RPT_ALINKS` -> `1,1000TK`)."""
        out = {}
        for line in self.cli(f"rpt show variables {node}").splitlines():
            name, eq, value = line.strip().partition("=")
            if eq:
                out[name] = value
        return out

    def links(self, node: str) -> dict[str, str]:
        """`rpt lstats N`: linked node -> its connect state (ESTABLISHED, CONNECTING...)."""
        rows = {}
        for line in self.cli(f"rpt lstats {node}").splitlines():
            cols = line.split()
            if cols and cols[0].isdigit():
                rows[cols[0]] = cols[-1]
        return rows

    def log(self) -> str:
        path = self.root / "var" / "asterisk" / "log" / "messages.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def mark(self) -> None:
        """Start a new stretch of the log for `warnings()`."""
        self._mark = len(self.log())

    def warnings(self, about: str = "") -> list[str]:
        """WARNING and ERROR lines logged since `mark()` that contain `about`."""
        tail = self.log()[self._mark :]
        return [
            line
            for line in tail.splitlines()
            if ("WARNING" in line or "ERROR" in line) and about in line
        ]
