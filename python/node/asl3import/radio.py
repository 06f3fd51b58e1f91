"""The node's radio, mapped from rpt.conf's `rxchannel` and its channel driver's file.

What the node drives: a sound card (`[audio] backend = "cpal"`) with its PTT and carrier on a
CM108's GPIO (chan_simpleusb, chan_usbradio), a serial port's modem lines (chan_alsaradio) or
GPIO lines (chan_rpiradio, the Raspberry Pi's header: NW Digital Radio's UDRC among others), and
a USRP stream (chan_usrp). Each driver's keys are read as its own parser reads them (learnt from
their sources, named below). A radio the node cannot drive is a blocker: the import stops
unless `--force`, which writes the node without it (a hub), and the report says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from node.asl3import.conf import Asl3ConfError, ConfFile, Entry, Section
from node.asl3import.plan import Asl3Files, Plan, integer, source, truthy, yes

__all__ = ["map_radio", "tone_steps"]

_TONE = re.compile(r"\((\d+),(\d+),(\d+),(\d+)\)")
#: app_rpt's built-in courtesy tones (rpt_telemetry.c `tele_defs`), used when the telemetry
#: stanza does not name the tone.
BUILTIN_TONES = {
    "ct1": "|t(350,0,100,3072)(500,0,100,3072)(660,0,100,3072)",
    "ct2": "|t(660,880,150,3072)",
    "ct3": "|t(440,0,150,3072)",
    "ct4": "|t(550,0,150,3072)",
    "ct5": "|t(660,0,150,3072)",
    "ct6": "|t(880,0,150,3072)",
    "ct7": "|t(660,440,150,3072)",
    "ct8": "|t(700,1100,150,3072)",
}
#: Channel drivers the node cannot drive, and why.
_CANNOT = {
    "voter": "chan_voter: receivers voted over the network (RTCM/VOTER boards, voter.conf); "
    "the node has no voter",
    "dahdi": "a DAHDI card channel (a PCI radio interface such as the Quad Radio card); the "
    "node drives sound cards, not DAHDI",
    "zap": "a Zaptel card channel (DAHDI's old name: a PCI radio interface); the node drives "
    "sound cards, not Zaptel",
    "pi": "chan_pi drives the DMK PiTA board: its PTT and COR go through an I2C port expander "
    "(pi.conf i2caddr), which the node does not drive (the kernel's mcp23017 overlay would make "
    'it a GPIO chip for [radio] ptt = "gpio")',
    "beagle": "chan_beagle: the BeagleBoard's own audio and GPIO board",
}
#: A carrier detect the node cannot do, per driver value (chan_usbradio, chan_simpleusb).
_CARRIER_CANNOT = {
    "dsp": "the carrier decoded from the discriminator audio (usbradio's DSP noise squelch)",
    "pp": "the carrier on a parallel port pin",
    "ppinvert": "the carrier on a parallel port pin",
}
_MIXER = "the CM108 mixer: set it once with alsamixer, then [audio] rx_gain_db / tx_gain_db"
#: simpleusb/usbradio keys with no equivalent, and why (keys not here and not mapped are
#: reported as "no equivalent here"; a key whose value is the driver's default is not).
_USB_LOST = {
    "rxmixerset": _MIXER,
    "txmixaset": _MIXER,
    "txmixbset": _MIXER,
    "txoffdelay": "not needed: the node does not repeat its receiver (mix-minus)",
    "rxboost": "the CM108's 20 dB receive boost: set the level with [audio] rx_gain_db",
    "txboost": "the CM108's transmit boost: set the level with [audio] tx_gain_db",
    "plfilter": "a high-pass filter of the CTCSS tone on the received audio: no equivalent",
    "deemphasis": "de-emphasis of the received audio: no equivalent",
    "preemphasis": "pre-emphasis of the transmitted audio: no equivalent",
}
#: Driver keys that change nothing here (jitter buffer, debug, hardware probing, EEPROM).
_DRIVER_SILENT = frozenset(
    {
        "eeprom", "hdwtype", "debug", "frags", "queuesize", "rxcpusaver", "txcpusaver",
        "duplex", "piversion2", "serial_device", "serial_disable", "input_device",
        "output_device", "silencesuppression", "silencethreshold", "rxsquelchdelay",
        "rxctcssrelax", "txctcssdefault", "rxctcssfreqs", "txctcssfreqs", "rxfreq", "txfreq",
        "rxdemod", "txprelim", "txlimonly", "txtoctype", "txmixa", "txmixb", "txmix",
        "clipledgpio", "legacyaudioscaling", "usedsp",
    }
)  # fmt: skip
#: A key at one of these values is the driver's default: nothing is lost.
_DRIVER_DEFAULTS: dict[str, Callable[[str], bool]] = {
    "rxboost": lambda v: not truthy(v),
    "txboost": lambda v: not truthy(v),
    "plfilter": lambda v: not yes(v),
    "deemphasis": lambda v: not yes(v),
    "preemphasis": lambda v: not yes(v),
    "txoffdelay": lambda v: not truthy(v),
}


def map_radio(plan: Plan, files: Asl3Files, stanza: Section) -> bool:
    """`[audio]`, `[usrp]`, `[radio]` and `[bridge] mode` from the node's `rxchannel`; True when
    the node has a local radio (the hang time, the courtesy tone and the ID then apply)."""
    entry = stanza.get("rxchannel")
    node = stanza.name
    if entry is None:
        raise Asl3ConfError(stanza.file, stanza.line, f"node [{node}] has no rxchannel")
    src = source(entry, node)
    tech, _, rest = entry.value.partition("/")
    tech, rest = tech.strip().lower(), rest.strip()
    if tech in ("local", "dahdi", "zap") and rest.lower() == "pseudo":
        _hub(plan, src, "a hub: a pure conference of the links")
        return False
    if tech == "usrp":
        _usrp(plan, entry, rest, src)
    elif tech in ("simpleusb", "radio"):
        fname = "simpleusb.conf" if tech == "simpleusb" else "usbradio.conf"
        dev = _device(entry, files.simpleusb if tech == "simpleusb" else files.usbradio, fname)
        _usb(plan, dev, fname)
    elif tech == "alsaradio":
        _alsaradio(plan, _device(entry, files.alsaradio, "alsaradio.conf"), files.alsaradio)
    elif tech == "rpiradio":
        _rpiradio(plan, _device(entry, files.rpiradio, "rpiradio.conf"), files.rpiradio)
    else:
        why = _CANNOT.get(tech, f"the {tech or entry.value} channel driver")
        plan.blockers.append(f"{src} {entry.value}: {why}")
        _hub(plan, src, "no radio the node can drive: written as a hub (--force)")
        return False
    plan.set("bridge", "mode", "conference", src, "the radio and the links hear each other")
    plan.set("bridge", "include_local_radio", True, src)
    return True


def _hub(plan: Plan, src: str, note: str) -> None:
    plan.set("audio", "backend", "none", src, "no radio")
    plan.set("bridge", "mode", "bridge", src, note)


def _usrp(plan: Plan, entry: Entry, rest: str, src: str) -> None:
    # USRP/<his ip>:<his port>[:<my port>]: chan_usrp sends to his port and listens on its own
    # (his port again when left out), on loopback when he is on loopback.
    parts = rest.split(":")
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


def _device(entry: Entry, conf: ConfFile | None, fname: str) -> Section:
    name = entry.value.partition("/")[2].strip()
    dev = conf.section(name) if conf else None
    if dev is None:
        raise Asl3ConfError(
            entry.file, entry.line, f"rxchannel {entry.value} has no [{name}] in {fname}"
        )
    return dev


class _Keys:
    """The keys of a device's stanza, else of `[general]`: chan_alsaradio and chan_rpiradio
    start every device from the `[general]` settings."""

    def __init__(self, dev: Section, conf: ConfFile | None) -> None:
        self.dev = dev
        self.general = conf.section("general") if conf is not None else None

    def get(self, key: str) -> Entry | None:
        found = self.dev.get(key)
        if found is None and self.general is not None and self.general is not self.dev:
            found = self.general.get(key)
        return found

    def source(self, entry: Entry) -> str:
        """Where `entry` is, with the stanza it is in."""
        mine = any(e is entry for e in self.dev.entries)
        return source(entry, self.dev.name if mine else "general")


def _sound_card(plan: Plan, where: str, named: str, also: str = "") -> None:
    plan.set("audio", "backend", "cpal", where, "a sound card")
    plan.set("audio", "input", "", where, "the system default device (CHECK)")
    plan.set("audio", "output", "", where, "the system default device (CHECK)")
    plan.checks.append(
        f"{where}: {named}; set [audio] input/output to a name substring of the sound card "
        f"(`arecord -L`, `aplay -L`){also}"
    )


def _delays(plan: Plan, keys: _Keys) -> None:
    delays = (("rxondelay", "rx_on_delay_ms", 5000), ("rxaudiodelay", "rx_audio_delay_ms", 1000))
    for key, ours, top in delays:
        if (e := keys.get(key)) is not None:
            ms = max(0, min(top, 20 * integer(e, keys.dev.name)))
            plan.set("radio", ours, ms, keys.source(e), "20 ms frames to ms")


def _leftovers(plan: Plan, dev: Section, handled: frozenset[str]) -> None:
    for e in dev.effective():
        k = e.key.lower()
        if k in handled or k in _DRIVER_SILENT:
            continue
        default = _DRIVER_DEFAULTS.get(k)
        if default is not None and default(e.value):
            continue
        plan.drop(source(e, dev.name), _USB_LOST.get(k, "no equivalent here"))


def _usb(plan: Plan, dev: Section, fname: str) -> None:
    """chan_simpleusb / chan_usbradio: a CM108 with PTT on GPIO3 and COS on volume down."""
    where = f"{dev.file}:{dev.line} {fname} [{dev.name}]"
    devstr = dev.value("devstr", "")
    also = " and [radio] ptt_device to its /dev/hidrawN (packaging/udev gives a stable name)"
    _sound_card(plan, where, f"devstr {devstr or '(empty)'} is a USB path", also)
    plan.set("radio", "ptt", "cm108", where, "simpleusb keys GPIO3 of the CM108")
    plan.set("radio", "ptt_device", "/dev/hidraw0", where, "CHECK: the interface's hidraw node")
    if (e := dev.get("invertptt")) is not None:
        plan.set("radio", "ptt_invert", yes(e.value), source(e, dev.name))
    if (e := dev.get("carrierfrom")) is not None:
        v = e.value.strip().lower()
        src = source(e, dev.name)
        if v in ("usb", "usbinvert"):
            plan.set("radio", "carrier", "cm108", src, "COS on volume down")
            plan.set("radio", "carrier_invert", v == "usbinvert", src)
        elif v == "vox":
            plan.set("radio", "carrier", "vox", src)
        elif v in _CARRIER_CANNOT:
            plan.set("radio", "carrier", "none", src, "CHECK: no carrier detect (--force)")
            plan.blockers.append(
                f"{src} = {v}: {_CARRIER_CANNOT[v]}; the node cannot detect the carrier, so "
                "its receiver would never be heard (wire the COS to the CM108's volume-down "
                'input for carrier = "cm108")'
            )
        else:
            plan.set("radio", "carrier", "none", src)
    if (e := dev.get("ctcssfrom")) is not None and e.value.strip().lower() != "no":
        plan.drop(
            source(e, dev.name),
            "CTCSS decode ANDed with COS: wire a CTCSS-qualified COS to volume down",
        )
    _delays(plan, _Keys(dev, None))
    handled = frozenset(
        {"invertptt", "carrierfrom", "ctcssfrom", "rxondelay", "rxaudiodelay", "devstr"}
    )
    _leftovers(plan, dev, handled)


def _alsaradio(plan: Plan, dev: Section, conf: ConfFile | None) -> None:
    """chan_alsaradio (YO3IIU): an ALSA card, PTT on a serial port's RTS (DTR held set), COS
    on DSR, read inverted (its interface inverts it): `serialdsr` is a carrier while DSR is
    clear, `serialdsrinvert` while it is set; CTCSS on CTS."""
    keys = _Keys(dev, conf)
    get = keys.get
    where = f"{dev.file}:{dev.line} alsaradio.conf [{dev.name}]"
    names = [(e.value if (e := get(k)) else "default") for k in ("input_device", "output_device")]
    _sound_card(plan, where, f"ALSA devices {names[0]} (input), {names[1]} (output)")
    disabled = get("serial_disable")
    serial = get("serial_device")
    if (disabled is not None and truthy(disabled.value)) or serial is None:
        src = keys.source(disabled) if disabled is not None else where
        plan.set("radio", "ptt", "none", src, "chan_alsaradio used no serial port")
        plan.set("radio", "carrier", "none", src)
        plan.checks.append(
            f"{src}: chan_alsaradio keyed no PTT and read no COS (no serial port): the "
            'transmitter keys on its own VOX; [radio] carrier = "vox" keys the node on the '
            "received audio"
        )
    else:
        ssrc = keys.source(serial)
        plan.set("radio", "ptt", "serial", ssrc, "chan_alsaradio keys RTS")
        plan.set("radio", "ptt_device", serial.value.strip(), ssrc)
        plan.set("radio", "ptt_pin", "rts", ssrc)
        if (e := get("invertptt")) is not None:
            plan.set("radio", "ptt_invert", truthy(e.value), keys.source(e))
        cd = get("carrierfrom")
        v = cd.value.strip().lower() if cd is not None else "no"
        csrc = keys.source(cd) if cd is not None else ssrc
        if v in ("serialdsr", "serialdsrinvert"):
            plan.set("radio", "carrier", "serial", csrc, "COS on DSR")
            plan.set("radio", "carrier_device", serial.value.strip(), csrc)
            plan.set("radio", "carrier_pin", "dsr", csrc)
            plan.set(
                "radio",
                "carrier_invert",
                v == "serialdsr",
                csrc,
                "chan_alsaradio reads DSR inverted: serialdsr is a carrier while DSR is clear",
            )
        else:
            plan.set("radio", "carrier", "none", csrc)
            plan.checks.append(
                f"{csrc}: carrierfrom = {v}: chan_alsaradio took the receiver as always "
                'active; here nothing keys the node from the radio ([radio] carrier = "vox" '
                "keys it on the received audio)"
            )
    if (e := get("ctcssfrom")) is not None and e.value.strip().lower() != "no":
        plan.drop(keys.source(e), "CTCSS decode on CTS ANDed with COS: no equivalent")
    _delays(plan, keys)
    _leftovers(plan, dev, frozenset({"invertptt", "carrierfrom", "ctcssfrom", "rxondelay"}))


def _rpiradio(plan: Plan, dev: Section, conf: ConfFile | None) -> None:
    """chan_rpiradio (VK3VS): an ALSA card (a UDRC, a USB fob) with PTT and COR on the
    Raspberry Pi's GPIO, numbered as the BCM pins (`pttpin` 22 and `corpin` 17 by default),
    the PTT keyed high and a carrier while COR is high, each inverted by its invert key."""
    keys = _Keys(dev, conf)
    get = keys.get
    where = f"{dev.file}:{dev.line} rpiradio.conf [{dev.name}]"
    names = [(e.value if (e := get(k)) else "default") for k in ("input_device", "output_device")]
    _sound_card(plan, where, f"ALSA devices {names[0]} (input), {names[1]} (output)")
    pins = {}
    for key, default in (("pttpin", 22), ("corpin", 17)):
        e = get(key)
        pins[key] = (integer(e, dev.name) if e else default, keys.source(e) if e else where)
    (ptt, psrc), (cor, csrc) = pins["pttpin"], pins["corpin"]
    plan.set("radio", "ptt", "gpio", psrc, "the Pi's header, BCM numbering")
    plan.set("radio", "ptt_device", "gpiochip0", psrc, "CHECK: the Pi's header")
    plan.set("radio", "ptt_pin", ptt, psrc)
    if (e := get("invertptt")) is not None:
        plan.set("radio", "ptt_invert", truthy(e.value), keys.source(e))
    plan.set("radio", "carrier", "gpio", csrc, "COR on the Pi's header")
    plan.set("radio", "carrier_device", "gpiochip0", csrc)
    plan.set("radio", "carrier_pin", cor, csrc)
    if (e := get("invertcor")) is not None and truthy(e.value):
        plan.set(
            "radio",
            "carrier_invert",
            True,
            keys.source(e),
            "a carrier while COR is low (chan_rpiradio's own code never saw one with it)",
        )
    plan.checks.append(
        f"{where}: pins {ptt} (PTT) and {cor} (COR) are BCM numbers, the lines of gpiochip0 on "
        "a Raspberry Pi (gpiochip4 on a Pi 5 with an older kernel); install gpiod and give the "
        "service group gpio (docs/radio.md)"
    )
    if (e := get("disable_ctcss")) is not None and truthy(e.value):
        plan.drop(keys.source(e), "CTCSS decode (ctcsspin) ANDed with COR: no equivalent")
    _delays(plan, keys)
    handled = frozenset(
        {"pttpin", "corpin", "ctcsspin", "invertptt", "invertcor", "invertctcss", "rxondelay"}
        | {"disable_ctcss", "disablectcss"}
    )
    _leftovers(plan, dev, handled)


def tone_steps(text: str) -> tuple[list[list[int]], float] | None:
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
