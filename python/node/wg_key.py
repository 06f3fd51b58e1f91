"""The WireGuard key format: 32 bytes written as 44 characters of base64, as `wg(8)` prints them.

Below both the configuration (a peer's public key in `[wireguard]`) and the secret store (our
private key from the environment), so neither has to import the other or the Rust engine.
"""

from __future__ import annotations

import base64
import binascii
import secrets

__all__ = ["KEY_FORMAT", "KEY_LEN", "decode_key", "encode_key", "generate_private_key"]

KEY_LEN = 32
#: How errors describe an acceptable key.
KEY_FORMAT = "44 characters of base64 (32 bytes), as `wg genkey` / `node wg-keygen` print"


def decode_key(text: str) -> bytes:
    """The 32 raw bytes of a base64 WireGuard key. ValueError, never quoting the text (it may
    be a private key), when it is not one."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"not a WireGuard key ({KEY_FORMAT})") from None
    if len(raw) != KEY_LEN:
        raise ValueError(f"not a WireGuard key ({KEY_FORMAT})")
    return raw


def encode_key(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def generate_private_key() -> bytes:
    """A fresh X25519 private key, clamped as `wg genkey` clamps it (RFC 7748 §5)."""
    key = bytearray(secrets.token_bytes(KEY_LEN))
    key[0] &= 248
    key[31] = (key[31] & 127) | 64
    return bytes(key)
