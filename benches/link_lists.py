"""CPU of sending `L` lists in a large network: 100 transceive links, 1,000 nodes behind them.

Not a pytest benchmark (nothing here is collected): a script that builds a `LinkNetwork` (the
sans-I/O machine, no sockets) with `--links` transceive links up, puts `--nodes` nodes behind
them (all behind one hub, or spread evenly over the links), and times what one list round
costs: a kick (every link gets its own list, built from all the others) and one received list
that changes the hub's tree (parse, store, and the kick it starts). It prints one JSON line per
shape with the CPU time per round and per list, the list size, and the entries left out to keep
each list within one TEXT frame (`MAX_LIST_BYTES`).

    python benches/link_lists.py                 # 100 links, 1,000 nodes, 200 rounds
    python benches/link_lists.py --links 50 --nodes 5000 --rounds 50

A round happens at most once per kick (150-250 ms) when the network changes, and every 30 s
per link otherwise, so the figure to compare is CPU per round against those intervals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from node.links import network as ln  # noqa: E402


def refresh(net: ln.LinkNetwork, lists: list[str], now: float) -> None:
    """Every neighbour's list again, as their periodic lists keep them from expiring."""
    for i, text in enumerate(lists):
        net.text(100 + i, text, now)
    net.timer(now + 1.0)


def build(links: int, nodes: int, spread: bool) -> tuple[ln.LinkNetwork, list[str]]:
    net = ln.LinkNetwork("1999", rand=lambda: 0.5)
    now = 0.0
    for i in range(links):
        callno = 100 + i
        net.inbound(callno, str(2000 + i), "1999", ("127.0.0.1", 5000 + i), now)
        net.call_up(callno, "ulaw", now)
        net.text(callno, "!NEWKEY1!", now)
    behind = [f"{300000 + i}" for i in range(nodes)]
    if spread:
        per = nodes // links
        lists = [behind[i * per : (i + 1) * per] for i in range(links)]
    else:
        lists = [behind] + [[] for _ in range(links - 1)]
    texts = ["L " + ",".join(f"T{n}" for n in group) for group in lists]
    refresh(net, texts, now)
    return net, texts


def measure(links: int, nodes: int, rounds: int, spread: bool) -> dict[str, object]:
    net, texts = build(links, nodes, spread)
    now = 10.0
    sizes: list[int] = []
    t0 = time.process_time()
    for r in range(rounds):
        if r % 50 == 0:
            refresh(net, texts, now)
        now += 1.0
        net._kick(now)  # the round a change starts: every link's list
        out = net.timer(now + 1.0)
        sent = [a for a in out.actions if isinstance(a, ln.SendText)]
        assert len(sent) >= links
        # What the calls layer then does with each: the payload bytes.
        sizes = [len(a.text.encode()) for a in sent]
    kick_s = (time.process_time() - t0) / rounds
    # A received list that changes the hub's tree (one node leaves and comes back), and the
    # kick it starts.
    full = texts[0]
    short = full.rsplit(",", 1)[0]
    t0 = time.process_time()
    for r in range(rounds):
        if r % 50 == 0:
            refresh(net, texts, now)
        now += 1.0
        net.text(100, short if r % 2 else full, now)
        net.timer(now + 1.0)
    change_s = (time.process_time() - t0) / rounds
    return {
        "shape": "spread" if spread else "hub",
        "links": links,
        "nodes_behind": nodes,
        "rounds": rounds,
        "cpu_ms_per_kick": round(kick_s * 1000, 2),
        "cpu_us_per_list": round(kick_s / links * 1e6, 1),
        "cpu_ms_per_received_change": round(change_s * 1000, 2),
        "list_bytes_max": max(sizes),
        "entries_dropped_per_list": max(link.list_dropped for link in net.links.values()),
        "tree_size": len(net.tree()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    for spread in (False, True):
        print(json.dumps(measure(args.links, args.nodes, args.rounds, spread)), flush=True)


if __name__ == "__main__":
    main()
