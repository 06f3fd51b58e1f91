"""iax.conf, mapped: the listener's address and admission, the codecs, the jitter buffer, the
numbered users (peer secrets) and the `register =>` line."""

from __future__ import annotations

import re

from node.asl3import.conf import Asl3ConfError, ConfFile, Entry, Section
from node.asl3import.plan import Asl3Files, Plan, integer, source, yes
from node.config.schema import keys_of
from node.config.station import JITTER_HEADROOM_MS, BridgeConfig
from node.config.values import ASL_REGISTER_URL

__all__ = ["IAX2_PORT", "listener", "register"]

#: The IAX2 port when iax.conf names none.
IAX2_PORT = 4569
#: The codecs this node offers (codec_policy picks among them).
_CODECS = frozenset({"ulaw", "alaw", "slin", "slin16"})
_REGISTER = re.compile(
    r"(?P<user>[^:@\s]+)(?::(?P<secret>[^@]*))?@(?P<host>[^\s:/]+)(?::(?P<port>\d+))?"
)


#: Without an iax.conf, what ASL ships (ASL3's and ASL 1.x's iax.conf): port 4569 on every
#: address, and the `[radio]` user, which admits nodes without a secret, with these codecs.
_SHIPPED = "no iax.conf: ASL's shipped iax.conf"
_SHIPPED_CODECS = {"ulaw", "adpcm", "gsm"}


def listener(plan: Plan, files: Asl3Files) -> None:
    """[listener] bind and auth, [links] verify_source_ip, the codecs and the jitter buffer."""
    iax = files.iax
    if iax is None:
        _shipped(plan)
        return
    general = iax.section("general") if iax else None
    addr, port = "0.0.0.0", IAX2_PORT
    if general is not None:
        if (e := general.get("bindaddr")) is not None:
            addr = e.value.split(":")[0] or addr
        if (e := general.get("bindport")) is not None:
            port = integer(e, "general")
    plan.set("listener", "bind", f"{addr}:{port}", "iax.conf [general] bindaddr, bindport")
    radio = iax.section("radio") if iax else None
    peers = _peer_users(plan, iax)
    if radio is None:
        plan.set(
            "listener",
            "auth",
            "required",
            "iax.conf (no [radio] user)",
            "no [radio] user: every caller must have a secret",
        )
    else:
        auth = "optional" if peers else "off"
        plan.set(
            "listener",
            "auth",
            auth,
            f"{radio.file}:{radio.line} [radio] (a user without a secret)",
            "ASL's [radio] user admits any node that is in the node list from its address",
        )
        plan.set(
            "links",
            "verify_source_ip",
            True,
            f"{radio.file}:{radio.line} [radio]",
            "as app_rpt checks a radio caller's address against the node list",
        )
    _codecs(plan, iax, radio)
    _jitter(plan, general)


def _shipped(plan: Plan) -> None:
    """No iax.conf: the node takes calls as ASL's shipped iax.conf does, and the report says
    so (without it every ordinary inbound link would be refused)."""
    plan.set("listener", "bind", f"0.0.0.0:{IAX2_PORT}", _SHIPPED, "port 4569")
    plan.set("listener", "auth", "off", f"{_SHIPPED} [radio]", "nodes link without a secret")
    plan.set("links", "verify_source_ip", True, f"{_SHIPPED} [radio]", "app_rpt's address check")
    policy = _policy(_SHIPPED_CODECS)
    plan.set("", "codec_policy", policy, f"{_SHIPPED} [radio] allow", "ulaw, adpcm, gsm")
    plan.checks.append(
        "there is no iax.conf: the node listens as ASL's shipped iax.conf does, on port 4569 "
        "with its [radio] user (any node of the node list links without a secret, from its "
        "listed address); an iax.conf kept elsewhere is not read"
    )


#: iax.conf's jitter-buffer keys and the [bridge] key each becomes.
_JITTER_KEYS = {
    "jittertargetextra": "jitter_target_extra_ms",
    "maxjitterbuffer": "jitter_max_ms",
}


def _jitter(plan: Plan, general: Section | None) -> None:
    """The jitter buffer's margin and size, as chan_iax2 was told them, brought into the
    ranges `[bridge]` takes."""
    if general is None:
        return
    declared = {k.name: k for k in keys_of(BridgeConfig)}
    values = {key: getattr(BridgeConfig(), key) for key in _JITTER_KEYS.values()}
    found: dict[str, tuple[Entry, str]] = {}
    for name, key in _JITTER_KEYS.items():
        if (e := general.get(name)) is None:
            continue
        low, high = int(declared[key].ge or 0), int(declared[key].le or 0)
        wanted = integer(e, "general")
        values[key] = min(high, max(low, wanted))
        note = "" if values[key] == wanted else f"{wanted} is outside {low}-{high}"
        found[key] = (e, note)
    room = values["jitter_target_extra_ms"] + JITTER_HEADROOM_MS
    if found and values["jitter_max_ms"] < room:
        e, _ = found.get("jitter_max_ms") or found["jitter_target_extra_ms"]
        note = f"raised to leave {JITTER_HEADROOM_MS} ms above the margin for the jitter"
        values["jitter_max_ms"] = room
        found["jitter_max_ms"] = (e, note)
    for key, (e, note) in found.items():
        plan.set("bridge", key, values[key], source(e, "general"), note)
    if (e := general.get("jitterbuffer")) is not None and not yes(e.value):
        plan.drop(source(e, "general"), "the node always runs a jitter buffer on every leg")


