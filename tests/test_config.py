"""Tests for node.config: defaults, the template, every validation error, codec policy."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import os
import re
import stat
import traceback
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from node.config import (
    FORMAT_ALAW,
    FORMAT_SLIN,
    FORMAT_SLIN16,
    FORMAT_ULAW,
    Address,
    AmiConfig,
    AnnounceEventConfig,
    AudioConfig,
    BridgeConfig,
    ControlConfig,
    DnsConfig,
    DtmfConfig,
    LinkConfig,
    ListenerConfig,
    NodeConfig,
    ParrotConfig,
    PortalConfig,
    RegisterConfig,
    SecretsConfig,
    StatpostConfig,
    TtsConfig,
    WireGuardConfig,
    iter_template_keys,
    load_config,
    write_template,
)
from node.errors import ConfigError

MINIMAL = "[listener]\n[control]\n"


def write(tmp_path: Path, text: str, name: str = "node.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str) -> NodeConfig:
    return load_config(write(tmp_path, text))


# --- defaults -----------------------------------------------------------------------------------


def test_defaults_are_the_documented_safe_values() -> None:
    c = NodeConfig()
    assert c.listener == ListenerConfig(
        bind=Address("0.0.0.0", 4569),
        answer="auto",
        max_calls=8,
        auth="required",
        allowed_nodes=(),
        calltoken="auto",
    )
    assert c.register is None
    assert c.node_id is None
    assert c.control.bind == Address("127.0.0.1", 8730)
    assert c.secrets == SecretsConfig(source="env", secret=None)
    assert c.bridge == BridgeConfig(mode="bridge", mix_minus=True, include_local_radio=False)
    assert c.audio == AudioConfig(input="", output="", backend="none")
    assert c.codec_policy == "prefer_slin16"
    assert c.announce.enabled is False
    assert c.announce.cw_keys_when_idle is False
    assert c.announce.tts.timeout_ms == 4000
    assert set(c.announce.events) == {
        "incoming_call",
        "hangup",
        "registered",
        "register_failed",
        "answered",
        "link_connected",
        "link_disconnected",
    }
    assert c.announce.to_links is False
    assert all(
        e == AnnounceEventConfig(enabled=False, destination="to_monitor")
        for e in c.announce.events.values()
    )
    assert c.dtmf == DtmfConfig(enabled=False, inter_digit_timeout_ms=3000)
    assert dict(c.links) == {}
    assert c.nodes_file is None
    assert c.portal is None
    assert c.parrot == ParrotConfig(
        playback_delay_ms=3000, silence_gap_ms=800, vox_threshold_db=-40.0
    )
    assert c.ami == AmiConfig(
        enabled=False,
        bind=Address("127.0.0.1", 5038),
        allow_remote=False,
        username="admin",
        max_connections=16,
    )
    assert c.secrets.ami_secret is None


def test_minimal_file_loads_to_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    config = load_config(path)
    assert config == NodeConfig()
    assert config.path == path


def test_config_is_frozen_all_the_way_down(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + '[links.2000]\nshape = "standard"\n')
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.codec_policy = "ulaw_only"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.listener.max_calls = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.links["2001"] = LinkConfig()  # type: ignore[index]
    with pytest.raises(TypeError):
        config.announce.events.clear()  # type: ignore[attr-defined]
    assert isinstance(config.listener.allowed_nodes, tuple)


def test_config_supports_asdict_copy_and_hash(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + '[links.2000]\nshape = "standard"\n')
    as_dict = dataclasses.asdict(config)
    assert as_dict["links"]["2000"]["shape"] == "standard"
    assert as_dict["links"]["2000"]["permanent"] is False
    assert as_dict["listener"]["bind"] == {"host": "0.0.0.0", "port": 4569}
    assert copy.deepcopy(config) == config
    assert hash(config) == hash(copy.deepcopy(config))


# --- a full file --------------------------------------------------------------------------------

FULL = """\
codec_policy = "allow_slin"

[listener]
bind = "[::]:14569"
answer = "manual"
max_calls = 3
auth = "optional"
allowed_nodes = ["2001", 2002]
calltoken = "required"

[register]
peer = "register.example.org:4569"
node_id = "2000"
refresh = 120

[control]
bind = "[::1]:9000"

[secrets]
source = "control"

[bridge]
mode = "conference"
mix_minus = false
include_local_radio = true

[audio]
input = "USB"
output = "Speaker"
backend = "cpal"
device_rate = 48000
rx_gain_db = -3
tx_gain_db = 4.5

[announce]
enabled = true
id_mode = "cw"
id_interval_secs = 600
cw_wpm = 25
cw_tone_hz = 700
cw_keys_when_idle = true
callsign = "W1AW/R"

[announce.tts]
enabled = true
binary = "piper"
voice = "/opt/voices/en.onnx"
timeout_ms = 5000
gain_db = -6.5

[announce.events.hangup]
enabled = true
destination = "to_air"

[dtmf]
enabled = true
inter_digit_timeout_ms = 2500
inband_sources = ["local", "calls"]

[links]
nodes_file = "extnodes.txt"

[links.2001]
shape = "wt-guest"

[links.2002]

[portal]
user = "N0CALL"
node = "2000"
credential_env = "PORTAL_PASSWORD"

