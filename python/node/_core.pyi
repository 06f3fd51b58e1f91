"""Type stubs for the native module `node._core` (hand-written; one section per Rust area)."""

from collections.abc import Iterable, Mapping
from collections.abc import Iterable as _Iterable
from typing import Any, ClassVar, TypeAlias, final
from typing import final as _final

from typing_extensions import Buffer as _Buffer

# Every section adds its public names here (stubtest compares this with the runtime list).
__all__ = [
    "ActivityChanged",
    "CodecError",
    "CommandFailed",
    "Conference",
    "ControlPlayed",
    "Decimator",
    "DeviceError",
    "DevicePort",
    "Downsampler",
    "DtmfDecoded",
    "DtmfDetector",
    "EchoLinkReceived",
    "Engine",
    "EngineError",
    "EngineEvent",
    "FrameError",
    "FullFrame",
    "FullVoiceNeeded",
    "GsmDecoder",
    "GsmEncoder",
    "Interpolator",
    "LocalTxChanged",
    "LoudnessMeter",
    "MiniBeforeFull",
    "MiniFrame",
    "MixerError",
    "PlayFinished",
    "PlayStarted",
    "RxKeyed",
    "SpurtEnded",
    "StationEvent",
    "ToneError",
    "TrunkFrame",
    "TunnelChanged",
    "Upsampler",
    "UsrpCarrierChanged",
    "UsrpDtmfReceived",
    "UsrpMetaReceived",
    "UsrpPeerChanged",
    "UsrpPort",
    "VideoFrame",
    "VoxChanged",
    "WireGuard",
    "__version__",
    "alaw_decode",
    "alaw_decode_many",
    "alaw_encode",
    "compress_subclass",
    "conceal_frames",
    "cw_pcm",
    "decode_codec_prefs",
    "dtmf_pcm",
    "encode_codec_prefs",
    "jitter_replay",
    "normalize_pcm",
    "parse",
    "resample_pcm",
    "slin16_from_wire",
    "slin16_to_wire",
    "slin_from_wire",
    "slin_to_wire",
    "tone_pcm",
    "tone_sequence_pcm",
    "ulaw_decode",
    "ulaw_decode_many",
    "ulaw_encode",
    "uncompress_subclass",
    "wg_public_key",
]

__version__: str

class FrameError(ValueError):
    """A datagram or frame that is not valid IAX2, or a value that cannot be encoded."""

class EngineError(OSError):
    """The engine thread or its socket failed (bind, send, or use after close)."""

# --- frames ---

#: Typed IE values as returned by `FullFrame.ie()` and accepted by `FullFrame(ies=...)`:
#: str (string IEs), int (u8/u16/u32 IEs), (version, value) (FORMAT2, CAPABILITY2),
#: (host, port) (APPARENT_ADDR), (year, month, day, hour, minute, second) (DATETIME),
#: True (AUTOANSWER present), bytes (raw kinds; bytes are accepted for any IE when building).
_IeValue: TypeAlias = (
    str
    | int
    | tuple[int, int]
    | tuple[str, int]
    | tuple[int, int, int, int, int, int]
    | bool
    | bytes
)

@final
class FullFrame:
    """A full frame. IAX (type 6) frames carry IEs, every other type a raw payload."""

    def __new__(
        cls,
        ftype: int,
        subclass: int,
        *,
        scall: int = 0,
        dcall: int = 0,
        ts: int = 0,
        oseq: int = 0,
        iseq: int = 0,
        retrans: bool = False,
        ies: Iterable[tuple[int, _IeValue | bytearray]] | None = None,
        payload: bytes | bytearray = b"",
    ) -> FullFrame: ...
    @property
    def ftype(self) -> int: ...
    @property
    def subclass(self) -> int:
        """Decoded subclass (format bit for VOICE, -1 for STOP_SOUNDS, ...)."""
    @property
    def csub(self) -> int:
        """The subclass byte exactly as on the wire."""
    @property
    def video_marker(self) -> bool: ...
    @property
    def scall(self) -> int: ...
    @scall.setter
    def scall(self, value: int) -> None: ...
    @property
    def dcall(self) -> int: ...
    @dcall.setter
    def dcall(self, value: int) -> None: ...
    @property
    def ts(self) -> int: ...
    @ts.setter
    def ts(self, value: int) -> None: ...
    @property
    def oseq(self) -> int: ...
    @oseq.setter
    def oseq(self, value: int) -> None: ...
    @property
    def iseq(self) -> int: ...
    @iseq.setter
    def iseq(self, value: int) -> None: ...
    @property
    def retrans(self) -> bool: ...
    @retrans.setter
    def retrans(self, value: bool) -> None: ...
    @property
    def payload(self) -> bytes: ...
    @payload.setter
    def payload(self, value: bytes | bytearray) -> None: ...
    @property
    def ies(self) -> list[tuple[int, bytes]]:
        """Every IE as (id, raw bytes), in wire order."""
    def ie(self, id: int) -> _IeValue | None:
        """Typed value of the first IE `id`; None if absent or of the wrong size."""
    def ie_all(self, id: int) -> list[_IeValue]:
        """Typed values of every decodable IE `id`, in wire order."""
    def has_ie(self, id: int) -> bool: ...
    def to_bytes(self) -> bytes: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]

