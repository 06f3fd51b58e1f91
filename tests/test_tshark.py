"""Wireshark's IAX2 dissector as an independent judge of the frames we build and parse.

A scripted call between node A (127.0.0.1:4569) and node B (127.0.0.2:4569) is built with the
core, written to a pcap and decoded by `tshark -T fields`; every field checked must read as we
meant it, and tshark must find nothing malformed. The reference captures are also decoded by
tshark and compared with our parse, packet by packet.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from node._core import (
    FullFrame,
    MiniFrame,
    TrunkFrame,
    VideoFrame,
    encode_codec_prefs,
    parse,
)
from node.iax2.constants import IE, ControlSubclass, Format, FrameType, IaxSubclass
from tests.conftest import require_tool
from tests.pcap import ipv4_udp_packet, udp_datagrams, write_pcap
from tests.test_golden_pcaps import PCAPS, is_iax

A = ("127.0.0.1", 4569)
B = ("127.0.0.2", 4569)
A_CALL, B_CALL = 2, 3
MD5 = "821d4b0b8252f25b8324273857ef0fb4"
DATETIME = (2026, 11, 22, 3, 51, 46)
DATETIME_RAW = (26 << 25) | (11 << 21) | (22 << 16) | (3 << 11) | (51 << 5) | 23

#: A full frame's header as tshark names it, in wire order after the source call.
HEADER_FIELDS = [
    "iax2.src_call",
    "iax2.dst_call",
    "iax2.timestamp",
    "iax2.oseqno",
    "iax2.iseqno",
    "iax2.type",
    "iax2.iax.subclass",
]
#: The IEs a NEW names the call and its codecs with.
CALL_IE_FIELDS = [
    "iax2.iax.version",
    "iax2.iax.called_number",
    "iax2.iax.calling_number",
    "iax2.iax.username",
    "iax2.iax.format",
    "iax2.iax.format2",
    "iax2.iax.capability",
]
FIELDS = [
    "iax2.packet_type",
    *HEADER_FIELDS,
    "iax2.retransmission",
    "iax2.ie_id",
    "iax2.control.subclass",
    "iax2.voice.subclass",
    "iax2.voice.codec",
    "iax2.dtmf.subclass",
    "iax2.text.text",
    *CALL_IE_FIELDS,
    "iax2.iax.capability2",
    "iax2.iax.codecprefs",
    "iax2.iax.datetime.raw",
    "iax2.iax.datetime",
    "iax2.iax.auth.methods",
    "iax2.iax.auth.challenge",
    "iax2.iax.auth.md5",
    "iax2.iax.refresh",
    "iax2.iax.app_addr.sinfamily",
    "iax2.iax.app_addr.sinport",
    "iax2.iax.app_addr.sinaddr",
    "iax2.iax.cause",
    "iax2.iax.causecode",
    "iax2.iax.rrjitter",
    "iax2.iax.rrloss",
    "iax2.iax.rrpkts",
    "iax2.iax.rrdelay",
    "iax2.iax.rrdropped",
    "iax2.iax.rrooo",
    "iax2.trunk.cmddata.ts",
    "iax2.trunk.call.scallno",
    "iax2.trunk.call.ts",
    "iax2.trunk.call.len",
    "iax2.video.mini_marker",
    "_ws.col.Info",
]

Frame = FullFrame | MiniFrame | TrunkFrame | VideoFrame


def tshark(pcap: Path, *args: str) -> str:
    require_tool("tshark")
    result = subprocess.run(
        ["tshark", "-n", "-r", str(pcap), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout


def tshark_fields(pcap: Path, fields: list[str]) -> list[dict[str, str]]:
    args = ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in fields:
        args += ["-e", f]
    rows = tshark(pcap, *args).splitlines()
    return [dict(zip(fields, row.split("\t"), strict=True)) for row in rows]


def malformed(pcap: Path) -> str:
    return tshark(pcap, "-Y", "_ws.malformed || _ws.expert.severity >= error")


def write(
    tmp_path: Path, name: str, frames: list[tuple[Frame, tuple[str, int], tuple[str, int]]]
) -> Path:
    pcap = tmp_path / name
    packets = [ipv4_udp_packet(f.to_bytes(), src, dst, i) for i, (f, src, dst) in enumerate(frames)]
    write_pcap(pcap, packets)
    return pcap


def iax(
    subclass: int, *, a_to_b: bool = True, **kw: object
) -> tuple[Frame, tuple[str, int], tuple[str, int]]:
    scall, dcall = (A_CALL, B_CALL) if a_to_b else (B_CALL, A_CALL)
    kw.setdefault("dcall", dcall)
    frame = FullFrame(FrameType.IAX, subclass, scall=scall, **kw)  # type: ignore[arg-type]
    return (frame, A, B) if a_to_b else (frame, B, A)


def full(
    ftype: int, subclass: int, *, a_to_b: bool = True, **kw: object
) -> tuple[Frame, tuple[str, int], tuple[str, int]]:
    scall, dcall = (A_CALL, B_CALL) if a_to_b else (B_CALL, A_CALL)
    frame = FullFrame(ftype, subclass, scall=scall, dcall=dcall, **kw)  # type: ignore[arg-type]
    return (frame, A, B) if a_to_b else (frame, B, A)


def scripted_call() -> list[tuple[Frame, tuple[str, int], tuple[str, int]]]:
    """One call and one registration with every frame kind and the IEs a radio node uses."""
    new_ies = [
        (IE.VERSION, 2),
        (IE.CALLED_NUMBER, "1998"),
        (IE.CODEC_PREFS, encode_codec_prefs([Format.SLIN16, Format.ULAW, Format.ALAW])),
        (IE.CALLING_NUMBER, "1999"),
        (IE.USERNAME, "radio"),
        (IE.FORMAT, Format.ULAW),
        (IE.FORMAT2, (0, Format.ULAW)),
        (IE.CAPABILITY, Format.ULAW | Format.ALAW | Format.SLIN16),
        (IE.CAPABILITY2, (0, Format.ULAW | Format.ALAW | Format.SLIN16 | Format.OPUS)),
        (IE.DATETIME, DATETIME),
        (IE.CALLTOKEN, ""),
    ]
    rr = [
        (IE.RR_JITTER, 11),
        (IE.RR_LOSS, (3 << 24) | 7),
        (IE.RR_PKTS, 1500),
        (IE.RR_DELAY, 40),
        (IE.RR_DROPPED, 2),
        (IE.RR_OOO, 1),
    ]
    return [
        iax(IaxSubclass.NEW, dcall=0, ts=3, ies=new_ies),  # 1
        iax(IaxSubclass.ACK, a_to_b=False, ts=3, oseq=0, iseq=1),  # 2
        iax(
            IaxSubclass.AUTHREQ,
            a_to_b=False,
            ts=5,
            iseq=1,
            ies=[(IE.AUTHMETHODS, 2), (IE.CHALLENGE, "129315407"), (IE.USERNAME, "radio")],
        ),  # 3
        iax(IaxSubclass.AUTHREP, ts=9, oseq=1, iseq=1, ies=[(IE.MD5_RESULT, MD5)]),  # 4
        iax(
            IaxSubclass.ACCEPT,
            a_to_b=False,
            ts=12,
            oseq=1,
            iseq=2,
            ies=[(IE.FORMAT, Format.ULAW), (IE.FORMAT2, (0, Format.ULAW))],
        ),  # 5
        full(FrameType.CONTROL, ControlSubclass.ANSWER, a_to_b=False, ts=14, oseq=2, iseq=2),  # 6
        full(
            FrameType.CONTROL, ControlSubclass.STOP_SOUNDS, a_to_b=False, ts=17, oseq=3, iseq=2
        ),  # 7
        full(FrameType.CONTROL, ControlSubclass.RADIO_KEY, ts=40, oseq=2, iseq=4),  # 8
        full(FrameType.VOICE, Format.ULAW, ts=60, oseq=3, iseq=4, payload=b"\xff" * 160),  # 9
        (MiniFrame(A_CALL, 80, b"\x7f" * 160), A, B),  # 10
        full(FrameType.VOICE, Format.SLIN16, ts=100, oseq=4, iseq=4, payload=bytes(640)),  # 11
        full(
            FrameType.CONTROL, ControlSubclass.RADIO_UNKEY, ts=120, oseq=5, iseq=4, retrans=True
        ),  # 12
        full(FrameType.DTMF_BEGIN, ord("5"), ts=140, oseq=6, iseq=4),  # 13
        full(FrameType.DTMF, ord("5"), ts=240, oseq=7, iseq=4),  # 14
        full(FrameType.TEXT, 0, ts=260, oseq=8, iseq=4, payload=b"!NEWKEY!\x00"),  # 15
        iax(IaxSubclass.PING, ts=21000, oseq=9, iseq=4),  # 16
        iax(IaxSubclass.PONG, a_to_b=False, ts=21000, oseq=4, iseq=10, ies=rr),  # 17
        (
            TrunkFrame(30000, [(A_CALL, 300, b"\x01" * 160), (9, 320, b"\x02" * 160)], True),
            A,
            B,
        ),  # 18
        (VideoFrame(A_CALL, 0x1234, True, b"\x00\x01\x02"), A, B),  # 19
        iax(
            IaxSubclass.HANGUP,
            ts=40000,
            oseq=10,
            iseq=5,
            ies=[(IE.CAUSE, "Normal Clearing"), (IE.CAUSECODE, 16)],
        ),  # 20
        iax(
            IaxSubclass.REJECT,
            a_to_b=False,
            ts=8,
            ies=[(IE.CAUSE, "Unable to negotiate codec"), (IE.CAUSECODE, 58)],
        ),  # 21
        iax(IaxSubclass.REGREQ, dcall=0, ts=1, ies=[(IE.USERNAME, "1999"), (IE.REFRESH, 60)]),  # 22
        iax(
            IaxSubclass.REGACK,
            a_to_b=False,
            ts=2,
            iseq=1,
            ies=[
                (IE.USERNAME, "1999"),
                (IE.APPARENT_ADDR, ("127.0.0.1", 4569)),
                (IE.REFRESH, 60),
                (IE.DATETIME, DATETIME),
            ],
        ),  # 23
        # Asterisk's stateless CALLTOKEN reply comes from call number 1.
        (
            FullFrame(
                FrameType.IAX,
                IaxSubclass.CALLTOKEN,
                scall=1,
                dcall=A_CALL,
                ts=3,
                iseq=1,
                ies=[(IE.CALLTOKEN, "1795319506?3a6cb1a4b6")],
            ),
            B,
            A,
        ),  # 24
        iax(IaxSubclass.LAGRQ, ts=10000, oseq=11, iseq=5),  # 25
    ]


def ints(row: dict[str, str], field: str) -> list[int]:
    value = row[field]
    return [int(v, 0) for v in value.split("|")] if value else []


def one(row: dict[str, str], field: str) -> int:
    values = ints(row, field)
    assert len(values) == 1, (field, row[field])
    return values[0]


@pytest.fixture(scope="module")
def decoded(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[Frame], list[dict[str, str]], Path]:
    script = scripted_call()
    pcap = write(tmp_path_factory.mktemp("tshark"), "call.pcap", script)
    rows = tshark_fields(pcap, FIELDS)
    assert len(rows) == len(script)
    return [f for f, _, _ in script], rows, pcap


def test_nothing_is_malformed(decoded: tuple[list[Frame], list[dict[str, str]], Path]) -> None:
    _, _, pcap = decoded
    assert malformed(pcap) == ""


def test_headers_and_ie_lists_match(
    decoded: tuple[list[Frame], list[dict[str, str]], Path],
) -> None:
    frames, rows, _ = decoded
    for i, (frame, row) in enumerate(zip(frames, rows, strict=True)):
        where = f"packet {i + 1}: {frame!r}"
        if isinstance(frame, FullFrame):
            assert one(row, "iax2.packet_type") == 1, where
            header = [
                one(row, "iax2.src_call"),
                one(row, "iax2.dst_call"),
                one(row, "iax2.timestamp"),
                one(row, "iax2.oseqno"),
                one(row, "iax2.iseqno"),
                one(row, "iax2.type"),
                one(row, "iax2.retransmission"),
            ]
            expected = [frame.scall, frame.dcall, frame.ts, frame.oseq, frame.iseq, frame.ftype]
            assert header == [*expected, int(frame.retrans)], where
            assert ints(row, "iax2.ie_id") == [ie_id for ie_id, _ in frame.ies], where
            if frame.ftype == FrameType.IAX:
                assert one(row, "iax2.iax.subclass") == frame.subclass, where
            elif frame.ftype == FrameType.CONTROL:
                assert one(row, "iax2.control.subclass") == frame.csub, where
            elif frame.ftype == FrameType.VOICE:
                assert one(row, "iax2.voice.codec") == frame.subclass, where
        elif isinstance(frame, MiniFrame):
            assert one(row, "iax2.packet_type") == 0, where
            assert one(row, "iax2.src_call") == frame.scall, where
            assert one(row, "iax2.timestamp") == frame.ts16, where
            # The codec is the last full voice frame's; tshark shows it only in the summary.
            assert "mu-law" in row["_ws.col.Info"], where
        elif isinstance(frame, TrunkFrame):
            assert one(row, "iax2.packet_type") == 3, where
            assert ints(row, "iax2.trunk.call.scallno") == [c for c, _, _ in frame.entries]
            assert ints(row, "iax2.trunk.call.ts") == [t for _, t, _ in frame.entries]
            assert ints(row, "iax2.trunk.call.len") == [len(p) for _, _, p in frame.entries]
        else:
            assert isinstance(frame, VideoFrame)
            assert one(row, "iax2.packet_type") == 2, where
            assert one(row, "iax2.src_call") == frame.scall, where
            assert one(row, "iax2.timestamp") == frame.ts15, where
            assert one(row, "iax2.video.mini_marker") == 1, where


def test_ie_values_read_as_meant(decoded: tuple[list[Frame], list[dict[str, str]], Path]) -> None:
    _, rows, _ = decoded
    new, _, authreq, authrep, accept = rows[0:5]
    assert one(new, "iax2.iax.version") == 2
    assert new["iax2.iax.called_number"] == "1998"
    assert new["iax2.iax.calling_number"] == "1999"
    assert new["iax2.iax.username"] == "radio"
    assert new["iax2.iax.codecprefs"] == "PDE"
    assert one(new, "iax2.iax.format") == Format.ULAW
    assert one(new, "iax2.iax.format2") == Format.ULAW
    assert one(new, "iax2.iax.capability") == Format.ULAW | Format.ALAW | Format.SLIN16
    assert one(new, "iax2.iax.capability2") == (
        Format.ULAW | Format.ALAW | Format.SLIN16 | Format.OPUS
    )
    assert one(new, "iax2.iax.datetime.raw") == DATETIME_RAW
    assert "2026" in new["iax2.iax.datetime"] and "03:51:46" in new["iax2.iax.datetime"]
    assert one(authreq, "iax2.iax.auth.methods") == 2
    assert authreq["iax2.iax.auth.challenge"] == "129315407"
    assert authrep["iax2.iax.auth.md5"] == MD5
    assert one(accept, "iax2.iax.format") == Format.ULAW
    assert one(rows[6], "iax2.control.subclass") == 255, "stop sounds is csub 0xFF"
    assert one(rows[7], "iax2.control.subclass") == ControlSubclass.RADIO_KEY
    assert one(rows[8], "iax2.voice.codec") == Format.ULAW
    assert one(rows[10], "iax2.voice.codec") == Format.SLIN16
    assert one(rows[11], "iax2.control.subclass") == ControlSubclass.RADIO_UNKEY
    assert one(rows[11], "iax2.retransmission") == 1
    assert one(rows[12], "iax2.type") == FrameType.DTMF_BEGIN
    assert rows[12]["iax2.dtmf.subclass"] == rows[13]["iax2.dtmf.subclass"] == "5"
    assert rows[14]["iax2.text.text"].startswith("!NEWKEY!")
    pong = rows[16]
    assert [
        one(pong, f"iax2.iax.rr{name}")
        for name in ("jitter", "loss", "pkts", "delay", "dropped", "ooo")
    ] == [11, (3 << 24) | 7, 1500, 40, 2, 1]
    hangup, reject, regreq, regack = rows[19:23]
    assert hangup["iax2.iax.cause"] == "Normal Clearing"
    assert one(hangup, "iax2.iax.causecode") == 16
    assert reject["iax2.iax.cause"] == "Unable to negotiate codec"
    assert one(reject, "iax2.iax.causecode") == 58
    assert regreq["iax2.iax.username"] == "1999"
    assert one(regreq, "iax2.iax.refresh") == 60
    assert one(regack, "iax2.iax.app_addr.sinfamily") == 2, "family is little-endian"
    assert one(regack, "iax2.iax.app_addr.sinport") == 4569
    assert regack["iax2.iax.app_addr.sinaddr"] == "127.0.0.1"
    assert one(regack, "iax2.iax.datetime.raw") == DATETIME_RAW
    assert one(rows[23], "iax2.iax.subclass") == IaxSubclass.CALLTOKEN
    assert ints(rows[23], "iax2.ie_id") == [IE.CALLTOKEN]


def test_trunk_without_timestamps(tmp_path: Path) -> None:
    """tshark 4.0 reads this form's entries as we write them (call number, then length).

    Its dissector sizes each entry's subtree as 6 + length although this header is 4 bytes, so
    the last entry overruns the packet by 2 and stops the dissection there; every entry it
    decodes before that must be ours, in order.
    """
    entries = [(A_CALL, None, b"\x01" * 160), (9, None, b"\x02" * 33), (4, None, b"\x03" * 20)]
    trunk = TrunkFrame(5000, entries, False)
    pcap = write(tmp_path, "trunk.pcap", [(trunk, A, B)])
    fields = [
        "iax2.packet_type",
        "iax2.trunk.cmddata.ts",
        "iax2.trunk.call.scallno",
        "iax2.trunk.call.len",
    ]
    (row,) = tshark_fields(pcap, fields)
    assert one(row, "iax2.packet_type") == 3
    assert one(row, "iax2.trunk.cmddata.ts") == 0
    calls = ints(row, "iax2.trunk.call.scallno")
    lengths = ints(row, "iax2.trunk.call.len")
    assert len(calls) >= len(entries) - 1
    assert calls == [c for c, _, _ in entries][: len(calls)]
    assert lengths == [len(p) for _, _, p in entries][: len(lengths)]


@pytest.mark.parametrize("path", PCAPS, ids=lambda p: p.name)
def test_reference_captures_agree_with_tshark(path: Path) -> None:
    datagrams = [d for d in udp_datagrams(path) if is_iax(d)]
    assert datagrams, f"{path.name} holds no IAX2 datagrams"
    fields = ["iax2.packet_type", *HEADER_FIELDS, "iax2.ie_id"]
    rows = [r for r in tshark_fields(path, fields) if r["iax2.packet_type"]]
    assert len(rows) == len(datagrams)
    for d, row in zip(datagrams, rows, strict=True):
        frame = parse(d.payload)
        if isinstance(frame, FullFrame):
            got = [one(row, f) for f in fields[:7]]
            assert got == [
                1,
                frame.scall,
                frame.dcall,
                frame.ts,
                frame.oseq,
                frame.iseq,
                frame.ftype,
            ], frame
            if frame.ftype == FrameType.IAX:
                assert one(row, "iax2.iax.subclass") == frame.subclass, frame
            assert ints(row, "iax2.ie_id") == [ie_id for ie_id, _ in frame.ies], frame
        else:
            kind = {MiniFrame: 0, VideoFrame: 2, TrunkFrame: 3}[type(frame)]
            assert one(row, "iax2.packet_type") == kind
            if isinstance(frame, MiniFrame):
                assert one(row, "iax2.src_call") == frame.scall
    assert malformed(path) == ""
