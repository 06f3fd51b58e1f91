"""Keying end to end: legacy peers, the TX time-out, the D-Star guard, and that nothing keys
the local source except `Controller.key`.

The peers are `ScriptedNode`s (our Endpoint on a socket) so a test can play a node that never
sends `!NEWKEY1!`, or one that wants `!NEWKEY!`, against a real `node serve`.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import node as node_package
from node.controller import DSTAR_REFUSAL
from node.iax2.call import CallState
from tests.interop.harness import EventWatcher, running_node, wait_until
from tests.links.replay import JitterBufferedNode, ScriptedNode, Step
from tests.node_process import NodeProcess


@contextmanager
def node_1999(tmp_path: Path, peer: ScriptedNode, extra: str = "") -> Iterator[NodeProcess]:
    nodes = tmp_path / "extnodes"
    nodes.write_text(f"1998=radio@127.0.0.1:{peer.addr[1]}/1998,127.0.0.1\n")
    with running_node(
        tmp_path,
        "node1999",
        listener='auth = "off"',
        sections=(
            '[register]\npeer = "127.0.0.1:9"\nnode_id = "1999"\n\n'
            f'[links]\nnodes_file = "{nodes}"\ndns = false\n\n{extra}'
        ),
        env={"NET_NODE": "1999", "NET_SECRET": "not-used-here"},
    ) as node:
        yield node


def link(node: NodeProcess, peer: str = "1998") -> dict:
    return next(li for li in node.get("/status").json()["links"] if li["node"] == peer)


def received_since(peer: ScriptedNode, start: int) -> list[str]:
    return [n for n in peer.received[start:] if not n.startswith("TEXT L ")]


def test_a_peer_without_the_handshake_gets_radio_key_and_unkey(tmp_path: Path) -> None:
    with ScriptedNode("1998") as peer, node_1999(tmp_path, peer) as node:
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        peer.wait_call()
        # No !NEWKEY1! from the peer: after 2 s the link falls back to legacy keying.
        wait_until("legacy keying", lambda: link(node)["newkey"] == "legacy", timeout=5)
        start = len(peer.received)
        assert node.post("/key", json={}).status_code == 200
        time.sleep(0.5)
        assert node.post("/unkey", json={}).status_code == 200
        wait_until("the unkey", lambda: "RADIO_UNKEY" in peer.received[start:])
        time.sleep(0.2)
        assert received_since(peer, start) == ["RADIO_KEY", "VOICE", "RADIO_UNKEY"]
        assert peer.minis > 15

        # Its keying is by RADIO_KEY/UNKEY; the voice it streams meanwhile does not key.
        events = EventWatcher(node)
        peer.run(Step(0, "talk", count=25), node.udp_addr)
        time.sleep(0.7)
        assert not link(node)["keyed"]
        peer.run(Step(0, "key"), node.udp_addr)
        peer.run(Step(0, "talk", count=25), node.udp_addr)
        wait_until("keyed by RADIO_KEY", lambda: link(node)["keyed"])
        peer.run(Step(0, "unkey"), node.udp_addr)
        wait_until("unkeyed by RADIO_UNKEY", lambda: not link(node)["keyed"])
        keyed = [e["keyed"] for e in events.named("link") if e["kind"] == "keyed"]
        assert keyed == [True, False]


def test_a_newkey_peer_is_echoed_and_keyed_every_two_seconds(tmp_path: Path) -> None:
    with ScriptedNode("1998") as peer, node_1999(tmp_path, peer) as node:
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        peer.wait_call()
        peer.run(Step(0, "text", text="!NEWKEY!"), node.udp_addr)
        wait_until("the echo", lambda: "TEXT !NEWKEY!" in peer.received)
        assert link(node)["newkey"] == "newkey"
        start = len(peer.received)
        assert node.post("/key", json={}).status_code == 200
        time.sleep(4.5)
        assert node.post("/unkey", json={}).status_code == 200
        wait_until("the unkey", lambda: "RADIO_UNKEY" in peer.received[start:])
        got = received_since(peer, start)
        assert got[:2] == ["RADIO_KEY", "VOICE"] and got[-1] == "RADIO_UNKEY"
        assert got.count("RADIO_KEY") == 3  # at key-up, then at 2 s and 4 s


def test_tx_time_out_unkeys_and_reports(tmp_path: Path) -> None:
    with (
        ScriptedNode("1998") as peer,
        node_1999(tmp_path, peer, "[keying]\ntx_timeout_secs = 1\n") as node,
    ):
        events = EventWatcher(node)
        snap = node.post("/key", json={}).json()
        assert snap["tx"]["keyed"] is True and 0 < snap["tx"]["timeout_remaining_s"] <= 1
        ended = events.wait_for(lambda e: e["event"] == "link" and e.get("keyed") is False)
        assert ended["reason"] == "TX time-out after 1 s" and ended["node"] == "1999"
        assert ended["call"] is None
        tx = node.get("/status").json()["tx"]
        assert tx == {"keyed": False, "timeout_s": 1, "timeout_remaining_s": None}


def test_no_key_while_a_dstar_session_is_active(tmp_path: Path) -> None:
    with (
        ScriptedNode("1998") as peer,
        node_1999(tmp_path, peer, '[links.1998]\nnetwork = "dstar"\n') as node,
    ):
        assert node.post("/key", json={}).status_code == 200  # no D-Star session yet
        assert node.post("/unkey", json={}).status_code == 200
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        peer.wait_call()
        start = len(peer.received)
        for _ in range(3):  # checked on every key command
            r = node.post("/key", json={})
            assert r.status_code == 409 and r.json() == {"error": DSTAR_REFUSAL}
        assert node.get("/status").json()["tx"]["keyed"] is False
        time.sleep(0.3)
        assert "VOICE" not in peer.received[start:] and peer.minis == 0
        assert node.post("/link", json={"action": "disconnect", "node": "1998"}).status_code == 200
        assert node.post("/key", json={}).status_code == 200


def test_only_controller_key_keys_the_local_source() -> None:
    """No code path keys around the D-Star guard: the one call that keys the local source
    (`set_local_keyed(True)`) is in the transmit service's `key`, right after the guard; the
    radio's carrier keys through that `key` too, never through the media path."""
    root = Path(node_package.__file__).parent
    keying_calls = []
    key_callers = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in ast.walk(fn):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                    continue
                if (
                    call.func.attr == "set_local_keyed"
                    # The media path's keying: the bridge, or the engine under it (the link
                    # machine's own `set_local_keyed` only records the state for K replies).
                    and isinstance(call.func.value, ast.Attribute)
                    and call.func.value.attr in ("bridge", "_bridge", "_engine")
                    and not (
                        call.args
                        and isinstance(call.args[0], ast.Constant)
                        and call.args[0].value is False
                    )
                ):
                    keying_calls.append((path.relative_to(root).as_posix(), fn.name))
                if (
                    call.func.attr == "key"
                    and call.args
                    and isinstance(call.args[0], ast.Constant)
                    and call.args[0].value == "carrier"
                ):
                    key_callers.append((path.relative_to(root).as_posix(), fn.name))
    # The bridge's own method forwards its argument to the engine; the transmit service's
    # key() is the only caller that can pass True.
    assert sorted(keying_calls) == [
        ("media/bridge.py", "set_local_keyed"),
        ("radio/transmit.py", "key"),
    ]
    # The radio's squelch keys through the transmit service's key(), the guarded path.
    assert key_callers == [("radio/transmit.py", "_on_squelch")]
    source = (root / "radio" / "transmit.py").read_text()
    key_body = source[source.index("    def key(self") : source.index("    def dstar_guard(")]
    assert key_body.index("self.dstar_guard(source)") < key_body.index("set_local_keyed(True)")
    guard = source[source.index("    def dstar_guard(") : source.index("    def unkey(")]
    assert "self.dstar_active(source)" in guard and "raise CommandError" in guard