[parrot]
playback_delay_ms = 1000
silence_gap_ms = 400
vox_threshold_db = -30
"""


def test_full_file(tmp_path: Path) -> None:
    config = load_text(tmp_path, FULL)
    assert config.codec_policy == "allow_slin"
    assert config.listener == ListenerConfig(
        bind=Address("::", 14569),
        answer="manual",
        max_calls=3,
        auth="optional",
        allowed_nodes=("2001", "2002"),
        calltoken="required",
    )
    assert config.register == RegisterConfig(
        peer=Address("register.example.org", 4569), node_id="2000", refresh=120
    )
    assert config.node_id == "2000"
    assert config.control == ControlConfig(bind=Address("::1", 9000))
    assert str(config.control.bind) == "[::1]:9000"
    assert config.control.bind.as_tuple() == ("::1", 9000)
    assert config.secrets.source == "control"
    assert config.bridge == BridgeConfig(
        mode="conference", mix_minus=False, include_local_radio=True
    )
    assert config.audio == AudioConfig(
        input="USB",
        output="Speaker",
        backend="cpal",
        device_rate=48000,
        rx_gain_db=-3.0,
        tx_gain_db=4.5,
    )
    assert isinstance(config.audio.rx_gain_db, float)
    assert config.announce.id_interval_secs == 600
    assert config.announce.cw_tone_hz == 700.0
    assert isinstance(config.announce.cw_tone_hz, float)
    assert config.announce.callsign == "W1AW/R"
    assert config.announce.tts == TtsConfig(
        enabled=True, binary="piper", voice="/opt/voices/en.onnx", timeout_ms=5000, gain_db=-6.5
    )
    assert config.announce.events["hangup"] == AnnounceEventConfig(
        enabled=True, destination="to_air"
    )
    assert config.announce.events["answered"] == AnnounceEventConfig()
    assert config.dtmf == DtmfConfig(
        enabled=True, inter_digit_timeout_ms=2500, inband_sources=("calls", "local")
    )
    assert config.dtmf.inband_on("local") and not config.dtmf.inband_on("links")
    assert dict(config.links) == {"2001": LinkConfig(shape="wt-guest"), "2002": LinkConfig()}
    assert config.nodes_file == tmp_path / "extnodes.txt"
    assert config.portal == PortalConfig(
        user="N0CALL", node="2000", credential_env="PORTAL_PASSWORD"
    )
    assert config.parrot == ParrotConfig(
        playback_delay_ms=1000, silence_gap_ms=400, vox_threshold_db=-30.0
    )


#: A public key (wg(8)'s example) and a [wireguard] section holding the required keys.
WG_PEER_KEY = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
WG = (
    "[wireguard]\naddress = '10.8.0.2'\nprivate_key_env = 'WG_KEY'\n"
    f"peer_public_key = '{WG_PEER_KEY}'\nallowed_ips = ['10.8.0.0/24']\n"
)


def test_wireguard_section(tmp_path: Path) -> None:
    assert load_text(tmp_path, MINIMAL).wireguard is None
    config = load_text(
        tmp_path,
        MINIMAL
        + "[wireguard]\naddress = '10.8.0.2/24'\nprivate_key_env = 'WG_KEY'\n"
        + f"peer_public_key = ' {WG_PEER_KEY}'\nendpoint = '192.0.2.1:51820'\n"
        + "allowed_ips = ['10.8.0.1/24', '192.0.2.7', '0.0.0.0/0']\nlisten_port = 51821\n"
        + "persistent_keepalive = 0\npreshared_key_env = 'WG_PSK'\n",
    )
    assert config.wireguard == WireGuardConfig(
        address="10.8.0.2",
        private_key_env="WG_KEY",
        peer_public_key=WG_PEER_KEY,
        listen_port=51821,
        endpoint=Address("192.0.2.1", 51820),
        # Host bits cleared, as wg(8) reads them; a bare address is one host.
        allowed_ips=("10.8.0.0/24", "192.0.2.7/32", "0.0.0.0/0"),
        persistent_keepalive=0,
        preshared_key_env="WG_PSK",
    )
    # The defaults: any outer port, no endpoint (wait for the peer), keepalive on.
    wg = load_text(tmp_path, MINIMAL + WG).wireguard
    assert wg is not None
    assert (wg.listen_port, wg.endpoint, wg.persistent_keepalive) == (0, None, 25)
    assert wg.preshared_key_env is None
    # An empty preshared_key_env means none, as in the template's prose.
    wg = load_text(tmp_path, MINIMAL + WG + "preshared_key_env = ''\n").wireguard
    assert wg is not None and wg.preshared_key_env is None


def test_wireguard_with_http_registration_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="node.config"):
        load_text(tmp_path, MINIMAL + HTTP_REG + WG)
    assert "method = iax2 registers through the tunnel" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="node.config"):
        load_text(tmp_path, MINIMAL + "[register]\npeer = '10.8.0.1:4569'\nnode_id = '2000'\n" + WG)
    assert "tunnel" not in caplog.text


def test_ami_section(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        MINIMAL
        + "[ami]\nenabled = true\nbind = '127.0.0.2:15038'\nusername = 'allmon'\n"
        + "max_connections = 4\n",
    )
    assert config.ami == AmiConfig(
        enabled=True, bind=Address("127.0.0.2", 15038), username="allmon", max_connections=4
    )


def test_remote_ami_needs_allow_remote_and_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = MINIMAL + "[ami]\nenabled = true\nbind = '0.0.0.0:5038'\nallow_remote = true\n"
    with caplog.at_level(logging.WARNING, logger="node.config"):
        config = load_text(tmp_path, text)
    assert config.ami.bind == Address("0.0.0.0", 5038) and config.ami.allow_remote
    assert "clear text" in caplog.text


def test_http_registration_statpost_and_dns_keys(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        MINIMAL
        + HTTP_REG
        + "url = 'http://127.0.0.1:8080/reg'\nrefresh = 180\n"
        + "[statpost]\nurl = 'https://stats.example.org/uhandler'\ninterval_secs = 600\n"
        + "[links]\ndns = false\ndns_domain = 'Nodes.Example.ORG.'\n"
        + "dns_servers = ['127.0.0.1:5353', '::1', '[2001:db8::53]:5300']\ndns_timeout_ms = 800\n",
    )
    assert config.register == RegisterConfig(
        node_id="2000", method="http", url="http://127.0.0.1:8080/reg", refresh=180
    )
    assert config.register.peer is None
    assert config.statpost == StatpostConfig(
        url="https://stats.example.org/uhandler", interval_secs=600
    )
    assert config.dns == DnsConfig(
        enabled=False,
        domain="nodes.example.org",
        servers=(Address("127.0.0.1", 5353), Address("::1", 53), Address("2001:db8::53", 5300)),
        timeout_ms=800,
    )


def test_http_registration_defaults_to_asl(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + HTTP_REG + "[statpost]\n")
    assert config.register is not None
    assert config.register.url == "https://register.allstarlink.org/"
    assert config.register.refresh == 60
    assert config.statpost == StatpostConfig(url="http://stats.allstarlink.org/uhandler")
    assert NodeConfig().dns == DnsConfig(
        enabled=True, domain="nodes.allstarlink.org", servers=(), timeout_ms=3000
    )


def test_absolute_nodes_file_is_kept(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + '[links]\nnodes_file = "/var/lib/extnodes"\n')
    assert config.nodes_file == Path("/var/lib/extnodes")


def test_empty_nodes_file_means_none(tmp_path: Path) -> None:
    assert load_text(tmp_path, MINIMAL + '[links]\nnodes_file = ""\n').nodes_file is None


@pytest.mark.parametrize(
    ("section", "text", "expected"),
    [
        # The control channel takes loopback addresses only.
        ("control", "127.0.0.1:8730", Address("127.0.0.1", 8730)),
        ("control", "127.10.0.1:1", Address("127.10.0.1", 1)),
        ("control", "localhost:8730", Address("localhost", 8730)),
        ("control", "[::1]:65535", Address("::1", 65535)),
        # Port 0 on a bind lets the OS choose (tests never take fixed ports).
        ("control", "127.0.0.1:0", Address("127.0.0.1", 0)),
        ("listener", "0.0.0.0:4569", Address("0.0.0.0", 4569)),
        ("listener", "192.0.2.7:4569", Address("192.0.2.7", 4569)),
        ("listener", "[2001:db8::1]:4570", Address("2001:db8::1", 4570)),
        ("listener", "[::]:4569", Address("::", 4569)),
    ],
)
def test_bind_addresses(tmp_path: Path, section: str, text: str, expected: Address) -> None:
    tables = {"listener": "", "control": "", section: f'bind = "{text}"\n'}
    config = load_text(tmp_path, "".join(f"[{name}]\n{body}" for name, body in tables.items()))
    bind = getattr(config, section).bind
    assert bind == expected
    assert str(bind) == text
    assert bind.is_loopback is (section == "control")


@pytest.mark.parametrize(
    "peer", ["192.0.2.1:4569", "[2001:db8::2]:4569", "reg.example.org:4569", "localhost:1"]
)
def test_register_peer_forms(tmp_path: Path, peer: str) -> None:
    config = load_text(tmp_path, MINIMAL + f'[register]\npeer = "{peer}"\nnode_id = "2000"\n')
    assert config.register is not None
    assert str(config.register.peer) == peer


def test_integer_node_ids_are_accepted_as_strings(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + '[register]\npeer = "192.0.2.1:4569"\nnode_id = 2000\n')
    assert config.register is not None
    assert config.register.node_id == "2000"


def test_a_node_that_does_not_register_states_its_number_at_the_top(tmp_path: Path) -> None:
    # A private node (AllStarLink's 1999) never registers but links under its number.
    config = load_text(tmp_path, "node_id = 1999\n" + MINIMAL + "[statpost]\n")
    assert config.register is None
    assert config.node_id == "1999"
    # The number is not a registration: no password is asked for.
    assert config.secret_settings.node_id is None


def test_the_number_may_be_given_at_the_top_and_in_register_alike(tmp_path: Path) -> None:
    reg = '[register]\npeer = "192.0.2.1:4569"\nnode_id = "2000"\n'
    both = load_text(tmp_path, 'node_id = "2000"\n' + MINIMAL + reg)
    only_register = load_text(tmp_path, MINIMAL + reg)
    assert both.node_id == only_register.node_id == "2000"
    assert both == only_register
    assert both.secret_settings.node_id == "2000"


def test_conflicting_numbers_name_the_file_both_keys_and_both_values(tmp_path: Path) -> None:
    text = 'node_id = "1999"\n' + MINIMAL + '[register]\npeer = "192.0.2.1:4569"\nnode_id = 2000\n'
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert info.value.path == str(path) and info.value.key == "node_id"
    for part in ("1999", "register.node_id is 2000", "the same number in both keys"):
        assert part in message


def test_placeholder_allowlist_loads_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Spec rule 3: an allowlist holding only a placeholder admits nobody. It loads (no caller
    # has that username) and the operator is told.
    with caplog.at_level(logging.WARNING, logger="node.config"):
        config = load_text(tmp_path, '[listener]\nallowed_nodes = ["<node_id>"]\n[control]\n')
    assert config.listener.allowed_nodes == ("<node_id>",)
    assert "allowed_nodes" in caplog.text


def test_open_listener_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="node.config"):
        load_text(tmp_path, '[listener]\nauth = "off"\n[control]\n')
    assert "every caller is admitted" in caplog.text


# --- codec policy -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "preferred", "extra", "rate"),
    [
        ("ulaw_only", (FORMAT_ULAW, FORMAT_ALAW), set(), 8000),
        ("allow_slin", (FORMAT_ULAW, FORMAT_ALAW), {FORMAT_SLIN}, 8000),
        ("prefer_slin", (FORMAT_SLIN, FORMAT_ULAW, FORMAT_ALAW), set(), 8000),
        ("prefer_slin16", (FORMAT_SLIN16, FORMAT_SLIN, FORMAT_ULAW, FORMAT_ALAW), set(), 16000),
    ],
)
def test_codec_policy_table(
    tmp_path: Path, policy: str, preferred: tuple[int, ...], extra: set[int], rate: int
) -> None:
    config = load_text(tmp_path, f'codec_policy = "{policy}"\n' + MINIMAL)
    offer = config.codec_offer
    assert offer.preferred == preferred
    assert offer.accept_extra == frozenset(extra)
    assert offer.accepted == frozenset(preferred) | frozenset(extra)
    cap = 0
    for fmt in preferred:
        cap |= fmt
    assert offer.capability == cap
    assert config.station_rate == rate
    # slin16 is offered, or accepted, only under prefer_slin16.
    assert offer.accepts(FORMAT_SLIN16) == (policy == "prefer_slin16")


def test_format_bits_match_iax2() -> None:
    assert (FORMAT_ULAW, FORMAT_ALAW, FORMAT_SLIN, FORMAT_SLIN16) == (0x4, 0x8, 0x40, 0x8000)


# --- template -----------------------------------------------------------------------------------


def test_radio_carrier_shares_the_cm108_ptt_device(tmp_path: Path) -> None:
    radio = load_text(tmp_path, CM108 + "carrier = 'cm108'\n").radio
    assert (radio.carrier_device, radio.ptt_pin, radio.carrier_pin) == ("/dev/hidraw0", None, None)
    radio = load_text(tmp_path, CM108 + "carrier = 'cm108'\nptt_pin = 4\ncarrier_pin = 2\n").radio
    assert (radio.ptt_pin, radio.carrier_pin) == (4, 2)


def test_template_loads_to_exactly_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "node.toml"
    write_template(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    config = load_config(path)
    assert config == NodeConfig()
    assert config.secrets.secret is None
    # Nothing else (temporary files) left behind.
    assert os.listdir(path.parent) == ["node.toml"]


def test_template_replaces_an_existing_file(tmp_path: Path) -> None:
    path = write(tmp_path, "garbage = [")
    path.chmod(0o600)
    write_template(path)
    assert load_config(path) == NodeConfig()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def _uncomment(text: str, sections: set[str] | None) -> str:
    """Switch on `#setting` lines (the template's convention) in the given sections (all: None)."""
    out = []
    current = ""
    for line in text.splitlines():
        header = re.match(r"^#?\[([^\]]+)\]", line)
        if header:
            current = header.group(1)
        if re.match(r"^#(\[|[a-z_]+ = )", line) and (sections is None or current in sections):
            line = line[1:]
        out.append(line)
    return "\n".join(out) + "\n"


def test_switched_off_default_blocks_hold_the_defaults(tmp_path: Path) -> None:
    from node._template import TEMPLATE

    sections = {
        "bridge",
        "audio",
        "announce",
        "announce.tts",
        "dtmf",
        "ami",
        "parrot",
        *(f"announce.events.{e}" for e in NodeConfig().announce.events),
    }
    text = _uncomment(TEMPLATE, sections)
    assert text.count("\n[") > TEMPLATE.count("\n[")
    assert load_text(tmp_path, text) == NodeConfig()


def test_every_switched_off_example_loads(tmp_path: Path) -> None:
    from node._template import TEMPLATE

    config = load_text(tmp_path, _uncomment(TEMPLATE, None))
    assert config.register == RegisterConfig(
        peer=Address("register.example.org", 4569), node_id="2000", refresh=60
    )
    assert dict(config.links) == {
        "2000": LinkConfig(
            shape="standard",
            username="radio",
            addr=Address("192.0.2.10", 4569),
            normalize=True,
        )
    }
    assert config.portal is not None
    assert config.statpost == StatpostConfig()
    assert config.wireguard == WireGuardConfig(
        address="10.8.0.2",
        private_key_env="WG_PRIVATE_KEY",
        peer_public_key=WG_PEER_KEY,
        endpoint=Address("hub.example.net", 51820),
        allowed_ips=("10.8.0.0/24",),
        preshared_key_env="WG_PRESHARED_KEY",
    )
    assert config.usrp is not None and config.usrp.network == "analog"
    assert config.echolink is not None and config.echolink.callsign == "N0CALL-L"
    assert (
        dataclasses.replace(
            config,
            node_id=None,
            register=None,
            links={},
            portal=None,
            statpost=None,
            wireguard=None,
            usrp=None,
            echolink=None,
        )
        == NodeConfig()
    )


def _template_settings(text: str) -> dict[str, Any]:
    """`{"section.key": value}` of every setting the template writes, on or switched off."""
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    settings: dict[str, Any] = {}
    table = ""
    for line in text.splitlines():
        header = re.match(r"^#?\[([^\]]+)\]", line)
        if header:
            table = header.group(1)
        setting = re.match(r"^#? ?([a-z_0-9]+ = .*)$", line)
        if setting and not line.startswith("#  "):
            with contextlib.suppress(tomllib.TOMLDecodeError):
                ((name, value),) = tomllib.loads(setting.group(1)).items()
                settings[f"{table}.{name}" if table else name] = value
    return settings


def test_template_is_generated_from_the_declarations() -> None:
    # Every key the template writes shows its declared default (or its declared example), in
    # the table it belongs to: text and loader read the same declaration.
    from node._template import TEMPLATE
    from node.config.node import SECTIONS, TOP_KEYS, NodeConfig
    from node.config.schema import keys_of

    def plain(value: Any) -> Any:
        if isinstance(value, Address):
            return str(value)
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        return "" if value is None else value

    settings = _template_settings(TEMPLATE)
    declared = {k.name: k for k in keys_of(NodeConfig) if k.name in TOP_KEYS}
    for section in SECTIONS:
        tables = [(section.name, section.model)]
        if section.name == "links":
            tables.append(("links.2000", LinkConfig))
        for name, model in tables:
            for key in keys_of(model):
                if key.section is not None:
                    tables.append((f"{name}.{key.name}", key.section))
                elif key.tables:
                    model_of = type(next(iter(key.default.values())))
                    tables += [(f"{name}.{key.name}.{t}", model_of) for t in key.tables]
                elif key.show != "hidden":
                    declared[f"{name}.{key.name}"] = key
    assert set(settings) == set(declared)
    for dotted, key in declared.items():
        assert settings[dotted] == plain(key.shown), dotted


def test_template_mentions_every_key_and_no_secret_value() -> None:
    from node._template import TEMPLATE

    for dotted in iter_template_keys():
        leaf = dotted.rsplit(".", 1)[-1]
        assert re.search(rf"(?m)^#?\s*{leaf} = ", TEMPLATE), dotted
    # The inline secret appears only as prose, never as a setting (active or switched off).
    assert not re.search(r"(?m)^#?secret\s*=", TEMPLATE)
    assert 'secret = ""' in TEMPLATE


# --- errors -------------------------------------------------------------------------------------

HTTP_REG = "[register]\nmethod = 'http'\nnode_id = '2000'\n"
# Beginnings of the cases below, so that each case is one line.
REG = MINIMAL + "[register]\npeer = '192.0.2.1:4569'\n"
PEER = MINIMAL + "[register]\nnode_id = '1'\n"
PORTAL = MINIMAL + "[portal]\nuser = 'a'\nnode = '1'\n"
EVENT = MINIMAL + "[announce.events.hangup]\n"
ANNOUNCE = MINIMAL + "[announce]\nenabled = true\n"
AUDIO = MINIMAL + "[audio]\n"
ULAW = "codec_policy = 'ulaw_only'\n"
DTMF = MINIMAL + "[dtmf]\n"
STATPOST = MINIMAL + HTTP_REG + "[statpost]\n"
RADIO = MINIMAL + "[radio]\n"
CM108 = RADIO + "ptt = 'cm108'\nptt_device = '/dev/hidraw0'\n"

# (file text, dotted key named by the error, a fragment of the accepted values or None)
BAD: list[tuple[str, str | None, str | None]] = [
    # unknown sections and keys
    (MINIMAL + "[tunnel]\nx = 1\n", "tunnel", "[listener]"),
    (MINIMAL + "[Listener]\n", "Listener", "[listener]"),
    ("stray = 1\n" + MINIMAL, "stray", "codec_policy"),
    (MINIMAL + "codec_policy = 'ulaw_only'\n", "control.codec_policy", None),
    (MINIMAL + "node_id = '1999'\n", "control.node_id", None),
    ("[listener]\nport = 4569\n[control]\n", "listener.port", "bind"),
    ("[listener]\n[control]\nbind = '127.0.0.1:8730'\nauth = 'off'\n", "control.auth", "bind"),
    (MINIMAL + "[secrets]\npassword = 'x'\n", "secrets.password", "source"),
    (MINIMAL + "[announce]\nvolume = 3\n", "announce.volume", "id_mode"),
    (MINIMAL + "[announce.tts]\nspeed = 1\n", "announce.tts.speed", "binary"),
    (MINIMAL + "[announce.events.ringing]\n", "announce.events.ringing", "incoming_call"),
    (EVENT + "where = 'x'\n", "announce.events.hangup.where", "destination"),
    (MINIMAL + "[links.2000]\ncolour = 'x'\n", "links.2000.colour", "shape"),
    (MINIMAL + "[links.2000]\nmode = 'x'\n", "links.2000.mode", "monitor"),
    (MINIMAL + "[links.2000]\nnetwork = 'dmr'\n", "links.2000.network", "dstar"),
    (MINIMAL + "[links.2000]\naddr = 'nope'\n", "links.2000.addr", "host:port"),
    (MINIMAL + "[links.2000]\nusername = 'a b'\n", "links.2000.username", "radio"),
    (MINIMAL + "[links]\nverify_source_ip = 1\n", "links.verify_source_ip", "true"),
    (MINIMAL + "[keying]\ntx_timeout_secs = 0\n", "keying.tx_timeout_secs", "3600"),
    (MINIMAL + "[links.abc]\n", "links.abc", "nodes_file"),
    (MINIMAL + "[links]\nshape = 'standard'\n", "links.shape", "nodes_file"),
    (MINIMAL + "[parrot]\ndelay = 1\n", "parrot.delay", "playback_delay_ms"),
    (MINIMAL + "[dtmf]\ntimeout = 1\n", "dtmf.timeout", "inter_digit_timeout_ms"),
    (MINIMAL + "[bridge]\nparrot = true\n", "bridge.parrot", "mode"),
    (MINIMAL + "[audio]\ndevice = 'x'\n", "audio.device", "backend"),
    (PORTAL + "credential_env='X'\npassword='p'\n", "portal.password", "user"),
    # wrong types
    ("[listener]\nmax_calls = '8'\n[control]\n", "listener.max_calls", "integer"),
    ("[listener]\nmax_calls = true\n[control]\n", "listener.max_calls", "integer"),
    ("[listener]\nmax_calls = 8.0\n[control]\n", "listener.max_calls", "integer"),
    ("[listener]\nbind = 4569\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nallowed_nodes = '2000'\n[control]\n", "listener.allowed_nodes", "array"),
    ("[listener]\nallowed_nodes = [true]\n[control]\n", "listener.allowed_nodes[0]", None),
    ("[listener]\nallowed_nodes = ['2000', '']\n[control]\n", "listener.allowed_nodes[1]", None),
    ("listener = 1\n[control]\n", "listener", None),
    (MINIMAL + "[bridge]\nmix_minus = 'yes'\n", "bridge.mix_minus", "true, false"),
    (MINIMAL + "[bridge]\nmix_minus = 1\n", "bridge.mix_minus", "true, false"),
    (MINIMAL + "[announce]\ncw_tone_hz = 'high'\n", "announce.cw_tone_hz", "number"),
    (MINIMAL + "[announce]\ncw_tone_hz = true\n", "announce.cw_tone_hz", "number"),
    (MINIMAL + "[announce]\ncw_tone_hz = nan\n", "announce.cw_tone_hz", "number"),
    (MINIMAL + "[announce.tts]\ngain_db = inf\n", "announce.tts.gain_db", "number"),
    (MINIMAL + "[audio]\ninput = 3\n", "audio.input", None),
    (MINIMAL + "[secrets]\nsource = ['env']\n", "secrets.source", "env"),
    (MINIMAL + "[dtmf]\nenabled = 2024-01-01\n", "dtmf.enabled", "true, false"),
    (MINIMAL + "[announce]\nevents = 3\n", "announce.events", None),
    (REG + "node_id = 2000.5\n", "register.node_id", "digits"),
    (REG + "node_id = 'W1AW'\n", "register.node_id", "digits"),
    (MINIMAL + "[register]\npeer = '192.0.2.1:4569'\nnode_id = -1\n", "register.node_id", "digits"),
    ("node_id = 'W1AW'\n" + MINIMAL, "node_id", "digits"),
    ("node_id = -1999\n" + MINIMAL, "node_id", "digits"),
    # one node, one number: the top-level node_id and [register]'s must agree
    ("node_id = '1999'\n" + REG + "node_id = '2000'\n", "node_id", "the same number"),
    # out of range
    ("[listener]\nmax_calls = 0\n[control]\n", "listener.max_calls", "1 to 32766"),
    ("[listener]\nmax_calls = 40000\n[control]\n", "listener.max_calls", "1 to 32766"),
    (REG + "node_id = '1'\nrefresh = 5\n", "register.refresh", "10 to 3600"),
    (DTMF + "inter_digit_timeout_ms = -1\n", "dtmf.inter_digit_timeout_ms", "100 to 60000"),
    (MINIMAL + "[announce]\ncw_wpm = 100\n", "announce.cw_wpm", "5 to 60"),
    (MINIMAL + "[dtmf]\ninband_sources = ['radio']\n", "dtmf.inband_sources[0]", "local"),
    (MINIMAL + "[dtmf]\ninband_sources = 'calls'\n", "dtmf.inband_sources", "links"),
    (MINIMAL + "[dtmf]\ninband = 'yes'\n", "dtmf.inband", "true, false"),
    (MINIMAL + "[announce]\ncw_tone_hz = 5000.0\n", "announce.cw_tone_hz", "200.0 to 3400.0"),
    (MINIMAL + "[parrot]\nvox_threshold_db = 3.0\n", "parrot.vox_threshold_db", "-96.0 to 0.0"),
    # bad enum values
    ("codec_policy = 'opus'\n" + MINIMAL, "codec_policy", "prefer_slin16"),
    ("[listener]\nanswer = 'sometimes'\n[control]\n", "listener.answer", "auto, manual"),
    ("[listener]\nauth = 'md5'\n[control]\n", "listener.auth", "required, optional, off"),
    ("[listener]\ncalltoken = 'yes'\n[control]\n", "listener.calltoken", "required, auto, off"),
    (MINIMAL + "[secrets]\nsource = 'vault'\n", "secrets.source", "env, control, config"),
    (MINIMAL + "[bridge]\nmode = 'echo'\n", "bridge.mode", "conference, parrot"),
    (MINIMAL + "[audio]\nbackend = 'alsa'\n", "audio.backend", "cpal, none"),
    (AUDIO + "device_rate = 44100\n", "audio.device_rate", "0 (automatic), 16000, 48000"),
    (ULAW + AUDIO + "device_rate = 16000\n", "audio.device_rate", "0 (automatic), 8000, 48000"),
    (MINIMAL + "[audio]\ndevice_rate = 96000\n", "audio.device_rate", "0 to 48000"),
    (MINIMAL + "[audio]\nrx_gain_db = 21\n", "audio.rx_gain_db", "-40.0 to 20.0"),
    (MINIMAL + "[audio]\ntx_gain_db = -40.5\n", "audio.tx_gain_db", "-40.0 to 20.0"),
    (MINIMAL + "[audio]\ntx_gain_db = '3'\n", "audio.tx_gain_db", "-40.0 to 20.0"),
    (MINIMAL + "[announce]\nid_mode = 'voice'\n", "announce.id_mode", "cw, tts, off"),
    (EVENT + "destination = 'air'\n", "announce.events.hangup.destination", "to_air, to_monitor"),
    (MINIMAL + "[links.2000]\nshape = 'guest'\n", "links.2000.shape", "standard, wt-guest"),
    ("codec_policy = 'ULAW_ONLY'\n" + MINIMAL, "codec_policy", "ulaw_only"),
    # socket addresses
    ("[listener]\nbind = '0.0.0.0'\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nbind = ':4569'\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nbind = '0.0.0.0:port'\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nbind = '0.0.0.0:-1'\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nbind = '0.0.0.0:65536'\n[control]\n", "listener.bind", "0 to 65535"),
    ("[listener]\nbind = '::1:4569'\n[control]\n", "listener.bind", "[ipv6]:port"),
    ("[listener]\nbind = '[::1]4569'\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nbind = '[host]:4569'\n[control]\n", "listener.bind", "[ipv6]:port"),
    ("[listener]\nbind = '[::1'\n[control]\n", "listener.bind", "host:port"),
    ("[listener]\nbind = '256.1.1.1:4569'\n[control]\n", "listener.bind", "IP address"),
    ("[listener]\nbind = 'myhost:4569'\n[control]\n", "listener.bind", "IP address"),
    ("[listener]\nbind = '0.0.0.0:４５６９'\n[control]\n", "listener.bind", "host:port"),
    (PEER + "peer = 'reg.example.org:0'\n", "register.peer", "1 to 65535"),
    (PEER + "peer = 'reg.example.org'\n", "register.peer", "host:port"),
    (PEER + "peer = 'bad_host!:4569'\n", "register.peer", "host:port"),
    (MINIMAL + "[register]\npeer = '-bad.org:4569'\nnode_id = '1'\n", "register.peer", "host:port"),
    # non-loopback control
    ("[listener]\n[control]\nbind = '0.0.0.0:8730'\n", "control.bind", "loopback"),
    ("[listener]\n[control]\nbind = '192.0.2.5:8730'\n", "control.bind", "loopback"),
    ("[listener]\n[control]\nbind = '[::]:8730'\n", "control.bind", "loopback"),
    ("[listener]\n[control]\nbind = '[2001:db8::1]:8730'\n", "control.bind", "loopback"),
    # required sections and keys
    ("[control]\n", "listener", None),
    ("[listener]\n", "control", None),
    ("", "listener", None),
    (MINIMAL + "[register]\nnode_id = '2000'\n", "register.peer", None),
    (MINIMAL + "[register]\npeer = '192.0.2.1:4569'\n", "register.node_id", None),
    (MINIMAL + "[portal]\nuser = 'a'\nnode = '1'\n", "portal.credential_env", None),
    (MINIMAL + "[portal]\nuser = ''\nnode = '1'\ncredential_env = 'X'\n", "portal.user", None),
    (MINIMAL + "[portal]\nuser = 'a'\nnode = ' '\ncredential_env = 'X'\n", "portal.node", None),
    (PORTAL + "credential_env = 'hunter 2'\n", "portal.credential_env", "PORTAL_PASSWORD"),
    # [wireguard]
    (MINIMAL + "[wireguard]\naddress = '10.0.0.1'\n", "wireguard.private_key_env", None),
    (MINIMAL + WG.replace("allowed_ips", "allowed"), "wireguard.allowed", "allowed_ips"),
    (MINIMAL + WG + "mtu = 1420\n", "wireguard.mtu", "listen_port"),
    (MINIMAL + WG.replace("'10.8.0.2'", "'fd00::2'"), "wireguard.address", "10.8.0.2"),
    (MINIMAL + WG.replace("'10.8.0.2'", "'10.8.0'"), "wireguard.address", "10.8.0.2"),
    (MINIMAL + WG.replace("'10.8.0.2'", "'0.0.0.0'"), "wireguard.address", "10.8.0.2"),
    (MINIMAL + WG.replace("'10.8.0.2'", "'127.0.0.1'"), "wireguard.address", "10.8.0.2"),
    (MINIMAL + WG.replace("'10.8.0.2'", "2"), "wireguard.address", None),
    (MINIMAL + WG.replace("'WG_KEY'", "'2KEY'"), "wireguard.private_key_env", "WG_PRIVATE_KEY"),
    (MINIMAL + WG.replace(WG_PEER_KEY, "abc"), "wireguard.peer_public_key", "base64"),
    (MINIMAL + WG.replace(WG_PEER_KEY, "A" * 42 + "=="), "wireguard.peer_public_key", "base64"),
    (MINIMAL + WG.replace(WG_PEER_KEY, WG_PEER_KEY[:-1]), "wireguard.peer_public_key", None),
    (MINIMAL + WG.replace("['10.8.0.0/24']", "[]"), "wireguard.allowed_ips", "0.0.0.0/0"),
    (MINIMAL + WG.replace("['10.8.0.0/24']", "'10.8.0.0/24'"), "wireguard.allowed_ips", None),
    (MINIMAL + WG.replace("'10.8.0.0/24'", "'10.8.0.0/33'"), "wireguard.allowed_ips[0]", None),
    (MINIMAL + WG.replace("'10.8.0.0/24'", "'fd00::/64'"), "wireguard.allowed_ips[0]", "IPv4"),
    (MINIMAL + WG.replace("'10.8.0.0/24'", "24"), "wireguard.allowed_ips[0]", "10.8.0.0/24"),
    (MINIMAL + WG + "endpoint = 'hub'\n", "wireguard.endpoint", "host:port"),
    (MINIMAL + WG + "endpoint = 'hub:0'\n", "wireguard.endpoint", "1 to 65535"),
    (MINIMAL + WG + "listen_port = 70000\n", "wireguard.listen_port", "0 to 65535"),
    (MINIMAL + WG + "persistent_keepalive = -1\n", "wireguard.persistent_keepalive", "65535"),
    (MINIMAL + WG + "preshared_key_env = 'a-b'\n", "wireguard.preshared_key_env", "WG_"),
    # cross-section rules
    (MINIMAL + "[links.2000]\nshape = 'wt-guest'\n", "links.2000.shape", "[portal]"),
    (MINIMAL + "[secrets]\nsource = 'env'\nsecret = 'x'\n", "secrets.secret", None),
    (MINIMAL + "[secrets]\nsecret = 'x'\n", "secrets.secret", None),
    (MINIMAL + "[secrets]\nsource = 'config'\nsecret = 5\n", "secrets.secret", None),
    (MINIMAL + "[secrets]\nsource = 'env'\nami_secret = 'x'\n", "secrets.ami_secret", None),
    (MINIMAL + "[secrets]\nsource = 'config'\nami_secret = 1\n", "secrets.ami_secret", None),
    # AMI
    (MINIMAL + "[ami]\nbind = '0.0.0.0:5038'\n", "ami.bind", "loopback"),
    (MINIMAL + "[ami]\nbind = '[::]:5038'\nenabled = true\n", "ami.bind", "loopback"),
    (MINIMAL + "[ami]\nusername = ''\n", "ami.username", "admin"),
    (MINIMAL + "[ami]\nusername = 'ad min'\n", "ami.username", "admin"),
    (MINIMAL + "[ami]\nusername = '[general]'\n", "ami.username", "admin"),
    (MINIMAL + "[ami]\nmax_connections = 0\n", "ami.max_connections", "1 to 1000"),
    (MINIMAL + "[ami]\nenabled = 'yes'\n", "ami.enabled", "true"),
    (MINIMAL + "[ami]\nsecret = 'x'\n", "ami.secret", "username"),
    (MINIMAL + "[announce.tts]\nenabled = true\n", "announce.tts.binary", "TTS"),
    (ANNOUNCE + "id_interval_secs = 600\n", "announce.callsign", "callsign"),
    (MINIMAL + "[announce]\ncallsign = 'W1AW!'\n", "announce.callsign", "A-Z"),
    (ANNOUNCE + "id_mode = 'tts'\n", "announce.id_mode", "[announce.tts]"),
    # registration methods, status posts, DNS lookup
    (MINIMAL + HTTP_REG.replace("'http'", "'sip'"), "register.method", "iax2, http"),
    (MINIMAL + HTTP_REG + "peer = '192.0.2.1:4569'\n", "register.peer", 'url for method = "http"'),
    (REG + "node_id = '2000'\nurl = 'https://r.org/'\n", "register.url", 'method = "http"'),
    (MINIMAL + HTTP_REG + "url = 'ftp://r.example.org/'\n", "register.url", "https://"),
    (MINIMAL + HTTP_REG + "url = 'https://'\n", "register.url", "https://"),
    (MINIMAL + HTTP_REG + "url = 'https://u:p@r.example.org/'\n", "register.url", None),
    (MINIMAL + HTTP_REG + "url = 'https://r.example.org:0/'\n", "register.url", None),
    (MINIMAL + HTTP_REG + "url = 'https://r.example.org:x/'\n", "register.url", None),
    (MINIMAL + HTTP_REG + "url = 5\n", "register.url", None),
    (MINIMAL + "[statpost]\n", "statpost", "top-level node_id"),
    (STATPOST + "interval_secs = 10\n", "statpost.interval_secs", "30 to 600"),
    (MINIMAL + HTTP_REG + "[statpost]\nurl = 'http://s.org/u?a=1'\n", "statpost.url", None),
    (MINIMAL + HTTP_REG + "[statpost]\nnode = '2000'\n", "statpost.node", "interval_secs"),
    (MINIMAL + "[links]\ndns = 'yes'\n", "links.dns", "true, false"),
    (MINIMAL + "[links]\ndns_domain = 'bad domain!'\n", "links.dns_domain", "domain"),
    (MINIMAL + "[links]\ndns_domain = '192.0.2.1'\n", "links.dns_domain", "domain"),
    (MINIMAL + "[links]\ndns_domain = ''\n", "links.dns_domain", "domain"),
    (MINIMAL + "[links]\ndns_servers = '127.0.0.1'\n", "links.dns_servers", "array"),
    (MINIMAL + "[links]\ndns_servers = [53]\n", "links.dns_servers[0]", "ip:port"),
    (MINIMAL + "[links]\ndns_servers = ['ns.example.org']\n", "links.dns_servers[0]", None),
    (MINIMAL + "[links]\ndns_servers = ['ns.example.org:53']\n", "links.dns_servers[0]", None),
    (MINIMAL + "[links]\ndns_servers = ['127.0.0.1:0']\n", "links.dns_servers[0]", "1 to 65535"),
    (MINIMAL + "[links]\ndns_timeout_ms = 50\n", "links.dns_timeout_ms", "100 to 30000"),
    # [radio]: what a device and a pin may be depends on the backend
    (RADIO + "ptt = 'cm108'\n", "radio.ptt_device", "hidraw"),
    (RADIO + "ptt = 'usb'\n", "radio.ptt", "cm108"),
    (RADIO + "carrier = 'serial'\ncarrier_pin = 'cts'\n", "radio.carrier_device", "serial port"),
    (RADIO + "carrier = 'cm108'\n", "radio.carrier_device", "hidraw"),
    (RADIO + "carrier = 'vox'\ncarrier_device = '/dev/x'\n", "radio.carrier_device", None),
    (RADIO + "ptt_device = '/dev/x'\n", "radio.ptt_device", None),
    (RADIO + "ptt_pin = 3\n", "radio.ptt_pin", None),
    (RADIO + "ptt = 'gpio'\nptt_device = 'gpiochip0'\n", "radio.ptt_pin", "line offset"),
    (RADIO + "ptt = 'gpio'\nptt_device = 'chip'\nptt_pin = 600\n", "radio.ptt_pin", "0-511"),
    (CM108 + "ptt_pin = 9\n", "radio.ptt_pin", "1-8"),
    (CM108 + "ptt_pin = 1.5\n", "radio.ptt_pin", "GPIO number"),
    (RADIO + "ptt = 'serial'\nptt_device = '/dev/x'\nptt_pin = 'cts'\n", "radio.ptt_pin", "rts"),
    (RADIO + "carrier = 'serial'\ncarrier_device = '/dev/x'\n", "radio.carrier_pin", "cts"),
    (CM108 + "carrier = 'cm108'\ncarrier_pin = 'x'\n", "radio.carrier_pin", "vol_down"),
    (RADIO + "courtesy_tone = [[1, 2]]\n", "radio.courtesy_tone[0]", "[first Hz"),
    (RADIO + "courtesy_tone = [[10, 0, 80]]\n", "radio.courtesy_tone[0]", "20-3500"),
    (RADIO + "courtesy_tone = [[880, 0, 0]]\n", "radio.courtesy_tone[0]", "1 to 5000"),
    (RADIO + f"courtesy_tone = [{'[880, 0, 80], ' * 17}]\n", "radio.courtesy_tone", "steps"),
    (RADIO + "vox_threshold_db = 5\n", "radio.vox_threshold_db", "-80.0 to 0.0"),
    # loudness normalisation
    (MINIMAL + "[bridge]\nnormalize = 'yes'\n", "bridge.normalize", "true, false"),
    (MINIMAL + "[bridge]\nloudness_target = -5\n", "bridge.loudness_target", "-60.0 to -10.0"),
    (
        MINIMAL + "[bridge]\nnormalize_max_gain_db = 40\n",
        "bridge.normalize_max_gain_db",
        "0.0 to 30.0",
    ),
    (MINIMAL + "[links.2000]\nnormalize = 1\n", "links.2000.normalize", "true, false"),
]


@pytest.mark.parametrize(("text", "key", "accepted"), BAD)
def test_errors_name_file_key_and_accepted_values(
    tmp_path: Path, text: str, key: str | None, accepted: str | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert err.path == str(path)
    assert err.key == key
    message = str(err)
    assert str(path) in message
    assert f": {key}: " in message
    if accepted is not None:
        assert err.accepted is not None
        assert accepted in err.accepted
        assert accepted in message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[listener]\nbind = \n[control]\n", "line 2"),
        ("[listener\n[control]\n", "line 1"),
        ("[listener]\n[control]\n[listener]\n", "line 3"),
        ('[listener]\nanswer = "auto\n[control]\n', "line 2"),
    ],
)
def test_toml_syntax_errors_name_file_line_and_column(
    tmp_path: Path, text: str, where: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "TOML syntax error" in message
    assert where in message
    assert "column" in message


def test_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(ConfigError, match="file not found") as info:
        load_config(path)
    assert info.value.path == str(path)


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="directory"):
        load_config(tmp_path)


