"""The TEXT frames AllStarLink nodes exchange over a link: parse every kind, build the ones we send.

app_rpt sends each as an IAX2 TEXT frame with a trailing NUL (which `iax2.call` strips) and
parses them in `handle_link_data()` with `sscanf` on space-separated fields; research/allstar.md
§1.4 has the table. `parse()` never raises: text that fits no kind comes back as `Unknown`, a
kind app_rpt itself has no parser for (`R`, `V`, `J`, `!IAXKEY!`) as `Ignored`, and a known kind
with broken fields as `Malformed`. We never invent a kind: everything we send is one of the
builders here, in app_rpt's exact spelling.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "DISCONNECT",
    "NEWKEY",
    "NEWKEY1",
    "CtcssGroup",
    "Disconnect",
    "Gps",
    "Ignored",
    "KeyQuery",
    "KeyReply",
    "LinkEntry",
    "LinkList",
    "LinkText",
    "Malformed",
    "MdcId",
    "Message",
    "NewKey",
    "NewKey1",
    "RemoteDtmf",
    "Telemetry",
    "Unknown",
    "link_list",
    "link_list_within",
    "parse",
    "telemetry",
]

#: The newkey handshake of current app_rpt: keying follows voice presence.
NEWKEY1 = "!NEWKEY1!"
#: The older handshake: RADIO_KEY/UNKEY refreshed every 2 s; echoed back.
NEWKEY = "!NEWKEY!"
#: app_rpt's DISCSTR: an intentional disconnect, never reconnected.
DISCONNECT = "!!DISCONNECT!!"

#: Link modes as `L` lists write them: transceive, monitor ("receive"), connecting.
MODES = "TRC"


@dataclass(frozen=True, slots=True)
class NewKey1:
    """`!NEWKEY1!`: the peer keys by voice presence."""


@dataclass(frozen=True, slots=True)
class NewKey:
    """`!NEWKEY!`: a legacy peer that wants redundant RADIO_KEY/UNKEY (echo it back)."""


@dataclass(frozen=True, slots=True)
class Disconnect:
    """`!!DISCONNECT!!`: the peer is hanging up on purpose; do not reconnect."""


@dataclass(frozen=True, slots=True)
class LinkEntry:
    """One node of an `L` list: `mode` is T (transceive), R (monitor) or C (connecting)."""

    mode: str
    node: str

    def __str__(self) -> str:
        return f"{self.mode}{self.node}"


@dataclass(frozen=True, slots=True)
class LinkList:
    """`L <m><node>,<m><node>,...`: the sender's links and everything behind them."""

    entries: tuple[LinkEntry, ...]

    def nodes(self) -> frozenset[str]:
        return frozenset(e.node for e in self.entries)


@dataclass(frozen=True, slots=True)
class Telemetry:
    """`T <source> <TOKEN>[,<arg>...]`: telemetry (CONNECTED, COMPLETE, REMDISC, ...)."""

    source: str
    token: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Message:
    """`M <from> <to> <text>`: a text message; `to` = "0" means everyone."""

    source: str
    dest: str
    text: str


@dataclass(frozen=True, slots=True)
class RemoteDtmf:
    """`D <dest> <source> <seq> <digit>`: one digit of remote command mode (`*4<node>`)."""

    dest: str
    source: str
    seq: int
    digit: str


@dataclass(frozen=True, slots=True)
class KeyQuery:
    """`K? <dest> <source> 0 0`: who is keyed? (`dest` "*" asks everyone)."""

    dest: str
    source: str


@dataclass(frozen=True, slots=True)
class KeyReply:
    """`K <asker> <source> <keyed 0/1> <seconds since last key>`."""

    dest: str
    source: str
    keyed: bool
    seconds: int


@dataclass(frozen=True, slots=True)
class MdcId:
    """`I <node> <mdc-data>`: an MDC-1200 ID heard on a node (flooded)."""

    node: str
    data: str


@dataclass(frozen=True, slots=True)
class Gps:
    """`G <node> <lat> <lon> <elev>`: a node's position (flooded)."""

    node: str
    lat: str
    lon: str
    elev: str


@dataclass(frozen=True, slots=True)
class CtcssGroup:
    """`C <node> <ctgroup> <tone>`: CTCSS group on RX key/unkey."""

    node: str
    group: str
    tone: str


@dataclass(frozen=True, slots=True)
class Ignored:
    """A kind app_rpt has no parser for either (voter `R`/`V`, remote base `J`, `!IAXKEY!`)."""

    kind: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """A known kind whose fields do not parse; `kind` is its first character(s)."""

    kind: str


@dataclass(frozen=True, slots=True)
class Unknown:
    """Text that is no kind of the dialect."""


LinkText: TypeAlias = (
    NewKey1
    | NewKey
    | Disconnect
    | LinkList
    | Telemetry
    | Message
    | RemoteDtmf
    | KeyQuery
    | KeyReply
    | MdcId
    | Gps
    | CtcssGroup
    | Ignored
    | Malformed
    | Unknown
)

_DTMF = frozenset("0123456789*#ABCDabcd")
#: app_rpt reads these fields with sscanf's %d: ASCII digits only. str.isdigit() also admits
#: "²" or "٣", which int() then refuses (or reads as another number).
_UNSIGNED = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")


def _fields(text: str, n: int) -> list[str] | None:
    """Exactly `n` whitespace-separated fields (the last one may hold spaces), else None."""
    parts = text.split(None, n - 1)
    return parts if len(parts) == n else None


