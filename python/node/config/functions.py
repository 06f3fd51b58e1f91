"""The operator's own node, in app_rpt's terms: `[functions]`, `[macro]`, `[schedule]` and the
`[rpt]` keys (telemetry, tail messages, the startup macro).

`[functions]`, `[macro]` and `[schedule]` have no fixed keys: their keys are DTMF codes and macro
numbers, as in rpt.conf, so each is read here by its own reader (`read_functions`,
`read_macros`, `read_schedule`) rather than declared key by key. Every fault is a `ConfigError`
naming the file and the dotted key; functions that load but do nothing on this node (phone-mode
PTT, the autopatch, a remote base) are kept in the table, logged as a warning naming the key,
and answer "not available here" when typed. docs/dtmf.md lists every function.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, NoReturn, Protocol

from node.config.schema import key
from node.config.values import Context, Invalid, array, string, toml_type

__all__ = [
    "DEFAULT_FUNCTIONS",
    "DIGITS",
    "DTMF_KEYS",
    "END_CHAR",
    "FUNCTION_CHAR",
    "Function",
    "FunctionsSection",
    "MacroSection",
    "RptConfig",
    "ScheduleEntry",
    "ScheduleSection",
    "could_run",
    "first_function",
    "macro_found",
    "macro_number_done",
    "macros_called",
    "parse_function",
    "read_functions",
    "read_macros",
    "read_schedule",
]

log = logging.getLogger("node.config")

#: What a function code or a macro may hold (the DTMF keys other than `*` and `#`).
DTMF_KEYS = "0123456789ABCD"
_CODE = re.compile(r"[0-9A-D]{1,16}")
_MACRO_DIGITS = re.compile(r"[0-9A-D*#]{1,256}")

#: app_rpt's `ilink` numbers this node carries out: (kind, a node follows, permanent).
ILINK: Mapping[int, tuple[str, bool, bool]] = {
    1: ("disconnect", True, False),
    2: ("monitor", True, False),
    3: ("connect", True, False),
    4: ("remote", True, False),
    5: ("status", False, False),
    6: ("disconnect_all", False, False),
    7: ("last_keyed", False, False),
    8: ("local_monitor", True, False),
    11: ("disconnect", True, True),
    12: ("monitor", True, True),
    13: ("connect", True, True),
    15: ("full_status", False, False),
    16: ("restore", False, False),
    18: ("local_monitor", True, True),
}
#: `ilink` numbers app_rpt has that mean nothing here (9 sends a text message to a
#: display, 17 an MDC-1200 burst, 200-215 pass digits to a remote base).
ILINK_UNAVAILABLE = frozenset({9, 10, 17, *range(200, 216)})
#: `status` numbers: what each says, and whether only the local radio hears it.
STATUS: Mapping[int, str] = {
    1: "identify",
    2: "time of day",
    3: "software version",
    5: "last user",
    11: "identify (local)",
    12: "time of day (local)",
    13: "link status (local)",
    14: "full link status (local)",
}
STATUS_UNAVAILABLE = frozenset({4, 99})  # GPS position: no GPS here.
#: `cop` numbers this node carries out.
COP: Mapping[int, str] = {
    7: "TX time-out enable",
    8: "TX time-out disable",
    11: "link commands enable",
    12: "link commands disable",
    15: "scheduler enable",
    16: "scheduler disable",
    24: "flush telemetry",
    33: "telemetry on",
    34: "telemetry off",
    35: "telemetry timed",
}
#: app_rpt's function names that load but do nothing here.
_UNAVAILABLE_NAMES = {
    "autopatchup": "the autopatch",
    "autopatchdn": "the autopatch",
    "remote": "remote base functions",
    "meter": "DAQ meters",
    "userout": "DAQ outputs",
    "cmd": "shell commands from DTMF",
    "auth": "TOTP logins",
    "playback": "sound-file playback by name (POST /play plays files)",
    "localplay": "sound-file playback by name (POST /play plays files)",
}
_ACCEPTED_FUNCTION = (
    "an app_rpt function string: ilink,N (1-8, 11-13, 15, 16, 18), status,N (1-3, 5, 11-14), "
    "macro (macro,N too: app_rpt ignores the N), cop,N (7, 8, 11, 12, 15, 16, 24, 33-35)"
)


class Function(NamedTuple):
    """One function table entry: the digits after `*` and what they do."""

    # `kind`: disconnect, monitor, connect, remote, local_monitor (a node follows; ilink
    # 11/12/13/18 link `permanent`ly); status, full_status, restore, disconnect_all,
    # last_keyed (ilink); announce (status,N); cop (cop,N); macro (a macro number follows:
    # app_rpt's function_macro ignores its parameter); unavailable. `arg`: the status or cop
    # number, or why an entry is unavailable. `spec`: the app_rpt function string ("ilink,3").
    code: str
    kind: str
    takes_node: bool = False
    permanent: bool = False
    arg: str | None = None
    spec: str = ""


#: Starts (or restarts) a sequence (app_rpt `funcchar`).
FUNCTION_CHAR = "*"
#: Ends a sequence (app_rpt `endchar`).
END_CHAR = "#"
#: What a DTMF digit can be (IAX2 DTMF frames carry these).
DIGITS = "0123456789ABCD"


def first_function(table: Sequence[Function], buffer: str) -> Function | None:
    """The entry the digits after `*` run: the first whose code begins them (app_rpt's
    `collect_function_digits`); a code that an earlier one begins never runs."""
    return next((f for f in table if buffer.startswith(f.code)), None)


def could_run(table: Sequence[Function], buffer: str) -> bool:
    """More digits may still make `buffer` an entry's code."""
    return any(f.code.startswith(buffer) for f in table)