def test_our_disconnect_waits_for_a_peer_whose_jitter_buffer_holds_the_text(
    tmp_path: Path,
) -> None:
    """The peer reads texts 0.8 s late and ends its call at once on a HANGUP (ASL3 with its
    jitter buffer forced on). Had we hung up right behind `!!DISCONNECT!!`, the peer would
    have lost the call before reading the text and taken it for a lost link; we let it read
    the text and hang up first."""
    with JitterBufferedNode("1998", hold=0.8) as peer, node_1999(tmp_path, peer) as node:
        assert node.post("/link", json={"action": "connect", "node": "1998"}).status_code == 200
        callno = peer.wait_call()
        wait_until("the link up", lambda: link(node)["state"] == "up")
        start = len(peer.received)
        assert node.post("/link", json={"action": "disconnect", "node": "1998"}).status_code == 200
        read = wait_until("the peer reads the text", lambda: peer.read_disconnect, timeout=5)
        assert read[1], "the call was gone before the peer read !!DISCONNECT!!"
        wait_until(
            "the peer's call over",
            lambda: (
                peer.endpoint.call(callno) is None
                or peer.endpoint.call(callno).state is not CallState.UP
            ),
        )
        wait_until("our link gone", lambda: not node.get("/status").json()["links"])
        time.sleep(0.3)
        # We sent the text and never a HANGUP of our own: the peer's ended the call.
        sent = received_since(peer, start)
        assert "TEXT !!DISCONNECT!!" in sent
        assert not [n for n in sent if n.startswith("HANGUP")], sent