def _entries(body: str) -> tuple[LinkEntry, ...] | None:
    out = []
    for raw in body.split(","):
        item = raw.strip()
        if not item:
            continue
        mode, node = item[0], item[1:]
        # Nodes are numbers, or callsigns of web-transceiver and phone users (TKC1FSZ-P).
        if mode not in MODES or not node or any(c.isspace() for c in node):
            return None
        out.append(LinkEntry(mode, node))
    return tuple(out)


def parse(text: str) -> LinkText:
    """Classify one received link text (NUL already removed). Never raises."""
    if text == NEWKEY1:
        return NewKey1()
    if text == NEWKEY:
        return NewKey()
    if text == DISCONNECT:
        return Disconnect()
    if text.startswith("!IAXKEY!"):
        return Ignored("!IAXKEY!")
    if not text:
        return Unknown()
    head = text[0]
    if head == "L" and (len(text) == 1 or text[1] == " "):
        entries = _entries(text[2:])
        return Malformed("L") if entries is None else LinkList(entries)
    if text.startswith("K?"):
        f = _fields(text, 5)
        return KeyQuery(f[1], f[2]) if f and f[0] == "K?" else Malformed("K?")
    if len(text) > 1 and text[1] != " ":
        return Unknown()
    if head == "T":
        f = _fields(text, 3)
        if f is None or " " in f[2]:
            return Malformed("T")
        token, *args = f[2].split(",")
        return Telemetry(f[1], token, tuple(args)) if token else Malformed("T")
    if head == "M":
        f = _fields(text, 4)
        return Message(f[1], f[2], f[3]) if f else Malformed("M")
    if head == "D":
        f = _fields(text, 5)
        if f is None or not _UNSIGNED.fullmatch(f[3]) or len(f[4]) != 1 or f[4] not in _DTMF:
            return Malformed("D")
        return RemoteDtmf(f[1], f[2], int(f[3]), f[4].upper())
    if head == "K":
        f = _fields(text, 5)
        if f is None or f[3] not in ("0", "1") or not _SIGNED.fullmatch(f[4]):
            return Malformed("K")
        return KeyReply(f[1], f[2], f[3] == "1", int(f[4]))
    if head == "I":
        f = _fields(text, 3)
        return MdcId(f[1], f[2]) if f else Malformed("I")
    if head == "G":
        f = _fields(text, 5)
        return Gps(f[1], f[2], f[3], f[4]) if f else Malformed("G")
    if head == "C":
        f = _fields(text, 4)
        return CtcssGroup(f[1], f[2], f[3]) if f else Malformed("C")
    if head in "RVJ":
        return Ignored(head)
    return Unknown()


# --- what we send ---------------------------------------------------------------------------


def link_list(entries: tuple[LinkEntry, ...] | list[LinkEntry]) -> str:
    """`L T2000,R2001`; with no entries app_rpt sends `L ` (and so do we)."""
    return "L " + ",".join(str(e) for e in entries)


def link_list_within(segments: Sequence[Sequence[str]], limit: int) -> tuple[str, int]:
    """An `L` text of at most `limit` bytes from `segments`: per link, its own entry (`T2000`)
    then the entries behind it. Whole if it fits; else every link's own entry and as many of
    the others as fit, in order, whole entries only. Returns the text and how many entries
    were left out.

    app_rpt neither splits nor compresses its lists (one TEXT frame, which replaces the
    receiver's whole list), so a list cut short at an entry boundary is the most a peer can
    take in; the cut keeps the adjacent links, which a peer needs to refuse loops."""
    entries = [e for seg in segments for e in seg]
    whole = "L " + ",".join(entries)
    if len(whole.encode()) <= limit:
        return whole, 0
    size = len("L ") + sum(len(seg[0].encode()) + 1 for seg in segments if seg)
    kept: list[str] = []
    for seg in segments:
        if not seg:
            continue
        kept.append(seg[0])
        for entry in seg[1:]:
            extra = len(entry.encode()) + 1
            if size + extra <= limit:
                size += extra
                kept.append(entry)
    return "L " + ",".join(kept), len(entries) - len(kept)


def telemetry(source: str, token: str, *args: str) -> str:
    """`T 1999 CONNECTED,1999,1998`: no space after the token, args joined by commas."""
    return f"T {source} {','.join((token, *args))}"


def remote_dtmf(dest: str, source: str, seq: int, digit: str) -> str:
    """`D 2001 2000 7 3`: one digit of remote command mode, from `source` to `dest`."""
    return f"D {dest} {source} {seq} {digit}"


def key_reply(dest: str, source: str, keyed: bool, seconds: int) -> str:
    return f"K {dest} {source} {int(keyed)} {max(0, seconds)}"


def kind_of(item: LinkText) -> str:
    """The kind of a parsed text, as `/stats` counts received texts."""
    if isinstance(item, Ignored | Malformed):
        return f"{item.kind} ({type(item).__name__.lower()})"
    return {
        NewKey1: "newkey1",
        NewKey: "newkey",
        Disconnect: "disconnect",
        LinkList: "L",
        Telemetry: "T",
        Message: "M",
        RemoteDtmf: "D",
        KeyQuery: "K?",
        KeyReply: "K",
        MdcId: "I",
        Gps: "G",
        CtcssGroup: "C",
    }.get(type(item), "unknown")
