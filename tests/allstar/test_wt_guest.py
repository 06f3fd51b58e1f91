"""`wt-guest` links end to end: a node mints a token from a portal of our own on loopback and
links to a web-transceiver host of our own as the web transceiver does."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from node.allstar.portal import LEGACY_PATH, PortalTokens, TokenError
from node.secrets import Secret
from tests.allstar.httpserver import HttpServer, Reply, Request
from tests.allstar.wt_host import WtHost
from tests.interop.harness import EventWatcher, node_log, running_node, wait_until
from tests.node_process import NodeProcess

PASSWORD = "canary-portal-pass-9f3e"  # planted: must never leave the request body
TOKEN = "0a1b2c3d4e5f"


def portal(password: str = PASSWORD, token: str = TOKEN):
    def answer(request: Request) -> Reply:
        if request.method != "POST" or request.target != LEGACY_PATH:
            return Reply(405, b'{"status":"ERR"}')
        body = json.loads(request.body)
        if body.get("username") == "N0CALL" and body.get("password") == password:
            return Reply(200, json.dumps({"status": "OK", "auth": 1, "token": token}).encode())
        return Reply(200, b'{"status":"ERR","auth":0,"msg":"Invalid username or password"}')

    return answer


@contextmanager
def guest(
    tmp_path: Path, ring_s: float = 0.5, **portal_options: str
) -> Iterator[tuple[NodeProcess, WtHost, EventWatcher]]:
    """A node with a `wt-guest` link to node 2000, a web-transceiver host of ours, and a portal
    of `portal(**portal_options)`; yields the node, the host and the node's event stream."""
    with (
        HttpServer(portal(**portal_options)) as srv,
        WtHost({TOKEN}, ring_s=ring_s) as host,
        running_node(
            tmp_path,
            "guest",
            sections=(
                '[register]\npeer = "127.0.0.1:9"\nnode_id = "1999"\n\n'
                f'[links]\ndns = false\n\n[links.2000]\nshape = "wt-guest"\n'
                f'addr = "127.0.0.1:{host.addr[1]}"\n\n'
                f'[portal]\nuser = "N0CALL"\nnode = "1999"\ncredential_env = "PORTAL_PASSWORD"\n'
                f'url = "{srv.url.rstrip("/")}"\n'
            ),
            env={"NET_NODE": "1999", "NET_SECRET": "not-used-here", "PORTAL_PASSWORD": PASSWORD},
        ) as node,
    ):
        yield node, host, EventWatcher(node)


def link_2000(node: NodeProcess) -> dict | None:
    return next((li for li in node.get("/status").json()["links"] if li["node"] == "2000"), None)


def link_command(node: NodeProcess, action: str) -> None:
    """`POST /link` for node 2000."""
    r = node.post("/link", json={"action": action, "node": "2000"})
    assert r.status_code == 200, r.text


def dropped(events: EventWatcher) -> dict[str, Any]:
    """The first `link disconnected` event."""
    return events.wait_for(lambda e: e["event"] == "link" and e["kind"] == "disconnected")


# --- the token source ---------------------------------------------------------------------------


def test_portal_tokens_mint_and_refusals() -> None:
    asyncio.run(_mint_and_refusals())


async def _mint_and_refusals() -> None:
    with HttpServer(portal()) as srv:
        async with httpx.AsyncClient() as client:
            good = PortalTokens(srv.url, "N0CALL", Secret(PASSWORD), client)
            token = await good.mint("2000")
            assert token.calling_name == TOKEN and PASSWORD not in repr(token) + repr(good)
            request = srv.requests[-1]
            assert request.headers["content-type"] == "application/json"
            assert json.loads(request.body) == {"username": "N0CALL", "password": PASSWORD}
            bad = PortalTokens(srv.url, "N0CALL", Secret("wrong-" + PASSWORD), client)
            with pytest.raises(TokenError) as exc:
                await bad.mint("2000")
            assert str(exc.value) == (
                "the portal refused the account N0CALL: Invalid username or password"
            )
            assert PASSWORD not in str(exc.value)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(500, b"oops"), "the portal answered HTTP 500"),
        (Reply(200, b"not json"), "the portal's reply is not a JSON object"),
        (Reply(200, b'{"status":"OK","auth":1}'), "the portal's reply holds no usable token"),
        (Reply(200, b'{"status":"OK","auth":1,"token":"a b"}'), "holds no usable token"),
        (Reply(hang=True), "the portal gave no token within 0.5 s"),
    ],
)
def test_portal_tokens_bad_replies(reply: Reply, message: str) -> None:
    async def mint() -> None:
        async with httpx.AsyncClient() as client:
            source = PortalTokens(srv.url, "N0CALL", Secret(PASSWORD), client, timeout=0.5)
            with pytest.raises(TokenError, match=message):
                await source.mint("2000")

    with HttpServer(lambda r: reply) as srv:
        asyncio.run(mint())
        srv.release.set()


# --- end to end -----------------------------------------------------------------------------------


def test_wt_guest_link_is_up_from_the_ring_and_keyed_by_voice(tmp_path: Path) -> None:
    with guest(tmp_path, ring_s=1.0) as (node, host, events):
        link_command(node, "connect")
        # Up while the host still rings (before its ANSWER, 1 s after the ring).
        up = wait_until("the guest link up", lambda: (link_2000(node) or {}).get("state") == "up")
        assert (
            up and host.incoming and host.endpoint.call(host.incoming[0].callno).state.name != "UP"
        )
        incoming = host.incoming[0]
        assert incoming.username == "allstar-public" and incoming.authenticated
        assert (incoming.called_number, incoming.calling_number) == ("s", "2000")
        assert incoming.calling_name == TOKEN
        link = link_2000(node)
        assert link["newkey"] == "guest" and link["mode"] == "transceive"
        # The host answers and talks: voice presence keys the guest link.
        wait_until("keyed by the host's voice", lambda: link_2000(node)["keyed"])
        wait_until("unkeyed", lambda: not link_2000(node)["keyed"])
        # We talk: voice only while keyed, then UNKEY.
        assert node.post("/key", json={}).status_code == 200
        wait_until("the host hears us", lambda: host.minis > 20)
        assert node.post("/unkey", json={}).status_code == 200
        link_command(node, "disconnect")
        gone = dropped(events)
        assert gone["reason"] == "disconnected by operator"
    log = node_log(node)
    assert PASSWORD not in log and TOKEN not in log


def test_a_refused_token_is_reported_not_retried(tmp_path: Path) -> None:
    with guest(tmp_path, token="ffffffffffff") as (node, host, events):
        link_command(node, "connect")
        gone = dropped(events)
        assert "did not accept the web-transceiver token" in gone["reason"]
        time.sleep(6)  # past the first retry time
        assert link_2000(node) is None and len(host.incoming) == 1


def test_a_portal_refusal_is_reported(tmp_path: Path) -> None:
    with guest(tmp_path, password="another") as (node, host, events):
        link_command(node, "connect")
        gone = dropped(events)
        assert gone["reason"].startswith(
            "cannot reach node 2000: the portal refused the account N0CALL"
        )
        assert PASSWORD not in json.dumps(events.events) and not host.incoming
        link_command(node, "disconnect")
    assert PASSWORD not in node_log(node)