def macro_found(number: str, macros: Mapping[str, str]) -> bool:
    """The digits after a `macro` code name a macro: `0` the startup macro, else a `[macro]`
    key as written (app_rpt's `function_macro` looks the digits up as they were typed)."""
    return number == "0" or number in macros


def macro_number_done(number: str, macros: Mapping[str, str], longest: int) -> bool:
    """A `macro` entry's number is complete: it names a macro (`0`: the startup macro), or it
    has as many digits as the longest macro number (then app_rpt says "macro not found")."""
    return macro_found(number, macros) or len(number) >= longest


def macros_called(table: Sequence[Function], macros: Mapping[str, str], digits: str) -> list[str]:
    """The macros a DTMF string runs when typed, in order: each `*` sequence runs the entry
    its digits reach first (as `links.commands.CommandMapper` reads them); only a `macro`
    entry runs a macro, the one the digits after its code name. A number that names no macro
    runs none."""
    longest = max((len(m) for m in macros), default=1)
    called: list[str] = []
    buffer: str | None = None
    for ch in digits.upper():
        if ch == FUNCTION_CHAR:
            buffer = ""
            continue
        if buffer is None or ch not in DIGITS:
            buffer = None if ch == END_CHAR else buffer
            continue
        buffer += ch
        fn = first_function(table, buffer)
        if fn is None:
            if not could_run(table, buffer):
                buffer = None
            continue
        if fn.kind != "macro":
            buffer = None  # another command: the rest of the sequence is its own
        else:
            number = buffer[len(fn.code) :]
            if number and (not number.isdigit() or macro_number_done(number, macros, longest)):
                if macro_found(number, macros):
                    called.append(number)
                buffer = None
    return called


def _unavailable(code: str, spec: str, why: str) -> Function:
    return Function(code, "unavailable", arg=why, spec=spec)


