"""A Pi has no real-time clock: it boots with the clock of its last shutdown (or 1970), and NTP
steps it, sometimes by years. A running `node serve` whose wall clock jumps three years forward
and then nine back keeps every timer on its course and follows the new clock for the time of day.

The node runs under Debian's libfaketime (`LD_PRELOAD`), which moves what CLOCK_REALTIME says
for the whole process (Python, the Rust engine, the C library's local time) whenever the test
rewrites its file (`FAKETIME_TIMESTAMP_FILE`, read at every call with `FAKETIME_NO_CACHE=1`), and
leaves CLOCK_MONOTONIC alone (`FAKETIME_DONT_FAKE_MONOTONIC=1`), as an NTP step does. (With that
setting Python's `time.sleep` fails under this libfaketime, shared/research/clock-jumps.md: the
node's code never calls it, and this run shows nothing on its paths does.) Each jump keeps the
second within the minute: the scheduler's next look is a monotonic deadline set before the jump,
so a jump off the minute makes that one look up to a minute late (tests/test_schedule.py).

In each epoch (the start, after the jump forward, after the jump back) the node must: time out a
key after its `tx_timeout_secs` (the snapshot's remaining time is within it, not years or none),
then play its station ID (owed by that key), re-post its HTTP registration, dial its permanent
link again (the far end never answers), and stamp the key's status post with the new clock's
year. The `[schedule]` entry for every minute runs `*722` once at the first minute turn, saying
the new clock's time of day. The unit tests of the scheduler (tests/test_schedule.py) and the
router's deadline table (tests/test_router.py) hold the same on injected clocks.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from node._core import FullFrame, parse
from node.announce.phrases import time_phrase
from node.iax2.constants import FrameType, IaxSubclass
from tests.allstar.httpserver import HttpServer, Reply, Request
from tests.conftest import require_tool
from tests.in_process import NO_DNS
from tests.interop.harness import EventWatcher, running_node
from tests.loopback import UdpServer
from tests.node_process import NodeProcess

DAY = 86400
#: Where the node's wall clock starts (UTC): its first minute turns 45 s later, once the first
#: epoch (about 15 s) is over and the clock has jumped forward.
START = calendar.timegm((2031, 5, 5, 10, 0, 15, 0, 0, 0))
#: Three years and five hours forward (the second within the minute kept), then nine years back.
FORWARD = 1096 * DAY + 5 * 3600
BACK = -(3287 * DAY + 2 * 3600)
TX_TIMEOUT_S = 2
#: Generous bounds on waiting for what a timer does (it comes within its period; these only
#: end a test whose timer stalled).
WAIT_S = 40.0


def libfaketime() -> Path | None:
    return next(iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))), None)


class FakeWall:
    """The file libfaketime reads: the offset of the node's wall clock from the real one."""

    def __init__(self, path: Path, start: float) -> None:
        self.path = path
        self.offset = start - time.time()
        self._write()

    def jump(self, seconds: float) -> None:
        self.offset += seconds
        self._write()

    def now(self) -> float:
        return time.time() + self.offset

    def _write(self) -> None:
        self.path.write_text(f"{self.offset:+.6f}\n")

    def env(self, library: Path) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(library),
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "TZ": "UTC",
        }


class SilentNode(UdpServer):
    """A node that never answers: every NEW it receives is an attempt of the permanent link
    (a new attempt has a new source call number; a retransmission repeats it)."""

    def __init__(self) -> None:
        super().__init__("silent-node")
        self.attempts: list[int] = []

    def _on_datagram(self, data: bytes, addr: tuple[str, int]) -> None:
        frame = parse(data)
        if (
            isinstance(frame, FullFrame)
            and frame.ftype == FrameType.IAX
            and frame.subclass == IaxSubclass.NEW
            and frame.scall not in self.attempts
        ):
            self.attempts.append(frame.scall)


def registrar(request: Request) -> Reply:
    """ASL's HTTP registrar, as tests/allstar/test_daemon_http.py plays it: always registered."""
    if not request.body:
        # A status post (GET).
        return Reply(200, b"OK", "text/plain")
    body = json.loads(request.body)
    (node,) = body["data"]["nodes"].values()
    reply = {
        "ipaddr": request.client,
        "port": body["port"],
        "refresh": 10,
        "data": f"{node['node']} successfully registered",
    }
    return Reply(200, json.dumps(reply).encode())


