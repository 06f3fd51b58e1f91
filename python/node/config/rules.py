"""The rules between keys: what one key may be given another (a pin given its backend, a URL given
the registration method), what the sections need of each other, and the warnings about settings
that load but cost something.

A declaration says what one key takes; these say what keys take together, so they run once a
section (`SECTION_RULES`, by dotted name) or the whole file (`check_node`) has been read.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, Protocol

from node.config.functions import macros_called
from node.config.network import AmiConfig, ControlConfig, RegisterConfig, SecretsConfig
from node.config.node import NodeConfig
from node.config.station import (
    CM108_BUTTONS,
    JITTER_HEADROOM_MS,
    SERIAL_CARRIER_PINS,
    SERIAL_PTT_PINS,
    AnnounceConfig,
    BridgeConfig,
    RadioConfig,
)
from node.config.values import NODE_ID

__all__ = ["SECTION_RULES", "Fail", "check_host", "check_node", "warn_risky"]

log = logging.getLogger("node.config")

_LOOPBACK = "a loopback address (127.0.0.0/8, [::1] or localhost), e.g. 127.0.0.1:{port}"


class Fail(Protocol):
    """Raises the `ConfigError` for a dotted key of the file being read."""

    def __call__(
        self, key: str, problem: str, accepted: Iterable[str] | str | None = None
    ) -> NoReturn: ...


def _register(r: RegisterConfig, raw: Mapping[str, Any], fail: Fail) -> RegisterConfig:
    # Each method has its own registrar key; the other one in the file is a mix-up (or a wish
    # to register both ways, which ASL warns against), never silently ignored.
    own, other = ("peer", "url") if r.method == "iax2" else ("url", "peer")
    if other in raw:
        switch = "http" if r.method == "iax2" else "iax2"
        fail(
            f"register.{other}",
            f'is not used with method = "{r.method}" (that method registers to {own})',
            f'{own} for method = "{r.method}", or method = "{switch}"',
        )
    if r.method == "iax2" and r.peer is None:
        fail("register.peer", 'is required in [register] with method = "iax2"')
    return r


def _control(c: ControlConfig, raw: Mapping[str, Any], fail: Fail) -> ControlConfig:
    if not c.bind.is_loopback:
        fail(
            "control.bind",
            "must be a loopback address: the control channel has no authentication (for remote "
            "access put an authenticating layer such as an SSH tunnel, VPN or reverse proxy in "
            "front of it)",
            _LOOPBACK.format(port=8730),
        )
    return c


def _secrets(s: SecretsConfig, raw: Mapping[str, Any], fail: Fail) -> SecretsConfig:
    for key in ("secret", "ami_secret"):
        if getattr(s, key) is not None and s.source != "config":
            # A password in a file whose permissions nobody checks is exactly the leak the
            # `config` source guards against.
            fail(
                f"secrets.{key}",
                f'is set but secrets.source is "{s.source}"; an inline secret is accepted only '
                'with source = "config" (and a file readable by its owner alone)',
            )
    return s


def _announce(a: AnnounceConfig, raw: Mapping[str, Any], fail: Fail) -> AnnounceConfig:
    periodic_id = a.enabled and a.id_mode != "off" and a.id_interval_secs > 0
    # (broken, key, problem, accepted), in the order they are reported.
    checks = (
        (
            a.tts.enabled and not a.tts.binary.strip(),
            "announce.tts.binary",
            "is empty but TTS is enabled",
            "the name or path of the TTS executable",
        ),
        (
            periodic_id and not a.callsign,
            "announce.callsign",
            "is empty but a periodic station ID is enabled (announce.enabled, id_mode, "
            "id_interval_secs); the ID needs the text to send",
            "a callsign, e.g. W1AW",
        ),
        (
            a.enabled and a.id_mode == "tts" and not a.tts.enabled,
            "announce.id_mode",
            'is "tts" but [announce.tts] is not enabled',
            'id_mode = "cw" or "off", or [announce.tts] enabled = true',
        ),
    )
    for broken, key, problem, accepted in checks:
        if broken:
            fail(key, problem, accepted)
    return a


def _ami(a: AmiConfig, raw: Mapping[str, Any], fail: Fail) -> AmiConfig:
    if not a.bind.is_loopback and not a.allow_remote:
        fail(
            "ami.bind",
            "is not a loopback address: AMI sends its password and everything else in clear "
            "text; set ami.allow_remote = true to accept that (better: an SSH tunnel or VPN)",
            _LOOPBACK.format(port=5038),
        )
    return a


# --- [radio]: pins and devices depend on the backend -------------------------------------------

_DEVICE_HINT = {
    "cm108": "the interface's hidraw node, e.g. /dev/hidraw0",
    "serial": "a serial port, e.g. /dev/ttyUSB0",
    "gpio": "a GPIO chip, e.g. gpiochip0 or /dev/gpiochip0",
}
#: What a pin may be per backend: names and whether a CM108 GPIO number 1-8 is one, or "line"
#: for a GPIO line (offset or name).
_PTT_PINS: Mapping[str, Any] = {
    "cm108": ((), True),
    "serial": (SERIAL_PTT_PINS, False),
    "gpio": "line",
}
_CARRIER_PINS: Mapping[str, Any] = {
    "cm108": (CM108_BUTTONS, True),
    "serial": (SERIAL_CARRIER_PINS, False),
    "gpio": "line",
}


def _pin(
    value: int | str | None, key: str, backend: str, pins: Mapping[str, Any], fail: Fail
) -> int | str | None:
    dotted = f"radio.{key}"
    kind = pins.get(backend)
    if kind is None:
        if value is not None:
            fail(dotted, f"has no meaning with {key.split('_')[0]} = {backend}")
        return None
    if kind == "line":
        if value is None:
            fail(dotted, f"is required with {key.split('_')[0]} = gpio", "a line offset or name")
        if type(value) is int and 0 <= value <= 511:
            return value
        if type(value) is str and value:
            return value
        fail(dotted, "must be a GPIO line", "a line offset 0-511, or the line's name")
    names, gpio_numbers = kind
    accepted = [*names, *(["a CM108 GPIO number 1-8"] if gpio_numbers else [])]
    if value is None:
        return None
    if type(value) is int and gpio_numbers and 1 <= value <= 8:
        return value
    if type(value) is str and value in names:
        return value
    fail(dotted, f"is not a {backend} pin", accepted)


def _radio(r: RadioConfig, raw: Mapping[str, Any], fail: Fail) -> RadioConfig:
    ptt, carrier = r.ptt, r.carrier
    carrier_device = r.carrier_device
    if ptt != "none" and not r.ptt_device:
        fail("radio.ptt_device", f"is required with ptt = {ptt}", _DEVICE_HINT[ptt])
    if carrier in ("serial", "gpio") and not carrier_device:
        fail("radio.carrier_device", f"is required with carrier = {carrier}", _DEVICE_HINT[carrier])
    if carrier == "cm108" and not carrier_device:
        if ptt != "cm108":
            fail(
                "radio.carrier_device",
                "is required with carrier = cm108 unless ptt = cm108 (then it is ptt_device)",
                _DEVICE_HINT["cm108"],
            )
        carrier_device = r.ptt_device
    if carrier in ("none", "vox") and carrier_device:
        fail("radio.carrier_device", f"has no meaning with carrier = {carrier}")
    if ptt == "none" and r.ptt_device:
        fail("radio.ptt_device", "has no meaning with ptt = none")
    ptt_pin = _pin(r.ptt_pin, "ptt_pin", ptt, _PTT_PINS, fail)
    carrier_pin = _pin(r.carrier_pin, "carrier_pin", carrier, _CARRIER_PINS, fail)
    if carrier == "serial" and carrier_pin is None:
        fail("radio.carrier_pin", "is required with carrier = serial", SERIAL_CARRIER_PINS)
    return dataclasses.replace(
        r, carrier_device=carrier_device, ptt_pin=ptt_pin, carrier_pin=carrier_pin
    )


def _bridge(b: BridgeConfig, raw: Mapping[str, Any], fail: Fail) -> BridgeConfig:
    # The buffer aims at the jitter plus the margin, capped at its size: with too little room
    # above the margin the cap binds at once and frames are refused as too far ahead.
    room = b.jitter_target_extra_ms + JITTER_HEADROOM_MS
    if b.jitter_max_ms < room:
        fail(
            "bridge.jitter_max_ms",
            f"{b.jitter_max_ms} ms leaves no room above jitter_target_extra_ms "
            f"({b.jitter_target_extra_ms} ms) for the jitter itself",
            f"at least jitter_target_extra_ms + {JITTER_HEADROOM_MS} ({room}), at most 4000",
        )
    return b


#: Rules of one section, by its dotted name, run as soon as the section is read.
SECTION_RULES: Mapping[str, Callable[[Any, Mapping[str, Any], Fail], Any]] = {
    "bridge": _bridge,
    "register": _register,
    "control": _control,
    "secrets": _secrets,
    "announce": _announce,
    "ami": _ami,
    "radio": _radio,
}


def _check_macros(config: NodeConfig, fail: Fail) -> None:
    """A macro that runs itself, directly or through others, would never end: refused."""
    startup = config.rpt.startup_macro
    table, macros = config.function_table, config.macro
    calls = {n: macros_called(table, macros, d) for n, d in config.macro.items()}
    calls["0"] = macros_called(table, macros, startup)  # `*50`: the startup macro, as app_rpt.

    def walk(number: str, path: tuple[str, ...]) -> None:
        for callee in calls.get(number, ()):
            if callee in path or callee == number:
                where = "rpt.startup_macro" if path[0] == "0" else f"macro.{path[0]}"
                chain = " -> ".join((*path, callee))
                fail(where, f"runs itself through the macros {chain}", "macros that end")
            walk(callee, (*path, callee))

    for number in calls:
        walk(number, (number,))
    for entry in config.schedule:
        if entry.macro not in config.macro:
            fail(
                f"schedule.{entry.macro}",
                f"names macro {entry.macro}, which [macro] does not have",
                [f"[macro] {n}" for n in config.macro] or "a [macro] entry",
            )


def _check_node_id(config: NodeConfig, fail: Fail) -> None:
    """The node has one number: the top-level key and `[register]`'s may both say it, alike."""
    reg = config.register
    if reg is not None and config.node_id != reg.node_id:
        fail(
            "node_id",
            f"is {config.node_id} but register.node_id is {reg.node_id}; a node has one number "
            "(it registers under the number it links as)",
            "the same number in both keys, or node_id alone when the node does not register",
        )


