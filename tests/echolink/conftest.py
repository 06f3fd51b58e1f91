"""Fixtures of the EchoLink tests: a directory stand-in, SvxLink stations and our node, each on
its own loopback address (EchoLink's UDP ports are fixed; all of 127/8 works on `lo`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.echolink.directory_standin import Account, DirectoryStandIn
from tests.echolink.svxlink import SVXLINK, SvxLink
from tests.interop.harness import free_udp_port
from tests.node_process import EventLog, NodeProcess, free_port

#: Each module takes a /24 of its own under 127.0.0.0/8 (xdist runs modules side by side).
_NETS = itertools.count(60)

NODE_CALL = "N0CALL-L"
NODE_NUMBER = "123456"
NODE_PASSWORD = "canary-echolink-pw-3b81"
SVX_CALL = "SV1AAA-L"
SVX_NUMBER = "111111"


def net() -> str:
    """A fresh 127.x.y prefix for one module (pid-based, so parallel workers differ)."""
    n = next(_NETS)
    return f"127.{(os.getpid() % 200) + 20}.{n}"


def node_config(ip: str, directory: str, *, extra: str = "", max_stations: int = 10) -> str:
    return f"""
[echolink]
callsign = "{NODE_CALL}"
node_number = "{NODE_NUMBER}"
bind = "{ip}"
directory = ["{directory}"]
location = "Loopback"
sysop = "Test Node"
max_stations = {max_stations}
welcome = "Welcome to node 1999"
{extra}
"""


def start_node(
    tmp_path: Path, ip: str, directory: str, env: dict[str, str] | None = None, **kw: object
) -> NodeProcess:
    """Our node 1999 with `[echolink]` on `ip`, its directory at `directory`."""
    udp, http = free_udp_port(), free_port()
    path = tmp_path / "node.toml"
    path.write_text(
        f'node_id = "1999"\n\n[listener]\nbind = "127.0.0.1:{udp}"\nauth = "off"\n\n'
        f'[control]\nbind = "127.0.0.1:{http}"\n\n[audio]\nbackend = "none"\n\n'
        # Nothing but loopback: no node-number lookups in DNS.
        "[links]\ndns = false\n" + node_config(ip, directory, **kw)  # type: ignore[arg-type]
    )
    node = NodeProcess(path, udp, http, env={"NET_ECHOLINK_PASSWORD": NODE_PASSWORD, **(env or {})})
    node.wait_ready()
    return node


def stop(node: NodeProcess) -> None:
    if node.proc.poll() is None:
        node.post("/shutdown")
        try:
            node.wait(10)
        except Exception:
            node.kill()
    node.kill()


@pytest.fixture(scope="module")
def prefix() -> str:
    return net()


@pytest.fixture(scope="module")
def directory(prefix: str) -> Iterator[DirectoryStandIn]:
    accounts = [
        Account(NODE_CALL, NODE_PASSWORD, NODE_NUMBER),
        Account(SVX_CALL, "svx-pw", SVX_NUMBER),
    ]
    with DirectoryStandIn(f"{prefix}.1", accounts) as d:
        yield d


@pytest.fixture(scope="module")
def svxlink(
    directory: DirectoryStandIn, prefix: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SvxLink]:
    require_tool(SVXLINK, lambda: Path(SVXLINK).exists())
    svx = SvxLink(
        tmp_path_factory.mktemp("svxlink"),
        ip=f"{prefix}.2",
        callsign=SVX_CALL,
        password="svx-pw",
        directory_host=directory.host,
    )
    svx.start()
    try:
        yield svx
    finally:
        svx.stop()


AMI_PASSWORD = "ami-pass-echolink"


def ami_section(port: int) -> str:
    return f'\n[ami]\nenabled = true\nbind = "127.0.0.1:{port}"\nusername = "admin"\n'


@pytest.fixture(scope="module")
def ami_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def node(
    directory: DirectoryStandIn,
    svxlink: SvxLink,
    prefix: str,
    ami_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[NodeProcess]:
    n = start_node(
        tmp_path_factory.mktemp("node"),
        f"{prefix}.3",
        directory.host,
        {"NET_AMI_SECRET": AMI_PASSWORD},
        extra=ami_section(ami_port),
    )
    try:
        yield n
    finally:
        stop(n)


@pytest.fixture
def events(node: NodeProcess) -> EventLog:
    """The node's event stream, subscribed (its first snapshot in) before the test acts: what
    the test's first command causes may otherwise happen before the subscription."""
    log = EventLog(node)
    log.wait("snapshot")
    return log