@final
class MiniFrame:
    """A mini voice frame; its codec is that of the last full voice frame of the call."""

    def __new__(cls, scall: int, ts16: int, payload: bytes | bytearray) -> MiniFrame: ...
    @property
    def scall(self) -> int: ...
    @property
    def ts16(self) -> int: ...
    @property
    def payload(self) -> bytes: ...
    def to_bytes(self) -> bytes: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class VideoFrame:
    """A video mini frame (recognised so that it can be dropped)."""

    def __new__(
        cls, scall: int, ts15: int, marker: bool, payload: bytes | bytearray
    ) -> VideoFrame: ...
    @property
    def scall(self) -> int: ...
    @property
    def ts15(self) -> int: ...
    @property
    def marker(self) -> bool: ...
    @property
    def payload(self) -> bytes: ...
    def to_bytes(self) -> bytes: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class TrunkFrame:
    """A meta trunk frame: entries are (callno, ts16 or None, payload)."""

    def __new__(
        cls,
        ts: int,
        entries: Iterable[tuple[int, int | None, bytes | bytearray]],
        timestamps: bool,
    ) -> TrunkFrame: ...
    @property
    def ts(self) -> int: ...
    @property
    def timestamps(self) -> bool: ...
    @property
    def entries(self) -> list[tuple[int, int | None, bytes]]: ...
    def minis(self) -> list[MiniFrame]:
        """Per-call mini frames; entries without a timestamp get the trunk ts's low 16 bits."""
    def to_bytes(self) -> bytes: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

def parse(data: bytes | bytearray) -> FullFrame | MiniFrame | TrunkFrame | VideoFrame:
    """Parse one datagram; raises FrameError for anything that is not IAX2."""

def compress_subclass(value: int) -> int: ...
def uncompress_subclass(csub: int) -> int: ...
def encode_codec_prefs(formats: Iterable[int]) -> str: ...
def decode_codec_prefs(prefs: str | bytes | bytearray) -> list[int]: ...

# --- codecs ---
# G.711 µ-law/A-law (bit-exact with audioop width 2), slin/slin16 byte orders, and the streaming
# 8 kHz <-> 16 kHz halfband resamplers. PCM is native-endian int16 bytes; every function accepts
# bytes or any other buffer (bytes is read in place, others are copied once).

class CodecError(ValueError):
    """Audio a codec or resampler cannot take (e.g. 16-bit PCM with an odd byte count)."""

def ulaw_encode(pcm: _Buffer) -> bytes:
    """PCM to µ-law, one byte per sample (as audioop.lin2ulaw(pcm, 2))."""

def ulaw_decode(data: _Buffer) -> bytes:
    """µ-law to PCM (as audioop.ulaw2lin(data, 2))."""

def alaw_encode(pcm: _Buffer) -> bytes:
    """PCM to A-law, one byte per sample (as audioop.lin2alaw(pcm, 2))."""

def alaw_decode(data: _Buffer) -> bytes:
    """A-law to PCM (as audioop.alaw2lin(data, 2))."""

def conceal_frames(
    pcm: _Buffer, lost: _Iterable[bool], rate: int = 8000, method: str = "pitch"
) -> bytes:
    """PCM (native 16-bit, 20 ms frames) with the frames where `lost` is true concealed as a
    leg conceals them: "pitch" (pitch-period repetition) or "fade" (repeat-and-fade)."""

def jitter_replay(
    arrivals: list[tuple[int, int, bytes]],
    first_tick_ms: int,
    ticks: int,
    rate: int = 8000,
    method: str = "pitch",
    target_extra_ms: int = 40,
) -> tuple[bytes, dict[str, Any], list[int]]:
    """The audio a leg would mix over `ticks` 20 ms ticks from `first_tick_ms` when the frames
    `arrivals` (timestamp, arrival ms, native 16-bit PCM of 20 ms) reach it: the media path's
    jitter buffer and concealment `method`, offline; the buffer's counters; and what each tick
    played (the frame's timestamp, -1 concealment, -2 silence)."""

def normalize_pcm(
    pcm: _Buffer,
    rate: int = 8000,
    target_lufs: float | None = None,
    max_gain_db: float | None = None,
) -> tuple[bytes, float]:
    """PCM (native 16-bit, 8 or 16 kHz) through a leg's normaliser in 20 ms frames, as the
    media path runs it on a voice it receives (delayed by the limiter's 1 ms look-ahead); and
    the gain at the end, dB. None: `[bridge]`'s defaults (-30 LUFS, 15 dB)."""

