"""The TOML configuration file, read into frozen dataclasses.

Every section and key of the spec ("Configuration file") is here, plus a few the later work
needs, each marked *extension* in its docstring and in the template. Nothing is silently
ignored: an unknown section or key, a value of the wrong type and a value outside its set are
`ConfigError`s naming the file, the dotted key and what is accepted. Error messages never repeat
a string value from the file, because an operator may have pasted a password into the wrong key.

`NodeConfig()` is the safe default configuration; `write_template` writes a commented file that
loads back to exactly that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import logging
import math
import os
import re
import sys
import tempfile
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

from node.credential import Secret
from node.errors import ConfigError
from node.iax2.endpoint import MAX_CALLS
from node.secrets import SecretSettings
from node.wg_key import KEY_FORMAT, decode_key

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

__all__ = [
    "FORMAT_ALAW",
    "FORMAT_SLIN",
    "FORMAT_SLIN16",
    "FORMAT_ULAW",
    "GAIN_DB_MAX",
    "GAIN_DB_MIN",
    "Address",
    "AmiConfig",
    "AnnounceConfig",
    "AnnounceEventConfig",
    "AudioConfig",
    "BridgeConfig",
    "CodecOffer",
    "ControlConfig",
    "DnsConfig",
    "DtmfConfig",
    "KeyingConfig",
    "LinkConfig",
    "ListenerConfig",
    "NodeConfig",
    "ParrotConfig",
    "PortalConfig",
    "RadioConfig",
    "RegisterConfig",
    "SecretsConfig",
    "StatpostConfig",
    "TtsConfig",
    "WireGuardConfig",
    "iter_template_keys",
    "load_config",
    "write_template",
]

log = logging.getLogger(__name__)

# IAX2 audio format bits (RFC 5456 §8.7): what `codec_offer` lists.
FORMAT_ULAW = 0x4
FORMAT_ALAW = 0x8
FORMAT_SLIN = 0x40
FORMAT_SLIN16 = 0x8000

IAX2_PORT = 4569
CONTROL_PORT = 8730
#: The Asterisk Manager Interface's port (manager.conf `port`).
AMI_PORT = 5038

Answer = Literal["auto", "manual"]
Auth = Literal["required", "optional", "off"]
CallToken = Literal["required", "auto", "off"]
SecretSource = Literal["env", "control", "config"]
BridgeMode = Literal["handset", "bridge", "conference", "parrot"]
AudioBackend = Literal["cpal", "none"]
CodecPolicy = Literal["ulaw_only", "allow_slin", "prefer_slin", "prefer_slin16"]
IdMode = Literal["cw", "tts", "off"]
Destination = Literal["to_air", "to_monitor"]
LinkShape = Literal["standard", "wt-guest"]
RegisterMethod = Literal["iax2", "http"]
LinkModeName = Literal["transceive", "monitor", "local_monitor"]
LinkNetworkName = Literal["allstar", "dstar"]
PttBackend = Literal["none", "cm108", "serial", "gpio"]
CarrierBackend = Literal["none", "cm108", "serial", "gpio", "vox"]

ANSWERS: tuple[str, ...] = ("auto", "manual")
AUTHS: tuple[str, ...] = ("required", "optional", "off")
CALLTOKENS: tuple[str, ...] = ("required", "auto", "off")
SECRET_SOURCES: tuple[str, ...] = ("env", "control", "config")
BRIDGE_MODES: tuple[str, ...] = ("handset", "bridge", "conference", "parrot")
AUDIO_BACKENDS: tuple[str, ...] = ("cpal", "none")
#: `[audio] rx_gain_db` / `tx_gain_db` bounds (the Rust device edge enforces the same).
GAIN_DB_MIN, GAIN_DB_MAX = -40.0, 20.0
CODEC_POLICIES: tuple[str, ...] = ("ulaw_only", "allow_slin", "prefer_slin", "prefer_slin16")
ID_MODES: tuple[str, ...] = ("cw", "tts", "off")
#: Where in-band DTMF can be decoded: plain calls, links, the local radio's receiver.
INBAND_SOURCES: tuple[str, ...] = ("calls", "links", "local")
DESTINATIONS: tuple[str, ...] = ("to_air", "to_monitor")
LINK_SHAPES: tuple[str, ...] = ("standard", "wt-guest")
REGISTER_METHODS: tuple[str, ...] = ("iax2", "http")
#: ASL3's HTTP registrar (res_rpt_http_registrations) and stats collector (app_rpt statpost_url).
ASL_REGISTER_URL = "https://register.allstarlink.org/"
ASL_STATPOST_URL = "http://stats.allstarlink.org/uhandler"
#: The web-transceiver portal (`[portal] url`'s default).
PORTAL_URL = "https://www.allstarlink.org"
#: ASL3's node-lookup domain (app_rpt dns_node_domain).
ASL_DNS_DOMAIN = "nodes.allstarlink.org"
LINK_MODES: tuple[str, ...] = ("transceive", "monitor", "local_monitor")
LINK_NETWORKS: tuple[str, ...] = ("allstar", "dstar")
PTT_BACKENDS: tuple[str, ...] = ("none", "cm108", "serial", "gpio")
CARRIER_BACKENDS: tuple[str, ...] = ("none", "cm108", "serial", "gpio", "vox")
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

_NODE_ID = re.compile(r"[0-9]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
# What a CW keyer can send and a TTS binary can read aloud.
_CALLSIGN = re.compile(r"[A-Za-z0-9/ ]{1,32}")
_CALLSIGN_ACCEPTED = "1-32 of A-Z, 0-9, / and space"
# An AMI login name as manager.conf allows one: printable, no blanks, no brackets.
_AMI_USER = re.compile(r"[!-Z\\^-~]{1,64}")

_K = TypeVar("_K")
_V = TypeVar("_V")


class FrozenDict(dict[_K, _V]):
    """A dict that refuses mutation, so a frozen config stays frozen.

    A `dict` subclass (not `MappingProxyType`) because `dataclasses.asdict` and `copy` know how
    to rebuild dicts; hashable when its values are, like the frozen dataclasses it holds.
    """

    __slots__ = ()

    def _readonly(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("configuration mappings are read-only")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly
    __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[type[FrozenDict[_K, _V]], tuple[dict[_K, _V]]]:
        return (type(self), (dict(self),))


# --- value types --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Address:
    """A socket address: an IP literal or host name, and a port.

    Written `host:port` or `[v6]:port` in the file; `str()` gives that form back.
    """

    host: str
    port: int

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port {self.port} is outside 0-65535")

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.split("%", 1)[0]).is_loopback
        except ValueError:
            return False

    def as_tuple(self) -> tuple[str, int]:
        """`(host, port)` as `socket` and asyncio take it."""
        return (self.host, self.port)


@dataclass(frozen=True, slots=True)
class CodecOffer:
    """What a codec policy offers (spec "codec_policy").

    `preferred` is the FORMAT/CAPABILITY offer, best first. `accept_extra` holds formats the
    node does not offer but takes when a peer asks for them (`allow_slin`: slin).
    """

    preferred: tuple[int, ...]
    accept_extra: frozenset[int] = frozenset()

    @property
    def capability(self) -> int:
        """The CAPABILITY bitmask of the offer."""
        bits = 0
        for fmt in self.preferred:
            bits |= fmt
        return bits

    @property
    def accepted(self) -> frozenset[int]:
        """Every format a peer may end up using: the offer plus `accept_extra`."""
        return frozenset(self.preferred) | self.accept_extra

    def accepts(self, fmt: int) -> bool:
        return fmt in self.accepted


_CODEC_OFFERS: Mapping[str, CodecOffer] = {
    "ulaw_only": CodecOffer((FORMAT_ULAW, FORMAT_ALAW)),
    "allow_slin": CodecOffer((FORMAT_ULAW, FORMAT_ALAW), frozenset({FORMAT_SLIN})),
    "prefer_slin": CodecOffer((FORMAT_SLIN, FORMAT_ULAW, FORMAT_ALAW)),
    "prefer_slin16": CodecOffer((FORMAT_SLIN16, FORMAT_SLIN, FORMAT_ULAW, FORMAT_ALAW)),
}


# --- sections -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerConfig:
    """`[listener]` (required): the inbound IAX2 side."""

    bind: Address = Address("0.0.0.0", IAX2_PORT)
    answer: Answer = "auto"
    max_calls: int = 8
    auth: Auth = "required"
    #: Usernames (node ids) admitted; empty admits every caller (subject to auth and max_calls).
    allowed_nodes: tuple[str, ...] = ()
    #: *Extension.* IAX2 call-token policy: `auto` gives tokens to clients that ask (empty
    #: CALLTOKEN IE) and still serves clients that never send one, like Asterisk's
    #: requirecalltoken=auto.
    calltoken: CallToken = "auto"


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterConfig:
    """`[register]` (optional): the upstream registrar. The password is never here."""

    #: The IAX2 registrar (`method = "iax2"` only, where it is required); None for HTTP.
    peer: Address | None = None
    node_id: str
    #: *Extension.* Registration refresh interval in seconds: the IAX2 REFRESH IE, or how often
    #: the HTTP registration is re-posted.
    refresh: int = 60
    #: *Extension.* `iax2` (REGREQ to `peer`) or `http` (ASL3's JSON POST to `url`). Never both,
    #: as ASL says: the two would register the node from two different source addresses.
    method: RegisterMethod = "iax2"
    #: *Extension.* The HTTP registrar (`method = "http"` only).
    url: str = ASL_REGISTER_URL


@dataclass(frozen=True, slots=True, kw_only=True)
class StatpostConfig:
    """`[statpost]` (*extension*, optional): app_rpt's status posts to a stats collector."""

    url: str = ASL_STATPOST_URL
    #: Seconds between full posts (app_rpt statpost_time, 30-600).
    interval_secs: int = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class DnsConfig:
    """`[links] dns*` keys (*extension*): node-number lookup in DNS, as ASL3 does it."""

    enabled: bool = True
    domain: str = ASL_DNS_DOMAIN
    #: Name servers to ask; empty means the system resolver (/etc/resolv.conf).
    servers: tuple[Address, ...] = ()
    #: The whole lookup (SRV then A) must finish within this many milliseconds.
    timeout_ms: int = 3000


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlConfig:
    """`[control]` (required): the HTTP/SSE control channel, loopback only (it has no auth)."""

    bind: Address = Address("127.0.0.1", CONTROL_PORT)


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretsConfig:
    """`[secrets]`: where credentials come from."""

    source: SecretSource = "env"
    #: The inline registration password, only with `source = "config"` (an empty string in the
    #: file means unset). A `Secret`, so it never shows in repr, asdict output or logs.
    secret: Secret | None = None
    #: *Extension.* The inline AMI password (`[ami]`), under the same rules as `secret`.
    ami_secret: Secret | None = None
    #: *Extension.* The peers file of per-node inbound secrets (`node.peers_file`), resolved
    #: against the config file's directory; None when unset. Re-read on SIGHUP.
    peers_file: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BridgeConfig:
    """`[bridge]`: the conference topology (changeable live with POST /bridge)."""

    mode: BridgeMode = "bridge"
    mix_minus: bool = True
    include_local_radio: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioConfig:
    """`[audio]`: local sound devices. Empty `input`/`output` mean the system default device."""

    input: str = ""
    output: str = ""
    backend: AudioBackend = "none"
    #: *Extension.* The rate the sound card runs at: 0 picks the station rate when the card
    #: takes it and 48000 otherwise; 48000 forces conversion at the device edge.
    device_rate: int = 0
    #: *Extension.* Gain on the captured audio (the radio's receiver, toward the network), dB.
    rx_gain_db: float = 0.0
    #: *Extension.* Gain on the played audio (toward the radio's transmitter), dB.
    tx_gain_db: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TtsConfig:
    """`[announce.tts]`: the external text-to-speech binary."""

    enabled: bool = False
    binary: str = ""
    voice: str = ""
    timeout_ms: int = 4000
    gain_db: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceEventConfig:
    """`[announce.events.<event_name>]`: whether and where one event is announced."""

    enabled: bool = False
    destination: Destination = "to_monitor"