def check_node(config: NodeConfig, fail: Fail) -> None:
    """The rules between sections, once the whole file is read."""
    _check_node_id(config, fail)
    _check_macros(config, fail)
    rate = config.station_rate
    if config.audio.device_rate not in (0, rate, 48000):
        fail(
            "audio.device_rate",
            f"{config.audio.device_rate} Hz is neither the station rate ({rate} Hz, set by "
            "codec_policy) nor 48000 Hz, the rate the node converts from",
            f"0 (automatic), {rate}, 48000",
        )
    if config.audio.backend == "usrp" and config.usrp is None:
        fail(
            "audio.backend",
            'is "usrp" but the file has no [usrp] section',
            "a [usrp] section with listen and peer, or backend = cpal or none",
        )
    if config.usrp is not None:
        # A [usrp] section beside another backend is inert (kept for switching back).
        u = config.usrp
        if u.buffer_ms <= u.prefill_ms:
            fail(
                "usrp.buffer_ms",
                f"{u.buffer_ms} ms does not exceed prefill_ms ({u.prefill_ms} ms)",
                f"a multiple of 20 above {u.prefill_ms}, at most 10000",
            )
        usrp_radio = config.audio.backend == "usrp"
        if usrp_radio and (config.radio.ptt != "none" or config.radio.carrier != "none"):
            fail(
                "radio.ptt" if config.radio.ptt != "none" else "radio.carrier",
                "has no meaning with a USRP radio: its keyup bit is the PTT and the carrier",
                "none (the default)",
            )
    if config.statpost is not None and config.node_id is None:
        fail(
            "statpost",
            "needs this node's number, and the file gives none",
            "a top-level node_id (or [register] node_id), or no [statpost]",
        )
    for node, link in config.links.items():
        if link.shape == "wt-guest" and config.portal is None:
            fail(
                f"links.{node}.shape",
                "wt-guest needs a [portal] section (the web-transceiver token is minted with the "
                "portal account)",
                "add [portal] with user, node and credential_env, or shape = standard",
            )


