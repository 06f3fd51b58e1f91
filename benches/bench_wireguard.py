"""What the WireGuard tunnel costs per datagram: `Engine.send_to` through a tunnel (inner IPv4/UDP
headers, ChaCha20-Poly1305, the outer `sendto`) against the plain UDP path (the `sendto` alone).

Both send the same 512 distinct 164-byte datagrams (a mini voice frame's size: a 4-byte header
and 160 bytes of µ-law) from an engine to a receiving engine on loopback, which reads (and, for
the tunnel, decrypts) them on its own thread, so both paths pay for a live peer. The ratio in
the table is plain time / tunnel time: the share of a tunnelled send that the plain send would
cost; `ns_per_datagram` the absolute figures.

Run: `pytest benches/bench_wireguard.py --benchmark-only` (after `maturin develop --release`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from node._core import Engine, WireGuard
from node.wireguard import generate_private_key, public_key

N = 512
NET = ["10.9.0.0/24"]


def datagrams() -> list[bytes]:
    return [bytes([0, i % 256, i // 256, 0]) + bytes([(i * 7) % 256]) * 160 for i in range(N)]


@pytest.fixture(scope="module")
def tunnel_pair() -> Iterator[tuple[Engine, Engine]]:
    key_a, key_b = generate_private_key(), generate_private_key()
    b = Engine(
        "127.0.0.1:0",
        legs=2000,
        wireguard=WireGuard(key_b, public_key(key_a), "10.9.0.2:4569", "127.0.0.1:0", None, NET),
    )
    listen = (b.tunnel() or {})["listen"]
    a = Engine(
        "127.0.0.1:0",
        wireguard=WireGuard(
            key_a, public_key(key_b), "10.9.0.1:4569", "127.0.0.1:0", listen, NET, 25
        ),
    )
    deadline = time.monotonic() + 10
    while (a.tunnel() or {})["state"] != "up":
        assert time.monotonic() < deadline, "the tunnel did not come up"
        time.sleep(0.01)
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture(scope="module")
def plain_pair() -> Iterator[tuple[Engine, Engine]]:
    b = Engine("127.0.0.1:0", legs=2000)
    a = Engine("127.0.0.1:0")
    yield a, b
    a.stop()
    b.stop()


def sender(a: Engine, to: tuple[str, int]) -> Callable[[], None]:
    data = datagrams()

    def run() -> None:
        for d in data:
            a.send_to(d, to)

    return run


def check(a: Engine, b: Engine, run: Callable[[], None]) -> None:
    """Correctness first: every datagram arrives (as malformed IAX2: mini frames with no call)."""
    before = b.counters()["datagrams_in"]
    run()
    deadline = time.monotonic() + 5
    while b.counters()["datagrams_in"] - before < N:
        assert time.monotonic() < deadline, "datagrams lost on loopback"
        time.sleep(0.01)


def test_tunnelsend_ours(bench: Any, tunnel_pair: tuple[Engine, Engine]) -> None:
    a, b = tunnel_pair
    run = sender(a, b.local_addr)
    check(a, b, run)
    assert (b.tunnel() or {})["dropped_outer"] == 0
    bench(run, per_call=N, samples=1, unit="datagram", extra={"path": "wireguard"})


def test_tunnelsend_plainudp(bench: Any, plain_pair: tuple[Engine, Engine]) -> None:
    a, b = plain_pair
    run = sender(a, b.local_addr)
    check(a, b, run)
    bench(run, per_call=N, samples=1, unit="datagram", extra={"path": "plain udp"})