@final
class LoudnessMeter:
    """The media path's ITU-R BS.1770 meter over PCM at `rate` (8000, 16000 or 48000):
    short-term loudness of the last 3 s of speech (gated in pauses), peak, clipped samples."""

    def __new__(cls, rate: int) -> LoudnessMeter: ...
    def feed(self, pcm: _Buffer) -> None:
        """Measure the next samples (native 16-bit)."""
    def reading(self) -> dict[str, Any]:
        """`lufs` (None before 400 ms of speech), `peak_dbfs`, `clipped`, `speech`."""

def ulaw_decode_many(frames: _Iterable[_Buffer]) -> list[bytes]:
    """Decode many µ-law frames in one call; one PCM bytes per frame."""

def alaw_decode_many(frames: _Iterable[_Buffer]) -> list[bytes]:
    """Decode many A-law frames in one call; one PCM bytes per frame."""

def slin_to_wire(pcm: _Buffer) -> bytes:
    """PCM to slin (8 kHz) wire bytes: big-endian."""

def slin_from_wire(data: _Buffer) -> bytes:
    """slin (8 kHz, big-endian) wire bytes to PCM."""

def slin16_to_wire(pcm: _Buffer) -> bytes:
    """PCM to slin16 (16 kHz) wire bytes: little-endian."""

def slin16_from_wire(data: _Buffer) -> bytes:
    """slin16 (16 kHz, little-endian) wire bytes to PCM."""

@_final
class Upsampler:
    """Streaming 8 kHz -> 16 kHz resampler; state carries across process() calls."""

    def __new__(cls) -> Upsampler: ...
    def process(self, pcm: _Buffer) -> bytes:
        """8 kHz PCM in, twice as many 16 kHz samples out."""

    def reset(self) -> None:
        """Forget the filter history."""

    @property
    def delay(self) -> float:
        """Group delay in output (16 kHz) samples: 33.0."""

@_final
class Downsampler:
    """Streaming 16 kHz -> 8 kHz resampler; state carries across process() calls."""

    def __new__(cls) -> Downsampler: ...
    def process(self, pcm: _Buffer) -> bytes:
        """16 kHz PCM in, half as many 8 kHz samples out (an odd sample waits for the next call)."""

    def reset(self) -> None:
        """Forget the filter history and any pending sample."""

    @property
    def delay(self) -> float:
        """Group delay in output (8 kHz) samples: 16.5."""

@final
class GsmEncoder:
    """A GSM 06.10 full-rate encoder (pure Rust, bit-exact with libgsm's default build): one
    state per stream, since GSM predicts from the frames before."""

    def __new__(cls) -> GsmEncoder: ...
    def encode(self, pcm: _Buffer) -> bytes:
        """Whole 20 ms frames of native-endian int16 PCM at 8 kHz (320 bytes each) to 33-byte
        frames (libgsm's packing, 0xD signature), in order. CodecError for a length that is
        not whole frames."""

@final
class GsmDecoder:
    """A GSM 06.10 full-rate decoder (bit-exact with libgsm): one state per stream."""

    def __new__(cls) -> GsmDecoder: ...
    def decode(self, frames: _Buffer) -> bytes:
        """Whole 33-byte frames to native-endian int16 PCM at 8 kHz (320 bytes each), in
        order. CodecError for a length that is not whole frames or a frame without the 0xD
        signature (as libgsm refuses it; the frames before it are decoded into the state)."""

# --- end codecs ---

# --- engine ---
# The thread that owns the IAX2 UDP socket and the 20 ms media clock.

_Addr: TypeAlias = tuple[str, int]

@final
class WireGuard:
    """The settings of a userspace WireGuard tunnel to one peer; pass to
    `Engine(wireguard=...)`. `address` is ours inside the tunnel ("ip:port", IPv4), `listen`
    where the outer socket binds, `endpoint` the peer's outer "ip:port" (None: wait for the
    peer), `allowed_ips` IPv4 networks, `persistent_keepalive` seconds (0: off). Keys are the
    raw 32 bytes; the repr never shows them. ValueError for a malformed setting."""

    def __new__(
        cls,
        private_key: bytes,
        peer_public_key: bytes,
        address: str,
        listen: str,
        endpoint: str | None,
        allowed_ips: list[str],
        persistent_keepalive: int = 0,
        preshared_key: bytes | None = None,
    ) -> WireGuard: ...
    @property
    def address(self) -> _Addr: ...

def wg_public_key(private_key: bytes) -> bytes:
    """The public key (32 bytes) of a WireGuard private key (32 bytes), as `wg pubkey` does."""

