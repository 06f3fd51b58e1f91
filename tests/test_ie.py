"""Information elements through the binding: typed access for every kind, golden bytes, and the
Python constants agreeing with the Rust tables."""

from __future__ import annotations

import ipaddress
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node._core import (
    FrameError,
    FullFrame,
    compress_subclass,
    decode_codec_prefs,
    encode_codec_prefs,
    parse,
)
from node.iax2.constants import IE, ControlSubclass, Format, FrameType, IaxSubclass

# The kind of every named IE, written from research/iax2.md §2 independently of rust/ie.rs.
STR = {1, 2, 3, 4, 5, 6, 7, 10, 13, 15, 16, 17, 22, 26, 28, 32, 33, 45, 52, 54}
U8 = {23, 38, 39, 42}
U16 = {11, 12, 14, 19, 20, 21, 24, 34, 40, 41, 43, 49}
U32 = {8, 9, 27, 35, 37, 46, 47, 48, 50, 51, 57}
VERSIONED = {55, 56}
ADDR = {18}
DATETIME = {31}
EMPTY = {25}
RAW = {29, 30, 36, 44, 53}


def kind_values(ie_id: int) -> st.SearchStrategy[object]:
    if ie_id in STR:
        return st.text(max_size=60).filter(lambda s: len(s.encode("utf-8", "surrogatepass")) <= 255)
    if ie_id in U8:
        return st.integers(0, 0xFF)
    if ie_id in U16:
        return st.integers(0, 0xFFFF)
    if ie_id in U32:
        return st.integers(0, 0xFFFF_FFFF)
    if ie_id in VERSIONED:
        return st.tuples(st.integers(0, 0xFF), st.integers(0, 2**64 - 1))
    if ie_id in ADDR:
        v4 = st.ip_addresses(v=4).map(str)
        v6 = st.ip_addresses(v=6).map(str)
        return st.tuples(st.one_of(v4, v6), st.integers(0, 0xFFFF))
    if ie_id in DATETIME:
        return st.tuples(
            st.integers(2000, 2127),
            st.integers(1, 12),
            st.integers(1, 31),
            st.integers(0, 23),
            st.integers(0, 59),
            st.integers(0, 29).map(lambda s: s * 2),
        )
    if ie_id in EMPTY:
        return st.just(True)
    return st.binary(max_size=255)


typed_ies = st.integers(0, 255).flatmap(lambda i: st.tuples(st.just(i), kind_values(i)))


def one_ie_frame(ie_id: int, value: Any) -> FullFrame:
    return FullFrame(FrameType.IAX, IaxSubclass.NEW, ies=[(ie_id, value)])


def _no_surrogates(ies: list[tuple[int, Any]]) -> bool:
    return all(
        not (isinstance(v, str) and any(0xD800 <= ord(c) < 0xE000 for c in v)) for _, v in ies
    )


@given(st.lists(typed_ies, max_size=8).filter(_no_surrogates))
@settings(max_examples=800, deadline=None)
def test_typed_ies_round_trip(ies: list[tuple[int, Any]]) -> None:
    f = FullFrame(FrameType.IAX, IaxSubclass.NEW, ies=ies)
    again = parse(f.to_bytes())
    assert again == f
    assert isinstance(again, FullFrame)
    for i, (ie_id, value) in enumerate(ies):
        assert again.ies[i][0] == ie_id
        if ie_id in ADDR:
            # Compare addresses, not spellings (e.g. of IPv4-mapped IPv6).
            got = [(ipaddress.ip_address(a[0]), a[1]) for a in again.ie_all(ie_id)]  # type: ignore[index]
            host, port = value
            assert (ipaddress.ip_address(host), port) in got
        else:
            assert value in again.ie_all(ie_id)
    first: dict[int, Any] = {}
    for ie_id, value in ies:
        first.setdefault(ie_id, value)
    for ie_id in first:
        assert again.ie(ie_id) == again.ie_all(ie_id)[0]
        assert again.has_ie(ie_id)


@given(st.integers(0, 255), st.binary(max_size=255))
@settings(max_examples=800, deadline=None)
def test_raw_bytes_are_accepted_for_any_ie(ie_id: int, data: bytes) -> None:
    f = one_ie_frame(ie_id, data)
    assert f.ies == [(ie_id, data)]
    assert parse(f.to_bytes()) == f
    value = f.ie(ie_id)
    if ie_id in STR:
        assert value == data.decode("utf-8", "replace")
    elif ie_id in RAW or ie_id > 57 or ie_id == 0:
        assert value == data
    elif ie_id in EMPTY:
        assert value is True


