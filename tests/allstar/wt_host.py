"""A web-transceiver host of our own: what an ASL3 node's `[allstar-public]` context does with a
guest call (research/allstar.md §5.1), on our `Endpoint` and a loopback UDP socket.

It challenges user `allstar-public` with MD5 against the published secret `allstar`, takes only
extension `s`, and checks CALLING_NAME against the tokens its portal issued. A good token gets
RINGING, a pause (the dialplan's `Wait`), then ANSWER and a 1 kHz talk spurt the guest must
hear; a bad one gets ANSWER, one second, HANGUP, exactly as the dialplan's `hangit` does.
"""

from __future__ import annotations

import math
import secrets
import select
import socket
import threading
import time

import numpy as np

from node._core import FullFrame, MiniFrame, parse, ulaw_encode
from node.iax2.call import CallIncoming, CallState
from node.iax2.endpoint import Endpoint, EndpointOutput, InboundPolicy

__all__ = ["WtHost"]

Address = tuple[str, int]


def _tone(n: int) -> bytes:
    t = (n * 160 + np.arange(160)) / 8000
    return ulaw_encode((6000 * np.sin(2 * math.pi * 1000 * t)).astype(np.int16).tobytes())


class WtHost:
    def __init__(self, valid_tokens: set[str], *, ring_s: float = 0.5) -> None:
        self.valid = valid_tokens
        self.ring_s = ring_s
        self.endpoint = Endpoint(
            InboundPolicy(auth="required", answer="manual", calltoken="auto"),
            "ulaw_only",
            token_key=secrets.token_bytes(32),
            randbelow=secrets.randbelow,
            peer_secret={"allstar-public": "allstar"}.get,
        )
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.addr: Address = self.sock.getsockname()[:2]
        self.incoming: list[CallIncoming] = []
        self.minis_in = 0
        #: callno -> (when, what): "answer" or "hangup".
        self._plan: dict[int, tuple[float, str]] = {}
        self._talk: tuple[int, float, int, int] | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WtHost:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()

    def _apply(self, out: EndpointOutput) -> None:
        for addr, frame in out.frames:
            self.sock.sendto(frame.to_bytes(), addr)
        now = time.monotonic()
        for event in out.events:
            if isinstance(event, CallIncoming):
                self.incoming.append(event)
                ok = event.called_number == "s" and event.calling_name in self.valid
                if ok:
                    self._plan[event.callno] = (now + self.ring_s, "answer")
                else:
                    self._apply(self.endpoint.answer(event.callno, now))
                    self._plan[event.callno] = (now + 1.0, "hangup")

    def _due(self, now: float) -> None:
        for callno, (at, what) in list(self._plan.items()):
            if at > now:
                continue
            del self._plan[callno]
            call = self.endpoint.call(callno)
            if call is None or not call.is_live:
                continue
            if what == "hangup":
                self._apply(self.endpoint.hangup(callno, now))
            else:
                self._apply(self.endpoint.answer(callno, now))
                ts = (call.timestamp(now) // 20 + 1) * 20
                self._apply(self.endpoint.send_voice_full(callno, now, 0x4, _tone(0), ts))
                self._talk = (callno, now + 0.02, ts + 20, 1)
        while self._talk is not None and self._talk[1] <= now:
            callno, at, ts, n = self._talk
            call = self.endpoint.call(callno)
            if n >= 40 or call is None or call.state is not CallState.UP:
                self._talk = None
                if call is not None and call.state is CallState.UP:
                    self._apply(self.endpoint.unkey(callno, now))
                break
            self.sock.sendto(MiniFrame(callno, ts & 0xFFFF, _tone(n)).to_bytes(), call.peer_addr)
            self._talk = (callno, at + 0.02, ts + 20, n + 1)

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.01)
            with self._lock:
                now = time.monotonic()
                if ready:
                    data, addr = self.sock.recvfrom(4096)
                    frame = parse(data)
                    if isinstance(frame, FullFrame):
                        self._apply(self.endpoint.receive(addr[:2], frame, now))
                    elif isinstance(frame, MiniFrame):
                        self.minis_in += 1
                deadline = self.endpoint.next_deadline()
                if deadline is not None and deadline <= now:
                    self._apply(self.endpoint.timer(now))
                self._due(now)