@final
class Engine:
    """Binds `bind` ("host:port", port 0 for any) and starts the engine thread; the socket
    buffers are sized for `legs` legs. With `wireguard`, every datagram goes through that
    tunnel (which binds its own outer socket) and `local_addr` is the tunnel address."""

    def __new__(
        cls,
        bind: str,
        rate: int = 8000,
        mix_minus: bool = True,
        queue_limit: int = 4096,
        legs: int = 64,
        wireguard: WireGuard | None = None,
        concealment: str = "pitch",
        jitter_target_extra_ms: int | None = None,
        jitter_max_ms: int | None = None,
        stations: int = 1,
    ) -> Engine: ...
    @property
    def stations(self) -> int:
        """Conferences the engine mixes (one per hosted node); every command, device and USRP
        radio takes `station=` (0 by default), and a further station's events come as
        `StationEvent`."""
    def add_local_link(
        self,
        id: int,
        peer_station: int,
        peer_id: int,
        mode: str = "transceive",
        peer_mode: str = "transceive",
        *,
        station: int = 0,
    ) -> None:
        """Link leg `id` of `station` to leg `peer_id` of `peer_station` inside the engine (no
        datagram); either leg's `remove_leg` ends it."""
    @property
    def local_addr(self) -> _Addr: ...
    @property
    def running(self) -> bool: ...
    @property
    def frame_len(self) -> int: ...
    @property
    def rate(self) -> int: ...
    def wakeup_fd(self) -> int: ...
    def drain(self) -> list[tuple[_Addr, FullFrame]]: ...
    def drain_events(self) -> list[EngineEvent]:
        """The events since the last call, oldest first (see the engine events section)."""
    def send_to(self, data: bytes, addr: _Addr) -> None: ...
    def counters(self) -> dict[str, int]: ...
    def queue_depths(self) -> dict[str, int]: ...
    def tunnel(self) -> dict[str, Any] | None:
        """The WireGuard tunnel's health, None without one: state ("down", "handshaking",
        "up"), listen (the outer socket's "ip:port"), endpoint, last_handshake_s, handshakes,
        handshake_attempts, rx_bytes, tx_bytes, dropped_outer, dropped_inner, no_route,
        public_key (bytes)."""
    def tick_stats(self) -> dict[str, int]: ...
    def jitter_stats(self) -> list[tuple[int, dict[str, int]]]: ...
    def leg_jitter_stats(self, callno: int) -> dict[str, int] | None: ...
    def add_leg(
        self,
        callno: int,
        peer_callno: int,
        peer: _Addr,
        format: int,
        mode: str = "transceive",
        call_ts_ms: int = 0,
        keying: str = "always",
        dtmf: bool = False,
        link: bool = False,
        normalize: bool | None = None,
        *,
        station: int = 0,
    ) -> None: ...
    def set_normalize(
        self, on: bool, target_lufs: float, max_gain_db: float, *, station: int = 0
    ) -> None:
        """Normalise the received voice of every leg of the station without an override of its
        own (`on`) to `target_lufs` (-60 to -10), lifting at most `max_gain_db` (0 to 30);
        ValueError naming the range otherwise."""
    def levels(self, *, station: int = 0) -> dict[str, Any]:
        """Every meter of the station as of the last statistics tick: {"legs": [(callno, {"rx",
        "tx", "gain_db"})], "local": {"rx", "tx"}}; a reading is a dict of `lufs` (None before
        400 ms of speech), `peak_dbfs`, `clipped`, `speech`."""
    def set_leg_keying(self, callno: int, keying: str, *, station: int = 0) -> None: ...
    def set_leg_dtmf(self, callno: int, on: bool, *, station: int = 0) -> None: ...
    def set_local_dtmf(self, on: bool, *, station: int = 0) -> None: ...
    def play(
        self,
        id: int,
        pcm: _Buffer,
        destination: str,
        keys_local: bool = False,
        *,
        station: int = 0,
    ) -> None:
        """Mix `pcm` (int16 at the station rate) into "to_monitor", "to_air" or
        "to_air_and_links" from the next tick, as clip `id`."""
    def stop_playing(self, id: int, *, station: int = 0) -> None: ...
    def remove_leg(self, callno: int, *, station: int = 0) -> None: ...
    def set_leg_mode(self, callno: int, mode: str, *, station: int = 0) -> None: ...
    def set_leg_codec(self, callno: int, format: int, *, station: int = 0) -> None: ...
    def push_voice(
        self, callno: int, format: int, ts: int, payload: bytes, *, station: int = 0
    ) -> None: ...
    def push_control(
        self,
        callno: int,
        kind: str,
        value: int,
        ts: int,
        payload: bytes = ...,
        *,
        station: int = 0,
    ) -> None: ...
    def set_mix_minus(self, on: bool, *, station: int = 0) -> None: ...
    def set_parrot(
        self,
        on: bool,
        playback_delay_ms: int,
        silence_gap_ms: int,
        vox_threshold_db: float,
        *,
        station: int = 0,
    ) -> None:
        """Parrot mode: each member's audio recorded and played back to it alone; off: the
        conference."""
    def set_local_radio(self, on: bool, *, station: int = 0) -> None: ...
    def set_local_keyed(self, on: bool, *, station: int = 0) -> None: ...
    def set_local_gated(self, on: bool, *, station: int = 0) -> None: ...
    def open_device(
        self,
        device_rate: int,
        rx_gain_db: float = 0.0,
        tx_gain_db: float = 0.0,
        rx_delay_ms: int = 0,
        vox: tuple[float, int, int] | None = None,
        trades: bool = True,
        *,
        station: int = 0,
    ) -> DevicePort:
        """Attach a sound card running at `device_rate` (the station rate or 48000) to the local
        radio member; gains in dB (-40 to +20); `rx_delay_ms` (0-1000) holds the received audio
        back; `vox` = (threshold dBFS -80..0, attack ms, release ms) reports `VoxChanged`
        events. With `trades` False (the null backend) the port exchanges no blocks and does not
        keep the engine's clock running, so an idle engine sleeps. DeviceError for a setting it
        cannot take."""
    def open_usrp(
        self,
        listen: str,
        peer: str,
        settings: Mapping[str, float] | None = None,
        *,
        station: int = 0,
    ) -> UsrpPort:
        """Attach a USRP radio (ip:port literals) as the local radio: an engine thread owns its
        socket and 20 ms clock. `settings`: rx_gain_db, tx_gain_db, prefill_frames,
        queue_frames, rx_timeout_ms, talkgroup. Events `UsrpCarrierChanged`,
        `UsrpDtmfReceived`, `UsrpMetaReceived`, `UsrpPeerChanged`. ValueError for an address
        or an unknown setting, EngineError for a port or a setting out of range."""
    def echolink_open(
        self, bind_ip: str, audio_port: int = 5198, control_port: int = 5199
    ) -> tuple[_Addr, _Addr]:
        """Bind the EchoLink ports (UDP `audio_port` and `control_port` on `bind_ip`; 0 picks a
        free port) and poll them from the engine thread beside the IAX2 socket; returns the
        bound (audio, control) addresses. Ports already open are closed first. Every control
        datagram, and every audio-port datagram whose first byte is not 0xC0 (text such as
        `oNDATA...`), comes as an `EchoLinkReceived` event; audio packets stay in the engine
        (the EchoLink legs), counted and dropped when no leg has their source address.
        EngineError when a port cannot be bound."""
    def echolink_close(self) -> None:
        """Close the EchoLink ports (idempotent)."""
    def echolink_send(self, kind: str, data: bytes, ip: str, port: int | None = None) -> None:
        """Send `data` to the EchoLink station at `ip`: kind "control" from our control port
        to its control port, "text" from our audio port to its audio port (the protocol's
        ports are fixed, so the station's are ours; `port` overrides for tests). EngineError
        while the ports are closed, ValueError for another kind."""
    def add_echolink_leg(
        self,
        leg: int,
        ip: str,
        port: int | None = None,
        mode: str = "transceive",
        keying: str = "voice",
        dtmf: bool = False,
        *,
        station: int = 0,
    ) -> None:
        """Add EchoLink station `ip`'s leg `leg` (32768..65535: outside IAX2's 15-bit call
        numbers, so ids never collide) to the conference, like an IAX2 leg: its audio packets
        (12-byte header `c0 03 <seq16> 0*8`, four 33-byte GSM frames) from `ip` go through the
        leg's jitter buffer and concealment, resampled to the station rate; it keys like a
        linked node (`RxKeyed`, `ActivityChanged` with the leg id; `keying` as for `add_leg`);
        the conference's mix-minus for it goes to `ip`:`port` (our audio port by default, as
        the protocol fixes it) in the same packets, sequence from 0, only while there is audio
        for it plus an 80 ms hang. `station`: the hosted node whose conference it joins.
        ValueError for an id below 32768; `CommandFailed` for an id or a station that
        already has a leg."""
    def remove_echolink_leg(self, leg: int, *, station: int = 0) -> None:
        """Remove an EchoLink station's leg (its address is free for a new leg); ValueError
        for an id below 32768 (an IAX2 call's leg goes with `remove_leg`)."""
    def echolink_leg_stats(self, leg: int) -> dict[str, int] | None:
        """One EchoLink leg's counters as of the last publication (every half second and on
        every change of legs), None without the leg: packets_in, frames_in,
        packets_malformed, frames_bad (no GSM signature), seq_gaps, packets_out, frames_out.
        Its jitter statistics are `leg_jitter_stats(leg)`, as for an IAX2 leg."""
    def echolink_counters(self) -> dict[str, int]:
        """What the EchoLink ports saw and sent since the engine started: datagrams_in,
        bytes_in, audio_in, audio_unrouted (audio from an ip with no leg, dropped),
        audio_malformed, text_in, control_in, truncated, recv_errors, datagrams_out,
        bytes_out, audio_out, send_errors."""
    def stop(self) -> None: ...

