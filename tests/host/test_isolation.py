"""A host's nodes stand apart: a further node whose radio cannot open runs without it while the
others serve, a reload that rejects one node's table keeps that node as it was and reloads the
others, and `node ptt-release` releases every node's PTT even when one of them fails."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.interop.harness import node_log, running_node
from tests.radio.fake_hidraw import UNKEY_GPIO3, FakeHidraw
from tests.radio.test_daemon_radio import ptt_release


def two_nodes(second_radio: str, first_radio: str = "", second_extra: str = "") -> str:
    return (
        f"{first_radio}\n[links]\ndns = false\n\n[nodes.1001]\n[nodes.1001.audio]\n"
        f'backend = "none"\n{second_radio}\n{second_extra}\n'
    )


def test_a_further_node_whose_radio_fails_runs_without_it(tmp_path: Path) -> None:
    broken = f'[nodes.1001.radio]\nptt = "cm108"\nptt_device = "{tmp_path}/no-such-hidraw"\n'
    with running_node(tmp_path, "host", top='node_id = "1000"', sections=two_nodes(broken)) as node:
        nodes = node.get("/nodes").json()["nodes"]
        assert [n["node"] for n in nodes] == ["1000", "1001"]
        assert node.get("/nodes/1000/status").status_code == 200
        assert node.get("/nodes/1001/status").json()["node_id"] == "1001"
    assert "node 1001: cannot open its radio" in node_log(node)


def test_a_reload_that_rejects_one_node_keeps_it_and_reloads_the_others(tmp_path: Path) -> None:
    with running_node(tmp_path, "host", top='node_id = "1000"', sections=two_nodes("")) as node:
        text = node.config.read_text()
        # 1000 gets a new link health threshold; 1001's table a key that does not exist.
        text = text.replace("[links]\ndns = false", "[links]\ndns = false\nwarn_rtt_ms = 900")
        node.config.write_text(text + "[nodes.1001.keying]\nno_such_key = 1\n")
        node.signal(signal.SIGHUP)
        time.sleep(1.5)
        assert node.get("/nodes/1001/status").status_code == 200
    log = node_log(node)
    assert "nodes.1001.keying.no_such_key" in log
    assert "node 1001 kept its running configuration" in log
    assert "node 1000 reloaded: links.warn_rtt_ms;" in log


def test_ptt_release_releases_every_nodes_ptt(tmp_path: Path) -> None:
    with FakeHidraw() as a, FakeHidraw() as b:
        config = tmp_path / "host.toml"
        config.write_text(
            'node_id = "1000"\n[listener]\n[control]\n'
            f'[radio]\nptt = "cm108"\nptt_device = "{a.path}"\n'
            f'[nodes.1001]\n[nodes.1001.radio]\nptt = "cm108"\nptt_device = "{b.path}"\n'
        )
        done = ptt_release(config)
        assert done.returncode == 0, done.stderr
        assert a.reports() == [UNKEY_GPIO3] and b.reports() == [UNKEY_GPIO3]
        assert "node 1000: PTT released" in done.stderr
        assert "node 1001: PTT released" in done.stderr
        # The first node's device is gone: the second is still released, and the exit says so.
        config.write_text(
            config.read_text().replace(f'ptt_device = "{a.path}"', f'ptt_device = "{tmp_path}/x"')
        )
        done = ptt_release(config)
        assert done.returncode == 1
        assert "node 1000: cannot release the PTT" in done.stderr
        assert b.reports() == [UNKEY_GPIO3, UNKEY_GPIO3]
