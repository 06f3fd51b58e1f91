"""The sections that face the network: calls in, registration, the control channel, credentials,
links, AMI, the portal and the WireGuard tunnel.

Each key is declared once (`node.config.schema.key`): its type and bounds for the loader, its
comment and example for the template. The section docstring is for developers; `NOTE` is the
template's comment on the section.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from node.config.schema import key
from node.config.values import (
    ASL_DNS_DOMAIN,
    ASL_REGISTER_URL,
    ASL_STATPOST_URL,
    PORTAL_URL,
    Address,
    Context,
    Invalid,
    Parser,
    array,
    bind_address,
    domain,
    env_name,
    file_path,
    http_url,
    nameservers,
    peer_address,
    string,
    toml_type,
)
from node.config.values import node_id as parse_node_id
from node.credential import Secret
from node.wg_key import KEY_FORMAT, decode_key

__all__ = [
    "AMI_PORT",
    "CALLNO_MAX",
    "CALLNO_MIN",
    "CONTROL_PORT",
    "IAX2_PORT",
    "MAX_CALLS",
    "AmiConfig",
    "ControlConfig",
    "DnsConfig",
    "LinkConfig",
    "LinksKeys",
    "ListenerConfig",
    "PortalConfig",
    "RegisterConfig",
    "SecretsConfig",
    "StatpostConfig",
    "WireGuardConfig",
]

#: IAX2 call numbers are 15 bits; the endpoint hands out 2..0x7FFF (never 0, which would make
#: a full frame look like a meta frame to some parsers, nor 1, Asterisk's number for stateless
#: replies). Declared here, at the bottom of the house, because `[listener] max_calls` is bound
#: by it; `node.iax2.endpoint` takes them from here.
CALLNO_MIN = 2
CALLNO_MAX = 0x7FFF
#: The most simultaneous calls the call-number space can hold: the bound of `max_calls`.
MAX_CALLS = CALLNO_MAX - CALLNO_MIN + 1

IAX2_PORT = 4569
CONTROL_PORT = 8730
#: The Asterisk Manager Interface's port (manager.conf `port`).
AMI_PORT = 5038
_ALL_IAX2 = Address("0.0.0.0", IAX2_PORT)
_LOOPBACK_CONTROL = Address("127.0.0.1", CONTROL_PORT)
_LOOPBACK_AMI = Address("127.0.0.1", AMI_PORT)

Answer = Literal["auto", "manual"]
Auth = Literal["required", "optional", "off"]
CallToken = Literal["required", "auto", "off"]
SecretSource = Literal["env", "control", "config"]
LinkShape = Literal["standard", "wt-guest"]
RegisterMethod = Literal["iax2", "http"]
LinkModeName = Literal["transceive", "monitor", "local_monitor"]
LinkNetworkName = Literal["allstar", "dstar"]

# An AMI login name as manager.conf allows one: printable, no blanks, no brackets.
_AMI_USER = re.compile(r"[!-Z\\^-~]{1,64}")
_PORTAL_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?")


# --- parsers of this side's own values --------------------------------------------------------


def _allowed_nodes(raw: object, ctx: Context) -> tuple[str, ...]:
    def item(value: object) -> str:
        if type(value) is int and value >= 0:
            return str(value)
        if type(value) is str and value.strip() and value == value.strip():
            return value
        raise Invalid("must be a node id (a non-empty string without surrounding spaces)")

    return array(raw, 'an array of node ids, e.g. ["2000", "2001"]', item)


def _inline_secret(raw: object, ctx: Context) -> Secret | None:
    # An empty string in the file means unset (the template's prose shows `secret = ""`).
    value = string(raw)
    return Secret(value) if value else None


def _link_username(raw: object, ctx: Context) -> str:
    value = string(raw)
    if not value or len(value) > 64 or any(c.isspace() for c in value):
        raise Invalid("must be a non-empty name without spaces", "e.g. radio")
    return value


def _ami_username(raw: object, ctx: Context) -> str:
    value = string(raw)
    if not _AMI_USER.fullmatch(value):
        raise Invalid(
            "is not a valid AMI user name",
            "1-64 printable ASCII characters without blanks or [ ], e.g. admin",
        )
    return value


def _portal_url(raw: object, ctx: Context) -> str:
    value = string(raw)
    if not _PORTAL_URL.fullmatch(value):
        raise Invalid("is not an http(s) URL", "e.g. https://www.allstarlink.org")
    return value


def _not_blank(accepted: str) -> Parser:
    def parse(raw: object, ctx: Context) -> str:
        value = string(raw)
        if not value.strip():
            raise Invalid("must not be empty", accepted)
        return value

    return parse


def _tunnel_address(raw: object, ctx: Context) -> str:
    # wg-quick writes `Address = 10.8.0.2/24`; the prefix routes nothing here (allowed_ips do).
    text = string(raw)
    try:
        address = ipaddress.IPv4Interface(text).ip
    except ValueError:
        raise Invalid(
            "is not an IPv4 address (the tunnel carries IPv4)",
            "e.g. 10.8.0.2 (a /prefix, as wg-quick writes it, is accepted and ignored)",
        ) from None
    if address.is_unspecified or address.is_multicast or address.is_loopback:
        raise Invalid("must be a unicast address", "e.g. 10.8.0.2")
    return str(address)


def _public_key(raw: object, ctx: Context) -> str:
    text = string(raw)
    try:
        decode_key(text)
    except ValueError:
        raise Invalid("is not a WireGuard public key", KEY_FORMAT) from None
    return text.strip()


_IPS_FORM = 'a non-empty array of IPv4 networks, e.g. ["10.8.0.0/24"] or ["0.0.0.0/0"]'


def _allowed_ips(raw: object, ctx: Context) -> tuple[str, ...]:
    if type(raw) is not list or not raw:
        raise Invalid("must be a non-empty array", _IPS_FORM)

    def item(value: object) -> str:
        if type(value) is not str:
            raise Invalid(f"must be a string, got {toml_type(value)}", _IPS_FORM)
        try:
            net = ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise Invalid("is not an IP network", _IPS_FORM) from None
        if net.version != 4:
            raise Invalid("is an IPv6 network; the tunnel carries IPv4 only", _IPS_FORM)
        return str(net)

    return array(raw, _IPS_FORM, item)


def _optional_env_name(example: str, what: str) -> Parser:
    name = env_name(example, what)

    def parse(raw: object, ctx: Context) -> str | None:
        # Empty (or any false value, as before) means none, as in the template's prose.
        return name(raw, ctx) if raw else None

    return parse


# --- sections ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerConfig:
    """`[listener]` (required): the inbound IAX2 side."""

    NOTE: ClassVar[str] = (
        "Inbound IAX2 calls. Forward UDP 4569 to this host for calls from outside."
    )

    bind: Annotated[
        Address,
        key(
            'Where the IAX2 UDP socket listens: "<ip>:<port>" or "[<ipv6>]:<port>".',
            parse=bind_address,
        ),
    ] = _ALL_IAX2
    answer: Annotated[
        Answer,
        key(
            '"auto" answers inbound calls at once; "manual" rings until POST /answer (or POST '
            "/reject)."
        ),
    ] = "auto"
    max_calls: Annotated[
        int,
        key(
            "Cap on simultaneous inbound calls (1-32766, the IAX2 call-number space). Calls that "
            "ended and linger to re-ACK a HANGUP do not count. For hundreds of calls see "
            "docs/performance.md.",
            ge=1,
            le=MAX_CALLS,
        ),
    ] = 8
    auth: Annotated[
        Auth,
        key(
            'Inbound authentication: "required" MD5-challenges every caller against the secret '
            "provisioned for its node id ([secrets] peers_file or NET_PEER_<NODE>) and rejects "
            'unknown usernames; "optional"; "off".'
        ),
    ] = "required"
    #: Usernames (node ids) admitted; empty admits every caller (subject to auth and max_calls).
    allowed_nodes: Annotated[
        tuple[str, ...],
        key(
            'Allowlist of caller node ids, e.g. ["2000", "2001"]. Empty admits every caller '
            "(subject to auth and max_calls); a caller not on a non-empty list is rejected before "
            "answer.",
            parse=_allowed_nodes,
        ),
    ] = ()
    calltoken: Annotated[
        CallToken,
        key(
            'IAX2 call tokens (anti-spoofing): "required" demands one, "auto" gives one to every '
            "caller that asks and still serves callers that never send one (e.g. iaxmodem), "
            '"off".',
            ext=True,
        ),
    ] = "auto"


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterConfig:
    """`[register]` (optional): the upstream registrar. The password is never here."""

    NOTE: ClassVar[str] = (
        "Registration with an upstream registrar, so the node is reachable by its node number. "
        "Omit the section to not register. The password is never here (see [secrets]). Example "
        "values:"
    )

    method: Annotated[
        RegisterMethod,
        key(
            '"iax2" (IAX2 REGREQ to `peer`) or "http" (AllStarLink 3\'s JSON POST to `url`). Use '
            "one, never both: callees check that our calls come from the address we registered.",
            ext=True,
        ),
    ] = "iax2"
    #: The IAX2 registrar (`method = "iax2"` only, where it is required); None for HTTP.
    peer: Annotated[
        Address | None,
        key(
            'Registrar address, "<host>:<port>" (method "iax2" only; required there).',
            parse=peer_address,
            example=Address("register.example.org", IAX2_PORT),
        ),
    ] = None
    url: Annotated[
        str,
        key(
            'The HTTP registrar (method "http" only), for example:',
            ext=True,
            show="prose",
            parse=http_url(allow_query=True),
        ),
    ] = ASL_REGISTER_URL
    node_id: Annotated[
        str,
        key(
            "This node's number; also the register username. A top-level node_id, if given, "
            "must be the same number.",
            parse=parse_node_id,
            example="2000",
        ),
    ]
    refresh: Annotated[
        int,
        key(
            "Refresh interval in seconds (10-3600): the IAX2 REFRESH asked for, or how often the "
            "HTTP registration is re-posted.",
            ext=True,
            ge=10,
            le=3600,
        ),
    ] = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class StatpostConfig:
    """`[statpost]` (*extension*, optional): app_rpt's status posts to a stats collector."""

    NOTE: ClassVar[str] = (
        "EXTENSION. Status posts to a stats collector, as app_rpt's statpost_url does (a GET "
        "with the node's links and counters every interval, and one on every key change). Needs "
        "the node's number (node_id, or [register] node_id). Omit the section to post "
        "nothing. Example values:"
    )

    url: Annotated[
        str,
        key("The collector (http:// or https://, no query).", parse=http_url(allow_query=False)),
    ] = ASL_STATPOST_URL
    interval_secs: Annotated[
        int, key("Seconds between the full posts (30-600).", ge=30, le=600)
    ] = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlConfig:
    """`[control]` (required): the HTTP/SSE control channel, loopback only (it has no auth)."""

    NOTE: ClassVar[str] = (
        "The HTTP control channel, SSE event stream and status page. It has NO authentication, "
        "so it must be a loopback address (127.0.0.0/8, [::1] or localhost). For remote access "
        "put an SSH tunnel, VPN or authenticating reverse proxy in front of it."
    )

    bind: Annotated[Address, key(parse=bind_address)] = _LOOPBACK_CONTROL
    request_timeout: Annotated[
        float,
        key(
            "Seconds (1-300) a client has to send a whole request, head and body; a client "
            "that trickles it (or connects and sends nothing) is answered 408 and closed.",
            ext=True,
            ge=1,
            le=300,
        ),
    ] = 10.0
    idle_timeout: Annotated[
        float,
        key(
            "Seconds (1-300) a kept-alive connection may stay idle between requests.",
            ext=True,
            ge=1,
            le=300,
        ),
    ] = 5.0
    max_connections: Annotated[
        int,
        key(
            "Connections and requests served at once (16-4096), event streams included; past "
            "it a request is answered 503. Keep it under the process's open-file limit.",
            ext=True,
            ge=16,
            le=4096,
        ),
    ] = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretsConfig:
    """`[secrets]`: where credentials come from. Inline secrets are `Secret`s, so they never show
    in repr, asdict output or logs."""

    NOTE: ClassVar[str] = ""

    source: Annotated[
        SecretSource,
        key(
            "Where credentials come from. No secret is ever written in this template.\n"
            '  "env"     - at startup read NET_NODE (the node number, must equal '
            "[register].node_id) and\n"
            "              NET_SECRET (the node password) from the environment.\n"
            '  "control" - nothing at startup; send the credential after start with\n'
            '              POST /secrets {"username": "<node_id>", "secret": "<password>"}.\n'
            '  "config"  - the password is the inline key `secret` in this section, e.g.\n'
            '                  secret = ""\n'
            "              The node refuses to start unless this file is readable by its owner "
            "alone\n"
            "              (chmod 600) and refuses `secret` with any other source.\n"
            "Per-node inbound peer secrets (for listener.auth), whatever the source, come from "
            "environment variables NET_PEER_<NODE> (e.g. NET_PEER_2001) and from the peers file "
            "below.\nThe AMI password ([ami] below) comes from the same source: NET_AMI_SECRET "
            '("env"), POST /secrets {"username": "ami:<[ami] username>", "secret": "..."} '
            '("control"), or the inline key of this section ("config"), e.g.\n'
            '                  ami_secret = ""\n'
            'Allowed: "env", "control", "config".'
        ),
    ] = "env"
    #: The inline registration password, only with `source = "config"`.
    secret: Annotated[Secret | None, key(show="hidden", parse=_inline_secret)] = None
    ami_secret: Annotated[Secret | None, key(show="hidden", parse=_inline_secret, ext=True)] = None
    peers_file: Annotated[
        Path | None,
        key(
            "The peers file: one <node>=<secret> per line ('#' starts a comment line), e.g.\n"
            "    2001=the secret of node 2001\n"
            "Relative to this file's directory. Refused unless it is a regular file of mode 0600 "
            "(or 0400) owned by the user the node runs as (or root). A node may have a secret in "
            "the file or in NET_PEER_<NODE>, not both. Re-read on SIGHUP (systemctl reload): "
            "changes apply to the next inbound call; calls that are up stay up.",
            ext=True,
            show="off",
            parse=file_path,
        ),
    ] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DnsConfig:
    """`[links] dns*` keys (*extension*): node-number lookup in DNS, as ASL3 does it."""

    enabled: bool = True
    domain: str = ASL_DNS_DOMAIN
    #: Name servers to ask; empty means the system resolver (/etc/resolv.conf).
    servers: tuple[Address, ...] = ()
    #: The whole lookup (SRV then A) must finish within this many milliseconds.
    timeout_ms: int = 3000


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConfig:
    """`[links.<node_id>]`: per-node link settings."""

    NOTE: ClassVar[str] = "Per-node settings; the table name is the node number. Example:"
    #: The node number the template's example table is named after.
    EXAMPLE_NODE: ClassVar[str] = "2000"

    shape: Annotated[
        LinkShape,
        key(
            '"standard", or "wt-guest" for nodes whose guest context exposes only the '
            "web-transceiver extension (needs the [portal] section)."
        ),
    ] = "standard"
    username: Annotated[
        str | None,
        key(
            'USERNAME of our link calls to this node (default "radio", or this node\'s number '
            "when a peer secret for node 2000 is provisioned).",
            ext=True,
            parse=_link_username,
            example="radio",
        ),
    ] = None
    permanent: Annotated[
        bool,
        key("A permanent link: dialled at start and redialled for ever when lost.", ext=True),
    ] = False
    mode: Annotated[
        LinkModeName,
        key(
            'Mode of the permanent link: "transceive" (*3), "monitor" (*2) or "local_monitor" '
            "(*75: heard on the local radio only).",
            ext=True,
        ),
    ] = "transceive"
    addr: Annotated[
        Address | None,
        key(
            'The node\'s address, instead of looking the number up: "<host>:<port>".',
            ext=True,
            parse=peer_address,
            example=Address("192.0.2.10", IAX2_PORT),
        ),
    ] = None
    network: Annotated[
        LinkNetworkName,
        key(
            '"dstar" marks a D-Star gateway: while a link to it is up the node refuses to key.',
            ext=True,
        ),
    ] = "allstar"
    normalize: Annotated[
        bool | None,
        key(
            "Bring this node's voice to [bridge] loudness_target (true) or leave it as it comes "
            "(false), whatever [bridge] normalize says; unset follows [bridge] normalize.",
            ext=True,
            example=True,
            accepted="true, false (or leave it out: [bridge] normalize decides)",
        ),
    ] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LinksKeys:
    """The keys of `[links]` itself (beside its `[links.<node_id>]` tables). The loader spreads
    them over `NodeConfig.nodes_file`, `verify_source_ip` and `dns`."""

    NOTE: ClassVar[str] = (
        "Node-to-node links. A node number is looked up in this order: the address given with "
        "the command, then nodes_file, then DNS."
    )

    nodes_file: Annotated[
        Path | None,
        key(
            "Optional file resolving node numbers to addresses, one entry per line in the "
            "extnodes form <node>=radio@<ip>:<port>/<node>,<ip> (the last field is the address "
            "inbound calls from that node must come from, or NONE). Re-read on every lookup. "
            "Relative to this file's directory.",
            ext=True,
            parse=file_path,
        ),
    ] = None
    dns: Annotated[
        bool,
        key(
            "Look node numbers of 4 or more digits up in DNS as AllStarLink 3 does (SRV "
            "_iax._udp.<node>.<dns_domain>, then the target's A record).",
            ext=True,
        ),
    ] = True
    dns_domain: Annotated[str, key(parse=domain)] = ASL_DNS_DOMAIN
    dns_servers: Annotated[
        tuple[Address, ...],
        key(
            'Name servers, e.g. ["127.0.0.1:5353"]; empty uses the system resolver.',
            parse=nameservers,
            example=(),
        ),
    ] = ()
    dns_timeout_ms: Annotated[
        int,
        key("Time allowed for one lookup in milliseconds (100-30000).", ge=100, le=30000),
    ] = 3000
    verify_source_ip: Annotated[
        bool,
        key(
            "Refuse an inbound link whose source address is not the address its node number "
            'resolves to (what AllStarLink nodes do for "radio" callers).',
            ext=True,
        ),
    ] = False
    warn_loss_pct: Annotated[
        float,
        key(
            "A link is reported degraded (a link event of kind degraded, and a log line) when "
            "the frames lost in either direction over the last few seconds reach this share in "
            "percent (0-100), or its round-trip time reaches warn_rtt_ms; recovered once both "
            "stayed below 70 % of their threshold for 15 s. 0 turns that check off.",
            ext=True,
            ge=0,
            le=100,
        ),
    ] = 5.0
    warn_rtt_ms: Annotated[
        int,
        key(
            "Round-trip time in milliseconds (0-60000) at which a link is reported degraded "
            "(LAGRQ/LAGRP and PING/PONG rounds). 0 turns that check off.",
            ext=True,
            ge=0,
            le=60000,
        ),
    ] = 500

    def dns_config(self) -> DnsConfig:
        return DnsConfig(
            enabled=self.dns,
            domain=self.dns_domain,
            servers=self.dns_servers,
            timeout_ms=self.dns_timeout_ms,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AmiConfig:
    """*Extension* `[ami]`: the Asterisk Manager Interface subset Allmon3 and Supermon poll.

    Off by default. Its password comes from the secrets source (`NET_AMI_SECRET`, POST /secrets
    with username `ami:<username>`, or `[secrets] ami_secret`).
    """

    NOTE: ClassVar[str] = (
        "EXTENSION. The Asterisk Manager Interface subset Allmon3 and Supermon poll (RptStatus "
        "XStat and SawStat, rpt stats/lstats/nodes/xnode, rpt cmd ilink, rpt fun). Its password "
        "comes from the secrets source (see [secrets]); it is never in this file unless source = "
        '"config".'
    )

    enabled: bool = False
    bind: Annotated[
        Address,
        key(
            "Where AMI listens. AMI sends the password and every command in clear text, so a "
            "non-loopback address is refused unless allow_remote = true.",
            parse=bind_address,
        ),
    ] = _LOOPBACK_AMI
    allow_remote: bool = False
    username: Annotated[
        str,
        key("The login name (Allmon3's `user`, Supermon's `user`).", parse=_ami_username),
    ] = "admin"
    max_connections: Annotated[
        int,
        key(
            "Connections served at once (1-1000); Allmon3 opens one per command besides its "
            "poller.",
            ge=1,
            le=1000,
        ),
    ] = 16
    read_only: Annotated[
        bool,
        key(
            "The user may read everything the dashboards poll (Allmon3 and Supermon only read) "
            "but not change the node: `rpt cmd` and `rpt fun` answer Permission denied.",
            ext=True,
        ),
    ] = False
    login_timeout: Annotated[
        float,
        key(
            "Seconds (1-300) a connection has to log in before it is closed.",
            ext=True,
            ge=1,
            le=300,
        ),
    ] = 30.0
    lockout_after: Annotated[
        int,
        key(
            "Failed logins (1-100) after which a source address (an IPv6 /64) is locked out; "
            "each failure before it waits twice as long for its answer (1 s, 2 s, 4 s, up to "
            "8 s).",
            ext=True,
            ge=1,
            le=100,
        ),
    ] = 5
    lockout_seconds: Annotated[
        int,
        key(
            "How long (60-86400 s) a locked-out source is refused; its failures are also "
            "forgotten after this long without one.",
            ext=True,
            ge=60,
            le=86400,
        ),
    ] = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class PortalConfig:
    """`[portal]`: the web-transceiver portal account used by `wt-guest` links."""

    NOTE: ClassVar[str] = (
        "The web-transceiver portal account, required by wt-guest links. Example values:"
    )

    user: Annotated[
        str,
        key("Portal account name.", parse=_not_blank("the portal account name"), example="N0CALL"),
    ]
    node: Annotated[
        str,
        key(
            "A node the account owns.",
            parse=_not_blank("a node the portal account owns"),
            example="2000",
        ),
    ]
    credential_env: Annotated[
        str,
        key(
            "The NAME of the environment variable holding the portal password (never the "
            "password).",
            parse=env_name("PORTAL_PASSWORD", "the password itself"),
            example="PORTAL_PASSWORD",
        ),
    ]
    url: Annotated[
        str,
        key(
            "The portal's base URL; web-transceiver tokens come from its /api/v2/auth-wt-legacy "
            "API.",
            ext=True,
            parse=_portal_url,
        ),
    ] = PORTAL_URL


@dataclass(frozen=True, slots=True, kw_only=True)
class WireGuardConfig:
    """`[wireguard]` (optional; the spec's "Tunnel section"): every IAX2 datagram goes through a
    userspace WireGuard tunnel to one peer. Absent: plain UDP. See docs/wireguard.md."""

    NOTE: ClassVar[str] = (
        "The tunnel section: with [wireguard], every IAX2 datagram (calls, links, registration, "
        "inbound) goes through a userspace WireGuard tunnel to one peer (a hub, or another node), "
        "with no TUN device and no root; without it, plain UDP. Set up in docs/wireguard.md. "
        "Example values:"
    )

    address: Annotated[
        str,
        key(
            "Our IPv4 address inside the tunnel (wg-quick's Address; a /prefix is accepted and "
            "ignored). The node's IAX2 port there is [listener] bind's port (4569 when that is 0).",
            parse=_tunnel_address,
            example="10.8.0.2",
        ),
    ]
    private_key_env: Annotated[
        str,
        key(
            "The NAME of the environment variable holding our private key (base64, from "
            "`wg genkey` or `node wg-keygen`); never the key itself.",
            parse=env_name("WG_PRIVATE_KEY", "the key itself"),
            example="WG_PRIVATE_KEY",
        ),
    ]
    peer_public_key: Annotated[
        str,
        key(
            "The peer's public key (base64).",
            parse=_public_key,
            example="xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
        ),
    ]
    endpoint: Annotated[
        Address | None,
        key(
            'The peer\'s outer address, "<host>:<port>" (a name is resolved at start). Leave it '
            "out to wait for the peer to make contact (it is then learnt, and followed as it "
            "moves).",
            parse=peer_address,
            example=Address("hub.example.net", 51820),
        ),
    ] = None
    allowed_ips: Annotated[
        tuple[str, ...],
        key(
            'IPv4 networks sent into the tunnel and accepted from it; ["0.0.0.0/0"] sends '
            "everything (registration too) through the peer.",
            parse=_allowed_ips,
            example=("10.8.0.0/24",),
        ),
    ]
    listen_port: Annotated[
        int,
        key(
            "The outer UDP port (0-65535; 0 picks a free one, fine when this node dials its "
            "peer). It binds on [listener] bind's address.",
            ge=0,
            le=65535,
        ),
    ] = 0
    persistent_keepalive: Annotated[
        int,
        key(
            "Seconds between keepalives (0-65535, 0 off). With keepalives the tunnel also keeps "
            "itself up: it handshakes at start and again whenever the session lapses, which a "
            "node behind NAT or CGNAT needs to stay reachable.",
            ge=0,
            le=65535,
        ),
    ] = 25
    preshared_key_env: Annotated[
        str | None,
        key(
            "The NAME of an environment variable holding a preshared key (base64), if the peer "
            "uses one.",
            parse=_optional_env_name("WG_PRESHARED_KEY", "the key itself"),
            example="WG_PRESHARED_KEY",
        ),
    ] = None
