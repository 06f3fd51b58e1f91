"""Property tests of the AMI request reader: arbitrary bytes, cut anywhere.

Complements the fuzz tests in test_ami_protocol.py with input shaped like AMI (line ends, blank
lines, lines at and over the cap) and with the strongest property a stream reader has: how the
bytes are cut into reads never changes the requests.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from node.control.ami_protocol import (
    MAX_CLI_ARGS,
    Request,
    RequestParser,
    command_output,
    parse_cli_args,
    response,
)

SMALL_LINE = 16
SMALL_HEADERS = 4

#: Pieces that reach every branch with small caps: line ends, blank lines, over-long runs.
PIECES = st.one_of(
    st.binary(max_size=24),
    st.sampled_from([b"\r\n", b"\n", b"\r", b"\r\n\r\n", b"\n\n", b": ", b"Action: Ping"]),
    st.integers(SMALL_LINE - 1, SMALL_LINE + 2).map(lambda n: b"x" * n),
)
STREAMS = st.lists(PIECES, max_size=40).map(b"".join)


def read(data: bytes, cuts: list[int]) -> list[Request]:
    parser = RequestParser(max_line=SMALL_LINE, max_headers=SMALL_HEADERS)
    # Read boundaries; past the end they only give empty reads.
    ends = [0, *itertools.accumulate(cuts), max(len(data), sum(cuts))]
    out = [req for a, b in itertools.pairwise(ends) for req in parser.feed(data[a:b])]
    assert len(parser._partial) <= SMALL_LINE + 1
    assert len(parser._lines) <= SMALL_HEADERS
    return out


@settings(max_examples=600)
@given(STREAMS, st.lists(st.integers(0, 20), max_size=30))
def test_how_bytes_are_cut_never_changes_the_requests(data: bytes, cuts: list[int]) -> None:
    whole = read(data, [])
    assert read(data, cuts) == whole
    assert read(data, [1] * len(data)) == whole
    # One request per blank line, whatever else the stream holds.
    assert len(whole) <= data.count(b"\n")
    for req in whole:
        assert len(req.lines) <= SMALL_HEADERS
        for line in req.lines:
            assert 0 < len(line) <= SMALL_LINE and "\n" not in line


@given(st.lists(st.binary(min_size=1, max_size=SMALL_LINE), min_size=1, max_size=SMALL_HEADERS))
def test_lines_within_the_caps_come_back_byte_for_byte(lines: list[bytes]) -> None:
    lines = [line.replace(b"\n", b"_").rstrip(b"\r") or b"_" for line in lines]
    (req,) = read(b"\r\n".join(lines) + b"\r\n\r\n", [])
    assert req.problem is None
    assert [line.encode("latin-1") for line in req.lines] == lines


#: The status is always one of the node's own words; the ActionID, fields and CLI text may echo
#: anything a client sent.
STATUS = st.sampled_from(["Success", "Error", "Goodbye"])


@given(STATUS, st.text(), st.lists(st.text()), st.text())
def test_any_response_is_exactly_one_message(
    status: str, action_id: str, lines: list[str], cli: str
) -> None:
    for framed in (response(status, action_id, lines), command_output(True, action_id, cli)):
        assert framed.endswith(b"\r\n\r\n")
        # No line end inside a field: a client framing on a blank line sees one message.
        assert framed.count(b"\r\n\r\n") == 1 and b"\n\n" not in framed
        (req,) = RequestParser(max_line=10**6).feed(framed)
        assert req.lines[0].startswith("Response: ")


@given(st.text())
def test_cli_words_of_any_text(text: str) -> None:
    words = parse_cli_args(text)
    assert len(words) <= MAX_CLI_ARGS
    assert all(isinstance(w, str) for w in words)


# --- findings, kept as regression tests ---------------------------------------------------------


def test_an_empty_field_line_cannot_end_a_response_early() -> None:
    # Found by the property above: an empty line went out as a blank line inside the response.
    assert response("Success", "", ["", "Message: x", ""]) == (
        b"Response: Success\r\nMessage: x\r\n\r\n"
    )
