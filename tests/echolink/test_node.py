"""Our node as an EchoLink station without SvxLink: a directory that is down does not stop it
and it logs in when the directory returns; 20 stations (stand-ins of our own, each on its own
loopback address with real UDP 5198/5199) connect at once, the 21st is refused as full; the
password never shows."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from node.echolink import packets as p
from tests.control.ami_clients import Allmon3
from tests.echolink.conftest import (
    AMI_PASSWORD,
    NODE_CALL,
    NODE_NUMBER,
    NODE_PASSWORD,
    ami_section,
    net,
    start_node,
    stop,
)
from tests.echolink.directory_standin import Account, DirectoryStandIn
from tests.echolink.test_svxlink import wait_event
from tests.node_process import EventLog, NodeProcess, free_port


def status(node: NodeProcess) -> dict:
    return node.get("/status").json()["echolink"]


def test_a_directory_that_is_down_does_not_stop_the_node(tmp_path: Path) -> None:
    prefix = net()
    directory = DirectoryStandIn(f"{prefix}.1", [Account(NODE_CALL, NODE_PASSWORD, NODE_NUMBER)])
    node = start_node(tmp_path, f"{prefix}.3", directory.host)
    try:
        deadline = time.monotonic() + 5
        while status(node)["directory"]["failures"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        d = status(node)["directory"]
        assert not d["logged_in"] and d["failures"] >= 1 and d["last_error"]
        # The node goes on: its control channel answers, its links can be asked for.
        assert node.get("/status").status_code == 200
        started = time.monotonic()
        directory.start()
        try:
            deadline = started + 15
            while not status(node)["directory"]["logged_in"] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert status(node)["directory"]["logged_in"], status(node)
            print(f"\nlogged in {time.monotonic() - started:.1f} s after the directory returned")
            assert directory.listed() == {NODE_CALL: f"{prefix}.3"}
        finally:
            directory.stop()
    finally:
        stop(node)


class StandInStation:
    """An EchoLink station of our own on `ip` (UDP 5198 and 5199), speaking `packets`."""

    def __init__(self, ip: str, callsign: str) -> None:
        self.ip, self.callsign = ip, callsign
        self.control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.control.bind((ip, 5199))
        self.audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.audio.bind((ip, 5198))

    def call(self, node_ip: str) -> None:
        self.control.sendto(p.build_sdes(self.callsign, "stand-in"), (node_ip, 5199))

    def heard(self, timeout: float = 5.0) -> object:
        """What the node sent to our control port next."""
        self.control.settimeout(timeout)
        data, _ = self.control.recvfrom(2048)
        return p.parse_control(data)

    def close(self) -> None:
        self.control.close()
        self.audio.close()


@pytest.fixture
def crowd() -> Iterator[tuple[str, DirectoryStandIn, list[StandInStation]]]:
    prefix = net()
    stations = [StandInStation(f"{prefix}.{10 + i}", f"TE{i:02d}ST-L") for i in range(21)]
    accounts = [Account(NODE_CALL, NODE_PASSWORD, NODE_NUMBER)]
    extra = [(Account(s.callsign, "x", str(200000 + i)), s.ip) for i, s in enumerate(stations)]
    with DirectoryStandIn(f"{prefix}.1", accounts, extra=extra) as directory:
        try:
            yield prefix, directory, stations
        finally:
            for s in stations:
                s.close()


async def allmon3_sees_them(port: int) -> None:
    """Allmon3's poll, as its parser reads it: every station a link `3<number>` with the empty
    peer app_rpt gives EchoLink links, and its callsign from `echolink dbget`."""
    client = Allmon3("127.0.0.1", port, "admin", AMI_PASSWORD)
    assert await client.connect()
    try:
        status: dict[str, Any] = {}
        await client.parse_xstat("1999", status)
        conns = status["CONNS"]
        assert set(conns) == {f"3{200000 + i}" for i in range(20)}
        assert all(c["IP"] == "" and c["CSTATE"] == "ESTABLISHED" for c in conns.values())
        assert {c["MODE"] for c in conns.values()} == {"Transceive"}
        found = await client.command("echolink dbget nodename 200003")
        assert found.startswith("OK:\r\n200003|TE03ST-L|127.")
        assert (await client.command("echolink dbget nodename 999")).startswith("ERR: Error: Entry")
        lstats = await client.command("rpt lstats 1999")
        assert lstats.count("ESTABLISHED") == 20
    finally:
        await client.close()


def test_twenty_stations_at_once_and_the_next_is_refused_as_full(
    tmp_path: Path, crowd: tuple[str, DirectoryStandIn, list[StandInStation]]
) -> None:
    prefix, directory, stations = crowd
    ami_port = free_port()
    node = start_node(
        tmp_path,
        f"{prefix}.3",
        directory.host,
        {"NET_AMI_SECRET": AMI_PASSWORD},
        max_stations=20,
        extra=ami_section(ami_port),
    )
    try:
        deadline = time.monotonic() + 10
        while status(node)["directory"]["stations"] < 22 and time.monotonic() < deadline:
            time.sleep(0.05)
        events = EventLog(node)
        events.wait("snapshot")
        started = time.monotonic()
        for s in stations[:20]:
            s.call(f"{prefix}.3")
        for s in stations[:20]:
            assert s.heard() == p.Sdes(NODE_CALL, "Test Node")
        wait_event(events, lambda e: e["event"] == "snapshot" and len(e["links"]) == 20)
        print(f"\n20 stations connected in {(time.monotonic() - started) * 1000:.0f} ms")
        links = {link["node"] for link in node.get("/status").json()["links"]}
        assert links == {f"3{200000 + i}" for i in range(20)}
        asyncio.run(allmon3_sees_them(ami_port))
        # Full: the directory now shows us BUSY, and the 21st is refused.
        deadline = time.monotonic() + 5
        while not directory.logins_of(NODE_CALL)[-1].status.startswith("BUSY"):
            assert time.monotonic() < deadline, directory.logins_of(NODE_CALL)
            time.sleep(0.05)
        stations[20].call(f"{prefix}.3")
        refused = wait_event(events, lambda e: e["event"] == "echolink" and e["kind"] == "refused")
        assert refused["callsign"] == "TE20ST-L" and refused["reason"] == "full"
        # One hangs up: it is gone at once, and we are ONLINE again.
        stations[0].control.sendto(p.build_bye(), (f"{prefix}.3", 5199))
        wait_event(
            events,
            lambda e: (
                e["event"] == "link" and e["kind"] == "disconnected" and e["node"] == "3200000"
            ),
            timeout=1.0,
        )
        deadline = time.monotonic() + 5
        while not directory.logins_of(NODE_CALL)[-1].status.startswith("ONLINE"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # The disconnect_all of a link command ends every QSO with a BYE.
        node.post("/link", {"action": "disconnect_all"}).raise_for_status()
        for s in stations[1:20]:
            msg = s.heard()
            while isinstance(msg, p.Sdes):  # a keep-alive may come first
                msg = s.heard()
            assert msg == p.Bye("jan2002")
    finally:
        stop(node)
    out, err = node.communicate()
    assert NODE_PASSWORD not in out + err
