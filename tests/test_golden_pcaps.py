"""Real IAX2 traffic (Asterisk, libiax2, AllStarLink captures in shared/interop) through the core.

Every IAX2 datagram must parse and re-serialise byte for byte. The ASL3 captures also come with
an independent byte-level decode (`*.decode.txt`); our reading of every full frame must agree
with it field by field.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from node._core import FullFrame, MiniFrame, TrunkFrame, VideoFrame, parse
from node.iax2.constants import IE, ControlSubclass, Format, FrameType, IaxSubclass
from tests.conftest import interop_dir
from tests.pcap import UdpDatagram, udp_datagrams

INTEROP = interop_dir()
PCAP_DIRS = [INTEROP / "pcaps", INTEROP / "asl3"]
PCAPS = sorted(p for d in PCAP_DIRS if d.is_dir() for p in d.glob("*.pcap"))
# Asterisk nodes in the captures listen on 4569 and up (ASL3 lab: 4569, 4570, 4573).
IAX_PORTS = range(4569, 4580)


def is_iax(d: UdpDatagram) -> bool:
    return d.src[1] in IAX_PORTS or d.dst[1] in IAX_PORTS


def test_reference_captures_are_present() -> None:
    assert all(d.is_dir() for d in PCAP_DIRS)
    # The team's asterisk-register.pcap holds no packets, so it is not copied here.
    assert len(PCAPS) >= 11


@pytest.mark.parametrize("path", PCAPS, ids=lambda p: p.name)
def test_every_datagram_parses_and_rebuilds_exactly(path: Path) -> None:
    datagrams = [d for d in udp_datagrams(path) if is_iax(d)]
    assert datagrams, "no IAX2 datagram found"
    kinds: Counter[str] = Counter()
    for d in datagrams:
        frame = parse(d.payload)
        assert frame.to_bytes() == d.payload
        kinds[type(frame).__name__] += 1
        if isinstance(frame, FullFrame) and frame.ftype == FrameType.IAX:
            # Every IE of a known fixed size has the size Asterisk expects.
            for ie_id, _ in frame.ies:
                assert frame.has_ie(ie_id)
            counts = Counter(ie_id for ie_id, _ in frame.ies)
            for ie_id, n in counts.items():
                assert len(frame.ie_all(ie_id)) == n, (IE(ie_id).name, frame)
    assert kinds["FullFrame"] > 0


def _frames(name: str) -> list[FullFrame | MiniFrame | TrunkFrame | VideoFrame]:
    path = INTEROP / "asl3" / name
    if not path.exists():
        pytest.skip(f"{path} missing")
    return [parse(d.payload) for d in udp_datagrams(path) if is_iax(d)]


def test_allstar_link_semantics() -> None:
    """The things a radio node relies on, read from a real ASL3 link-up with MD5 auth."""
    frames = [f for f in _frames("asl_3node_md5.pcap") if isinstance(f, FullFrame)]

    def find(ftype: int, subclass: int) -> list[FullFrame]:
        return [f for f in frames if f.ftype == ftype and f.subclass == subclass]

    new = find(FrameType.IAX, IaxSubclass.NEW)[0]
    assert new.ie(IE.VERSION) == 2
    assert new.ie(IE.CODEC_PREFS) == "DGC"
    assert new.ie(IE.FORMAT) == Format.ULAW
    assert new.ie(IE.FORMAT2) == (0, Format.ULAW)
    assert new.ie(IE.CAPABILITY2) == (0, Format.GSM | Format.ULAW | Format.ADPCM)
    assert new.ie(IE.CALLTOKEN) == ""
    token = find(FrameType.IAX, IaxSubclass.CALLTOKEN)[0]
    assert token.scall == 1
    assert "?" in token.ie(IE.CALLTOKEN)  # type: ignore[operator]
    assert "<redacted>" in repr(token)
    authreq = find(FrameType.IAX, IaxSubclass.AUTHREQ)[0]
    authrep = find(FrameType.IAX, IaxSubclass.AUTHREP)[0]
    assert authreq.ie(IE.AUTHMETHODS) == 2
    # README: md5("129315407" + "aslpeer-secret") = 821d4b0b...; we read both IEs intact.
    assert authreq.ie(IE.CHALLENGE) == "129315407"
    assert authrep.ie(IE.MD5_RESULT) == "821d4b0b8252f25b8324273857ef0fb4"
    assert "821d4b0b" not in repr(authrep)
    accept = find(FrameType.IAX, IaxSubclass.ACCEPT)[0]
    assert accept.ie(IE.FORMAT) == Format.ULAW
    stop = find(FrameType.CONTROL, ControlSubclass.STOP_SOUNDS)
    assert stop and all(f.csub == 0xFF for f in stop)
    assert find(FrameType.CONTROL, ControlSubclass.RADIO_UNKEY)
    voice = find(FrameType.VOICE, Format.ULAW)
    assert voice and all(f.csub == 0x04 and len(f.payload) == 160 for f in voice)
    texts = [f.payload for f in frames if f.ftype == FrameType.TEXT]
    assert b"!NEWKEY1!\x00" in texts
    assert all(t.endswith(b"\x00") for t in texts)
    pong = find(FrameType.IAX, IaxSubclass.PONG)[0]
    assert isinstance(pong.ie(IE.RR_PKTS), int)
    assert isinstance(pong.ie(IE.RR_DELAY), int)


def test_mini_frames_follow_a_full_voice_frame() -> None:
    frames = _frames("asl_2node_noauth.pcap")
    minis = [f for f in frames if isinstance(f, MiniFrame)]
    assert len(minis) > 100
    assert all(len(m.payload) == 160 for m in minis)
    voice_calls = {
        f.scall for f in frames if isinstance(f, FullFrame) and f.ftype == FrameType.VOICE
    }
    assert {m.scall for m in minis} <= voice_calls


# --- agreement with the captures' own decode ------------------------------------------------

HEADER = re.compile(
    r"^\s*(?P<n>\d+)\s+\S+s\s+\d+->\d+\s+scall=(?P<scall>\d+)\s+dcall=(?P<dcall>\d+)\s+"
    r"ts=(?P<ts>\d+)\s+o=(?P<o>\d+)\s+i=(?P<i>\d+)\s+(?P<retx>RETX\s+)?"
    r"(?P<type>[A-Z_]+)\s*(?P<rest>.*)$"
)
IE_LINE = re.compile(r"^ {10}(?P<name>[A-Z_0-9]+)=(?P<value>.*)$")


def _decoded_value(name: str, text: str) -> object:
    if text.startswith("'"):
        return ast.literal_eval(text)
    if name == "DATETIME":
        date, time = text.split()
        return tuple(int(x) for x in date.split("-")) + tuple(int(x) for x in time.split(":"))
    if text.startswith("v"):
        version, value = text.split()[:2]
        return (int(version[1:]), int(value, 0))
    return int(text.split()[0], 0)


def _decode_file(path: Path) -> list[tuple[dict[str, str], list[tuple[str, object]]]]:
    """(header fields, [(IE name, value)]) for every full frame the decode lists."""
    out: list[tuple[dict[str, str], list[tuple[str, object]]]] = []
    for line in path.read_text().splitlines():
        if m := HEADER.match(line):
            out.append((m.groupdict(), []))
        elif (m := IE_LINE.match(line)) and out:
            out[-1][1].append((m["name"], _decoded_value(m["name"], m["value"])))
    return out


DECODES = sorted((INTEROP / "asl3").glob("*.decode.txt")) if (INTEROP / "asl3").is_dir() else []


@pytest.mark.parametrize("decode", DECODES, ids=lambda p: p.name)
def test_full_frames_agree_with_reference_decode(decode: Path) -> None:
    pcap = decode.with_name(decode.name.replace(".decode.txt", ".pcap"))
    datagrams = udp_datagrams(pcap)
    entries = _decode_file(decode)
    assert entries
    for head, ies in entries:
        frame = parse(datagrams[int(head["n"]) - 1].payload)
        assert isinstance(frame, FullFrame), head
        got = (frame.scall, frame.dcall, frame.ts, frame.oseq, frame.iseq, frame.retrans)
        want = (
            int(head["scall"]),
            int(head["dcall"]),
            int(head["ts"]),
            int(head["o"]),
            int(head["i"]),
            bool(head["retx"]),
        )
        assert got == want, head
        assert FrameType(frame.ftype).name == head["type"], head
        rest = head["rest"]
        if frame.ftype == FrameType.IAX:
            assert IaxSubclass(frame.subclass).name == rest.split()[0], head
            assert [(IE(i).name, frame.ie_all(i)) for i, _ in frame.ies] == [
                (name, [v for n, v in ies if n == name]) for name, _ in ies
            ], head
        elif frame.ftype == FrameType.CONTROL:
            assert rest.split("(")[0] == ControlSubclass(frame.subclass).name, head
        elif frame.ftype == FrameType.VOICE:
            assert rest.split()[0] == str(Format(frame.subclass).name).lower(), head
            assert f"({len(frame.payload)} bytes payload)" in rest
        elif frame.ftype == FrameType.TEXT:
            assert rest == f"text={frame.payload!r}", head
        elif frame.ftype == FrameType.CNG:
            assert rest == f"level={frame.subclass}", head
