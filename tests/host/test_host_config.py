"""The nodes of one host in one file: `[nodes.<number>]` tables beside the first node."""

from __future__ import annotations

from pathlib import Path

import pytest

from node.config import NodeConfig, load_config
from node.errors import ConfigError

TWO = """
node_id = "2000"
[listener]
bind = "127.0.0.1:4569"
[control]
[audio]
backend = "none"
[links.2001]
permanent = true
[nodes.2001]
[nodes.2001.audio]
backend = "usrp"
[nodes.2001.usrp]
listen = "127.0.0.1:34001"
peer = "127.0.0.1:32001"
[nodes.2001.macro]
1 = "*32000"
"""


def load(tmp_path: Path, text: str) -> NodeConfig:
    path = tmp_path / "node.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def fault(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    return info.value


def test_one_node_file_hosts_one_node(tmp_path: Path) -> None:
    config = load(tmp_path, 'node_id = "2000"\n[listener]\n[control]\n')
    assert config.nodes == ()
    assert config.hosted == (config,)


def test_further_node_shares_the_listener_and_has_its_own_sections(tmp_path: Path) -> None:
    config = load(tmp_path, TWO)
    first, second = config.hosted
    assert (first.node_id, second.node_id) == ("2000", "2001")
    assert second.listener == first.listener and second.listener.bind.port == 4569
    assert second.control == first.control
    assert second.audio.backend == "usrp" and first.audio.backend == "none"
    assert dict(second.macro) == {"1": "*32000"} and dict(first.macro) == {}
    # Nothing of the first node's own sections leaks into the second.
    assert "2001" in first.links and dict(second.links) == {}


def test_number_used_twice_is_an_error(tmp_path: Path) -> None:
    err = fault(tmp_path, TWO + "[nodes.2000]\n")
    assert "declared twice" in str(err) and "nodes.2000" in str(err)


def test_further_node_may_not_set_a_shared_section(tmp_path: Path) -> None:
    err = fault(
        tmp_path,
        TWO.replace(
            "[nodes.2001.macro]", '[nodes.2001.listener]\nbind = "127.0.0.1:1"\n[nodes.2001.macro]'
        ),
    )
    assert "nodes.2001.listener" in str(err) and "shared by every node" in str(err)
    assert "[audio]" in str(err)  # the accepted keys of a node are named


def test_echolink_is_one_station_per_host(tmp_path: Path) -> None:
    """UDP 5198/5199 are fixed ports: `[echolink]` is given once, at the top."""
    echolink = '[echolink]\ncallsign = "N0CALL-L"\nnode_number = "123456"\n'
    config = load(tmp_path, TWO.replace("[audio]\n", echolink + "[audio]\n", 1))
    first, second = config.hosted
    assert first.echolink is not None and first.echolink.callsign == "N0CALL-L"
    assert second.echolink is None  # one station, the first node's: no second login or bind
    err = fault(tmp_path, TWO + echolink.replace("[echolink]", "[nodes.2001.echolink]"))
    assert "nodes.2001.echolink" in str(err) and "shared by every node" in str(err)


def test_first_node_needs_a_number(tmp_path: Path) -> None:
    err = fault(tmp_path, TWO.replace('node_id = "2000"\n', ""))
    assert "node_id" in str(err) and "first node's number" in str(err)


def test_fault_inside_a_further_node_names_the_node(tmp_path: Path) -> None:
    err = fault(tmp_path, TWO.replace('backend = "usrp"', 'backend = "loud"'))
    assert err.key == "nodes.2001.audio.backend"
    assert str(tmp_path / "node.toml") in str(err)
    assert "cpal" in str(err)  # the accepted values


def test_table_name_must_be_a_number(tmp_path: Path) -> None:
    err = fault(tmp_path, TWO + "[nodes.hub]\n")
    assert err.key == "nodes.hub"


def test_two_nodes_on_one_usrp_port(tmp_path: Path) -> None:
    text = TWO.replace(
        '[audio]\nbackend = "none"',
        '[audio]\nbackend = "usrp"\n[usrp]\nlisten = "127.0.0.1:34001"\npeer = "127.0.0.1:32009"',
    )
    err = fault(tmp_path, text)
    assert err.key == "nodes.2001.usrp.listen"


def test_a_further_node_that_registers_has_a_password_of_its_own(tmp_path: Path) -> None:
    config = load(tmp_path, TWO + '[nodes.2001.register]\nmethod = "http"\nnode_id = "2001"\n')
    second = config.hosted[1]
    assert second.register is not None and second.register.node_id == "2001"
    assert config.secret_settings.further_nodes == ("2001",)
    # Its table's number and its registration's are one number.
    err = fault(tmp_path, TWO + '[nodes.2001.register]\nmethod = "http"\nnode_id = "2002"\n')
    assert err.key == "nodes.2001.node_id"