def warn_risky(config: NodeConfig, prefix: str = "") -> None:
    """Log settings that load fine but that an operator should know the cost of. `prefix` is a
    further node's table (`nodes.<number>.`): its own keys are named with it, and the shared
    sections, said once for the first node, are not said again."""
    where = config.path
    shared = not prefix
    if shared and any(not NODE_ID.fullmatch(node) for node in config.listener.allowed_nodes):
        # Spec rule 3: a placeholder admits nobody. It is kept (so it matches no caller), but it
        # is probably an unfilled template value, so say so.
        log.warning(
            "%s: listener.allowed_nodes holds an entry that is not a node number; it admits "
            "only a caller with exactly that username",
            where,
        )
    if shared and config.listener.auth == "off" and not config.listener.allowed_nodes:
        log.warning(
            "%s: listener.auth is off and allowed_nodes is empty: every caller is admitted "
            "(limited only by max_calls)",
            where,
        )
    if config.dtmf.enabled:
        log.warning("%s: %sdtmf.enabled: any connected member can command the links", where, prefix)
    if shared and config.ami.enabled and not config.ami.bind.is_loopback:
        log.warning(
            "%s: ami.bind is not loopback (ami.allow_remote): the AMI password and every "
            "command cross the network in clear text",
            where,
        )
    bridge = config.bridge
    hears = bridge.mode == "handset" or (bridge.mode == "conference" and bridge.include_local_radio)
    if config.radio.ptt != "none" and not hears:
        log.warning(
            "%s: %sradio.ptt is set but the local radio is not in the conference (bridge.mode = "
            "%s, include_local_radio = %s): the transmitter keys only once POST /bridge puts it "
            "there",
            where,
            prefix,
            bridge.mode,
            str(bridge.include_local_radio).lower(),
        )
    reg = config.register
    if config.wireguard is not None and reg is not None and reg.method == "http":
        log.warning(
            "%s: [wireguard] with register.method = http: the registrar sees the address the "
            "HTTPS request leaves from, not the tunnel's, and nodes that check source addresses "
            "refuse calls from the tunnel; method = iax2 registers through the tunnel",
            where,
        )
    if config.announce.enabled and config.announce.cw_keys_when_idle:
        log.warning(
            "%s: %sannounce.cw_keys_when_idle: the periodic ID keys the transmitter (a real "
            "transmission)",
            where,
            prefix,
        )