def parse_function(code: str, spec: str) -> Function:
    """`spec` (an rpt.conf value, "ilink,3") as the entry of `code`; `Invalid` when it is not
    an app_rpt function string. Functions that do not apply here come back "unavailable"."""
    text = spec.strip()
    name, _, param = text.partition(",")
    name, param = name.strip().lower(), param.strip()
    # app_rpt passes what follows the number on to the function (ilink,9's node and text,
    # cop,48's tones); the number alone chooses it.
    first = param.split(",")[0].strip()
    number = int(first) if first.isdigit() else None
    if name == "ilink":
        if number is not None and number in ILINK:
            kind, takes_node, permanent = ILINK[number]
            return Function(code, kind, takes_node, permanent, spec=text)
        if number in ILINK_UNAVAILABLE:
            return _unavailable(code, text, f"ilink {number}")
    elif name == "status":
        if number in STATUS:
            return Function(code, "announce", arg=str(number), spec=text)
        if number in STATUS_UNAVAILABLE:
            return _unavailable(code, text, f"status {number} (GPS)")
    elif name == "cop":
        if first.isdigit() and int(first) in COP:
            return Function(code, "cop", arg=first, spec=text)
        if first.isdigit() and 1 <= int(first) <= 65:
            return _unavailable(code, text, f"cop {int(first)}")
    elif name == "macro":
        # app_rpt's function_macro ignores the parameter (`5=macro,1` in HamVOIP's table,
        # `50=macro,4` in app_rpt__ultra's): the digits typed after the code name the macro.
        if not param or _CODE.fullmatch(param):
            return Function(code, "macro", spec=text)
    elif name in _UNAVAILABLE_NAMES:
        return _unavailable(code, text, _UNAVAILABLE_NAMES[name])
    else:
        raise Invalid("is not an app_rpt function name", _ACCEPTED_FUNCTION)
    raise Invalid(f"is not a {name} function this node knows", _ACCEPTED_FUNCTION)


#: ASL3's shipped rpt.conf function table, in its order, then this node's extensions that do
#: not collide with it (docs/dtmf.md): used when the file has no `[functions]`.
_SHIPPED = (
    ("1", "ilink,1"),
    ("2", "ilink,2"),
    ("3", "ilink,3"),
    ("4", "ilink,4"),
    ("70", "ilink,5"),
    ("99", "cop,6"),
    ("5", "macro"),
    ("721", "status,1"),
    ("722", "status,2"),
    ("723", "status,3"),
    ("724", "status,4"),
    ("725", "status,5"),
    ("711", "status,11"),
    ("712", "status,12"),
    ("713", "status,13"),
    ("714", "status,14"),
    # Extensions: full status, restore, local monitor, disconnect all.
    ("73", "ilink,15"),
    ("74", "ilink,16"),
    ("75", "ilink,8"),
    ("76", "ilink,6"),
)
DEFAULT_FUNCTIONS: tuple[Function, ...] = tuple(parse_function(c, s) for c, s in _SHIPPED)


class Fail(Protocol):
    def __call__(
        self, key: str, problem: str, accepted: Iterable[str] | str | None = None
    ) -> NoReturn: ...


def _table(raw: object, name: str, fail: Fail) -> dict[str, Any]:
    if not isinstance(raw, dict):
        fail(name, f"must be a table ([{name}]), got {toml_type(raw)}")
    return raw


def read_functions(raw: object, fail: Fail, where: Path | None) -> tuple[Function, ...]:
    """`[functions]`: `"<digits>" = "<app_rpt function>"`, in the file's order (which decides
    between a code and a longer one it begins, as in app_rpt)."""
    out: list[Function] = []
    unavailable: list[str] = []
    for code, spec in _table(raw, "functions", fail).items():
        dotted = f"functions.{code}"
        if not _CODE.fullmatch(code.upper()):
            fail(dotted, "is not a DTMF code", "1-16 of the keys 0-9 and A-D (the digits after *)")
        if type(spec) is not str:
            fail(dotted, f"must be a string, got {toml_type(spec)}", _ACCEPTED_FUNCTION)
        try:
            fn = parse_function(code.upper(), spec)
        except Invalid as exc:
            fail(dotted, exc.problem, exc.accepted)
        shadow = next((f.code for f in out if fn.code.startswith(f.code)), None)
        if shadow is not None:
            # app_rpt takes the first entry whose code begins the digits, in file order.
            log.warning(
                "%s: functions.%s can never run: functions.%s comes first and begins it",
                where,
                code,
                shadow,
            )
        if fn.kind == "unavailable":
            unavailable.append(f"{code} ({fn.spec})")
        out.append(fn)
    if unavailable:
        # One line for them all: a stock ASL 1.x table has some 55 of them.
        log.warning(
            "%s: %d functions are not available on this node; typing one answers so: %s",
            where,
            len(unavailable),
            ", ".join(unavailable),
        )
    return tuple(out)