# --- engine events ---
# What `Engine.drain_events()` returns: one frozen record per kind, all `EngineEvent`s. Each is
# built with its fields in order (as `__match_args__` lists them), compares equal to an event of
# the same class with equal fields, and is not hashable.

class EngineEvent:
    """The base of every engine event (never made itself)."""

@final
class FullVoiceNeeded(EngineEvent):
    """Send `payload` as a full VOICE frame on call `callno`, with the call's sequence numbers:
    the engine asks for it on the first frame of each talk spurt towards the leg (once per talk
    spurt per leg), and when the 16-bit timestamp of its mini frames wraps."""

    __match_args__ = ("callno", "format", "ts", "payload", "spurt_start")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls, callno: int, format: int, ts: int, payload: bytes, spurt_start: bool
    ) -> FullVoiceNeeded: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def callno(self) -> int:
        """Our call number of the leg."""
    @property
    def format(self) -> int:
        """The payload's format bit (the frame's subclass)."""
    @property
    def ts(self) -> int:
        """The frame's timestamp (ms of the call)."""
    @property
    def payload(self) -> bytes:
        """The encoded audio, in `format`."""
    @property
    def spurt_start(self) -> bool:
        """The first frame of a talk spurt (a legacy link sends RADIO_KEY before it)."""