def check_host(config: NodeConfig, fail: Fail) -> None:
    """The rules between the nodes of one file: each has its own number, radio and USRP port."""
    if config.node_id is None:
        fail(
            "node_id",
            "a file with [nodes.<number>] tables must give the first node's number too",
            "a top-level node_id (or [register] node_id)",
        )
    seen: dict[str, str] = {}
    devices: dict[tuple[str, str], str] = {}
    usrp_ports: dict[str, str] = {}
    for node in config.hosted:
        number = node.node_id or ""
        where = "" if node is config else f"nodes.{number}."
        if number in seen:
            fail(
                f"{where}node_id" if where else "node_id",
                f"node {number} is declared twice ({seen[number] or 'the top level'} and "
                f"{where.rstrip('.') or 'the top level'}); each node of a host has its own number",
                "a number no other node of the file uses",
            )
        seen[number] = where.rstrip(".")
        audio = node.audio
        if audio.backend == "cpal":
            card = (audio.input, audio.output)
            if card in devices:
                fail(
                    f"{where}audio.input",
                    f"node {number} would share its sound device with node {devices[card]}; two "
                    "nodes cannot drive one radio",
                    'another device (input and output), or backend = "none" or "usrp"',
                )
            devices[card] = number
        if audio.backend == "usrp" and node.usrp is not None:
            listen = str(node.usrp.listen)
            if listen in usrp_ports:
                fail(
                    f"{where}usrp.listen",
                    f"node {number} would listen on the USRP port of node {usrp_ports[listen]}",
                    "an address and port no other node of the file listens on",
                )
            usrp_ports[listen] = number
