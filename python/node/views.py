"""The read model the front doors read besides the snapshot: frozen records the controller's
query methods build from the services, so that HTTP, SSE, AMI and the terminal menu never hold a
service, a machine or a call object.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChannelView", "CommandStats", "LinkView", "RegistrationView"]


@dataclass(frozen=True, slots=True)
class LinkView:
    """One link as app_rpt's `rpt xnode` reports it (monotonic times)."""

    node: str
    #: The far end's address while the link has a call.
    addr: tuple[str, int] | None
    callno: int | None
    reconnects: int
    outbound: bool
    connected_at: float | None
    #: Up (the handshake may still be under way), as `Link.up`.
    up: bool
    #: The list letter: T transceive, R monitor, L local monitor (app_rpt's mode letters).
    mode: str
    #: Its voice keys us now.
    keyed: bool
    keyed_at: float | None
    unkeyed_at: float | None
    #: An EchoLink station (`3<number>`), not an IAX2 link.
    echolink: bool = False


@dataclass(frozen=True, slots=True)
class ChannelView:
    """One IAX2 call of the port as `iax2 show channels` lists it."""

    callno: int
    peer_callno: int
    peer_addr: tuple[str, int]
    #: The node or caller it belongs to ("" when not known).
    name: str
    oseq: int
    iseq: int
    rtt_s: float
    format: int | None


@dataclass(frozen=True, slots=True)
class CommandStats:
    """Commands run since start and today (local date), and the last one."""

    today: int
    total: int
    last: str | None


@dataclass(frozen=True, slots=True)
class RegistrationView:
    """The IAX2 registration as `iax2 show registry` lists it."""

    #: "idle", "registering", "registered", "refreshing", "retry_wait" or "releasing".
    state: str
    #: Where the registrar sees us (while registered).
    apparent_addr: tuple[str, int] | None
    #: The refresh the registrar granted, in seconds (None before its first answer).
    granted_refresh: int | None