def read_macros(raw: object, fail: Fail) -> Mapping[str, str]:
    """`[macro]`: `"<number>" = "<digits>"` (a DTMF string such as "*32000*32001")."""
    out: dict[str, str] = {}
    for number, digits in _table(raw, "macro", fail).items():
        dotted = f"macro.{number}"
        if not number.isdigit() or len(number) > 8:
            fail(dotted, "is not a macro number", '1-8 digits, e.g. [macro] 1 = "*32000"')
        if type(digits) is not str or not _MACRO_DIGITS.fullmatch(digits.replace(" ", "")):
            fail(dotted, "is not a DTMF string", "1-256 of 0-9, A-D, * and #, e.g. *32000*32001")
        out[number] = digits.replace(" ", "").upper()
    return out


@dataclass(frozen=True, slots=True)
class ScheduleEntry:
    """`[schedule]` `"<macro>" = "m h dom mon dow"`: each field the values it matches, None
    for `*`."""

    macro: str
    minute: frozenset[int] | None
    hour: frozenset[int] | None
    dom: frozenset[int] | None
    month: frozenset[int] | None
    dow: frozenset[int] | None
    text: str = ""


_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12))
_SCHEDULE_FORM = (
    '"m h dom mon dow" as cron: each field *, a number, or a comma list of numbers and a-b '
    'ranges (dow 0-6, Sunday 0 or 7); missing trailing fields are *, e.g. "00 07 * * 1-5"'
)


def _cron_field(text: str, lo: int, hi: int) -> frozenset[int] | None:
    if text == "*":
        return None
    values: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise Invalid("has a field that is not a number, a range or *", _SCHEDULE_FORM)
        a, b = int(first), int(last) if last else int(first)
        if not lo <= a <= b <= hi:
            raise Invalid(f"has a value outside {lo}-{hi}", _SCHEDULE_FORM)
        values.update(range(a, b + 1))
    return frozenset(values)


def parse_schedule(macro: str, text: str) -> ScheduleEntry:
    fields = text.split()
    if not 1 <= len(fields) <= 5:
        raise Invalid("must have one to five fields", _SCHEDULE_FORM)
    fields += ["*"] * (5 - len(fields))
    minute, hour, dom, month = (
        _cron_field(f, lo, hi) for f, (_, lo, hi) in zip(fields[:4], _FIELDS, strict=True)
    )
    dow = _cron_field(fields[4], 0, 7)
    if dow is not None:
        dow = frozenset(d % 7 for d in dow)
    return ScheduleEntry(macro, minute, hour, dom, month, dow, " ".join(fields))


def read_schedule(raw: object, fail: Fail) -> tuple[ScheduleEntry, ...]:
    """`[schedule]`: `"<macro>" = "m h dom mon dow"` (app_rpt's scheduler)."""
    out = []
    for macro, text in _table(raw, "schedule", fail).items():
        dotted = f"schedule.{macro}"
        if not macro.isdigit():
            fail(dotted, "is not a macro number", "the number of a [macro] entry")
        if type(text) is not str:
            fail(dotted, f"must be a string, got {toml_type(text)}", _SCHEDULE_FORM)
        try:
            out.append(parse_schedule(macro, text))
        except Invalid as exc:
            fail(dotted, exc.problem, exc.accepted)
    return tuple(out)


def _free_section(name: str, note: str) -> type:
    """The section type of a table whose keys are the operator's: it declares no keys (the
    loader reads the table with its own reader) and carries the template's note."""
    return dataclasses.make_dataclass(name, [], namespace={"NOTE": note}, frozen=True)


