"""Tests for node.links.text: every link text kind, the captured ASL3 texts, and garbage."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node._core import FullFrame, parse
from node.iax2.constants import FrameType
from node.links import text as t
from tests.conftest import interop_dir
from tests.pcap import udp_datagrams

ASL3 = interop_dir() / "asl3"


def captured_texts() -> list[str]:
    """Every TEXT frame in the ASL3 captures, NUL removed, in capture order."""
    texts = []
    for pcap in sorted(ASL3.glob("*.pcap")):
        for d in udp_datagrams(pcap):
            f = parse(d.payload)
            if isinstance(f, FullFrame) and f.ftype == FrameType.TEXT:
                assert f.payload.endswith(b"\x00"), "app_rpt sends strlen+1 bytes"
                texts.append(f.payload[:-1].decode())
    return texts


def test_every_text_in_the_asl3_captures_parses_to_a_known_kind() -> None:
    texts = captured_texts()
    kinds = {type(t.parse(x)) for x in texts}
    assert kinds == {t.NewKey1, t.Telemetry, t.LinkList, t.Disconnect}
    assert all(not isinstance(t.parse(x), t.Unknown | t.Malformed) for x in texts)
    assert {x for x in texts if x.startswith("L")} == {"L ", "L T1998", "L T1997"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!NEWKEY1!", t.NewKey1()),
        ("!NEWKEY!", t.NewKey()),
        ("!!DISCONNECT!!", t.Disconnect()),
        ("!IAXKEY! 1 1 0 0", t.Ignored("!IAXKEY!")),
        ("L ", t.LinkList(())),
        ("L", t.LinkList(())),
        (
            "L T2000,R2001,C2002,TKC1FSZ-P",
            t.LinkList(
                (
                    t.LinkEntry("T", "2000"),
                    t.LinkEntry("R", "2001"),
                    t.LinkEntry("C", "2002"),
                    t.LinkEntry("T", "KC1FSZ-P"),
                )
            ),
        ),
        ("L T2000, R2001", t.LinkList((t.LinkEntry("T", "2000"), t.LinkEntry("R", "2001")))),
        ("L X2000", t.Malformed("L")),
        ("L T", t.Malformed("L")),
        ("T 1999 COMPLETE", t.Telemetry("1999", "COMPLETE")),
        ("T 1999 CONNECTED,1999,1998", t.Telemetry("1999", "CONNECTED", ("1999", "1998"))),
        ("T 1999 STATUS,1999,0,T2000", t.Telemetry("1999", "STATUS", ("1999", "0", "T2000"))),
        ("T 1999", t.Malformed("T")),
        ("T 1999 A B", t.Malformed("T")),
        ("M 1999 0 hello there", t.Message("1999", "0", "hello there")),
        ("M 1999 0", t.Malformed("M")),
        ("D 2000 1999 7 *", t.RemoteDtmf("2000", "1999", 7, "*")),
        ("D 2000 1999 7 a", t.RemoteDtmf("2000", "1999", 7, "A")),
        ("D 2000 1999 x 1", t.Malformed("D")),
        ("D 2000 1999 7 Z", t.Malformed("D")),
        ("K? * 1999 0 0", t.KeyQuery("*", "1999")),
        ("K 1999 2000 1 42", t.KeyReply("1999", "2000", True, 42)),
        ("K 1999 2000 2 42", t.Malformed("K")),
        ("I 2000 0123abcd", t.MdcId("2000", "0123abcd")),
        ("G 2000 42.1 -71.2 30", t.Gps("2000", "42.1", "-71.2", "30")),
        ("C 2000 1 100.0", t.CtcssGroup("2000", "1", "100.0")),
        ("R 123", t.Ignored("R")),
        ("V 2000 voter", t.Ignored("V")),
        ("J Remote Frequency", t.Ignored("J")),
        ("", t.Unknown()),
        ("hello", t.Unknown()),
        ("Tx 1999 COMPLETE", t.Unknown()),
        ("Z 1", t.Unknown()),
    ],
)
def test_parse(text: str, expected: t.LinkText) -> None:
    assert t.parse(text) == expected


def test_builders_spell_what_app_rpt_sends() -> None:
    assert t.link_list([]) == "L "
    assert t.link_list([t.LinkEntry("T", "1998"), t.LinkEntry("R", "1997")]) == "L T1998,R1997"
    assert t.telemetry("1999", "COMPLETE") == "T 1999 COMPLETE"
    assert t.telemetry("1999", "CONNECTED", "1999", "1998") == "T 1999 CONNECTED,1999,1998"
    assert t.key_reply("1999", "2000", True, -5) == "K 1999 2000 1 0"


@given(st.text(max_size=300))
def test_parse_never_raises_and_builders_round_trip(text: str) -> None:
    item = t.parse(text)
    if isinstance(item, t.LinkList):
        assert t.parse(t.link_list(item.entries)) == item
    if isinstance(item, t.Telemetry):
        assert t.parse(t.telemetry(item.source, item.token, *item.args)) == item