def _default_events() -> FrozenDict[str, AnnounceEventConfig]:
    return FrozenDict((name, AnnounceEventConfig()) for name in EVENT_NAMES)


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceConfig:
    """`[announce]`: station ID and event announcements."""

    enabled: bool = False
    id_mode: IdMode = "cw"
    #: Seconds between periodic IDs; 0 disables them.
    id_interval_secs: int = 0
    cw_wpm: int = 20
    cw_tone_hz: float = 800.0
    cw_keys_when_idle: bool = False
    #: *Extension.* The text of the station ID (sent in CW or spoken by TTS).
    callsign: str = ""
    #: *Extension.* Also send `to_air` announcements of events and commands over the transceive
    #: links (which keys them). The station ID and link telemetry never go to links.
    to_links: bool = False
    tts: TtsConfig = field(default_factory=TtsConfig)
    #: Every event name is present; events not in the file hold the defaults (disabled).
    events: Mapping[str, AnnounceEventConfig] = field(default_factory=_default_events)


@dataclass(frozen=True, slots=True, kw_only=True)
class DtmfConfig:
    """`[dtmf]`: DTMF command execution (off: it lets any member command the links)."""

    enabled: bool = False
    inter_digit_timeout_ms: int = 3000
    #: *Extension.* Decode DTMF tones in received audio (and mute them from the conference), as
    #: well as IAX2 DTMF frames. Digits are reported whether or not `enabled` runs commands.
    inband: bool = True
    #: *Extension.* Which members' audio in-band detection runs on (a subset of
    #: `INBAND_SOURCES`).
    inband_sources: tuple[str, ...] = INBAND_SOURCES

    def inband_on(self, source: str) -> bool:
        """Whether in-band DTMF is decoded on `source` ("calls", "links" or "local")."""
        return self.inband and source in self.inband_sources


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConfig:
    """`[links.<node_id>]`: per-node link settings."""

    shape: LinkShape = "standard"
    #: *Extension.* USERNAME of our link calls to this node (default "radio", or our node
    #: number when a peer secret for the node is provisioned).
    username: str | None = None
    #: *Extension.* A permanent link ("permalink"): dialled at start and redialled for ever
    #: when lost.
    permanent: bool = False
    #: *Extension.* The mode of the permanent link.
    mode: LinkModeName = "transceive"
    #: *Extension.* Where the node is, instead of looking it up (host:port).
    addr: Address | None = None
    #: *Extension.* `dstar`: this node is a D-Star gateway; while a link to it is up (or being
    #: set up) the node refuses to key (spec: D-Star is never keyed remotely).
    network: LinkNetworkName = "allstar"


@dataclass(frozen=True, slots=True, kw_only=True)
class AmiConfig:
    """*Extension* `[ami]`: the Asterisk Manager Interface subset Allmon3 and Supermon poll.

    Off by default. Its password comes from the secrets source (`NET_AMI_SECRET`, POST /secrets
    with username `ami:<username>`, or `[secrets] ami_secret`).
    """

    enabled: bool = False
    #: Loopback unless `allow_remote`: AMI sends its password in clear text.
    bind: Address = Address("127.0.0.1", AMI_PORT)
    allow_remote: bool = False
    #: The login name (manager.conf's user section; ASL3 ships `admin`).
    username: str = "admin"
    #: Connections served at once; more are closed at once.
    max_connections: int = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyingConfig:
    """*Extension* `[keying]`: the operator's push-to-talk (`POST /key`)."""

    #: TX time-out: a key held this long is released and reported (app_rpt's default 180 s).
    tx_timeout_secs: int = 180


