"""Our userspace tunnel against another WireGuard implementation: wireguard-go (Debian's
`wireguard-go`, configured with wireguard-tools' `wg`), with the Linux kernel's IP stack behind
it.

The kernel's own WireGuard cannot be created here (`ip link add type wireguard` answers
"Unknown device type": the module is not in this kernel), so the independent peer is
wireguard-go on a TUN device. It lives in a network namespace this test creates, with two
softphones bound to its tunnel address 10.9.0.1; our `node serve` runs in the test's own
namespace with `[wireguard]` (10.9.0.2). The outer WireGuard datagrams cross between the two
namespaces' loopbacks through a small relay that holds one socket in each. Each phone calls the
node through the tunnel and plays a tone; each must hear the other's tone, so audio crossed our
tunnel both ways, checked by the kernel (checksums, addresses) on the far side. Run once with our
node initiating the handshake (keepalive) and once with wireguard-go initiating (our node waits
for its peer, learning the endpoint).

Needs root (a network namespace, a TUN device); skipped without, failed under CI without.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import select
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from node.wireguard import decode_key, encode_key, generate_private_key, public_key
from tests.conftest import require_tool
from tests.interop.harness import free_udp_port, running_node, wait_until
from tests.interop.softphone import Softphone, band_levels_db, rate_of
from tests.loopback import ServiceThread, udp_socket
from tests.node_process import NodeProcess

THEIR_ADDR, OUR_ADDR = "10.9.0.1", "10.9.0.2"
WG_GO_PORT = 51820
TONE_P, TONE_Q = 600.0, 1500.0
LISTEN_MS, SKIP_MS = 1500, 300
CLONE_NEWNET = 0x40000000

T = TypeVar("T")


def require_root() -> None:
    require_tool("wireguard-go")
    require_tool("wg")
    require_tool("ip")
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("the wireguard-go interop test needs root under CI")
        pytest.skip("a network namespace and a TUN device need root")


def run(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=30).stdout


def in_netns(name: str, fn: Callable[[], T]) -> T:
    """Call `fn` on a thread that has entered network namespace `name`: sockets it creates
    live there (and stay there, whichever thread uses them later)."""
    libc = ctypes.CDLL(None, use_errno=True)
    out: list[T] = []
    errors: list[BaseException] = []

    def enter() -> None:
        try:
            fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns: {os.strerror(err)}")
            finally:
                os.close(fd)
            out.append(fn())
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=enter, name=f"netns-{name}")
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return out[0]


@contextmanager
def netns() -> Iterator[str]:
    name = f"iaxwg{secrets.token_hex(3)}"
    run("ip", "netns", "add", name)
    try:
        run("ip", "-n", name, "link", "set", "lo", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=30)


@contextmanager
def wireguard_go(
    ns: str, tmp_path: Path, key: bytes, peer: bytes, endpoint: tuple[str, int] | None
) -> Iterator[str]:
    """wireguard-go on a fresh TUN device in `ns`, 10.9.0.1/24, its peer `peer` (10.9.0.2)."""
    # The UAPI socket (/var/run/wireguard/<name>.sock) is not per namespace: a unique name.
    ifname = f"wgi{secrets.token_hex(3)}"
    log = (tmp_path / "wireguard-go.log").open("wb")
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, "wireguard-go", ifname],
        env={**os.environ, "WG_PROCESS_FOREGROUND": "1", "LOG_LEVEL": "debug"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(
            "wireguard-go's interface",
            lambda: ifname in run("ip", "-n", ns, "-o", "link", "show"),
            timeout=15,
        )
        key_file = tmp_path / "wg-go.key"
        key_file.write_text(encode_key(key))
        key_file.chmod(0o600)
        peer_args = ["peer", encode_key(peer), "allowed-ips", f"{OUR_ADDR}/32"]
        if endpoint is not None:
            peer_args += ["endpoint", f"{endpoint[0]}:{endpoint[1]}"]
        run(
            "ip", "netns", "exec", ns, "wg", "set", ifname, "private-key", str(key_file),
            "listen-port", str(WG_GO_PORT), *peer_args,
        )  # fmt: skip
        run("ip", "-n", ns, "addr", "add", f"{THEIR_ADDR}/24", "dev", ifname)
        run("ip", "-n", ns, "link", "set", ifname, "up")
        yield ifname
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


class NamespaceRelay(ServiceThread):
    """Outer WireGuard datagrams between our node (this namespace's loopback) and wireguard-go
    (the other namespace's): what reaches `ours` goes to wireguard-go, what reaches `theirs`
    goes to our node's outer port."""

    def __init__(self, ns: str, node_port: int) -> None:
        super().__init__("ns-relay")
        self.node = ("127.0.0.1", node_port)
        self.ours = udp_socket()
        self.theirs = in_netns(ns, udp_socket)
        self.forwarded = 0

    @property
    def ours_addr(self) -> tuple[str, int]:
        return self.ours.getsockname()[:2]

    @property
    def theirs_addr(self) -> tuple[str, int]:
        return self.theirs.getsockname()[:2]

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.ours, self.theirs], [], [], 0.1)
            for sock in ready:
                data = sock.recv(65535)
                if sock is self.ours:
                    self.theirs.sendto(data, ("127.0.0.1", WG_GO_PORT))
                else:
                    self.ours.sendto(data, self.node)
                self.forwarded += 1

    def _release(self) -> None:
        self.ours.close()
        self.theirs.close()


