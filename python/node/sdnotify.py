"""The systemd readiness protocol (sd_notify(3)), for `Type=notify` units; inert elsewhere.

A datagram of `KEY=value` lines to the AF_UNIX socket named by `NOTIFY_SOCKET` (a path, or an
abstract name written with a leading `@`). `READY=1` once the IAX2 socket and the control channel
are open, `RELOADING=1` and `READY=1` around a SIGHUP reload, `STOPPING=1` at shutdown, `STATUS=`
a one-line summary shown by `systemctl status`. The variable is taken out of the environment, as
`sd_notify(unset_environment=1)` does, so a child process cannot speak for the node. Statuses
never carry a secret: they are built from the same texts as the log.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import MutableMapping

__all__ = ["Notifier"]

log = logging.getLogger(__name__)


class Notifier:
    """Sends state changes to the service manager; every method is a no-op without one."""

    def __init__(self, address: str | None) -> None:
        if address and address.startswith("@"):
            address = "\0" + address[1:]
        elif address and not address.startswith("/"):
            # vsock: and other forms are for VMs and containers this daemon is not run in.
            log.warning("NOTIFY_SOCKET is neither a path nor an abstract name; not notifying")
            address = None
        self._address = address or None

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None) -> Notifier:
        env = os.environ if environ is None else environ
        return cls(env.pop("NOTIFY_SOCKET", None))

    @property
    def active(self) -> bool:
        return self._address is not None

    def ready(self, status: str | None = None) -> None:
        self._send("READY=1", status)

    def reloading(self) -> None:
        # MONOTONIC_USEC lets a Type=notify-reload manager tell this reload from an older one.
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._send(f"RELOADING=1\nMONOTONIC_USEC={usec}", "reloading the configuration")

    def stopping(self) -> None:
        self._send("STOPPING=1", "stopping")

    def _send(self, state: str, status: str | None) -> None:
        if self._address is None:
            return
        if status:
            state += "\nSTATUS=" + " ".join(status.split())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.connect(self._address)
                s.sendall(state.encode("utf-8", "replace"))
        except OSError as exc:
            # The service manager going away must not take the node down with it.
            log.warning("cannot notify the service manager: %s", exc.strerror or exc)
