"""`node serve` registers with a (tiny, real-socket) registrar: events, snapshot, release."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from node.iax2.constants import IaxSubclass
from tests.interop.harness import assert_registered, assert_registration_fails, configured_node
from tests.interop.registrar import Registrar
from tests.node_process import EventLog, NodeProcess

PASSWORD = "canary-registrar-pass-91c2"


def start_node(tmp_path: Path, registrar: Registrar, secret: str) -> NodeProcess:
    host, port = registrar.addr
    extra = f'[register]\npeer = "{host}:{port}"\nnode_id = "1999"\n\n[secrets]\nsource = "env"\n'
    node = configured_node(tmp_path, extra, {"NET_NODE": "1999", "NET_SECRET": secret})
    node.wait_ready()
    return node


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    with Registrar({"1999": PASSWORD}) as reg:
        yield reg


def test_registers_at_start_with_token_and_md5_then_deregisters(
    tmp_path: Path, registrar: Registrar
) -> None:
    node = start_node(tmp_path, registrar, PASSWORD)
    try:
        log = EventLog(node)
        assert registrar.wait_for(
            lambda r: any(f.subclass == IaxSubclass.ACK for f in r.frames_from(node.udp_addr[1]))
        )
        # The registrar's view of us (REGACK APPARENT_ADDR) is shown.
        assert_registered(node, log, "iax2")
        subs = [f.subclass for f in registrar.frames_from(node.udp_addr[1])]
        # Token round, challenge answered with MD5, REGACK acknowledged.
        assert subs[:4] == [
            IaxSubclass.REGREQ,
            IaxSubclass.REGREQ,
            IaxSubclass.REGREQ,
            IaxSubclass.ACK,
        ]
        r = node.post("/deregister")
        assert r.status_code == 200 and r.json()["registered"] is False
        assert r.json()["registration"]["state"] == "unregistered"
        assert registrar.wait_for(
            lambda r: IaxSubclass.REGREL in [f.subclass for f in r.frames_from(node.udp_addr[1])]
        )
        # Registering again on command works.
        node.post("/register")
        assert registrar.wait_for(
            lambda r: (
                [f.subclass for f in r.frames_from(node.udp_addr[1])].count(IaxSubclass.ACK) >= 2
            )
        )
    finally:
        node.kill()
    _, err = node.communicate()
    assert PASSWORD not in err


def test_wrong_password_is_register_failed_with_a_reason(
    tmp_path: Path, registrar: Registrar
) -> None:
    node = start_node(tmp_path, registrar, "not-the-password")
    try:
        reason = assert_registration_fails(node)
        assert reason and "not-the-password" not in reason
    finally:
        node.kill()


def test_a_fake_acknowledgement_is_a_failure_not_a_registration(tmp_path: Path) -> None:
    with Registrar({"1999": PASSWORD}, fake_ack=True) as registrar:
        node = start_node(tmp_path, registrar, PASSWORD)
        try:
            assert "fake acknowledgement" in assert_registration_fails(node)
        finally:
            node.kill()
