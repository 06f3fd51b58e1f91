"""Our node and SvxLink (Debian `svxlink-server` 19.09), a real EchoLink station, through the
directory stand-in: both log in and see each other, each connects to the other, text goes both
ways, either side's disconnect closes both within 1 s."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from tests.control.ami_clients import Allmon3
from tests.echolink.conftest import AMI_PASSWORD, NODE_CALL, NODE_NUMBER, SVX_CALL, SVX_NUMBER
from tests.echolink.directory_standin import Account, DirectoryStandIn
from tests.echolink.svxlink import SvxLink
from tests.node_process import EventLog, NodeProcess

SVX_LINK = "3" + SVX_NUMBER


def wait_event(
    log: EventLog, match: Callable[[dict], bool], timeout: float = 15.0, since: int = 0
) -> dict:
    """The first event from the `since`-th on that matches."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in list(log.events)[since:]:
            if match(event):
                return event
        time.sleep(0.02)
    raise AssertionError(f"no such event; got {log.events[-20:]}")


def call_svxlink(events: EventLog, dial: Callable[[], None], timeout: float = 15.0) -> float:
    """Dial SvxLink until it answers; the seconds the answered attempt took. SvxLink answers a
    station with BYE for about 5 s after a QSO with it ended (an operator dials again)."""
    deadline = time.monotonic() + timeout
    while True:
        since, started = len(events.events), time.monotonic()
        dial()
        end = wait_event(
            events,
            lambda e: e["event"] == "link" and e.get("node") == SVX_LINK and e["kind"] != "keyed",
            since=since,
        )
        if end["kind"] == "connected":
            return time.monotonic() - started
        assert end["reason"] == "bye" and time.monotonic() < deadline, end
        time.sleep(1.0)


def link_event(kind: str, node: str) -> Callable[[dict], bool]:
    return lambda e: e["event"] == "link" and e.get("kind") == kind and e.get("node") == node


def echolink_status(node: NodeProcess) -> dict:
    return node.get("/status").json()["echolink"]


def wait_logged_in(node: NodeProcess, stations: int = 2) -> dict:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        d = echolink_status(node)["directory"]
        if d["logged_in"] and d["stations"] >= stations:
            return d
        time.sleep(0.05)
    raise AssertionError(f"not logged in: {echolink_status(node)}")


def test_both_log_in_and_see_each_other(
    node: NodeProcess, svxlink: SvxLink, directory: DirectoryStandIn, prefix: str
) -> None:
    d = wait_logged_in(node)
    assert d["status"] == "ONLINE" and d["last_error"] is None
    listed = directory.listed()
    # Each is listed at the address of its UDP ports (the login came from there).
    assert listed[NODE_CALL] == f"{prefix}.3"
    assert listed[SVX_CALL] == svxlink.ip
    ours = directory.logins_of(NODE_CALL)[0]
    assert ours.status.startswith("ONLINE3.38(") and ours.location == "Loopback"
    # SvxLink sees us: it fetched the list that holds us.
    assert directory.list_requests >= 2


def test_we_connect_to_svxlink_text_both_ways_and_our_bye_closes_both(
    node: NodeProcess, svxlink: SvxLink, events: EventLog
) -> None:
    wait_logged_in(node)
    mark = len(svxlink.text())
    # By callsign: looked up in the directory's list.
    connect_s = call_svxlink(
        events,
        lambda: node.post("/link", {"action": "connect", "node": SVX_CALL}).raise_for_status(),
    )
    assert svxlink.wait_log("EchoLink QSO state changed to CONNECTED", since=mark)
    print(f"\nconnect time, our node calling SvxLink: {connect_s * 1000:.0f} ms")
    links = node.get("/status").json()["links"]
    (entry,) = [link for link in links if link["node"] == SVX_LINK]
    assert entry["direction"] == "outbound" and entry["codec"] == "gsm"
    assert entry["echolink"]["callsign"] == SVX_CALL

    # SvxLink's information block (its description) reaches us as an event.
    info = wait_event(events, lambda e: e["event"] == "echolink" and e["kind"] == "info")
    assert "SvxLink under test" in info["text"] and info["node"] == SVX_LINK

    # Text from us, by callsign.
    node.post("/echolink/text", {"text": "hello svxlink", "node": SVX_CALL}).raise_for_status()
    assert svxlink.wait_log(f"{NODE_CALL}>hello svxlink", since=mark)

    # Our BYE closes both within 1 s.
    started, since = time.monotonic(), len(events.events)
    node.post("/link", {"action": "disconnect", "node": SVX_LINK}).raise_for_status()
    assert svxlink.wait_log("EchoLink QSO state changed to DISCONNECTED", timeout=1.0, since=mark)
    wait_event(events, link_event("disconnected", SVX_LINK), timeout=1.0, since=since)
    assert time.monotonic() - started < 1.0
    assert not [link for link in node.get("/status").json()["links"] if link["node"] == SVX_LINK]