@final
class SpurtEnded(EngineEvent):
    """The conference went quiet towards call `callno` after a talk spurt; sent once per talk
    spurt per leg (a radio link sends UNKEY)."""

    __match_args__ = ("callno", "ts")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, callno: int, ts: int) -> SpurtEnded: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def callno(self) -> int:
        """Our call number of the leg."""
    @property
    def ts(self) -> int:
        """The call's timestamp (ms) when it went quiet."""

@final
class ControlPlayed(EngineEvent):
    """A control event given to `Engine.push_control` reached its playout point in call
    `callno`'s received audio, in order with it."""

    __match_args__ = ("callno", "kind", "value", "ts", "payload")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls, callno: int, kind: str, value: int | None, ts: int, payload: bytes
    ) -> ControlPlayed: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def callno(self) -> int:
        """Our call number of the leg."""
    @property
    def kind(self) -> str:
        """The kind as `push_control` names it: "control", "dtmf", "text" or "cng"."""
    @property
    def value(self) -> int | None:
        """The CONTROL subclass for "control" (12 RADIO_KEY, 13 RADIO_UNKEY, 1 HANGUP, ...), the
        digit's character code for "dtmf", 0 for "text", 10 for "cng"; the engine always
        gives an int."""
    @property
    def ts(self) -> int:
        """The event's timestamp (ms of the call)."""
    @property
    def payload(self) -> bytes:
        """The text of a "text" event; empty for the others."""

@final
class MiniBeforeFull(EngineEvent):
    """A mini frame arrived on call `callno` before any full voice frame (the engine cannot
    know its format): answer with VNAK."""

    __match_args__ = ("callno",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, callno: int) -> MiniBeforeFull: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def callno(self) -> int:
        """Our call number of the leg."""

@final
class RxKeyed(EngineEvent):
    """Call `callno`'s receiver keyed or unkeyed, as its leg's keying ("always", "vox", "voice"
    or "control") defines it; sent on each edge."""

    __match_args__ = ("callno", "keyed")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, callno: int, keyed: bool) -> RxKeyed: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def callno(self) -> int:
        """Our call number of the leg."""
    @property
    def keyed(self) -> bool:
        """True: the peer started talking; False: it stopped."""

@final
class DtmfDecoded(EngineEvent):
    """An in-band DTMF digit in a leg's received audio (`add_leg(dtmf=True)`) or the local
    radio's (`set_local_dtmf`); sent once per press, about 40 ms after the tone began."""

    __match_args__ = ("callno", "digit")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, callno: int | None, digit: str) -> DtmfDecoded: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def callno(self) -> int | None:
        """Our call number of the leg, None for the local radio."""
    @property
    def digit(self) -> str:
        """One of 0-9, *, #, A-D."""

@final
class PlayStarted(EngineEvent):
    """Clip `id` (given to `Engine.play`) sent its first frame this tick."""

    __match_args__ = ("id",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, id: int) -> PlayStarted: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def id(self) -> int:
        """The caller's number of the clip."""

@final
class PlayFinished(EngineEvent):
    """Clip `id` sent its last frame, or was stopped (`Engine.stop_playing`) or refused; sent
    once per clip."""

    __match_args__ = ("id", "completed")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, id: int, completed: bool) -> PlayFinished: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def id(self) -> int:
        """The caller's number of the clip."""
    @property
    def completed(self) -> bool:
        """True: played to its end; False: stopped or refused."""

@final
class ActivityChanged(EngineEvent):
    """Somebody started talking in the conference (a call, a link, the local radio, the
    operator's key), or nobody has for the activity hang time; announcements never count."""

    __match_args__ = ("active",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, active: bool) -> ActivityChanged: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def active(self) -> bool:
        """True: talking started; False: quiet since the hang time."""

@final
class LocalTxChanged(EngineEvent):
    """The local radio started or stopped hearing audio from the conference (or its parrot's
    playback, or the station ID allowed to key it): what its transmitter has to send. The
    node keys the PTT on it, with the hang time."""

    __match_args__ = ("on",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, on: bool) -> LocalTxChanged: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def on(self) -> bool:
        """True: there is audio to transmit; False: no more."""

@final
class VoxChanged(EngineEvent):
    """VOX on the local receiver's audio (`open_device(vox=...)`) opened or closed, reported
    by the device thread as the audio is captured."""

    __match_args__ = ("open",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, open: bool) -> VoxChanged: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def open(self) -> bool:
        """True: the level rose above the threshold; False: it fell back for the release."""

