"""A web-transceiver host of our own: what an ASL3 node's `[allstar-public]` context does with a
guest call (research/allstar.md §5.1), on our `Endpoint` and a loopback UDP socket.

It challenges user `allstar-public` with MD5 against the published secret `allstar`, takes only
extension `s`, and checks CALLING_NAME against the tokens its portal issued. A good token gets
RINGING, a pause (the dialplan's `Wait`), then ANSWER and a 1 kHz talk spurt the guest must
hear; a bad one gets ANSWER, one second, HANGUP, exactly as the dialplan's `hangit` does.
"""

from __future__ import annotations

from node.iax2.call import CallIncoming
from node.iax2.endpoint import InboundPolicy
from tests.iax2.peer import LoopbackPeer

__all__ = ["WtHost"]

#: The talk spurt a good guest hears after ANSWER, in 20 ms frames.
SPURT_FRAMES = 40


class WtHost(LoopbackPeer):
    def __init__(self, valid_tokens: set[str], *, ring_s: float = 0.5) -> None:
        self.valid = valid_tokens
        self.ring_s = ring_s
        super().__init__(
            InboundPolicy(auth="required", answer="manual", calltoken="auto"),
            "ulaw_only",
            peer_secrets={"allstar-public": "allstar"},
            name="wt-host",
        )
        self.incoming: list[CallIncoming] = []
        #: callno -> (when, what): "answer" or "hangup".
        self._plan: dict[int, tuple[float, str]] = {}

    def _on_event(self, event: object, now: float) -> None:
        if isinstance(event, CallIncoming):
            self.incoming.append(event)
            ok = event.called_number == "s" and event.calling_name in self.valid
            if ok:
                self._plan[event.callno] = (now + self.ring_s, "answer")
            else:
                self._apply(self.endpoint.answer(event.callno, now))
                self._plan[event.callno] = (now + 1.0, "hangup")

    def _wake_times(self) -> list[float]:
        return [at for at, _ in self._plan.values()]

    def _tick(self, now: float) -> None:
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
                self._start_spurt(callno, now, SPURT_FRAMES, unkey=True)