FunctionsSection = _free_section(
    "FunctionsSection",
    "The DTMF function table, as rpt.conf's [functions]: the digits after * = an app_rpt "
    "function string. Absent: ASL3's shipped table (1 2 3 4 70 99 5 721-725 711-714) plus "
    "73 full status, 74 restore, 75 local monitor, 76 disconnect all. Present: exactly what "
    "is written, in its order (the first code that begins the digits typed wins). "
    "docs/dtmf.md lists every function. E.g.\n"
    '  "1" = "ilink,1"\n'
    '  "3" = "ilink,3"\n'
    '  "5" = "macro"\n'
    '  "722" = "status,2"\n'
    '  "830" = "cop,34"',
)
MacroSection = _free_section(
    "MacroSection",
    "Macros, as rpt.conf's [macro]: a number = DTMF digits, run through the function table "
    'as if typed (the "macro" function runs them: *5<number> in the shipped table). A macro '
    "that runs itself, directly or through others, is refused. E.g.\n"
    '  "1" = "*32000*32001"',
)
ScheduleSection = _free_section(
    "ScheduleSection",
    'The scheduler, as rpt.conf\'s [schedule]: a macro number = "m h dom mon dow" (cron '
    "fields, missing trailing ones are *), in local time, checked once a minute; a minute "
    "missed while the host was suspended is not made up. E.g.\n"
    '  "2" = "00 00 * * *"',
)


LinkTelemetry = Literal["full", "short"]


def _tail_messages(raw: object, ctx: Context) -> tuple[str, ...]:
    form = "an array of texts to speak, or paths of .wav / .ul files"
    if type(raw) is not list or len(raw) > 32:
        raise Invalid("must be an array of at most 32 messages", form)
    return array(raw, form, lambda v: _message(v, form))


def _message(value: object, form: str) -> str:
    text = string(value)
    if not text.strip() or len(text) > 400:
        raise Invalid("must be 1-400 characters", form)
    return text


def _startup_macro(raw: object, ctx: Context) -> str:
    form = "a DTMF string of 0-9, A-D, * and # (1-256), or empty"
    text = string(raw, form).replace(" ", "").upper()
    if text and not _MACRO_DIGITS.fullmatch(text):
        raise Invalid("is not a DTMF string", form)
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class RptConfig:
    """`[rpt]`: the node-stanza keys of rpt.conf this node takes, under their app_rpt names."""

    telemdefault: Annotated[
        int,
        key(
            "Link telemetry (link connect and disconnect announcements): 0 off, 1 on, 2 timed "
            "(on for 2 minutes after a DTMF command, then off). cop,33 / 34 / 35 change it live.",
            ext=True,
            ge=0,
            le=2,
        ),
    ] = 1
    telemdynamic: Annotated[
        bool, key("Whether cop,33 / 34 / 35 may change the telemetry mode.", ext=True)
    ] = True
    link_telemetry: Annotated[
        LinkTelemetry,
        key(
            'How link telemetry is worded: "full" ("node 1 9 9 9 connected to node 2 0 0 0") or '
            '"short" ("1 9 9 9 connected").',
            ext=True,
        ),
    ] = "full"
    tailmessagetime: Annotated[
        int,
        key(
            "Milliseconds (0-200000000) between tail messages, played after a transmission's "
            "tail, never over a talker; 0 for none.",
            ext=True,
            ge=0,
            le=200000000,
        ),
    ] = 0
    tailsquashedtime: Annotated[
        int,
        key(
            "Milliseconds (0-200000000) before a tail message cut short by a talker is tried "
            "again; 0 means tailmessagetime.",
            ext=True,
            ge=0,
            le=200000000,
        ),
    ] = 0
    tailmessagelist: Annotated[
        tuple[str, ...],
        key(
            "The tail messages, played in turn: texts (spoken, CW without TTS) or paths of .wav "
            '/ .ul files, e.g. ["Welcome to the W1AW node"].',
            ext=True,
            parse=_tail_messages,
        ),
    ] = ()
    startup_macro: Annotated[
        str,
        key(
            "DTMF digits run once after start, as a macro (e.g. *32000); empty for none.",
            ext=True,
            parse=_startup_macro,
        ),
    ] = ""

    #: The template's note on the section.
    NOTE: ClassVar[str] = "EXTENSION. Keys of rpt.conf's node stanza, under their app_rpt names."
