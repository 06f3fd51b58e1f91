"""The registration service: the node's registration with its registrar, IAX2 or HTTP.

`[register] method = "iax2"`: the sans-I/O `Registration` machine (`node.iax2.registration`)
runs here; its frames go out through the calls' transport, its call numbers come from the
endpoint's pool, and its timer is one of the node's deadlines. `method = "http"`: the daemon runs
an `HttpRegistrationRunner` and hands it over (`http`); its events come back through `on_events`.
Either way the events become `registered` / `register_failed` bus events and announcements.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from node.allstar.runner import HttpRegistrationRunner
from node.calls.service import Announce
from node.context import NodeContext
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
from node.registration.status import format_addr, registration_json

__all__ = ["NAT_BINDING_LIFETIME", "CallNumbers", "RegistrationService"]

log = logging.getLogger(__name__)

#: Seconds a NAT is likely to keep an idle UDP binding. RFC 4787 asks for at least 2 minutes,
#: but many home routers drop one after 60 s; a registrar's refresh is what keeps ours open.
NAT_BINDING_LIFETIME = 60.0


class CallNumbers(Protocol):
    """Where registration frames go and where its call numbers come from (the calls service)."""

    def send(self, frames: Iterable[tuple[Address, Any]]) -> None: ...

    def allocate_callno(self, now: float) -> int: ...

    def release_callno(self, callno: int, now: float) -> None: ...


class RegistrationService:
    """Registers the node (IAX2 here, HTTP through the daemon's runner) and reports it."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx
        #: The IAX2 machine, made by the first `register`.
        self.machine: Registration | None = None
        self._callnos: set[int] = set()
        #: `[register] method = "http"`: the HTTP registration, given by the daemon.
        self.http: HttpRegistrationRunner | None = None
        # Wired at start-up (`wire`).
        self._calls: CallNumbers | None = None
        self._announce: Announce | None = None
        #: Our bound UDP port (set when the transport is attached): a registrar that sees
        #: another one is behind a NAT that rewrites ports.
        self.bound_port: int | None = None
        # When a frame last went to the registrar (it refreshes the NAT binding).
        self._last_sent: float | None = None

    def wire(self, calls: CallNumbers, announce: Announce) -> None:
        """Connect the calls (frames out, call numbers) and the announcements."""
        self._calls = calls
        self._announce = announce

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
        return self.machine.next_deadline() if self.machine is not None else None

    # --- inputs -------------------------------------------------------------------------------

    def receive(self, frame: Any, now: float) -> None:
        if self.machine is not None:
            self._apply(self.machine.receive(frame, now))

    def timer(self, now: float) -> None:
        if self.machine is not None:
            self._apply(self.machine.timer(now))

    def _apply(self, out: Any) -> None:
        reg = self.machine
        calls = self._calls
        if reg is None or calls is None:
            return
        now = self._ctx.clock()
        if out.frames:
            # A refresh that goes out later than a NAT binding likely lives: say so once.
            if (late := self._binding_warning(now)) is not None:
                log.warning("registration: %s", late)
            self._last_sent = now
        calls.send((reg.peer, f) for f in out.frames)
        for callno in self._callnos - reg.callnos:
            calls.release_callno(callno, now)
        self._callnos = set(reg.callnos)
        self.on_events(out.events)
        self._ctx.rearm()

    def on_events(self, events: Sequence[RegistrationEvent]) -> None:
        """Publish what a registration machine (IAX2 or HTTP) reported."""
        for event in events:
            if isinstance(event, RegistrationSucceeded):
                seen = format_addr(event.apparent_addr) or "an address it did not say"
                log.info("registered; the registrar sees us at %s", seen)
                if (rewritten := self._port_warning()) is not None:
                    log.warning("registration: %s", rewritten)
                self._ctx.bus.publish(Registered())
                self._event("registered")
            elif isinstance(event, RegistrationFailed):
                log.warning("registration failed: %s", event.reason)
                self._ctx.bus.publish(RegisterFailed(reason=event.reason))
                self._event("register_failed")
            elif isinstance(event, Deregistered):
                log.info("deregistered")
        if events:
            self._ctx.changed()

    def _event(self, name: str) -> None:
        if self._announce is not None:
            self._announce.event(name)

    # --- commands -----------------------------------------------------------------------------

    def register(self) -> None:
        reg_cfg = self._ctx.config.register
        if reg_cfg is None:
            raise CommandError("no [register] section in the configuration", 409)
        secret = self._ctx.secrets.node_secret()
        if secret is None:
            raise CommandError("no node secret: set NET_SECRET or send POST /secrets", 409)
        if self.http is not None:
            self.http.set_secret(secret)
            self.http.register()
            self._ctx.changed()
            return
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
            self._apply(self.machine.register(now))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None

    def _callno_source(self) -> int:
        assert self._calls is not None, "wire() first"
        return self._calls.allocate_callno(self._ctx.clock())

    def deregister(self) -> None:
        if self.http is not None:
            try:
                self.http.deregister()
            except LocalProtocolError as exc:
                raise CommandError(str(exc), 409) from None
            return
        if self.machine is None:
            raise CommandError("not registered", 409)
        try:
            self._apply(self.machine.deregister(self._ctx.clock()))
        except LocalProtocolError as exc:
            raise CommandError(str(exc), 409) from None
        self._ctx.changed()

    def secret_changed(self) -> None:
        """The node's own credential changed (POST /secrets): the machines take it, and an
        unregistered node registers, as it would have at start-up with the `env` source."""
        secret = self._ctx.secrets.node_secret()
        if self.machine is not None:
            self.machine.set_secret(secret)
        if self.http is not None:
            self.http.set_secret(secret)
        if not self.registered:
            self.register()

    def start(self) -> None:
        """Register at start-up when configured and the credential is known."""
        if self._ctx.config.register is not None and self._ctx.secrets.node_secret() is not None:
            self.register()

    def close(self, now: float) -> None:
        """Shutdown: release the IAX2 registration (frames only)."""
        reg = self.machine
        if reg is not None and reg.registered and self._calls is not None:
            try:
                frames = reg.deregister(now).frames
            except LocalProtocolError:
                return
            self._calls.send((reg.peer, f) for f in frames)
