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

__all__ = ["CallNumbers", "RegistrationService"]

log = logging.getLogger(__name__)


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
        """The snapshot's `registration` object."""
        reg = self._ctx.config.register
        machine = self.http.core if self.http is not None else self.machine
        return registration_json(reg.method if reg is not None else None, machine)

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
        calls.send((reg.peer, f) for f in out.frames)
        now = self._ctx.clock()
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
