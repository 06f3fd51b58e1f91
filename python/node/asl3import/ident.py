"""The station ID and the courtesy tone of a radio node, as app_rpt plays them.

app_rpt identifies with `idrecording` every `idtime` ms (300000 when unset) and, while someone
is talking, with `idtalkover`; each is a telemetry entry: `|i<text>` Morse at `[morse]
idfrequency` (330 Hz) and `speed` (20 wpm), `|m<text>` Morse at `frequency` (800 Hz), or a
sound file (HamVOIP's default is the voice file /etc/asterisk/local/node-id). This node
identifies in CW or TTS from `[announce] callsign`, so a voice ID becomes the CW of
`idtalkover` when that is Morse; where no ID text can be found the report says so under "Check
before serving": a repeater must not lose its ID in the move. The ID keys the transmitter, as
app_rpt's telemetry does (`cw_keys_when_idle`).

The courtesy tone is `unlinkedct`, looked up in the telemetry stanza, else among app_rpt's
built-in tones; `nounkeyct` turns every unkey courtesy tone off. With `duplex = 0` app_rpt keys
the transmitter for neither (rpt's main loop adds the ID and courtesy tones to what keys it
only when duplex > 0).
"""

from __future__ import annotations

import re

from node.asl3import.conf import Entry, Section
from node.asl3import.plan import Asl3Files, Plan, integer, source, truthy
from node.asl3import.radio import BUILTIN_TONES, tone_steps

__all__ = ["courtesy_tone", "identify"]

_CALLSIGN = re.compile(r"[A-Z0-9/ ]{1,32}")
#: app_rpt's default ID interval (IDTIME) and its bounds on `idtime`, in ms.
_IDTIME, _IDTIME_MAX = 300000, 2400000
#: `[morse]` keys: (key, app_rpt's default, low, high), for `|i` and `|m` entries.
_MORSE_SPEED = ("speed", 20, 5, 35)
_MORSE_TONE = {"i": ("idfrequency", 330, 300, 3000), "m": ("frequency", 800, 300, 3000)}


def _morse(value: str) -> tuple[str, str] | None:
    """`|i<text>` / `|m<text>` as (i or m, TEXT); None for a sound file or a tone."""
    text = value.strip()
    if len(text) >= 2 and text[0] == "|" and text[1].lower() in "im":
        return text[1].lower(), text[2:].strip().upper()
    return None


