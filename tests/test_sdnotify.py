"""Tests for node.sdnotify against real AF_UNIX datagram sockets."""

from __future__ import annotations

import logging
import socket
import tempfile
import time
from pathlib import Path

import pytest

from node.sdnotify import Notifier
from tests.node_process import NotifySocket


def fields(data: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in data.split("\n"))


def test_without_a_socket_nothing_is_sent() -> None:
    env: dict[str, str] = {"PATH": "/bin"}
    notifier = Notifier.from_environ(env)
    assert not notifier.active
    notifier.ready("x")
    notifier.reloading()
    notifier.stopping()


def test_abstract_socket_and_the_variable_is_taken_out_of_the_environment() -> None:
    listener = NotifySocket()
    try:
        env = {**listener.env, "PATH": "/bin"}
        notifier = Notifier.from_environ(env)
        assert "NOTIFY_SOCKET" not in env
        assert notifier.active
        notifier.ready("IAX2 on 127.0.0.1:4569,\n control on 127.0.0.1:8730")
        assert listener.wait("READY") == {
            "READY": "1",
            "STATUS": "IAX2 on 127.0.0.1:4569, control on 127.0.0.1:8730",
        }
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        notifier.reloading()
        reloading = listener.wait("RELOADING")
        assert reloading["RELOADING"] == "1"
        assert before <= int(reloading["MONOTONIC_USEC"])
        notifier.stopping()
        assert listener.wait("STOPPING")["STOPPING"] == "1"
    finally:
        listener.close()


def test_path_socket() -> None:
    # AF_UNIX paths are limited to 108 bytes: a short directory, not pytest's tmp_path.
    with tempfile.TemporaryDirectory(prefix="sdn", dir="/tmp") as folder:
        path = str(Path(folder) / "notify")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.bind(path)
            sock.settimeout(5)
            Notifier(path).ready()
            assert fields(sock.recv(4096).decode()) == {"READY": "1"}


def test_a_vanished_manager_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    with tempfile.TemporaryDirectory(prefix="sdn", dir="/tmp") as folder:
        notifier = Notifier(str(Path(folder) / "gone"))
        with caplog.at_level(logging.WARNING, logger="node.sdnotify"):
            notifier.ready()
    assert "cannot notify the service manager" in caplog.text


def test_unsupported_address_form_is_inert(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="node.sdnotify"):
        notifier = Notifier("vsock:2:1234")
    assert not notifier.active
    assert "NOTIFY_SOCKET" in caplog.text
