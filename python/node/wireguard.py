"""WireGuard keys and the tunnel as the node reports it (`[wireguard]`, docs/wireguard.md).

The tunnel itself runs inside the Rust engine (`rust/wireguard.rs`); this module holds what the
Python side needs around it: the engine's settings, public keys for `node wg-keygen`, and the
snapshot's `tunnel` object built from the engine's figures. The key format itself is
`node.wg_key`'s (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from node._core import wg_public_key
from node.wg_key import KEY_FORMAT, KEY_LEN, decode_key, encode_key, generate_private_key

if TYPE_CHECKING:
    from node.config import NodeConfig
    from node.secrets import Secret, SecretStore

__all__ = [
    "KEY_FORMAT",
    "KEY_LEN",
    "TunnelSettings",
    "decode_key",
    "encode_key",
    "generate_private_key",
    "public_key",
    "tunnel_json",
    "tunnel_settings",
    "tunnel_stats",
]

#: The node's IAX2 port inside the tunnel when `[listener] bind` asks for any port.
IAX2_PORT = 4569


@dataclass(frozen=True, slots=True, kw_only=True)
class TunnelSettings:
    """`[wireguard]` resolved for the engine: addresses as IP literals, keys from the
    environment (still `Secret`s: `repr` shows none of them)."""

    #: Our address and port inside the tunnel.
    address: tuple[str, int]
    #: Where the outer socket binds ("ip:port" / "[v6]:port").
    listen: str
    #: The peer's outer "ip:port", or None to wait for it.
    endpoint: str | None
    allowed_ips: tuple[str, ...]
    persistent_keepalive: int
    peer_public_key: bytes
    private_key: Secret
    preshared_key: Secret | None = None

    @property
    def address_text(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"


def tunnel_settings(
    config: NodeConfig, secrets: SecretStore, endpoint: str | None
) -> TunnelSettings | None:
    """The engine's view of `[wireguard]` (None without it); `endpoint` is the configured one
    resolved to an "ip:port" literal."""
    wg = config.wireguard
    keys = secrets.wireguard_keys()
    if wg is None or keys is None:
        return None
    bind = config.listener.bind
    host = "127.0.0.1" if bind.host.lower() == "localhost" else bind.host
    listen = f"[{host}]:{wg.listen_port}" if ":" in host else f"{host}:{wg.listen_port}"
    return TunnelSettings(
        # Port 0 ("any free port") means nothing inside the tunnel: the IAX2 default there.
        address=(wg.address, bind.port or IAX2_PORT),
        listen=listen,
        endpoint=endpoint,
        allowed_ips=wg.allowed_ips,
        persistent_keepalive=wg.persistent_keepalive,
        peer_public_key=decode_key(wg.peer_public_key),
        private_key=keys[0],
        preshared_key=keys[1],
    )


def public_key(private: bytes) -> bytes:
    """The public key of a raw private key."""
    return wg_public_key(private)


def tunnel_stats(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """The engine's tunnel figures (`Engine.tunnel()`) made JSON-ready (keys as base64)."""
    if raw is None:
        return None
    return {**raw, "public_key": encode_key(raw["public_key"])}


def tunnel_json(raw: dict[str, Any] | None, address: str) -> dict[str, Any] | None:
    """The snapshot's `tunnel` object: where we are inside, where the peer is, and how the
    tunnel is doing. None when the node runs on plain UDP."""
    if raw is None:
        return None
    last = raw["last_handshake_s"]
    return {
        "address": address,
        "public_key": encode_key(raw["public_key"]),
        "listen": raw["listen"],
        "endpoint": raw["endpoint"],
        "state": raw["state"],
        "last_handshake_s": None if last is None else round(last, 1),
        "handshakes": raw["handshakes"],
        "rx_bytes": raw["rx_bytes"],
        "tx_bytes": raw["tx_bytes"],
        "dropped": raw["dropped_outer"] + raw["dropped_inner"] + raw["no_route"],
    }