@dataclass(frozen=True, slots=True, kw_only=True)
class RadioConfig:
    """*Extension* `[radio]`: the radio's PTT (transmitter) and carrier detect (receiver).

    The names follow ASL3's `simpleusb.conf` and rpt.conf where there is one (`carrierfrom`,
    `invertptt`, `rxondelay`, `rxaudiodelay`, `hangtime`), in milliseconds instead of 20 ms
    intervals; docs/radio.md has the full mapping.
    """

    #: How the transmitter is keyed.
    ptt: PttBackend = "none"
    #: The hidraw node (cm108), serial port (serial) or GPIO chip (gpio) of the PTT.
    ptt_device: str = ""
    #: cm108: the GPIO number 1-8 (default 3); serial: "rts" or "dtr" (default "rts"); gpio: a
    #: line offset or name (required). None: the backend's default.
    ptt_pin: int | str | None = None
    #: Key with the line low (cm108, gpio) or cleared (serial) instead of high / set.
    ptt_invert: bool = False
    #: The transmitter stays keyed this long after the conference goes quiet (rpt.conf
    #: `hangtime`).
    hang_time_ms: int = 500
    #: Where the receiver's carrier (COS) comes from.
    carrier: CarrierBackend = "none"
    #: The carrier's hidraw node, serial port or GPIO chip; empty with cm108 means `ptt_device`.
    carrier_device: str = ""
    #: cm108: vol_up, vol_down (default), mute_play, mute_rec, or a GPIO number 1-8; serial:
    #: "cts", "dsr" or "cd" (required); gpio: a line offset or name (required).
    carrier_pin: int | str | None = None
    #: The carrier is active with the input low / clear (simpleusb `carrierfrom = usbinvert`).
    carrier_invert: bool = False
    #: A carrier must last this long before it keys the node (simpleusb `rxondelay`).
    rx_on_delay_ms: int = 0
    #: The received audio is held back this long, so the squelch tail after the carrier drops
    #: is never sent (simpleusb `rxaudiodelay`).
    rx_audio_delay_ms: int = 0
    #: `carrier = "vox"`: the level (dBFS RMS, as the audio meter reads it) that opens VOX.
    vox_threshold_db: float = -35.0
    #: `carrier = "vox"`: how long the level must hold above the threshold to open.
    vox_attack_ms: int = 40
    #: `carrier = "vox"`: how long it must stay below to close.
    vox_release_ms: int = 800
    #: The courtesy tone played on the transmitter when a received transmission (the carrier)
    #: ends: `(first Hz, second Hz, ms)` steps, 0 Hz for none, both 0 a pause; empty for none.
    courtesy_tone: tuple[tuple[float, float, int], ...] = ()
    #: Peak level of the courtesy tone (dBFS).
    courtesy_tone_level_db: float = -18.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PortalConfig:
    """`[portal]`: the web-transceiver portal account used by `wt-guest` links."""

    user: str
    node: str
    #: The NAME of the environment variable holding the portal password.
    credential_env: str
    #: *Extension.* The portal's base URL (its token API is `<url>/api/v2/auth-wt-legacy`).
    url: str = PORTAL_URL


@dataclass(frozen=True, slots=True, kw_only=True)
class WireGuardConfig:
    """`[wireguard]` (optional; the spec's "Tunnel section"): every IAX2 datagram goes through a
    userspace WireGuard tunnel to one peer. Absent: plain UDP. See docs/wireguard.md."""

    #: Our IPv4 address inside the tunnel; the node's IAX2 port there is `[listener] bind`'s.
    address: str
    #: The NAME of the environment variable holding our private key (base64, `wg genkey`).
    private_key_env: str
    #: The peer's public key (base64).
    peer_public_key: str
    #: The outer UDP port (0: any free port, the usual choice when the node dials its peer).
    listen_port: int = 0
    #: The peer's outer address; None to wait until the peer makes contact.
    endpoint: Address | None = None
    #: IPv4 networks routed into the tunnel and accepted from it (`a.b.c.d/prefix`).
    allowed_ips: tuple[str, ...]
    #: Seconds between keepalives (0: off); with it the tunnel also keeps itself up.
    persistent_keepalive: int = 25
    #: The NAME of the environment variable holding a preshared key (base64), or None.
    preshared_key_env: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParrotConfig:
    """`[parrot]`: tuning for parrot mode; harmless otherwise."""

    playback_delay_ms: int = 3000
    silence_gap_ms: int = 800
    vox_threshold_db: float = -40.0


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeConfig:
    """The whole configuration. `NodeConfig()` is the safe default."""

    listener: ListenerConfig = field(default_factory=ListenerConfig)
    register: RegisterConfig | None = None
    control: ControlConfig = field(default_factory=ControlConfig)
    secrets: SecretsConfig = field(default_factory=SecretsConfig)
    bridge: BridgeConfig = field(default_factory=BridgeConfig)
    audio: AudioConfig = field(default_factory=AudioConfig)
    codec_policy: CodecPolicy = "prefer_slin16"
    announce: AnnounceConfig = field(default_factory=AnnounceConfig)
    dtmf: DtmfConfig = field(default_factory=DtmfConfig)
    links: Mapping[str, LinkConfig] = field(default_factory=FrozenDict)
    #: *Extension* (`[links] verify_source_ip`): refuse an inbound link whose source address
    #: is not the address its node number resolves to, as app_rpt does.
    verify_source_ip: bool = False
    keying: KeyingConfig = field(default_factory=KeyingConfig)
    radio: RadioConfig = field(default_factory=RadioConfig)
    ami: AmiConfig = field(default_factory=AmiConfig)
    #: *Extension* (`[links] nodes_file`): an extnodes-format file resolving node numbers
    #: (`<node>=radio@<ip>:<port>/<node>,<ip>`); None when unset. Relative paths in the file are
    #: resolved against the config file's directory.
    nodes_file: Path | None = None
    #: *Extension* (`[links] dns`, `dns_domain`, `dns_servers`, `dns_timeout_ms`).
    dns: DnsConfig = field(default_factory=DnsConfig)
    #: *Extension* (`[statpost]`): None when the section is absent (no status posts).
    statpost: StatpostConfig | None = None
    portal: PortalConfig | None = None
    parrot: ParrotConfig = field(default_factory=ParrotConfig)
    #: `[wireguard]`: None when the section is absent (plain UDP).
    wireguard: WireGuardConfig | None = None
    #: The file this was loaded from; None for a config built in code. Not part of equality.
    path: Path | None = field(default=None, compare=False)

    @property
    def node_id(self) -> str | None:
        """This node's number (`[register].node_id`), None when registration is unconfigured."""
        return self.register.node_id if self.register is not None else None

    @property
    def station_rate(self) -> int:
        """Sample rate of the station's own capture, playback and mixing."""
        return 16000 if self.codec_policy == "prefer_slin16" else 8000

    @property
    def codec_offer(self) -> CodecOffer:
        """The formats offered to peers, best first, per `codec_policy`."""
        return _CODEC_OFFERS[self.codec_policy]

    @property
    def secret_settings(self) -> SecretSettings:
        """What the secret store needs of this configuration, as plain values."""
        wg = self.wireguard
        return SecretSettings(
            config_file=self.path,
            source=self.secrets.source,
            node_id=self.node_id,
            inline_secret=self.secrets.secret,
            inline_ami_secret=self.secrets.ami_secret,
            ami_user=self.ami.username if self.ami.enabled else None,
            peers_file=self.secrets.peers_file,
            portal_env=self.portal.credential_env if self.portal is not None else None,
            wg_private_env=wg.private_key_env if wg is not None else None,
            wg_preshared_env=wg.preshared_key_env if wg is not None else None,
        )


# --- the reader ---------------------------------------------------------------------------------

_SECTIONS: tuple[str, ...] = (
    "listener",
    "register",
    "control",
    "secrets",
    "bridge",
    "audio",
    "announce",
    "dtmf",
    "links",
    "keying",
    "radio",
    "ami",
    "portal",
    "parrot",
    "statpost",
    "wireguard",
)
_TOP_KEYS: tuple[str, ...] = ("codec_policy",)
_REQUIRED_SECTIONS: tuple[str, ...] = ("listener", "control")

_TOML_TYPES: Mapping[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    dict: "a table",
}


def _toml_type(value: object) -> str:
    for kind, name in _TOML_TYPES.items():
        if type(value) is kind:
            return name
    return f"a {type(value).__name__} value"


