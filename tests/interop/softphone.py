"""A small IAX2 softphone for interop tests: our sans-I/O `Endpoint` on a real UDP socket.

It dials a node (or answers a node's call), and once the call is answered it talks: an optional
RADIO_KEY, then a sine tone as one full voice frame followed by a mini frame every 20 ms (a new
full frame whenever the timestamp's upper 16 bits change, as the mini header only carries the
lower ones). Everything it hears is decoded and kept per call by timestamp, so duplicates and
reordering on the way in do not change the recording.

The protocol is the product's own `Endpoint`/`Call` (that is what makes it a softphone rather
than a frame generator); only the 20 ms talk clock and the recording live here, on the socket
and thread of `tests.iax2.peer.LoopbackPeer`. The test thread calls the public methods, which
take the socket thread's lock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from node._core import (
    MiniFrame,
    alaw_decode,
    alaw_encode,
    slin16_from_wire,
    slin16_to_wire,
    slin_from_wire,
    slin_to_wire,
    ulaw_decode,
    ulaw_encode,
)
from node.iax2.call import (
    CallAnswered,
    CallHungUp,
    CallLost,
    CallRejected,
    DialParams,
    VoiceFullReceived,
)
from node.iax2.constants import Format
from node.iax2.endpoint import InboundPolicy
from tests.iax2.peer import FRAME_MS, Address, LoopbackPeer

__all__ = ["FRAME_MS", "Softphone", "band_levels_db", "rate_of"]


def rate_of(fmt: int) -> int:
    return 16000 if fmt == Format.SLIN16 else 8000


#: Per wire format the softphone speaks: (PCM to payload, payload to PCM).
_CODECS = {
    Format.ULAW: (ulaw_encode, ulaw_decode),
    Format.ALAW: (alaw_encode, alaw_decode),
    Format.SLIN: (slin_to_wire, slin_from_wire),
    Format.SLIN16: (slin16_to_wire, slin16_from_wire),
}


def _codec(fmt: int) -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]:
    try:
        return _CODECS[fmt]
    except KeyError:
        raise ValueError(f"the softphone cannot encode or decode format {fmt:#x}") from None


def _unwrap(reference: int, ts16: int) -> int:
    """The 32-bit timestamp nearest to `reference` whose low 16 bits are `ts16`."""
    candidate = (reference & ~0xFFFF) | ts16
    if candidate - reference > 0x8000:
        candidate -= 0x10000
    elif reference - candidate > 0x8000:
        candidate += 0x10000
    return candidate & 0xFFFFFFFF


def band_levels_db(
    pcm: np.ndarray, rate: int, freqs: list[float], half_width: float = 30.0
) -> list[float]:
    """Energy of `pcm` in a band around each of `freqs`, in dB relative to its total energy.

    A Hann window keeps the leakage of one tone into another band far below any threshold a
    test uses; the DC offset is removed first so it does not count as signal.
    """
    x = pcm.astype(np.float64)
    x -= x.mean()
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    bins = np.fft.rfftfreq(len(x), 1.0 / rate)
    total = float(spectrum.sum()) or 1e-30
    levels = []
    for f in freqs:
        band = float(spectrum[(bins >= f - half_width) & (bins <= f + half_width)].sum())
        levels.append(10 * math.log10(max(band, 1e-30) / total))
    return levels


@dataclass
class _Talker:
    """What a call sends, on its own 20 ms schedule: the phone's tone, or a PCM recording (at the
    call's rate) that ends the talk spurt when it runs out."""

    fmt: int
    next_at: float
    ts: int
    sample: int = 0
    last_full_hi: int | None = None
    pcm: np.ndarray | None = None


