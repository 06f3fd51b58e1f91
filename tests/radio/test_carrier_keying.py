"""A carrier keys the node into its links exactly as POST /key does: the COS input of a CM108
interface faked at its hidraw node (a pty) against a real `node serve` linked to a scripted
AllStarLink node (the same peers tests/links/test_keying.py uses)."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from pathlib import Path

from node.controller import DSTAR_REFUSAL
from tests.interop.harness import EventWatcher, wait_until
from tests.links.replay import ScriptedNode
from tests.links.test_keying import node_1999
from tests.node_process import NodeProcess
from tests.radio.fake_hidraw import FakeHidraw

VOL_DOWN = 0x02


def cos_node(
    tmp_path: Path, peer: ScriptedNode, hid: FakeHidraw, extra: str = ""
) -> AbstractContextManager[NodeProcess]:
    """Node 1999 of tests/links/test_keying.py with a CM108 interface: PTT and COS."""
    radio = f'[radio]\nptt = "cm108"\nptt_device = "{hid.path}"\ncarrier = "cm108"\n\n'
    return node_1999(tmp_path, peer, radio + extra)


def significant(peer: ScriptedNode, start: int) -> list[str]:
    return [n for n in peer.received[start:] if not n.startswith("TEXT L ")]


def test_cos_keys_the_link_as_post_key_does(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        ScriptedNode("1998") as peer,
        cos_node(tmp_path, peer, hid) as node,
    ):
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        peer.wait_call()
        wait_until("legacy keying", lambda: "legacy" in str(node.get("/status").json()["links"]))
        events = EventWatcher(node)
        start = len(peer.received)
        hid.send_input(VOL_DOWN)
        opened = events.wait_for(lambda e: e["event"] == "radio" and e["kind"] == "carrier")
        assert opened == {"event": "radio", "kind": "carrier", "on": True}
        keyed = events.wait_for(lambda e: e["event"] == "link" and e["kind"] == "keyed")
        assert keyed["node"] == "1999" and keyed["keyed"] is True and keyed["call"] is None
        status = node.get("/status").json()
        assert status["tx"]["keyed"] and status["radio"]["carrier"]["open"]
        time.sleep(0.5)
        hid.send_input(0)
        events.wait_for(lambda e: e["event"] == "link" and e.get("keyed") is False)
        wait_until("the unkey", lambda: "RADIO_UNKEY" in peer.received[start:])
        time.sleep(0.2)
        # The framing POST /key gives a legacy link: key, voice, unkey.
        assert significant(peer, start) == ["RADIO_KEY", "VOICE", "RADIO_UNKEY"]
        unkeyed = [e for e in events.named("link") if e.get("keyed") is False]
        assert unkeyed[0]["reason"] == "carrier dropped"


def test_the_operator_and_the_carrier_each_hold_the_key(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        ScriptedNode("1998") as peer,
        cos_node(tmp_path, peer, hid) as node,
    ):
        events = EventWatcher(node)
        assert node.post("/key", json={}).json()["tx"]["keyed"]
        hid.send_input(VOL_DOWN)
        events.wait_for(lambda e: e["event"] == "radio" and e["kind"] == "carrier")
        hid.send_input(0)
        events.wait_for(lambda e: e["event"] == "radio" and e["kind"] == "carrier" and not e["on"])
        # The carrier went, the operator still holds the key.
        assert node.get("/status").json()["tx"]["keyed"]
        keyed = [e["keyed"] for e in events.named("link") if e["kind"] == "keyed"]
        assert keyed == [True]  # keyed once, by the operator; the carrier added no edge
        assert node.post("/unkey", json={}).json()["tx"]["keyed"] is False


def test_the_dstar_guard_refuses_a_carrier_too(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        ScriptedNode("1998") as peer,
        cos_node(tmp_path, peer, hid, '[links.1998]\nnetwork = "dstar"\n') as node,
    ):
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        peer.wait_call()
        events = EventWatcher(node)
        start = len(peer.received)
        for _ in range(2):  # checked on every carrier
            # Count before the input: on a busy host the event can arrive before the next line.
            mark = len(events.events)
            hid.send_input(VOL_DOWN)
            refused = events.wait_for(
                lambda e: e["event"] == "radio" and e["kind"] == "carrier" and e["on"],
                since=mark,
            )
            assert refused["reason"] == DSTAR_REFUSAL
            mark = len(events.events)
            hid.send_input(0)
            events.wait_for(
                lambda e: e["event"] == "radio" and e["kind"] == "carrier" and not e["on"],
                since=mark,
            )
        assert node.get("/status").json()["tx"]["keyed"] is False
        time.sleep(0.3)
        assert "VOICE" not in peer.received[start:] and "RADIO_KEY" not in peer.received[start:]
        assert not [e for e in events.named("link") if e["kind"] == "keyed"]


def test_courtesy_tone_keys_the_transmitter_after_a_received_transmission(tmp_path: Path) -> None:
    with (
        FakeHidraw() as hid,
        ScriptedNode("1998") as peer,
        node_1999(
            tmp_path,
            peer,
            f'[radio]\nptt = "cm108"\nptt_device = "{hid.path}"\ncarrier = "cm108"\n'
            "hang_time_ms = 300\ncourtesy_tone = [[880, 0, 100], [0, 0, 50], [660, 0, 100]]\n\n"
            '[bridge]\nmode = "conference"\ninclude_local_radio = true\n',
        ) as node,
    ):
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        peer.wait_call()
        events = EventWatcher(node)
        hid.send_input(VOL_DOWN)
        events.wait_for(lambda e: e["event"] == "link" and e.get("keyed") is True)
        time.sleep(0.3)
        start = len(peer.received)
        minis = peer.minis
        hid.send_input(0)
        dropped = events.wait_for(
            lambda e: e["event"] == "radio" and e["kind"] == "carrier" and not e["on"]
        )
        # The tone keys our transmitter (it was not keyed: a node does not hear its own
        # receiver), then the hang time releases it.
        on = events.wait_for(lambda e: e["event"] == "radio" and e["kind"] == "ptt" and e["on"])
        off = events.wait_for(
            lambda e: e["event"] == "radio" and e["kind"] == "ptt" and not e["on"]
        )
        held = events.arrival(off) - events.arrival(on)
        assert 0.45 < held < 1.5, held  # 250 ms of tone + 300 ms hang time (+ ticks)
        assert events.arrival(on) >= events.arrival(dropped)
        # On the transmitter only: nothing more reached the link than the end of our spurt.
        time.sleep(0.3)
        assert "VOICE" not in peer.received[start:] and peer.minis - minis < 5
        assert not events.named("announcement_started")
