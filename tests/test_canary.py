"""Secrets never leak: plant canaries, exercise the daemon, scan every output it produced."""

from __future__ import annotations

import json
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from tests.interop.harness import configured_node, start_failure, wait_until
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, NotifySocket, free_port

NODE_CANARY = "canary-node-secret-7f3a9c"
PEER_CANARY = "canary-peer-secret-0d44e1"
FILE_CANARY = "canary-file-secret-6a2f90"
RELOADED_CANARY = "canary-reloaded-secret-91c3"
CANARIES = (NODE_CANARY, PEER_CANARY, FILE_CANARY, RELOADED_CANARY)


def write_peers(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def collect_events(node: NodeProcess, events: list[str]) -> threading.Thread:
    """Append the raw data of every SSE event of `node` to `events`, in a thread, until the
    stream ends."""

    def listen() -> None:
        try:
            with (
                httpx.Client(timeout=10) as client,
                connect_sse(client, "GET", node.base_url + "/events") as src,
            ):
                for sse in src.iter_sse():
                    events.append(sse.data)
        except httpx.HTTPError:
            # On a busy host the node's shutdown can cut the stream after its grace period,
            # mid-chunk; what arrived until then is what the test scans.
            pass

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    return t


@dataclass
class Run:
    """A daemon under test and every text it put out."""

    node: NodeProcess
    notify: NotifySocket | None
    #: The raw data of every event of its stream.
    events: list[str] = field(default_factory=list)
    #: Every text the test and the run collected, to be scanned for canaries.
    outputs: list[str] = field(default_factory=list)
    err: str = ""


@contextmanager
def running(
    tmp_path: Path, extra: str, env: dict[str, str], *, notify: bool = True
) -> Iterator[Run]:
    """`configured`, ready (and READY on its notify socket) with its events collected. When the
    block ends cleanly the node gets SIGTERM and must exit 0; then its stdout, stderr, events,
    notifications and configuration file join `outputs`."""
    sock = NotifySocket() if notify else None
    node = configured_node(tmp_path, extra, {**env, **(sock.env if sock else {})})
    run = Run(node, sock)
    try:
        node.wait_ready()
        if sock:
            sock.wait("READY")
        listener = collect_events(node, run.events)
        yield run
        node.signal(signal.SIGTERM)
        assert node.wait() == 0
        listener.join(10)
    finally:
        node.kill()
        if sock:
            sock.close()
    out, run.err = node.communicate()
    run.outputs += [
        out,
        run.err,
        *run.events,
        *(sock.datagrams if sock else []),
        node.config.read_text(),
    ]


def test_canary_secrets_appear_in_no_output(tmp_path: Path) -> None:
    registrar = free_port(socket.SOCK_DGRAM)  # nothing listens there: registration just fails
    peers = write_peers(tmp_path / "peers", f"2001={FILE_CANARY}\n")
    extra = (
        f'[register]\npeer = "127.0.0.1:{registrar}"\nnode_id = "1999"\n\n'
        '[secrets]\nsource = "env"\npeers_file = "peers"\n'
    )
    env = {"NET_NODE": "1999", "NET_SECRET": NODE_CANARY, "NET_PEER_2000": PEER_CANARY}
    with running(tmp_path, extra, env) as run:
        node, notify, outputs = run.node, run.notify, run.outputs
        assert notify is not None
        for path_ in ("/status", "/stats", "/nope"):
            outputs.append(node.get(path_).text)
        # Bad requests that carry a secret must not echo it back in the error.
        outputs.append(node.post("/shutdown", content=f'{{"secret": "{NODE_CANARY}"'.encode()).text)
        outputs.append(node.post("/no-such", json={"secret": PEER_CANARY}).text)

        # The file's secret is used (an MD5-authenticated call), then a reload meets a malformed
        # line holding a canary, then a good reload brings another.
        with Softphone(name="canary") as phone:
            callno = phone.dial(
                node.udp_addr, "1999", calling_number="2001", username="2001", secret=FILE_CANARY
            )
            assert phone.wait_for(lambda p: p.answered(callno))
            wrong = phone.dial(
                node.udp_addr, "1999", calling_number="2001", username="2001", secret=PEER_CANARY
            )
            assert phone.wait_for(lambda p: p.ended(wrong))
            outputs.append(node.get("/status").text)
            write_peers(peers, f"2001={RELOADED_CANARY}\n{FILE_CANARY}\n")
            node.signal(signal.SIGHUP)
            notify.wait("RELOADING")
            assert "reload failed" in notify.wait("READY")["STATUS"]
            write_peers(peers, f"2001={RELOADED_CANARY}\n")
            node.signal(signal.SIGHUP)
            notify.wait("RELOADING")
            assert "changed 2001" in notify.wait("READY")["STATUS"]
            phone.hangup(callno)
            assert phone.wait_for(lambda p: p.ended(callno))
        outputs.append(node.get("/status").text)
    assert "reload failed" in run.err and "line 2" in run.err
    assert run.events and json.loads(run.events[0])["event"] == "snapshot"
    for text in run.outputs:
        for canary in CANARIES:
            assert canary not in text


HTTP_CANARY = "canary-http-registration-secret-3c58"


def test_canary_secret_stays_out_of_http_registration_output(tmp_path: Path) -> None:
    """A registrar that first refuses (echoing the password back in its reply, as a hostile one
    might), then accepts: the password reaches the registrar and nothing else."""
    from tests.allstar.httpserver import HttpServer, Reply, Request

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

    with HttpServer(registrar) as srv:
        extra = (
            f'[register]\nmethod = "http"\nurl = "{srv.url}"\nnode_id = "1999"\n\n'
            '[secrets]\nsource = "env"\n'
        )
        env = {"NET_NODE": "1999", "NET_SECRET": HTTP_CANARY}
        with running(tmp_path, extra, env, notify=False) as run:
            node = run.node
            failed = wait_until("the refusal", lambda: state(node, "failed"))
            run.outputs.append(failed)
            # The registrar's echo was blanked out, not merely absent.
            assert "***" in json.loads(failed)["registration"]["last_failure"]
            run.outputs.append(node.post("/register").text)
            run.outputs.append(wait_until("the registration", lambda: state(node, "registered")))
    # It did go where it belongs: in the POST body, and nowhere else.
    assert all(
        HTTP_CANARY in json.loads(r.body)["data"]["nodes"]["1999"]["passwd"] for r in replies
    )
    assert any('"register_failed"' in e for e in run.events) or "registration failed" in run.err
    for text in run.outputs:
        assert HTTP_CANARY not in text


@pytest.mark.parametrize(
    ("peers_text", "env", "problem"),
    [
        (f"2001=ok\n\n{FILE_CANARY}\n", {}, "line 3: has no '='"),
        (f"x{FILE_CANARY}={FILE_CANARY}\n", {}, "line 1: the part before '=' is not a node"),
        (
            f"2000={FILE_CANARY}\n",
            {"NET_PEER_2000": PEER_CANARY},
            "line 1: node 2000 also has a secret in NET_PEER_2000",
        ),
    ],
)
def test_refused_peers_file_exits_78_without_a_canary(
    tmp_path: Path, peers_text: str, env: dict[str, str], problem: str
) -> None:
    peers = write_peers(tmp_path / "peers", peers_text)
    out, err = start_failure(tmp_path, '[secrets]\npeers_file = "peers"\n', env)
    assert f"{peers}: {problem}" in err
    for text in (out, err):
        for canary in CANARIES:
            assert canary not in text


#: WireGuard keys whose bytes spell canaries, so either form (base64, raw) would be caught.
WG_CANARY = b"canary-wireguard-private-key-1f2"
WG_PSK_CANARY = b"canary-wireguard-preshared-7c0de"


def wg_forms(raw: bytes) -> tuple[str, ...]:
    import base64

    return (base64.b64encode(raw).decode(), raw.decode(), raw.hex(), repr(raw)[2:-1])


def test_wireguard_keys_appear_in_no_output(tmp_path: Path) -> None:
    """A node with `[wireguard]` whose tunnel comes up with a peer (an engine of this test's
    own, over its own tunnel): the snapshot, stats, events, logs and notifications carry the
    public key and never the private or preshared one."""
    from node._core import Engine, WireGuard
    from node.wireguard import encode_key, public_key

    peer_key = bytes(range(32))
    peer = Engine(
        "127.0.0.1:0",
        wireguard=WireGuard(
            peer_key,
            public_key(WG_CANARY),
            "10.66.0.1:4569",
            "127.0.0.1:0",
            None,
            ["10.66.0.0/24"],
            preshared_key=WG_PSK_CANARY,
        ),
    )
    canaries = (*wg_forms(WG_CANARY), *wg_forms(WG_PSK_CANARY))
    assert all(c not in repr(peer) for c in canaries)
    peer_listen = (peer.tunnel() or {})["listen"]
    extra = (
        '[wireguard]\naddress = "10.66.0.2"\nprivate_key_env = "WG_KEY"\n'
        f'peer_public_key = "{encode_key(public_key(peer_key))}"\n'
        f'endpoint = "{peer_listen}"\nallowed_ips = ["10.66.0.0/24"]\n'
        'preshared_key_env = "WG_PSK"\n'
    )
    env = {"WG_KEY": encode_key(WG_CANARY), "WG_PSK": encode_key(WG_PSK_CANARY)}
    try:
        with running(tmp_path, extra, env) as run:
            node, notify = run.node, run.notify
            assert notify is not None
            up = wait_until(
                "the tunnel", lambda: '"state":"up"' in (s := node.get("/status").text) and s
            )
            run.outputs.append(up)
            assert json.loads(up)["tunnel"]["public_key"] == encode_key(public_key(WG_CANARY))
            for path_ in ("/stats", "/nope"):
                run.outputs.append(node.get(path_).text)
            run.outputs.append(node.post("/link", json={"action": "connect", "node": "x"}).text)
            node.signal(signal.SIGHUP)
            notify.wait("RELOADING")
            notify.wait("READY")
    finally:
        peer.stop()
    assert "WireGuard tunnel up" in run.err and encode_key(public_key(WG_CANARY)) in run.err
    assert any('"tunnel"' in e for e in run.events)
    for text in run.outputs:
        for canary in canaries:
            assert canary not in text


@pytest.mark.parametrize(
    "value", [WG_CANARY.decode(), WG_CANARY.hex(), "x" + wg_forms(WG_CANARY)[0]]
)
def test_malformed_wireguard_key_exits_78_without_a_canary(tmp_path: Path, value: str) -> None:
    extra = (
        '[wireguard]\naddress = "10.66.0.2"\nprivate_key_env = "WG_KEY"\n'
        'peer_public_key = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="\n'
        'allowed_ips = ["10.66.0.0/24"]\n'
    )
    out, err = start_failure(tmp_path, extra, {"WG_KEY": value})
    assert "WG_KEY" in err and "44 characters of base64" in err
    for canary in (*wg_forms(WG_CANARY), value):
        assert canary not in out + err


FURTHER_CANARY = "canary-further-node-secret-5e17"


def test_each_node_of_a_host_registers_with_its_own_password_and_shows_neither(
    tmp_path: Path,
) -> None:
    """A host whose two nodes register over HTTP: the first with NET_SECRET, the second with
    NET_SECRET_1998. Each password goes in its own node's POST and in no output."""
    from tests.allstar.httpserver import HttpServer, Reply, Request

    posts: list[Request] = []

    def registrar(request: Request) -> Reply:
        posts.append(request)
        (number,) = json.loads(request.body)["data"]["nodes"]
        body = {"ipaddr": request.client, "port": 4569, "data": f"{number} successfully registered"}
        return Reply(200, json.dumps(body).encode())

    with HttpServer(registrar) as srv:
        extra = (
            f'[register]\nmethod = "http"\nurl = "{srv.url}"\nnode_id = "1999"\n\n'
            "[links]\ndns = false\n\n"
            "[nodes.1998]\n"
            f'[nodes.1998.register]\nmethod = "http"\nurl = "{srv.url}"\nnode_id = "1998"\n'
        )
        env = {"NET_NODE": "1999", "NET_SECRET": NODE_CANARY, "NET_SECRET_1998": FURTHER_CANARY}
        with running(tmp_path, extra, env, notify=False) as run:
            node = run.node

            def registered(path: str) -> str | None:
                text = node.get(path).text
                return text if json.loads(text)["registered"] else None

            run.outputs.append(wait_until("1999 registered", lambda: registered("/status")))
            run.outputs.append(
                wait_until("1998 registered", lambda: registered("/nodes/1998/status"))
            )
            run.outputs.append(node.get("/nodes").text)
    sent = {}
    for post in posts:
        ((number, entry),) = json.loads(post.body)["data"]["nodes"].items()
        sent.setdefault(number, set()).add(entry["passwd"])
    assert sent == {"1999": {NODE_CANARY}, "1998": {FURTHER_CANARY}}
    for text in run.outputs:
        assert FURTHER_CANARY not in text and NODE_CANARY not in text
