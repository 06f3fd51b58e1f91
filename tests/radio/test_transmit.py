"""The transmit service alone: holds on the local source, the D-Star guard, the TX time-out,
and the radio's squelch with its courtesy tone (a fake bridge and link network, no engine)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from node.config import KeyingConfig, NodeConfig, RadioConfig
from node.effects import KeyingChanged
from node.errors import CommandError
from node.events import Link, Radio
from node.radio.transmit import COURTESY, DSTAR_REFUSAL, TransmitService
from tests.service_context import Recorded, recording_context


class FakeBridge:
    rate = 8000

    def __init__(self) -> None:
        self.keyed: list[bool] = []
        self.played: list[tuple[str, str, bool]] = []

    def set_local_keyed(self, keyed: bool) -> None:
        self.keyed.append(keyed)

    def play(self, pcm: bytes, destination: str, kind: str, *, keys_transmitter: bool) -> None:
        assert pcm
        self.played.append((destination, kind, keys_transmitter))


class FakeLinks:
    def __init__(self) -> None:
        self.dstar = False
        self.local: list[bool] = []

    def dstar_active(self) -> bool:
        return self.dstar

    def set_local_keyed(self, keyed: bool, now: float) -> None:
        self.local.append(keyed)


def service(**config: Any) -> tuple[TransmitService, FakeBridge, FakeLinks, Recorded]:
    rec = recording_context(NodeConfig(**config), lambda: 100.0)
    links, bridge = FakeLinks(), FakeBridge()
    tx = TransmitService(rec.ctx, links)
    tx.attach(bridge, None)  # type: ignore[arg-type]
    return tx, bridge, links, rec


def test_the_local_source_stays_keyed_while_any_source_holds_it() -> None:
    async def main() -> None:
        tx, bridge, links, rec = service()
        published = rec.published
        effects = [tx.key("operator"), tx.key("carrier")]
        assert bridge.keyed == [True] and links.local == [True]
        assert tx.tx_json(100.0) == {"keyed": True, "timeout_s": 180, "timeout_remaining_s": 180}
        effects.append(tx.unkey("carrier dropped", source="carrier"))
        assert bridge.keyed == [True]  # the operator still holds it
        effects.append(tx.unkey())
        assert bridge.keyed == [True, False] and links.local == [True, False]
        assert [e for e in published if isinstance(e, Link)] == [
            Link(kind="keyed", node=None, call=None, keyed=True),
            Link(kind="keyed", node=None, call=None, keyed=False, reason=None),
        ]
        assert sum(fx.changed for fx in effects) == 2
        # Each keying and unkeying is a status post.
        assert [e for fx in effects for e in fx.events] == [KeyingChanged(), KeyingChanged()]
        assert tx.key_stats.timeouts == 0

    asyncio.run(main())


def test_dstar_refuses_every_key_before_anything_moves() -> None:
    async def main() -> None:
        tx, bridge, links, rec = service()
        published = rec.published
        links.dstar = True
        with pytest.raises(CommandError) as refused:
            tx.key()
        assert (refused.value.status, str(refused.value)) == (409, DSTAR_REFUSAL)
        tx._on_squelch(True)  # the carrier is refused the same way, and says why
        assert bridge.keyed == [] and links.local == []
        assert Radio(kind="carrier", on=True, reason=DSTAR_REFUSAL) in published

    asyncio.run(main())


def test_the_tx_time_out_releases_every_hold() -> None:
    async def main() -> None:
        tx, bridge, _, rec = service(keying=KeyingConfig(tx_timeout_secs=0))
        published = rec.published
        tx.key("operator")
        tx.key("carrier")
        # The time-out is the router's deadline of kind TX_TIMEOUT: 0 s after keying.
        assert tx.next_deadline() == 100.0
        tx.timer(100.0)
        assert bridge.keyed == [True, False] and tx.keyed_at is None
        assert tx.next_deadline() is None
        assert tx.key_stats.timeouts == 1
        assert published[-1] == Link(
            kind="keyed", node=None, call=None, keyed=False, reason="TX time-out after 0 s"
        )

    asyncio.run(main())


def test_a_carrier_that_keyed_the_node_ends_with_the_courtesy_tone() -> None:
    async def main() -> None:
        tone = ((880.0, 0.0, 100),)
        tx, bridge, _, rec = service(radio=RadioConfig(courtesy_tone=tone))
        published = rec.published
        tx._on_squelch(True)
        tx._on_squelch(False)
        assert bridge.keyed == [True, False]
        assert bridge.played == [("to_monitor", COURTESY, True)]
        assert [e for e in published if isinstance(e, Radio)] == [
            Radio(kind="carrier", on=True),
            Radio(kind="carrier", on=False),
        ]
        # A carrier that did not hold the source (closing twice) plays nothing.
        tx._on_squelch(False)
        assert len(bridge.played) == 1

    asyncio.run(main())