def _allowed(section: Section | None, start: set[str]) -> set[str]:
    """The codecs left after a section's `allow` / `disallow` lines, in their order."""
    allowed = set(start)
    if section is None:
        return allowed
    for entry in section.entries:
        k = entry.key.lower()
        names = {v.strip().lower() for v in entry.value.split(",") if v.strip()}
        if k == "disallow":
            allowed = set() if "all" in names else allowed - names
        elif k == "allow":
            allowed |= names
    return allowed


def _codecs(plan: Plan, iax: ConfFile | None, radio: Section | None) -> None:
    general = iax.section("general") if iax else None
    allowed = _allowed(radio, _allowed(general, {"ulaw", "alaw", "gsm"}))
    policy = _policy(allowed)
    where = f"{radio.file}:{radio.line} [radio] allow" if radio else "iax.conf [general] allow"
    plan.set("", "codec_policy", policy, where, "from " + ", ".join(sorted(allowed)))
    other = sorted(allowed - _CODECS - {"all"})
    if other:
        plan.drop(where, f"codecs {', '.join(other)}: not offered here (mu-law, A-law, slin)")


def _policy(allowed: set[str]) -> str:
    if "slin16" in allowed:
        return "prefer_slin16"
    if "slin" in allowed:
        return "allow_slin"
    return "ulaw_only"


def _peer_users(plan: Plan, iax: ConfFile | None) -> list[str]:
    """iax.conf users named by a node number with a secret: inbound peer secrets."""
    found = []
    if iax is None:
        return found
    for name in iax.names():
        s = iax.section(name)
        if s is None or name.lower() in ("general", "radio"):
            continue
        secret = s.get("secret")
        if name.isdigit() and secret is not None:
            found.append(name)
            plan.secrets.append(
                f"NET_PEER_{name}: the secret of iax.conf [{name}] ({secret.where}), or a line "
                f"{name}=<secret> in the [secrets] peers_file (mode 0600)"
            )
        elif s.value("type", "").lower() in ("user", "friend", "peer"):
            plan.drop(
                f"{s.file}:{s.line} [{name}] (context {s.value('context', '-')})",
                "IAX users for phones and clients: only node links and calls by node number here",
            )
    return found


def register(plan: Plan, files: Asl3Files, node: str) -> None:
    """[register] from the `register =>` line (rpt_http_registrations.conf, else iax.conf)."""
    lines: list[tuple[str, Entry]] = []
    http = files.http_registrations
    sect = http.section("registrations") if http else None
    for entry in sect.all("register") if sect else []:
        lines.append(("http", entry))
    general = files.iax.section("general") if files.iax else None
    for entry in general.all("register") if general else []:
        lines.append(("iax2", entry))
    ours = {n for n in files.rpt.names() if n.isdigit()}
    mine = []
    for method, entry in lines:
        m = _REGISTER.match(entry.value.strip())
        if m is None:
            raise Asl3ConfError(
                entry.file, entry.line, "register => is not <node>:<password>@<host>[:port]"
            )
        if m["user"] == node:
            mine.append((method, entry, m))
        elif m["user"] not in ours:  # another node of this rpt.conf registers itself
            plan.drop(f"{entry.where} register", f"registers {m['user']}, not node {node}")
    if not mine:
        plan.commented += [
            f"Node {node} did not register in ASL, so it does not register here either (its",
            "number is the top-level node_id). To register it, remove the #s below and provide",
            "NET_NODE and NET_SECRET (docs/registration.md).",
            "#[register]",
            '#method = "http"',
            f'#url = "{ASL_REGISTER_URL}"',
        ]
        return
    method, entry, m = mine[0]
    for _, other, _ in mine[1:]:
        plan.drop(
            f"{other.where} register",
            f"a second registration of {node}: the node registers one way ({entry.where} kept)",
        )
    src = f"{entry.where} register =>"
    plan.set("register", "method", method, src)
    if method == "http":
        host = m["host"]
        url = ASL_REGISTER_URL if host == "register.allstarlink.org" else f"https://{host}/"
        plan.set("register", "url", url, src)
        interval = http.section("general") if http else None
        if interval is not None and (e := interval.get("register_interval")) is not None:
            plan.set(
                "register",
                "refresh",
                max(10, min(3600, integer(e, "general"))),
                source(e, "general"),
            )
    else:
        plan.set("register", "peer", f"{m['host']}:{m['port'] or IAX2_PORT}", src)
    plan.set("register", "node_id", node, src)
    plan.set("secrets", "source", "env", src, "the registration password is NET_SECRET")
    plan.secrets.append(
        f"NET_NODE={node} and NET_SECRET: the password of {entry.where} (register => "
        f"{node}:<password>@...), in the service's environment file (mode 0600)"
    )