@dataclass
class Recording:
    """What one call received: decoded PCM by sender timestamp, and frame counts."""

    fmt: int | None = None
    frames: dict[int, bytes] = field(default_factory=dict)
    #: When each frame arrived (`time.monotonic()`), by timestamp.
    arrived: dict[int, float] = field(default_factory=dict)
    full_voice: int = 0
    mini: int = 0
    last_ts: int = 0

    def spurts(self, gap_ms: int = 100) -> list[tuple[float, np.ndarray]]:
        """The talk spurts heard: (arrival time of the first frame, audio), split where the
        timestamps jump by more than `gap_ms`."""
        out: list[tuple[float, np.ndarray]] = []
        start: int | None = None
        chunks: list[bytes] = []
        last = 0
        for ts in sorted(self.frames):
            if start is not None and ts - last > gap_ms:
                out.append((self.arrived[start], np.frombuffer(b"".join(chunks), np.int16)))
                start, chunks = None, []
            if start is None:
                start = ts
            chunks.append(self.frames[ts])
            last = ts
        if start is not None:
            out.append((self.arrived[start], np.frombuffer(b"".join(chunks), np.int16)))
        return out

    def pcm(self, skip_ms: int = 0) -> np.ndarray:
        """The received audio in timestamp order (native int16), without the first `skip_ms`."""
        if not self.frames:
            return np.zeros(0, dtype=np.int16)
        first = min(self.frames)
        chunks = [self.frames[ts] for ts in sorted(self.frames) if ts - first >= skip_ms]
        return np.frombuffer(b"".join(chunks), dtype=np.int16)


