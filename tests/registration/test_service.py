"""The registration service alone: what it refuses, and what the machines' events become (bus
events, announcements, a snapshot), with fakes for the calls and the announcements."""

from __future__ import annotations

from typing import Any

import pytest

from node.config import Address, NodeConfig, RegisterConfig, SecretsConfig
from node.errors import CommandError
from node.events import Registered, RegisterFailed
from node.iax2.registration import Deregistered, RegistrationFailed
from node.iax2.registration import Registered as RegistrationSucceeded
from node.registration.service import RegistrationService
from tests.service_context import Recorded, recording_context


class FakeAnnounce:
    def __init__(self) -> None:
        self.said: list[str] = []

    def event(self, name: str, *, peer: str = "", node: str = "") -> None:
        self.said.append(name)


class FakeCalls:
    def send(self, frames: Any) -> None:
        raise AssertionError("nothing is sent here")

    def allocate_callno(self, now: float) -> int:
        return 1

    def release_callno(self, callno: int, now: float) -> None:
        pass


def service(register: RegisterConfig | None) -> tuple[RegistrationService, Recorded]:
    config = NodeConfig(register=register, secrets=SecretsConfig(source="control"))
    rec = recording_context(config, lambda: 10.0)
    reg = RegistrationService(rec.ctx)
    reg.wire(FakeCalls(), FakeAnnounce())
    return reg, rec


def test_register_needs_the_section_and_the_secret() -> None:
    reg, _ = service(None)
    with pytest.raises(CommandError) as refused:
        reg.register()
    assert refused.value.status == 409 and "no [register] section" in str(refused.value)
    reg, _ = service(RegisterConfig(peer=Address("127.0.0.1", 9), node_id="2000"))
    with pytest.raises(CommandError) as refused:
        reg.register()
    assert refused.value.status == 409 and "no node secret" in str(refused.value)
    with pytest.raises(CommandError) as refused:
        reg.deregister()
    assert (refused.value.status, str(refused.value)) == (409, "not registered")
    reg.start()  # no secret yet: start-up does not try
    assert reg.machine is None and not reg.registered
    assert reg.status() == {
        "method": "iax2",
        "state": "unregistered",
        "perceived_addr": None,
        "last_failure": None,
        "warning": None,
    }


def test_the_machines_events_become_bus_events_announcements_and_one_snapshot() -> None:
    reg, rec = service(None)
    announce = FakeAnnounce()
    reg.wire(FakeCalls(), announce)
    reg.on_events(
        [
            RegistrationFailed("timed out"),
            RegistrationSucceeded(refresh=60, apparent_addr=("192.0.2.1", 4569)),
            Deregistered(),
        ]
    )
    assert rec.published == [RegisterFailed(reason="timed out"), Registered()]
    assert announce.said == ["register_failed", "registered"]
    assert rec.changes == 1
    reg.on_events([])
    assert rec.changes == 1
