"""EchoLink's control and text datagrams: RTCP on UDP 5199 and `oNDATA` text on UDP 5198.

Built and parsed here, without I/O; the audio packets (0xC0 first byte on 5198) are the engine's
and never reach Python.

Control is an RTCP compound with the version bits set to 3, as echolib and chan_echolink send it
(`research/echolink.md`): a receiver report `c0 c9 00 01 <ssrc 0>`, then an SDES (`e1 ca`) whose
NAME item starts with the station's callsign, or a BYE (`e1 cb`) with a reason. SvxLink drops a
compound whose first byte is not 0xC0 (version 2, a bare SDES) as spurious, so we build exactly
that shape; we accept any order of packets whose version bits are 3.

Text on 5198 is `oNDATA` followed either by a chat line `<CALL>><message>\\r\\n` or, with a
`\\r` right after `oNDATA`, an information block of `\\r`-separated lines; a trailing NUL is
allowed. Every parser is bounded by the datagram it is handed and raises `PacketError` (a
`ValueError`) on anything malformed, for the caller to count and drop.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = [
    "MAX_TEXT",
    "Bye",
    "Chat",
    "Info",
    "PacketError",
    "Sdes",
    "build_bye",
    "build_chat",
    "build_info",
    "build_sdes",
    "parse_control",
    "parse_text",
]

#: RTCP packet types.
_RR = 201
_SDES = 202
_BYE = 203
#: SDES item types (RFC 3550 §6.5).
_CNAME, _NAME, _EMAIL, _PHONE, _LOC, _TOOL, _NOTE, _PRIV = 1, 2, 3, 4, 5, 6, 7, 8
#: echolib pads the callsign in NAME to this width before the operator's name.
_CALL_WIDTH = 15
#: The receiver report that opens every compound we send (version 3, no reports, SSRC 0).
_RR_HEAD = bytes((0xC0, _RR, 0x00, 0x01)) + bytes(4)
#: The most text we send or accept in one datagram (chan_echolink reads 1,024-byte text).
MAX_TEXT = 1024
_TEXT_MAGIC = b"oNDATA"


class PacketError(ValueError):
    """A control or text datagram that is not what EchoLink sends."""


@dataclass(frozen=True, slots=True)
class Sdes:
    """A station's SDES: it wants to talk (or keeps the QSO alive)."""

    #: The callsign: the first word of the NAME item, upper case.
    callsign: str
    #: The rest of NAME: the operator's name or the station's description.
    name: str


