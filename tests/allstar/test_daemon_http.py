"""`node serve` with HTTP registration and status posts, against servers of our own on loopback."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from node import __version__
from tests.allstar.httpserver import HttpServer, Reply, Request
from tests.interop.harness import assert_registered, assert_registration_fails, configured_node
from tests.node_process import EventLog, NodeProcess

PASSWORD = "canary-daemon-http-pass-6e03"


class AslRegistrar:
    """Answers like ASL's registrar: 2xx always, `successfully registered` only for the right
    password, and the address it saw the POST come from."""

    def __init__(self, password: str) -> None:
        self.password = password
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        body = json.loads(request.body)
        (node,) = body["data"]["nodes"].values()
        with self.lock:
            good = node["passwd"] == self.password
        said = f"{node['node']} successfully registered" if good else "password incorrect"
        reply = {"ipaddr": request.client, "port": body["port"], "refresh": 179, "data": said}
        return Reply(200, json.dumps(reply).encode())


def start_node(tmp_path: Path, registrar_url: str, collector_url: str, secret: str) -> NodeProcess:
    extra = (
        f'[register]\nmethod = "http"\nurl = "{registrar_url}"\nnode_id = "1999"\n\n'
        f'[statpost]\nurl = "{collector_url}uhandler"\ninterval_secs = 30\n\n'
        '[secrets]\nsource = "env"\n'
    )
    node = configured_node(tmp_path, extra, {"NET_NODE": "1999", "NET_SECRET": secret})
    node.wait_ready()
    return node


def test_http_registration_and_status_posts_end_to_end(tmp_path: Path) -> None:
    with (
        HttpServer(AslRegistrar(PASSWORD)) as registrar,
        HttpServer(lambda r: Reply(200, b"OK", "text/plain")) as collector,
    ):
        node = start_node(tmp_path, registrar.url, collector.url, PASSWORD)
        try:
            log = EventLog(node)
            (post,) = registrar.wait_for(1)
            body = json.loads(post.body)
            assert body == {
                "port": node.udp_addr[1],
                "data": {"nodes": {"1999": {"node": "1999", "passwd": PASSWORD, "remote": 0}}},
            }
            assert_registered(node, log, "http")

            (stat,) = collector.wait_for(1)
            assert re.fullmatch(
                r"/uhandler\?node=1999&time=\d+&seqno=1&nodes=&apprptvers="
                + re.escape(__version__)
                + r"&apprptuptime=\d+&totalkerchunks=0&totalkeyups=0&totaltxtime=0&timeouts=0"
                r"&totalexecdcommands=0&keyed=0&keytime=0",
                stat.target,
            ), stat.target

            # The operator's key and unkey are each posted at once (app_rpt's key posts).
            assert node.post("/key").status_code == 200
            _, key = collector.wait_for(2)
            assert re.fullmatch(
                r"/uhandler\?node=1999&time=\d+&seqno=2&keyed=1&keytime=0", key.target
            )
            assert node.post("/unkey").status_code == 200
            _, _, unkey = collector.wait_for(3)
            assert re.fullmatch(
                r"/uhandler\?node=1999&time=\d+&seqno=3&keyed=0&keytime=0", unkey.target
            )

            r = node.post("/deregister")
            assert r.status_code == 200, r.text
            assert r.json()["registration"]["state"] == "unregistered"
            assert r.json()["registered"] is False
            assert node.post("/deregister").status_code == 409
            r = node.post("/register")
            assert r.status_code == 200, r.text
            registrar.wait_for(2)
        finally:
            node.kill()
    _, err = node.communicate()
    assert PASSWORD not in err


def test_a_wrong_password_answered_2xx_is_register_failed(tmp_path: Path) -> None:
    with (
        HttpServer(AslRegistrar(PASSWORD)) as registrar,
        HttpServer(lambda r: Reply(401, b"", "text/plain")) as collector,
    ):
        node = start_node(tmp_path, registrar.url, collector.url, "not-the-password")
        try:
            assert "did not confirm the registration" in assert_registration_fails(node)
            collector.wait_for(1)  # a collector refusing posts does not stop the node
            assert node.get("/status").status_code == 200
        finally:
            node.kill()
    _, err = node.communicate()
    assert "statpost to 127.0.0.1 failed: HTTP 401" in err
