"""`node import-asl3` on real operators' configurations (tests/data/asl3/corpus/, sources and
licences in its README): ASL 1.x, HamVOIP, DIAL, app_rpt__ultra, an ASL3 operator's node, and
radios on SimpleUSB, usbradio, chan_alsaradio, chan_rpiradio (the UDRC), the PiTA, a PCI card
and a voter. Each import is checked key by key against the loaded config and its report; no
canary secret comes out anywhere; a radio the node cannot drive writes nothing without
--force; an error names the operator's file and line and leaves nothing behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from node.config import load_config
from node.config.node import NodeConfig
from node.links.commands import Command, CommandMapper
from tests.asl3import._run import cli
from tests.asl3import._run import imported as run_imported
from tests.node_process import NodeProcess, free_port

CORPUS = Path(__file__).resolve().parent.parent / "data" / "asl3" / "corpus"
#: Every import of the corpus: (directory, node, whether it is written without --force).
IMPORTS = [
    ("asl1-simpleusb", "1999", True),
    ("asl1-pita", "1999", False),
    ("asl1-pciradio", "1999", False),
    ("asl1-twousb", "1234", False),
    ("asl1-twousb", "5678", False),
    ("hamvoip", "1998", True),
    ("hamvoip", "1999", True),
    ("dial", "1999", True),
    ("dial", "2000", True),
    ("ultra", "1999", True),
    ("alsaradio", "27236", True),
    ("udrc", "1999", True),
    ("asl3-operator", "2630", True),
    ("asl3-operator", "1999", True),
    ("usbradio-usrp", "2740", False),
    ("usbradio-usrp", "1999", True),
    ("voter", "1999", False),
]


def imported(
    tmp_path: Path, name: str, node: str, *, force: bool = False
) -> tuple[NodeConfig, str]:
    return run_imported(tmp_path, CORPUS / name, node, force=force)


def section(report: str, title: str) -> str:
    """One part of the report ("Check before serving", "Not carried over"...), its lines
    joined (wrapped lines are one line again)."""
    part = report.split(title, 1)[1].split("\n\n", 1)[0]
    return " ".join(line.strip() for line in part.splitlines()[1:])


def test_asl1_stock_simpleusb_node(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "asl1-simpleusb", "1999")
    assert cfg.audio.backend == "cpal" and cfg.bridge.mode == "conference"
    r = cfg.radio
    assert (r.ptt, r.ptt_device, r.carrier, r.carrier_invert) == (
        "cm108",
        "/dev/hidraw0",
        "cm108",
        True,
    )
    assert (r.hang_time_ms, cfg.keying.tx_timeout_secs) == (5000, 180)
    assert r.courtesy_tone == ((660, 880, 150),) and r.courtesy_tone_level_db == -24.1
    a = cfg.announce
    # |iWA4XYZ every 540 s, at [morse]'s idfrequency, keying the transmitter as app_rpt's ID.
    assert (a.enabled, a.id_mode, a.callsign, a.id_interval_secs) == (True, "cw", "WA4XYZ", 540)
    assert (a.cw_wpm, a.cw_tone_hz, a.cw_keys_when_idle) == (20, 1065.0, True)
    assert cfg.listener.auth == "off" and cfg.verify_source_ip
    assert cfg.register is None  # the stock register line is commented out
    assert len(cfg.function_table) == 87 and cfg.ami.username == "admin"
    # The stock table's 56 functions that do nothing here are one line, not 56.
    lost = section(report, "Not carried over")
    assert (
        "56 functions load, but are not available here (typing one says so): cop (at 99, 901,"
        in lost
    )
    assert report.count("not available here") == 1
    assert "958: cop.58: is not an app_rpt function name" in lost  # the stock file's own typo
    for quiet in ("nounkeyct", "beaconing", "holdofftelem", "context", "erxgain", "politeid"):
        assert f"] {quiet}" not in report, quiet
    assert len(report.splitlines()) < 80


def test_hamvoip_node_keeps_its_id_time_out_and_macros(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "hamvoip", "1998")
    # HamVOIP's tx_timeout (its name for totime since 1.3), in ms.
    assert cfg.keying.tx_timeout_secs == 240
    # The voice ID file becomes the CW of idtalkover, which the repeater sent while talked over.
    a = cfg.announce
    assert (a.enabled, a.id_mode, a.callsign, a.id_interval_secs) == (
        True,
        "cw",
        "DE WA3XYZ/L",
        600,
    )
    assert (a.cw_tone_hz, a.cw_keys_when_idle) == (750.0, True)
    lost = section(report, "Not carried over")
    assert "the voice ID file /etc/asterisk/local/node-id: the ID is the CW of idtalkover" in lost
    # `5=macro,1`: app_rpt ignores the 1, so *52 runs macro 2 (none here: not found).
    assert ("5", "macro,1") in [(f.code, f.spec) for f in cfg.functions or ()]
    assert dict(cfg.macro) == {"1": "*81*80#"}
    m = CommandMapper(3.0, table=cfg.function_table, macros=cfg.macro)
    assert m.feed("*", 0) is None and m.feed("5", 0) is None
    assert m.feed("1", 0) == Command("macro", "*51", arg="1", spec="macro,1")
    assert cfg.register is not None and str(cfg.register.peer) == "register.allstarlink.org:4569"
    assert (cfg.radio.hang_time_ms, cfg.radio.courtesy_tone) == (100, ((660, 880, 150),))
    checks = section(report, "Check before serving")
    assert (
        "rpt.conf defines nodes 1998, 1999: this imported node 1998 only (--node picks one; "
        "without --node every node is imported into one config" in checks
    )
    for quiet in ("nounkeyct", "beaconing", "holdofftelem", "tx_timeout: no equivalent"):
        assert f"] {quiet}" not in lost, quiet
    # The same file's hub has no radio: no ID, no courtesy tone.
    hub, _ = imported(tmp_path / "hub", "hamvoip", "1999")
    assert hub.audio.backend == "none" and not hub.announce.enabled


def test_dial_hub_reads_its_includeifexists_custom_file(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "dial", "1999")
    # custom/rpt.conf, through `#includeifexists`: status posts and a permanent link.
    assert cfg.statpost is not None and cfg.statpost.url == "http://stats.allstarlink.org/uhandler"
    assert {n: (c.permanent, c.mode) for n, c in cfg.links.items()} == {
        "2000": (True, "transceive")
    }
    assert cfg.audio.backend == "none" and cfg.bridge.mode == "bridge"
    assert cfg.register is not None and cfg.register.node_id == "1999"
    assert "rpt.conf defines nodes 1999, 2000" in section(report, "Check before serving")
    lost = section(report, "Not carried over")
    assert "rpt.conf:291 [functions] 818: ilink 18: is not an app_rpt function name" in lost
    assert "custom/rpt.conf:6 [1999] startup_macro *8132000 (ilink,13) -> [links.2000]" in " ".join(
        report.split()
    )
    # The node custom/rpt.conf adds is a node of its own.
    other, _ = imported(tmp_path / "2000", "dial", "2000")
    assert other.node_id == "2000" and other.bridge.mode == "bridge"


def test_app_rpt_ultra_macros_follow_app_rpt(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "ultra", "1999")
    assert ("50", "macro,4") in [(f.code, f.spec) for f in cfg.functions or ()]
    assert cfg.rpt.startup_macro == "*501000"
    assert set(cfg.macro) == {"1000", *(f"20{n:02}" for n in range(11))}
    # *501000 runs macro 1000 (its startup macro), not "macro 4".
    m = CommandMapper(3.0, table=cfg.function_table, macros=cfg.macro)
    typed = [m.feed(d, 0) for d in "*501000"]
    assert typed[-1] == Command("macro", "*501000", arg="1000", spec="macro,4")
    # No iax.conf: ASL's shipped [radio] user, and the report says so.
    assert (cfg.listener.bind.port, cfg.listener.auth, cfg.verify_source_ip) == (4569, "off", True)
    assert "there is no iax.conf: the node listens as ASL's shipped iax.conf does" in section(
        report, "Check before serving"
    )
    assert "iax.conf [general] allow" not in report
    # The package's own name for the time-out (HamVOIP's), in ms.
    assert cfg.keying.tx_timeout_secs == 900
    # Its template is a hub (dahdi/pseudo): no ID and no courtesy tone to carry.
    assert cfg.bridge.mode == "bridge" and not cfg.announce.enabled
    lost = section(report, "Not carried over")
    assert "a table of its own for phone callers" in lost and "startup_macro_delay" in lost
    for quiet in ("nounkeyct", "beaconing", "parrot", "lnkactmacro", "node_lookup_method"):
        assert f"] {quiet}" not in lost, quiet
    assert len(report.splitlines()) < 80


def test_ultra_serves_and_runs_its_startup_macro_as_app_rpt(tmp_path: Path) -> None:
    imported(tmp_path, "ultra", "1999")
    path = tmp_path / "node.toml"
    udp, http = free_port(), free_port()
    text = path.read_text()
    # Only the ports change, and the status posts go nowhere: nothing real is contacted.
    text = text.replace("0.0.0.0:4569", f"127.0.0.1:{udp}").replace(
        "127.0.0.1:8730", f"127.0.0.1:{http}"
    )
    text = text.replace("http://stats.allstarlink.org/uhandler", f"http://127.0.0.1:{free_port()}/")
    path.write_text(text + "\n[links]\ndns = false\n" if "[links]" not in text else text)
    proc = NodeProcess(path, udp, http)
    try:
        proc.wait_ready()
        assert proc.get("/status").json()["node_id"] == "1999"
    finally:
        proc.kill()
    log = proc.communicate()[1]
    # Macro 1000 ran (app_rpt's reading of *501000); its own *509000# names no macro 9000.
    assert "macro 1000 runs *509000#" in log
    assert "macro 4 not found" not in log and "Traceback" not in log


def test_alsaradio_node(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "alsaradio", "27236")
    assert cfg.audio.backend == "cpal"
    # serial_disable = 1: chan_alsaradio keyed nothing and read nothing.
    assert (cfg.radio.ptt, cfg.radio.carrier, cfg.radio.rx_on_delay_ms) == ("none", "none", 80)
    assert "ALSA devices plughw:0,0 (input), plughw:0,0 (output)" in section(
        report, "Check before serving"
    )
    # unlinkedct = ct3 is not in its telemetry stanza: app_rpt's built-in ct3.
    assert cfg.radio.courtesy_tone == ((440, 0, 150),) and cfg.radio.courtesy_tone_level_db == -20.6
    assert "parrotmode" in section(report, "Not carried over")


def test_udrc_on_chan_rpiradio(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "udrc", "1999")
    r = cfg.radio
    assert cfg.audio.backend == "cpal"
    assert (r.ptt, r.ptt_device, r.ptt_pin, r.ptt_invert) == ("gpio", "gpiochip0", 12, False)
    assert (r.carrier, r.carrier_device, r.carrier_pin, r.carrier_invert) == (
        "gpio",
        "gpiochip0",
        22,
        False,
    )
    assert r.rx_on_delay_ms == 80  # rxondelay = 4, from [general]
    assert "rpiradio.conf:6 [general] rxondelay -> [radio] rx_on_delay_ms" in report
    assert "pins 12 (PTT) and 22 (COR) are BCM numbers" in section(report, "Check before serving")
    assert (cfg.announce.callsign, cfg.announce.cw_tone_hz) == ("N0CALL/L", 1065.0)


def test_asl3_operator_node_with_templates(tmp_path: Path) -> None:
    cfg, report = imported(tmp_path, "asl3-operator", "2630")
    assert cfg.radio.ptt == "cm108" and cfg.radio.carrier_invert is True  # [2630](usb)
    assert cfg.radio.courtesy_tone == ()  # nounkeyct = 1: no courtesy tones
    assert "rpt.conf:57 [2630] nounkeyct -> [radio] courtesy_tone" in report
    assert (cfg.radio.hang_time_ms, cfg.rpt.telemdefault) == (0, 0)
    assert (cfg.announce.callsign, cfg.announce.id_interval_secs) == ("N0CALL", 540)
    # duplex = 0: app_rpt's ID keys nothing of its own, as this node's default.
    assert cfg.announce.cw_keys_when_idle is False
    assert cfg.register is not None and cfg.register.method == "http"
    assert cfg.rpt.tailmessagelist == (
        "/etc/asterisk/local/sounds/clubnet",
        "/etc/asterisk/local/sounds/repeaterinfo",
    )
    lost = section(report, "Not carried over")
    # The template's keys are the node's, named where they are written.
    assert "rpt.conf:16 [2630] linkmongain: the link-monitor gain" in lost
    mixer = "the CM108 mixer: set it once with alsamixer, then [audio] rx_gain_db / tx_gain_db (3):"
    assert f"{mixer} simpleusb.conf:23 [2630] rxmixerset; simpleusb.conf:18" in lost
    hub, hub_report = imported(tmp_path / "hub", "asl3-operator", "1999")
    # The template's |iNOTSET on a hub: nothing to identify, nothing said.
    assert not hub.announce.enabled and "NOTSET" not in hub_report


@pytest.mark.parametrize(
    ("name", "node", "why"),
    [
        ("asl1-pita", "1999", "rxchannel Pi/1: chan_pi drives the DMK PiTA board"),
        ("asl1-pciradio", "1999", "rxchannel Zap/1: a Zaptel card channel"),
        ("asl1-twousb", "1234", "carrierfrom = dsp: the carrier decoded from the discriminator"),
        ("voter", "1999", "rxchannel Voter/1999: chan_voter: receivers voted over the network"),
    ],
)
def test_a_radio_the_node_cannot_drive_writes_nothing_unless_forced(
    tmp_path: Path, name: str, node: str, why: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    args = ["--asterisk-dir", str(CORPUS / name), "--node", node, "--config", str(out / "n.toml")]
    r = cli(*args)
    assert r.returncode == 78
    assert list(out.iterdir()) == []
    assert r.stdout.startswith(f"Not imported: node {node}'s radio cannot be driven")
    assert "NOT CARRIED: " in r.stdout and why in " ".join(r.stdout.split())
    assert "nothing written" in r.stderr and "--force" in r.stderr
    forced = cli(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "(--force: see NOT CARRIED below)" in forced.stdout.splitlines()[0]
    cfg = load_config(out / "n.toml")
    if name == "asl1-twousb":  # the radio, without its carrier detect
        assert (cfg.radio.ptt, cfg.radio.carrier) == ("cm108", "none")
    else:  # no radio at all
        assert (cfg.audio.backend, cfg.bridge.mode) == ("none", "bridge")


def test_an_error_names_the_operators_line_and_leaves_nothing(tmp_path: Path) -> None:
    """usbradio-usrp's `startup_macro = startup_macro=*8131999` (a real typo): the written
    config would not load; the error names rpt.conf's line, and no file is left behind."""
    out = tmp_path / "out"
    out.mkdir()
    args = ["--asterisk-dir", str(CORPUS / "usbradio-usrp"), "--node", "2740"]
    r = cli(*args, "--config", str(out / "n.toml"), "--force")
    assert r.returncode == 78
    assert r.stderr.startswith("import-asl3: rpt.conf:38: [2740] startup_macro: is not a DTMF")
    assert "import-tmp" not in r.stderr and str(out) not in r.stderr
    assert list(out.iterdir()) == []  # neither the config nor the nodes file
    cfg, _ = imported(tmp_path, "usbradio-usrp", "1999")  # the other node is fine
    assert cfg.audio.backend == "usrp" and cfg.radio.courtesy_tone == ()
    assert not cfg.announce.enabled  # its ID lines are commented out


