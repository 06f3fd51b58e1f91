"""A node that never registers (AllStarLink's private numbers such as 1999) states its number
with the top-level `node_id` and links under it: the far end sees that number in the call."""

from __future__ import annotations

from pathlib import Path

from node.iax2.call_events import CallIncoming
from tests.interop.harness import running_node, wait_until
from tests.links.replay import ScriptedNode


class CallerRecordingNode(ScriptedNode):
    """A scripted node that keeps who called it."""

    def __init__(self, name: str, *, auth: tuple[str, str]) -> None:
        super().__init__(name, auth=auth)
        self.callers: list[CallIncoming] = []

    def _on_event(self, event: object, now: float) -> None:
        if isinstance(event, CallIncoming):
            self.callers.append(event)
        super()._on_event(event, now)


def test_a_private_node_links_under_its_top_level_number(tmp_path: Path) -> None:
    # The far end challenges user 1999: only our own number, with the secret we hold for 1998,
    # gets the link up, so the number is also what the peer secret is looked up by.
    with CallerRecordingNode("1998", auth=("1999", "shared-pw")) as peer:
        nodes = tmp_path / "extnodes"
        nodes.write_text(f"1998=radio@127.0.0.1:{peer.addr[1]}/1998,127.0.0.1\n")
        with running_node(
            tmp_path,
            "private",
            top='node_id = "1999"',
            listener='auth = "off"',
            sections=f'[links]\nnodes_file = "{nodes}"\ndns = false\n',
            env={"NET_PEER_1998": "shared-pw"},
        ) as node:
            status = node.get("/status").json()
            assert status["node_id"] == "1999"
            assert status["registration"]["method"] is None  # no [register]: it never registers
            reply = node.post("/link", json={"action": "connect", "node": "1998"})
            assert reply.status_code == 200, reply.text
            peer.wait_call()
            wait_until("the peer saw the call", lambda: bool(peer.callers))
            call = peer.callers[0]
            assert (call.calling_number, call.username) == ("1999", "1999")
            assert call.called_number == "1998" and call.authenticated
            wait_until(
                "the link is up",
                lambda: any(li["node"] == "1998" for li in node.get("/status").json()["links"]),
            )
