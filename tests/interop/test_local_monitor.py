"""Local monitor (`*75`, app_rpt's ilink 8) end to end: node A local-monitors node B; what B
sends plays on A's local radio only, so a phone on A hears none of it, until the link becomes an
ordinary monitor link in place and the phone hears B.

    softphone P --call--> node A (2001) <--local monitor link-- node B (2002)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.interop.harness import (
    NODE_A,
    NODE_B,
    link_state,
    node_pair,
    wait_until,
)
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess

PHONE_P = "3001"
PHONE_SECRET = "phone-pass-p"


def link_of(node: NodeProcess, peer: str) -> dict[str, Any]:
    return next(li for li in node.get("/status").json()["links"] if li["node"] == peer)


def test_a_local_monitor_link_is_not_heard_by_the_calls(
    tmp_path: Path, registrar: Registrar
) -> None:
    with (
        node_pair(
            tmp_path,
            registrar,
            codec_policy="ulaw_only",
            a_env={f"NET_PEER_{PHONE_P}": PHONE_SECRET},
        ) as (a, b),
        Softphone(codec_policy="ulaw_only", name="P") as p,
    ):
        cp = p.dial(a.udp_addr, "1", username=PHONE_P, secret=PHONE_SECRET)
        assert p.wait_for(lambda s: s.answered(cp))
        r = a.post("/link", json={"action": "local_monitor", "node": NODE_B})
        assert r.status_code == 200, r.text
        wait_until("the link up on B", lambda: link_state(b, NODE_A) == "up")
        wait_until("the link up on A", lambda: link_state(a, NODE_B) == "up")
        assert link_of(a, NODE_B)["mode"] == "local_monitor"

        def b_talks() -> int:
            before = p.heard_ms(cp)
            assert b.post("/key", json={}).status_code == 200
            wait_until("A hears B", lambda: link_of(a, NODE_B)["keyed"])
            time.sleep(1.5)
            assert b.post("/unkey", json={}).status_code == 200
            wait_until("B unkeyed on A", lambda: not link_of(a, NODE_B)["keyed"])
            time.sleep(0.3)
            return p.heard_ms(cp) - before

        assert b_talks() == 0
        # The same link as a plain monitor link: now the phone hears B.
        assert a.post("/link", json={"action": "monitor", "node": NODE_B}).status_code == 200
        assert link_of(a, NODE_B)["mode"] == "monitor"
        assert b_talks() > 1000
