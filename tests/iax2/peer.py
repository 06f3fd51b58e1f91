"""An IAX2 peer for tests that talk to a real node: our sans-I/O `Endpoint` on a UDP socket at
127.0.0.1 (a free port), the base of the softphone, the scripted capture nodes and the
web-transceiver host.

One daemon thread owns the socket (a tests/loopback.py `ServiceThread`). It sleeps until a
datagram arrives or something is due (the endpoint's next deadline, the talk spurt's next
frame, a subclass's own `_wake_times`), feeds the endpoint, then lets the subclass act
(`_tick`). The test thread calls the subclass's methods, which take the same lock; waiters on
it (`wait_for`) are woken after every pass.
"""

from __future__ import annotations

import math
import secrets
import select
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from node._core import FullFrame, MiniFrame, parse, ulaw_encode
from node.iax2.call import Call, CallState
from node.iax2.constants import Format
from node.iax2.endpoint import Endpoint, EndpointOutput, InboundPolicy
from tests.loopback import Address, ServiceThread, udp_socket

__all__ = ["FRAME_MS", "Address", "LoopbackPeer", "tone_ulaw"]

FRAME_MS = 20


def tone_ulaw(frame: int) -> bytes:
    """Frame number `frame` (20 ms, 160 samples) of a 1 kHz tone at 8 kHz, in μ-law."""
    t = (frame * 160 + np.arange(160)) / 8000
    return ulaw_encode((6000 * np.sin(2 * math.pi * 1000 * t)).astype(np.int16).tobytes())


@dataclass
class _Spurt:
    """A talk spurt of the 1 kHz tone under way: what goes out next, and when."""

    callno: int
    next_at: float
    ts: int
    sent: int
    frames: int
    unkey: bool


class LoopbackPeer(ServiceThread):
    """The socket, its thread and the lock; use it as a context manager."""

    #: The longest the socket thread sleeps when nothing is due (seconds).
    idle_s = 0.02

    def __init__(
        self,
        inbound: InboundPolicy,
        codec_policy: str,
        *,
        peer_secrets: Mapping[str, str] | None = None,
        name: str,
        bind: str = "127.0.0.1",
    ) -> None:
        """`peer_secrets`: user -> secret, for callers challenged with MD5; `bind` the address
        of the peer's socket (a free port on it)."""
        super().__init__(f"{type(self).__name__}-{name}")
        self.name = name
        table = dict(peer_secrets or {})
        self.endpoint = Endpoint(
            inbound,
            codec_policy,
            token_key=secrets.token_bytes(32),
            randbelow=secrets.randbelow,
            peer_secret=table.get,
        )
        self.sock = udp_socket(bind)
        self.addr: Address = self.sock.getsockname()[:2]
        #: Mini frames received (subclasses that decode them count their own way).
        self.minis = 0
        self.errors: list[str] = []
        self._spurt: _Spurt | None = None

    def _release(self) -> None:
        self.sock.close()

    # --- for subclasses (either thread, under the lock) ---------------------------------------

    def _apply(self, out: EndpointOutput) -> None:
        """Send what the endpoint wants sent, then hand its events to `_on_event`."""
        for addr, frame in out.frames:
            self.sock.sendto(frame.to_bytes(), addr)
        now = time.monotonic()
        for event in out.events:
            self._on_event(event, now)
        self._lock.notify_all()

    def _send_mini(self, call: Call, ts: int, payload: bytes) -> None:
        mini = MiniFrame(call.callno, ts & 0xFFFF, payload)
        self.sock.sendto(mini.to_bytes(), call.peer_addr)

    def _start_spurt(self, callno: int, now: float, frames: int, *, unkey: bool = False) -> None:
        """Talk `frames` 20 ms frames of the 1 kHz tone on an answered μ-law call, as a node
        does: one full voice frame on the 20 ms timestamp grid, then a mini frame every 20 ms.
        With `unkey`, send RADIO_UNKEY after the last one."""
        call = self.endpoint.call(callno)
        if call is None:
            raise ValueError(f"no call {callno}")
        ts = (call.timestamp(now) // FRAME_MS + 1) * FRAME_MS
        self._apply(self.endpoint.send_voice_full(callno, now, Format.ULAW, tone_ulaw(0), ts))
        self._spurt = _Spurt(callno, now + FRAME_MS / 1000, ts + FRAME_MS, 1, frames, unkey)

    def _stop_spurt(self) -> None:
        self._spurt = None

    # --- hooks (the socket thread, under the lock) --------------------------------------------

    def _on_event(self, event: object, now: float) -> None:
        """An event of the endpoint's."""

    def _on_full(self, addr: Address, frame: FullFrame, now: float) -> None:
        self._apply(self.endpoint.receive(addr, frame, now))

    def _on_mini(self, addr: Address, mini: MiniFrame) -> None:
        self.minis += 1

    def _wake_times(self) -> list[float]:
        """When the subclass next has something to do (monotonic seconds)."""
        return []

    def _tick(self, now: float) -> None:
        """Once per pass of the socket thread, after the endpoint's timers ran."""

    # --- the socket thread --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                wake = self._wake_times()
                deadline = self.endpoint.next_deadline()
                if deadline is not None:
                    wake.append(deadline)
                if self._spurt is not None:
                    wake.append(self._spurt.next_at)
            timeout = self.idle_s
            if wake:
                timeout = min(timeout, max(0.0, min(wake) - time.monotonic()))
            try:
                ready, _, _ = select.select([self.sock], [], [], timeout)
            except (OSError, ValueError):
                return
            with self._lock:
                if ready:
                    try:
                        data, addr = self.sock.recvfrom(4096)
                    except OSError:
                        return
                    self._datagram(data, addr[:2])
                now = time.monotonic()
                deadline = self.endpoint.next_deadline()
                if deadline is not None and deadline <= now:
                    self._apply(self.endpoint.timer(now))
                self._spurt_step(now)
                self._tick(now)
                self._lock.notify_all()

    def _spurt_step(self, now: float) -> None:
        while (spurt := self._spurt) is not None and spurt.next_at <= now:
            call = self.endpoint.call(spurt.callno)
            if call is None or call.state is not CallState.UP:
                self._spurt = None
                return
            if spurt.sent >= spurt.frames:
                self._spurt = None
                if spurt.unkey:
                    self._apply(self.endpoint.unkey(spurt.callno, now))
                return
            self._send_mini(call, spurt.ts, tone_ulaw(spurt.sent))
            spurt.next_at += FRAME_MS / 1000
            spurt.ts += FRAME_MS
            spurt.sent += 1

    def _datagram(self, data: bytes, addr: Address) -> None:
        try:
            frame = parse(data)
        except ValueError as exc:  # FrameError
            self.errors.append(f"unparsable datagram from {addr}: {exc}")
            return
        if isinstance(frame, FullFrame):
            self._on_full(addr, frame, time.monotonic())
        elif isinstance(frame, MiniFrame):
            self._on_mini(addr, frame)
        else:
            self.errors.append(f"unexpected {type(frame).__name__} from {addr}")