class _Reader:
    """Validating accessors that know the file name, for errors that point at the key."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(
        self, key: str | None, problem: str, accepted: Iterable[str] | str | None = None
    ) -> NoReturn:
        raise ConfigError(str(self.path), key, problem, accepted)

    def table(
        self,
        raw: object,
        name: str,
        keys: Iterable[str],
        required: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Check that `raw` is a table holding only `keys` and every key of `required`."""
        if not isinstance(raw, dict):
            self.fail(name, f"must be a table ([{name}]), got {_toml_type(raw)}")
        allowed = tuple(keys)
        for key in raw:
            if key in _TOP_KEYS:
                # TOML puts every key after a [header] into that table: the classic slip.
                self.fail(
                    f"{name}.{key}",
                    f"{key} is a top-level key; move it above the first [section] of the file",
                )
            if key not in allowed:
                self.fail(f"{name}.{key}", f"unknown key in [{name}]", allowed)
        for key in required:
            if key not in raw:
                self.fail(f"{name}.{key}", f"is required in [{name}]")
        return raw

    def file_path(self, table: Mapping[str, Any], name: str, key: str) -> Path | None:
        """A path key: relative to the config file's directory, `~` expanded; "" means None."""
        text = self.string(table, name, key, "")
        if not text:
            return None
        return self.path.absolute().parent / Path(text).expanduser()

    def boolean(self, table: Mapping[str, Any], name: str, key: str, default: bool) -> bool:
        value = table.get(key, default)
        if type(value) is not bool:
            self.fail(f"{name}.{key}", f"must be a boolean, got {_toml_type(value)}", "true, false")
        return value

    def integer(
        self, table: Mapping[str, Any], name: str, key: str, default: int, lo: int, hi: int
    ) -> int:
        value = table.get(key, default)
        accepted = f"an integer from {lo} to {hi}"
        # `type() is int` because TOML `true` arrives as a bool, which isinstance calls an int.
        if type(value) is not int:
            self.fail(f"{name}.{key}", f"must be an integer, got {_toml_type(value)}", accepted)
        if not lo <= value <= hi:
            self.fail(f"{name}.{key}", f"{value} is out of range", accepted)
        return value

    def number(
        self, table: Mapping[str, Any], name: str, key: str, default: float, lo: float, hi: float
    ) -> float:
        value = table.get(key, default)
        accepted = f"a number from {lo} to {hi}"
        if type(value) not in (int, float):
            self.fail(f"{name}.{key}", f"must be a number, got {_toml_type(value)}", accepted)
        number = float(value)
        if not math.isfinite(number) or not lo <= number <= hi:
            self.fail(f"{name}.{key}", f"{number} is out of range", accepted)
        return number

    def string(self, table: Mapping[str, Any], name: str, key: str, default: str) -> str:
        value = table.get(key, default)
        if type(value) is not str:
            self.fail(f"{name}.{key}", f"must be a string, got {_toml_type(value)}")
        return value

    def choice(
        self,
        table: Mapping[str, Any],
        name: str | None,
        key: str,
        default: str,
        choices: tuple[str, ...],
    ) -> Any:
        dotted = f"{name}.{key}" if name else key
        value = table.get(key, default)
        if type(value) is not str:
            self.fail(dotted, f"must be a string, got {_toml_type(value)}", choices)
        if value not in choices:
            # The value itself is not repeated: it may be a secret pasted into the wrong key.
            self.fail(dotted, "is not one of the accepted values", choices)
        return value

    def choices(
        self,
        table: Mapping[str, Any],
        name: str,
        key: str,
        default: tuple[str, ...],
        choices: tuple[str, ...],
    ) -> tuple[str, ...]:
        """An array of distinct values out of `choices`, kept in the order of `choices`."""
        dotted = f"{name}.{key}"
        value = table.get(key, list(default))
        if type(value) is not list:
            self.fail(dotted, f"must be an array, got {_toml_type(value)}", choices)
        for i, item in enumerate(value):
            if type(item) is not str or item not in choices:
                self.fail(f"{dotted}[{i}]", "is not one of the accepted values", choices)
        return tuple(c for c in choices if c in value)

    def node_id(self, value: object, dotted: str) -> str:
        if type(value) is int and value >= 0:
            return str(value)
        if type(value) is not str or not _NODE_ID.fullmatch(value):
            self.fail(dotted, "must be a node number (digits)", 'a string of digits, e.g. "2000"')
        return value

    def address(
        self,
        table: Mapping[str, Any],
        name: str,
        key: str,
        default: Address | None,
        *,
        bind: bool,
    ) -> Address:
        dotted = f"{name}.{key}"
        raw = table.get(key, default)
        if isinstance(raw, Address):
            return raw
        form = "host:port or [ipv6]:port" + (", host an IP address or localhost" if bind else "")
        if type(raw) is not str:
            self.fail(dotted, f"must be a string, got {_toml_type(raw)}", form)
        host, port = self._split_address(raw, dotted, form)
        lo = 0 if bind else 1
        if not lo <= port <= 65535:
            self.fail(dotted, f"port {port} is out of range", f"a port from {lo} to 65535")
        if not self._host_ok(host, bind=bind):
            problem = (
                "host must be an IP address or localhost"
                if bind
                else "host is not a valid host name or IP address"
            )
            self.fail(dotted, problem, form)
        return Address(host, port)

    def nameserver(self, raw: object, dotted: str) -> Address:
        """A DNS server: an IP address, with an optional port (53 when absent)."""
        form = '"ip", "ip:port" or "[ipv6]:port", e.g. "127.0.0.1:5353"'
        if type(raw) is not str:
            self.fail(dotted, f"must be a string, got {_toml_type(raw)}", form)
        try:
            return Address(str(ipaddress.ip_address(raw)), 53)
        except ValueError:
            pass
        host, port = self._split_address(raw, dotted, form)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            self.fail(dotted, "host must be an IP address (a name server cannot be a name)", form)
        if not 1 <= port <= 65535:
            self.fail(dotted, f"port {port} is out of range", "a port from 1 to 65535")
        return Address(host, port)

    def http_url(
        self,
        table: Mapping[str, Any],
        name: str,
        key: str,
        default: str,
        *,
        allow_query: bool = True,
    ) -> str:
        """An http:// or https:// URL with a host and no user:password part."""
        dotted = f"{name}.{key}"
        value = self.string(table, name, key, default)
        accepted = "an http:// or https:// URL, e.g. " + (
            ASL_REGISTER_URL if allow_query else ASL_STATPOST_URL
        )
        try:
            parts = urllib.parse.urlsplit(value)
            port = parts.port
        except ValueError:
            self.fail(dotted, "is not a URL", accepted)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.fail(dotted, "is not an http:// or https:// URL with a host", accepted)
        if parts.username is not None or parts.password is not None:
            # It would be logged with every failure; credentials have their own place.
            self.fail(dotted, "must not hold a user name or password", accepted)
        if port == 0:
            self.fail(dotted, "port 0 is not a port to connect to", accepted)
        if not allow_query and (parts.query or parts.fragment):
            self.fail(dotted, "must not have a query or fragment (the node appends the query)")
        return value

    def _split_address(self, raw: str, dotted: str, form: str) -> tuple[str, int]:
        if raw.startswith("["):
            close = raw.find("]")
            if close < 0 or raw[close + 1 : close + 2] != ":":
                self.fail(dotted, "is not a socket address", form)
            host, port_text = raw[1:close], raw[close + 2 :]
            try:
                ipaddress.IPv6Address(host.split("%", 1)[0])
            except ValueError:
                self.fail(dotted, "brackets must hold an IPv6 address", form)
        else:
            host, sep, port_text = raw.rpartition(":")
            if not sep or not host:
                self.fail(dotted, "needs a host and a port", form)
            if ":" in host:
                self.fail(dotted, "an IPv6 address needs brackets", "[ipv6]:port, e.g. [::1]:4569")
        if not port_text.isascii() or not port_text.isdigit():
            self.fail(dotted, "port must be a number", form)
        return host, int(port_text)

    @staticmethod
    def _host_ok(host: str, *, bind: bool) -> bool:
        if host.lower() == "localhost":
            return True
        try:
            ipaddress.ip_address(host.split("%", 1)[0])
            return True
        except ValueError:
            pass
        if bind or len(host) > 253:
            return False
        return all(_HOST_LABEL.fullmatch(label) for label in host.rstrip(".").split("."))


def _parse_listener(r: _Reader, raw: object) -> ListenerConfig:
    d = ListenerConfig()
    names = ("bind", "answer", "max_calls", "auth", "allowed_nodes", "calltoken")
    t = r.table(raw, "listener", names)
    allowed_raw = t.get("allowed_nodes", [])
    if type(allowed_raw) is not list:
        r.fail(
            "listener.allowed_nodes",
            f"must be an array, got {_toml_type(allowed_raw)}",
            'an array of node ids, e.g. ["2000", "2001"]',
        )
    allowed: list[str] = []
    for i, item in enumerate(allowed_raw):
        key = f"listener.allowed_nodes[{i}]"
        if type(item) is int and item >= 0:
            allowed.append(str(item))
        elif type(item) is str and item.strip() and item == item.strip():
            allowed.append(item)
        else:
            r.fail(key, "must be a node id (a non-empty string without surrounding spaces)")
    for item in allowed:
        if not _NODE_ID.fullmatch(item):
            # Spec rule 3: a placeholder admits nobody. It is kept (so it matches no caller), but
            # it is probably an unfilled template value, so say so.
            log.warning(
                "%s: listener.allowed_nodes holds an entry that is not a node number; it admits "
                "only a caller with exactly that username",
                r.path,
            )
    return ListenerConfig(
        bind=r.address(t, "listener", "bind", d.bind, bind=True),
        answer=r.choice(t, "listener", "answer", d.answer, ANSWERS),
        max_calls=r.integer(t, "listener", "max_calls", d.max_calls, 1, MAX_CALLS),
        auth=r.choice(t, "listener", "auth", d.auth, AUTHS),
        allowed_nodes=tuple(allowed),
        calltoken=r.choice(t, "listener", "calltoken", d.calltoken, CALLTOKENS),
    )


