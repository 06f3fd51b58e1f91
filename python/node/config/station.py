"""The sections of the station itself: the conference, sound devices, announcements, DTMF, keying,
the radio and parrot mode.

Declared as in `node.config.network`: each key once, with what the template says about it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal

from node.config.schema import key
from node.config.values import (
    Address,
    Context,
    FrozenDict,
    Invalid,
    array,
    bind_address,
    choice_set,
    peer_address,
    string,
)

__all__ = [
    "CM108_BUTTONS",
    "EVENT_NAMES",
    "GAIN_DB_MAX",
    "GAIN_DB_MIN",
    "INBAND_SOURCES",
    "JITTER_HEADROOM_MS",
    "SERIAL_CARRIER_PINS",
    "SERIAL_PTT_PINS",
    "SPEC_EVENT_NAMES",
    "AnnounceConfig",
    "AnnounceEventConfig",
    "AudioConfig",
    "BridgeConfig",
    "DtmfConfig",
    "KeyingConfig",
    "ParrotConfig",
    "RadioConfig",
    "TtsConfig",
    "UsrpConfig",
]

BridgeMode = Literal["handset", "bridge", "conference", "parrot"]
AudioBackend = Literal["cpal", "none", "usrp"]
UsrpNetwork = Literal["analog", "dmr", "ysf", "dstar", "p25", "nxdn"]
Concealment = Literal["pitch", "fade"]
IdMode = Literal["cw", "tts", "off"]
Destination = Literal["to_air", "to_monitor"]
PttBackend = Literal["none", "cm108", "serial", "gpio"]
CarrierBackend = Literal["none", "cm108", "serial", "gpio", "vox"]

#: `[audio] rx_gain_db` / `tx_gain_db` bounds (the Rust device edge enforces the same).
GAIN_DB_MIN, GAIN_DB_MAX = -40.0, 20.0
#: Where in-band DTMF can be decoded: plain calls, links, the local radio's receiver.
INBAND_SOURCES: tuple[str, ...] = ("calls", "links", "local")
#: The CM108's button inputs as `[radio] carrier_pin` names them (HID input report byte 0).
CM108_BUTTONS: tuple[str, ...] = ("vol_up", "vol_down", "mute_play", "mute_rec")
SERIAL_PTT_PINS: tuple[str, ...] = ("rts", "dtr")
SERIAL_CARRIER_PINS: tuple[str, ...] = ("cts", "dsr", "cd")
#: The spec's announced events.
SPEC_EVENT_NAMES: tuple[str, ...] = (
    "incoming_call",
    "hangup",
    "registered",
    "register_failed",
    "answered",
)
#: `[announce.events.<name>]` names: the spec's, and (extension) link connects and disconnects,
#: ours and those other nodes report in `T` telemetry, as AllStarLink nodes announce them.
EVENT_NAMES: tuple[str, ...] = (*SPEC_EVENT_NAMES, "link_connected", "link_disconnected")

# What a CW keyer can send and a TTS binary can read aloud.
_CALLSIGN = re.compile(r"[A-Za-z0-9/ ]{1,32}")


def _callsign(raw: object, ctx: Context) -> str:
    value = string(raw)
    if value and not _CALLSIGN.fullmatch(value):
        raise Invalid("holds characters CW cannot send", "1-32 of A-Z, 0-9, / and space")
    return value


_COURTESY_FORM = "an array of [first Hz, second Hz, ms] steps, e.g. [[880, 0, 80], [660, 0, 80]]"


def _courtesy_step(step: object) -> tuple[float, float, int]:
    if type(step) is not list or len(step) != 3:
        raise Invalid("must be [first Hz, second Hz, ms]", _COURTESY_FORM)
    f1, f2, ms = step
    for hz in (f1, f2):
        if type(hz) not in (int, float) or not (hz == 0 or 20 <= hz <= 3500):
            raise Invalid("a frequency is out of range", "0 (none) or 20-3500 Hz")
    if type(ms) is not int or not 1 <= ms <= 5000:
        raise Invalid("the length is out of range", "an integer from 1 to 5000 ms")
    return (float(f1), float(f2), ms)


def _courtesy_tone(raw: object, ctx: Context) -> tuple[tuple[float, float, int], ...]:
    if type(raw) is not list or len(raw) > 16:
        raise Invalid("must be an array of at most 16 steps", _COURTESY_FORM)
    return array(raw, _COURTESY_FORM, _courtesy_step)


#: Room `[bridge] jitter_max_ms` must leave above `jitter_target_extra_ms` for the jitter itself.
JITTER_HEADROOM_MS = 160


@dataclass(frozen=True, slots=True, kw_only=True)
class BridgeConfig:
    """`[bridge]`: the conference topology (changeable live with POST /bridge)."""

    NOTE: ClassVar[str] = (
        "The conference bridge; the topology can be changed live with POST /bridge."
    )

    mode: Annotated[
        BridgeMode,
        key(
            '"handset" (1:1 with the local radio), "bridge" (pure conference, local radio off), '
            '"conference" (same mix-minus engine), or (EXTENSION) "parrot" (each member hears '
            "what it said played back, tuned by [parrot])."
        ),
    ] = "bridge"
    mix_minus: Annotated[
        bool, key("Each member hears everyone but itself; false gives a full mix.")
    ] = True
    include_local_radio: Annotated[
        bool,
        key(
            "Add the local microphone as a conference source and feed the local speaker the sum "
            "of all."
        ),
    ] = False
    concealment: Annotated[
        Concealment,
        key(
            'How a lost or late voice frame is filled in: "pitch" repeats the last pitch period '
            "of the talker's voice and fades over 60 ms (after ITU-T G.711 Appendix I); "
            '"fade" repeats the last frame and fades it (the older, cruder concealment). '
            "Read at start."
        ),
    ] = "pitch"
    jitter_target_extra_ms: Annotated[
        int,
        key(
            "Margin of each call's jitter buffer above the delay 97 % of frames arrive within, "
            "in ms (chan_iax2's jittertargetextra). More rides out delay spikes on a poor path "
            "at the cost of that much more delay. Read at start.",
            ext=True,
            ge=0,
            le=1000,
        ),
    ] = 40
    jitter_max_ms: Annotated[
        int,
        key(
            "The most delay each call's jitter buffer may hold, in ms (chan_iax2's "
            "maxjitterbuffer; ASL3 suggests 4000 for poor paths). At least "
            f"jitter_target_extra_ms + {JITTER_HEADROOM_MS}. Read at start.",
            ext=True,
            ge=200,
            le=4000,
        ),
    ] = 1000
    normalize: Annotated[
        bool,
        key(
            "Bring every call's and link's voice to loudness_target, slowly (seconds of speech, "
            "the gain frozen in pauses), with a look-ahead limiter so nothing sent clips. Tones "
            "(DTMF, CW, courtesy tones) pass at their own level; announcements are never "
            "touched. A link's own [links.<node>] normalize overrides it. Read at start.",
            ext=True,
        ),
    ] = False
    loudness_target: Annotated[
        float,
        key(
            "The loudness each voice is brought to, in LUFS (ITU-R BS.1770 short-term loudness "
            "of speech, -60.0 to -10.0). The default is about where a voice whose peaks reach "
            "ASL3's calibration level (3 kHz deviation, -13.4 dBFS) measures.",
            ext=True,
            ge=-60.0,
            le=-10.0,
        ),
    ] = -30.0
    normalize_max_gain_db: Annotated[
        float,
        key(
            "The most a quiet voice is lifted, in dB (0.0 to 30.0); a loud one is lowered as "
            "far as it needs.",
            ext=True,
            ge=0.0,
            le=30.0,
        ),
    ] = 15.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioConfig:
    """`[audio]`: local sound devices. Empty `input`/`output` mean the system default device."""

    NOTE: ClassVar[str] = "Local sound devices (POST /devices changes them live)."

    input: Annotated[
        str,
        key(
            "Substring of the capture / playback device name; empty means the system default "
            "device."
        ),
    ] = ""
    output: str = ""
    backend: Annotated[
        AudioBackend,
        key(
            '"cpal" (hardware), "none" (hardware-free null backend for headless hosts) or '
            '"usrp" (the radio is a USRP stream: chan_usrp, DVSwitch Analog_Bridge; see [usrp]).'
        ),
    ] = "none"
    device_rate: Annotated[
        int,
        key(
            "Rate the sound card runs at: 0 = the station rate if the card takes it, else 48000 "
            "(USB radio interfaces such as the CM108 take only 48000); or the station rate, or "
            "48000.",
            ext=True,
            ge=0,
            le=48000,
        ),
    ] = 0
    rx_gain_db: Annotated[
        float,
        key(
            "Gain in dB (-40.0 to 20.0) on the audio captured from the radio's receiver (toward "
            "the network) and on the audio played to its transmitter. Aim for voice peaks near "
            "-13 dBFS on the status page's audio meters (ASL's level for 3 kHz deviation); POST "
            "/levels sets them live.",
            ext=True,
            ge=GAIN_DB_MIN,
            le=GAIN_DB_MAX,
        ),
    ] = 0.0
    tx_gain_db: Annotated[float, key(ge=GAIN_DB_MIN, le=GAIN_DB_MAX)] = 0.0


def _frame_ms(lo: int, hi: int) -> Callable[[object, Context], int]:
    def parse(raw: object, ctx: Context) -> int:
        accepted = f"a multiple of 20 from {lo} to {hi}"
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise Invalid("must be an integer", accepted)
        if raw % 20 or not lo <= raw <= hi:
            raise Invalid(f"{raw} is not {accepted}", accepted)
        return raw

    return parse


@dataclass(frozen=True, slots=True, kw_only=True)
class UsrpConfig:
    """`[usrp]`: the local radio as a USRP packet stream (`[audio] backend = "usrp"`)."""

    NOTE: ClassVar[str] = (
        "The local radio as a USRP stream (app_rpt's chan_usrp, DVSwitch's Analog_Bridge), used "
        'with [audio] backend = "usrp". Example values:'
    )

    listen: Annotated[
        Address,
        key(
            "Where the node receives the peer's packets (ip:port): Analog_Bridge's [USRP] "
            "txPort, or the second port of chan_usrp's USRP/<ip>:<txport>:<rxport>.",
            parse=bind_address,
            example="127.0.0.1:34001",
        ),
    ]
    peer: Annotated[
        Address,
        key(
            "Where the node sends its packets (ip:port): Analog_Bridge's [USRP] address and "
            "rxPort, or chan_usrp's <ip>:<rxport>.",
            parse=peer_address,
            example="127.0.0.1:32001",
        ),
    ]
    network: Annotated[
        UsrpNetwork,
        key(
            'Which network is behind the peer: "analog", "dmr", "ysf", "dstar", "p25" or '
            '"nxdn". With "dstar" the D-Star guard is active while the radio is configured: '
            "POST /key, keying commands and announcements to the air are refused."
        ),
    ] = "analog"
    prefill_ms: Annotated[
        int,
        key(
            "Received audio held before a transmission starts playing, absorbing the peer's "
            "jitter (a multiple of 20, 0-500).",
            parse=_frame_ms(0, 500),
        ),
    ] = 60
    buffer_ms: Annotated[
        int,
        key(
            "Most received audio held (a multiple of 20, above prefill_ms, at most 10000): a "
            "burst faster than real time beyond it is dropped and counted.",
            parse=_frame_ms(40, 10000),
        ),
    ] = 500
    rx_timeout_ms: Annotated[
        int,
        key(
            "A transmission silent this long without its keyup-0 packet is over: the carrier "
            "drops and the peer is reported lost (60-5000).",
            ge=60,
            le=5000,
        ),
    ] = 300
    talkgroup: Annotated[
        int,
        key(
            "Talkgroup written in the packets the node sends (Analog_Bridge may use it; "
            "chan_usrp ignores it; 0-16777215).",
            ge=0,
            le=16777215,
        ),
    ] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TtsConfig:
    """`[announce.tts]`: the external text-to-speech binary."""

    NOTE: ClassVar[str] = "Text-to-speech through an external binary."

    enabled: bool = False
    binary: Annotated[
        str,
        key('Name or path of the TTS executable (required when enabled), e.g. "piper".'),
    ] = ""
    voice: Annotated[str, key("Path to the voice model.")] = ""
    timeout_ms: Annotated[
        int, key("Rendering time-out in milliseconds (100-60000).", ge=100, le=60000)
    ] = 4000
    gain_db: Annotated[
        float, key("Gain in dB (-60.0-20.0); negative attenuates.", ge=-60.0, le=20.0)
    ] = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceEventConfig:
    """`[announce.events.<event_name>]`: whether and where one event is announced."""

    NOTE: ClassVar[str] = ""

    enabled: bool = False
    destination: Destination = "to_monitor"


def _default_events() -> FrozenDict[str, AnnounceEventConfig]:
    return FrozenDict((name, AnnounceEventConfig()) for name in EVENT_NAMES)


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceConfig:
    """`[announce]`: station ID and event announcements."""

    NOTE: ClassVar[str] = "Station ID and event announcements."

    enabled: bool = False
    id_mode: Annotated[IdMode, key('Form of the station ID: "cw", "tts" or "off".')] = "cw"
    id_interval_secs: Annotated[
        int,
        key("Seconds between periodic IDs (0-86400); 0 disables them.", ge=0, le=86400),
    ] = 0
    cw_wpm: Annotated[int, key("CW speed in words per minute (5-60).", ge=5, le=60)] = 20
    cw_tone_hz: Annotated[
        float, key("CW tone frequency in Hz (200.0-3400.0).", ge=200.0, le=3400.0)
    ] = 800.0
    cw_keys_when_idle: Annotated[
        bool, key("When true the periodic ID KEYS THE TRANSMITTER: a real transmission.")
    ] = False
    callsign: Annotated[
        str,
        key(
            'The text of the station ID (1-32 of A-Z, 0-9, / and space), e.g. "W1AW".\n'
            "Required when a periodic ID is enabled.",
            ext=True,
            parse=_callsign,
        ),
    ] = ""
    to_links: Annotated[
        bool,
        key(
            'Also send "to_air" announcements of events and commands over the transceive '
            "links, which KEYS THEM. The station ID and link connect/disconnect announcements "
            "never go to links.",
            ext=True,
        ),
    ] = False
    tts: TtsConfig = field(default_factory=TtsConfig)
    #: Every event name is present; events not in the file hold the defaults (disabled).
    events: Annotated[
        FrozenDict[str, AnnounceEventConfig],
        key(
            'Per-event announcements. destination: "to_air" (transmits) or "to_monitor" (local '
            "only).",
            tables=EVENT_NAMES,
            notes={
                "link_connected": "EXTENSION. Link connects and disconnects, ours and those other "
                'nodes report ("node 2000 connected"), as AllStarLink nodes announce them.'
            },
        ),
    ] = field(default_factory=_default_events)


@dataclass(frozen=True, slots=True, kw_only=True)
class DtmfConfig:
    """`[dtmf]`: DTMF command execution (off: it lets any member command the links)."""

    NOTE: ClassVar[str] = (
        "DTMF command execution (*1 disconnect, *2 monitor, *3 connect + node number). Off by "
        "default because it lets ANY connected member command the links."
    )

    enabled: bool = False
    inter_digit_timeout_ms: Annotated[
        int,
        key(
            "Time allowed between the digits of a * sequence, in milliseconds (100-60000).",
            ge=100,
            le=60000,
        ),
    ] = 3000
    inband: Annotated[
        bool,
        key(
            "Also decode DTMF tones in the received audio (digits typed on a radio or an analog "
            "phone), muting them from the conference so they do not go out over the links. "
            "Digits are reported as events even when enabled = false; only commands need "
            "enabled.",
            ext=True,
        ),
    ] = True
    inband_sources: Annotated[
        tuple[str, ...],
        key(
            'Whose audio is listened to: "calls", "links", "local" (the local radio\'s receiver).',
            ext=True,
            parse=choice_set(INBAND_SOURCES),
        ),
    ] = INBAND_SOURCES

    def inband_on(self, source: str) -> bool:
        """Whether in-band DTMF is decoded on `source` ("calls", "links" or "local")."""
        return self.inband and source in self.inband_sources


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyingConfig:
    """*Extension* `[keying]`: the operator's push-to-talk (`POST /key`)."""

    NOTE: ClassVar[str] = "EXTENSION. The operator's push-to-talk (POST /key)."

    tx_timeout_secs: Annotated[
        int,
        key(
            "TX time-out in seconds (1-3600): a key held this long is released and reported.",
            ge=1,
            le=3600,
        ),
    ] = 180


