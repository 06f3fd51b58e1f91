"""node.wireguard and the engine's tunnel through the binding: keys as wireguard-tools makes
them, the `WireGuard` settings object, two engines talking through their tunnels on loopback,
`node wg-keygen`, and garbage thrown at a tunnel's outer socket."""

from __future__ import annotations

import base64
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from node._core import Engine, FullFrame, TunnelChanged, WireGuard
from node.wireguard import (
    decode_key,
    encode_key,
    generate_private_key,
    public_key,
    tunnel_json,
    tunnel_stats,
)
from tests.conftest import require_tool

NET = ["10.9.0.0/24"]


def wait_for(what: str, predicate, timeout: float = 5.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


# --- keys ---------------------------------------------------------------------------------------


def test_keys_are_what_wireguard_tools_make() -> None:
    require_tool("wg")
    # Our public key of wg's private key, and wg's public key of ours.
    theirs = subprocess.run(["wg", "genkey"], capture_output=True, text=True, check=True).stdout
    expected = subprocess.run(
        ["wg", "pubkey"], input=theirs, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert encode_key(public_key(decode_key(theirs))) == expected
    ours = generate_private_key()
    wg_says = subprocess.run(
        ["wg", "pubkey"], input=encode_key(ours), capture_output=True, text=True, check=True
    ).stdout.strip()
    assert encode_key(public_key(ours)) == wg_says


def test_generated_keys_are_clamped_and_fresh() -> None:
    keys = {generate_private_key() for _ in range(20)}
    assert len(keys) == 20
    for key in keys:
        assert len(key) == 32 and key[0] & 7 == 0 and key[31] & 0xC0 == 0x40


@pytest.mark.parametrize("text", ["", "abc", "A" * 42 + "==", "A" * 44, "!" * 44, "A" * 43 + "=="])
def test_malformed_keys_are_refused_without_repeating_them(text: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_key(text)
    assert "44 characters of base64" in str(info.value)
    if text:
        assert text not in str(info.value)


def test_wg_keygen_prints_the_secret_line_on_stdout_only(tmp_path: Path) -> None:
    config = tmp_path / "node.toml"
    config.write_text(
        "[listener]\n[control]\n[wireguard]\naddress = '10.8.0.2'\n"
        "private_key_env = 'HUB_KEY'\npeer_public_key = "
        "'xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg='\nallowed_ips = ['10.8.0.0/24']\n"
    )
    for path, name in ((config, "HUB_KEY"), (tmp_path / "absent.toml", "WG_PRIVATE_KEY")):
        out = subprocess.run(
            [sys.executable, "-m", "node", "wg-keygen", "--config", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        var, _, value = out.stdout.strip().partition("=")
        assert var == name
        private = decode_key(value)
        assert value not in out.stderr
        assert f"public key (for the peer): {encode_key(public_key(private))}" in out.stderr
    assert not (tmp_path / "absent.toml").exists()
    config.write_text("[listener]\n")
    bad = subprocess.run(
        [sys.executable, "-m", "node", "wg-keygen", "--config", str(config)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 78 and bad.stdout == "" and "control" in bad.stderr


# --- the settings object ------------------------------------------------------------------------


def settings(
    key: bytes, peer: bytes, last: int, endpoint: str | None = None, keepalive: int = 0
) -> WireGuard:
    return WireGuard(
        key,
        public_key(peer),
        f"10.9.0.{last}:4569",
        "127.0.0.1:0",
        endpoint,
        NET,
        persistent_keepalive=keepalive,
    )


def test_settings_never_show_the_keys() -> None:
    key = generate_private_key()
    psk = b"\x07" * 32
    wg = WireGuard(key, public_key(key), "10.9.0.2:4569", "0.0.0.0:0", None, NET, preshared_key=psk)
    text = repr(wg)
    for secret in (key, psk):
        assert encode_key(secret) not in text and secret.hex() not in text
    assert "private_key=***" in text and "10.9.0.2:4569" in text
    assert wg.address == ("10.9.0.2", 4569)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"private_key": b"x" * 31}, "private_key must be 32 bytes"),
        ({"peer_public_key": b""}, "peer_public_key must be 32 bytes"),
        ({"preshared_key": b"x" * 33}, "preshared_key must be 32 bytes"),
        ({"address": "[fd00::2]:4569"}, "IPv4 only"),
        ({"address": "10.9.0.2"}, "address"),
        ({"listen": "localhost:0"}, "listen"),
        ({"endpoint": "hub:51820"}, "endpoint"),
        ({"allowed_ips": []}, "at least one"),
        ({"allowed_ips": ["10.9.0.0/33"]}, "IPv4 network"),
        ({"allowed_ips": ["fd00::/8"]}, "IPv4 network"),
    ],
)
def test_bad_settings_are_value_errors(change: dict[str, object], fragment: str) -> None:
    key = generate_private_key()
    args: dict[str, object] = {
        "private_key": key,
        "peer_public_key": public_key(key),
        "address": "10.9.0.2:4569",
        "listen": "127.0.0.1:0",
        "endpoint": None,
        "allowed_ips": NET,
    }
    args.update(change)
    with pytest.raises(ValueError, match=fragment) as info:
        WireGuard(**args)  # type: ignore[arg-type]
    assert encode_key(key) not in str(info.value)


# --- two engines through their tunnels ----------------------------------------------------------


@contextmanager
def engine_pair(
    key_a: bytes, key_b: bytes, *, b_knows: bytes | None = None
) -> Iterator[tuple[Engine, Engine]]:
    """B (10.9.0.2) waits for its peer; A (10.9.0.1) has B's endpoint and a keepalive.
    `b_knows` is the public key B expects (A's by default)."""
    b = Engine("127.0.0.1:0", wireguard=settings(key_b, key_a if b_knows is None else b_knows, 2))
    tunnel_b = b.tunnel()
    assert tunnel_b is not None
    a = Engine("127.0.0.1:0", wireguard=settings(key_a, key_b, 1, tunnel_b["listen"], keepalive=25))
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def poke(scall: int) -> FullFrame:
    return FullFrame(6, 30, scall=scall, ts=77)


def test_two_engines_exchange_frames_through_their_tunnels() -> None:
    key_a, key_b = generate_private_key(), generate_private_key()
    with engine_pair(key_a, key_b) as (a, b):
        assert a.local_addr == ("10.9.0.1", 4569)
        assert b.local_addr == ("10.9.0.2", 4569)
        # The keepalive brings the tunnel up by itself, and says so.
        wait_for("A's tunnel up", lambda: (a.tunnel() or {})["state"] == "up")
        wait_for("the event", lambda: TunnelChanged() in a.drain_events())
        a.send_to(poke(11).to_bytes(), b.local_addr)
        got = wait_for("B's frame", b.drain)
        assert [(addr, f.scall) for addr, f in got] == [(("10.9.0.1", 4569), 11)]
        b.send_to(poke(12).to_bytes(), ("10.9.0.1", 4569))
        got = wait_for("A's frame", a.drain)
        assert [(addr, f.scall) for addr, f in got] == [(("10.9.0.2", 4569), 12)]
        ta, tb = a.tunnel(), b.tunnel()
        assert ta is not None and tb is not None
        assert ta["endpoint"] == tb["listen"] and tb["endpoint"] == ta["listen"]
        assert ta["public_key"] == public_key(key_a)
        assert ta["handshakes"] == tb["handshakes"] == 1
        assert ta["rx_bytes"] > 0 and tb["tx_bytes"] > 0
        # Outside the allowed IPs there is no route.
        with pytest.raises(OSError, match="allowed IPs"):
            a.send_to(poke(13).to_bytes(), ("192.0.2.1", 4569))
        assert (a.tunnel() or {})["no_route"] == 1
        # The engine's own counters see inner datagrams only.
        assert b.counters()["full_in"] == 1 and b.counters()["malformed"] == 0
        # JSON forms: the snapshot's object, and /stats.
        snap = tunnel_json(ta, "10.9.0.1:4569")
        assert snap is not None
        assert snap["public_key"] == base64.b64encode(public_key(key_a)).decode()
        assert snap["state"] == "up" and snap["dropped"] == 0
        stats = tunnel_stats(ta)
        assert stats is not None and isinstance(stats["public_key"], str)


def test_a_wrong_key_never_completes_a_handshake() -> None:
    key_a, key_b = generate_private_key(), generate_private_key()
    with engine_pair(key_a, key_b, b_knows=public_key(generate_private_key())) as (a, b):
        wait_for("B's drops", lambda: (b.tunnel() or {})["dropped_outer"] >= 1)
        a.send_to(poke(11).to_bytes(), b.local_addr)
        time.sleep(0.5)
        ta, tb = a.tunnel(), b.tunnel()
        assert ta is not None and tb is not None
        assert ta["state"] == "handshaking" and ta["handshakes"] == 0
        assert ta["last_handshake_s"] is None and ta["handshake_attempts"] >= 1
        assert tb["state"] == "down" and tb["endpoint"] is None
        assert b.drain() == []


def test_garbage_at_the_outer_socket_is_counted_and_dropped() -> None:
    """Fuzz-ish: random datagrams, and WireGuard-shaped ones (every message type at its exact
    length) with random contents, from a stranger and from the peer's own address."""
    key_a, key_b = generate_private_key(), generate_private_key()
    rng = random.Random(1234)
    with engine_pair(key_a, key_b) as (a, b):
        wait_for("the tunnel", lambda: (b.tunnel() or {})["state"] == "up")
        tb = b.tunnel()
        assert tb is not None
        host, port = tb["listen"].rsplit(":", 1)
        before = tb["dropped_outer"]
        sent = 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(3000):
                kind = i % 6
                length = (148, 92, 64, rng.randrange(32, 300), rng.randrange(0, 40), 0)[kind]
                if kind == 5:
                    length = rng.randrange(0, 2000)
                data = bytearray(rng.randbytes(length))
                if data and i % 3:
                    data[0] = rng.randrange(1, 5)
                    data[1:4] = b"\0\0\0"
                s.sendto(bytes(data), (host, int(port)))
                sent += 1
                if i % 200 == 199:
                    time.sleep(0.01)  # let the engine read: its buffer is sized for voice
        wait_for(
            "every datagram counted",
            lambda: (
                (b.tunnel() or {})["dropped_outer"] - before + b.counters()["kernel_drops"] >= sent
            ),
        )
        tb = b.tunnel()
        assert tb is not None
        assert tb["state"] == "up" and tb["endpoint"] == (a.tunnel() or {})["listen"]
        assert b.drain() == [] and b.counters()["datagrams_in"] == 0
        # The tunnel still works.
        a.send_to(poke(21).to_bytes(), b.local_addr)
        got = wait_for("the frame after the garbage", b.drain)
        assert got[0][1].scall == 21
