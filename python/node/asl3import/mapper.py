"""ASL3's configuration, parsed (`conf`), mapped to this node's keys: a `Plan` of sections and
keys, the nodes file, and the report's lines. Pure: the files come in parsed, nothing is read or
written here.

Secrets are never put in the plan or the report: a password found in the files is only named,
with the environment variable (or peers file) that must carry it here.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable

from node.asl3import.conf import Asl3ConfError, ConfFile, Entry, Section
from node.asl3import.iax import listener, register
from node.asl3import.plan import Asl3Files, Plan, Setting, integer, source, yes
from node.config.functions import DEFAULT_FUNCTIONS, Function, parse_function, parse_schedule
from node.config.values import Invalid

__all__ = ["Asl3Files", "Plan", "Setting", "map_node", "node_numbers"]


_TOT_RESET = "TX time-out reset rules: the node's time-out resets when the conference is quiet"
#: rpt.conf node-stanza keys that have no equivalent here, and why.
NO_EQUIVALENT = {
    "context": "the autopatch and phone mode (Asterisk's dialplan): no dialplan here",
    "callerid": "the autopatch's caller id: no autopatch here",
    "accountcode": "Asterisk call accounting: no dialplan here",
    "phone_functions": "phone mode's function table: no phone mode here",
    "dphone_functions": "phone mode's function table: no phone mode here",
    "autopatch": "the autopatch: no dialplan here",
    "erxgain": "EchoLink: not supported",
    "etxgain": "EchoLink: not supported",
    "eannmode": "EchoLink: not supported",
    "echolinkdefault": "EchoLink: not supported",
    "linkmongain": "the link-monitor gain: set levels with [audio] rx_gain_db / tx_gain_db",
    "althangtime": "a second hang time: the node has one ([radio] hang_time_ms)",
    "controlstates": "control states: the node has no cop,14 state switching",
    "events": "event management (rpt events): no equivalent",
    "wait_times": "telemetry wait times: the node times its own telemetry",
    "linktolink": "link-to-link half duplex: the node mixes links with mix-minus",
    "holdofftelem": "telemetry hold-off: the node's announcements wait for quiet on their own",
    "telemnomdb": "telemetry level: the node's announcement levels are its own",
    "telemduckdb": "telemetry ducking: no equivalent",
    "parrot": 'parrot mode per node: [bridge] mode = "parrot" is the node-wide equivalent',
    "parrottime": "parrot mode per node: see [parrot] playback_delay_ms",
    "time_out_reset_unkey_interval": _TOT_RESET,
    "time_out_reset_kerchunk_interval": _TOT_RESET,
    "remotect": "the remote-base courtesy tone: no remote base here",
    "linkunkeyct": "the link-unkey courtesy tone: the node's courtesy tone follows its own carrier",
    "remote": "a remote base: not supported",
    "voter": "the voter: not supported",
    "rxnotch": "a receive notch filter: no equivalent",
    "nounkeyct": "courtesy tones after a time-out: no equivalent",
    "lnkactenable": "link activity timer: no equivalent",
    "lnkacttime": "link activity timer: no equivalent",
    "lnkacttimerwarn": "link activity timer: no equivalent",
    "lnkactmacro": "link activity timer: no equivalent",
    "rptinactmacro": "repeater inactivity macro: no equivalent",
    "rptinacttime": "repeater inactivity macro: no equivalent",
    "nolocallinkct": "courtesy-tone selection: no equivalent",
    "guilinkcheck": "no equivalent",
    "archivedir": "recording all traffic: not supported",
    "iospeed": "no equivalent",
    "ioport": "parallel-port I/O: not supported",
    "extnodefile": "the extnodes file: the node list is imported into the nodes file",
    "extnodes": "the extnodes stanza: the node list is imported into the nodes file",
    "txchannel": "a separate transmit channel: the node has one radio",
    "dtmfkey": "DTMF keying: not supported",
    "apstyle": "the autopatch: no dialplan here",
    "beaconing": "beaconing: the periodic ID is [announce]",
    "locallinknodes": "local link nodes: no equivalent",
}
#: Keys handled below, so they are not reported as without equivalent.
HANDLED = frozenset(
    {
        "rxchannel", "duplex", "functions", "link_functions", "macro", "scheduler", "telemetry",
        "morse", "idrecording", "idtime", "politeid", "telemdefault", "telemdynamic",
        "hangtime", "totime", "unlinkedct", "startup_macro", "statpost_url", "tailmessagetime",
        "tailsquashedtime", "tailmessagelist", "nodes",
    }
)  # fmt: skip
_TONE = re.compile(r"\((\d+),(\d+),(\d+),(\d+)\)")
_CALLSIGN = re.compile(r"[A-Z0-9/ ]{1,32}")


def node_numbers(rpt: ConfFile) -> list[str]:
    """The node stanzas of rpt.conf: the sections named by a number, as app_rpt finds them."""
    return [n for n in rpt.names() if n.isdigit()]


def map_node(files: Asl3Files, node: str | None, nodes_file: str = "nodes.conf") -> Plan:
    """The plan for `node` (the only node stanza when None); `nodes_file` is the name the nodes
    file will have beside the config."""
    rpt = files.rpt
    nodes = node_numbers(rpt)
    if node is None:
        if len(nodes) != 1:
            raise Asl3ConfError(
                rpt.name,
                None,
                f"defines nodes {', '.join(nodes) or '(none)'}: choose one with --node",
            )
        node = nodes[0]
    stanza = rpt.section(node)
    if stanza is None or not node.isdigit():
        raise Asl3ConfError(
            rpt.name, None, f"has no node stanza [{node}] (it has: {', '.join(nodes) or 'none'})"
        )
    plan = Plan(node)
    plan.sections[""] = []
    # The node's number stands on its own: links, statpost and AMI need it whether or not the
    # node registers (ASL3's shipped nodes 1999 and 1998 never do).
    plan.set("", "node_id", node, f"{stanza.file}:{stanza.line} [{node}]", "the node stanza")
    listener(plan, files)
    register(plan, files, node)
    _radio(plan, files, stanza)
    _rpt_keys(plan, files, stanza)
    _links(plan, files, stanza, nodes_file)
    _ami(plan, files)
    _elsewhere(plan, files)
    for conf in (rpt, files.iax, files.simpleusb, files.usbradio, files.manager):
        for note in conf.notes if conf is not None else []:
            where, _, why = note.rpartition(": ")
            plan.drop(where, why)
    for entry in stanza.effective():
        k = entry.key.lower()
        if k in HANDLED:
            continue
        why = NO_EQUIVALENT.get(k, "no equivalent here")
        plan.drop(source(entry, node), why)
    return plan


# --- rpt.conf ------------------------------------------------------------------------------------


def _radio(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    entry = stanza.get("rxchannel")
    node = stanza.name
    if entry is None:
        raise Asl3ConfError(stanza.file, stanza.line, f"node [{node}] has no rxchannel")
    src = source(entry, node)
    tech, _, rest = entry.value.partition("/")
    tech = tech.strip().lower()
    duplex = stanza.get("duplex")
    radio_on = True
    if tech in ("local", "dahdi") and rest.strip().lower() == "pseudo":
        radio_on = False
        plan.set("audio", "backend", "none", src, "a hub: no radio")
        plan.set("bridge", "mode", "bridge", src, "a hub: a pure conference of the links")
    elif tech == "usrp":
        # USRP/<his ip>:<his port>[:<my port>]: chan_usrp sends to his port and listens on
        # its own (his port again when left out), on loopback when he is on loopback.
        parts = rest.strip().split(":")
        if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts[1:]):
            raise Asl3ConfError(
                entry.file, entry.line, "rxchannel is not USRP/<ip>:<port>[:<listen port>]"
            )
        host, his = parts[0], parts[1]
        mine = parts[2] if len(parts) == 3 else his
        bind = "127.0.0.1" if host.startswith("127.") else "0.0.0.0"
        plan.set("audio", "backend", "usrp", src)
        plan.set("usrp", "listen", f"{bind}:{mine}", src, "the port chan_usrp listened on")
        plan.set("usrp", "peer", f"{host}:{his}", src, "where chan_usrp sent")
    elif tech in ("simpleusb", "radio"):
        conf = files.simpleusb if tech == "simpleusb" else files.usbradio
        fname = "simpleusb.conf" if tech == "simpleusb" else "usbradio.conf"
        dev = conf.section(rest.strip()) if conf else None
        if dev is None:
            raise Asl3ConfError(
                entry.file,
                entry.line,
                f"rxchannel {entry.value} has no [{rest.strip()}] in {fname}",
            )
        _usb(plan, dev, fname)
    else:
        radio_on = False
        plan.set("audio", "backend", "none", src, "no equivalent radio")
        plan.drop(src, f"the {tech} channel driver: not supported (the node has no radio)")
    if radio_on:
        plan.set("bridge", "mode", "conference", src, "the radio and the links hear each other")
        plan.set("bridge", "include_local_radio", True, src)
        if duplex is not None and integer(duplex, node) >= 2:
            plan.drop(
                source(duplex, node),
                "full duplex (the receiver repeated on the transmitter): the node is half "
                "duplex; [bridge] mix_minus = false repeats it",
            )
        if (h := stanza.get("hangtime")) is not None:
            plan.set("radio", "hang_time_ms", max(0, min(60000, integer(h, node))), source(h, node))
        _courtesy(plan, files, stanza)
    elif (h := stanza.get("hangtime")) is not None:
        plan.drop(source(h, node), "the hang time of a radio: this node has none")
    if (t := stanza.get("totime")) is not None:
        secs = max(1, min(3600, math.ceil(integer(t, node) / 1000)))
        plan.set("keying", "tx_timeout_secs", secs, source(t, node), "milliseconds to seconds")


def _usb(plan: Plan, dev: Section, fname: str) -> None:
    where = f"{dev.file}:{dev.line} {fname} [{dev.name}]"
    plan.set("audio", "backend", "cpal", where, "a USB sound interface")
    devstr = dev.value("devstr", "")
    plan.set("audio", "input", "", where, "the system default device (CHECK)")
    plan.set("audio", "output", "", where, "the system default device (CHECK)")
    plan.checks.append(
        f"{where}: devstr {devstr or '(empty)'} is a USB path; set [audio] input/output to a name "
        "substring of the interface (`arecord -l`) and [radio] ptt_device to its /dev/hidrawN "
        "(packaging/udev gives a stable name)"
    )
    plan.set("radio", "ptt", "cm108", where, "simpleusb keys GPIO3 of the CM108")
    plan.set("radio", "ptt_device", "/dev/hidraw0", where, "CHECK: the interface's hidraw node")
    if (e := dev.get("invertptt")) is not None:
        plan.set("radio", "ptt_invert", yes(e.value), source(e, dev.name))
    if (e := dev.get("carrierfrom")) is not None:
        v = e.value.strip().lower()
        if v in ("usb", "usbinvert"):
            plan.set("radio", "carrier", "cm108", source(e, dev.name), "COS on volume down")
            plan.set("radio", "carrier_invert", v == "usbinvert", source(e, dev.name))
        elif v == "vox":
            plan.set("radio", "carrier", "vox", source(e, dev.name))
        elif v == "no":
            plan.set("radio", "carrier", "none", source(e, dev.name))
        else:
            plan.set("radio", "carrier", "none", source(e, dev.name))
            plan.drop(source(e, dev.name), f"carrierfrom = {v}: not supported (carrier none)")
    if (e := dev.get("ctcssfrom")) is not None and e.value.strip().lower() != "no":
        plan.drop(
            source(e, dev.name),
            "CTCSS decode ANDed with COS: wire a CTCSS-qualified COS to volume down",
        )
    delays = (("rxondelay", "rx_on_delay_ms", 5000), ("rxaudiodelay", "rx_audio_delay_ms", 1000))
    for key, ours, top in delays:
        if (e := dev.get(key)) is not None:
            plan.set(
                "radio",
                ours,
                max(0, min(top, 20 * integer(e, dev.name))),
                source(e, dev.name),
                "20 ms frames to ms",
            )
    for e in dev.effective():
        k = e.key.lower()
        if k in ("invertptt", "carrierfrom", "ctcssfrom", "rxondelay", "rxaudiodelay", "devstr"):
            continue
        why = {
            "rxmixerset": "the CM108 mixer: set it once with alsamixer, then [audio] rx_gain_db",
            "txmixaset": "the CM108 mixer: set it once with alsamixer, then [audio] tx_gain_db",
            "txmixbset": "the CM108 mixer: set it once with alsamixer, then [audio] tx_gain_db",
            "txoffdelay": "not needed: the node does not repeat its receiver (mix-minus)",
        }.get(k, "no equivalent here")
        plan.drop(source(e, dev.name), why)


def _tone_steps(text: str) -> tuple[list[list[int]], float] | None:
    """`|t(f1,f2,ms,amp)...` as courtesy-tone steps and a peak level in dBFS; None for a sound
    file or Morse."""
    body = text.strip()
    if not body.lower().startswith("|t"):
        return None
    steps = [tuple(int(x) for x in m.groups()) for m in _TONE.finditer(body)]
    if not steps or len(steps) > 16:
        return None
    out = []
    for f1, f2, ms, _amp in steps:
        if any(f != 0 and not 20 <= f <= 3500 for f in (f1, f2)) or not 1 <= ms <= 5000:
            return None
        out.append([f1, f2, ms])
    peak = max(a for *_, a in steps) or 1
    level = round(max(-60.0, min(0.0, 20 * math.log10(peak / 32768))), 1)
    return out, level


def _courtesy(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    ct = stanza.get("unlinkedct")
    if ct is None:
        return
    tel_name = stanza.value("telemetry", "telemetry") or "telemetry"
    tel = files.rpt.section(tel_name)
    entry = tel.get(ct.value) if tel else None
    src = source(ct, stanza.name)
    if entry is None:
        plan.drop(src, f"courtesy tone {ct.value} is not in [{tel_name}]")
        return
    tone = _tone_steps(entry.value)
    if tone is None:
        plan.drop(src, f"courtesy tone {ct.value} is a sound file or Morse: only tones map")
        return
    steps, level = tone
    plan.set("radio", "courtesy_tone", steps, f"{src} = {ct.value} ({entry.where})")
    plan.set("radio", "courtesy_tone_level_db", level, entry.where, "the tone's amplitude")


def _stanza(
    files: Asl3Files, stanza: Section, key: str, default: str
) -> tuple[Section | None, str]:
    name = stanza.value(key, default) or default
    return files.rpt.section(name), name


def _rpt_keys(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    node = stanza.name
    for key in ("telemdefault",):
        if (e := stanza.get(key)) is not None:
            plan.set("rpt", key, max(0, min(2, integer(e, node))), source(e, node))
    if (e := stanza.get("telemdynamic")) is not None:
        plan.set("rpt", "telemdynamic", yes(e.value), source(e, node))
    for key in ("tailmessagetime", "tailsquashedtime"):
        if (e := stanza.get(key)) is not None:
            plan.set("rpt", key, max(0, min(200000000, integer(e, node))), source(e, node))
    if (e := stanza.get("tailmessagelist")) is not None:
        items = [i.strip() for i in e.value.split(",") if i.strip()]
        plan.set(
            "rpt", "tailmessagelist", items, source(e, node), "CHECK: sound files need .wav/.ul"
        )
        plan.checks.append(f"{e.where}: tail messages name sound files; give their .wav/.ul paths")
    # The function table, macros, scheduler.
    functions, fname = _stanza(files, stanza, "functions", "functions")
    table: list[Function] = []
    if functions is not None:
        for e in functions.effective():
            code = e.key.strip().upper()
            try:
                fn = parse_function(code, e.value)
            except Invalid as exc:
                plan.drop(source(e, fname), f"{e.value}: {exc.problem}")
                continue
            if not re.fullmatch(r"[0-9A-D]{1,16}", code):
                plan.drop(source(e, fname), "not a DTMF code")
                continue
            plan.set("functions", code, fn.spec, source(e, fname))
            if fn.kind == "unavailable":
                plan.checks.append(
                    f"{e.where}: functions.{code} ({fn.spec}) loads, but {fn.arg} is not "
                    "available here"
                )
            table.append(fn)
    if functions is not None:
        plan.set(
            "dtmf",
            "enabled",
            True,
            f"{functions.file}:{functions.line} [{fname}]",
            "app_rpt runs the function table for the radio and every link",
        )
    link_fn = stanza.value("link_functions", fname)
    if link_fn and link_fn.lower() != fname.lower():
        plan.drop(
            f"[{node}] link_functions = {link_fn}",
            "one function table serves the radio and the links",
        )
    macros, mname = _stanza(files, stanza, "macro", "macro")
    startup = stanza.get("startup_macro")
    if macros is not None:
        for e in macros.effective():
            digits = e.value.replace(" ", "").upper()
            if not e.key.strip().isdigit() or not re.fullmatch(r"[0-9A-D*#]{1,256}", digits):
                plan.drop(source(e, mname), "not a macro of DTMF digits")
                continue
            plan.set("macro", e.key.strip(), digits, source(e, mname))
    # app_rpt has no default scheduler stanza: without `scheduler =` nothing is scheduled.
    sname = stanza.value("scheduler") or ""
    sched = files.rpt.section(sname) if sname else None
    if sched is not None:
        for e in sched.effective():
            try:
                parse_schedule(e.key.strip(), e.value)
            except Invalid as exc:
                plan.drop(source(e, sname), exc.problem)
                continue
            plan.set("schedule", e.key.strip(), " ".join(e.value.split()), source(e, sname))
    if startup is not None:
        _startup(plan, startup, node, table or None)
    if (e := stanza.get("statpost_url")) is not None:
        plan.set("statpost", "url", e.value.strip(), source(e, node))
    _identify(plan, files, stanza)


def _commands(digits: str, table: Iterable[Function]) -> list[tuple[str, Function | None, str]]:
    """A DTMF string cut into its commands: (text, function or None, the rest of the digits)."""
    out = []
    for part in digits.split("*"):
        if not part:
            continue
        fn = next((f for f in table if part.startswith(f.code)), None)
        out.append((part, fn, part[len(fn.code) :] if fn else ""))
    return out


def _startup(plan: Plan, entry: Entry, node: str, table: list[Function] | None) -> None:
    """`startup_macro`: permanent links become `[links.N] permanent`, the rest stays a
    startup macro run through the function table."""
    digits = entry.value.replace(" ", "").upper()
    rest = []
    for text, fn, arg in _commands(digits, table or DEFAULT_FUNCTIONS):
        if fn is not None and fn.permanent and arg.isdigit():
            mode = {"connect": "transceive", "monitor": "monitor"}.get(fn.kind, "local_monitor")
            src = f"{source(entry, node)} *{text} ({fn.spec})"
            plan.set(f"links.{arg}", "permanent", True, src)
            plan.set(f"links.{arg}", "mode", mode, src)
        else:
            rest.append(text)
    if rest:
        plan.set("rpt", "startup_macro", "".join("*" + r for r in rest), source(entry, node))


def _identify(plan: Plan, files: Asl3Files, stanza: Section) -> None:
    node = stanza.name
    rec = stanza.get("idrecording")
    morse, mname = _stanza(files, stanza, "morse", "morse")
    if rec is None:
        return
    value = rec.value.strip()
    if not value.lower().startswith("|i"):
        plan.drop(
            source(rec, node), "an ID sound file: the ID here is CW or TTS ([announce] id_mode)"
        )
        return
    call = value[2:].strip().upper()
    if call == "NOTSET" or not _CALLSIGN.fullmatch(call):
        plan.drop(source(rec, node), f"the CW ID {call or '(empty)'} is not a callsign: no ID")
        return
    if plan.get("audio", "backend") == "none":
        plan.drop(source(rec, node), "a CW ID on a node without a radio: nothing to identify")
        return
    src = source(rec, node)
    plan.set("announce", "enabled", True, src)
    plan.set("announce", "id_mode", "cw", src, "|i is a CW ID")
    plan.set("announce", "callsign", call, src)
    if (e := stanza.get("idtime")) is not None:
        plan.set(
            "announce",
            "id_interval_secs",
            max(0, min(86400, integer(e, node) // 1000)),
            source(e, node),
            "ms to s",
        )
    if morse is not None:
        if (e := morse.get("speed")) is not None:
            plan.set("announce", "cw_wpm", max(5, min(60, integer(e, mname))), source(e, mname))
        if (e := morse.get("idfrequency") or morse.get("frequency")) is not None:
            plan.set(
                "announce",
                "cw_tone_hz",
                float(max(200, min(3400, integer(e, mname)))),
                source(e, mname),
            )
    if (e := stanza.get("politeid")) is not None:
        plan.drop(source(e, node), "the polite ID: the node's ID waits for quiet on its own")


def _links(plan: Plan, files: Asl3Files, stanza: Section, nodes_file: str) -> None:
    rpt = files.rpt
    general = rpt.section("general")
    method = general.get("node_lookup_method") if general else None
    nodes_name = stanza.value("nodes", "nodes") or "nodes"
    nodes = rpt.section(nodes_name)
    lines = []
    if nodes is not None:
        for e in nodes.effective():
            if not e.key.strip().isdigit():
                plan.drop(source(e, nodes_name), "not a node number")
                continue
            lines.append(f"{e.key.strip()}={e.value.strip()}")
    if lines:
        plan.nodes_file = "\n".join(lines) + "\n"
        plan.set("links", "nodes_file", nodes_file, f"rpt.conf [{nodes_name}] ({len(lines)} nodes)")
    if method is not None:
        dns = method.value.strip().lower() in ("dns", "both")
        plan.set("links", "dns", dns, source(method, "general"))


def _ami(plan: Plan, files: Asl3Files) -> None:
    mgr = files.manager
    general = mgr.section("general") if mgr else None
    if general is None or mgr is None:
        return
    enabled = yes(general.value("enabled", "no") or "no")
    users = [mgr.section(n) for n in mgr.names() if n.lower() != "general"]
    users = [u for u in users if u is not None and u.get("secret") is not None]
    if not enabled:
        plan.drop(f"{general.file}:{general.line} manager.conf", "AMI is disabled: no [ami]")
        return
    src = f"{general.file}:{general.line} manager.conf [general]"
    plan.set("ami", "enabled", True, src)
    addr = general.value("bindaddr", "127.0.0.1") or "127.0.0.1"
    port = general.get("port")
    plan.set("ami", "bind", f"{addr}:{integer(port, 'general') if port else 5038}", src)
    try:
        loopback = ipaddress.ip_address(addr).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        plan.set("ami", "allow_remote", True, src, "ASL3 listened beyond loopback")
    if users:
        user = users[0]
        usrc = f"{user.file}:{user.line} manager.conf [{user.name}]"
        plan.set("ami", "username", user.name, usrc)
        write = (user.value("write", "") or "").lower()
        if not any(w in write for w in ("all", "command", "system", "call")):
            plan.set("ami", "read_only", True, usrc, "its write permission is empty")
        secret = user.get("secret")
        assert secret is not None
        plan.secrets.append(
            f"NET_AMI_SECRET: the AMI password of manager.conf [{user.name}] ({secret.where})"
        )
        for other in users[1:]:
            plan.drop(f"{other.file}:{other.line} manager.conf [{other.name}]", "one AMI user here")


def _loaded(files: Asl3Files, module: str) -> bool:
    """Whether Asterisk loads `module` (modules.conf: `load =>` it, or `autoload = yes` and no
    `noload =>`); without modules.conf Asterisk loads every module."""
    mods = files.modules.section("modules") if files.modules else None
    if mods is None:
        return True
    named = {e.key.lower(): True for e in mods.entries if e.value.strip() == module}
    if "noload" in named:
        return False
    return "load" in named or yes(mods.value("autoload", "no") or "no")


def _elsewhere(plan: Plan, files: Asl3Files) -> None:
    """Features configured outside rpt.conf that have no equivalent, when Asterisk runs them."""
    echo = files.echolink
    if echo is not None and _loaded(files, "chan_echolink.so"):
        for name in echo.names():
            s = echo.section(name)
            call = s.value("call", "") if s else ""
            if s is not None and call and call.upper() != "INVALID":
                plan.drop(f"{s.file}:{s.line} [{name}]", "EchoLink: not supported")
    if _loaded(files, "chan_voter.so") and files.modules is not None:
        plan.drop("modules.conf chan_voter.so", "the voter (RTCM receivers): not supported")
