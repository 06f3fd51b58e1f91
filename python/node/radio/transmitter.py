"""When the transmitter is keyed: the conference's demand, the hang time and the TX time-out.

Sans-I/O: `demand(on, now)` says whether the local radio has audio to send (the engine's
`local_tx` edge), `timer(now)` runs the deadlines, and both return the PTT change to make, if
any. The transmitter keys at once when audio comes, stays keyed through gaps shorter than the
hang time (rpt.conf `hangtime`), and unkeys that long after the audio stops. A transmission
longer than the TX time-out is cut; the transmitter then stays off until the audio stops, so a
stuck source cannot key it again straight away (app_rpt's `totime`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PttChange", "Transmitter"]


@dataclass(frozen=True, slots=True)
class PttChange:
    """The PTT is to be keyed or released."""

    keyed: bool
    #: Why a release happened: the hang time ran out, the TX time-out, shutdown.
    reason: str | None = None
    #: The release is the TX time-out.
    timed_out: bool = False


class Transmitter:
    """The PTT's timing; `hang_s` and `timeout_s` in seconds."""

    def __init__(self, hang_s: float, timeout_s: float) -> None:
        self.hang_s = hang_s
        self.timeout_s = timeout_s
        #: The conference has audio for the local radio now.
        self.demanded = False
        #: When the PTT keyed (monotonic seconds); None while released.
        self.keyed_at: float | None = None
        #: The TX time-out cut the transmission and the audio has not stopped since.
        self.timed_out = False
        self._hang_at: float | None = None

    @property
    def keyed(self) -> bool:
        return self.keyed_at is not None

    def demand(self, on: bool, now: float) -> PttChange | None:
        self.demanded = on
        if not on:
            self.timed_out = False
            if self.keyed_at is None:
                return None
            if self.hang_s <= 0:
                return self._release("the conference went quiet")
            self._hang_at = now + self.hang_s
            return None
        self._hang_at = None
        if self.keyed_at is not None or self.timed_out:
            return None
        self.keyed_at = now
        return PttChange(True)

    def next_deadline(self) -> float | None:
        if self.keyed_at is None:
            return None
        tot = self.keyed_at + self.timeout_s
        return tot if self._hang_at is None else min(tot, self._hang_at)

    def timer(self, now: float) -> PttChange | None:
        if self.keyed_at is None:
            return None
        if now >= self.keyed_at + self.timeout_s:
            # Cut while audio still comes: held off until it stops. Cut in the hang time: the
            # audio has stopped already.
            self.timed_out = self.demanded
            return self._release(f"TX time-out after {self.timeout_s:g} s", timed_out=True)
        if self._hang_at is not None and now >= self._hang_at:
            return self._release(f"hang time ({self.hang_s * 1000:.0f} ms) over")
        return None

    def release(self, reason: str) -> PttChange | None:
        """Unkey now (shutdown); None when not keyed."""
        if self.keyed_at is None:
            return None
        return self._release(reason)

    def timeout_remaining(self, now: float) -> float | None:
        if self.keyed_at is None:
            return None
        return max(0.0, self.keyed_at + self.timeout_s - now)

    def _release(self, reason: str, *, timed_out: bool = False) -> PttChange:
        self.keyed_at = None
        self._hang_at = None
        return PttChange(False, reason, timed_out)
