"""`node import-asl3` end to end: ASL3's shipped configuration and three operator-style ones
(tests/data/asl3/), each import checked key by key against the loaded config, the node serving
with the result, secrets kept out, and the same files on a second run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from node.config.node import NodeConfig
from tests.asl3import._run import cli, imported
from tests.node_process import NodeProcess, free_port

DATA = Path(__file__).resolve().parent.parent / "data" / "asl3"
SHIPPED = DATA / "shipped"


def run_import(tmp_path: Path, src: Path, node: str | None = None) -> tuple[NodeConfig, str]:
    return imported(tmp_path, src, node)


@pytest.mark.parametrize(
    ("node", "listen", "peer"), [("1999", 32001, 34001), ("1998", 32002, 34002)]
)
def test_shipped_config_carries_the_usrp_radio_and_node_list(
    tmp_path: Path, node: str, listen: int, peer: int
) -> None:
    cfg, report = run_import(tmp_path, SHIPPED, node)
    assert cfg.audio.backend == "usrp"
    assert (cfg.usrp.listen.host, cfg.usrp.listen.port) == ("127.0.0.1", listen)
    assert (cfg.usrp.peer.host, cfg.usrp.peer.port) == ("127.0.0.1", peer)
    assert cfg.bridge.mode == "conference" and cfg.bridge.include_local_radio
    assert (cfg.listener.bind.host, cfg.listener.bind.port) == ("127.0.0.1", 4569)
    assert cfg.listener.auth == "off" and cfg.verify_source_ip
    assert cfg.codec_policy == "ulaw_only"
    assert cfg.dns.enabled is False
    nodes = (tmp_path / "node-nodes.conf").read_text().splitlines()
    assert nodes == [
        "1999=radio@127.0.0.1:4569/1999,NONE",
        "1998=radio@127.0.0.1:4569/1998,NONE",
        "1000=radio@127.0.0.1:4571/1000,NONE",
        "1001=radio@127.0.0.1:4572/1001,NONE",
    ]
    assert cfg.nodes_file == tmp_path / "node-nodes.conf"
    assert cfg.radio.hang_time_ms == 2000 and cfg.keying.tx_timeout_secs == 180
    assert cfg.radio.courtesy_tone == ((660, 880, 150),)  # unlinkedct = ct2
    assert cfg.rpt.telemdefault == 2
    assert [f.code for f in cfg.functions][:7] == ["1", "2", "3", "4", "70", "99", "5"]
    # The shipped nodes do not register: their number is the top-level node_id.
    assert cfg.register is None and cfg.node_id == node
    text = (tmp_path / "node.toml").read_text()
    assert f'\nnode_id = "{node}"\n' in text and "#[register]" in text
    # Only what changes behaviour is reported: AMI is off there and here, chan_echolink is
    # not loaded, and the template's keys left at app_rpt's defaults change nothing.
    assert "manager.conf" not in report and "echolink.conf" not in report
    for key in ("holdofftelem", "erxgain", "context", "althangtime", "politeid", "parrotmode"):
        assert f"] {key}" not in report, key


def test_only_node_chosen_and_every_node_without_node(tmp_path: Path) -> None:
    r = cli("--asterisk-dir", str(SHIPPED), "--config", str(tmp_path / "n.toml"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Imported nodes 1999, 1998 into ")
    assert "=== Node 1999 ===" in r.stdout and "=== Node 1998 ===" in r.stdout
    r = cli("--asterisk-dir", str(DATA / "hub"), "--config", str(tmp_path / "h.toml"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Imported node 2500 into ")


def test_shipped_nodes_import_to_one_config_that_serves_both(tmp_path: Path) -> None:
    """ASL3's shipped rpt.conf (1999 and 1998) without --node: one file, the first node at the
    top, the second as [nodes.1998] with its own radio, tables and links, on one IAX2 port."""
    cfg, report = run_import(tmp_path, SHIPPED)
    first, second = cfg.hosted
    assert (first.node_id, second.node_id) == ("1999", "1998")
    assert second.listener == first.listener
    assert (first.audio.backend, second.audio.backend) == ("usrp", "usrp")
    assert first.usrp is not None and second.usrp is not None
    assert (first.usrp.listen.port, second.usrp.listen.port) == (32001, 32002)
    assert (first.usrp.peer.port, second.usrp.peer.port) == (34001, 34002)
    assert first.function_table == second.function_table
    assert first.nodes_file == second.nodes_file and first.nodes_file is not None
    assert "choose one with --node" not in report and "this imported node" not in report
    text = (tmp_path / "node.toml").read_text()
    assert "[nodes.1998.listener]" not in text and "[nodes.1998.usrp]" in text
    path = tmp_path / "node.toml"
    udp, http, u1, u2 = free_port(), free_port(), free_port(), free_port()
    text = text.replace("127.0.0.1:4569", f"127.0.0.1:{udp}")
    text = text.replace("127.0.0.1:8730", f"127.0.0.1:{http}")
    text = text.replace("127.0.0.1:32001", f"127.0.0.1:{u1}")
    text = text.replace("127.0.0.1:32002", f"127.0.0.1:{u2}")
    path.write_text(text)
    proc = NodeProcess(path, udp, http)
    try:
        proc.wait_ready()
        nodes = proc.get("/nodes").json()["nodes"]
        assert [(n["node"], n["radio"]) for n in nodes] == [("1999", "usrp"), ("1998", "usrp")]
        assert proc.get("/nodes/1998/status").json()["node_id"] == "1998"
    finally:
        proc.kill()


def test_hub_on_local_pseudo(tmp_path: Path) -> None:
    cfg, report = run_import(tmp_path, DATA / "hub")
    assert cfg.audio.backend == "none" and cfg.bridge.mode == "bridge"
    assert cfg.keying.tx_timeout_secs == 180  # totime also bounds the operator's key
    assert "hangtime" not in report  # a hub has no transmitter to hang: nothing changes
    assert cfg.register is not None and cfg.node_id == "2500"
    assert (cfg.register.method, cfg.register.node_id, cfg.register.refresh) == (
        "http",
        "2500",
        180,
    )
    assert cfg.secrets.source == "env"
    assert (cfg.listener.bind.host, cfg.listener.bind.port) == ("0.0.0.0", 4570)
    assert cfg.listener.auth == "optional"  # [radio] admits nodes; 2501 has a secret
    assert cfg.codec_policy == "allow_slin"
    assert cfg.dns.enabled is True
    # startup_macro's ilink,13 links became permanent links; what is left stays a macro.
    assert {n: (c.permanent, c.mode) for n, c in cfg.links.items()} == {
        "2501": (True, "transceive"),
        "2502": (True, "transceive"),
    }
    assert cfg.rpt.startup_macro == "*722"
    assert cfg.rpt.telemdefault == 1  # the stanza overrides its template
    assert [(f.code, f.spec) for f in cfg.functions] == [
        ("1", "ilink,1"),
        ("2", "ilink,2"),
        ("3", "ilink,3"),
        ("5", "macro"),
        ("811", "ilink,11"),
        ("813", "ilink,13"),
        ("70", "ilink,5"),
        ("6", "autopatchup,noct=1"),
        ("722", "status,2"),
    ]
    assert dict(cfg.macro) == {"1": "*8132503", "2": "*8112503", "3": "*8112501"}
    assert [(e.macro, e.text) for e in cfg.schedule] == [
        ("1", "00 07 * * 1-5"),
        ("2", "00 09 * * 1-5"),
    ]
    assert cfg.ami.enabled and cfg.ami.username == "admin" and not cfg.ami.read_only
    assert (cfg.ami.bind.host, cfg.ami.bind.port) == ("127.0.0.1", 5038)
    assert "NET_NODE=2500 and NET_SECRET" in report
    assert "NET_AMI_SECRET" in report and "NET_PEER_2501" in report
    # The autopatch is named once, by its function; its context and callerid change nothing.
    assert "1 function loads, but is not available here (typing one says so):" in report
    assert "autopatchup (at 6)" in report and "context" not in report


def test_repeater_on_simpleusb(tmp_path: Path) -> None:
    cfg, report = run_import(tmp_path, DATA / "repeater")
    r = cfg.radio
    assert cfg.audio.backend == "cpal"
    assert (r.ptt, r.ptt_invert, r.carrier, r.carrier_invert) == ("cm108", True, "cm108", True)
    assert (r.rx_on_delay_ms, r.rx_audio_delay_ms, r.hang_time_ms) == (60, 100, 1200)
    assert r.courtesy_tone == ((350, 0, 100), (500, 0, 100), (660, 0, 100))
    assert r.courtesy_tone_level_db == -24.1
    a = cfg.announce
    assert (a.enabled, a.id_mode, a.callsign, a.id_interval_secs) == (True, "cw", "W1AW/R", 600)
    assert (a.cw_wpm, a.cw_tone_hz) == (18, 1000.0)
    assert cfg.keying.tx_timeout_secs == 240
    assert cfg.register is not None and cfg.register.method == "iax2"
    assert str(cfg.register.peer) == "register.example.net:4569"
    assert (cfg.rpt.telemdefault, cfg.rpt.telemdynamic) == (1, False)
    assert "devstr 1-1.4:1.0 is a USB path" in report  # the hidraw node is left to check


def test_dvswitch_on_usrp(tmp_path: Path) -> None:
    cfg, _ = run_import(tmp_path, DATA / "dvswitch")
    assert cfg.audio.backend == "usrp"
    assert str(cfg.usrp.listen) == "127.0.0.1:32001" and str(cfg.usrp.peer) == "127.0.0.1:34001"
    assert cfg.codec_policy == "prefer_slin16"
    assert cfg.keying.tx_timeout_secs == 600 and cfg.radio.hang_time_ms == 0
    assert cfg.rpt.startup_macro == "*32701"  # ilink,3: not permanent, stays a startup macro
    assert cfg.register is not None and cfg.register.node_id == "2700"


@pytest.mark.parametrize("name", ["hub", "repeater", "dvswitch", "shipped"])
def test_same_files_twice_and_no_secret_anywhere(tmp_path: Path, name: str) -> None:
    args = ["--asterisk-dir", str(DATA / name), "--config", str(tmp_path / "node.toml")]
    if name == "shipped":
        args += ["--node", "1999"]
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    written = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    second = cli(*args)
    assert second.stdout == first.stdout
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == written
    sources = b"".join(p.read_bytes() for p in sorted((DATA / name).rglob("*.conf")))
    secrets = set(re.findall(rb"CANARY[-\w]*|make4An1ce-secret", sources))
    assert secrets  # each configuration holds secrets to keep out
    for secret in secrets:
        assert secret.decode() not in first.stdout + first.stderr
        assert all(secret not in data for data in written.values())


def test_unparsable_config_names_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "asterisk"
    shutil.copytree(DATA / "hub", src)
    with (src / "custom" / "rpt.conf").open("a") as f:
        f.write("this line has no equals sign\n")
    r = cli("--asterisk-dir", str(src), "--config", str(tmp_path / "n.toml"))
    assert r.returncode == 78
    assert r.stderr.startswith("import-asl3: custom/rpt.conf:4: no '='")
    assert not (tmp_path / "n.toml").exists()


@pytest.mark.parametrize(("node", "usrp_port"), [("1999", 32001), ("1998", 32002)])
def test_node_serves_with_the_imported_shipped_config(
    tmp_path: Path, node: str, usrp_port: int
) -> None:
    run_import(tmp_path, SHIPPED, node)
    path = tmp_path / "node.toml"
    udp, http, usrp = free_port(), free_port(), free_port()
    text = path.read_text()
    # Only the ports change, so the test runs beside anything else on this host.
    text = text.replace("127.0.0.1:4569", f"127.0.0.1:{udp}")
    text = text.replace("127.0.0.1:8730", f"127.0.0.1:{http}")
    text = text.replace(f"127.0.0.1:{usrp_port}", f"127.0.0.1:{usrp}")
    path.write_text(text)
    proc = NodeProcess(path, udp, http)
    try:
        proc.wait_ready()
        status = proc.get("/status").json()
        assert "usrp" in str(status)
    finally:
        proc.kill()


def test_unknown_node_and_missing_rpt_conf_are_named(tmp_path: Path) -> None:
    r = cli("--asterisk-dir", str(SHIPPED), "--node", "2000", "--config", str(tmp_path / "n.toml"))
    assert r.returncode == 78
    assert "rpt.conf: has no node stanza [2000] (it has: 1999, 1998)" in r.stderr
    r = cli("--asterisk-dir", str(tmp_path), "--config", str(tmp_path / "n.toml"))
    assert r.returncode == 78
    assert f"{tmp_path / 'rpt.conf'}: does not exist" in r.stderr
    assert list(tmp_path.iterdir()) == []
