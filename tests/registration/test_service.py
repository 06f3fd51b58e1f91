"""The registration service alone: what it refuses, and what the machines' events become (bus
events published, announcements and a changed snapshot returned), on a port with a fake
engine."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from node._core import FullFrame
from node.config import Address, NodeConfig, RegisterConfig, SecretsConfig
from node.effects import Announce
from node.errors import CommandError
from node.events import Registered, RegisterFailed
from node.iax2.constants import IE, FrameType, IaxSubclass
from node.iax2.registration import Deregistered, RegistrationFailed
from node.iax2.registration import Registered as RegistrationSucceeded
from node.registration.service import NAT_BINDING_LIFETIME, RegistrationService
from tests.port import make_port
from tests.service_context import Recorded, recording_context


class SentFrames:
    """The engine as the port sees it: what it would send."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, frame: Any, addr: Any) -> None:
        self.sent.append(frame)

    def leg_jitter_stats(self, callno: int) -> None:
        return None

    def jitter_stats(self) -> list[Any]:
        return []


def service(register: RegisterConfig | None) -> tuple[RegistrationService, Recorded]:
    config = NodeConfig(register=register, secrets=SecretsConfig(source="control"))
    rec = recording_context(config, lambda: 10.0)
    reg = RegistrationService(rec.ctx, make_port(rec.ctx))
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
    fx = reg.on_events(
        [
            RegistrationFailed("timed out"),
            RegistrationSucceeded(refresh=60, apparent_addr=("192.0.2.1", 4569)),
            Deregistered(),
        ]
    )
    assert rec.published == [RegisterFailed(reason="timed out"), Registered()]
    assert fx.events == (Announce("register_failed"), Announce("registered"))
    assert fx.changed
    assert not reg.on_events([]).changed


def registered_service(
    apparent_port: int, refresh: int = 60
) -> tuple[RegistrationService, SentFrames, list[float]]:
    """A service registered with a registrar that says it sees us at `apparent_port`, bound to
    port 4570, on a clock the test moves (`clock[0]`)."""
    clock = [10.0]
    config = NodeConfig(
        register=RegisterConfig(peer=Address("127.0.0.1", 4569), node_id="2000", refresh=refresh),
        secrets=SecretsConfig(source="control"),
    )
    rec = recording_context(config, lambda: clock[0])
    rec.ctx.secrets.set("2000", "password")
    port = make_port(rec.ctx)
    calls = SentFrames()
    port.attach(calls)
    reg = RegistrationService(rec.ctx, port)
    reg.bound_port = 4570
    reg.register()
    (req,) = calls.sent
    assert req.subclass == IaxSubclass.REGREQ
    clock[0] += 0.05
    ies: list[tuple[int, Any]] = [
        (IE.USERNAME, "2000"),
        (IE.REFRESH, refresh),
        (IE.APPARENT_ADDR, ("198.51.100.7", apparent_port)),
    ]
    ack = FullFrame(
        FrameType.IAX, IaxSubclass.REGACK, scall=777, dcall=req.scall, ts=req.ts, oseq=0, iseq=1,
        ies=ies,
    )  # fmt: skip
    reg.receive(ack, clock[0])
    assert reg.registered
    return reg, calls, clock


def test_a_port_rewritten_by_a_nat_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "node.registration.service"):
        reg, _, _ = registered_service(apparent_port=61234)
    status = reg.status()
    assert status["perceived_addr"] == "198.51.100.7:61234"
    assert "port 61234 but we are bound to port 4570" in status["warning"]
    assert "a NAT rewrites the port" in caplog.text


def test_the_same_port_and_timely_refreshes_warn_of_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "node.registration.service"):
        reg, calls, clock = registered_service(apparent_port=4570)
        assert reg.status()["warning"] is None
        # The refresh goes out at 5/6 of 60 s: within a NAT binding's likely lifetime.
        clock[0] = reg.next_deadline() or 0.0
        assert clock[0] - 10.05 == pytest.approx(50)
        reg.timer(clock[0])
        assert calls.sent[-1].subclass == IaxSubclass.REGREQ
        assert reg.status()["warning"] is None
    assert caplog.text == ""


def test_a_refresh_later_than_a_nat_binding_lives_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "node.registration.service"):
        reg, _, clock = registered_service(apparent_port=4570, refresh=300)
        clock[0] += NAT_BINDING_LIFETIME - 1
        assert reg.status()["warning"] is None
        clock[0] += 2
        warning = reg.status()["warning"]
        assert "nothing went to the registrar for 61 s (refresh every 300 s" in warning
        assert "lower [register] refresh" in warning
        clock[0] = reg.next_deadline() or 0.0  # the refresh, 250 s after the last frame
        reg.timer(clock[0])
    assert "nothing went to the registrar for 250 s" in caplog.text
    # It went out: the binding is fresh again.
    assert reg.status()["warning"] is None