@final
class CommandFailed(EngineEvent):
    """A command the engine could not apply (e.g. one naming a leg that is gone)."""

    __match_args__ = ("message",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, message: str) -> CommandFailed: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def message(self) -> str:
        """What failed, for the log."""

@final
class TunnelChanged(EngineEvent):
    """The WireGuard tunnel changed state (down, handshaking, up): read `Engine.tunnel()`."""

    __match_args__ = ()
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls) -> TunnelChanged: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class UsrpCarrierChanged(EngineEvent):
    """The USRP peer's transmission started (keyup-1 voice) or ended (its keyup-0, or silence
    for `rx_timeout_ms`)."""

    __match_args__ = ("on",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, on: bool) -> UsrpCarrierChanged: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def on(self) -> bool:
        """True: the peer is transmitting; False: it stopped."""

@final
class UsrpDtmfReceived(EngineEvent):
    """A DTMF packet from the USRP peer."""

    __match_args__ = ("digit",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, digit: str) -> UsrpDtmfReceived: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def digit(self) -> str:
        """The digit, one character."""

@final
class UsrpMetaReceived(EngineEvent):
    """The USRP peer's digital caller (a metadata packet, as a transmission starts)."""

    __match_args__ = ("meta",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, meta: dict[str, str | int]) -> UsrpMetaReceived: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def meta(self) -> dict[str, str | int]:
        """The caller: "callsign" (str), "source_id", "talkgroup", "repeater_id", "slot",
        "color_code" (ints). The event's own dict: copy it to keep or change it."""

@final
class UsrpPeerChanged(EngineEvent):
    """The USRP peer went quiet mid-transmission without its end packet (lost), or was heard
    again."""

    __match_args__ = ("heard",)
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, heard: bool) -> UsrpPeerChanged: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def heard(self) -> bool:
        """True: heard again; False: lost."""

@final
class StationEvent(EngineEvent):
    """`event` of a further station (a hosted node other than the first); the first station's
    events come unwrapped."""

    __match_args__ = ("station", "event")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, station: int, event: EngineEvent) -> StationEvent: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def station(self) -> int: ...
    @property
    def event(self) -> EngineEvent: ...

@final
class EchoLinkReceived(EngineEvent):
    """A datagram from an EchoLink station that is not audio, as it arrived."""

    __match_args__ = ("kind", "data", "source")
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, kind: str, data: bytes, source: _Addr) -> EchoLinkReceived: ...
    def __eq__(self, value: object, /) -> bool: ...
    @property
    def kind(self) -> str:
        """ "control" (the control port: RTCP SDES, BYE, RR) or "text" (the audio port:
        chat, station info)."""
    @property
    def data(self) -> bytes:
        """The datagram's bytes."""
    @property
    def source(self) -> _Addr:
        """(ip, port) it came from."""

# --- end engine events ---

# --- device ---
# The sound card edge: 48 kHz <-> station rate converters, gains, meters, local radio frames.

class DeviceError(ValueError):
    """A sound card rate the node cannot convert, a gain out of range, or an odd-sized block."""

@final
class Decimator:
    """Streaming 48 kHz -> 8 kHz (factor 6) or -> 16 kHz (factor 3) polyphase decimator."""

    def __new__(cls, factor: int) -> Decimator: ...
    def process(self, pcm: _Buffer) -> bytes:
        """48 kHz PCM in, one sample per `factor` out (a remainder waits for the next call)."""

    def reset(self) -> None:
        """Forget the filter history and any waiting samples."""

    @property
    def factor(self) -> int: ...
    @property
    def delay(self) -> float:
        """Group delay in output samples (19.92 at factor 6, 23.83 at factor 3)."""

@final
class Interpolator:
    """Streaming 8 kHz (factor 6) or 16 kHz (factor 3) -> 48 kHz polyphase interpolator."""

    def __new__(cls, factor: int) -> Interpolator: ...
    def process(self, pcm: _Buffer) -> bytes:
        """PCM at 48000 / factor Hz in, `factor` times as many 48 kHz samples out."""

    def reset(self) -> None:
        """Forget the filter history."""

    @property
    def factor(self) -> int: ...
    @property
    def delay(self) -> float:
        """Group delay in output (48 kHz) samples (119.5 at factor 6, 71.5 at factor 3)."""