def test_non_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_bytes(b"[listener]\n# caf\xe9\n[control]\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(path)


def test_string_values_are_never_echoed_in_errors(tmp_path: Path) -> None:
    # An operator who pastes a password into the wrong key must not see it in a log.
    canary = "Canary-Pw-7f3a"
    cases = [
        f"[listener]\nanswer = '{canary}'\n[control]\n",
        f"[listener]\nbind = '{canary}'\n[control]\n",
        f"[listener]\n[control]\nbind = '{canary}:1'\n",
        MINIMAL + f"[register]\npeer = '192.0.2.1:1'\nnode_id = '{canary}'\n",
        MINIMAL + f"[secrets]\nsource = 'env'\nsecret = '{canary}'\n",
        MINIMAL + f"[secrets]\npassword = '{canary}'\n",
        MINIMAL + f"[portal]\nuser = 'a'\nnode = '1'\ncredential_env = '{canary}!'\n",
        MINIMAL + f"[announce]\ncallsign = '{canary}!'\n",
        MINIMAL + HTTP_REG + f"url = 'https://{canary}:x/'\n",
        MINIMAL + HTTP_REG + f"url = '{canary}'\n",
        MINIMAL + HTTP_REG + f"[statpost]\nurl = 'http://s.org/?{canary}'\n",
        MINIMAL + f"[links]\ndns_domain = '{canary}!'\n",
        MINIMAL + f"[links]\ndns_servers = ['{canary}']\n",
        MINIMAL + WG.replace(WG_PEER_KEY, canary),
        MINIMAL + WG.replace("'10.8.0.2'", f"'{canary}'"),
        MINIMAL + WG.replace("'WG_KEY'", f"'{canary}!'"),
        MINIMAL + WG.replace("'10.8.0.0/24'", f"'{canary}'"),
        MINIMAL + WG + f"endpoint = '{canary}'\n",
    ]
    for text in cases:
        with pytest.raises(ConfigError) as info:
            load_text(tmp_path, text)
        assert canary not in str(info.value), text
        assert canary not in repr(info.value.args)
        # Nor in a logged traceback: no library exception quoting it rides along as context.
        assert canary not in "".join(traceback.format_exception(info.value)), text


# --- property tests -----------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(type(value))


def to_toml(doc: dict[str, Any]) -> str:
    """A tiny TOML writer for the shapes these tests generate (nested tables of scalars)."""
    lines = [f"{k} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]

    def emit(prefix: str, table: dict[str, Any]) -> None:
        lines.append(f"[{prefix}]")
        lines.extend(f"{k} = {toml_value(v)}" for k, v in table.items() if not isinstance(v, dict))
        for k, v in table.items():
            if isinstance(v, dict):
                emit(f"{prefix}.{k}", v)

    for k, v in doc.items():
        if isinstance(v, dict):
            emit(k, v)
    return "\n".join(lines) + "\n"


def optional_keys(**strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=strategies)


node_ids = st.integers(0, 10**7).map(str)
loopback = st.sampled_from(["127.0.0.1", "127.1.2.3", "[::1]", "localhost"])
names = st.text(st.characters(codec="ascii", categories=["L", "N"]), max_size=12)

valid_docs = st.fixed_dictionaries(
    {
        "listener": optional_keys(
            bind=st.builds(
                lambda h, p: f"{h}:{p}",
                st.sampled_from(["0.0.0.0", "[::]", "192.0.2.1", "[2001:db8::5]"]),
                st.integers(0, 65535),
            ),
            answer=st.sampled_from(["auto", "manual"]),
            max_calls=st.integers(1, 32766),
            auth=st.sampled_from(["required", "optional", "off"]),
            allowed_nodes=st.lists(node_ids, max_size=4),
            calltoken=st.sampled_from(["required", "auto", "off"]),
        ),
        "control": optional_keys(
            bind=st.builds(lambda h, p: f"{h}:{p}", loopback, st.integers(0, 65535))
        ),
    },
    optional={
        "codec_policy": st.sampled_from(
            ["ulaw_only", "allow_slin", "prefer_slin", "prefer_slin16"]
        ),
        "register": st.fixed_dictionaries(
            {
                "peer": st.builds(lambda p: f"reg.example.org:{p}", st.integers(1, 65535)),
                "node_id": node_ids,
            },
            optional={"refresh": st.integers(10, 3600)},
        ),
        "secrets": optional_keys(source=st.sampled_from(["env", "control", "config"])),
        "bridge": optional_keys(
            mode=st.sampled_from(["handset", "bridge", "conference", "parrot"]),
            mix_minus=st.booleans(),
            include_local_radio=st.booleans(),
        ),
        "audio": optional_keys(
            input=names,
            output=names,
            backend=st.sampled_from(["cpal", "none"]),
            device_rate=st.sampled_from([0, 48000]),
            rx_gain_db=st.floats(-40.0, 20.0),
            tx_gain_db=st.floats(-40.0, 20.0),
        ),
        "dtmf": optional_keys(
            enabled=st.booleans(),
            inter_digit_timeout_ms=st.integers(100, 60000),
            inband=st.booleans(),
            inband_sources=st.sets(st.sampled_from(["calls", "links", "local"])).map(
                lambda chosen: [s for s in ("calls", "links", "local") if s in chosen]
            ),
        ),
        "ami": optional_keys(
            enabled=st.booleans(),
            bind=st.builds(lambda h, p: f"{h}:{p}", loopback, st.integers(0, 65535)),
            allow_remote=st.booleans(),
            username=st.text(
                st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=64
            ),
            max_connections=st.integers(1, 1000),
        ),
        "parrot": optional_keys(
            playback_delay_ms=st.integers(0, 60000),
            silence_gap_ms=st.integers(20, 10000),
            vox_threshold_db=st.floats(-96.0, 0.0),
        ),
        "announce": optional_keys(
            id_mode=st.sampled_from(["cw", "off"]),
            id_interval_secs=st.integers(0, 86400),
            cw_wpm=st.integers(5, 60),
            cw_tone_hz=st.floats(200.0, 3400.0),
            cw_keys_when_idle=st.booleans(),
            to_links=st.booleans(),
            events=optional_keys(
                **{
                    e: optional_keys(
                        enabled=st.booleans(),
                        destination=st.sampled_from(["to_air", "to_monitor"]),
                    )
                    for e in (
                        "incoming_call",
                        "hangup",
                        "registered",
                        "register_failed",
                        "answered",
                        "link_connected",
                        "link_disconnected",
                    )
                }
            ),
        ),
    },
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=valid_docs)
def test_valid_documents_load_with_their_values(tmp_path: Path, doc: dict[str, Any]) -> None:
    config = load_text(tmp_path, to_toml(doc))
    for name, table in doc.items():
        if name == "codec_policy":
            assert config.codec_policy == table
            continue
        section = getattr(config, name)
        for key, value in table.items():
            if key == "events":
                for event, body in value.items():
                    for k, v in body.items():
                        assert getattr(section.events[event], k) == v, f"{event}.{k}"
                continue
            got = getattr(section, key)
            if isinstance(got, Address):
                got = str(got)
            elif isinstance(got, tuple):
                got = list(got)
            assert got == value, f"{name}.{key}"


scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), max_size=20),
    st.lists(st.integers(0, 5), max_size=3),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=valid_docs, data=st.data())
