"""`node wg-keygen`: a WireGuard key pair for `[wireguard]`, as `wg genkey | wg pubkey` would make.

The private key goes to stdout as one `NAME=value` line, ready to append to the root-only
environment file the service reads (docs/systemd.md); NAME is the config's
`[wireguard] private_key_env`, or `WG_PRIVATE_KEY` when the config has no `[wireguard]` (or does
not exist yet). The public key, for the peer's configuration, goes to stderr, so that redirecting
stdout captures the secret line alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

from node.config import load_config
from node.errors import ConfigError
from node.wireguard import encode_key, generate_private_key, public_key

__all__ = ["DEFAULT_ENV", "run"]

#: The variable name when the configuration does not name one.
DEFAULT_ENV = "WG_PRIVATE_KEY"


def run(config_path: str | Path) -> int:
    """Print a fresh key pair; the exit status (78 for a configuration that does not load)."""
    path = Path(config_path)
    name = DEFAULT_ENV
    if path.exists():
        try:
            wg = load_config(path).wireguard
        except ConfigError as exc:
            print(f"configuration error: {exc}", file=sys.stderr)
            return ConfigError.EXIT_CODE
        if wg is not None:
            name = wg.private_key_env
    private = generate_private_key()
    print(f"{name}={encode_key(private)}")
    print(f"public key (for the peer): {encode_key(public_key(private))}", file=sys.stderr)
    return 0
