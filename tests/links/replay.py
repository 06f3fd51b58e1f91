"""Replay an AllStarLink (ASL3) capture against a real `node serve`.

The node under test takes the place of one node of the capture ("us"). Every other node of the
capture is played by a `ScriptedNode`: our own sans-I/O `Endpoint` on a UDP socket (so call
tokens, MD5, sequence numbers, ACKs and keep-alives are real IAX2) that does, at the capture's
times, what that node did on its own initiative: dial, send link texts, talk (a full voice
frame, then mini frames every 20 ms), unkey, send CNG, hang up. What the operator of "us" did
(link, key, unkey, disconnect) is given as control-channel commands at the capture's times.

Long idle stretches are shortened: a gap of more than `GAP` seconds between two things anybody
did is cut to `GAP`, and what the real node sent inside a cut stretch (its periodic lists and
keep-alives, which follow its own clock) is left out of the expectation. What remains is
compared per peer, in order: every full frame the real node sent that is not an ACK or a
keep-alive, with link texts spelled out, against what our node sent to that peer's socket.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from node._core import FullFrame, MiniFrame, parse
from node.errors import LocalProtocolError
from node.iax2.call import CallState, DialParams
from node.iax2.constants import IE, ControlSubclass, FrameType, IaxSubclass
from node.iax2.endpoint import InboundPolicy
from node.links.text import DISCONNECT
from tests.iax2.peer import Address, LoopbackPeer
from tests.pcap import udp_datagrams

__all__ = [
    "GAP",
    "JitterBufferedNode",
    "Operator",
    "Script",
    "ScriptedNode",
    "load_script",
    "significant",
]

#: Longest idle stretch kept as it was in the capture (seconds).
GAP = 1.5

_KEEPALIVE = {
    IaxSubclass.ACK,
    IaxSubclass.PING,
    IaxSubclass.PONG,
    IaxSubclass.LAGRQ,
    IaxSubclass.LAGRP,
    IaxSubclass.VNAK,
    IaxSubclass.INVAL,
}


def significant(f: FullFrame) -> str | None:
    """How a full frame is compared: its kind, link texts in full, a HANGUP's cause code; None
    for what follows each side's own clock (ACKs and keep-alives)."""
    if f.retrans:
        return None
    if f.ftype == FrameType.IAX:
        sub = IaxSubclass(f.subclass)
        if sub in _KEEPALIVE:
            return None
        if sub in (IaxSubclass.HANGUP, IaxSubclass.REJECT):
            return f"{sub.name}:{f.ie(IE.CAUSECODE)}"
        return sub.name
    if f.ftype == FrameType.CONTROL:
        return ControlSubclass(f.subclass).name
    if f.ftype == FrameType.TEXT:
        return "TEXT " + bytes(f.payload).rstrip(b"\x00").decode()
    return FrameType(f.ftype).name


# --- what the capture says each node did ----------------------------------------------------


@dataclass(frozen=True)
class Step:
    """Something a scripted node does at capture time `t`."""

    t: float
    kind: str  # dial, text, talk, unkey, key, cng, hangup
    text: str = ""
    #: talk: how many 20 ms frames; hangup: the cause code.
    count: int = 0
    #: dial: the NEW's IEs (called number, calling number, username).
    dial: tuple[str, str, str] = ("", "", "")


@dataclass(frozen=True)
class Operator:
    """A control-channel command to the node under test at capture time `t`."""

    t: float
    path: str
    body: dict[str, str] = field(default_factory=dict)


@dataclass
class Script:
    """One capture seen from the node under test."""

    #: Per other node (its capture address): its steps.
    steps: dict[Address, list[Step]]
    #: Per other node: what the real node under test sent it, kept after the cuts.
    expected: dict[Address, list[str]]
    #: Per other node: mini frames the real node sent it inside the kept stretches.
    expected_minis: dict[Address, int]
    operators: list[Operator]
    #: Capture time -> replay time (seconds after the start).
    replay_time: Callable[[float], float]
    duration: float


def _timeline(events: list[float]) -> tuple[Callable[[float], float], Callable[[float], bool]]:
    """(capture time -> replay time, whether a capture time falls in a cut stretch)."""
    points = sorted(set(events))
    cuts: list[tuple[float, float]] = []  # (from, to) of each cut stretch
    for a, b in itertools.pairwise(points):
        if b - a > GAP:
            # Keep what was sent just before the next event: the capture's clock and the
            # event times read off it differ by a fraction of a millisecond.
            cuts.append((a + GAP, b - 0.01))

    def replay(t: float) -> float:
        removed = sum(min(t, b) - a for a, b in cuts if t > a)
        return t - removed

    def cut(t: float) -> bool:
        return any(a < t < b for a, b in cuts) or t > points[-1] + GAP

    return replay, cut


