"""The USRP radio's lines: its keyup bit is the PTT, its received keyup voice the carrier.

The packets themselves never reach Python: the engine's USRP thread sends a keyup-1 voice packet
every 20 ms while `UsrpPtt` holds it keyed and one keyup-0 packet at the release, and reports
the peer's transmissions as `UsrpCarrierChanged` events, which the controller hands to the
radio as a hardware detector's edges.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from node.errors import RadioError

__all__ = ["UsrpPtt"]


class _Keyable(Protocol):
    def set_keyed(self, keyed: bool) -> None: ...


class UsrpPtt:
    """The PTT of a USRP radio. The port is attached once the media bridge has opened it; a
    key before that (or after the port closed) keys nothing."""

    backend = "usrp"

    def __init__(self, network: str) -> None:
        self.network = network
        self.port: _Keyable | None = None
        self.keyed = False

    def attach(self, port: _Keyable | None) -> None:
        self.port = port
        if port is not None:
            port.set_keyed(self.keyed)

    def set(self, keyed: bool) -> None:
        self.keyed = keyed
        if self.port is None:
            return
        try:
            self.port.set_keyed(keyed)
        except Exception as exc:  # the engine's EngineError: the port closed under us
            raise RadioError(f"USRP radio: {exc}") from None

    def close(self) -> None:
        # Released before the port goes: the engine then sends the keyup-0 the release owes.
        # A port already closed has released itself (its thread sends the keyup-0 on stop).
        with contextlib.suppress(RadioError):
            self.set(False)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "network": self.network}