@dataclass(frozen=True, slots=True, kw_only=True)
class RadioConfig:
    """*Extension* `[radio]`: the radio's PTT (transmitter) and carrier detect (receiver).

    The names follow ASL3's `simpleusb.conf` and rpt.conf where there is one (`carrierfrom`,
    `invertptt`, `rxondelay`, `rxaudiodelay`, `hangtime`), in milliseconds instead of 20 ms
    intervals; docs/radio.md has the full mapping. What a pin may be depends on its backend, so
    `node.config.rules` checks the pins and devices against `ptt` and `carrier`.
    """

    NOTE: ClassVar[str] = (
        "EXTENSION. The radio: its transmitter's PTT and its receiver's carrier detect (COS). "
        "Names follow ASL3's simpleusb.conf / rpt.conf in milliseconds; docs/radio.md maps them. "
        'The radio hears the conference only with [bridge] mode = "handset", or "conference" '
        "with include_local_radio = true."
    )

    ptt: Annotated[
        PttBackend,
        key(
            'How the transmitter is keyed: "none", "cm108" (a CM108/CM119 USB interface\'s GPIO '
            'over hidraw), "serial" (a serial port\'s RTS or DTR) or "gpio" (a GPIO line, needs '
            "`pip install gpiod`)."
        ),
    ] = "none"
    ptt_device: Annotated[
        str,
        key("The PTT device: /dev/hidrawN (cm108), /dev/ttyUSB0 (serial), gpiochip0 (gpio)."),
    ] = ""
    ptt_pin: Annotated[
        int | str | None,
        key(
            "Unset by default: the backend's default pin. cm108: GPIO number 1-8 (3 by default, "
            'as simpleusb); serial: "rts" (default) or "dtr"; gpio: the line\'s offset or name '
            "(required). E.g.",
            show="prose",
            example=3,
            accepted="a GPIO number or line offset, or a pin or line name",
        ),
    ] = None
    ptt_invert: Annotated[
        bool, key("Key with the line low instead of high (simpleusb invertptt).")
    ] = False
    hang_time_ms: Annotated[
        int,
        key(
            "Milliseconds (0-60000) the transmitter stays keyed after the conference goes quiet "
            "(hangtime).",
            ge=0,
            le=60000,
        ),
    ] = 500
    carrier: Annotated[
        CarrierBackend,
        key(
            'Where the carrier comes from: "none", "cm108" (a HID input, carrierfrom = usb), '
            '"serial" (CTS, DSR or CD), "gpio" (a GPIO line) or "vox" (the received audio\'s '
            "level)."
        ),
    ] = "none"
    carrier_device: Annotated[
        str, key('The carrier\'s device; empty with carrier = "cm108" means ptt_device.')
    ] = ""
    carrier_pin: Annotated[
        int | str | None,
        key(
            'Unset by default: the backend\'s default pin. cm108: "vol_down" (default, the usual '
            'COS wiring), "vol_up", "mute_play", "mute_rec" or a GPIO number 1-8; serial: "cts", '
            '"dsr" or "cd" (required); gpio: the line\'s offset or name (required). E.g.',
            show="prose",
            example="vol_down",
            accepted="a GPIO number or line offset, or a pin or line name",
        ),
    ] = None
    carrier_invert: Annotated[
        bool, key("The carrier is active with the input low / clear (carrierfrom = usbinvert).")
    ] = False
    rx_on_delay_ms: Annotated[
        int,
        key(
            "Milliseconds (0-5000) a carrier must last before it keys the node (rxondelay).",
            ge=0,
            le=5000,
        ),
    ] = 0
    rx_audio_delay_ms: Annotated[
        int,
        key(
            "Milliseconds (0-1000) the received audio is held back, so the squelch tail is never "
            "sent (rxaudiodelay).",
            ge=0,
            le=1000,
        ),
    ] = 0
    vox_threshold_db: Annotated[
        float,
        key(
            'carrier = "vox": threshold in dBFS RMS (-80.0 to 0.0, as the status page\'s rx meter '
            "reads), and how long (ms, 0-10000) the level must stay above it to open and below "
            "it to close.",
            ge=-80.0,
            le=0.0,
        ),
    ] = -35.0
    vox_attack_ms: Annotated[int, key(ge=0, le=10000)] = 40
    vox_release_ms: Annotated[int, key(ge=0, le=10000)] = 800
    courtesy_tone: Annotated[
        tuple[tuple[float, float, int], ...],
        key(
            "The courtesy tone played on the transmitter when a received transmission ends: "
            "steps of [first Hz, second Hz, ms] (0 Hz for none, both 0 a pause; at most 16), "
            "e.g.\n[[880, 0, 80], [660, 0, 80]]; [] for none.",
            parse=_courtesy_tone,
        ),
    ] = ()
    courtesy_tone_level_db: Annotated[
        float, key("Its peak level in dBFS (-60.0-0.0).", ge=-60.0, le=0.0)
    ] = -18.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ParrotConfig:
    """`[parrot]`: tuning for parrot mode; harmless otherwise."""

    NOTE: ClassVar[str] = "Parrot tuning; consulted only in parrot mode, harmless otherwise."

    playback_delay_ms: Annotated[int, key("Milliseconds (0-60000).", ge=0, le=60000)] = 3000
    silence_gap_ms: Annotated[int, key("Milliseconds (20-10000).", ge=20, le=10000)] = 800
    vox_threshold_db: Annotated[float, key("dBFS (-96.0-0.0).", ge=-96.0, le=0.0)] = -40.0
