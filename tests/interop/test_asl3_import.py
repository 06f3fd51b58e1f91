"""An ASL3 node's own configuration, imported with `node import-asl3`, links to the real ASL3
node as it did under app_rpt.

The operator's /etc/asterisk is the shipped one of the ASL3 peer (its ports moved by the
fixture) with node 1000 added as ASL3 would hold it: a hub stanza on the `node-main` template,
a permanent link to 1999 in its `startup_macro` (`ilink,13`, appended to `[functions]` with
`(+)`), and an IAX2 `register =>` line. Imported, our node is 1000 with the node list of the
ASL3 node: at start it dials 1999 from the imported nodes file, with no address given.

Without the `register =>` line (a private node, as ASL3's shipped 1999 and 1998 are) the import
has no `[register]`: the node serves with its top-level `node_id` alone, needs no NET_NODE or
NET_SECRET, and ASL3 still sees 1000 link and key.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from contextlib import suppress
from pathlib import Path

import pytest

from node.asl3import.command import import_asl3
from tests.interop.asl3 import Asl3Node
from tests.interop.harness import wait_until
from tests.interop.test_asl3_live import asl3  # noqa: F401  (the running ASL3 node fixture)
from tests.node_process import NodeProcess, free_port

CANARY = "CANARY-import-register-password"


def operator_config(peer: Asl3Node, dest: Path, *, registers: bool = True) -> Path:
    """ASL3's configuration with node 1000 added the way an operator adds a node (with an IAX2
    `register =>` line when `registers`)."""
    etc = dest / "asterisk"
    shutil.copytree(peer.root / "etc" / "asterisk", etc)
    port = peer.node_ports["1000"]
    with (etc / "rpt.conf").open("a") as f:
        f.write(
            "\n[functions](+)\n813 = ilink,13 ; permanent connect\n\n"
            "[1000](node-main)\nrxchannel = Local/pseudo\nstartup_macro = *8131999\n"
        )
    iax = (etc / "iax.conf").read_text()
    iax = re.sub(r"(?m)^bindport = \d+", f"bindport = {port}", iax, count=1)
    if registers:
        # A registrar nobody answers: linking must not wait for registration.
        iax = iax.replace("[general]\n", f"[general]\nregister => 1000:{CANARY}@127.0.0.1:9\n", 1)
    (etc / "iax.conf").write_text(iax)
    return etc


@pytest.mark.parametrize("registers", [True, False], ids=["registered", "private"])
def test_imported_node_links_to_asl3_from_its_own_config(
    tmp_path: Path,
    asl3: Asl3Node,  # noqa: F811
    registers: bool,
) -> None:
    etc = operator_config(asl3, tmp_path, registers=registers)
    out = tmp_path / "node.toml"
    done = import_asl3(etc, "1000", out)
    report = done.report
    assert done.written
    assert CANARY not in report and CANARY not in out.read_text()
    assert ("NET_NODE=1000 and NET_SECRET" in report) is registers
    assert ("\n[register]\n" in out.read_text()) is registers
    http = free_port()
    out.write_text(out.read_text().replace("127.0.0.1:8730", f"127.0.0.1:{http}"))
    env = {"NET_NODE": "1000", "NET_SECRET": CANARY} if registers else {}
    node = NodeProcess(out, asl3.node_ports["1000"], http, env=env)
    try:
        node.wait_ready()
        assert node.get("/status").json()["node_id"] == "1000"
        wait_until(
            "ASL3 lists 1000 established",
            lambda: asl3.links("1999").get("1000") == "ESTABLISHED",
            timeout=30,
        )
        links = {li["node"]: li for li in node.get("/status").json()["links"]}
        assert links["1999"]["direction"] == "outbound"
        assert node.post("/key", json={}).status_code == 200
        wait_until(
            "1000TK on ASL3", lambda: "1000TK" in asl3.variables("1999").get("RPT_ALINKS", "")
        )
        assert node.post("/unkey", json={}).status_code == 200
    finally:
        if node.proc.poll() is None:
            node.signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                node.wait(timeout=10)
        node.kill()
    assert CANARY not in "".join(node.communicate())
    wait_until("ASL3 drops 1000", lambda: "1000" not in asl3.links("1999"), timeout=30)
