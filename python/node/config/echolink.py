"""`[echolink]`: the node as an EchoLink station (as ASL3's chan_echolink makes it one).

Declared as the other sections are: each key once, with what the template says about it. The
password is not a key: it comes from `NET_ECHOLINK_PASSWORD` or the peers file's `echolink=`
line (`node.secrets`), never from this file.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, ClassVar

from node.config.schema import key
from node.config.values import Context, Invalid, array, string

__all__ = ["EchoLinkConfig"]

#: An EchoLink callsign: letters and digits, optionally `-L` (a link) or `-R` (a repeater), or a
#: conference's `*NAME*`.
_CALLSIGN = re.compile(r"[A-Z0-9]{3,10}(-[LR])?|\*[A-Z0-9-]{1,10}\*")
_CALLSIGN_FORM = 'a callsign, e.g. "N0CALL-L" (-L for a link, -R for a repeater)'
_PATTERN = re.compile(r"[A-Za-z0-9*?\[\]!-]{1,20}")
_PATTERNS_FORM = 'an array of callsign patterns (* and ? wildcards), e.g. ["*-L", "W1*"]'
_SERVER = re.compile(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?")
_SERVERS_FORM = (
    'an array of "host" or "host:port" (TCP 5200 by default), e.g. ["servers.echolink.org"]'
)


def _callsign(raw: object, ctx: Context) -> str:
    text = string(raw, _CALLSIGN_FORM).strip().upper()
    if not _CALLSIGN.fullmatch(text):
        raise Invalid("is not a callsign", _CALLSIGN_FORM)
    return text


def _number(raw: object, ctx: Context) -> str:
    form = "the station's EchoLink node number, 1 to 6 digits, as a string"
    text = string(raw, form).strip()
    if not re.fullmatch(r"[0-9]{1,6}", text) or int(text) == 0:
        raise Invalid("is not an EchoLink node number", form)
    return text


def _bind(raw: object, ctx: Context) -> str:
    form = 'an IPv4 address (EchoLink is IPv4 only), e.g. "0.0.0.0" or "192.0.2.10"'
    text = string(raw, form).strip()
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        raise Invalid("is not an IPv4 address", form) from None
    return text


def _server(raw: object) -> str:
    text = string(raw, _SERVERS_FORM).strip()
    if not _SERVER.fullmatch(text) or (":" in text and not 0 < int(text.rsplit(":", 1)[1]) < 65536):
        raise Invalid("is not a host or host:port", _SERVERS_FORM)
    return text


def _servers(raw: object, ctx: Context) -> tuple[str, ...]:
    out = array(raw, _SERVERS_FORM, _server)
    if not out:
        raise Invalid("must name at least one directory server", _SERVERS_FORM)
    return out


def _pattern(raw: object) -> str:
    text = string(raw, _PATTERNS_FORM).strip()
    if not _PATTERN.fullmatch(text):
        raise Invalid("is not a callsign pattern", _PATTERNS_FORM)
    return text.upper()


def _patterns(raw: object, ctx: Context) -> tuple[str, ...]:
    return array(raw, _PATTERNS_FORM, _pattern)


def _text(limit: int, *, lines: bool = False) -> Callable[[object, Context], str]:
    form = f"printable text of at most {limit} characters"
    if lines:
        form += r", lines separated by \n"

    def parse(raw: object, ctx: Context) -> str:
        text = string(raw, form)
        parts = text.split("\n") if lines else [text]
        if len(text) > limit or not all(part.isprintable() for part in parts):
            raise Invalid("is too long or holds control characters", form)
        return text

    return parse


@dataclass(frozen=True, slots=True, kw_only=True)
class EchoLinkConfig:
    """`[echolink]`: the node is an EchoLink station; its stations are links `3<number>`."""

    NOTE: ClassVar[str] = (
        "The node as an EchoLink station (ASL3's chan_echolink): EchoLink users and links "
        "join the conference as links numbered 3 + their EchoLink number on six digits "
        "(*33123456 connects to EchoLink 123456). The directory password comes from "
        "NET_ECHOLINK_PASSWORD or an echolink=<password> line of [secrets] peers_file, never "
        "from this file. Example values:"
    )

    callsign: Annotated[
        str,
        key(
            "The station's callsign as the directory knows it: -L for a link, -R for a repeater.",
            parse=_callsign,
            example="N0CALL-L",
        ),
    ]
    node_number: Annotated[
        str,
        key(
            "The station's EchoLink node number (as a string).",
            parse=_number,
            example="123456",
        ),
    ]
    bind: Annotated[
        str,
        key(
            "The IPv4 address of UDP 5198 (audio, text) and 5199 (control); the directory login "
            "is made from it too, since the directory lists a station at the address its login "
            "came from. The ports are fixed by the protocol.",
            parse=_bind,
        ),
    ] = "0.0.0.0"
    directory: Annotated[
        tuple[str, ...],
        key(
            "Directory servers, host or host:port (TCP 5200 by default), tried in turn.",
            parse=_servers,
        ),
    ] = ("servers.echolink.org",)
    location: Annotated[
        str,
        key("Shown in the directory beside the callsign (at most 27 characters).", parse=_text(27)),
    ] = ""
    sysop: Annotated[
        str,
        key(
            "The operator's name: sent to stations in our SDES (at most 32 characters).",
            parse=_text(32),
        ),
    ] = ""
    max_stations: Annotated[
        int,
        key("The most EchoLink stations connected at once (1-100).", ge=1, le=100),
    ] = 10
    allow: Annotated[
        tuple[str, ...],
        key(
            "Callsign patterns a station must match to connect (shell wildcards, any case).",
            parse=_patterns,
        ),
    ] = ("*",)
    deny: Annotated[
        tuple[str, ...],
        key(
            'Callsign patterns refused even when allowed (a deny wins), e.g. ["*-R"].',
            parse=_patterns,
        ),
    ] = ()
    welcome: Annotated[
        str,
        key(
            "The text a station is sent when it connects (lines separated by \\n); empty: none.",
            ext=True,
            parse=_text(400, lines=True),
        ),
    ] = ""
