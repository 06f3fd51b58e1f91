"""Two real `node serve` processes linked, a softphone talking into each, all on loopback:
phone P (600 Hz) -> node 2001 <-> node 2002 <- phone Q (1500 Hz). Node 2001 holds the link as a
permanent one (`[links.2002]`); both admit callers without a secret (`auth = "off"`).

Used by the disk-write test (tests/links/test_disk_writes.py) and its bench
(benches/disk_writes.py), which read each node's I/O counters from `/proc/<pid>/io`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.in_process import NO_DNS
from tests.interop.harness import running_node, wait_until
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess

__all__ = ["TalkingPair", "io_counters", "link_frames_in", "talking_pair"]


@dataclass
class TalkingPair:
    a: NodeProcess
    b: NodeProcess
    #: P talks into A on call `p_call`, Q into B on call `q_call`.
    p: Softphone
    q: Softphone
    p_call: int
    q_call: int


def io_counters(pid: int) -> dict[str, int]:
    """`/proc/<pid>/io`: `write_bytes` is what the process sent toward a disk (page cache
    dirtied on a block-backed file system), `wchar` every byte it passed to write(2)."""
    fields = (line.split(":") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return {k.strip(): int(v) for k, v in fields}


def link_frames_in(node: NodeProcess, other: str) -> int:
    """Voice frames the node's link to `other` has received (its jitter buffer's count)."""
    link = next(li for li in node.get("/status").json()["links"] if li["node"] == other)
    return link["health"]["rx"]["frames_in"]


def _link_up(node: NodeProcess, other: str) -> bool:
    return any(
        li["node"] == other and li["state"] == "up" for li in node.get("/status").json()["links"]
    )


@contextmanager
def talking_pair(workdir: Path) -> Iterator[TalkingPair]:
    """Nodes 2001 and 2002 in `workdir`, linked, each with a phone talking into it; both
    phones hear the far side before this yields."""
    with running_node(workdir, "b", top='node_id = "2002"', listener='auth = "off"') as b:
        link = f'[links.2002]\naddr = "127.0.0.1:{b.udp_addr[1]}"\npermanent = true\n'
        with (
            running_node(
                workdir,
                "a",
                top='node_id = "2001"',
                listener='auth = "off"',
                sections=NO_DNS + "\n" + link,
            ) as a,
            Softphone(tone_hz=600, key=True, name="P") as p,
            Softphone(tone_hz=1500, key=True, name="Q") as q,
        ):
            wait_until(
                "the link up on both nodes", lambda: _link_up(a, "2002") and _link_up(b, "2001")
            )
            p_call, q_call = p.dial(a.udp_addr, "1"), q.dial(b.udp_addr, "1")
            wait_until("P hears Q and Q hears P", lambda: p.heard_ms(p_call) and q.heard_ms(q_call))
            yield TalkingPair(a, b, p, q, p_call, q_call)