@dataclass(frozen=True, slots=True)
class Bye:
    """The station hung up; `reason` as it gave it (may be empty)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Chat:
    """A chat line typed at `callsign`."""

    callsign: str
    message: str


@dataclass(frozen=True, slots=True)
class Info:
    """An information block (a station's welcome text, its list of connected stations)."""

    lines: tuple[str, ...]


def _latin1(text: str, what: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise PacketError(f"{what} must be Latin-1 text") from None


def _item(kind: int, value: bytes) -> bytes:
    if len(value) > 255:
        raise PacketError("an SDES item holds at most 255 bytes")
    return bytes((kind, len(value))) + value


def _pad(body: bytes, first: int, kind: int) -> bytes:
    """One RTCP packet of `kind` (count 1, version 3) around `body`, padded to 32 bits with the
    padding bit and count as RFC 3550 says (echolib and chan_echolink both pad so)."""
    pad = -(len(body) + 4) % 4
    if pad:
        first |= 0x20
        body += bytes(pad - 1) + bytes((pad,))
    words = (len(body) + 4) // 4 - 1
    return struct.pack("!BBH", first, kind, words) + body


def build_sdes(callsign: str, name: str, *, note: str | None = None) -> bytes:
    """The compound that opens a QSO and keeps it alive: RR + SDES with CNAME `CALLSIGN`, NAME
    `<callsign padded to 15><name>`, EMAIL `CALLSIGN`, PHONE `08:30` as echolib sends it (SvxLink
    and the EchoLink clients read the callsign from NAME's first word), and `note` as a NOTE
    item (chan_echolink's `AllStar <node>`)."""
    call = callsign.strip().upper()
    if not call or " " in call:
        raise PacketError("a callsign is one word")
    items = [
        _item(_CNAME, b"CALLSIGN"),
        _item(_NAME, _latin1(call.ljust(_CALL_WIDTH) + name, "the name")[:255]),
        _item(_EMAIL, b"CALLSIGN"),
        _item(_PHONE, b"08:30"),
    ]
    if note:
        items.append(_item(_NOTE, _latin1(note, "the note")[:255]))
    body = bytes(4) + b"".join(items) + b"\x00"  # SSRC 0, items, END
    return _RR_HEAD + _pad(body, 0xC1, _SDES)


def build_bye(reason: str = "jan2002") -> bytes:
    """RR + BYE (SSRC 0) with `reason` ("jan2002" is echolib's; chan_echolink says "bye", or
    "UN-AUTHORIZED" to a refused station)."""
    text = _latin1(reason, "the reason")[:255]
    body = bytes(4) + (bytes((len(text),)) + text if text else b"")
    return _RR_HEAD + _pad(body, 0xC1, _BYE)


def _sdes_name(chunk: memoryview) -> bytes | None:
    """The NAME item of the first chunk of an SDES body (after its SSRC)."""
    pos, end = 0, len(chunk)
    name = None
    while pos < end:
        kind = chunk[pos]
        if kind == 0:
            return name
        if pos + 2 > end:
            raise PacketError("SDES item header cut short")
        length = chunk[pos + 1]
        start = pos + 2
        if start + length > end:
            raise PacketError("SDES item runs past its packet")
        if kind == _NAME and name is None:
            name = bytes(chunk[start : start + length])
        pos = start + length
    return name


def parse_control(data: bytes) -> Sdes | Bye | None:
    """Read a control datagram: the SDES or BYE it carries (a BYE wins over an SDES in the same
    compound), None for a well-formed compound with neither (a bare receiver report).
    `PacketError` for anything else."""
    view = memoryview(data)
    if len(view) < 4:
        raise PacketError("shorter than an RTCP header")
    pos = 0
    sdes: Sdes | None = None
    bye: Bye | None = None
    while pos < len(view):
        if len(view) - pos < 4:
            raise PacketError("trailing bytes after the last RTCP packet")
        first, kind, words = view[pos], view[pos + 1], struct.unpack_from("!H", view, pos + 2)[0]
        if first >> 6 != 3:
            raise PacketError(f"RTCP version {first >> 6} (EchoLink uses 3)")
        size = (words + 1) * 4
        if pos + size > len(view):
            raise PacketError("RTCP length runs past the datagram")
        body = view[pos + 4 : pos + size]
        if first & 0x20:
            pad = body[-1] if len(body) else 0
            if pad == 0 or pad > len(body):
                raise PacketError("bad RTCP padding")
            body = body[: len(body) - pad]
        count = first & 0x1F
        if kind == _SDES and count and sdes is None:
            if len(body) < 4:
                raise PacketError("SDES without its SSRC")
            sdes = _sdes(_sdes_name(body[4:]))
        elif kind == _BYE and bye is None:
            rest = body[4 * count :] if len(body) >= 4 * count else None
            if rest is None:
                raise PacketError("BYE shorter than its SSRC list")
            reason = b""
            if len(rest):
                length = rest[0]
                if 1 + length > len(rest):
                    raise PacketError("BYE reason runs past its packet")
                reason = bytes(rest[1 : 1 + length])
            bye = Bye(reason.decode("latin-1"))
        pos += size
    return bye if bye is not None else sdes


def _sdes(name: bytes | None) -> Sdes:
    if not name:
        raise PacketError("SDES without a NAME item")
    text = name.decode("latin-1").strip()
    call, _, rest = text.partition(" ")
    if not call:
        raise PacketError("SDES NAME without a callsign")
    return Sdes(call.upper(), rest.strip())


def build_chat(callsign: str, message: str) -> bytes:
    """A chat line to a station, as chan_echolink sends it: `oNDATA<CALL>><message>\\r\\n` and
    a NUL. Line breaks in `message` become spaces (one line per datagram)."""
    line = message.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    data = _TEXT_MAGIC + _latin1(f"{callsign.upper()}>{line}\r\n", "the message") + b"\x00"
    if len(data) > MAX_TEXT:
        raise PacketError(f"a text datagram holds at most {MAX_TEXT} bytes")
    return data


def build_info(lines: tuple[str, ...] | list[str]) -> bytes:
    """An information block (`oNDATA\\r<line>\\r...`), as chan_echolink's welcome text."""
    text = _latin1("".join(f"{line}\r" for line in lines), "the text")
    data = _TEXT_MAGIC + b"\r" + text + b"\x00"
    if len(data) > MAX_TEXT:
        raise PacketError(f"a text datagram holds at most {MAX_TEXT} bytes")
    return data


def parse_text(data: bytes) -> Chat | Info:
    """Read a text datagram from UDP 5198 (first byte not 0xC0). `PacketError` when it is not
    `oNDATA` text, is longer than `MAX_TEXT`, or a chat line names no callsign."""
    if len(data) > MAX_TEXT:
        raise PacketError(f"text longer than {MAX_TEXT} bytes")
    if not data.startswith(_TEXT_MAGIC):
        raise PacketError("not oNDATA text")
    text = data[len(_TEXT_MAGIC) :].split(b"\x00", 1)[0].decode("latin-1")
    if text.startswith("\r") or ">" not in text:
        return Info(tuple(line for line in text.split("\r") if line.strip()))
    call, _, message = text.partition(">")
    call = call.strip()
    if not call or " " in call or "\r" in call or "\n" in call:
        raise PacketError("chat line without a callsign")
    return Chat(call.upper(), message.rstrip("\r\n"))
