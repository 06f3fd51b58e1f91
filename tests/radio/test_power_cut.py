"""A node killed outright (SIGKILL: a crash, the OOM killer, the host's power cut while the radio
interface keeps its own) while its PTT is keyed and a permanent link is up, then started again.

Node A has a CM108 interface faked at its hidraw node (tests/radio/fake_hidraw.py) and a
permanent link to node B; a softphone on B talks, so the link's audio keys A's transmitter. A
dies keyed, with no chance to release anything. Started again (under strace, which shows the
order of its first I/O), A writes the released level before it binds or connects any socket,
brings its permanent link back, and has written no file: its directory is as it was.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from tests.in_process import NO_DNS
from tests.interop.harness import free_udp_port, running_node, wait_until
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, free_port
from tests.radio.fake_hidraw import KEY_GPIO3, UNKEY_GPIO3, FakeHidraw
from tests.strace import hex_bytes, kill_traced, read_trace, strace_argv

#: The system calls that reach the world beyond the process's own memory and files.
SOCKET_CALLS = ("bind", "connect", "listen", "sendto", "sendmsg")


def node_a_config(path: Path, hid: FakeHidraw, b_port: int) -> tuple[Path, int, int]:
    """Node 2001: the radio hears the conference, a permanent link to 2002 at `b_port`."""
    udp, http = free_udp_port(), free_port()
    path.write_text(
        f'node_id = "2001"\n\n'
        f'[listener]\nbind = "127.0.0.1:{udp}"\nauth = "off"\n\n'
        f'[control]\nbind = "127.0.0.1:{http}"\n\n'
        f'[audio]\nbackend = "none"\n\n'
        f'[bridge]\nmode = "conference"\ninclude_local_radio = true\n\n'
        f'[radio]\nptt = "cm108"\nptt_device = "{hid.path}"\nhang_time_ms = 60000\n\n'
        f"{NO_DNS}\n"
        f'[links.2002]\naddr = "127.0.0.1:{b_port}"\npermanent = true\n'
    )
    return path, udp, http


def link_up(node: NodeProcess, other: str) -> dict | None:
    links = node.get("/status").json()["links"]
    return next((li for li in links if li["node"] == other and li["state"] == "up"), None)


def files_in(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_killed_keyed_and_linked_it_starts_released_and_links_again(tmp_path: Path) -> None:
    home, traces = tmp_path / "a", tmp_path / "traces"
    home.mkdir()
    traces.mkdir()
    with (
        FakeHidraw() as hid,
        running_node(tmp_path, "b", top='node_id = "2002"', listener='auth = "off"') as b,
    ):
        config, udp, http = node_a_config(home / "node.toml", hid, b.udp_addr[1])
        a = NodeProcess(config, udp, http)
        try:
            a.wait_ready()
            wait_until("A's permanent link up", lambda: link_up(a, "2002"))
            with Softphone(tone_hz=700, key=True, name="on-b") as phone:
                phone.dial(b.udp_addr, "1")
                # B's caller talks: the link's audio keys A's transmitter.
                assert hid.wait_reports(2) == [UNKEY_GPIO3, KEY_GPIO3]
                assert a.get("/status").json()["radio"]["ptt"]["keyed"]
                before = files_in(home)
                a.signal(signal.SIGKILL)
                a.wait()
            # Nothing ran on the way out: the interface's GPIO3 is still high.
            assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3]
        finally:
            a.kill()

        trace = traces / "a.trace"
        calls = ",".join(("write", *SOCKET_CALLS))
        again = NodeProcess(
            config, udp, http, program=[*strace_argv(trace, calls), sys.executable, "-m", "node"]
        )
        try:
            again.wait_ready()
            assert hid.wait_reports(3)[2] == UNKEY_GPIO3
            assert again.get("/status").json()["radio"]["ptt"]["keyed"] is False
            # The permanent link comes back by itself, and B takes A's new call.
            back = wait_until("A's permanent link back", lambda: link_up(again, "2002"))
            assert back["permanent"] is True and back["direction"] == "outbound"
            wait_until("B sees A again", lambda: link_up(b, "2001"))
            reply = again.post("/shutdown", json={})
            assert reply.status_code == 200, reply.text
            assert again.wait() == 0
        finally:
            kill_traced(again.proc)
            again.communicate()

    # The release is the restarted node's first act on the world: before any socket.
    syscalls = read_trace(trace)
    release = next(
        i
        for i, c in enumerate(syscalls)
        if c.name == "write" and f"<{hid.path}>" in c.args and hex_bytes(UNKEY_GPIO3) in c.args
    )
    first_socket = next(i for i, c in enumerate(syscalls) if c.name in SOCKET_CALLS)
    assert release < first_socket, syscalls[first_socket]
    # A killed node and a restarted one wrote no file of their own (no state, no log).
    assert files_in(home) == before