def test_any_wrong_value_is_a_config_error(
    tmp_path: Path, doc: dict[str, Any], data: st.DataObject
) -> None:
    # Replace one value by an arbitrary TOML value: the loader either accepts it or raises
    # ConfigError, never anything else.
    tables = [(name, t) for name, t in doc.items() if isinstance(t, dict)]
    name, table = data.draw(st.sampled_from(tables))
    key = data.draw(st.sampled_from([*table, "unexpected_key"]))
    table[key] = data.draw(scalars)
    try:
        config = load_text(tmp_path, to_toml(doc))
    except ConfigError as err:
        assert err.path.endswith("node.toml")
        assert err.key is not None
        assert err.key.startswith(name)
    else:
        assert key != "unexpected_key"
        assert isinstance(config, NodeConfig)


def test_top_level_key_inside_a_section_gets_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="move it above the first"):
        load_text(tmp_path, "[listener]\ncodec_policy = 'ulaw_only'\n[control]\n")


def test_docs_describe_every_key() -> None:
    docs = Path(__file__).resolve().parent.parent / "docs" / "config.md"
    text = docs.read_text(encoding="utf-8")
    for dotted in iter_template_keys():
        leaf = dotted.rsplit(".", 1)[-1]
        assert f"`{leaf}`" in text or f" {leaf}`" in text, dotted


