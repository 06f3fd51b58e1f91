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
- `parrot` (extension, tuned by `[parrot]`): no conference; whatever a member says is recorded
  and played back to that member alone (`rust/parrot.rs`). The local radio takes part when
  `include_local_radio` is true.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from node._core import DeviceError, DevicePort, Engine, UsrpPort, cw_pcm, resample_pcm, tone_pcm
from node.config import GAIN_DB_MAX, GAIN_DB_MIN, ParrotConfig, UsrpConfig
from node.errors import CommandError
from node.iax2 import call as c
from node.iax2.constants import ControlSubclass
from node.iax2.endpoint import LOCAL_PEER
from node.media.audio import AudioDevice, NullAudio, UsrpAudio, open_audio
from node.media.station import LocalLinks, StationEngine

__all__ = [
    "CallLeg",
    "Destination",
    "Keying",
    "LegMode",
    "MediaBridge",
    "PlaybackEnded",
    "Topology",
]

log = logging.getLogger(__name__)

Mode = Literal["handset", "bridge", "conference", "parrot"]
MODES: tuple[str, ...] = ("handset", "bridge", "conference", "parrot")
LegMode = Literal["transceive", "receive_only", "transmit_only", "local_only"]
#: How a leg's received audio keys it (see `rust/media/` RxKeying).
Keying = Literal["always", "vox", "voice", "control"]
#: Where an announcement is heard (docs/media.md, "The announcement player").
Destination = Literal["to_monitor", "to_air", "to_air_and_links"]
DESTINATIONS: tuple[str, ...] = ("to_monitor", "to_air", "to_air_and_links")
#: Called once when a playback ends: True when it played out, False when it was cut short.
PlaybackEnded = Callable[[bool], None]


class CallLeg(Protocol):
    """What a leg needs of an IAX2 call (`node.iax2.call.Call`)."""

    callno: int
    peer_callno: int
    peer_addr: tuple[str, int]
    format: int | None

    def timestamp(self, now: float) -> int: ...