class Softphone(LoopbackPeer):
    """One softphone on 127.0.0.1 (or `bind`), a free port; use it as a context manager."""

    idle_s = 0.05

    def __init__(
        self,
        *,
        codec_policy: str = "ulaw_only",
        tone_hz: float | None = None,
        amplitude: int = 8000,
        key: bool = False,
        auth: str = "off",
        peer_secrets: dict[str, str] | None = None,
        name: str = "softphone",
        bind: str = "127.0.0.1",
    ) -> None:
        self.tone_hz = tone_hz
        self.amplitude = amplitude
        self.key = key
        super().__init__(
            InboundPolicy(auth=auth, answer="auto", calltoken="auto"),
            codec_policy,
            peer_secrets=peer_secrets,
            name=name,
            bind=bind,
        )
        self.events: list[object] = []
        self.recordings: dict[int, Recording] = {}
        self.sent_full_voice = 0
        self.sent_mini = 0
        #: When the last frame of a `send_pcm` recording went out (`time.monotonic()`), per call.
        self.finished_sending: dict[int, float] = {}
        self._talkers: dict[int, _Talker] = {}

    # --- commands (test thread) ---------------------------------------------------------------

    def dial(
        self,
        addr: Address,
        number: str,
        *,
        calling_number: str | None = None,
        username: str | None = None,
        secret: str | None = None,
    ) -> int:
        """Call `number` at `addr`; returns our call number."""
        params = DialParams(
            number,
            calling_number=calling_number,
            calling_name=self.name,
            username=username,
            secret=secret,
        )
        with self._lock:
            callno, out = self.endpoint.dial(time.monotonic(), addr, params)
            self._apply(out)
        return callno

    def hangup(self, callno: int) -> None:
        with self._lock:
            self._apply(self.endpoint.hangup(callno, time.monotonic()))

    def send_dtmf(self, callno: int, digits: str) -> None:
        """Type `digits` on the call: one DTMF_BEGIN + DTMF frame pair per digit, as Asterisk
        and the web-transceiver apps send them."""
        with self._lock:
            for digit in digits:
                self._apply(self.endpoint.send_dtmf(callno, time.monotonic(), digit))

    def send_pcm(self, callno: int, pcm: np.ndarray) -> None:
        """Talk `pcm` (int16 at the call's codec rate) on an answered call, 20 ms per frame in
        real time (the last frame padded with silence), then fall silent. Replaces whatever the
        call was sending."""
        with self._lock:
            call = self.endpoint.call(callno)
            if call is None or call.format is None:
                raise ValueError(f"call {callno} is not answered")
            now = time.monotonic()
            ts = call.timestamp(now)
            self._talkers[callno] = _Talker(
                call.format, now, max(ts, 1), pcm=np.asarray(pcm, dtype=np.int16)
            )

    def sending(self, callno: int) -> bool:
        """Whether the call is still sending a PCM recording given to `send_pcm`."""
        with self._lock:
            talker = self._talkers.get(callno)
            return talker is not None and talker.pcm is not None

    def stop_talking(self, callno: int) -> None:
        """End the tone on the call (and unkey it when the phone keys)."""
        with self._lock:
            self._talkers.pop(callno, None)
            if self.key and callno in self.endpoint.calls:
                self._apply(self.endpoint.unkey(callno, time.monotonic()))

    def events_of(self, kind: type, callno: int | None = None) -> list:
        with self._lock:
            return [
                e
                for e in self.events
                if isinstance(e, kind) and (callno is None or getattr(e, "callno", None) == callno)
            ]

    def answered(self, callno: int | None = None) -> bool:
        return bool(self.events_of(CallAnswered, callno))

    def ended(self, callno: int) -> bool:
        return bool(
            self.events_of(CallHungUp, callno)
            or self.events_of(CallRejected, callno)
            or self.events_of(CallLost, callno)
        )

    def recording(self, callno: int) -> Recording:
        with self._lock:
            return self.recordings.setdefault(callno, Recording())

    def heard_ms(self, callno: int) -> int:
        with self._lock:
            rec = self.recordings.get(callno)
            return FRAME_MS * len(rec.frames) if rec else 0

    # --- the socket thread --------------------------------------------------------------------

    def _on_event(self, event: object, now: float) -> None:
        self.events.append(event)
        callno = getattr(event, "callno", None)
        if isinstance(event, CallAnswered) and callno is not None:
            self._answered(callno, now)
        elif isinstance(event, VoiceFullReceived):
            rec = self.recordings.setdefault(event.callno, Recording())
            rec.full_voice += 1
            self._record(rec, event.format, event.ts, event.payload)
        elif isinstance(event, CallHungUp | CallRejected | CallLost):
            self._talkers.pop(event.callno, None)

    def _answered(self, callno: int, now: float) -> None:
        call = self.endpoint.call(callno)
        if call is None or call.format is None:
            return
        if self.key:
            self._apply(self.endpoint.key(callno, now))
        if self.tone_hz is not None:
            ts = call.timestamp(now)
            # Voice timestamps run on a 20 ms grid from the first frame.
            self._talkers[callno] = _Talker(call.format, now, max(ts, 1))

    def _record(self, rec: Recording, fmt: int, ts: int, payload: bytes) -> None:
        rec.fmt = fmt
        rec.last_ts = ts
        try:
            rec.frames[ts] = _codec(fmt)[1](payload)
            rec.arrived.setdefault(ts, time.monotonic())
        except ValueError as exc:
            self.errors.append(f"undecodable voice at ts {ts}: {exc}")

    def _on_mini(self, addr: Address, mini: MiniFrame) -> None:
        for callno, call in self.endpoint.calls.items():
            if call.peer_addr == addr and call.peer_callno == mini.scall:
                rec = self.recordings.setdefault(callno, Recording())
                if rec.fmt is None:
                    self.errors.append(f"mini frame before any full voice frame on {callno}")
                    return
                rec.mini += 1
                self._record(rec, rec.fmt, _unwrap(rec.last_ts, mini.ts16), mini.payload)
                return
        self.errors.append(f"mini frame from {addr} for unknown call {mini.scall}")

    def _wake_times(self) -> list[float]:
        return [t.next_at for t in self._talkers.values()]

    def _tick(self, now: float) -> None:
        """Send what each talking call has due."""
        for callno, talker in list(self._talkers.items()):
            call = self.endpoint.call(callno)
            if call is None or call.format is None:
                del self._talkers[callno]
                continue
            while talker.next_at <= now:
                rate = rate_of(talker.fmt)
                n = rate * FRAME_MS // 1000
                if talker.pcm is not None:
                    pcm = talker.pcm[talker.sample : talker.sample + n]
                    if len(pcm) == 0:
                        del self._talkers[callno]
                        self.finished_sending[callno] = now
                        break
                    pcm = np.pad(pcm, (0, n - len(pcm)))
                else:
                    t = (talker.sample + np.arange(n)) / rate
                    assert self.tone_hz is not None
                    pcm = (self.amplitude * np.sin(2 * np.pi * self.tone_hz * t)).astype(np.int16)
                payload = _codec(talker.fmt)[0](pcm.tobytes())
                hi = talker.ts >> 16
                if talker.last_full_hi != hi:
                    self._apply(
                        self.endpoint.send_voice_full(callno, now, talker.fmt, payload, talker.ts)
                    )
                    talker.last_full_hi = hi
                    self.sent_full_voice += 1
                else:
                    self._send_mini(call, talker.ts, payload)
                    self.sent_mini += 1
                talker.sample += n
                talker.ts += FRAME_MS
                talker.next_at += FRAME_MS / 1000