def wg_show(ns: str, ifname: str, what: str) -> list[str]:
    """`wg show <if> <what>` in the namespace: the values after each peer's key."""
    out = run("ip", "netns", "exec", ns, "wg", "show", ifname, what)
    return [line.split("\t", 1)[1] for line in out.splitlines() if "\t" in line]


def assert_hears(phone: Softphone, callno: int, other: float, own: float) -> None:
    rec = phone.recording(callno)
    pcm = rec.pcm(skip_ms=SKIP_MS)
    level_other, level_own = band_levels_db(pcm, rate_of(rec.fmt), [other, own])
    assert level_other > -3.0, f"{phone.name} hears {other} Hz at only {level_other:.1f} dB"
    assert level_own < -30.0, f"{phone.name} hears its own {own} Hz at {level_own:.1f} dB"


def tunnel_of(node: NodeProcess) -> dict:
    tunnel = node.get("/status").json()["tunnel"]
    assert tunnel is not None
    return tunnel


@pytest.mark.parametrize("initiator", ["ours", "wireguard-go"])
def test_phones_behind_wireguard_go_talk_through_our_tunnel(initiator: str, tmp_path: Path) -> None:
    require_root()
    our_key, their_key = generate_private_key(), generate_private_key()
    outer = free_udp_port()
    with ExitStack() as stack:
        ns = stack.enter_context(netns())
        relay = stack.enter_context(NamespaceRelay(ns, outer))
        ours_first = initiator == "ours"
        ifname = stack.enter_context(
            wireguard_go(
                ns,
                tmp_path,
                their_key,
                public_key(our_key),
                None if ours_first else relay.theirs_addr,
            )
        )
        endpoint = f'endpoint = "127.0.0.1:{relay.ours_addr[1]}"\n' if ours_first else ""
        node = stack.enter_context(
            running_node(
                tmp_path,
                "node",
                codec_policy="ulaw_only",
                listener='auth = "off"',
                sections=(
                    f'[wireguard]\naddress = "{OUR_ADDR}"\nprivate_key_env = "WG_KEY"\n'
                    f'peer_public_key = "{encode_key(public_key(their_key))}"\n'
                    f'allowed_ips = ["10.9.0.0/24"]\nlisten_port = {outer}\n{endpoint}'
                    f"persistent_keepalive = {25 if ours_first else 0}\n"
                ),
                env={"WG_KEY": encode_key(our_key)},
            )
        )
        if ours_first:
            wait_until("the handshake we start", lambda: tunnel_of(node)["state"] == "up")
        else:
            assert tunnel_of(node)["state"] == "down"
            assert tunnel_of(node)["endpoint"] is None
        phones = [
            stack.enter_context(
                in_netns(
                    ns,
                    lambda name=name, hz=hz: Softphone(
                        tone_hz=hz, key=True, name=name, bind=THEIR_ADDR
                    ),
                )
            )
            for name, hz in (("P", TONE_P), ("Q", TONE_Q))
        ]
        target = (OUR_ADDR, node.udp_addr[1])
        calls = [phone.dial(target, "1") for phone in phones]
        for phone, callno in zip(phones, calls, strict=True):
            assert phone.wait_for(lambda s, c=callno: s.answered(c)), phone.name
        for phone, callno in zip(phones, calls, strict=True):
            assert phone.wait_for(lambda s, c=callno: s.heard_ms(c) >= LISTEN_MS + SKIP_MS, 20)
        (p, q), (cp, cq) = phones, calls
        assert_hears(p, cp, other=TONE_Q, own=TONE_P)
        assert_hears(q, cq, other=TONE_P, own=TONE_Q)
        assert not p.errors and not q.errors

        # Both sides agree on the session; our node sees the calls from the tunnel address.
        tunnel = tunnel_of(node)
        assert tunnel["state"] == "up" and tunnel["handshakes"] >= 1
        assert tunnel["endpoint"] == f"127.0.0.1:{relay.ours_addr[1]}"
        addrs = sorted(c["addr"] for c in node.get("/status").json()["calls"])
        assert addrs == sorted(f"{THEIR_ADDR}:{phone.addr[1]}" for phone in phones)
        stats = node.get("/stats").json()
        assert stats["tunnel"]["dropped_outer"] == stats["tunnel"]["dropped_inner"] == 0
        assert stats["malformed"] == 0
        assert [int(t) > 0 for t in wg_show(ns, ifname, "latest-handshakes")] == [True]
        rx, tx = wg_show(ns, ifname, "transfer")[0].split("\t")
        assert int(rx) > 0 and int(tx) > 0
        # The key wireguard-go knows us by is the one our node reports as its own.
        peers = run("ip", "netns", "exec", ns, "wg", "show", ifname, "peers").split()
        assert peers == [tunnel["public_key"]]
        assert decode_key(tunnel["public_key"]) == public_key(our_key)
        for phone, callno in zip(phones, calls, strict=True):
            phone.hangup(callno)
        time.sleep(0.2)
