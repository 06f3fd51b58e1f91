"""Web-transceiver tokens for `wt-guest` links, minted with the `[portal]` account.

A node whose guests may only use the web transceiver accepts a call as user `allstar-public`
when its CALLING_NAME is a token the AllStarLink portal vouches for (research/allstar.md §5.1).
Tokens come from a `TokenSource`, so the scheme can change without touching the links:

- `PortalTokens` uses the portal's JSON API `POST <url>/api/v2/auth-wt-legacy` with
  `{"username", "password"}`, which answers `{"status": "OK", "auth": 1, "token": ...}`; the
  token stays valid until the portal password changes, and needs no node.
- ASL002's one-time tokens (`TOKEN/CALLSIGN`, one per call) fit the same interface: `mint()`
  is called for every dial, and what it returns goes into CALLING_NAME as it is.

The password is a `Secret` resolved once at startup; it is sent only in the request body, never
logged, and no error message repeats it or the token.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from node.secrets import Secret

if TYPE_CHECKING:
    import httpx

__all__ = ["LEGACY_PATH", "GuestToken", "PortalTokens", "TokenError", "TokenSource"]

log = logging.getLogger(__name__)

#: The portal's token API (ASL3-Manual docs/developers/api.md).
LEGACY_PATH = "/api/v2/auth-wt-legacy"
#: A token goes into an IAX2 string IE: printable, no spaces, and short.
_TOKEN = re.compile(r"[!-~]{1,128}")
#: Longest portal reply we read.
_MAX_REPLY = 16 * 1024


class TokenError(Exception):
    """No token: the message says why and is safe to show (no password, no token)."""


@dataclass(frozen=True, slots=True)
class GuestToken:
    """What a `wt-guest` call presents as CALLING_NAME."""

    calling_name: str = field(repr=False)

    def __repr__(self) -> str:
        return "GuestToken(***)"


class TokenSource(Protocol):
    async def mint(self, node: str) -> GuestToken:
        """A token to dial `node` with (raises TokenError)."""
        ...


class PortalTokens:
    """Tokens from the portal's `auth-wt-legacy` API, on an httpx client."""

    def __init__(
        self,
        url: str,
        user: str,
        password: Secret,
        client: httpx.AsyncClient,
        *,
        timeout: float = 15.0,
    ) -> None:
        self.url = url.rstrip("/") + LEGACY_PATH
        self.user = user
        self._password = password
        self._client = client
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"PortalTokens(url={self.url!r}, user={self.user!r})"

    async def mint(self, node: str) -> GuestToken:
        import httpx  # only a node with `[portal]` mints tokens: no import at start

        body = {"username": self.user, "password": self._password.reveal()}
        try:
            reply = await self._client.post(self.url, json=body, timeout=self._timeout)
        except httpx.TimeoutException:
            raise TokenError(f"the portal gave no token within {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise TokenError(f"cannot reach the portal: {type(exc).__name__}") from None
        if not reply.is_success:
            raise TokenError(f"the portal answered HTTP {reply.status_code}")
        try:
            data = reply.json() if len(reply.content) <= _MAX_REPLY else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise TokenError("the portal's reply is not a JSON object")
        token = data.get("token")
        if data.get("status") != "OK" or data.get("auth") != 1:
            # `msg` is the portal's own text ("Invalid username or password", ...); it never
            # holds the password, but keep it short.
            msg = data.get("msg")
            why = f": {msg[:120]}" if isinstance(msg, str) and msg else ""
            raise TokenError(f"the portal refused the account {self.user}{why}")
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            raise TokenError("the portal's reply holds no usable token")
        return GuestToken(token)
