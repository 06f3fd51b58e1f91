"""The D-Star guard with a `dstar` USRP radio, at the transmit service (a fake bridge and link
network, no engine), and the `[usrp]` section's checks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from node.config import AudioConfig, UsrpConfig, load_config
from node.config.values import Address
from node.errors import CommandError, ConfigError, RadioError
from node.events import Radio
from node.radio.transmit import DSTAR_REFUSAL
from node.radio.usrp import UsrpPtt
from tests.radio.test_transmit import service

USRP = UsrpConfig(listen=Address("127.0.0.1", 34001), peer=Address("127.0.0.1", 32001))


def dstar(**more: object):  # type: ignore[no-untyped-def]
    return service(
        audio=AudioConfig(backend="usrp"),
        usrp=UsrpConfig(listen=USRP.listen, peer=USRP.peer, network="dstar"),
        **more,
    )


def test_every_key_command_is_refused_and_nothing_moves() -> None:
    async def main() -> None:
        tx, bridge, links, _rec = dstar()
        assert tx.dstar_active() and tx.usrp_dstar
        for source in ("operator", "ami", "dtmf", "tui", "play"):
            with pytest.raises(CommandError) as refused:
                tx.key(source)
            assert str(refused.value) == DSTAR_REFUSAL
            assert refused.value.status == 409
        assert bridge.keyed == [] and links.local == [] and tx.keyed_at is None

    asyncio.run(main())


def test_the_dstar_sides_own_voice_keys_the_node_but_no_tone_answers() -> None:
    async def main() -> None:
        from node.config import RadioConfig

        tx, bridge, _links, rec = dstar(radio=RadioConfig(courtesy_tone=((880.0, 0.0, 100),)))
        tx.usrp_carrier_changed(True)  # no radio edge here: key through the squelch path
        tx._on_squelch(True)
        assert bridge.keyed == [True]
        tx._on_squelch(False)
        assert bridge.keyed == [True, False]
        assert bridge.played == [], "the courtesy tone would key D-Star"
        assert [e.kind for e in rec.published if isinstance(e, Radio)] == ["carrier", "carrier"]

    asyncio.run(main())


def test_other_networks_and_links_keep_todays_guard() -> None:
    async def main() -> None:
        tx, bridge, links, _rec = service(
            audio=AudioConfig(backend="usrp"),
            usrp=UsrpConfig(listen=USRP.listen, peer=USRP.peer, network="dmr"),
        )
        assert not tx.dstar_active()
        tx.key("operator")
        tx.unkey()
        links.dstar = True
        with pytest.raises(CommandError):
            tx.key("carrier")
        assert bridge.keyed == [True, False]

    asyncio.run(main())


def test_caller_metadata_is_published_and_cleared() -> None:
    async def main() -> None:
        tx, _bridge, _links, rec = service()
        tx.usrp_meta_received({"callsign": "N0CALL", "source_id": 1, "talkgroup": 91})
        assert tx.usrp_caller is not None and tx.usrp_caller["callsign"] == "N0CALL"
        ev = [e for e in rec.published if isinstance(e, Radio)][-1]
        assert ev.to_json()["caller"]["talkgroup"] == 91
        tx.usrp_carrier_changed(False)
        assert tx.usrp_caller is None
        tx.usrp_peer_changed(False)
        last = [e for e in rec.published if isinstance(e, Radio)][-1]
        assert (last.kind, last.on, last.reason) == ("peer", False, "peer lost")

    asyncio.run(main())


def test_usrp_ptt_keys_the_port_once_attached_and_releases_on_close() -> None:
    class Port:
        def __init__(self) -> None:
            self.calls: list[bool] = []

        def set_keyed(self, keyed: bool) -> None:
            self.calls.append(keyed)

    ptt, port = UsrpPtt("dmr"), Port()
    ptt.set(True)  # before the bridge opened the port: remembered
    ptt.attach(port)
    ptt.set(False)
    ptt.close()
    assert port.calls == [True, False, False]
    assert ptt.describe() == {"backend": "usrp", "network": "dmr"}

    class Closed:
        def set_keyed(self, keyed: bool) -> None:
            raise RuntimeError("the USRP port is closed")

    ptt.attach(None)
    ptt.port = Closed()
    with pytest.raises(RadioError):
        ptt.set(True)
    ptt.close()  # never raises: shutdown goes on


BASE = """
[listener]
bind = "127.0.0.1:4569"
[control]
bind = "127.0.0.1:8730"
"""


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('[audio]\nbackend = "usrp"\n', "audio.backend", "no [usrp] section"),
        (
            '[audio]\nbackend = "usrp"\n[usrp]\nlisten = "127.0.0.1:1"\npeer = "127.0.0.1:2"\n'
            "prefill_ms = 200\nbuffer_ms = 200\n",
            "usrp.buffer_ms",
            "does not exceed",
        ),
        (
            '[audio]\nbackend = "usrp"\n[usrp]\nlisten = "127.0.0.1:1"\npeer = "127.0.0.1:2"\n'
            'network = "dmrplus"\n',
            "usrp.network",
            "dstar",
        ),
        (
            '[audio]\nbackend = "usrp"\n[usrp]\nlisten = "127.0.0.1:1"\npeer = "127.0.0.1:2"\n'
            "prefill_ms = 30\n",
            "usrp.prefill_ms",
            "multiple of 20",
        ),
        ('[audio]\nbackend = "usrp"\n[usrp]\npeer = "127.0.0.1:2"\n', "usrp.listen", ""),
        (
            '[audio]\nbackend = "usrp"\n[usrp]\nlisten = "127.0.0.1:1"\npeer = "127.0.0.1:2"\n'
            '[radio]\nptt = "serial"\nptt_device = "/dev/ttyUSB0"\n',
            "radio.ptt",
            "USRP",
        ),
    ],
)
def test_bad_usrp_settings_name_the_file_key_and_values(
    tmp_path: Path, text: str, key: str, words: str
) -> None:
    path = tmp_path / "node.toml"
    path.write_text(BASE + text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert str(path) in message and key in message and words in message


@pytest.mark.parametrize(("network", "keys"), [("dmr", True), ("dstar", False)])
def test_no_playback_keys_a_dstar_usrp_transmitter(network: str, keys: bool) -> None:
    # The station ID under cw_keys_when_idle and the courtesy tone are the playbacks that key
    # the transmitter: behind a dstar USRP radio none may (the engine reports no LocalTxChanged).
    import time

    from node._core import Engine, EngineEvent, LocalTxChanged, PlayFinished
    from node.media.bridge import MediaBridge, Topology

    engine = Engine("127.0.0.1:0")
    cfg = UsrpConfig(listen=Address("127.0.0.1", 0), peer=USRP.peer, network=network)
    try:
        bridge = MediaBridge(engine, Topology(), "usrp", usrp=cfg)
        bridge.start_audio()
        bridge.play(bridge.tone_pcm(880.0, 200, -20.0), "to_monitor", "id", keys_transmitter=True)
        seen: list[EngineEvent] = []

        def finished() -> bool:
            seen.extend(engine.drain_events())
            return any(isinstance(e, PlayFinished) for e in seen)

        deadline = time.monotonic() + 10
        while not finished() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert finished()
        assert (LocalTxChanged(True) in seen) is keys, seen
        bridge.close()
    finally:
        engine.stop()