@dataclass(frozen=True, slots=True)
class Topology:
    mode: Mode = "bridge"
    mix_minus: bool = True
    include_local_radio: bool = False

    @property
    def local_radio(self) -> bool:
        """Whether the local radio is a conference member under this topology."""
        return self.mode == "handset" or (
            self.mode in ("conference", "parrot") and self.include_local_radio
        )

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
        engine: Engine | StationEngine,
        topology: Topology,
        backend: str = "none",
        input: str = "",
        output: str = "",
        device_rate: int = 0,
        rx_gain_db: float = 0.0,
        tx_gain_db: float = 0.0,
        *,
        rx_delay_ms: int = 0,
        vox: tuple[float, int, int] | None = None,
        gated: bool = False,
        parrot: ParrotConfig | None = None,
        usrp: UsrpConfig | None = None,
        station: int = 0,
        local_links: LocalLinks | None = None,
    ) -> None:
        """`rx_delay_ms`, `vox` and `gated` come from `[radio]` (see `node.radio.Radio`): the
        received audio's delay, VOX on it, and whether it is heard only while keyed; `parrot`
        tunes the `parrot` topology. `station` is the engine's conference of this node (one per
        node of the host, `engine` a `StationEngine` for all but the first), `local_links` the
        host's pairing of local links' legs."""
        self._engine = engine
        self._station = station
        self._local_links = local_links
        self._topology = topology
        self._parrot = parrot if parrot is not None else ParrotConfig()
        self._rx_delay_ms, self._vox = rx_delay_ms, vox
        engine.set_local_gated(gated)
        self._backend = backend
        self._input, self._output = input, output
        self._device_rate = device_rate
        self._usrp = usrp
        #: The D-Star guard of a `dstar` USRP radio: no playback may key its transmitter.
        self._dstar_guard = backend == "usrp" and usrp is not None and usrp.network == "dstar"
        self._gains = {"rx_gain_db": rx_gain_db, "tx_gain_db": tx_gain_db}
        self._device: AudioDevice | None = None
        self._port: DevicePort | UsrpPort | None = None
        #: Playbacks in the engine: id -> (kind, called when it ends).
        self._playing: dict[int, tuple[str, PlaybackEnded | None]] = {}
        self._ids = itertools.count(1)
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
        p = self._parrot
        self._engine.set_parrot(
            topology.mode == "parrot",
            p.playback_delay_ms,
            p.silence_gap_ms,
            p.vox_threshold_db,
        )

    # --- announcements ------------------------------------------------------------------------

    @property
    def rate(self) -> int:
        """The station rate every PCM handed to `play` must have."""
        return self._engine.rate

    def play(
        self,
        pcm: bytes,
        destination: Destination,
        kind: str,
        *,
        keys_transmitter: bool = False,
        on_ended: PlaybackEnded | None = None,
    ) -> int:
        """Mix `pcm` (native int16 at the station rate, at most 2 minutes) into `destination`
        from the next 20 ms tick; returns the playback's id.

        `destination`: "to_monitor" (the local radio's output only, whatever the topology),
        "to_air" (the local radio's output and every call, never a link), "to_air_and_links"
        (the transceive links too, which keys them: only for what the operator asked to go out
        on the network). `kind` names what plays in the `announcement_started` /
        `announcement_finished` events ("id", "event", "command", "telemetry"). Several
        playbacks mix; none counts as a talker. `keys_transmitter` lets it key the local
        transmitter: only the station ID under `[announce] cw_keys_when_idle` may.
        `on_ended(completed)` is called once when it ends (from `playback_event`).
        """
        if destination not in DESTINATIONS:
            raise CommandError(
                f"unknown destination {destination!r} (accepted: {', '.join(DESTINATIONS)})", 400
            )
        playback = next(self._ids) & 0xFFFFFFFF
        self._playing[playback] = (kind, on_ended)
        # A D-Star transmitter behind a USRP radio is never keyed from here (spec Errors rule
        # 3): an ID still reaches the calls, and the radio only while something else keys it.
        keys = keys_transmitter and not self._dstar_guard
        self._engine.play(playback, pcm, destination, keys)
        return playback

    def stop_playing(self, playback: int) -> None:
        """Cut a playback short (it ends with completed False); unknown ids are ignored."""
        if playback in self._playing:
            self._engine.stop_playing(playback)

    def playback_event(self, started: bool, playback: int, completed: bool = True) -> str | None:
        """An engine `PlayStarted`/`PlayFinished` event: the playback's kind (None for one
        this bridge did not start); on the finish, `on_ended` is called and the id forgotten."""
        if started:
            entry = self._playing.get(playback)
            return None if entry is None else entry[0]
        entry = self._playing.pop(playback, None)
        if entry is None:
            return None
        kind, on_ended = entry
        if on_ended is not None:
            on_ended(completed)
        return kind

    def cw_pcm(self, text: str, wpm: int, tone_hz: float, level_dbfs: float) -> bytes:
        """CW of `text` at the station rate (PARIS timing: a dot is 1200/wpm ms)."""
        return cw_pcm(self.rate, text, wpm, tone_hz, level_dbfs)

    def tone_pcm(self, freq_hz: float, duration_ms: int, level_dbfs: float) -> bytes:
        """A tone of `duration_ms` at the station rate, with 5 ms ramps."""
        return tone_pcm(self.rate, freq_hz, duration_ms, level_dbfs)

    def to_station_rate(self, pcm: bytes, rate: int, gain_db: float = 0.0) -> bytes:
        """`pcm` (native int16 at `rate`, e.g. a TTS binary's 22050 Hz) resampled to the
        station rate, with `gain_db` applied."""
        return resample_pcm(pcm, rate, self.rate, gain_db)

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
        link: bool = False,
    ) -> None:
        """Start a call's media; `dtmf` decodes in-band DTMF in what it sends us (engine
        `DtmfDecoded` events) and mutes the tones from the conference; `link` marks a node-to-node
        link, which announcements reach only as "to_air_and_links"."""
        self._engine.add_leg(callno, peer_callno, peer, fmt, mode, call_ts_ms, keying, dtmf, link)

    def add_call_leg(self, call: CallLeg, now: float, **options: Any) -> None:
        """Start the media of a call that has its codec: its numbers, peer and clock, with
        `add_leg`'s `mode`, `keying`, `dtmf` and `link` options."""
        assert call.format is not None
        if call.peer_addr == LOCAL_PEER and self._local_links is not None:
            # A link to another node of this host: its audio crosses inside the engine.
            mode = options.get("mode", "transceive")
            self._local_links.add(self._station, call.callno, call.peer_callno, mode)
            return
        self.add_leg(
            call.callno,
            call.peer_callno,
            call.peer_addr,
            call.format,
            call.timestamp(now),
            **options,
        )

    def remove_leg(self, callno: int) -> None:
        local = self._local_links
        if local is not None and local.owns(callno):
            local.remove(callno)
            return
        self._engine.remove_leg(callno)

    def set_leg_mode(self, callno: int, mode: LegMode) -> None:
        local = self._local_links
        if local is not None and local.set_mode(callno, mode):
            return
        self._engine.set_leg_mode(callno, mode)

    def set_leg_keying(self, callno: int, keying: Keying) -> None:
        self._engine.set_leg_keying(callno, keying)

    def set_local_dtmf(self, on: bool) -> None:
        """Decode in-band DTMF in the local radio's receive audio (and mute the tones)."""
        self._engine.set_local_dtmf(on)

    def set_local_keyed(self, keyed: bool) -> None:
        """The operator's push-to-talk: the local source talks into every call and transceive
        link (silence included) until unkeyed. Only the transmit service's `key`/`unkey` call
        this."""
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

    def push_received(self, event: c.VoiceFullReceived | c.RadioKeyed | c.RadioUnkeyed) -> None:
        """A call's received full voice frame or radio key / unkey goes to its leg, to play
        out in order with the call's audio."""
        if isinstance(event, c.VoiceFullReceived):
            self.push_voice(event.callno, event.format, event.ts, event.payload)
        else:
            keyed = isinstance(event, c.RadioKeyed)
            sub = ControlSubclass.RADIO_KEY if keyed else ControlSubclass.RADIO_UNKEY
            self.push_control(event.callno, "control", int(sub), event.ts)

    @property
    def usrp_port(self) -> UsrpPort | None:
        """The USRP radio's port while `[audio] backend = "usrp"` runs."""
        return self._port if isinstance(self._port, UsrpPort) else None

    def jitter_stats(self) -> dict[int, dict[str, int]]:
        return dict(self._engine.jitter_stats())

    # --- local audio device ------------------------------------------------------------------

    def _run(self, device: AudioDevice) -> dict[str, Any]:
        """Attach `device` to the engine and start it; then retire the one it replaces."""
        if isinstance(device, UsrpAudio):
            # A USRP radio has no blocks to exchange: the engine's own thread runs it.
            if self._port is not None:
                self._port.close()
                self._port = None
            port = device.open_port(self._engine, **self._gains)
            self._device, self._port = device, port
            return device.describe()
        try:
            # The null device trades no blocks: its port meters and converts nothing, and does
            # not keep the engine's clock running (an idle node sleeps).
            port = self._engine.open_device(
                device.device_rate,
                **self._gains,
                rx_delay_ms=self._rx_delay_ms,
                vox=self._vox,
                trades=not isinstance(device, NullAudio),
            )
        except DeviceError as exc:
            raise CommandError(str(exc), 400) from None
        try:
            device.start(port.exchange)
        except BaseException:
            port.close()
            raise
        self._retire()
        self._device, self._port = device, port
        return device.describe()

    def _retire(self) -> None:
        """Stop the device and close the port a new one replaces."""
        old_device, old_port = self._device, self._port
        self._device, self._port = None, None
        if old_device is not None:
            old_device.stop()
        if old_port is not None:
            old_port.close()

    def start_audio(self) -> None:
        """Open and start the configured device (errors name the device and the choices)."""
        self._run(
            open_audio(
                self._backend,
                self._engine.rate,
                self._input,
                self._output,
                self._device_rate,
                self._usrp,
            )
        )

    def set_devices(self, input: str | None = None, output: str | None = None) -> dict[str, Any]:
        """Switch devices live: the new device is opened first, so a bad name changes nothing."""
        new_in = self._input if input is None else input
        new_out = self._output if output is None else output
        if self._backend == "usrp":
            raise CommandError("a USRP radio has no sound devices to switch ([usrp] sets it)", 400)
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
        if isinstance(self._device, UsrpAudio):
            return {**self._device.describe(), "running": True, **stats}
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