@final
class UsrpPort:
    """A USRP radio attached to the engine's local radio member (from Engine.open_usrp)."""

    def set_keyed(self, keyed: bool) -> None:
        """Keyed: a keyup-1 voice packet every 20 ms; the release sends one keyup-0 packet."""
    def set_gains(
        self, rx_gain_db: float | None = None, tx_gain_db: float | None = None
    ) -> None: ...
    def stats(self) -> dict[str, Any]:
        """rx/tx levels and counters, carrier, keyed, buffered, heard_ago_ms, meta."""
    @property
    def local_addr(self) -> tuple[str, int]: ...
    @property
    def peer(self) -> tuple[str, int]: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Stop the thread (a keyed transmitter is released first, with its keyup-0)."""

@final
class DevicePort:
    """A sound card attached to the engine's local radio member (from Engine.open_device)."""

    def exchange(self, block: _Buffer) -> bytes:
        """One device block each way: captured int16 at the device rate in, the block to play
        (same length) out. Converts, applies the gains, meters, exchanges 20 ms frames."""

    def set_gains(self, rx_gain_db: float | None = None, tx_gain_db: float | None = None) -> None:
        """Change either gain live; out of range raises DeviceError and changes neither."""

    def stats(self) -> dict[str, dict[str, float | int]]:
        """{"rx": {...}, "tx": {...}}: gain_db, peak_dbfs, rms_dbfs, peak_hold_dbfs, clipped,
        frames, late, dropped."""

    @property
    def device_rate(self) -> int: ...
    @property
    def station_rate(self) -> int: ...
    @property
    def filter_delay_ms(self) -> float:
        """Delay the rate conversion adds in each direction (0.0 at the station rate)."""

    @property
    def rx_gain_db(self) -> float: ...
    @property
    def tx_gain_db(self) -> float: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Detach from the engine (idempotent); exchange() then raises EngineError."""

# --- end device ---

# --- mixer ---
# One mix-minus conference tick from Python: encoded frames in, encoded frames out.

class MixerError(ValueError):
    """A conference tick given the wrong number of frames or a frame of the wrong size."""

@final
class Conference:
    """`members` members sending 20 ms frames of `codec_format` (0x4 µ-law, 0x8 A-law, 0x40
    slin, 0x8000 slin16), mixed at the codec's rate; mix-minus or full mix."""

    def __new__(
        cls, members: int, codec_format: int = 0x4, mix_minus: bool = True
    ) -> Conference: ...
    def tick(self, frames: _Iterable[_Buffer | None]) -> list[bytes | None]:
        """One tick: member i's encoded frame or None (silent) in, what each member hears out
        (None for a member who hears nobody). Listeners hearing the same mix share one bytes."""
    @property
    def members(self) -> int: ...
    @property
    def codec_format(self) -> int: ...
    @property
    def rate(self) -> int: ...
    @property
    def frame_len(self) -> int:
        """Samples per 20 ms frame."""
    @property
    def frame_bytes(self) -> int:
        """Wire bytes per 20 ms frame."""
    @property
    def mix_minus(self) -> bool: ...
    @mix_minus.setter
    def mix_minus(self, value: bool) -> None: ...
    @property
    def talkers(self) -> int:
        """Members that talked in the last tick."""

# --- end mixer ---

# --- tones ---
# Tones, CW and DTMF rendered to PCM (native-endian int16 at `rate`), and the DTMF detector.

class ToneError(ValueError):
    """A tone, CW or DTMF parameter out of range, or a rate a tone kernel does not run at."""

def cw_pcm(rate: int, text: str, wpm: int, tone_hz: float, level_dbfs: float) -> bytes:
    """Morse of `text` at `wpm` (PARIS timing: a dot is 1200/wpm ms) as a `tone_hz` sine
    peaking at `level_dbfs`, 5 ms raised-cosine keying. Characters CW cannot send are skipped."""

def tone_pcm(rate: int, freq_hz: float, duration_ms: int, level_dbfs: float) -> bytes:
    """A tone of `duration_ms` (at half amplitude) peaking at `level_dbfs`, 5 ms ramps."""

def tone_sequence_pcm(rate: int, steps: list[tuple[float, float, int]], level_dbfs: float) -> bytes:
    """`(freq1_hz, freq2_hz, ms)` steps (0 Hz for none, both 0 a pause), each tone peaking at
    `level_dbfs`, click-free: a repeater's courtesy tone."""

def dtmf_pcm(
    rate: int,
    digits: str,
    level_dbfs: float,
    on_ms: int = 100,
    off_ms: int = 100,
    twist_db: float = 0.0,
) -> bytes:
    """DTMF `digits`, `on_ms` tones and `off_ms` gaps, each digit peaking at `level_dbfs`
    with its low tone `twist_db` above the high one."""

def resample_pcm(pcm: _Buffer, from_rate: int, to_rate: int, gain_db: float = 0.0) -> bytes:
    """A whole clip at `from_rate` converted to `to_rate` (rational polyphase, 160/441 for
    22050 -> 8000 Hz), scaled by `gain_db`. CodecError for rates it cannot convert."""

@final
class DtmfDetector:
    """The media path's streaming DTMF detector (docs/dtmf.md) at 8000 or 16000 Hz."""

    def __new__(cls, rate: int) -> DtmfDetector: ...
    def process(self, pcm: _Buffer) -> list[tuple[str, str]]:
        """Feed PCM of any length; the events completed, ("pressed" | "released", digit)."""
    @property
    def current(self) -> str | None:
        """The digit held down now."""
    @property
    def rate(self) -> int: ...
    def stats(self) -> dict[str, int]:
        """Windows, hits, presses, and windows rejected by each test."""
    def reset(self) -> None: ...

# --- end tones ---