@pytest.mark.parametrize(("name", "node", "written"), IMPORTS)
def test_no_canary_anywhere_and_the_same_files_twice(
    tmp_path: Path, name: str, node: str, written: bool
) -> None:
    args = ["--asterisk-dir", str(CORPUS / name), "--node", node]
    args += ["--config", str(tmp_path / "node.toml")]
    if not written:
        args.append("--force")
    first = cli(*args)
    if (name, node) == ("usbradio-usrp", "2740"):
        assert first.returncode == 78  # the typo above
    else:
        assert first.returncode == 0, first.stderr
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    second = cli(*args)
    assert (second.stdout, second.stderr) == (first.stdout, first.stderr)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files
    sources = b"".join(p.read_bytes() for p in sorted((CORPUS / name).rglob("*.conf")))
    canaries = set(re.findall(rb"CANARY[-\w]*", sources))
    for canary in canaries:
        assert canary.decode() not in first.stdout + first.stderr
        assert all(canary not in data for data in files.values())
    assert len(first.stdout.splitlines()) < 80


def test_the_corpus_readme_names_every_directory() -> None:
    readme = (CORPUS / "README.md").read_text()
    for d in sorted(p.name for p in CORPUS.iterdir() if p.is_dir()):
        assert f"| `{d}` |" in readme, d
    assert {name for name, _, _ in IMPORTS} == {p.name for p in CORPUS.iterdir() if p.is_dir()}