def _parse_register(r: _Reader, raw: object) -> RegisterConfig:
    keys = ("peer", "node_id", "refresh", "method", "url")
    t = r.table(raw, "register", keys, required=("node_id",))
    method = r.choice(t, "register", "method", "iax2", REGISTER_METHODS)
    # Each method has its own registrar key; the other one in the file is a mix-up (or a wish
    # to register both ways, which ASL warns against), never silently ignored.
    own, other = ("peer", "url") if method == "iax2" else ("url", "peer")
    if other in t:
        switch = "http" if method == "iax2" else "iax2"
        r.fail(
            f"register.{other}",
            f'is not used with method = "{method}" (that method registers to {own})',
            f'{own} for method = "{method}", or method = "{switch}"',
        )
    if method == "iax2" and "peer" not in t:
        r.fail("register.peer", 'is required in [register] with method = "iax2"')
    return RegisterConfig(
        peer=r.address(t, "register", "peer", None, bind=False) if method == "iax2" else None,
        node_id=r.node_id(t["node_id"], "register.node_id"),
        refresh=r.integer(t, "register", "refresh", 60, 10, 3600),
        method=method,
        url=r.http_url(t, "register", "url", ASL_REGISTER_URL),
    )


def _parse_statpost(r: _Reader, raw: object) -> StatpostConfig:
    d = StatpostConfig()
    t = r.table(raw, "statpost", ("url", "interval_secs"))
    return StatpostConfig(
        url=r.http_url(t, "statpost", "url", d.url, allow_query=False),
        interval_secs=r.integer(t, "statpost", "interval_secs", d.interval_secs, 30, 600),
    )


def _parse_control(r: _Reader, raw: object) -> ControlConfig:
    t = r.table(raw, "control", ("bind",))
    bind = r.address(t, "control", "bind", ControlConfig().bind, bind=True)
    if not bind.is_loopback:
        r.fail(
            "control.bind",
            "must be a loopback address: the control channel has no authentication (for remote "
            "access put an authenticating layer such as an SSH tunnel, VPN or reverse proxy in "
            "front of it)",
            "a loopback address (127.0.0.0/8, [::1] or localhost), e.g. 127.0.0.1:8730",
        )
    return ControlConfig(bind=bind)


def _parse_secrets(r: _Reader, raw: object) -> SecretsConfig:
    t = r.table(raw, "secrets", ("source", "secret", "ami_secret", "peers_file"))
    source = r.choice(t, "secrets", "source", "env", SECRET_SOURCES)
    return SecretsConfig(
        source=source,
        secret=_inline_secret(r, t, "secret", source),
        ami_secret=_inline_secret(r, t, "ami_secret", source),
        peers_file=r.file_path(t, "secrets", "peers_file"),
    )


def _inline_secret(r: _Reader, t: Mapping[str, Any], key: str, source: str) -> Secret | None:
    if key not in t:
        return None
    value = t[key]
    if type(value) is not str:
        r.fail(f"secrets.{key}", f"must be a string, got {_toml_type(value)}")
    if value and source != "config":
        # A password in a file whose permissions nobody checks is exactly the leak the
        # `config` source guards against.
        r.fail(
            f"secrets.{key}",
            f'is set but secrets.source is "{source}"; an inline secret is accepted only with '
            'source = "config" (and a file readable by its owner alone)',
        )
    return Secret(value) if value else None


def _parse_bridge(r: _Reader, raw: object) -> BridgeConfig:
    d = BridgeConfig()
    t = r.table(raw, "bridge", ("mode", "mix_minus", "include_local_radio"))
    return BridgeConfig(
        mode=r.choice(t, "bridge", "mode", d.mode, BRIDGE_MODES),
        mix_minus=r.boolean(t, "bridge", "mix_minus", d.mix_minus),
        include_local_radio=r.boolean(t, "bridge", "include_local_radio", d.include_local_radio),
    )


def _parse_audio(r: _Reader, raw: object, station_rate: int) -> AudioConfig:
    d = AudioConfig()
    names = ("input", "output", "backend", "device_rate", "rx_gain_db", "tx_gain_db")
    t = r.table(raw, "audio", names)
    device_rate = r.integer(t, "audio", "device_rate", d.device_rate, 0, 48000)
    if device_rate not in (0, station_rate, 48000):
        r.fail(
            "audio.device_rate",
            f"{device_rate} Hz is neither the station rate ({station_rate} Hz, set by "
            "codec_policy) nor 48000 Hz, the rate the node converts from",
            f"0 (automatic), {station_rate}, 48000",
        )
    return AudioConfig(
        input=r.string(t, "audio", "input", d.input),
        output=r.string(t, "audio", "output", d.output),
        backend=r.choice(t, "audio", "backend", d.backend, AUDIO_BACKENDS),
        device_rate=device_rate,
        rx_gain_db=r.number(t, "audio", "rx_gain_db", d.rx_gain_db, GAIN_DB_MIN, GAIN_DB_MAX),
        tx_gain_db=r.number(t, "audio", "tx_gain_db", d.tx_gain_db, GAIN_DB_MIN, GAIN_DB_MAX),
    )


def _parse_tts(r: _Reader, raw: object) -> TtsConfig:
    d = TtsConfig()
    name = "announce.tts"
    t = r.table(raw, name, ("enabled", "binary", "voice", "timeout_ms", "gain_db"))
    tts = TtsConfig(
        enabled=r.boolean(t, name, "enabled", d.enabled),
        binary=r.string(t, name, "binary", d.binary),
        voice=r.string(t, name, "voice", d.voice),
        timeout_ms=r.integer(t, name, "timeout_ms", d.timeout_ms, 100, 60000),
        gain_db=r.number(t, name, "gain_db", d.gain_db, -60.0, 20.0),
    )
    if tts.enabled and not tts.binary.strip():
        r.fail(
            f"{name}.binary",
            "is empty but TTS is enabled",
            "the name or path of the TTS executable",
        )
    return tts


def _parse_events(r: _Reader, raw: object) -> FrozenDict[str, AnnounceEventConfig]:
    t = r.table(raw, "announce.events", EVENT_NAMES)
    events = dict(_default_events())
    d = AnnounceEventConfig()
    for event, body in t.items():
        name = f"announce.events.{event}"
        e = r.table(body, name, ("enabled", "destination"))
        events[event] = AnnounceEventConfig(
            enabled=r.boolean(e, name, "enabled", d.enabled),
            destination=r.choice(e, name, "destination", d.destination, DESTINATIONS),
        )
    return FrozenDict(events)


def _parse_announce(r: _Reader, raw: object) -> AnnounceConfig:
    d = AnnounceConfig()
    keys = (
        "enabled",
        "id_mode",
        "id_interval_secs",
        "cw_wpm",
        "cw_tone_hz",
        "cw_keys_when_idle",
        "callsign",
        "to_links",
        "tts",
        "events",
    )
    t = r.table(raw, "announce", keys)
    callsign = r.string(t, "announce", "callsign", d.callsign)
    if callsign and not _CALLSIGN.fullmatch(callsign):
        r.fail(
            "announce.callsign", "holds characters CW cannot send", "1-32 of A-Z, 0-9, / and space"
        )
    announce = AnnounceConfig(
        enabled=r.boolean(t, "announce", "enabled", d.enabled),
        id_mode=r.choice(t, "announce", "id_mode", d.id_mode, ID_MODES),
        id_interval_secs=r.integer(t, "announce", "id_interval_secs", d.id_interval_secs, 0, 86400),
        cw_wpm=r.integer(t, "announce", "cw_wpm", d.cw_wpm, 5, 60),
        cw_tone_hz=r.number(t, "announce", "cw_tone_hz", d.cw_tone_hz, 200.0, 3400.0),
        cw_keys_when_idle=r.boolean(t, "announce", "cw_keys_when_idle", d.cw_keys_when_idle),
        callsign=callsign,
        to_links=r.boolean(t, "announce", "to_links", d.to_links),
        tts=_parse_tts(r, t["tts"]) if "tts" in t else d.tts,
        events=_parse_events(r, t["events"]) if "events" in t else d.events,
    )
    periodic_id = announce.enabled and announce.id_mode != "off" and announce.id_interval_secs > 0
    if periodic_id and not announce.callsign:
        r.fail(
            "announce.callsign",
            "is empty but a periodic station ID is enabled (announce.enabled, id_mode, "
            "id_interval_secs); the ID needs the text to send",
            "a callsign, e.g. W1AW",
        )
    if announce.enabled and announce.id_mode == "tts" and not announce.tts.enabled:
        r.fail(
            "announce.id_mode",
            'is "tts" but [announce.tts] is not enabled',
            'id_mode = "cw" or "off", or [announce.tts] enabled = true',
        )
    return announce


