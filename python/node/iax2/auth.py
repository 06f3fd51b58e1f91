"""IAX2 authentication helpers: MD5 challenge/response and stateless call tokens (sans-I/O).

Nothing here reads a clock or an entropy source: challenges take an injected `randbelow`, tokens
take `now` and a per-process key. No function returns or raises a message containing a secret,
a digest or a token.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "AUTH_MD5",
    "TOKEN_LIFETIME",
    "CallTokens",
    "RandBelow",
    "SecretLike",
    "check_md5",
    "make_challenge",
    "md5_response",
    "reveal",
]

#: AUTHMETHODS bit for MD5 challenge/response (1 is plaintext, 4 is RSA).
AUTH_MD5 = 0x2
#: Seconds a call token stays valid (Asterisk's default `max_calltoken_delay`).
TOKEN_LIFETIME = 10

#: An entropy source: `randbelow(n)` returns an int in [0, n). `secrets.randbelow` fits.
RandBelow = Callable[[int], int]


class SecretLike(Protocol):
    """Anything that hides a secret behind `reveal()` (node.secrets.Secret)."""

    def reveal(self) -> str: ...


def reveal(secret: str | SecretLike | None) -> str | None:
    """The plain text of `secret`, for hashing only; never log the result."""
    if secret is None or isinstance(secret, str):
        return secret
    return secret.reveal()


def md5_response(challenge: str, secret: str | SecretLike) -> str:
    """MD5_RESULT for `challenge`: lowercase hex of MD5(challenge bytes + secret bytes).

    No separator and no NUL, as Asterisk's `authenticate()` computes it.
    """
    plain = reveal(secret)
    assert plain is not None
    return hashlib.md5((challenge + plain).encode("utf-8")).hexdigest()


def check_md5(challenge: str, secret: str | SecretLike | None, answer: str | None) -> bool:
    """Whether `answer` is the right MD5_RESULT; constant time in the answer's content.

    A `None` secret (unknown user) or answer never matches, but the digest is still computed so
    an unknown user costs the same as a wrong password. Case is ignored as in Asterisk.
    """
    plain = reveal(secret)
    expected = md5_response(challenge, plain if plain is not None else "\x00unknown").encode()
    given = (answer or "").strip().lower().encode("utf-8", "replace")
    return hmac.compare_digest(expected, given) and plain is not None and answer is not None


def make_challenge(randbelow: RandBelow) -> str:
    """A fresh CHALLENGE: a decimal number below 2**31, like Asterisk's `ast_random()`."""
    return str(randbelow(2**31))


def _addr_text(addr: tuple[str, int]) -> str:
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class CallTokens:
    """Stateless call tokens `"<epoch>?<hex HMAC-SHA1(key, address + epoch)>"`.

    The epoch is whole seconds of the node's own clock (the same monotonic `now` every input
    carries): the token is opaque to the peer and only this process checks it, so there is no
    need for wall-clock time. A token proves the peer can receive at the address it claims, which
    is what Asterisk's call tokens are for (doc/IAX2-security.txt).
    """

    __slots__ = ("_key", "lifetime")

    def __init__(self, key: bytes, lifetime: int = TOKEN_LIFETIME) -> None:
        if len(key) < 16:
            raise ValueError("the call-token key must be at least 16 bytes")
        self._key = bytes(key)
        self.lifetime = lifetime

    def __repr__(self) -> str:
        return f"CallTokens(lifetime={self.lifetime})"

    def _mac(self, addr: tuple[str, int], epoch: int) -> str:
        msg = f"{_addr_text(addr)}{epoch}".encode()
        return hmac.new(self._key, msg, hashlib.sha1).hexdigest()

    def issue(self, addr: tuple[str, int], now: float) -> str:
        epoch = int(now)
        return f"{epoch}?{self._mac(addr, epoch)}"

    def verify(self, addr: tuple[str, int], token: str, now: float) -> bool:
        """Whether `token` was issued by us to `addr` within the last `lifetime` seconds."""
        epoch_text, sep, mac = token.partition("?")
        if not sep or len(mac) != 40 or len(epoch_text) > 12:
            return False
        if not (epoch_text.isascii() and epoch_text.isdigit()):
            return False
        epoch = int(epoch_text)
        age = int(now) - epoch
        if age < 0 or age > self.lifetime:
            return False
        return hmac.compare_digest(self._mac(addr, epoch).encode(), mac.lower().encode())
