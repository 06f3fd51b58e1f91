"""The HTTP registration machine on a fake clock: replies judged as ASL judges them, timing."""

from __future__ import annotations

import json
import logging

import pytest

from node.allstar.http_registration import (
    HttpOutput,
    HttpRegistration,
    HttpRegistrationState,
    RegistrationPost,
    interpret_reply,
)
from node.errors import LocalProtocolError
from node.iax2.registration import Deregistered, Registered, RegistrationFailed
from node.secrets import Secret

CANARY = "canary-http-reg-secret-4b7d"
URL = "http://127.0.0.1:9/"
OK = {"ipaddr": "203.0.113.7", "port": 4569, "refresh": 179, "data": "2000 successfully registered"}


def machine(secret: str | None = CANARY, interval: float = 60) -> HttpRegistration:
    return HttpRegistration(
        URL, "2000", Secret(secret) if secret else None, 4570, interval, now=0.0
    )


def body(reply: object) -> bytes:
    return json.dumps(reply).encode()


def only_post(out: HttpOutput) -> RegistrationPost:
    assert len(out.posts) == 1
    return out.posts[0]


def test_the_post_is_asl_s_json_and_nothing_else_shows_the_password() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    assert post.url == URL and post.headers == {"Content-Type": "application/json"}
    assert post.timeout == 15.0
    assert json.loads(post.content()) == {
        "port": 4570,
        "data": {"nodes": {"2000": {"node": "2000", "passwd": CANARY, "remote": 0}}},
    }
    for text in (repr(post), str(post), repr(reg)):
        assert CANARY not in text


def test_success_reports_the_perceived_address_and_reposts_each_interval() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    assert reg.state is HttpRegistrationState.REGISTERING
    assert reg.next_deadline() is None  # a POST is under way: its reply decides
    out = reg.replied(post.seq, 0.4, 200, body(OK))
    assert out.events == (Registered(refresh=60, apparent_addr=("203.0.113.7", 4569)),)
    assert out.deadline == 60.0  # an interval after the POST started, not after the reply
    assert reg.registered and reg.apparent_addr == ("203.0.113.7", 4569)
    assert reg.last_failure is None

    assert reg.timer(59.9).posts == ()
    again = only_post(reg.timer(60.0))
    assert again.seq == post.seq + 1
    # A routine refresh with the same address is not reported again.
    assert reg.replied(again.seq, 60.2, 200, body(OK)).events == ()
    moved = {**OK, "ipaddr": "203.0.113.8"}
    third = only_post(reg.timer(120.0))
    out = reg.replied(third.seq, 120.1, 200, body(moved))
    assert out.events == (Registered(refresh=60, apparent_addr=("203.0.113.8", 4569)),)


@pytest.mark.parametrize(
    ("status", "reply", "reason"),
    [
        # The registrar answers 2xx to a wrong password (app_rpt #325).
        (200, {**OK, "data": "invalid password"}, "did not confirm the registration"),
        (200, {"ipaddr": "203.0.113.7", "port": 4569}, "reply has no data"),  # app_rpt #355
        (200, {**OK, "data": None}, "did not confirm"),
        (503, OK, "registrar answered HTTP 503"),
        (404, "not json", "registrar answered HTTP 404"),
        (200, b"<html>oops</html>", "reply is not JSON"),
        (200, b"\xff\xfe", "reply is not JSON"),
        (200, ["successfully registered"], "not a JSON object"),
    ],
)
def test_replies_that_do_not_register(status: int, reply: object, reason: str) -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    raw = reply if isinstance(reply, bytes) else body(reply)
    out = reg.replied(post.seq, 1.0, status, raw)
    assert len(out.events) == 1 and isinstance(out.events[0], RegistrationFailed)
    assert reason in out.events[0].reason
    assert reg.state is HttpRegistrationState.FAILED and not reg.registered
    assert reg.last_failure == out.events[0].reason
    assert reg.apparent_addr is None
    assert out.deadline == 60.0  # ASL re-posts every interval, failed or not