def identify(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    """`[announce]` from `idrecording`, `idtalkover`, `idtime` and `[morse]` (a radio node)."""
    node = stanza.name
    rec, talk = stanza.get("idrecording"), stanza.get("idtalkover")
    if rec is None or not rec.value.strip():
        return  # app_rpt sends no ID either
    rsrc = source(rec, node)
    found = _morse(rec.value)
    used = rec
    if found is None:
        over = _morse(talk.value) if talk is not None else None
        if over is None or talk is None:
            plan.checks.append(
                f"{rsrc} = {rec.value.strip()}: the station ID is a sound file; this node "
                "identifies in CW or TTS from [announce] callsign, and nothing here names one: "
                'set [announce] enabled = true, callsign and id_interval_secs (id_mode = "tts" '
                "speaks it), or this radio transmits without an ID"
            )
            return
        found, used = over, talk
        plan.drop(
            rsrc,
            f"the voice ID file {rec.value.strip()}: the ID is the CW of idtalkover "
            f'({over[1]}) here; [announce] id_mode = "tts" speaks it instead',
        )
    kind, call = found
    usrc = source(used, node)
    if call == "NOTSET" or not _CALLSIGN.fullmatch(call):
        plan.checks.append(
            f"{usrc}: the ID text {call or '(empty)'} is not a callsign (app_rpt sent it as "
            "Morse as it stands): set [announce] enabled = true, callsign and id_interval_secs"
        )
        return
    plan.set("announce", "enabled", True, usrc)
    plan.set("announce", "id_mode", "cw", usrc, f"|{kind} is a Morse ID")
    plan.set("announce", "callsign", call, usrc)
    if _duplex(stanza) > 0:
        plan.set("announce", "cw_keys_when_idle", True, usrc, "app_rpt's ID keys the transmitter")
    else:
        # duplex = 0: app_rpt queues the ID but keys nothing for it (only while something
        # else keeps the transmitter up), which is this node's default.
        d = stanza.get("duplex")
        assert d is not None
        plan.set("announce", "cw_keys_when_idle", False, source(d, node), "the ID keys nothing")
    e = stanza.get("idtime")
    ms = integer(e, node) if e is not None else _IDTIME
    plan.set(
        "announce",
        "id_interval_secs",
        max(0, min(_IDTIME_MAX, ms)) // 1000,
        source(e, node) if e is not None else rsrc,
        "ms to s" if e is not None else "app_rpt's default idtime, 300000 ms",
    )
    if e is not None and ms > _IDTIME_MAX:
        plan.drop(source(e, node), f"{ms} ms: app_rpt takes at most {_IDTIME_MAX} (40 minutes)")
    _morse_keys(plan, files, stanza, kind, usrc)
    if talk is not None and used is rec and _morse(talk.value) != found:
        plan.drop(
            source(talk, node),
            f"a second ID text for talk-over ({talk.value.strip()}): the node sends {call} "
            "over a talker too",
        )
    if (b := stanza.get("beaconing")) is not None and truthy(b.value):
        plan.drop(source(b, node), "an ID while idle: the node identifies after activity only")


def _morse_keys(plan: Plan, files: Asl3Files, stanza: Section, kind: str, usrc: str) -> None:
    mname = stanza.value("morse", "morse") or "morse"
    morse = files.rpt.section(mname)
    keys = ((_MORSE_SPEED, "cw_wpm", int), (_MORSE_TONE[kind], "cw_tone_hz", float))
    for (key, default, low, high), ours, kind_of in keys:
        e = morse.get(key) if morse is not None else None
        value = max(low, min(high, integer(e, mname))) if e is not None else default
        src = source(e, mname) if e is not None else f"{usrc} ([{mname}] {key}: app_rpt's default)"
        plan.set("announce", ours, kind_of(value), src)


def _duplex(stanza: Section) -> int:
    """app_rpt's `duplex` (2 when unset): 0 keys the transmitter for neither ID nor tones."""
    d = stanza.get("duplex")
    return integer(d, stanza.name) if d is not None else 2


def courtesy_tone(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    """`[radio] courtesy_tone` from `unlinkedct` (a radio node), or none with `nounkeyct` or
    `duplex = 0` (app_rpt keys no courtesy tone then)."""
    node = stanza.name
    off = stanza.get("nounkeyct")
    if off is not None and truthy(off.value):
        plan.set("radio", "courtesy_tone", [], source(off, node), "no courtesy tones")
        return
    if _duplex(stanza) == 0 and (d := stanza.get("duplex")) is not None:
        if stanza.get("unlinkedct") is not None:
            plan.set("radio", "courtesy_tone", [], source(d, node), "duplex = 0: no courtesy tones")
        return
    ct = stanza.get("unlinkedct")
    if ct is None or not ct.value.strip():
        return
    tel_name = stanza.value("telemetry", "telemetry") or "telemetry"
    tel = files.rpt.section(tel_name)
    entry: Entry | None = tel.get(ct.value) if tel else None
    src = source(ct, node)
    text = entry.value if entry is not None else BUILTIN_TONES.get(ct.value.strip().lower())
    if text is None:
        return  # app_rpt finds no such tone and plays none
    where = entry.where if entry is not None else "app_rpt's built-in tone"
    tone = tone_steps(text)
    if tone is None:
        plan.drop(src, f"courtesy tone {ct.value} is a sound file or Morse: only tones map")
        return
    steps, level = tone
    plan.set("radio", "courtesy_tone", steps, f"{src} = {ct.value} ({where})")
    plan.set("radio", "courtesy_tone_level_db", level, where, "the tone's amplitude")