def test_max_calls_reaches_hub_scale(tmp_path: Path) -> None:
    # Bounded by the IAX2 call-number space, not by a round number (issue 11).
    config = load_text(tmp_path, "[listener]\nmax_calls = 5000\n[control]\n")
    assert config.listener.max_calls == 5000


def test_the_jitter_buffer_keys_are_bounded_and_named(tmp_path: Path) -> None:
    base = "[listener]\n[control]\n[bridge]\n"
    config = load_text(tmp_path, base + "jitter_target_extra_ms = 120\njitter_max_ms = 4000\n")
    assert (config.bridge.jitter_target_extra_ms, config.bridge.jitter_max_ms) == (120, 4000)
    assert (NodeConfig().bridge.jitter_target_extra_ms, NodeConfig().bridge.jitter_max_ms) == (
        40,
        1000,
    )
    with pytest.raises(ConfigError, match=r"bridge\.jitter_max_ms: 100 .*from 200 to 4000"):
        load_text(tmp_path, base + "jitter_max_ms = 100\n")
    with pytest.raises(ConfigError, match=r"bridge\.jitter_target_extra_ms: -1 .*0 to 1000"):
        load_text(tmp_path, base + "jitter_target_extra_ms = -1\n")
    # The margin needs room in the buffer for the jitter itself.
    with pytest.raises(
        ConfigError, match=r"bridge\.jitter_max_ms: 300 ms leaves no room .*at least .*\(460\)"
    ):
        load_text(tmp_path, base + "jitter_target_extra_ms = 300\njitter_max_ms = 300\n")