def test_a_registrar_echoing_the_password_does_not_leak_it() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    evil = {"data": {"error": f"bad password {CANARY}\x1b[2J"}}
    out = reg.replied(post.seq, 1.0, 200, body(evil))
    reason = out.events[0].reason  # type: ignore[attr-defined]
    assert CANARY not in reason and "***" in reason and "\x1b" not in reason


def test_transport_failures_and_timeouts() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    out = reg.failed(post.seq, 15.0, "no reply within 15 s")
    assert out.events == (RegistrationFailed("no reply within 15 s"),)
    assert reg.state is HttpRegistrationState.FAILED
    post = only_post(reg.timer(60.0))
    assert reg.state is HttpRegistrationState.FAILED  # still failed while it tries again
    out = reg.replied(post.seq, 61.0, 200, body({**OK, "port": "x", "ipaddr": "not an ip"}))
    assert out.events == (Registered(refresh=60, apparent_addr=None),)


def test_missing_port_is_shown_as_zero() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    reg.replied(post.seq, 1.0, 200, body({"ipaddr": "203.0.113.7", "data": OK["data"]}))
    assert reg.apparent_addr == ("203.0.113.7", 0)


def test_a_reply_slower_than_the_interval_posts_again_at_once() -> None:
    reg = machine(interval=10)
    post = only_post(reg.register(0.0))
    assert reg.timer(10.0).posts == ()  # still waiting: never two POSTs at once
    out = reg.replied(post.seq, 12.0, 200, body(OK))
    assert len(out.posts) == 1 and out.posts[0].seq == post.seq + 1
    assert isinstance(out.events[0], Registered)


def test_register_while_posting_is_a_no_op_and_stale_replies_are_ignored() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    assert reg.register(1.0) == HttpOutput()
    out = reg.deregister(2.0)
    assert out.events == (Deregistered(),) and out.deadline is None
    assert reg.state is HttpRegistrationState.UNREGISTERED
    assert reg.replied(post.seq, 3.0, 200, body(OK)) == HttpOutput()
    assert not reg.registered
    with pytest.raises(LocalProtocolError, match="not registered"):
        reg.deregister(4.0)
    fresh = only_post(reg.register(5.0))
    assert fresh.seq == post.seq + 1
    assert reg.replied(post.seq, 5.5, 200, body(OK)) == HttpOutput()


def test_deregister_stops_the_reposts() -> None:
    reg = machine()
    post = only_post(reg.register(0.0))
    reg.replied(post.seq, 1.0, 200, body(OK))
    assert reg.deregister(2.0).events == (Deregistered(),)
    assert reg.next_deadline() is None
    assert reg.timer(1000.0) == HttpOutput()


def test_without_a_password_nothing_is_posted() -> None:
    reg = machine(secret=None)
    out = reg.register(0.0)
    assert out.posts == ()
    assert "no password for node 2000" in out.events[0].reason  # type: ignore[attr-defined]
    reg.set_secret(Secret(CANARY))
    assert only_post(reg.timer(60.0)).secret.reveal() == CANARY


def test_time_may_not_go_backwards() -> None:
    reg = machine()
    reg.register(5.0)
    with pytest.raises(LocalProtocolError):
        reg.timer(4.0)


def test_interpret_reply_directly() -> None:
    assert interpret_reply(204, b"").reason == "registrar reply is not JSON"
    assert interpret_reply(299, body(OK)).ok
    assert interpret_reply(300, body(OK)).reason == "registrar answered HTTP 300"
    nested = {"data": {"nodes": {"2000": "Node 2000 successfully registered"}}}
    assert interpret_reply(200, body(nested)).ok


def test_no_log_line_carries_the_password(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    reg = machine()
    post = only_post(reg.register(0.0))
    reg.replied(post.seq, 1.0, 200, body({"data": CANARY}))
    assert CANARY not in caplog.text
