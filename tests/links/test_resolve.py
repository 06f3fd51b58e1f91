"""The extnodes parser and explicit addresses (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from node.links.resolve import (
    NodeAddress,
    find_extnode,
    parse_address,
    parse_extnodes,
    resolve,
    same_ip,
)

EXTNODES = """\
; written by asl3-update-nodelist
[extnodes]
2000=radio@192.0.2.10:4569/2000,192.0.2.10
2001 = radio@192.0.2.11:4570/2001,NONE
2002=radio@192.0.2.12/2002,192.0.2.99
2003=radio@192.0.2.13:4569/2003
2004=radio@not-an-ip:4569/2004,192.0.2.14
2005=radio@192.0.2.15:0/2005,192.0.2.15
2006=radio@192.0.2.16:4569/2006,checker.example.org,VOTE
20000=radio@[2001:db8::1]:4569/20000,2001:db8::1
2000=radio@192.0.2.20:4569/2000,192.0.2.20
garbage line
"""


def test_parse_extnodes_reads_every_usable_line_and_the_last_entry_wins() -> None:
    nodes = parse_extnodes(EXTNODES)
    assert set(nodes) == {"2000", "2001", "2002", "2003", "2006"}
    assert nodes["2000"] == NodeAddress("2000", "192.0.2.20", 4569, check_ip="192.0.2.20")
    assert nodes["2001"] == NodeAddress("2001", "192.0.2.11", 4570, check_ip="NONE")
    # No port: 4569, as app_rpt's parse_node_format reads it.
    assert nodes["2002"] == NodeAddress("2002", "192.0.2.12", 4569, check_ip="192.0.2.99")
    assert nodes["2003"].check_ip is None
    assert nodes["2006"].check_ip == "checker.example.org"


@pytest.mark.parametrize("node", ["2000", "2001", "2002", "2003", "2004", "2005", "2006", "9"])
def test_find_extnode_agrees_with_the_full_parse(node: str) -> None:
    assert find_extnode(EXTNODES, node) == parse_extnodes(EXTNODES).get(node)


def test_find_extnode_matches_whole_node_numbers_only() -> None:
    assert find_extnode("20001=radio@192.0.2.1:4569/20001,192.0.2.1\n", "2000") is None
    assert find_extnode("12000=radio@192.0.2.1:4569/12000,192.0.2.1\n", "2000") is None
    assert find_extnode(EXTNODES, "20.0") is None
    assert find_extnode(EXTNODES, "") is None


def test_parse_address_forms_and_errors() -> None:
    assert parse_address("192.0.2.1", "2000") == NodeAddress(
        "2000", "192.0.2.1", 4569, check_ip="192.0.2.1"
    )
    assert parse_address(" 192.0.2.1:4570 ", "2000").port == 4570
    assert parse_address("[2001:db8::1]:4570", "2000").addr == ("2001:db8::1", 4570)
    for bad, needle in [
        ("host.example:4569", "IP address"),
        ("192.0.2.1:99999", "port must be 1-65535"),
        ("192.0.2.1:abc", "port must be a number"),
        ("[2001:db8::1", "missing ']'"),
        ("[2001:db8::1]4569", "':port'"),
    ]:
        with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
            parse_address(bad, "2000")


def test_same_ip_treats_mapped_ipv4_as_ipv4() -> None:
    assert same_ip("192.0.2.1", "::ffff:192.0.2.1")
    assert same_ip("2001:db8::1", "2001:0db8:0:0::1")
    assert not same_ip("192.0.2.1", "192.0.2.2")
    assert not same_ip("192.0.2.1", "not-an-ip")


def test_sync_resolve_keeps_its_contract(tmp_path: Path) -> None:
    file = tmp_path / "extnodes"
    file.write_text(EXTNODES)
    assert resolve("2001", None, file).port == 4570
    assert resolve("2001", "192.0.2.5:1234", file).addr == ("192.0.2.5", 1234)
    with pytest.raises(LookupError, match="not in the nodes file"):
        resolve("2999", None, file)
    with pytest.raises(LookupError, match="nodes_file"):
        resolve("2999", None, None)
    with pytest.raises(LookupError, match="cannot read"):
        resolve("2999", None, tmp_path / "missing")