def load_script(
    pcap: Path, us: Address, operators: list[Operator], *, spurts: dict[Address, list[float]]
) -> Script:
    """Read `pcap` with the node at `us` as the node under test. `spurts` lists, per other
    node, the capture times at which it started talking (its full VOICE frames that start a
    spurt, as opposed to a relay of someone else's voice, which our node must produce itself)."""
    steps: dict[Address, list[Step]] = {}
    sent: dict[Address, list[tuple[float, str | None, bool]]] = {}
    grams = udp_datagrams(pcap)
    t0 = None
    talking: dict[Address, Step] = {}
    #: Per peer, the source call number of its last NEW (a NEW again with a call token is the
    #: same call; another call number is a new call).
    dialled: dict[Address, int] = {}
    for d in grams:
        frame = parse(d.payload)
        if t0 is None:
            t0 = d.time
        t = d.time - t0
        if d.dst == us:
            peer = d.src
            seq = steps.setdefault(peer, [])
            if isinstance(frame, MiniFrame):
                if peer in talking:
                    s = talking[peer]
                    talking[peer] = Step(s.t, "talk", count=s.count + 1)
                continue
            if not isinstance(frame, FullFrame) or frame.retrans:
                continue
            step = _step_of(frame, t, peer, spurts)
            if step is not None:
                if step.kind != "talk" and peer in talking:
                    seq.append(talking.pop(peer))
                if step.kind == "talk":
                    talking[peer] = step
                elif step.kind != "dial" or dialled.get(peer) != frame.scall:
                    seq.append(step)
                if step.kind == "dial":
                    dialled[peer] = frame.scall
        elif d.src == us:
            peer = d.dst
            if isinstance(frame, MiniFrame):
                sent.setdefault(peer, []).append((t, None, True))
            elif isinstance(frame, FullFrame):
                sent.setdefault(peer, []).append((t, significant(frame), False))
    for peer, s in talking.items():
        steps[peer].append(s)
    for seq in steps.values():
        seq.sort(key=lambda s: s.t)
    events = [s.t for seq in steps.values() for s in seq]
    events += [s.t + s.count * 0.02 for seq in steps.values() for s in seq if s.kind == "talk"]
    events += [o.t for o in operators]
    replay, cut = _timeline(events)
    # Lists follow a link being added by at most a kick (250 ms); later ones are periodic
    # (every 30 s on the real node's clock), which the shortened replay does not reproduce.
    added = [o.t for o in operators if o.body.get("action") in ("connect", "monitor")]
    added += [s.t for seq in steps.values() for s in seq if s.kind == "dial"]

    def periodic(t: float, name: str | None) -> bool:
        is_list = name is not None and name.startswith("TEXT L ")
        return is_list and not any(0 <= t - a < 1.0 for a in added)

    expected: dict[Address, list[str]] = {}
    minis: dict[Address, int] = {}
    for peer, frames in sent.items():
        kept = [(t, n, mini) for t, n, mini in frames if not cut(t) and not periodic(t, n)]
        names = [name for _, name, mini in kept if not mini and name is not None]
        expected[peer] = _far_end_hangs_up(names)
        minis[peer] = sum(1 for _, _, mini in kept if mini)
    return Script(steps, expected, minis, operators, replay, replay(max(events)) + GAP)


def _far_end_hangs_up(names: list[str]) -> list[str]:
    """Where the real node sent `!!DISCONNECT!!` and its HANGUP at once, ours sends the text and
    waits for the far end's HANGUP (app_rpt hangs up on reading it; `TEARDOWN_WAIT` in
    `node/links/network.py` says why): that HANGUP of the capture is not expected from us."""
    out: list[str] = []
    disconnecting = False
    for name in names:
        if name == f"TEXT {DISCONNECT}":
            disconnecting = True
        elif disconnecting and name.startswith("HANGUP:"):
            disconnecting = False
            continue
        elif not name.startswith("TEXT "):
            disconnecting = False
        out.append(name)
    return out


def _step_of(
    frame: FullFrame, t: float, peer: Address, spurts: dict[Address, list[float]]
) -> Step | None:
    if frame.ftype == FrameType.IAX:
        if frame.subclass == IaxSubclass.NEW:
            new = (
                _s(frame, IE.CALLED_NUMBER),
                _s(frame, IE.CALLING_NUMBER),
                _s(frame, IE.USERNAME),
            )
            return Step(t, "dial", dial=new)
        if frame.subclass == IaxSubclass.HANGUP:
            code = frame.ie(IE.CAUSECODE)
            return Step(t, "hangup", count=code if isinstance(code, int) else 16)
        return None
    if frame.ftype == FrameType.TEXT:
        return Step(t, "text", text=bytes(frame.payload).rstrip(b"\x00").decode())
    if frame.ftype == FrameType.VOICE:
        if any(abs(t - start) < 0.005 for start in spurts.get(peer, ())):
            return Step(t, "talk", count=1)
        return None
    if frame.ftype == FrameType.CONTROL:
        if frame.subclass == ControlSubclass.RADIO_UNKEY:
            return Step(t, "unkey")
        if frame.subclass == ControlSubclass.RADIO_KEY:
            return Step(t, "key")
        return None
    if frame.ftype == FrameType.CNG:
        return Step(t, "cng")
    return None