@contextmanager
def jumping_node(
    tmp_path: Path, http: HttpServer, silent: SilentNode
) -> Iterator[tuple[NodeProcess, FakeWall]]:
    library = libfaketime()
    require_tool("faketime (libfaketime)", lambda: library is not None)
    assert library is not None
    wall = FakeWall(tmp_path / "faketime", START)
    sections = (
        f'[register]\nmethod = "http"\nurl = "{http.url}register"\nnode_id = "2001"\n'
        "refresh = 10\n\n"
        f'[statpost]\nurl = "{http.url}stats"\ninterval_secs = 600\n\n'
        f"[keying]\ntx_timeout_secs = {TX_TIMEOUT_S}\n\n"
        '[announce]\nenabled = true\nid_mode = "cw"\nid_interval_secs = 4\ncallsign = "N0CALL"\n'
        "cw_wpm = 60\n\n"
        '[schedule]\n"1" = "* * * * *"\n\n[macro]\n"1" = "*722"\n\n'
        f"{NO_DNS}\n"
        f'[links.2009]\naddr = "127.0.0.1:{silent.addr[1]}"\npermanent = true\n'
    )
    env = wall.env(library) | {"NET_NODE": "2001", "NET_SECRET": "clock-jump-secret"}
    with running_node(tmp_path, "jumping", sections=sections, env=env) as node:
        yield node, wall


def year_of(unix: float) -> int:
    return time.gmtime(unix).tm_year


def test_wall_clock_jumps_keep_every_timer_and_follow_the_new_time_of_day(tmp_path: Path) -> None:
    with (
        HttpServer(registrar) as http,
        SilentNode() as silent,
        jumping_node(tmp_path, http, silent) as (node, wall),
    ):
        events = EventWatcher(node)
        for jump in (0, FORWARD, BACK):
            wall.jump(jump)
            epoch(node, wall, events, http, silent)
            if jump == FORWARD:
                # The first minute turn the node lives through is the new clock's: `*722` says
                # its time of day.
                ran = events.wait_for(lambda e: e["event"] == "schedule", 2 * 60.0)
                hour, minute = time.gmtime(wall.now())[3:5]
                assert time_phrase(hour, minute).speech in ran["result"], ran
        # One run for the one minute turn the node lived through: the jumps crossed years of
        # minutes, and none of them was made up.
        assert len(events.named("schedule")) == 1
        # Each epoch kept its timers' rhythm: a handful of registrations, not a burst.
        assert count(http.wait_until(lambda _: True), "/register") < 20


def epoch(
    node: NodeProcess, wall: FakeWall, events: EventWatcher, http: HttpServer, silent: SilentNode
) -> None:
    """What every timer does on the clock as it now is."""
    year = year_of(wall.now())
    before = http.wait_until(lambda _: True)
    registered, keys = count(before, "/register"), count(before, "/stats", "keyed=1")
    attempts, since = len(silent.attempts), len(events.events)
    # The TX time-out: keyed for its whole time, then released.
    tx = node.post("/key").json()["tx"]
    assert tx["keyed"] and 0 < tx["timeout_remaining_s"] <= TX_TIMEOUT_S, tx
    released = events.wait_for(
        lambda e: e["event"] == "link" and e["kind"] == "keyed" and not e["keyed"], WAIT_S, since
    )
    assert released["reason"] == f"TX time-out after {TX_TIMEOUT_S} s"
    # The key's status post carries the new clock's time.
    seen = http.wait_until(lambda r: count(r, "/stats", "keyed=1") > keys, WAIT_S)
    key_post = [r for r in seen if is_to(r, "/stats", "keyed=1")][keys]
    assert year_of(int(query(key_post)["time"])) == year, key_post.target
    # The station ID that key made owed.
    events.wait_for(
        lambda e: e["event"] == "announcement_started" and e["kind"] == "id", WAIT_S, since
    )
    # The HTTP registration is re-posted and the permanent link dialled again.
    http.wait_until(lambda r: count(r, "/register") > registered, WAIT_S)
    assert silent.wait_for(lambda s: len(s.attempts) > attempts, WAIT_S)


def is_to(request: Request, path: str, part: str = "") -> bool:
    return request.target.startswith(path) and part in request.target


def count(requests: list[Request], path: str, part: str = "") -> int:
    return sum(is_to(r, path, part) for r in requests)


def query(request: Request) -> dict[str, str]:
    return dict(re.findall(r"[?&](\w+)=([^&]*)", request.target))
