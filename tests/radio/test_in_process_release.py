"""The PTT is released when the node's own code fails while keyed: the node runs in the test's
loop (tests/in_process.py), keyed by the engine's `LocalTxChanged` edge, and an exception unwinds
through `RunningNode.close`, as it does through `node serve`'s `finally`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from node._core import LocalTxChanged
from tests.in_process import in_process_node, node_config
from tests.radio.fake_hidraw import KEY_GPIO3, UNKEY_GPIO3, FakeHidraw


class Failure(Exception):
    pass


def test_an_exception_while_keyed_releases_the_ptt(tmp_path: Path) -> None:
    async def scenario(hid: FakeHidraw) -> None:
        config = node_config(
            tmp_path / "node.toml",
            f'[radio]\nptt = "cm108"\nptt_device = "{hid.path}"\nhang_time_ms = 60000\n',
        )
        async with in_process_node(config) as node:
            # What the engine reports when the conference has audio for the local radio.
            node.controller.on_engine_events([LocalTxChanged(True)])
            assert node.controller.snapshot()["radio"]["ptt"]["keyed"]
            assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3]
            raise Failure("something in the node broke")

    with FakeHidraw() as hid:
        with pytest.raises(Failure):
            asyncio.run(scenario(hid))
        assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3, UNKEY_GPIO3]
