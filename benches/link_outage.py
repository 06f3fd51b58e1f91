"""Permanent links through a long outage, against a real ASL3 node: how long until both are up.

Not a pytest benchmark (nothing here is collected): a script for outages too long for the
suite (which runs 30 s in `tests/interop/test_asl3_live.py`). Our node runs as 1001 behind two
relays: our permanent link to ASL3's 1999, and 1998's permanent link to us (app_rpt's
`ilink 13`). The relays go dead for `--seconds`, then come back; the script prints one JSON line
per run: when each side noticed, and how long after the path's return both links were up.

    python benches/link_outage.py                 # 5 minutes, once
    python benches/link_outage.py --seconds 30 --repeat 3

Needs the team's ASL3 build (`shared/peers/asl3/` beside the clone).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.interop.asl3 import Asl3Node, shared_peer_dir  # noqa: E402
from tests.interop.harness import free_udp_port, wait_until  # noqa: E402
from tests.interop.relay import LossyRelay  # noqa: E402
from tests.interop.test_asl3_live import our_node, up_links  # noqa: E402

BOTH = {"1998", "1999"}


def asl3_sees(asl3: Asl3Node, state: bool) -> bool:
    return all((asl3.links(n).get("1001") == "ESTABLISHED") is state for n in BOTH)


def run(asl3: Asl3Node, work: Path, seconds: float) -> dict[str, float]:
    port = free_udp_port()
    with (
        LossyRelay(
            ("127.0.0.1", port), seed=0, impair=False, front_port=asl3.node_ports["1001"]
        ) as into_us,
        LossyRelay(("127.0.0.1", asl3.iax_port), seed=0, impair=False) as into_asl3,
    ):
        extra = f'\n[links.1999]\npermanent = true\naddr = "127.0.0.1:{into_asl3.front_addr[1]}"\n'
        with our_node(work, "1001", port, extra) as ours:
            asl3.cli("rpt cmd 1998 ilink 13 1001")
            wait_until("both links up", lambda: up_links(ours) == BOTH, 30)
            into_us.blackout = into_asl3.blackout = True
            dead = time.monotonic()
            wait_until("our side notices", lambda: not up_links(ours), seconds + 60)
            ours_noticed = time.monotonic() - dead
            wait_until("ASL3 notices", lambda: asl3_sees(asl3, False), seconds + 60)
            asl3_noticed = time.monotonic() - dead
            time.sleep(max(0.0, dead + seconds - time.monotonic()))
            into_us.blackout = into_asl3.blackout = False
            back = time.monotonic()
            up_at: dict[str, float] = {}

            def all_up() -> bool:
                for node in up_links(ours) - up_at.keys():
                    up_at[node] = time.monotonic() - back
                return up_at.keys() == BOTH

            wait_until("both links up again", all_up, 120)
            ours_up = max(up_at.values())
            wait_until("ASL3 lists both", lambda: asl3_sees(asl3, True), 120)
            asl3_up = time.monotonic() - back
            ours.post("/link", json={"action": "disconnect_all", "node": ""})
            wait_until(
                "ASL3 drops both", lambda: not any("1001" in asl3.links(n) for n in BOTH), 10
            )
    return {
        "outage_s": seconds,
        "we_noticed_after_s": round(ours_noticed, 1),
        "asl3_noticed_after_s": round(asl3_noticed, 1),
        "our_links_up_after_return_s": round(ours_up, 1),
        "ours_to_1999_up_after_s": round(up_at["1999"], 1),
        "asl3_1998_to_us_up_after_s": round(up_at["1998"], 1),
        "asl3_lists_both_after_return_s": round(asl3_up, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="how long the path is dead")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    source = shared_peer_dir()
    if source is None:
        print("the ASL3 peer (shared/peers/asl3) is not beside this checkout", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="iax-outage-") as tmp:
        work = Path(tmp)
        asl3 = Asl3Node.install(work / "asl3", source)
        asl3.start()
        try:
            for _ in range(args.repeat):
                print(json.dumps(run(asl3, work, args.seconds)), flush=True)
        finally:
            asl3.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