def _parse_dtmf(r: _Reader, raw: object) -> DtmfConfig:
    d = DtmfConfig()
    t = r.table(raw, "dtmf", ("enabled", "inter_digit_timeout_ms", "inband", "inband_sources"))
    return DtmfConfig(
        enabled=r.boolean(t, "dtmf", "enabled", d.enabled),
        inter_digit_timeout_ms=r.integer(
            t, "dtmf", "inter_digit_timeout_ms", d.inter_digit_timeout_ms, 100, 60000
        ),
        inband=r.boolean(t, "dtmf", "inband", d.inband),
        inband_sources=r.choices(t, "dtmf", "inband_sources", d.inband_sources, INBAND_SOURCES),
    )


_LINKS_KEYS: tuple[str, ...] = (
    "nodes_file",
    "verify_source_ip",
    "dns",
    "dns_domain",
    "dns_servers",
    "dns_timeout_ms",
)
_LINK_KEYS: tuple[str, ...] = ("shape", "username", "permanent", "mode", "addr", "network")


@dataclass(frozen=True, slots=True)
class _Links:
    nodes: FrozenDict[str, LinkConfig]
    nodes_file: Path | None = None
    verify_source_ip: bool = False
    dns: DnsConfig = field(default_factory=DnsConfig)


def _is_domain(name: str) -> bool:
    bare = name.strip(".")
    if not bare or len(bare) > 253 or not _Reader._host_ok(bare, bind=False):
        return False
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        return True
    return False


def _parse_links(r: _Reader, raw: object) -> _Links:
    if not isinstance(raw, dict):
        r.fail("links", f"must be a table ([links]), got {_toml_type(raw)}")
    links: dict[str, LinkConfig] = {}
    nodes_file: Path | None = None
    for key, body in raw.items():
        if key == "nodes_file":
            nodes_file = r.file_path(raw, "links", "nodes_file")
            continue
        if key in _LINKS_KEYS:
            continue
        name = f"links.{key}"
        if not _NODE_ID.fullmatch(key):
            r.fail(
                name,
                "is neither a [links] key nor a [links.<node_id>] table with a numeric node id",
                [*_LINKS_KEYS, "[links.<digits>] tables"],
            )
        links[key] = _parse_link(r, body, name)
    return _Links(
        FrozenDict(links),
        nodes_file,
        r.boolean(raw, "links", "verify_source_ip", False),
        _parse_dns(r, raw),
    )


def _parse_dns(r: _Reader, t: Mapping[str, Any]) -> DnsConfig:
    d = DnsConfig()
    domain = r.string(t, "links", "dns_domain", d.domain)
    if not _is_domain(domain):
        r.fail("links.dns_domain", "is not a DNS domain name", f"a domain, e.g. {ASL_DNS_DOMAIN}")
    raw_servers = t.get("dns_servers", [])
    form = 'an array of "ip" or "ip:port" strings, e.g. ["127.0.0.1:5353"]'
    if type(raw_servers) is not list:
        r.fail("links.dns_servers", f"must be an array, got {_toml_type(raw_servers)}", form)
    servers = tuple(
        r.nameserver(item, f"links.dns_servers[{i}]") for i, item in enumerate(raw_servers)
    )
    return DnsConfig(
        enabled=r.boolean(t, "links", "dns", d.enabled),
        domain=domain.strip(".").lower(),
        servers=servers,
        timeout_ms=r.integer(t, "links", "dns_timeout_ms", d.timeout_ms, 100, 30000),
    )


def _parse_link(r: _Reader, body: object, name: str) -> LinkConfig:
    t = r.table(body, name, _LINK_KEYS)
    username: str | None = None
    if "username" in t:
        username = r.string(t, name, "username", "")
        if not username or len(username) > 64 or any(c.isspace() for c in username):
            r.fail(f"{name}.username", "must be a non-empty name without spaces", "e.g. radio")
    return LinkConfig(
        shape=r.choice(t, name, "shape", "standard", LINK_SHAPES),
        username=username,
        permanent=r.boolean(t, name, "permanent", False),
        mode=r.choice(t, name, "mode", "transceive", LINK_MODES),
        addr=r.address(t, name, "addr", None, bind=False) if "addr" in t else None,
        network=r.choice(t, name, "network", "allstar", LINK_NETWORKS),
    )


def _parse_keying(r: _Reader, raw: object) -> KeyingConfig:
    d = KeyingConfig()
    t = r.table(raw, "keying", ("tx_timeout_secs",))
    return KeyingConfig(
        tx_timeout_secs=r.integer(t, "keying", "tx_timeout_secs", d.tx_timeout_secs, 1, 3600)
    )


def _radio_pin(
    r: _Reader, t: Mapping[str, Any], key: str, backend: str, pins: Mapping[str, Any]
) -> int | str | None:
    """`ptt_pin` / `carrier_pin`: what it may be depends on the backend (`pins[backend]`: a
    tuple of names, "gpio" for a CM108 GPIO number or names, "line" for a GPIO line)."""
    dotted = f"radio.{key}"
    value = t.get(key)
    kind = pins.get(backend)
    if kind is None:
        if value is not None:
            r.fail(dotted, f"has no meaning with {key.split('_')[0]} = {backend}")
        return None
    if kind == "line":
        if value is None:
            r.fail(dotted, f"is required with {key.split('_')[0]} = gpio", "a line offset or name")
        if type(value) is int and 0 <= value <= 511:
            return value
        if type(value) is str and value:
            return value
        r.fail(dotted, "must be a GPIO line", "a line offset 0-511, or the line's name")
    names, gpio_numbers = kind
    accepted = [*names, *(["a CM108 GPIO number 1-8"] if gpio_numbers else [])]
    if value is None:
        return None
    if type(value) is int and gpio_numbers and 1 <= value <= 8:
        return value
    if type(value) is str and value in names:
        return value
    r.fail(dotted, f"is not a {backend} pin", accepted)


def _parse_radio(r: _Reader, raw: object) -> RadioConfig:
    d = RadioConfig()
    names = tuple(f.name for f in dataclasses.fields(RadioConfig))
    t = r.table(raw, "radio", names)
    ptt = r.choice(t, "radio", "ptt", d.ptt, PTT_BACKENDS)
    carrier = r.choice(t, "radio", "carrier", d.carrier, CARRIER_BACKENDS)
    ptt_device = r.string(t, "radio", "ptt_device", d.ptt_device)
    carrier_device = r.string(t, "radio", "carrier_device", d.carrier_device)
    if ptt != "none" and not ptt_device:
        r.fail("radio.ptt_device", f"is required with ptt = {ptt}", _DEVICE_HINT[ptt])
    if carrier in ("serial", "gpio") and not carrier_device:
        r.fail(
            "radio.carrier_device", f"is required with carrier = {carrier}", _DEVICE_HINT[carrier]
        )
    if carrier == "cm108" and not carrier_device:
        if ptt != "cm108":
            r.fail(
                "radio.carrier_device",
                "is required with carrier = cm108 unless ptt = cm108 (then it is ptt_device)",
                _DEVICE_HINT["cm108"],
            )
        carrier_device = ptt_device
    if carrier in ("none", "vox") and carrier_device:
        r.fail("radio.carrier_device", f"has no meaning with carrier = {carrier}")
    if ptt == "none" and ptt_device:
        r.fail("radio.ptt_device", "has no meaning with ptt = none")
    return RadioConfig(
        ptt=ptt,
        ptt_device=ptt_device,
        ptt_pin=_radio_pin(
            r,
            t,
            "ptt_pin",
            ptt,
            {"cm108": ((), True), "serial": (SERIAL_PTT_PINS, False), "gpio": "line"},
        ),
        ptt_invert=r.boolean(t, "radio", "ptt_invert", d.ptt_invert),
        hang_time_ms=r.integer(t, "radio", "hang_time_ms", d.hang_time_ms, 0, 60000),
        carrier=carrier,
        carrier_device=carrier_device,
        carrier_pin=_carrier_pin(r, t, carrier),
        carrier_invert=r.boolean(t, "radio", "carrier_invert", d.carrier_invert),
        rx_on_delay_ms=r.integer(t, "radio", "rx_on_delay_ms", d.rx_on_delay_ms, 0, 5000),
        rx_audio_delay_ms=r.integer(t, "radio", "rx_audio_delay_ms", d.rx_audio_delay_ms, 0, 1000),
        vox_threshold_db=r.number(t, "radio", "vox_threshold_db", d.vox_threshold_db, -80.0, 0.0),
        vox_attack_ms=r.integer(t, "radio", "vox_attack_ms", d.vox_attack_ms, 0, 10000),
        vox_release_ms=r.integer(t, "radio", "vox_release_ms", d.vox_release_ms, 0, 10000),
        courtesy_tone=_courtesy_tone(r, t),
        courtesy_tone_level_db=r.number(
            t, "radio", "courtesy_tone_level_db", d.courtesy_tone_level_db, -60.0, 0.0
        ),
    )


