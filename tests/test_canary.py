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


def collect_events(node: NodeProcess, events: list[str]) -> threading.Thread:
    """Append the raw data of every SSE event of `node` to `events`, in a thread, until the
    stream ends."""

    def listen() -> None:
        with (
            httpx.Client(timeout=10) as client,
            connect_sse(client, "GET", node.base_url + "/events") as src,
        ):
            for sse in src.iter_sse():
                events.append(sse.data)

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    return t


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

        t = collect_events(node, events)
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


HTTP_CANARY = "canary-http-registration-secret-3c58"


def test_canary_secret_stays_out_of_http_registration_output(tmp_path: Path) -> None:
    """A registrar that first refuses (echoing the password back in its reply, as a hostile one
    might), then accepts: the password reaches the registrar and nothing else."""
    from tests.allstar.httpserver import HttpServer, Reply, Request
    from tests.interop.harness import wait_until

    def state(node: NodeProcess, wanted: str) -> str | None:
        text = node.get("/status").text
        return text if json.loads(text)["registration"]["state"] == wanted else None

    replies: list[Request] = []

    def registrar(request: Request) -> Reply:
        replies.append(request)
        data = (
            f"password {HTTP_CANARY} incorrect"
            if len(replies) == 1
            else "1999 successfully registered"
        )
        body = {"ipaddr": request.client, "port": 4569, "data": data, "echo": HTTP_CANARY}
        return Reply(200, json.dumps(body).encode())

    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    with HttpServer(registrar) as srv:
        path = write_config(
            tmp_path / "node.toml",
            udp_port=udp,
            http_port=http,
            extra=(
                f'[register]\nmethod = "http"\nurl = "{srv.url}"\nnode_id = "1999"\n\n'
                '[secrets]\nsource = "env"\n'
            ),
        )
        node = NodeProcess(path, udp, http, env={"NET_NODE": "1999", "NET_SECRET": HTTP_CANARY})
        events: list[str] = []
        outputs: list[str] = []
        try:
            node.wait_ready()

            t = collect_events(node, events)
            failed = wait_until("the refusal", lambda: state(node, "failed"))
            outputs.append(failed)
            # The registrar's echo was blanked out, not merely absent.
            assert "***" in json.loads(failed)["registration"]["last_failure"]
            outputs.append(node.post("/register").text)
            outputs.append(wait_until("the registration", lambda: state(node, "registered")))
            node.signal(signal.SIGTERM)
            assert node.wait() == 0
            t.join(10)
        finally:
            node.kill()
    out, err = node.communicate()
    outputs += [out, err, *events]
    # It did go where it belongs: in the POST body, and nowhere else.
    assert all(
        HTTP_CANARY in json.loads(r.body)["data"]["nodes"]["1999"]["passwd"] for r in replies
    )
    assert any('"register_failed"' in e for e in events) or "registration failed" in err
    for text in outputs:
        assert HTTP_CANARY not in text
