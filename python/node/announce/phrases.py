"""What each announcement says: a sentence for the TTS binary, and short CW for the keyer.

Node numbers and callsigns are spelled out for speech ("node 2 0 0 0", "W 1 A W"), as app_rpt's
`saynode` says digits one by one; CW sends them as written. Text from the network (a caller's
name) is reduced to letters, digits and spaces before it reaches the TTS binary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Phrase",
    "event_phrase",
    "last_keyed_phrase",
    "spell",
    "station_id",
    "status_phrase",
    "telemetry_phrase",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9 ]+")
#: What `T` telemetry tokens announce, and under which `[announce.events.*]` name.
_TELEMETRY_EVENTS = {
    "CONNECTED": "link_connected",
    "REMDISC": "link_disconnected",
    "CONNFAIL": "link_disconnected",
}


@dataclass(frozen=True, slots=True)
class Phrase:
    """One announcement in both forms."""

    #: For the TTS binary.
    speech: str
    #: For the CW keyer (letters, digits, `/` and spaces).
    cw: str


def spell(text: str) -> str:
    """Letters and digits one by one ("2000" -> "2 0 0 0"); `/` is said "stroke"."""
    words = []
    for ch in text.upper():
        if ch.isalnum():
            words.append(ch)
        elif ch == "/":
            words.append("stroke")
    return " ".join(words)


def _safe(text: str) -> str:
    return " ".join(_UNSAFE.sub(" ", text).split())[:32]


def _node(node: str) -> str:
    return f"node {spell(node)}"


def station_id(callsign: str) -> Phrase:
    return Phrase(spell(callsign), callsign.upper())


def event_phrase(name: str, *, peer: str = "", node: str = "", me: str = "") -> Phrase:
    """The announcement of `[announce.events.<name>]`. `peer` is a caller, `node` the far end of
    a link, `me` this node's number."""
    if name == "incoming_call":
        who = _safe(peer)
        spoken = spell(who) if who.isdigit() else who
        return Phrase(f"incoming call from {spoken}" if who else "incoming call", "CALL")
    if name == "answered":
        return Phrase("call connected", "ANS")
    if name == "hangup":
        return Phrase("call ended", "END")
    if name == "registered":
        return Phrase(f"{_node(me)} registered" if me else "registered", "REG")
    if name == "register_failed":
        return Phrase("registration failed", "REG FAIL")
    if name == "link_connected":
        return Phrase(f"{_node(node)} connected", f"{node} CON")
    if name == "link_disconnected":
        return Phrase(f"{_node(node)} disconnected", f"{node} DISC")
    raise ValueError(f"no announcement for event {name!r}")


def telemetry_phrase(token: str, args: Iterable[str], me: str | None) -> tuple[str, Phrase] | None:
    """The announcement of `T <source> <token>,<args>` from another node, as app_rpt plays it,
    with its event name; None for telemetry that is not announced, or that is about this node
    (its own link events announce those)."""
    event = _TELEMETRY_EVENTS.get(token)
    nodes = [a for a in args if a.isdigit()]
    if event is None or not nodes or (me is not None and me in nodes):
        return None
    if token == "CONNECTED" and len(nodes) >= 2:
        # app_rpt: saynode(b), "connected to", saynode(a) for CONNECTED,a,b.
        a, b = nodes[0], nodes[1]
        return event, Phrase(f"{_node(b)} connected to {_node(a)}", f"{b} CON {a}")
    if token == "CONNFAIL":
        n = nodes[0]
        return event, Phrase(f"{_node(n)} connection failed", f"{n} FAIL")
    return event, event_phrase(event, node=nodes[-1])


def status_phrase(entries: Iterable[str]) -> Phrase:
    """`*70`: the links, from the link list entries ("T2000" transceive, "R2001" monitor, "C2002"
    connecting)."""
    spoken, keyed = [], []
    modes = {"T": "", "R": " monitor", "C": " connecting"}
    for entry in entries:
        kind, node = entry[:1], entry[1:]
        if not node.isdigit():
            continue
        spoken.append(f"{_node(node)}{modes.get(kind, '')}")
        keyed.append(node)
    if not spoken:
        return Phrase("no links", "NO LINKS")
    return Phrase("linked to " + ", ".join(spoken), "LINKS " + " ".join(keyed))


def last_keyed_phrase(node: str | None) -> Phrase:
    """app_rpt's ilink 7: the last node that keyed us up."""
    if node is None:
        return Phrase("no node has keyed", "NONE")
    return Phrase(f"last keyed by {_node(node)}", f"LAST {node}")


def _clock_words(hour: int, minute: int) -> str:
    """ "9 41 AM", "12 oh 5 PM", "12 AM" (midnight), as a speaking clock says it."""
    h12 = hour % 12 or 12
    half = "AM" if hour < 12 else "PM"
    if minute == 0:
        return f"{h12} {half}"
    mins = f"oh {minute}" if minute < 10 else str(minute)
    return f"{h12} {mins} {half}"


def time_phrase(hour: int, minute: int) -> Phrase:
    """app_rpt's time of day (`status,2`/`12`): the greeting of the part of the day (morning
    to noon, afternoon to 18:00, evening after), then "the time is" and the 12-hour time."""
    if hour < 12:
        part = "morning"
    elif hour < 18:
        part = "afternoon"
    else:
        part = "evening"
    return Phrase(
        f"good {part}, the time is {_clock_words(hour, minute)}", f"{hour:02d}{minute:02d}"
    )


def version_phrase(version: str) -> Phrase:
    """app_rpt's `status,3`: "version" and the version number."""
    spoken = " point ".join(spell(part) for part in version.split(".")[:2] if part.isdigit())
    return Phrase(f"version {spoken or spell(version)}", f"VER {version}")


def last_user_phrase(user: str | None) -> Phrase:
    """app_rpt's `status,5`: who typed the last DTMF command (a node, a callsign), spelled."""
    if not user:
        return Phrase("no user", "NONE")
    words = _safe(user)
    return Phrase(spell(words) if words else "no user", words.upper() or "NONE")


def link_phrase(event: str, node: str, other: str | None = None, *, short: bool) -> Phrase:
    """A link telemetry announcement in the long form ("node 1 9 9 9 connected to node 2 0 0 0")
    or the short one ("1 9 9 9 connected"), `[rpt] link_telemetry`."""
    word = {"link_connected": "connected", "link_disconnected": "disconnected"}.get(event, event)
    if short:
        return Phrase(f"{spell(node)} {word}", f"{node} {'CON' if word == 'connected' else 'DISC'}")
    if other is not None:
        return Phrase(f"{_node(node)} {word} to {_node(other)}", f"{node} CON {other}")
    return event_phrase(event, node=node)
