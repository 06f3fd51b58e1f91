"""Type stubs for the native module `node._core` (hand-written; one section per Rust area)."""

from collections.abc import Iterable
from typing import TypeAlias, final

# Every section adds its public names here (stubtest compares this with the runtime list).
__all__ = [
    "EngineError",
    "FrameError",
    "FullFrame",
    "MiniFrame",
    "TrunkFrame",
    "VideoFrame",
    "__version__",
    "compress_subclass",
    "decode_codec_prefs",
    "encode_codec_prefs",
    "parse",
    "uncompress_subclass",
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
