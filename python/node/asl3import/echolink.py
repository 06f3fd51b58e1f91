"""echolink.conf (chan_echolink) to `[echolink]`.

Only when Asterisk loads chan_echolink and a stanza has a real callsign (ASL3 ships `[el0]` with
`call = INVALID`). The first such stanza is the station; its password is never copied (the
report says where it is and that it goes into NET_ECHOLINK_PASSWORD or the peers file).
"""

from __future__ import annotations

import ipaddress
import re

from node.asl3import.conf import ConfFile, Entry, Section
from node.asl3import.plan import Plan, integer, source

__all__ = ["map_echolink"]

#: Keys that change nothing here, never reported.
_SILENT = frozenset({"call", "pwd", "name", "qth", "node", "email", "context", "port"})
#: What the keys we do not carry over did there.
_LOST = {
    "lat": "the EchoLink status page's position (APRS): not sent",
    "lon": "the EchoLink status page's position (APRS): not sent",
    "freq": "the EchoLink status page's frequency: not sent",
    "tone": "the EchoLink status page's CTCSS tone: not sent",
    "power": "the EchoLink status page's station data: not sent",
    "height": "the EchoLink status page's station data: not sent",
    "gain": "the EchoLink status page's station data: not sent",
    "dir": "the EchoLink status page's station data: not sent",
    "rtcptimeout": "a silent station is dropped after 50 s here",
    "recfile": "recording EchoLink audio to a file: not supported",
    "astnode": "the imported node is the one EchoLink stations join",
}
_CALL = re.compile(r"[A-Z0-9]{3,10}(-[LR])?")


def _station(echo: ConfFile) -> Section | None:
    for name in echo.names():
        section = echo.section(name)
        call = (section.value("call", "") or "").strip().upper() if section else ""
        if section is not None and call and call != "INVALID":
            return section
    return None


def _list(entry: Entry) -> list[str]:
    return [p.strip().upper() for p in entry.value.split(",") if p.strip()]


def map_echolink(plan: Plan, echo: ConfFile, node: str) -> None:
    """`[echolink]` from the station stanza of echolink.conf."""
    st = _station(echo)
    if st is None:
        return
    name = st.name
    where = f"{st.file}:{st.line} [{name}]"
    call = (st.value("call") or "").strip().upper()
    number = (st.value("node") or "").strip()
    call_entry, node_entry = st.get("call"), st.get("node")
    assert call_entry is not None
    if not _CALL.fullmatch(call) or not re.fullmatch(r"[0-9]{1,6}", number):
        plan.drop(where, "EchoLink: its call or node is not a callsign and EchoLink number")
        return
    plan.set("echolink", "callsign", call, source(call_entry, name))
    assert node_entry is not None
    plan.set("echolink", "node_number", number, source(node_entry, name))
    ipaddr = st.get("ipaddr")
    if ipaddr is not None:
        try:
            addr = str(ipaddress.IPv4Address(ipaddr.value.strip()))
        except ValueError:
            plan.drop(source(ipaddr, name), "not an IPv4 address: UDP 5198/5199 on every address")
        else:
            plan.set("echolink", "bind", addr, source(ipaddr, name))
    servers = [e for e in st.effective() if re.fullmatch(r"server\d+", e.key.lower())]
    hosts = [e.value.strip() for e in servers if e.value.strip()]
    if hosts:
        plan.set("echolink", "directory", hosts, source(servers[0], name), "server1..4 in turn")
    qth = st.get("qth")
    if qth is not None and qth.value.strip().upper() not in ("", "INVALID"):
        text = qth.value.strip()
        plan.set("echolink", "location", text[:27].rstrip(), source(qth, name), _cut(text, 27))
    sysop = st.get("name")
    if sysop is not None and sysop.value.strip().upper() not in ("", "YOUR NAME"):
        text = sysop.value.strip()
        plan.set("echolink", "sysop", text[:32].rstrip(), source(sysop, name), _cut(text, 32))
    maxstns = st.get("maxstns")
    if maxstns is not None:
        value = integer(maxstns, name)
        kept = min(max(value, 1), 100)
        note = "" if kept == value else f"{value} is outside 1-100"
        plan.set("echolink", "max_stations", kept, source(maxstns, name), note)
    for key, ours in (("permit", "allow"), ("deny", "deny")):
        entry = st.get(key)
        if entry is not None and _list(entry):
            plan.set("echolink", ours, _list(entry), source(entry, name))
    message = st.get("message")
    if message is not None and message.value.strip():
        text = message.value.strip().replace("\\n", "\n")[:400]
        plan.set("echolink", "welcome", text, source(message, name))
    pwd = st.get("pwd")
    if pwd is not None:
        plan.secrets.append(
            f"NET_ECHOLINK_PASSWORD (or an echolink=<password> line of the peers file): the "
            f"EchoLink password of echolink.conf [{name}] ({pwd.where})"
        )
    astnode = (st.value("astnode") or "").strip()
    for entry in st.effective():
        k = entry.key.lower()
        if k in _SILENT or k in ("ipaddr", "qth", "maxstns", "permit", "deny", "message"):
            continue
        if re.fullmatch(r"server\d+", k):
            continue
        if k == "astnode" and astnode == node:
            continue
        if k in ("lat", "lon", "freq", "tone", "power", "height", "gain", "dir") and (
            entry.value.strip() in ("", "0", "0.0")
        ):
            continue
        plan.drop(source(entry, name), _LOST.get(k, "no equivalent here"))
    for other in echo.names():
        section = echo.section(other)
        if other != name and section is not None and _station(_only(echo, section)) is not None:
            plan.drop(
                f"{section.file}:{section.line} echolink.conf [{other}]",
                "one EchoLink station here",
            )


def _only(echo: ConfFile, section: Section) -> ConfFile:
    return ConfFile(echo.name, [section])


def _cut(text: str, limit: int) -> str:
    return f"cut to {limit} characters" if len(text) > limit else ""
