"""The AMI wire format without sockets: request parsing, response framing, CLI words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.control.ami_protocol import (
    BANNER,
    MAX_HEADERS,
    MAX_LINE,
    Request,
    RequestParser,
    command_output,
    error,
    parse_cli_args,
    response,
)


def parse(data: bytes) -> list[Request]:
    return RequestParser().feed(data)


def test_banner_is_asterisk_20s() -> None:
    assert BANNER == b"Asterisk Call Manager/9.0.0\r\n"


def test_a_request_ends_at_a_blank_line_with_crlf_or_lf() -> None:
    (a, b) = parse(b"Action: Ping\r\nActionID: 1\r\n\r\nAction: Login\nUsername: x\n\n")
    assert a.lines == ("Action: Ping", "ActionID: 1") and a.problem is None
    assert b.action == "Login" and b.header("username") == "x"


def test_header_names_are_case_insensitive_values_lose_leading_blanks() -> None:
    (req,) = parse(b"ACTION: RptStatus\r\ncommand:\t  XStat \r\nNODE:2000\r\n\r\n")
    assert req.action == "RptStatus"
    assert req.header("Command") == "XStat "  # trailing blanks kept, as Asterisk keeps them
    assert req.header("node") == "2000"
    assert req.header("Missing") is None


def test_the_first_of_repeated_headers_wins_and_prefixes_do_not_match() -> None:
    (req,) = parse(b"Action: A\r\nAction: B\r\nActionIDs: no\r\nActionID: yes\r\n\r\n")
    assert req.action == "A"
    assert req.action_id == "yes"


def test_allmon3s_leading_blank_hides_its_action_id() -> None:
    (req,) = parse(b"ACTION: LOGIN\r\n ActionID: 5b1c\r\n\r\n")
    assert req.action_id == ""


def test_partial_input_waits_for_the_rest() -> None:
    parser = RequestParser()
    assert parser.feed(b"Action: Pi") == []
    assert parser.feed(b"ng\r") == []
    assert parser.feed(b"\n\r") == []
    (req,) = parser.feed(b"\n")
    assert req.lines == ("Action: Ping",)


def test_a_blank_line_alone_is_an_empty_request() -> None:
    (req,) = parse(b"\r\n")
    assert req.lines == () and req.action == ""


def test_a_line_over_the_cap_spoils_its_request_only() -> None:
    long = b"X-Junk: " + b"a" * MAX_LINE
    (bad, good) = parse(b"Action: Ping\r\nActionID: 9\r\n" + long + b"\r\n\r\nAction: Ping\r\n\r\n")
    assert bad.problem == "Failed to parse message: line too long"
    assert bad.action_id == "9"
    assert good.problem is None and good.action == "Ping"


def test_a_line_of_exactly_the_cap_is_fine() -> None:
    line = b"X: " + b"b" * (MAX_LINE - 3)
    (req,) = parse(line + b"\r\n\r\n")
    assert req.problem is None and len(req.lines[0]) == MAX_LINE
    (req,) = parse(line + b"c\r\n\r\n")
    assert req.problem is not None


def test_an_endless_line_is_dropped_as_it_arrives() -> None:
    parser = RequestParser()
    for _ in range(1000):
        assert parser.feed(b"z" * 4096) == []
    assert len(parser._partial) <= MAX_LINE + 1
    (req,) = parser.feed(b"\r\nActionID: q\r\n\r\n")
    assert req.problem == "Failed to parse message: line too long" and req.action_id == "q"


def test_too_many_lines_spoil_the_request() -> None:
    data = b"".join(b"H%d: v\r\n" % i for i in range(MAX_HEADERS + 5)) + b"\r\n"
    (req,) = parse(data)
    assert req.problem == "Too many lines in message or allocation failure"
    assert len(req.lines) == MAX_HEADERS


def test_bytes_round_trip_as_latin1() -> None:
    (req,) = parse(b"Action: Ping\r\nActionID: \xff\xfe\x01\r\n\r\n")
    assert response("Success", req.action_id, ["Ping: Pong"]) == (
        b"Response: Success\r\nActionID: \xff\xfe\x01\r\nPing: Pong\r\n\r\n"
    )


# --- responses ----------------------------------------------------------------------------------


def test_responses_echo_a_non_empty_action_id() -> None:
    assert (
        error("", "Permission denied") == b"Response: Error\r\nMessage: Permission denied\r\n\r\n"
    )
    assert error("a1", "X") == b"Response: Error\r\nActionID: a1\r\nMessage: X\r\n\r\n"


def test_command_output_lines() -> None:
    assert command_output(True, "", "System uptime: 5\nLast reload: 5\n") == (
        b"Response: Success\r\nMessage: Command output follows\r\n"
        b"Output: System uptime: 5\r\nOutput: Last reload: 5\r\n\r\n"
    )
    # One trailing line end is dropped; an empty text is one empty Output line; inner blank
    # lines become `Output: ` lines, never empty lines.
    assert command_output(False, "x", "") == (
        b"Response: Error\r\nActionID: x\r\nMessage: Command output follows\r\nOutput: \r\n\r\n"
    )
    assert command_output(True, "", "a\n\nb\n\n").count(b"\r\nOutput: \r\n") == 2


def test_no_value_can_break_the_framing() -> None:
    framed = response("Success", "id\r\n\r\nEvil: 1", ["Message: a\nb\r\n\r\nc"])
    assert framed.count(b"\r\n\r\n") == 1 and framed.endswith(b"\r\n\r\n")


# --- CLI words ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("rpt cmd 2000 ilink 3 2001", ["rpt", "cmd", "2000", "ilink", "3", "2001"]),
        ("  core\tshow   uptime  ", ["core", "show", "uptime"]),
        ('rpt fun 2000 "*3 2001"', ["rpt", "fun", "2000", "*3 2001"]),
        (r"a b\ c", ["a", "b c"]),
        ('x "" y', ["x", "", "y"]),
        ("", []),
    ],
)
def test_cli_words_split_as_asterisk_does(text: str, words: list[str]) -> None:
    assert parse_cli_args(text) == words


def test_cli_words_are_capped() -> None:
    assert len(parse_cli_args("w " * 500)) == 63


# --- fuzz ---------------------------------------------------------------------------------------


@settings(max_examples=400)
@given(st.lists(st.binary(max_size=3000), max_size=12))
def test_any_bytes_in_any_chunks_never_raise_and_stay_bounded(chunks: list[bytes]) -> None:
    parser = RequestParser()
    for chunk in chunks:
        for req in parser.feed(chunk):
            assert len(req.lines) <= MAX_HEADERS
            assert all(len(line) <= MAX_LINE for line in req.lines)
            assert isinstance(req.action, str)
            framed = error(req.action_id, "x")
            assert framed.count(b"\r\n\r\n") == 1
        assert len(parser._partial) <= MAX_LINE + 1
        assert len(parser._lines) <= MAX_HEADERS


header_lines = st.lists(
    st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,12}: [ -~]{0,40}", fullmatch=True),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200)
@given(header_lines, st.lists(st.integers(1, 50), max_size=20))
def test_chunking_never_changes_what_is_parsed(lines: list[str], cuts: list[int]) -> None:
    data = ("\r\n".join(lines) + "\r\n\r\n").encode()
    whole = RequestParser().feed(data)
    parser = RequestParser()
    pieces: list[Request] = []
    pos = 0
    for cut in cuts:
        pieces += parser.feed(data[pos : pos + cut])
        pos += cut
    pieces += parser.feed(data[pos:])
    assert pieces == whole == [Request(tuple(lines))]