_COURTESY_FORM = "an array of [first Hz, second Hz, ms] steps, e.g. [[880, 0, 80], [660, 0, 80]]"


def _courtesy_tone(r: _Reader, t: Mapping[str, Any]) -> tuple[tuple[float, float, int], ...]:
    raw = t.get("courtesy_tone", [])
    if type(raw) is not list or len(raw) > 16:
        r.fail("radio.courtesy_tone", "must be an array of at most 16 steps", _COURTESY_FORM)
    steps = []
    for i, step in enumerate(raw):
        key = f"radio.courtesy_tone[{i}]"
        if type(step) is not list or len(step) != 3:
            r.fail(key, "must be [first Hz, second Hz, ms]", _COURTESY_FORM)
        f1, f2, ms = step
        for hz in (f1, f2):
            if type(hz) not in (int, float) or not (hz == 0 or 20 <= hz <= 3500):
                r.fail(key, "a frequency is out of range", "0 (none) or 20-3500 Hz")
        if type(ms) is not int or not 1 <= ms <= 5000:
            r.fail(key, "the length is out of range", "an integer from 1 to 5000 ms")
        steps.append((float(f1), float(f2), ms))
    return tuple(steps)


_DEVICE_HINT = {
    "cm108": "the interface's hidraw node, e.g. /dev/hidraw0",
    "serial": "a serial port, e.g. /dev/ttyUSB0",
    "gpio": "a GPIO chip, e.g. gpiochip0 or /dev/gpiochip0",
}


def _carrier_pin(r: _Reader, t: Mapping[str, Any], carrier: str) -> int | str | None:
    pin = _radio_pin(
        r,
        t,
        "carrier_pin",
        carrier,
        {"cm108": (CM108_BUTTONS, True), "serial": (SERIAL_CARRIER_PINS, False), "gpio": "line"},
    )
    if carrier == "serial" and pin is None:
        r.fail("radio.carrier_pin", "is required with carrier = serial", SERIAL_CARRIER_PINS)
    return pin


def _parse_ami(r: _Reader, raw: object) -> AmiConfig:
    d = AmiConfig()
    names = ("enabled", "bind", "allow_remote", "username", "max_connections")
    t = r.table(raw, "ami", names)
    username = r.string(t, "ami", "username", d.username)
    if not _AMI_USER.fullmatch(username):
        r.fail(
            "ami.username",
            "is not a valid AMI user name",
            "1-64 printable ASCII characters without blanks or [ ], e.g. admin",
        )
    ami = AmiConfig(
        enabled=r.boolean(t, "ami", "enabled", d.enabled),
        bind=r.address(t, "ami", "bind", d.bind, bind=True),
        allow_remote=r.boolean(t, "ami", "allow_remote", d.allow_remote),
        username=username,
        max_connections=r.integer(t, "ami", "max_connections", d.max_connections, 1, 1000),
    )
    if not ami.bind.is_loopback and not ami.allow_remote:
        r.fail(
            "ami.bind",
            "is not a loopback address: AMI sends its password and everything else in clear "
            "text; set ami.allow_remote = true to accept that (better: an SSH tunnel or VPN)",
            "a loopback address (127.0.0.0/8, [::1] or localhost), e.g. 127.0.0.1:5038",
        )
    return ami


def _parse_portal(r: _Reader, raw: object) -> PortalConfig:
    names = ("user", "node", "credential_env")
    t = r.table(raw, "portal", (*names, "url"), required=names)
    # Not `PortalConfig.url`: on a slotted dataclass that is the slot's descriptor.
    url = r.string(t, "portal", "url", PORTAL_URL)
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
        r.fail("portal.url", "is not an http(s) URL", "e.g. https://www.allstarlink.org")
    user = r.string(t, "portal", "user", "")
    node = r.string(t, "portal", "node", "")
    env = r.string(t, "portal", "credential_env", "")
    if not user.strip():
        r.fail("portal.user", "must not be empty", "the portal account name")
    if not node.strip():
        r.fail("portal.node", "must not be empty", "a node the portal account owns")
    if not _ENV_NAME.fullmatch(env):
        r.fail(
            "portal.credential_env",
            "must be the NAME of an environment variable (not the password itself)",
            "letters, digits and _, not starting with a digit, e.g. PORTAL_PASSWORD",
        )
    return PortalConfig(user=user, node=node, credential_env=env, url=url)


_WG_KEYS: tuple[str, ...] = (
    "address",
    "private_key_env",
    "peer_public_key",
    "listen_port",
    "endpoint",
    "allowed_ips",
    "persistent_keepalive",
    "preshared_key_env",
)
_WG_REQUIRED: tuple[str, ...] = ("address", "private_key_env", "peer_public_key", "allowed_ips")


def _env_name(r: _Reader, t: Mapping[str, Any], name: str, key: str, example: str) -> str:
    value = r.string(t, name, key, "")
    if not _ENV_NAME.fullmatch(value):
        r.fail(
            f"{name}.{key}",
            "must be the NAME of an environment variable (not the key itself)",
            f"letters, digits and _, not starting with a digit, e.g. {example}",
        )
    return value


def _parse_wireguard(r: _Reader, raw: object) -> WireGuardConfig:
    d = "wireguard"
    t = r.table(raw, d, _WG_KEYS, required=_WG_REQUIRED)
    # wg-quick writes `Address = 10.8.0.2/24`; the prefix routes nothing here (allowed_ips do).
    text = r.string(t, d, "address", "")
    try:
        address = ipaddress.IPv4Interface(text).ip
    except ValueError:
        r.fail(
            "wireguard.address",
            "is not an IPv4 address (the tunnel carries IPv4)",
            "e.g. 10.8.0.2 (a /prefix, as wg-quick writes it, is accepted and ignored)",
        )
    if address.is_unspecified or address.is_multicast or address.is_loopback:
        r.fail("wireguard.address", "must be a unicast address", "e.g. 10.8.0.2")
    peer_key = r.string(t, d, "peer_public_key", "")
    try:
        decode_key(peer_key)
    except ValueError:
        r.fail("wireguard.peer_public_key", "is not a WireGuard public key", KEY_FORMAT)
    raw_ips = t["allowed_ips"]
    form = 'a non-empty array of IPv4 networks, e.g. ["10.8.0.0/24"] or ["0.0.0.0/0"]'
    if type(raw_ips) is not list or not raw_ips:
        r.fail("wireguard.allowed_ips", "must be a non-empty array", form)
    nets: list[str] = []
    for i, item in enumerate(raw_ips):
        key = f"wireguard.allowed_ips[{i}]"
        if type(item) is not str:
            r.fail(key, f"must be a string, got {_toml_type(item)}", form)
        try:
            net = ipaddress.ip_network(item, strict=False)
        except ValueError:
            r.fail(key, "is not an IP network", form)
        if net.version != 4:
            r.fail(key, "is an IPv6 network; the tunnel carries IPv4 only", form)
        nets.append(str(net))
    endpoint = None
    if "endpoint" in t:
        endpoint = r.address(t, d, "endpoint", None, bind=False)
    preshared = None
    if t.get("preshared_key_env", ""):
        preshared = _env_name(r, t, d, "preshared_key_env", "WG_PRESHARED_KEY")
    return WireGuardConfig(
        address=str(address),
        private_key_env=_env_name(r, t, d, "private_key_env", "WG_PRIVATE_KEY"),
        peer_public_key=peer_key.strip(),
        listen_port=r.integer(t, d, "listen_port", 0, 0, 65535),
        endpoint=endpoint,
        allowed_ips=tuple(nets),
        persistent_keepalive=r.integer(t, d, "persistent_keepalive", 25, 0, 65535),
        preshared_key_env=preshared,
    )


