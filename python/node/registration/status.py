"""The snapshot's `registration` object, the same for IAX2 and HTTP registration.

    {"method": "iax2" | "http" | null, "state": "unregistered" | "registering" | "registered" |
     "failed", "perceived_addr": "ip[:port]" | null, "last_failure": str | null}

`perceived_addr` is our address as the registrar saw it (IAX2 REGACK APPARENT_ADDR, or the HTTP
reply's `ipaddr`/`port`), while registered. A callee checks our calls' source address against
what the registrar recorded, so an operator who sees an unexpected address here knows why links
are refused. `last_failure` is the reason of the last failed attempt, until one succeeds.
"""

from __future__ import annotations

from typing import Any

from node.allstar.http_registration import HttpRegistration
from node.iax2.registration import Registration, RegistrationState

__all__ = ["format_addr", "registration_json"]

_IAX2_STATES = {
    RegistrationState.IDLE: "unregistered",
    RegistrationState.REGISTERING: "registering",
    RegistrationState.REGISTERED: "registered",
    RegistrationState.REFRESHING: "registered",
    RegistrationState.RETRY_WAIT: "failed",
    RegistrationState.RELEASING: "unregistered",
}


def format_addr(addr: tuple[str, int] | None) -> str | None:
    """`ip:port` (`[v6]:port`), or the bare IP when the port is unknown (0)."""
    if addr is None:
        return None
    host, port = addr
    if not port:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def registration_json(
    method: str | None, reg: Registration | HttpRegistration | None
) -> dict[str, Any]:
    """The `registration` object for the configured `method` and its machine (None before the
    first attempt)."""
    if reg is None:
        state = "unregistered"
    elif isinstance(reg, HttpRegistration):
        state = reg.state.value
    else:
        state = _IAX2_STATES[reg.state]
    return {
        "method": method,
        "state": state,
        "perceived_addr": format_addr(reg.apparent_addr) if reg is not None else None,
        "last_failure": reg.last_failure if reg is not None else None,
    }
