"""The control channel's bounds (docs/control-api.md "Limits") over real HTTP: a `node serve`
child process on loopback, raw sockets for the requests no polite client sends."""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import Iterator

import pytest

from node.control.limits import MAX_BODY_BYTES, MAX_HEAD_BYTES, MAX_TARGET_BYTES
from tests.node_process import NodeProcess, free_port

#: The smallest request deadline the config takes, so the time-out tests run fast.
REQUEST_TIMEOUT = 1
#: Seconds a test waits for the node to answer or close; generous, never a pass condition.
PATIENCE = 15.0


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    udp, http = free_port(socket.SOCK_DGRAM), free_port()
    config = tmp_path_factory.mktemp("limits") / "node.toml"
    config.write_text(
        f"""
[listener]
bind = "127.0.0.1:{udp}"

[control]
bind = "127.0.0.1:{http}"
request_timeout = {REQUEST_TIMEOUT}
idle_timeout = 1

[audio]
backend = "none"
"""
    )
    proc = NodeProcess(config, udp, http)
    proc.wait_ready()
    yield proc
    proc.signal(signal.SIGTERM)
    try:
        proc.wait()
    finally:
        proc.kill()


def connect(node: NodeProcess) -> socket.socket:
    host, port = node.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=PATIENCE)
    return sock


def head(node: NodeProcess, method: str, path: str, headers: dict[str, str]) -> bytes:
    port = node.base_url.rsplit(":", 1)[1]
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_reply(sock: socket.socket) -> tuple[int, dict[str, str], bytes, bool]:
    """(status, headers, body, closed): one response, then whether the server closed after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed without a response; got {data!r}"
        data += chunk
    raw_head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return int(status_line.split()[1]), headers, body[:length], closed_by_server(sock)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server ends the connection (EOF or reset) within PATIENCE seconds."""
    sock.settimeout(PATIENCE)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def error_of(body: bytes) -> str:
    message = json.loads(body)["error"]
    assert isinstance(message, str)
    return message


def dial_head(node: NodeProcess, **headers: str) -> bytes:
    """The head of a POST /dial with these headers (`Content_Length` for `Content-Length`)."""
    named = {k.replace("_", "-"): v for k, v in headers.items()}
    return head(node, "POST", "/dial", {"Content-Type": "application/json", **named})


def refusal(sock: socket.socket) -> tuple[int, str]:
    """(status, error message) of a JSON refusal after which the node closed the connection."""
    status, headers, body, closed = read_reply(sock)
    assert headers["content-type"] == "application/json"
    assert closed
    return status, error_of(body)


def test_an_oversized_body_is_refused_413_before_it_is_read(node: NodeProcess) -> None:
    # 50 MB announced, 64 KiB sent: the answer comes without the rest, and the connection ends.
    with connect(node) as sock:
        sock.sendall(dial_head(node, Content_Length=str(50_000_000)))
        sock.sendall(b" " * MAX_BODY_BYTES)
        status, message = refusal(sock)
    assert status == 413
    assert str(MAX_BODY_BYTES) in message


def test_an_oversized_chunked_body_is_refused_413(node: NodeProcess) -> None:
    with connect(node) as sock:
        sock.sendall(dial_head(node, Transfer_Encoding="chunked"))
        chunk = b" " * 4096
        sent = 0
        while sent <= MAX_BODY_BYTES:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
        status, message = refusal(sock)
    assert status == 413
    assert "larger than" in message


def test_a_body_at_the_limit_still_reaches_the_command(node: NodeProcess) -> None:
    body = json.dumps({"node": "x" * 10}).encode()
    body += b" " * (MAX_BODY_BYTES - len(body))
    with connect(node) as sock:
        sock.sendall(dial_head(node, Content_Length=str(len(body))) + body)
        status, _, reply, _ = read_reply(sock)
    # The handler ran: its own refusal of the node number, not a limit.
    assert status == 400
    assert "larger than" not in error_of(reply)


def test_an_oversized_head_is_refused_431(node: NodeProcess) -> None:
    with connect(node) as sock:
        sock.sendall(head(node, "GET", "/status", {"X-Filler": "a" * (MAX_HEAD_BYTES + 1)}))
        status, message = refusal(sock)
    assert status == 431
    assert str(MAX_HEAD_BYTES) in message


def test_a_long_url_is_refused_414(node: NodeProcess) -> None:
    with connect(node) as sock:
        sock.sendall(head(node, "GET", "/status?" + "a" * MAX_TARGET_BYTES, {}))
        status, message = refusal(sock)
    assert status == 414
    assert str(MAX_TARGET_BYTES) in message


def test_a_malformed_head_gets_the_json_error_form(node: NodeProcess) -> None:
    with connect(node) as sock:
        sock.sendall(b"GET /status HTTP/1.1\r\nno colon here\r\n\r\n")
        status, message = refusal(sock)
    assert status == 400
    assert message


def test_a_trickled_head_is_timed_out_408(node: NodeProcess) -> None:
    # Slowloris: a byte of the head now and then, never the end of it. The node answers 408
    # and closes although bytes keep coming, because the deadline runs from the first byte.
    with connect(node) as sock:
        sock.sendall(b"GET /status HTTP/1.1\r\nX-A: ")
        sock.settimeout(0.2)
        reply = b""
        for _ in range(int(PATIENCE / 0.2)):
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                break
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
            if not data:
                break
            reply += data
    assert reply.startswith(b"HTTP/1.1 408 ")


def test_a_trickled_body_is_timed_out_408(node: NodeProcess) -> None:
    with connect(node) as sock:
        sock.sendall(dial_head(node, Content_Length="100") + b"{")
        status, message = refusal(sock)
    assert status == 408
    assert "not received" in message


def test_a_silent_connection_is_closed(node: NodeProcess) -> None:
    with connect(node) as sock:
        status, _, _, closed = read_reply(sock)
    assert status == 408
    assert closed


def test_two_hundred_idle_connections_do_not_shut_out_status(node: NodeProcess) -> None:
    idle = [connect(node) for _ in range(200)]
    try:
        # Half of them begin a request and stop; the rest never send a byte.
        for sock in idle[::2]:
            sock.sendall(b"GET /status HTTP/1.1\r\n")
        reply = node.get("/status")
        assert reply.status_code == 200
        assert "calls" in reply.json()
        # And every idle one is let go by the node, without a request of its own finishing.
        assert all(closed_by_server(sock) for sock in idle)
    finally:
        for sock in idle:
            sock.close()


def test_keep_alive_still_serves_several_requests(node: NodeProcess) -> None:
    with connect(node) as sock:
        for _ in range(3):
            sock.sendall(head(node, "GET", "/status", {}))
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(65536)
            raw_head, _, body = data.partition(b"\r\n\r\n")
            assert raw_head.startswith(b"HTTP/1.1 200 ")
            length = int(
                next(
                    line.split(b":", 1)[1]
                    for line in raw_head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
            )
            while len(body) < length:
                body += sock.recv(65536)
        # Idle past idle_timeout: uvicorn's keep-alive closes it.
        assert closed_by_server(sock)


def test_a_head_growing_past_the_limit_is_refused_431(node: NodeProcess) -> None:
    # Sent in pieces with no end of head: the parser stops buffering at its bound.
    with connect(node) as sock:
        sock.sendall(b"GET /status HTTP/1.1\r\nX-Filler: ")
        try:
            for _ in range(MAX_HEAD_BYTES // 1024 + 2):
                sock.sendall(b"a" * 1024)
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, message = refusal(sock)
    assert status == 431
    assert str(MAX_HEAD_BYTES) in message
