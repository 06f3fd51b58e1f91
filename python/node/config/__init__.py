"""The TOML configuration file, read into frozen dataclasses.

Every section and key of the spec ("Configuration file") is here, plus a few the later work
needs, each marked *extension* in the template. Nothing is silently ignored: an unknown section
or key, a value of the wrong type and a value outside its set are `ConfigError`s naming the file,
the dotted key and what is accepted. Error messages never repeat a string value from the file,
because an operator may have pasted a password into the wrong key.

Each key is declared once, on its section's dataclass (`schema.key`): msgspec checks its type and
bounds, the loader reads it, and the template is generated from the same declaration.
`NodeConfig()` is the safe default configuration; `write_template` writes a commented file that
loads back to exactly that.

The rooms: `values` (value types and their parsers), `schema` (how a key is declared),
`network` and `station` (the sections), `node` (`NodeConfig` and the list of sections), `rules`
(what keys take together, and warnings), `loader` (file to `NodeConfig`), `template`.
"""

from __future__ import annotations

from node.config.loader import load_config
from node.config.network import (
    AMI_PORT,
    CONTROL_PORT,
    IAX2_PORT,
    AmiConfig,
    ControlConfig,
    DnsConfig,
    LinkConfig,
    ListenerConfig,
    PortalConfig,
    RegisterConfig,
    SecretsConfig,
    StatpostConfig,
    WireGuardConfig,
)
from node.config.node import NodeConfig
from node.config.station import (
    CM108_BUTTONS,
    EVENT_NAMES,
    GAIN_DB_MAX,
    GAIN_DB_MIN,
    INBAND_SOURCES,
    SERIAL_CARRIER_PINS,
    SERIAL_PTT_PINS,
    SPEC_EVENT_NAMES,
    AnnounceConfig,
    AnnounceEventConfig,
    AudioConfig,
    BridgeConfig,
    DtmfConfig,
    KeyingConfig,
    ParrotConfig,
    RadioConfig,
    TtsConfig,
    UsrpConfig,
)
from node.config.template import iter_template_keys, write_template
from node.config.values import (
    ASL_DNS_DOMAIN,
    ASL_REGISTER_URL,
    ASL_STATPOST_URL,
    FORMAT_ALAW,
    FORMAT_SLIN,
    FORMAT_SLIN16,
    FORMAT_ULAW,
    PORTAL_URL,
    Address,
    CodecOffer,
    FrozenDict,
)

__all__ = [
    "AMI_PORT",
    "ASL_DNS_DOMAIN",
    "ASL_REGISTER_URL",
    "ASL_STATPOST_URL",
    "CM108_BUTTONS",
    "CONTROL_PORT",
    "EVENT_NAMES",
    "FORMAT_ALAW",
    "FORMAT_SLIN",
    "FORMAT_SLIN16",
    "FORMAT_ULAW",
    "GAIN_DB_MAX",
    "GAIN_DB_MIN",
    "IAX2_PORT",
    "INBAND_SOURCES",
    "PORTAL_URL",
    "SERIAL_CARRIER_PINS",
    "SERIAL_PTT_PINS",
    "SPEC_EVENT_NAMES",
    "Address",
    "AmiConfig",
    "AnnounceConfig",
    "AnnounceEventConfig",
    "AudioConfig",
    "BridgeConfig",
    "CodecOffer",
    "ControlConfig",
    "DnsConfig",
    "DtmfConfig",
    "FrozenDict",
    "KeyingConfig",
    "LinkConfig",
    "ListenerConfig",
    "NodeConfig",
    "ParrotConfig",
    "PortalConfig",
    "RadioConfig",
    "RegisterConfig",
    "SecretsConfig",
    "StatpostConfig",
    "TtsConfig",
    "UsrpConfig",
    "WireGuardConfig",
    "iter_template_keys",
    "load_config",
    "write_template",
]