def _parse_parrot(r: _Reader, raw: object) -> ParrotConfig:
    d = ParrotConfig()
    t = r.table(raw, "parrot", ("playback_delay_ms", "silence_gap_ms", "vox_threshold_db"))
    return ParrotConfig(
        playback_delay_ms=r.integer(
            t, "parrot", "playback_delay_ms", d.playback_delay_ms, 0, 60000
        ),
        silence_gap_ms=r.integer(t, "parrot", "silence_gap_ms", d.silence_gap_ms, 20, 10000),
        vox_threshold_db=r.number(t, "parrot", "vox_threshold_db", d.vox_threshold_db, -96.0, 0.0),
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(str(path), None, "file not found") from None
    except IsADirectoryError:
        raise ConfigError(str(path), None, "is a directory, not a config file") from None
    except OSError as exc:
        raise ConfigError(str(path), None, f"cannot read the file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(str(path), None, f"not UTF-8 text (line {line})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message names the position ("(at line 3, column 7)") and never the value.
        raise ConfigError(str(path), None, f"TOML syntax error: {exc}") from None


def load_config(path: str | os.PathLike[str]) -> NodeConfig:
    """Read and validate a config file. Raises `ConfigError` for every problem found."""
    file = Path(path)
    doc = _read_toml(file)
    r = _Reader(file)
    for key, value in doc.items():
        if key in _TOP_KEYS:
            continue
        if key not in _SECTIONS:
            kind = "section" if isinstance(value, dict) else "top-level key"
            r.fail(key, f"unknown {kind}", [*(f"[{s}]" for s in _SECTIONS), *_TOP_KEYS])
    for section in _REQUIRED_SECTIONS:
        if section not in doc:
            r.fail(section, f"the required section [{section}] is missing")

    links = _parse_links(r, doc["links"]) if "links" in doc else _Links(FrozenDict())
    codec_policy = r.choice(doc, None, "codec_policy", "prefer_slin16", CODEC_POLICIES)
    station_rate = NodeConfig(codec_policy=codec_policy).station_rate
    config = NodeConfig(
        listener=_parse_listener(r, doc["listener"]),
        register=_parse_register(r, doc["register"]) if "register" in doc else None,
        control=_parse_control(r, doc["control"]),
        secrets=_parse_secrets(r, doc["secrets"]) if "secrets" in doc else SecretsConfig(),
        bridge=_parse_bridge(r, doc["bridge"]) if "bridge" in doc else BridgeConfig(),
        audio=_parse_audio(r, doc["audio"], station_rate) if "audio" in doc else AudioConfig(),
        codec_policy=codec_policy,
        announce=_parse_announce(r, doc["announce"]) if "announce" in doc else AnnounceConfig(),
        dtmf=_parse_dtmf(r, doc["dtmf"]) if "dtmf" in doc else DtmfConfig(),
        links=links.nodes,
        nodes_file=links.nodes_file,
        verify_source_ip=links.verify_source_ip,
        dns=links.dns,
        keying=_parse_keying(r, doc["keying"]) if "keying" in doc else KeyingConfig(),
        radio=_parse_radio(r, doc["radio"]) if "radio" in doc else RadioConfig(),
        ami=_parse_ami(r, doc["ami"]) if "ami" in doc else AmiConfig(),
        statpost=_parse_statpost(r, doc["statpost"]) if "statpost" in doc else None,
        portal=_parse_portal(r, doc["portal"]) if "portal" in doc else None,
        parrot=_parse_parrot(r, doc["parrot"]) if "parrot" in doc else ParrotConfig(),
        wireguard=_parse_wireguard(r, doc["wireguard"]) if "wireguard" in doc else None,
        path=file,
    )
    if config.statpost is not None and config.register is None:
        r.fail(
            "statpost",
            "needs this node's number, and [register] node_id is where it is set",
            "a [register] section with node_id, or no [statpost]",
        )
    for node, link in config.links.items():
        if link.shape == "wt-guest" and config.portal is None:
            r.fail(
                f"links.{node}.shape",
                "wt-guest needs a [portal] section (the web-transceiver token is minted with the "
                "portal account)",
                "add [portal] with user, node and credential_env, or shape = standard",
            )
    _warn_risky(config)
    return config


def _warn_risky(config: NodeConfig) -> None:
    """Log settings that load fine but that an operator should know the cost of."""
    where = config.path
    if config.listener.auth == "off" and not config.listener.allowed_nodes:
        log.warning(
            "%s: listener.auth is off and allowed_nodes is empty: every caller is admitted "
            "(limited only by max_calls)",
            where,
        )
    if config.dtmf.enabled:
        log.warning("%s: dtmf.enabled: any connected member can command the links", where)
    if config.ami.enabled and not config.ami.bind.is_loopback:
        log.warning(
            "%s: ami.bind is not loopback (ami.allow_remote): the AMI password and every "
            "command cross the network in clear text",
            where,
        )
    bridge = config.bridge
    hears = bridge.mode == "handset" or (bridge.mode == "conference" and bridge.include_local_radio)
    if config.radio.ptt != "none" and not hears:
        log.warning(
            "%s: radio.ptt is set but the local radio is not in the conference (bridge.mode = "
            "%s, include_local_radio = %s): the transmitter keys only once POST /bridge puts it "
            "there",
            where,
            bridge.mode,
            str(bridge.include_local_radio).lower(),
        )
    reg = config.register
    if config.wireguard is not None and reg is not None and reg.method == "http":
        log.warning(
            "%s: [wireguard] with register.method = http: the registrar sees the address the "
            "HTTPS request leaves from, not the tunnel's, and nodes that check source addresses "
            "refuse calls from the tunnel; method = iax2 registers through the tunnel",
            where,
        )
    if config.announce.enabled and config.announce.cw_keys_when_idle:
        log.warning(
            "%s: announce.cw_keys_when_idle: the periodic ID keys the transmitter (a real "
            "transmission)",
            where,
        )


def iter_template_keys() -> Iterator[str]:
    """Every dotted key the loader accepts, for tests and docs that must cover them all."""
    yield "codec_policy"
    for cls, name in (
        (ListenerConfig, "listener"),
        (RegisterConfig, "register"),
        (ControlConfig, "control"),
        (SecretsConfig, "secrets"),
        (BridgeConfig, "bridge"),
        (AudioConfig, "audio"),
        (DtmfConfig, "dtmf"),
        (PortalConfig, "portal"),
        (ParrotConfig, "parrot"),
        (KeyingConfig, "keying"),
        (RadioConfig, "radio"),
        (AmiConfig, "ami"),
        (StatpostConfig, "statpost"),
        (WireGuardConfig, "wireguard"),
    ):
        for f in dataclasses.fields(cls):
            yield f"{name}.{f.name}"
    for f in dataclasses.fields(AnnounceConfig):
        if f.name not in ("tts", "events"):
            yield f"announce.{f.name}"
    for f in dataclasses.fields(TtsConfig):
        yield f"announce.tts.{f.name}"
    for event in EVENT_NAMES:
        for f in dataclasses.fields(AnnounceEventConfig):
            yield f"announce.events.{event}.{f.name}"
    yield "links.nodes_file"
    yield "links.verify_source_ip"
    yield from ("links.dns", "links.dns_domain", "links.dns_servers", "links.dns_timeout_ms")
    for f in dataclasses.fields(LinkConfig):
        yield f"links.<node_id>.{f.name}"


def write_template(path: str | os.PathLike[str]) -> None:
    """Write the commented template to `path` atomically (mode 0644), creating parent dirs.

    The template holds no secret and loads to exactly `NodeConfig()`.
    """
    from node._template import TEMPLATE

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(TEMPLATE)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp creates 0600; the template holds no secret and the operator should be able to
        # read it without sudo.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # Make the rename itself durable.
    with contextlib.suppress(OSError):
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
