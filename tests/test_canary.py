"""Secrets never leak: plant canaries, exercise the daemon, scan every output it produced."""

from __future__ import annotations

import json
import signal
import socket
import threading
from pathlib import Path

import httpx
from httpx_sse import connect_sse

from tests.node_process import NodeProcess, free_port, write_config

NODE_CANARY = "canary-node-secret-7f3a9c"
PEER_CANARY = "canary-peer-secret-0d44e1"


def test_canary_secrets_appear_in_no_output(tmp_path: Path) -> None:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    registrar = free_port(socket.SOCK_DGRAM)  # nothing listens there: registration just fails
    path = write_config(
        tmp_path / "node.toml",
        udp_port=udp,
        http_port=http,
        extra=(
            f'[register]\npeer = "127.0.0.1:{registrar}"\nnode_id = "1999"\n\n'
            '[secrets]\nsource = "env"\n'
        ),
    )
    env = {"NET_NODE": "1999", "NET_SECRET": NODE_CANARY, "NET_PEER_2000": PEER_CANARY}
    node = NodeProcess(path, udp, http, env=env)
    outputs: list[str] = []
    events: list[str] = []
    try:
        node.wait_ready()

        def listen() -> None:
            with (
                httpx.Client(timeout=10) as client,
                connect_sse(client, "GET", node.base_url + "/events") as src,
            ):
                for sse in src.iter_sse():
                    events.append(sse.data)

        t = threading.Thread(target=listen, daemon=True)
        t.start()
        for path_ in ("/status", "/stats", "/nope"):
            outputs.append(node.get(path_).text)
        # Bad requests that carry a secret must not echo it back in the error.
        outputs.append(node.post("/shutdown", content=f'{{"secret": "{NODE_CANARY}"'.encode()).text)
        outputs.append(node.post("/no-such", json={"secret": PEER_CANARY}).text)
        node.signal(signal.SIGTERM)
        assert node.wait() == 0
        t.join(10)
    finally:
        node.kill()
    out, err = node.communicate()
    outputs += [out, err, *events, path.read_text()]
    assert events and json.loads(events[0])["event"] == "snapshot"
    for text in outputs:
        assert NODE_CANARY not in text
        assert PEER_CANARY not in text