def test_dtmf_star3_and_star1_with_the_echolink_number(
    node: NodeProcess, svxlink: SvxLink, events: EventLog, ami_port: int
) -> None:
    """`*3` + 3<number> connects as on ASL3, `*1` + 3<number> disconnects (AMI `rpt fun`, the
    same path as the radio's and the links' digits)."""
    wait_logged_in(node)
    mark = len(svxlink.text())

    async def fun(digits: str) -> str:
        client = Allmon3("127.0.0.1", ami_port, "admin", AMI_PASSWORD)
        return await client.command(f"rpt fun 1999 {digits}")

    def dial() -> None:
        assert asyncio.run(fun(f"*3{SVX_LINK}")).startswith("OK")

    call_svxlink(events, dial)
    assert svxlink.wait_log("EchoLink QSO state changed to CONNECTED", since=mark)
    since = len(events.events)
    assert asyncio.run(fun(f"*1{SVX_LINK}")).startswith("OK")
    wait_event(events, link_event("disconnected", SVX_LINK), timeout=1.0, since=since)
    assert svxlink.wait_log("EchoLink QSO state changed to DISCONNECTED", timeout=1.0, since=mark)


def test_svxlink_connects_to_us_and_its_bye_closes_both(
    node: NodeProcess, svxlink: SvxLink, events: EventLog
) -> None:
    wait_logged_in(node)
    mark = len(svxlink.text())
    started = time.monotonic()
    svxlink.dtmf(f"{NODE_NUMBER}#")
    event = wait_event(events, link_event("connected", SVX_LINK))
    print(f"\nconnect time, SvxLink calling our node: {(time.monotonic() - started) * 1000:.0f} ms")
    assert event["direction"] == "inbound"
    assert svxlink.wait_log("EchoLink QSO state changed to CONNECTED", since=mark)
    # Our welcome text reached it.
    assert svxlink.wait_log("Welcome to node 1999", since=mark)
    # The L list an IAX2 link would get names it; AMI's views too (status lists it as a link).
    status = node.get("/status").json()
    assert any(link["node"] == SVX_LINK for link in status["links"])

    started, since = time.monotonic(), len(events.events)
    svxlink.dtmf("#")
    wait_event(events, link_event("disconnected", SVX_LINK), timeout=3.0, since=since)
    gone = time.monotonic() - started
    assert svxlink.wait_log("EchoLink QSO state changed to DISCONNECTED", timeout=1.0, since=mark)
    print(f"SvxLink's disconnect closed our side in {gone * 1000:.0f} ms (DTMF included)")


def test_a_station_not_in_the_directory_cannot_be_called(node: NodeProcess) -> None:
    wait_logged_in(node)
    r = node.post("/link", {"action": "connect", "node": "3999999"})
    assert r.status_code == 404 and "not in the directory" in r.json()["error"]
    r = node.post("/link", {"action": "connect", "node": "NOBODY-L"})
    assert r.status_code == 400  # not a number and not a listed callsign


@pytest.fixture
def stranger(
    directory: DirectoryStandIn, prefix: str, tmp_path_factory: pytest.TempPathFactory
) -> SvxLink:
    """A second SvxLink that logs in but that the directory's list leaves out."""
    directory.accounts.append(Account("SV2BBB-L", "pw-b", "222222"))
    directory.hidden.add("SV2BBB-L")
    svx = SvxLink(
        tmp_path_factory.mktemp("stranger"),
        ip=f"{prefix}.4",
        callsign="SV2BBB-L",
        password="pw-b",
        directory_host=directory.host,
    )
    svx.start()
    return svx


def test_a_station_not_in_the_directory_is_refused(
    node: NodeProcess, stranger: SvxLink, events: EventLog, directory: DirectoryStandIn
) -> None:
    try:
        wait_logged_in(node)
        assert b"SV2BBB-L" not in directory.list_bytes()
        stranger.dtmf(f"{NODE_NUMBER}#")
        refused = wait_event(events, lambda e: e["event"] == "echolink" and e["kind"] == "refused")
        assert refused["callsign"] == "SV2BBB-L" and refused["ip"] == stranger.ip
        assert refused["reason"] == "not in the directory at this address"
        assert not [
            link for link in node.get("/status").json()["links"] if link["node"].startswith("3")
        ]
        assert echolink_status(node)["counters"]["refused"] >= 1
    finally:
        stranger.stop()