def _s(frame: FullFrame, ie: int) -> str:
    value = frame.ie(ie)
    return value if isinstance(value, str) else ""


# --- a scripted node ----------------------------------------------------------------------------


class ScriptedNode(LoopbackPeer):
    """One other node of the capture: an IAX2 endpoint on 127.0.0.1 that runs its steps."""

    def __init__(
        self,
        name: str,
        *,
        auth: tuple[str, str] | None = None,
        codec_policy: str = "ulaw_only",
    ) -> None:
        """`auth` = (username, secret): challenge callers presenting that user with MD5, and
        answer a challenge with the secret when dialling as that user."""
        self.auth = auth
        super().__init__(
            InboundPolicy(auth="required" if auth else "off", answer="auto", calltoken="auto"),
            codec_policy,
            peer_secrets={auth[0]: auth[1]} if auth else None,
            name=name,
        )
        #: What the node under test sent us: significant full frames in order (and, counted by
        #: the base, its mini frames).
        self.received: list[str] = []
        self.callno: int | None = None

    # --- steps (test thread) ------------------------------------------------------------------

    def wait_call(self, timeout: float = 5.0) -> int:
        """Our call with the node under test, once answered (a node sends its link texts and
        voice only then; before ANSWER the other side does not treat the call as a link)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for callno, call in self.endpoint.calls.items():
                    if call.state is CallState.UP:
                        self.callno = callno
                        return callno
            time.sleep(0.002)
        raise AssertionError(
            f"{self.name}: no call with the node under test (received {self.received})"
        )

    def run(self, step: Step, target: Address) -> None:
        now = time.monotonic()
        if step.kind == "dial":
            called, calling, username = step.dial
            secret = self.auth[1] if self.auth and self.auth[0] == username else None
            params = DialParams(
                called, calling_number=calling or None, username=username or None, secret=secret
            )
            with self._lock:
                self.callno, out = self.endpoint.dial(now, target, params)
                self._apply(out)
            return
        callno = self.wait_call()
        with self._lock:
            try:
                if step.kind == "text":
                    self._apply(self.endpoint.send_text(callno, now, step.text))
                elif step.kind == "talk":
                    self._start_spurt(callno, now, step.count)
                elif step.kind == "unkey":
                    self._stop_spurt()
                    self._apply(self.endpoint.unkey(callno, now))
                elif step.kind == "key":
                    self._apply(self.endpoint.key(callno, now))
                elif step.kind == "cng":
                    self._apply(self.endpoint.send_cng(callno, now))
                elif step.kind == "hangup":
                    self._stop_spurt()
                    self._apply(self.endpoint.hangup(callno, now, None, step.count))
            except LocalProtocolError as exc:
                self.errors.append(f"{step.kind} at {step.t:.3f}: {exc}")

    # --- the socket thread --------------------------------------------------------------------

    def _on_full(self, addr: Address, frame: FullFrame, now: float) -> None:
        name = significant(frame)
        if name is not None:
            self.received.append(name)
        super()._on_full(addr, frame, now)
        if name == f"TEXT {DISCONNECT}":
            self._read_disconnect(frame.dcall, now)

    def _read_disconnect(self, callno: int, now: float) -> None:
        """The node reads `!!DISCONNECT!!`."""
        # What app_rpt does on reading the text: hang the link's call up (cause 0). The
        # node under test waits for this HANGUP instead of sending its own.
        call = self.endpoint.call(callno)
        if call is not None and call.state is CallState.UP:
            self._stop_spurt()
            self._apply(self.endpoint.hangup(callno, now, None, 0))


class JitterBufferedNode(ScriptedNode):
    """A scripted node that reads texts only `hold` seconds after they arrive (an IAX2 jitter
    buffer forced on, as ASL3 ships it), while a HANGUP ends its call at once: the order in
    which app_rpt sees `!!DISCONNECT!!` and a HANGUP sent right behind it."""

    def __init__(self, name: str, *, hold: float) -> None:
        super().__init__(name)
        self.hold = hold
        self._held: list[tuple[float, int]] = []
        #: When the node read `!!DISCONNECT!!` (monotonic), and whether its call was still up.
        self.read_disconnect: tuple[float, bool] | None = None

    def _read_disconnect(self, callno: int, now: float) -> None:
        self._held.append((now + self.hold, callno))

    def _wake_times(self) -> list[float]:
        return [at for at, _ in self._held]

    def _tick(self, now: float) -> None:
        for at, callno in [h for h in self._held if h[0] <= now]:
            self._held.remove((at, callno))
            call = self.endpoint.call(callno)
            self.read_disconnect = (now, call is not None and call.state is CallState.UP)
            super()._read_disconnect(callno, now)
