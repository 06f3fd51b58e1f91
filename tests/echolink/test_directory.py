"""The directory client: login and list as the directory takes them, renewals, servers in turn,
back-off, and a strict, bounded list parser."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.credential import Secret
from node.echolink import directory as d

LIST = (
    b"@@@\n3\n"
    b"SV1AAA-L\nAthens [ON 14:09]\n111111\n10.0.0.1\n"
    b"N0CALL\n.\n7\n10.0.0.2\n"
    b"*ECHOTEST*\nConference [BUSY 02:18]\n9999\n10.0.0.3\n"
    b"+++\n"
)


def client(servers: tuple[str, ...] = ("a.example", "b.example:5300")) -> d.DirectoryClient:
    return d.DirectoryClient("n0call-l", Secret("pw"), "Here", servers, local_hhmm=lambda: "07:05")


def test_login_line_is_svxlinks() -> None:
    data = d.login_request("n0call-l", Secret("pw"), d.Status.BUSY, "07:05", "Here")
    assert data == b"lN0CALL-L\xac\xacpw\rBUSY3.40(07:05)\rHere\r"


def test_parse_list() -> None:
    stations = d.parse_list(LIST)
    assert len(stations) == 3
    first = stations.by_call("sv1aaa-l")
    assert first == d.StationListed("SV1AAA-L", "Athens", "ON", "111111", "10.0.0.1")
    assert stations.by_node("000007") is not None
    assert stations.by_call("*ECHOTEST*").status == "BUSY"  # type: ignore[union-attr]
    assert stations.listed_at("N0CALL", "10.0.0.2")
    assert not stations.listed_at("N0CALL", "10.0.0.9")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"DDD\n0\n+++\n",
        b"@@@\n2\nA\n.\n1\n10.0.0.1\n+++\n",  # fewer entries than counted
        b"@@@\n1\nA\n.\nx1\n10.0.0.1\n+++\n",  # node not a number
        b"@@@\n1\nA\n.\n1\n10.0.0.300\n+++\n",  # not an address
        b"@@@\n1\nA B\n.\n1\n10.0.0.1\n+++\n",  # two words for a callsign
        b"@@@\n1\nA\n.\n1\n10.0.0.1\n",  # no end
        b"@@@\n99999999\n+++\n",
        b"@@@\n1\nA\n" + b"x" * 300 + b"\n1\n10.0.0.1\n+++\n",
    ],
)
def test_malformed_lists_are_refused(data: bytes) -> None:
    with pytest.raises(d.ListError):
        d.parse_list(data)


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_any_answer_parses_or_is_a_list_error(data: bytes) -> None:
    with contextlib.suppress(d.ListError):
        d.parse_list(b"@@@\n" + data)


def test_login_then_list_then_renewals() -> None:
    c = client()
    (req,), _ = c.start(0.0)
    assert req.kind == "login" and req.server == ("a.example", 5200)
    assert "pw" not in repr(req)
    (lst,), events = c.completed(req.request_id, b"OK", 0.1)
    assert events == (d.LoggedIn("a.example"),)
    assert lst.kind == "list" and lst.payload == b"s"
    assert c.completed(lst.request_id, LIST, 0.2) == ((), (d.ListFetched(3),))
    assert c.logged_in and len(c.list) == 3
    assert c.next_deadline() == 0.2 + d.LIST_INTERVAL  # the list refresh comes first
    (refresh,), _ = c.timer(0.2 + d.LIST_INTERVAL)
    assert refresh.kind == "list"
    c.completed(refresh.request_id, LIST, 0.3 + d.LIST_INTERVAL)
    (renew,), _ = c.timer(d.LOGIN_INTERVAL + 0.1)
    assert renew.kind == "login"
    # A status change while a request is in flight logs in again right after it.
    assert c.set_status(d.Status.BUSY, d.LOGIN_INTERVAL + 0.15) == ((), ())
    (busy,), _ = c.completed(renew.request_id, b"OK", d.LOGIN_INTERVAL + 0.2)
    assert busy.kind == "login" and b"BUSY3.40(07:05)" in busy.payload


def test_servers_in_turn_then_back_off_and_the_list_is_kept() -> None:
    c = client()
    (req,), _ = c.start(0.0)
    (lst,), _ = c.completed(req.request_id, b"OK", 0.0)
    c.completed(lst.request_id, LIST, 0.0)
    now = d.LOGIN_INTERVAL
    (req,), _ = c.timer(now)
    (nxt,), events = c.failed(req.request_id, "refused", now)
    assert events == (d.LoginFailed("a.example", "refused"),)
    assert nxt.server == ("b.example", 5300)  # the next server at once
    refused = d.LoginFailed("b.example:5300", "the directory refused the login")
    assert c.completed(nxt.request_id, b"NO", now) == ((), (refused,))
    # A whole round failed: back off, doubling.
    assert c.next_deadline() == now + d.BACKOFF_FIRST
    assert not c.logged_in and len(c.list) == 3
    snap = c.snapshot(now)
    assert snap["failures"] == 2 and snap["last_error"] and "pw" not in str(snap)
    (req,), _ = c.timer(now + d.BACKOFF_FIRST)
    (req,), _ = c.failed(req.request_id, "down", now + d.BACKOFF_FIRST)
    assert c.failed(req.request_id, "down", now + d.BACKOFF_FIRST) == (
        (),
        (d.LoginFailed("b.example:5300", "down"),),
    )
    assert c.next_deadline() == now + 3 * d.BACKOFF_FIRST
    # A stale answer to a request that is no longer in flight changes nothing.
    assert c.completed(999, b"OK", now) == ((), ())
    assert not c.logged_in


def test_an_unknown_caller_fetches_the_list_soon_not_at_once_again() -> None:
    c = client()
    (req,), _ = c.start(0.0)
    (lst,), _ = c.completed(req.request_id, b"OK", 0.0)
    c.completed(lst.request_id, LIST, 1.0)
    assert c.want_list(2.0) == ((), ())
    assert c.next_deadline() == 1.0 + d.LIST_MISS_HOLDOFF
    (again,), _ = c.timer(1.0 + d.LIST_MISS_HOLDOFF)
    assert again.kind == "list"


def test_bad_list_counts_as_a_failure() -> None:
    c = client(("a.example",))
    (req,), _ = c.start(0.0)
    (lst,), _ = c.completed(req.request_id, b"OK", 0.0)
    _, events = c.completed(lst.request_id, b"garbage", 0.0)
    assert isinstance(events[0], d.LoginFailed) and "bad station list" in events[0].reason


def test_digits_that_are_not_ascii_are_no_number() -> None:
    for data in (b"@@@\n\xb2\n+++\n", b"@@@\n1\nA\n.\n\xb2\n10.0.0.1\n+++\n"):
        with pytest.raises(d.ListError):
            d.parse_list(data)
