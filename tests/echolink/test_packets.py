"""RTCP control and oNDATA text: built as echolib and chan_echolink build them, parsed strictly,
and nothing malformed raises anything but `PacketError`."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.echolink import packets as p

CALLS = st.from_regex(r"[A-Z0-9]{3,6}(-[LR])?", fullmatch=True)
NAMES = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


def test_sdes_is_the_compound_svxlink_takes() -> None:
    data = p.build_sdes("n0call-l", "Test node")
    # RR first (version 3, count 0, length 1, SSRC 0), then the SDES with version bits 3.
    assert data[:8] == bytes.fromhex("c0c9000100000000")
    assert data[8] >> 6 == 3 and data[9] == 202
    assert len(data) % 4 == 0
    words = struct.unpack_from("!H", data, 10)[0]
    assert 8 + (words + 1) * 4 == len(data)
    assert b"N0CALL-L       Test node" in data
    assert p.parse_control(data) == p.Sdes("N0CALL-L", "Test node")


def test_bye_and_its_reason() -> None:
    data = p.build_bye("UN-AUTHORIZED")
    assert data[:8] == bytes.fromhex("c0c9000100000000")
    assert data[9] == 203
    assert p.parse_control(data) == p.Bye("UN-AUTHORIZED")
    assert p.parse_control(p.build_bye("")) == p.Bye("")


def test_a_bare_receiver_report_carries_nothing() -> None:
    assert p.parse_control(bytes.fromhex("c0c9000100000000")) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc0\xc9\x00",
        bytes.fromhex("80c9000100000000"),  # RFC 3550 version 2: SvxLink drops it too
        bytes.fromhex("c0c9000500000000"),  # length past the datagram
        bytes.fromhex("c0c900010000000000"),  # a trailing byte
        bytes.fromhex("c1ca0001") + bytes(4),  # an SDES with no NAME
        bytes.fromhex("e1ca0001") + bytes(3) + b"\x09",  # padding longer than the packet
    ],
)
def test_malformed_control_is_a_packet_error(data: bytes) -> None:
    with pytest.raises(p.PacketError):
        p.parse_control(data)


def test_chat_and_info_text() -> None:
    chat = p.build_chat("n0call-l", "hello\nthere")
    assert chat == b"oNDATAN0CALL-L>hello there\r\n\x00"
    assert p.parse_text(chat) == p.Chat("N0CALL-L", "hello there")
    info = p.build_info(["Welcome", "Node 2000"])
    assert info.startswith(b"oNDATA\r")
    assert p.parse_text(info) == p.Info(("Welcome", "Node 2000"))
    with pytest.raises(p.PacketError):
        p.parse_text(b"hello")
    with pytest.raises(p.PacketError):
        p.parse_text(b"oNDATA>no call\r\n")
    with pytest.raises(p.PacketError):
        p.build_chat("N0CALL", "x" * 2000)


@given(CALLS, NAMES)
def test_sdes_round_trip(call: str, name: str) -> None:
    assert p.parse_control(p.build_sdes(call, name)) == p.Sdes(call, name.strip())


@given(CALLS, st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=200))
def test_chat_round_trip(call: str, message: str) -> None:
    assert p.parse_text(p.build_chat(call, message)) == p.Chat(call, message)


@settings(max_examples=400)
@given(st.binary(max_size=300))
def test_any_control_bytes_parse_or_raise_packet_error(data: bytes) -> None:
    try:
        out = p.parse_control(data)
    except p.PacketError:
        return
    assert out is None or isinstance(out, p.Sdes | p.Bye)


@settings(max_examples=400)
@given(st.binary(max_size=1200))
def test_any_text_bytes_parse_or_raise_packet_error(data: bytes) -> None:
    try:
        out = p.parse_text(b"oNDATA" + data)
    except p.PacketError:
        return
    assert isinstance(out, p.Chat | p.Info)


@settings(max_examples=300)
@given(CALLS, NAMES, st.integers(0, 60), st.binary(min_size=1, max_size=4))
def test_mutated_sdes_never_escapes_as_another_error(
    call: str, name: str, at: int, junk: bytes
) -> None:
    data = bytearray(p.build_sdes(call, name))
    at %= len(data)
    data[at : at + len(junk)] = junk
    with contextlib.suppress(p.PacketError):
        p.parse_control(bytes(data))