def test_every_kind_reads_typed() -> None:
    f = FullFrame(
        FrameType.IAX,
        IaxSubclass.NEW,
        ies=[
            (IE.CALLED_NUMBER, "1999"),
            (IE.CAUSECODE, 58),
            (IE.VERSION, 2),
            (IE.CAPABILITY, 0xFFFF),
            (IE.FORMAT2, (0, Format.SLIN16)),
            (IE.CAPABILITY2, Format.OPUS | Format.ULAW),  # a bare int means version 0
            (IE.APPARENT_ADDR, ("127.0.0.1", 4570)),
            (IE.DATETIME, (2026, 11, 22, 3, 51, 47)),
            (IE.AUTOANSWER, True),
            (IE.OSPTOKEN, b"\x01token"),
            (IE.VARIABLE, "a=1"),
            (IE.VARIABLE, "b=2"),
        ],
    )
    g = parse(f.to_bytes())
    assert isinstance(g, FullFrame)
    assert g.ie(IE.CALLED_NUMBER) == "1999"
    assert g.ie(IE.CAUSECODE) == 58
    assert g.ie(IE.VERSION) == 2
    assert g.ie(IE.CAPABILITY) == 0xFFFF
    assert g.ie(IE.FORMAT2) == (0, 0x8000)
    assert g.ie(IE.CAPABILITY2) == (0, (1 << 34) | 4)
    assert g.ie(IE.APPARENT_ADDR) == ("127.0.0.1", 4570)
    assert g.ie(IE.DATETIME) == (2026, 11, 22, 3, 51, 46), "2-second resolution"
    assert g.ie(IE.AUTOANSWER) is True
    assert g.ie(IE.OSPTOKEN) == b"\x01token"
    assert g.ie(IE.VARIABLE) == "a=1"
    assert g.ie_all(IE.VARIABLE) == ["a=1", "b=2"]
    assert g.ie_all(IE.USERNAME) == []
    assert g.ie(IE.USERNAME) is None


def test_golden_ie_bytes() -> None:
    f = one_ie_frame(IE.FORMAT2, (0, Format.SLIN16))
    assert f.to_bytes()[12:] == bytes.fromhex("3809000000000000008000")
    f = one_ie_frame(IE.APPARENT_ADDR, ("127.0.0.1", 4570))
    assert f.to_bytes()[12:] == bytes.fromhex("1210 0200 11da 7f000001 0000000000000000")
    f = one_ie_frame(IE.APPARENT_ADDR, ("::1", 4569))
    body = f.to_bytes()[14:]
    assert len(body) == 28 and body[:2] == b"\x0a\x00" and body[2:4] == b"\x11\xd9"
    assert body[8:24] == ipaddress.IPv6Address("::1").packed
    dt = one_ie_frame(IE.DATETIME, (2026, 11, 22, 3, 51, 46)).to_bytes()[14:]
    assert (
        struct.unpack(">I", dt)[0]
        == (26 << 25) | (11 << 21) | (22 << 16) | (3 << 11) | (51 << 5) | 23
    )
    assert one_ie_frame(IE.AUTOANSWER, True).to_bytes()[12:] == b"\x19\x00"


def test_wrong_sized_fixed_ies_read_as_none() -> None:
    for ie_id, good in [
        (IE.CAUSECODE, 1),
        (IE.REFRESH, 2),
        (IE.FORMAT, 4),
        (IE.DATETIME, 4),
        (IE.FORMAT2, 9),
    ]:
        for n in range(12):
            f = one_ie_frame(ie_id, bytes(n))
            assert (f.ie(ie_id) is not None) == (n == good), (ie_id, n)
            assert f.has_ie(ie_id)
            assert len(f.ie_all(ie_id)) == (n == good)
    # A big-endian family is not a Linux sockaddr image.
    bad = one_ie_frame(IE.APPARENT_ADDR, bytes.fromhex("0002 11da 7f000001 0000000000000000"))
    assert bad.ie(IE.APPARENT_ADDR) is None


