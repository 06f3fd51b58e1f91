"""Property tests of the TEXT dialect parser: text shaped like the dialect, not only random.

`parse()` is documented never to raise, so any exception is a failure; every builder's text
parses back to what was built.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from node.links import text as t

#: The kinds' heads, so generated text reaches every branch instead of stopping at `Unknown`.
HEADS = ["L", "T", "M", "D", "K", "K?", "I", "G", "C", "R", "V", "J", "!IAXKEY!", "X", ""]
#: Separators app_rpt would never send but a peer might: other blanks, Unicode spaces.
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\x1c", ",", ""])
#: Field text that stresses the numeric fields: signs, Unicode digits, huge numbers.
FIELD = st.one_of(
    st.text(max_size=12),
    st.from_regex(r"-{0,3}[0-9]{1,25}", fullmatch=True),
    st.sampled_from(["0", "1", "-", "--5", "\u00b2", "\u0663", "\uff15", "1\u00b2", "#", "*", "a"]),
)


@st.composite
def dialect_like(draw: st.DrawFn) -> str:
    parts = [draw(st.sampled_from(HEADS))]
    for field in draw(st.lists(FIELD, max_size=6)):
        parts.append(draw(SEPARATORS))
        parts.append(field)
    return "".join(parts)


@settings(max_examples=700)
@given(st.one_of(dialect_like(), st.text(max_size=200)))
def test_parse_of_any_text_never_raises(text: str) -> None:
    item = t.parse(text)
    if isinstance(item, t.RemoteDtmf):
        assert item.seq >= 0 and item.digit in "0123456789*#ABCD"
    if isinstance(item, t.LinkList):
        # What we would forward parses back to the same list.
        assert t.parse(t.link_list(item.entries)) == item


#: A node number or callsign as it appears in a field: non-empty, no blanks, no comma.
FIELD_CHARS = st.characters(
    blacklist_categories=["Zs", "Zl", "Zp", "Cc", "Cs"], blacklist_characters=","
).filter(lambda c: not c.isspace())
TOKEN = st.text(FIELD_CHARS, min_size=1, max_size=12)
ENTRY = st.builds(t.LinkEntry, st.sampled_from(t.MODES), TOKEN)


@given(st.lists(ENTRY, max_size=8))
def test_built_link_lists_parse_back(entries: list[t.LinkEntry]) -> None:
    assert t.parse(t.link_list(entries)) == t.LinkList(tuple(entries))


@given(TOKEN, TOKEN, st.lists(st.text(FIELD_CHARS, max_size=8), max_size=4))
def test_built_telemetry_parses_back(source: str, token: str, args: list[str]) -> None:
    assert t.parse(t.telemetry(source, token, *args)) == t.Telemetry(source, token, tuple(args))


@given(TOKEN, TOKEN, st.integers(0, 10**12), st.sampled_from(sorted(t._DTMF)))
def test_built_remote_dtmf_parses_back(dest: str, source: str, seq: int, digit: str) -> None:
    got = t.parse(t.remote_dtmf(dest, source, seq, digit))
    assert got == t.RemoteDtmf(dest, source, seq, digit.upper())


@given(TOKEN, TOKEN, st.booleans(), st.integers(-(10**6), 10**9))
def test_built_key_replies_parse_back(dest: str, source: str, keyed: bool, seconds: int) -> None:
    got = t.parse(t.key_reply(dest, source, keyed, seconds))
    assert got == t.KeyReply(dest, source, keyed, max(0, seconds))


def test_the_fixed_texts_parse_to_their_kinds() -> None:
    assert t.parse(t.NEWKEY1) == t.NewKey1()
    assert t.parse(t.NEWKEY) == t.NewKey()
    assert t.parse(t.DISCONNECT) == t.Disconnect()


# --- findings, kept as regression tests ---------------------------------------------------------


def test_numeric_fields_take_ascii_digits_only() -> None:
    # Found by the property above: str.isdigit() admitted "²", and int() then raised.
    assert t.parse("D 0 0 \u00b2 0") == t.Malformed("D")
    assert t.parse("D 0 0 \u0663 0") == t.Malformed("D")
    assert t.parse("K 0 0 1 \u00b2") == t.Malformed("K")
    # lstrip("-") let "--5" through to int().
    assert t.parse("K 0 0 1 --5") == t.Malformed("K")
    assert t.parse("K 0 0 1 -5") == t.KeyReply("0", "0", True, -5)
    assert t.parse("D 2001 2000 7 3") == t.RemoteDtmf("2001", "2000", 7, "3")
