"""The Asterisk Manager Interface wire format, as Asterisk 20 (ASL3) speaks it: no I/O.

research/allmon3-ami.md §1 is the source. A request is `Name: value` lines ended by `\\r\\n` (a
bare `\\n` too) and closed by a blank line. Header names match case-insensitively on the name plus
`:`, blanks after the colon are skipped, blanks before the name are not (so Allmon3's
` ActionID: x` carries no ActionID, exactly as with Asterisk). A line over `MAX_LINE` bytes spoils
its request, which is answered with an error instead of being run; so is a request of more than
`MAX_HEADERS` lines. Memory stays bounded whatever arrives.

A response is `Response: ...`, then `ActionID: <id>` when the request had a non-empty one, then
its fields, then a blank line: one write per response, and never an empty line inside one
(Allmon3 and Supermon both frame on `\\r\\n\\r\\n`).

Bytes are decoded as Latin-1, so anything a client sends (and gets echoed, such as its ActionID)
round-trips byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "AMI_VERSION",
    "BANNER",
    "MAX_HEADERS",
    "MAX_LINE",
    "Request",
    "RequestParser",
    "command_output",
    "error",
    "parse_cli_args",
    "response",
]

#: Asterisk 20's AMI_VERSION (what ASL3 announces); clients only check the banner's prefix.
AMI_VERSION = "9.0.0"
BANNER = f"Asterisk Call Manager/{AMI_VERSION}\r\n".encode()
#: Longest request line, in bytes without its line end (Asterisk's 1025-byte input buffer).
MAX_LINE = 1024
#: Most lines in one request (Asterisk's AST_MAX_MANHEADERS).
MAX_HEADERS = 128
#: Most words of a CLI command (Asterisk's AST_MAX_ARGS, less the terminating slot).
MAX_CLI_ARGS = 63

LINE_TOO_LONG = "Failed to parse message: line too long"
TOO_MANY_LINES = "Too many lines in message or allocation failure"


@dataclass(frozen=True, slots=True)
class Request:
    """One request: its lines verbatim, and why it cannot be run (None when it can)."""

    lines: tuple[str, ...] = ()
    problem: str | None = None

    def header(self, name: str) -> str | None:
        """The value of the first line named `name` (case-insensitive), blanks after the colon
        skipped; None when there is none (Asterisk's astman_get_header gives "" then)."""
        n = len(name)
        low = name.lower()
        for line in self.lines:
            if line[:n].lower() == low and line[n : n + 1] == ":":
                return line[n + 1 :].lstrip(" \t")
        return None

    @property
    def action(self) -> str:
        return self.header("Action") or ""

    @property
    def action_id(self) -> str:
        return self.header("ActionID") or ""


class RequestParser:
    """Bytes in, complete requests out (`feed`); keeps at most one line of `max_line` bytes."""

    def __init__(self, max_line: int = MAX_LINE, max_headers: int = MAX_HEADERS) -> None:
        self._max_line = max_line
        self._max_headers = max_headers
        self._partial = bytearray()
        #: Dropping the rest of an over-long line, up to its line end.
        self._skipping = False
        self._lines: list[str] = []
        self._problem: str | None = None

    def feed(self, data: bytes) -> list[Request]:
        """Every request `data` completes, in order."""
        out: list[Request] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            chunk = data[start:] if end < 0 else data[start:end]
            start = len(data) if end < 0 else end + 1
            if self._skipping:
                if end >= 0:
                    self._skipping = False
                continue
            if len(self._partial) + len(chunk) > self._max_line + 1:
                # +1: the line's `\r`, which is not part of it.
                self._problem = self._problem or LINE_TOO_LONG
                self._partial.clear()
                self._skipping = end < 0
                continue
            self._partial += chunk
            if end < 0:
                continue
            line = bytes(self._partial)
            self._partial.clear()
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self._max_line:
                self._problem = self._problem or LINE_TOO_LONG
                continue
            if not line:
                out.append(Request(tuple(self._lines), self._problem))
                self._lines = []
                self._problem = None
            elif len(self._lines) < self._max_headers:
                self._lines.append(line.decode("latin-1"))
            else:
                self._problem = self._problem or TOO_MANY_LINES
        return out


# --- responses ----------------------------------------------------------------------------------


def _clean(text: str) -> str:
    # A value can never end the response early or split it: no line ends inside a line.
    return text.replace("\r", " ").replace("\n", " ")


def response(status: str, action_id: str, lines: Iterable[str]) -> bytes:
    """`Response: <status>`, the ActionID if any, `lines` (each `Name: value`), blank line."""
    out = [f"Response: {status}"]
    if action_id:
        out.append(f"ActionID: {_clean(action_id)}")
    # An empty line would end the response early: dropped, like a line end inside a value.
    out.extend(clean for clean in map(_clean, lines) if clean)
    return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1", "replace")


def error(action_id: str, message: str) -> bytes:
    return response("Error", action_id, [f"Message: {message}"])


def command_output(ok: bool, action_id: str, text: str) -> bytes:
    """The answer to `Action: Command` (Asterisk 14+): one trailing line end of the CLI text
    dropped, every remaining line an `Output:` line, at least one."""
    if text.endswith("\n"):
        text = text[:-1]
    lines = ["Message: Command output follows", *(f"Output: {piece}" for piece in text.split("\n"))]
    return response("Success" if ok else "Error", action_id, lines)


# --- CLI words ----------------------------------------------------------------------------------


def parse_cli_args(text: str) -> list[str]:
    """Split a CLI command into words as Asterisk's parse_args does: blanks and tabs separate,
    double quotes group, a backslash takes the next character literally."""
    words: list[str] = []
    cur: list[str] = []
    in_word = quoted = escaped = False
    for ch in text.lstrip():
        if len(words) >= MAX_CLI_ARGS:
            break
        if ch == '"' and not escaped:
            quoted = not quoted
            if quoted and not in_word:
                in_word = True
        elif ch in " \t" and not (quoted or escaped):
            if in_word:
                words.append("".join(cur))
                cur = []
                in_word = False
        elif ch == "\\" and not escaped:
            escaped = True
        else:
            cur.append(ch)
            in_word = True
            escaped = False
    if in_word and len(words) < MAX_CLI_ARGS:
        words.append("".join(cur))
    return words
