"""The registration service: the node's registration with its registrar, IAX2 or HTTP.

`[register] method = "iax2"`: the sans-I/O `Registration` machine (`node.iax2.registration`)
runs here, an owner on the node's IAX2 port (`node.port`) beside the calls: its frames go out
through the port, its call numbers come from the port's pool, and its deadline is one of the
router's. `method = "http"`: the daemon runs an `HttpRegistrationRunner` and hands it over
(`http`); its events come back through `on_events`. Either way the events become `registered` /
`register_failed` bus events, and announcements in the `Effects` every input returns.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from node.context import NodeContext
from node.effects import CHANGED, NOTHING, Announce, Effects
from node.errors import CommandError, LocalProtocolError
from node.events import Registered, RegisterFailed
from node.iax2.registration import (
    Deregistered,
    Registration,
    RegistrationEvent,
    RegistrationFailed,
)
from node.iax2.registration import Registered as RegistrationSucceeded
from node.iax2.transport import Address
from node.port import IaxPort
from node.registration.status import format_addr, registration_json

if TYPE_CHECKING:
    from node.allstar.runner import HttpRegistrationRunner

__all__ = ["NAT_BINDING_LIFETIME", "OWNER", "RegistrationService"]

log = logging.getLogger(__name__)

#: Seconds a NAT is likely to keep an idle UDP binding. RFC 4787 asks for at least 2 minutes,
#: but many home routers drop one after 60 s; a registrar's refresh is what keeps ours open.
NAT_BINDING_LIFETIME = 60.0

#: The port's tag for the registration's call numbers.
OWNER = "registration"


class RegistrationService:
    """Registers the node (IAX2 here, HTTP through the daemon's runner) and reports it."""

    def __init__(self, ctx: NodeContext, port: IaxPort) -> None:
        self._ctx = ctx
        self._port = port
        #: The IAX2 machine, made by the first `register`.
        self.machine: Registration | None = None
        self._callnos: set[int] = set()
        #: `[register] method = "http"`: the HTTP registration, given by the daemon.
        self.http: HttpRegistrationRunner | None = None
        #: Our bound UDP port (set when the transport is attached): a registrar that sees
        #: another one is behind a NAT that rewrites ports.
        self.bound_port: int | None = None
        # When a frame last went to the registrar (it refreshes the NAT binding).
        self._last_sent: float | None = None

    # --- state --------------------------------------------------------------------------------

    @property
    def registered(self) -> bool:
        if self.http is not None:
            return self.http.core.registered
        return self.machine is not None and self.machine.registered

    def status(self) -> dict[str, Any]:
        """The snapshot's `registration` object, with a `warning` (None when all is well)."""
        reg = self._ctx.config.register
        machine = self.http.core if self.http is not None else self.machine
        body = registration_json(reg.method if reg is not None else None, machine)
        warnings = self.warnings(self._ctx.clock())
        body["warning"] = "; ".join(warnings) if warnings else None
        return body

    def warnings(self, now: float) -> list[str]:
        """What may keep peers from reaching us through a NAT (IAX2 registration only): the
        registrar saw another port than the one we are bound to (a NAT rewrote it, as in
        ASL3 issue 177), or no refresh went out within the NAT binding's likely lifetime."""
        return [w for w in (self._port_warning(), self._binding_warning(now)) if w is not None]

    def _registered_iax2(self) -> Registration | None:
        reg = self.machine
        return reg if self.http is None and reg is not None and reg.registered else None

    def _port_warning(self) -> str | None:
        reg = self._registered_iax2()
        apparent = reg.apparent_addr if reg is not None else None
        bound = self.bound_port
        if apparent is None or not apparent[1] or not bound or apparent[1] == bound:
            return None
        return (
            f"the registrar sees us at port {apparent[1]} but we are bound to port {bound}: a "
            "NAT rewrites the port, so nodes that dial the registered address reach us only "
            "while the NAT keeps that mapping (forward the port, or give the NAT a fixed "
            "mapping for it)"
        )

    def _binding_warning(self, now: float) -> str | None:
        reg = self._registered_iax2()
        if reg is None or self._last_sent is None or now - self._last_sent <= NAT_BINDING_LIFETIME:
            return None
        return (
            f"nothing went to the registrar for {now - self._last_sent:.0f} s (refresh every "
            f"{reg.granted_refresh} s, re-sent at 5/6 of it); a NAT may drop an idle UDP "
            f"binding after {NAT_BINDING_LIFETIME:.0f} s: lower [register] refresh"
        )

    def owns(self, addr: Address, frame: Any) -> bool:
        """Whether a received frame belongs to the IAX2 registration."""
        reg = self.machine
        return reg is not None and addr == reg.peer and frame.dcall in reg.callnos

    def next_deadline(self) -> float | None:
        """The registration's next deadline: the IAX2 machine's, or the HTTP runner's."""
        if self.http is not None:
            return self.http.next_deadline()
        return self.machine.next_deadline() if self.machine is not None else None

    # --- inputs -------------------------------------------------------------------------------

    def receive(self, frame: Any, now: float) -> Effects:
        if self.machine is None:
            return NOTHING
        return self._apply(self.machine.receive(frame, now))

    def timer(self, now: float) -> Effects:
        if self.http is not None:
            return self.on_events(self.http.timer(now))
        if self.machine is None:
            return NOTHING
        return self._apply(self.machine.timer(now))

    def _apply(self, out: Any) -> Effects:
        reg = self.machine
        if reg is None:
            return NOTHING
        port = self._port
        now = self._ctx.clock()
        if out.frames:
            # A refresh that goes out later than a NAT binding likely lives: say so once.
            if (late := self._binding_warning(now)) is not None:
                log.warning("registration: %s", late)
            self._last_sent = now
        port.send_frames(reg.peer, out.frames)
        for callno in self._callnos - reg.callnos:
            port.release_callno(callno, now)
        self._callnos = set(reg.callnos)
        return self.on_events(out.events)

    def on_events(self, events: Sequence[RegistrationEvent]) -> Effects:
        """Publish what a registration machine (IAX2 or HTTP) reported."""
        said: list[object] = []
        for event in events:
            if isinstance(event, RegistrationSucceeded):
                seen = format_addr(event.apparent_addr) or "an address it did not say"
                log.info("registered; the registrar sees us at %s", seen)
                if (rewritten := self._port_warning()) is not None:
                    log.warning("registration: %s", rewritten)
                self._ctx.bus.publish(Registered())
                said.append(Announce("registered"))
            elif isinstance(event, RegistrationFailed):
                log.warning("registration failed: %s", event.reason)
                self._ctx.bus.publish(RegisterFailed(reason=event.reason))
                said.append(Announce("register_failed"))
            elif isinstance(event, Deregistered):
                log.info("deregistered")
        return Effects(bool(events), tuple(said))

    # --- commands -----------------------------------------------------------------------------

    def register(self) -> Effects:
        reg_cfg = self._ctx.config.register
        if reg_cfg is None:
            raise CommandError("no [register] section in the configuration", 409)
        secret = self._ctx.secrets.node_secret(self._ctx.config.node_id)
        if secret is None:
            raise CommandError("no node secret: set NET_SECRET or send POST /secrets", 409)
        if self.http is not None:
            self.http.set_secret(secret)
            return self.on_events(self.http.register()) | CHANGED
        if reg_cfg.peer is None:
            raise CommandError(f"registration method {reg_cfg.method} is not running", 500)
        now = self._ctx.clock()
        if self.machine is None:
            self.machine = Registration(
                reg_cfg.peer.as_tuple(),
                reg_cfg.node_id,
                secret,
                reg_cfg.refresh,
                self._callno_source,
                now,
            )
        try:
            return self._apply(self.machine.register(now))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None

    def _callno_source(self) -> int:
        return self._port.allocate_callno(OWNER, self._ctx.clock())

    def deregister(self) -> Effects:
        if self.http is not None:
            try:
                return self.on_events(self.http.deregister())
            except LocalProtocolError as exc:
                raise CommandError(str(exc), 409) from None
        if self.machine is None:
            raise CommandError("not registered", 409)
        try:
            return self._apply(self.machine.deregister(self._ctx.clock())) | CHANGED
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None

    def secret_changed(self) -> Effects:
        """The node's own credential changed (POST /secrets): the machines take it, and an
        unregistered node registers, as it would have at start-up with the `env` source."""
        secret = self._ctx.secrets.node_secret(self._ctx.config.node_id)
        if self.machine is not None:
            self.machine.set_secret(secret)
        if self.http is not None:
            self.http.set_secret(secret)
        if not self.registered:
            return self.register()
        return NOTHING

    def start(self) -> Effects:
        """Register at start-up when configured and the credential is known."""
        if (
            self._ctx.config.register is not None
            and self._ctx.secrets.node_secret(self._ctx.config.node_id) is not None
        ):
            return self.register()
        return NOTHING

    def close(self, now: float) -> None:
        """Shutdown: release the IAX2 registration (frames only)."""
        reg = self.machine
        if reg is not None and reg.registered:
            try:
                frames = reg.deregister(now).frames
            except LocalProtocolError:
                return
            self._port.send_frames(reg.peer, frames)
