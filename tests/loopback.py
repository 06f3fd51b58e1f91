"""Test services run by a daemon thread, used as context managers, and servers on loopback.

`ServiceThread` is the thread, its stop flag, a condition the test thread waits on and the
lifecycle; `UdpServer` adds one UDP socket at 127.0.0.1 (a free port) and a receive loop that
hands every datagram to `_on_datagram`. The IAX2 test peer, the registrar, the relays, the DNS
server and the audio feeders are built on them.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Address", "ServiceThread", "UdpServer", "udp_socket"]

Address = tuple[str, int]

_Server = TypeVar("_Server", bound="ServiceThread")


def udp_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A UDP socket bound to `port` (a free one by default) on `host`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, port))
    return sock


class ServiceThread:
    """A daemon thread running `_run` until `close()`, which then calls `_release` (to close
    what the service holds). Subclasses notify `_lock` when what a test waits for may have
    changed."""

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
        self._release()

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

    def _release(self) -> None:
        """Close what the service holds, once its thread has ended."""

    def _run(self) -> None:
        raise NotImplementedError


class UdpServer(ServiceThread):
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

    def _release(self) -> None:
        self.sock.close()

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
