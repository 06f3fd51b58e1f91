"""Registration over real loopback UDP: iaxmodem (libiax2) and our `Registration` machine, both
against the tiny test registrar of tests/interop/registrar.py.

iaxmodem is an independent implementation, so it checks the registrar (and with it the frames
our machine is tested against); our machine then runs the same dialogs over a real socket,
including the call-token round that iaxmodem does not know.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from node._core import FrameError, FullFrame, parse
from node.iax2.constants import IE, FrameType, IaxSubclass
from node.iax2.registration import (
    Deregistered,
    Registered,
    Registration,
    RegistrationEvent,
    RegistrationFailed,
)
from tests.interop.harness import free_udp_port
from tests.interop.iaxmodem import IaxModem
from tests.interop.registrar import Registrar

#: libstdbuf makes iaxmodem's stdout line-buffered; block-buffered, its log lines reach the
#: file only at exit (or never, when it is terminated).
REG_SUCCESS = "Registration completed successfully"
REG_FAILED = "Registration failed"


def wait_log(modem: IaxModem, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while text not in modem.log():
        if time.monotonic() > deadline:
            raise AssertionError(f"iaxmodem never logged {text!r}:\n{modem.log()[-3000:]}")
        time.sleep(0.05)
    return modem.log()


@contextmanager
def running(modem: IaxModem) -> Iterator[IaxModem]:
    """Like `with modem:`, but also stops the process when `start()` itself fails."""
    try:
        modem.start()
        yield modem
    finally:
        modem.stop()


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    with Registrar({"modem": "password", "2000": "node-pass"}) as reg:
        yield reg


def iax(frames: list[FullFrame]) -> list[int]:
    return [f.subclass for f in frames if f.ftype == FrameType.IAX]


# --- iaxmodem ---


@pytest.mark.usefixtures("modem_env")
def test_iaxmodem_registers_with_md5(modem_dir: Path, registrar: Registrar) -> None:
    port = free_udp_port()
    host, rport = registrar.addr
    modem = IaxModem(
        modem_dir,
        port=port,
        server=f"{host}:{rport}",
        peername="modem",
        secret="password",
        refresh=60,
    )
    with running(modem):
        wait_log(modem, REG_SUCCESS)
        assert registrar.wait_for(lambda r: IaxSubclass.ACK in iax(r.frames_from(port)))
        assert registrar.registrations["modem"] == (("127.0.0.1", port), 60)
        first, second, ack = registrar.frames_from(port)[:3]
    assert iax([first, second, ack]) == [IaxSubclass.REGREQ, IaxSubclass.REGREQ, IaxSubclass.ACK]
    # libiax2 predates call tokens: the registrar let the token-less request through.
    assert not first.has_ie(IE.CALLTOKEN) and not first.has_ie(IE.MD5_RESULT)
    assert first.dcall == 0 and first.ie(IE.USERNAME) == "modem"
    assert second.has_ie(IE.MD5_RESULT) and second.dcall != 0
    assert (second.oseq, second.iseq) == (1, 1)
    regack = next(f for f, _ in registrar.sent if f.subclass == IaxSubclass.REGACK)
    assert ack.ts == regack.ts and (ack.oseq, ack.iseq) == (2, 2)


@pytest.mark.usefixtures("modem_env")
def test_iaxmodem_with_a_wrong_password_is_rejected(modem_dir: Path, registrar: Registrar) -> None:
    port = free_udp_port()
    host, rport = registrar.addr
    modem = IaxModem(
        modem_dir, port=port, server=f"{host}:{rport}", peername="modem", secret="wrong", refresh=60
    )
    with running(modem):
        log = wait_log(modem, REG_FAILED)
        assert registrar.wait_for(lambda r: IaxSubclass.ACK in iax(r.frames_from(port)))
        # Before iaxmodem exits (it sends REGREL then).
        sent = [f.subclass for f, addr in registrar.sent if addr[1] == port]
    assert REG_SUCCESS not in log
    assert "modem" not in registrar.registrations
    assert sent == [IaxSubclass.REGAUTH, IaxSubclass.REGREJ]
    assert iax(registrar.frames_from(port))[:3] == [
        IaxSubclass.REGREQ,
        IaxSubclass.REGREQ,
        IaxSubclass.ACK,
    ]


# --- our machine over a real socket ---


class Driver:
    """A small blocking loop: our UDP socket, `Registration` outputs out, datagrams in."""

    def __init__(self, registrar: Registrar, password: str | None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.peer = registrar.addr
        self.sent: list[FullFrame] = []
        self.events: list[RegistrationEvent] = []
        numbers = iter(range(200, 32768))
        self.reg = Registration(
            self.peer, "2000", password, 60, lambda: next(numbers), time.monotonic()
        )

    def close(self) -> None:
        self.sock.close()

    def apply(self, out: object) -> None:
        frames = getattr(out, "frames", ())
        for frame in frames:
            self.sent.append(frame)
            self.sock.sendto(frame.to_bytes(), self.peer)
        self.events.extend(getattr(out, "events", ()))

    def run_until(self, done: Callable[[list[RegistrationEvent]], bool], limit: float = 10) -> None:
        stop = time.monotonic() + limit
        while not done(self.events):
            now = time.monotonic()
            if now > stop:
                raise AssertionError(f"gave up waiting; events so far: {self.events}")
            deadline = self.reg.next_deadline()
            wait = stop - now if deadline is None else max(0.0, min(deadline, stop) - now)
            ready, _, _ = select.select([self.sock], [], [], wait)
            now = time.monotonic()
            if ready:
                data, addr = self.sock.recvfrom(4096)
                if addr[:2] != self.peer:
                    continue
                try:
                    frame = parse(data)
                except FrameError:
                    continue
                if isinstance(frame, FullFrame) and frame.dcall in self.reg.callnos:
                    self.apply(self.reg.receive(frame, now))
            elif deadline is not None and now >= deadline:
                self.apply(self.reg.timer(now))


@pytest.fixture
def driver_factory(registrar: Registrar) -> Iterator[Callable[[str | None], Driver]]:
    made: list[Driver] = []

    def make(password: str | None) -> Driver:
        d = Driver(registrar, password)
        made.append(d)
        return d

    yield make
    for d in made:
        d.close()


def test_our_registration_with_token_round_and_md5_then_deregister(
    registrar: Registrar, driver_factory: Callable[[str | None], Driver]
) -> None:
    d = driver_factory("node-pass")
    d.apply(d.reg.register(time.monotonic()))
    d.run_until(lambda ev: any(isinstance(e, Registered) for e in ev))
    (registered,) = d.events
    assert registered == Registered(60, ("127.0.0.1", d.port))
    assert d.reg.registered and d.reg.apparent_addr == ("127.0.0.1", d.port)
    assert registrar.wait_for(lambda r: len(r.frames_from(d.port)) >= 4)
    assert registrar.registrations["2000"] == (("127.0.0.1", d.port), 60)

    seen = registrar.frames_from(d.port)
    assert iax(seen) == [IaxSubclass.REGREQ] * 3 + [IaxSubclass.ACK]
    empty, tokened, answered, _ = seen
    assert dict(empty.ies)[IE.CALLTOKEN] == b""
    issued = next(f for f, _ in registrar.sent if f.subclass == IaxSubclass.CALLTOKEN)
    assert dict(tokened.ies)[IE.CALLTOKEN] == dict(issued.ies)[IE.CALLTOKEN]
    assert (tokened.oseq, tokened.iseq, tokened.dcall) == (0, 0, 0)
    assert answered.has_ie(IE.MD5_RESULT) and answered.dcall != 0

    d.apply(d.reg.deregister(time.monotonic()))
    assert not d.reg.registered
    d.run_until(lambda ev: any(isinstance(e, Deregistered) for e in ev))
    assert registrar.wait_for(lambda r: "2000" not in r.registrations)
    assert registrar.wait_for(lambda r: len(r.frames_from(d.port)) >= 8)
    released = iax(registrar.frames_from(d.port))[4:]
    assert released == [IaxSubclass.REGREL] * 3 + [IaxSubclass.ACK]
    assert d.reg.next_deadline() is None


def test_our_registration_with_a_wrong_password_fails(
    registrar: Registrar, driver_factory: Callable[[str | None], Driver]
) -> None:
    d = driver_factory("not-it")
    d.apply(d.reg.register(time.monotonic()))
    d.run_until(lambda ev: bool(ev))
    assert d.events == [RegistrationFailed("rejected by registrar: Registration Refused")]
    assert not d.reg.registered and "2000" not in registrar.registrations
    assert registrar.wait_for(lambda r: iax(r.frames_from(d.port))[-1:] == [IaxSubclass.ACK])


def test_our_registration_refuses_a_fake_acknowledgement(
    registrar: Registrar, driver_factory: Callable[[str | None], Driver]
) -> None:
    registrar.fake_ack = True
    d = driver_factory("node-pass")
    d.apply(d.reg.register(time.monotonic()))
    d.run_until(lambda ev: bool(ev))
    assert d.events == [RegistrationFailed("registrar sent a fake acknowledgement")]
    assert not d.reg.registered


def test_our_registration_refuses_plaintext_only(
    registrar: Registrar, driver_factory: Callable[[str | None], Driver]
) -> None:
    registrar.auth_methods = 0x1
    d = driver_factory("node-pass")
    d.apply(d.reg.register(time.monotonic()))
    d.run_until(lambda ev: bool(ev))
    (failed,) = d.events
    assert isinstance(failed, RegistrationFailed) and "plaintext" in failed.reason
    assert registrar.wait_for(lambda r: IaxSubclass.REJECT in iax(r.frames_from(d.port)))
    for r in registrar.frames_from(d.port):
        assert not r.has_ie(IE.PASSWORD)
        assert b"node-pass" not in r.to_bytes()