def test_strings_decode_with_replacement() -> None:
    f = one_ie_frame(IE.CAUSE, b"caf\xe9")
    assert f.ie(IE.CAUSE) == "caf\ufffd"
    assert one_ie_frame(IE.CALLING_NAME, "Grüße").ies == [(4, "Grüße".encode())]


@pytest.mark.parametrize(
    ("ie_id", "value"),
    [
        (IE.FORMAT, "ulaw"),
        (IE.FORMAT, -1),
        (IE.FORMAT, 2**32),
        (IE.FORMAT, True),
        (IE.CAUSECODE, 256),
        (IE.VERSION, 1.0),
        (IE.CALLED_NUMBER, 1000),
        (IE.CALLED_NUMBER, "\ud800"),
        (IE.FORMAT2, (0,)),
        (IE.FORMAT2, (256, 4)),
        (IE.FORMAT2, (0, 2**64)),
        (IE.APPARENT_ADDR, ("localhost", 4569)),
        (IE.APPARENT_ADDR, ("127.0.0.1", 70000)),
        (IE.APPARENT_ADDR, "127.0.0.1:4569"),
        (IE.DATETIME, (1999, 1, 1, 0, 0, 0)),
        (IE.DATETIME, (2026, 13, 1, 0, 0, 0)),
        (IE.DATETIME, (2026, 1, 1, 24, 0, 0)),
        (IE.DATETIME, (2026, 1, 1)),
        (IE.AUTOANSWER, False),
        (IE.AUTOANSWER, "yes"),
        (IE.ENCKEY, "text"),
        (99, 5),
        (IE.CAUSE, b"x" * 256),
    ],
)
def test_bad_ie_values_raise_frame_error(ie_id: int, value: object) -> None:
    with pytest.raises(FrameError):
        one_ie_frame(ie_id, value)


def test_ie_id_arguments_are_checked() -> None:
    f = parse(FullFrame(FrameType.IAX, IaxSubclass.NEW).to_bytes())
    assert isinstance(f, FullFrame)
    for method in (f.ie, f.ie_all, f.has_ie):
        with pytest.raises(FrameError):
            method(256)
        with pytest.raises(FrameError):
            method("1")  # type: ignore[arg-type]


def test_codec_prefs_table() -> None:
    assert encode_codec_prefs([Format.ULAW, Format.ALAW]) == "DE"
    assert encode_codec_prefs([Format.SLIN16, Format.ULAW, Format.G722]) == "PDO"
    expected = {
        Format.G723: "B",
        Format.GSM: "C",
        Format.ULAW: "D",
        Format.ALAW: "E",
        Format.G726: "F",
        Format.ADPCM: "G",
        Format.SLIN: "H",
        Format.G729: "J",
        Format.G722: "O",
        Format.SLIN16: "P",
        Format.G719: "]",
        Format.OPUS: "f",
    }
    for fmt, char in expected.items():
        assert encode_codec_prefs([fmt]) == char
        assert decode_codec_prefs(char) == [fmt]
    assert decode_codec_prefs(b"PD?E") == [Format.SLIN16, Format.ULAW, Format.ALAW]
    for bad in ([Format.ULAW | Format.ALAW], [Format.CODEC2], [0], ["D"]):
        with pytest.raises(FrameError):
            encode_codec_prefs(bad)  # type: ignore[arg-type]


def test_python_constants_match_rust_names() -> None:
    """The repr is built from the Rust name tables; every Python enum member must agree."""
    for ie in IE:
        f = one_ie_frame(ie, b"")
        assert f"[{ie.name}" in repr(f), ie
    for sub in IaxSubclass:
        assert f"IAX {sub.name}," in repr(FullFrame(FrameType.IAX, sub)), sub
    for ctl in ControlSubclass:
        assert f"CONTROL {ctl.name}," in repr(FullFrame(FrameType.CONTROL, ctl)), ctl
    for ftype in FrameType:
        subclass = int(Format.H264) if ftype == FrameType.VIDEO else 0
        assert repr(FullFrame(ftype, subclass)).startswith(f"FullFrame({ftype.name} "), ftype
    for fmt in Format:
        assert f"VOICE {fmt.name}," in repr(FullFrame(FrameType.VOICE, fmt)), fmt
    assert compress_subclass(Format.SLIN16) == 0x8F
    assert len(IE) == 57 and max(IE) == 57
    assert len(IaxSubclass) == 40
