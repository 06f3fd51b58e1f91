"""Servers on loopback for tests: sockets at 127.0.0.1 (free ports) served by one daemon thread,
used as a context manager, with a condition the test thread waits on.

`LoopbackServer` is the thread, its stop flag, the condition and the lifecycle; `UdpServer` adds
one UDP socket and a receive loop that hands every datagram to `_on_datagram`. The IAX2 test
peer, the registrar, the lossy relay and the DNS server are built on them.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Address", "LoopbackServer", "UdpServer", "udp_socket"]

Address = tuple[str, int]

_Server = TypeVar("_Server", bound="LoopbackServer")


def udp_socket(host: str = "127.0.0.1") -> socket.socket:
    """A UDP socket bound to a free port on `host`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    return sock


class LoopbackServer:
    """A daemon thread running `_run` until `close()`. Subclasses name their sockets in
    `_sockets` (closed after the thread ends), and notify `_lock` when what a test waits for
    may have changed."""

    #: How long `wait_for` waits by default (seconds).
    wait_timeout = 15.0

    def __init__(self, name: str) -> None:
        self._lock = threading.Condition(threading.RLock())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self: _Server) -> _Server:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for sock in self._sockets():
            sock.close()

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_for(
        self: _Server, predicate: Callable[[_Server], bool], timeout: float | None = None
    ) -> bool:
        """Wait until `predicate(self)` holds, checked under the lock whenever the thread
        notifies and at least every 0.1 s; False on timeout."""
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        with self._lock:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
        return True

    def _sockets(self) -> list[socket.socket]:
        return []

    def _run(self) -> None:
        raise NotImplementedError


class UdpServer(LoopbackServer):
    """One UDP socket; the thread hands each datagram to `_on_datagram` under the lock, then
    notifies the waiters."""

    def __init__(self, name: str, *, host: str = "127.0.0.1", poll_s: float = 0.05) -> None:
        super().__init__(name)
        self.sock = udp_socket(host)
        # The receive loop looks at the stop flag this often.
        self.sock.settimeout(poll_s)

    @property
    def addr(self) -> Address:
        host, port = self.sock.getsockname()[:2]
        return (host, port)

    def _sockets(self) -> list[socket.socket]:
        return [self.sock]

    def _on_datagram(self, data: bytes, addr: Address) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._on_datagram(data, (addr[0], addr[1]))
                self._lock.notify_all()
