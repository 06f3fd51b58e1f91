"""The conference bridge: topology, media legs and the local radio, over the Rust engine.

The controller calls this; it turns topology settings and call events into engine commands.
Changes are live: switching topology or devices never drops a call or a leg's audio, because the
engine applies each command between two ticks and keeps every leg's state.

Topologies (spec `[bridge]`):

- `handset`: the local radio and the call are connected 1:1. The local radio is a conference
  member and the mix is always mix-minus (hearing yourself back on a handset is never wanted).
- `bridge`: a pure conference of the calls and links; the local radio is off.
- `conference`: the same mix-minus engine; the local radio is a member when
  `include_local_radio` is true.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Literal

from node._core import DeviceError, DevicePort, Engine
from node.config import GAIN_DB_MAX, GAIN_DB_MIN
from node.errors import CommandError
from node.media.audio import AudioDevice, open_audio

__all__ = ["Keying", "LegMode", "MediaBridge", "Topology"]

log = logging.getLogger(__name__)

Mode = Literal["handset", "bridge", "conference"]
MODES: tuple[str, ...] = ("handset", "bridge", "conference")
LegMode = Literal["transceive", "receive_only", "transmit_only"]
#: How a leg's received audio keys it (see `rust/media.rs` RxKeying).
Keying = Literal["always", "vox", "voice", "control"]


@dataclass(frozen=True, slots=True)
class Topology:
    mode: Mode = "bridge"
    mix_minus: bool = True
    include_local_radio: bool = False

    @property
    def local_radio(self) -> bool:
        """Whether the local radio is a conference member under this topology."""
        return self.mode == "handset" or (self.mode == "conference" and self.include_local_radio)

    @property
    def effective_mix_minus(self) -> bool:
        return True if self.mode == "handset" else self.mix_minus

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "mix_minus": self.mix_minus,
            "include_local_radio": self.include_local_radio,
        }


class MediaBridge:
    """Owns the topology and the local audio device; drives the engine's media path."""

    def __init__(
        self,
        engine: Engine,
        topology: Topology,
        backend: str = "none",
        input: str = "",
        output: str = "",
        device_rate: int = 0,
        rx_gain_db: float = 0.0,
        tx_gain_db: float = 0.0,
    ) -> None:
        self._engine = engine
        self._topology = topology
        self._backend = backend
        self._input, self._output = input, output
        self._device_rate = device_rate
        self._gains = {"rx_gain_db": rx_gain_db, "tx_gain_db": tx_gain_db}
        self._device: AudioDevice | None = None
        self._port: DevicePort | None = None
        self._apply(topology)

    # --- topology ----------------------------------------------------------------------------

    @property
    def topology(self) -> Topology:
        return self._topology

    def set_topology(
        self,
        mode: str | None = None,
        mix_minus: bool | None = None,
        include_local_radio: bool | None = None,
    ) -> Topology:
        """Change any of the three settings live; omitted ones keep their value."""
        if mode is not None and mode not in MODES:
            raise CommandError(f"unknown bridge mode {mode!r} (accepted: {', '.join(MODES)})", 400)
        changes: dict[str, Any] = {}
        if mode is not None:
            changes["mode"] = mode
        if mix_minus is not None:
            changes["mix_minus"] = mix_minus
        if include_local_radio is not None:
            changes["include_local_radio"] = include_local_radio
        new = replace(self._topology, **changes)
        self._apply(new)
        self._topology = new
        return new

    def _apply(self, topology: Topology) -> None:
        self._engine.set_mix_minus(topology.effective_mix_minus)
        self._engine.set_local_radio(topology.local_radio)

    # --- legs --------------------------------------------------------------------------------

    def add_leg(
        self,
        callno: int,
        peer_callno: int,
        peer: tuple[str, int],
        fmt: int,
        call_ts_ms: int,
        mode: LegMode = "transceive",
        keying: Keying = "always",
        dtmf: bool = False,
    ) -> None:
        """Start a call's media; `dtmf` decodes in-band DTMF in what it sends us (engine
        "dtmf" events) and mutes the tones from the conference."""
        self._engine.add_leg(callno, peer_callno, peer, fmt, mode, call_ts_ms, keying, dtmf)

    def remove_leg(self, callno: int) -> None:
        self._engine.remove_leg(callno)

    def set_leg_mode(self, callno: int, mode: LegMode) -> None:
        self._engine.set_leg_mode(callno, mode)

    def set_leg_keying(self, callno: int, keying: Keying) -> None:
        self._engine.set_leg_keying(callno, keying)

    def set_local_dtmf(self, on: bool) -> None:
        """Decode in-band DTMF in the local radio's receive audio (and mute the tones)."""
        self._engine.set_local_dtmf(on)

    def set_local_keyed(self, keyed: bool) -> None:
        """The operator's push-to-talk: the local source talks into every call and transceive
        link (silence included) until unkeyed. Only `Controller.key`/`unkey` call this."""
        self._engine.set_local_keyed(keyed)

    def push_voice(self, callno: int, fmt: int, ts: int, payload: bytes) -> None:
        self._engine.push_voice(callno, fmt, ts, payload)

    def push_control(
        self, callno: int, kind: str, value: int, ts: int, payload: bytes = b""
    ) -> None:
        """A control event to play out in order with the call's audio: `kind` "control"
        (value = CONTROL subclass, e.g. 12 RADIO_KEY), "dtmf" (value = digit), "text"
        (payload = the text) or "cng"."""
        self._engine.push_control(callno, kind, value, ts, payload)

    def jitter_stats(self) -> dict[int, dict[str, int]]:
        return dict(self._engine.jitter_stats())

    # --- local audio device ------------------------------------------------------------------

    def _run(self, device: AudioDevice) -> dict[str, Any]:
        """Attach `device` to the engine and start it; then retire the one it replaces."""
        try:
            port = self._engine.open_device(device.device_rate, **self._gains)
        except DeviceError as exc:
            raise CommandError(str(exc), 400) from None
        try:
            device.start(port.exchange)
        except BaseException:
            port.close()
            raise
        old_device, old_port = self._device, self._port
        self._device, self._port = device, port
        if old_device is not None:
            old_device.stop()
        if old_port is not None:
            old_port.close()
        return device.describe()

    def start_audio(self) -> None:
        """Open and start the configured device (errors name the device and the choices)."""
        self._run(
            open_audio(
                self._backend, self._engine.rate, self._input, self._output, self._device_rate
            )
        )

    def set_devices(self, input: str | None = None, output: str | None = None) -> dict[str, Any]:
        """Switch devices live: the new device is opened first, so a bad name changes nothing."""
        new_in = self._input if input is None else input
        new_out = self._output if output is None else output
        device = open_audio(self._backend, self._engine.rate, new_in, new_out, self._device_rate)
        described = self._run(device)
        self._input, self._output = new_in, new_out
        return described

    def set_gains(
        self, rx_gain_db: float | None = None, tx_gain_db: float | None = None
    ) -> dict[str, float]:
        """Change the rx (captured) and tx (played) gains live, in dB; omitted ones stay."""
        changes = {"rx_gain_db": rx_gain_db, "tx_gain_db": tx_gain_db}
        for key, value in changes.items():
            if value is not None and not GAIN_DB_MIN <= value <= GAIN_DB_MAX:
                raise CommandError(
                    f"{key} must be a number from {GAIN_DB_MIN:g} to {GAIN_DB_MAX:g} (dB)", 400
                )
        if self._port is not None:
            self._port.set_gains(rx_gain_db, tx_gain_db)
        self._gains.update({k: v for k, v in changes.items() if v is not None})
        return dict(self._gains)

    def audio(self) -> dict[str, Any]:
        """The device, its blocks and both directions: gain, levels (dBFS) and what went wrong.

        `rx` is the audio captured from the radio's receiver, `tx` the audio played to its
        transmitter. Per direction: `overflows`/`underflows` are the device's own reports,
        `late` counts 20 ms frames that were not there when needed (played as silence),
        `dropped` frames discarded because the other side fell a full queue behind.
        """
        if self._device is None or self._port is None:
            return {
                "backend": self._backend,
                "running": False,
                "rx": {"gain_db": self._gains["rx_gain_db"]},
                "tx": {"gain_db": self._gains["tx_gain_db"]},
            }
        device_stats = self._device.stats
        stats = self._port.stats()
        stats["rx"]["overflows"] = device_stats.input_overflows
        stats["tx"]["underflows"] = device_stats.output_underflows
        return {
            **self._device.describe(),
            "running": True,
            "blocks": device_stats.blocks,
            "filter_delay_ms": round(self._port.filter_delay_ms, 2),
            **stats,
        }

    def close(self) -> None:
        if self._device is not None:
            self._device.stop()
            self._device = None
        if self._port is not None:
            self._port.close()
            self._port = None
