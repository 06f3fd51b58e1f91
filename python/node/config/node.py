"""`NodeConfig`, the whole configuration, and the table of its sections.

`SECTIONS` is the one list of the file's sections, in the order the template writes them: the
loader takes the accepted section names and the required ones from it, the template its layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from node.config import functions as fn
from node.config import network as net
from node.config import station
from node.config.echolink import EchoLinkConfig
from node.config.schema import key
from node.config.values import (
    FORMAT_ALAW,
    FORMAT_SLIN,
    FORMAT_SLIN16,
    FORMAT_ULAW,
    CodecOffer,
    FrozenDict,
)
from node.config.values import node_id as parse_node_id
from node.secrets import SecretSettings

__all__ = [
    "FIRST_NODE_ONLY",
    "NODES_TABLE",
    "SECTIONS",
    "SHARED_KEYS",
    "TOP_KEYS",
    "CodecPolicy",
    "NodeConfig",
    "Section",
]

CodecPolicy = Literal["ulaw_only", "allow_slin", "prefer_slin", "prefer_slin16"]

_CODEC_OFFERS: Mapping[str, CodecOffer] = {
    "ulaw_only": CodecOffer((FORMAT_ULAW, FORMAT_ALAW)),
    "allow_slin": CodecOffer((FORMAT_ULAW, FORMAT_ALAW), frozenset({FORMAT_SLIN})),
    "prefer_slin": CodecOffer((FORMAT_SLIN, FORMAT_ULAW, FORMAT_ALAW)),
    "prefer_slin16": CodecOffer((FORMAT_SLIN16, FORMAT_SLIN, FORMAT_ULAW, FORMAT_ALAW)),
}


@dataclass(frozen=True, slots=True)
class Section:
    """One `[name]` table of the file."""

    name: str
    model: type
    #: The file must have it (`[listener]`, `[control]`).
    required: bool = False
    #: The template writes it switched on (its keys active), not as a commented-out block.
    written: bool = False
    #: Its keys are the operator's (DTMF codes, macro numbers): read by its own reader in the
    #: loader, shown in the template as prose (`[functions]`, `[macro]`, `[schedule]`).
    free: bool = False
    #: Shared by every node the file hosts (the socket, the control channel, the AMI, the
    #: secrets): given once at the top of the file, never inside a `[nodes.<number>]` table.
    shared: bool = False


SECTIONS: tuple[Section, ...] = (
    Section("listener", net.ListenerConfig, required=True, written=True, shared=True),
    Section("control", net.ControlConfig, required=True, written=True, shared=True),
    Section("secrets", net.SecretsConfig, written=True, shared=True),
    Section("register", net.RegisterConfig),
    Section("statpost", net.StatpostConfig),
    Section("bridge", station.BridgeConfig),
    Section("audio", station.AudioConfig),
    Section("usrp", station.UsrpConfig),
    Section("announce", station.AnnounceConfig),
    Section("dtmf", station.DtmfConfig),
    # `[links]` holds its own keys and one `[links.<node_id>]` table per node.
    Section("links", net.LinksKeys),
    Section("keying", station.KeyingConfig),
    Section("radio", station.RadioConfig),
    Section("ami", net.AmiConfig, shared=True),
    Section("portal", net.PortalConfig, shared=True),
    Section("parrot", station.ParrotConfig),
    Section("wireguard", net.WireGuardConfig, shared=True),
    # One EchoLink station per host (UDP 5198/5199 are fixed ports): it joins the first
    # node's conference.
    Section("echolink", EchoLinkConfig, shared=True),
    Section("rpt", fn.RptConfig),
    Section("functions", fn.FunctionsSection, free=True),
    Section("macro", fn.MacroSection, free=True),
    Section("schedule", fn.ScheduleSection, free=True),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeConfig:
    """The whole configuration. `NodeConfig()` is the safe default."""

    listener: net.ListenerConfig = field(default_factory=net.ListenerConfig)
    register: net.RegisterConfig | None = None
    control: net.ControlConfig = field(default_factory=net.ControlConfig)
    secrets: net.SecretsConfig = field(default_factory=net.SecretsConfig)
    bridge: station.BridgeConfig = field(default_factory=station.BridgeConfig)
    audio: station.AudioConfig = field(default_factory=station.AudioConfig)
    #: `[usrp]`: None when the section is absent (no USRP radio).
    usrp: station.UsrpConfig | None = None
    #: This node's number: the top-level key, else `[register] node_id` (filled in by
    #: `__post_init__`, so every user reads one attribute); None when neither is given.
    node_id: Annotated[
        str | None,
        key(
            "This node's number, whether or not it registers: the number links, the link "
            "dialect, status posts and AMI know it by. A node that registers may give it here or "
            "as [register] node_id (both: they must be the same number); a private node that "
            "never registers (AllStarLink's private numbers such as 1999) gives it only here.",
            ext=True,
            show="off",
            example="2000",
            parse=parse_node_id,
        ),
    ] = None
    codec_policy: Annotated[
        CodecPolicy,
        key(
            "Offered codecs, best first:\n"
            "  ulaw_only     = mu-law, A-law\n"
            "  allow_slin    = mu-law, A-law, slin (slin only if the peer asks for it)\n"
            "  prefer_slin   = slin, mu-law, A-law\n"
            "  prefer_slin16 = slin16, slin, mu-law, A-law (the station mixes at 16 kHz)\n"
            "A caller whose requested format is in the common set gets that format; a caller "
            'with no codec in common is rejected ("Unable to negotiate codec", cause 65).\n'
            'Allowed: "ulaw_only", "allow_slin", "prefer_slin", "prefer_slin16".'
        ),
    ] = "prefer_slin16"
    announce: station.AnnounceConfig = field(default_factory=station.AnnounceConfig)
    dtmf: station.DtmfConfig = field(default_factory=station.DtmfConfig)
    links: Mapping[str, net.LinkConfig] = field(default_factory=FrozenDict)
    #: *Extension* (`[links] verify_source_ip`): refuse an inbound link whose source address
    #: is not the address its node number resolves to, as app_rpt does.
    verify_source_ip: bool = False
    keying: station.KeyingConfig = field(default_factory=station.KeyingConfig)
    radio: station.RadioConfig = field(default_factory=station.RadioConfig)
    ami: net.AmiConfig = field(default_factory=net.AmiConfig)
    #: *Extension* (`[links] nodes_file`): an extnodes-format file resolving node numbers
    #: (`<node>=radio@<ip>:<port>/<node>,<ip>`); None when unset. Relative paths in the file are
    #: resolved against the config file's directory.
    nodes_file: Path | None = None
    #: *Extension* (`[links] dns`, `dns_domain`, `dns_servers`, `dns_timeout_ms`).
    dns: net.DnsConfig = field(default_factory=net.DnsConfig)
    #: *Extension* (`[links] warn_loss_pct`, `warn_rtt_ms`): when a link is reported degraded.
    link_warn_loss_pct: float = 5.0
    link_warn_rtt_ms: int = 500
    #: *Extension* (`[statpost]`): None when the section is absent (no status posts).
    statpost: net.StatpostConfig | None = None
    portal: net.PortalConfig | None = None
    parrot: station.ParrotConfig = field(default_factory=station.ParrotConfig)
    #: `[wireguard]`: None when the section is absent (plain UDP).
    wireguard: net.WireGuardConfig | None = None
    #: `[echolink]`: None when the section is absent (no EchoLink station).
    echolink: EchoLinkConfig | None = None
    #: *Extension* `[rpt]`: telemetry, tail messages, the startup macro.
    rpt: fn.RptConfig = field(default_factory=fn.RptConfig)
    #: `[functions]`: None when the section is absent (ASL3's shipped table applies).
    functions: tuple[fn.Function, ...] | None = None
    #: `[macro]`: macro number -> DTMF digits.
    macro: Mapping[str, str] = field(default_factory=FrozenDict)
    #: `[schedule]`: when macros run.
    schedule: tuple[fn.ScheduleEntry, ...] = ()
    #: `[nodes.<number>]`: the further nodes this file hosts beside this one (the first), each
    #: a whole configuration sharing this one's `SHARED_KEYS`; empty for a one-node file.
    nodes: tuple[NodeConfig, ...] = ()
    #: The file this was loaded from; None for a config built in code. Not part of equality.
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.node_id is None and self.register is not None:
            # Frozen: the one place the number is derived. A differing pair is kept as given,
            # for the loader's rule to report (`rules.check_node`).
            object.__setattr__(self, "node_id", self.register.node_id)

    @property
    def hosted(self) -> tuple[NodeConfig, ...]:
        """Every node of the host, the first (this file's top level) first."""
        return (self, *self.nodes) if self.nodes else (self,)

    @property
    def function_table(self) -> tuple[fn.Function, ...]:
        """The DTMF function table in force: `[functions]`, or ASL3's shipped one."""
        return fn.DEFAULT_FUNCTIONS if self.functions is None else self.functions

    @property
    def station_rate(self) -> int:
        """Sample rate of the station's own capture, playback and mixing."""
        return 16000 if self.codec_policy == "prefer_slin16" else 8000

    @property
    def codec_offer(self) -> CodecOffer:
        """The formats offered to peers, best first, per `codec_policy`."""
        return _CODEC_OFFERS[self.codec_policy]

    @property
    def secret_settings(self) -> SecretSettings:
        """What the secret store needs of this configuration, as plain values."""
        wg = self.wireguard
        return SecretSettings(
            config_file=self.path,
            source=self.secrets.source,
            # The registration's own username: only a node that registers has a password.
            node_id=self.register.node_id if self.register is not None else None,
            inline_secret=self.secrets.secret,
            inline_ami_secret=self.secrets.ami_secret,
            ami_user=self.ami.username if self.ami.enabled else None,
            peers_file=self.secrets.peers_file,
            portal_env=self.portal.credential_env if self.portal is not None else None,
            wg_private_env=wg.private_key_env if wg is not None else None,
            wg_preshared_env=wg.preshared_key_env if wg is not None else None,
            further_nodes=tuple(n.register.node_id for n in self.nodes if n.register is not None),
            echolink=self.echolink is not None,
        )


#: Keys of the file that belong to no section (they go above the first `[section]`).
TOP_KEYS: tuple[str, ...] = ("node_id", "codec_policy")

#: What every node of a host shares: the shared sections and `codec_policy` (one station rate
#: for the engine that mixes every node's conference).
SHARED_KEYS: tuple[str, ...] = (*(s.name for s in SECTIONS if s.shared), "codec_policy")
#: Shared sections a further node does not get a copy of: `[echolink]` is one EchoLink station
#: per host (UDP 5198/5199 are fixed ports), whose stations are links of the first node.
FIRST_NODE_ONLY: tuple[str, ...] = ("echolink",)

#: The table that declares the further nodes of a host (`[nodes.<number>]`).
NODES_TABLE = "nodes"
