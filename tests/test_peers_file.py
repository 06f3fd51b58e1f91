"""Tests for node.peers_file: the line format, every refusal, and errors that never show a line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.errors import ConfigError
from node.peers_file import MAX_BYTES, parse_peers, read_peers_file

CANARY = "Canary-peer-4b1d-hunter2"
HERE = Path("/etc/iax-node/peers")


def write(tmp_path: Path, text: str | bytes, mode: int = 0o600) -> Path:
    path = tmp_path / "peers"
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    path.chmod(mode)
    return path


def secrets_of(text: str) -> dict[str, str]:
    return {node: s.reveal() for node, s in parse_peers(text, HERE).secrets.items()}


# --- the format ---------------------------------------------------------------------------------


def test_lines_comments_blanks_and_trimming() -> None:
    text = (
        "# peers of node 1999\n"
        "\n"
        "2001=alpha\n"
        "   # an indented comment\n"
        " 2002 =\tbeta gamma \n"
        "2003= s3cr=t#not-a-comment\n"
        "\t\n"
    )
    assert secrets_of(text) == {
        "2001": "alpha",
        "2002": "beta gamma",
        "2003": "s3cr=t#not-a-comment",
    }


def test_crlf_bom_and_no_final_newline() -> None:
    assert secrets_of("\ufeff2001=a\r\n2002=b") == {"2001": "a", "2002": "b"}


def test_unusual_whitespace_belongs_to_the_secret() -> None:
    # Only spaces and tabs are trimmed, and only line feeds end a line: a form feed or U+2028
    # inside a secret stays in it (splitlines() would have cut the secret in two).
    assert secrets_of("2001=a\x0cb\u2028c\u00a0\n") == {"2001": "a\x0cb\u2028c\u00a0"}


def test_line_numbers_are_kept_and_repr_shows_node_ids_only() -> None:
    peers = parse_peers(f"# x\n\n2001={CANARY}\n2002=other\n", HERE)
    assert dict(peers.lines) == {"2001": 3, "2002": 4}
    assert CANARY not in repr(peers)
    assert CANARY not in str(peers)
    assert "2001" in repr(peers)


def test_empty_file_provisions_nobody() -> None:
    assert secrets_of("") == {}
    assert secrets_of("# nothing yet\n") == {}


@given(
    st.dictionaries(
        st.from_regex(r"[0-9]{1,7}", fullmatch=True),
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
            min_size=1,
        ).filter(lambda s: s.strip(" \t") == s and s),
        max_size=8,
    )
)
def test_any_secret_round_trips(table: dict[str, str]) -> None:
    text = "".join(f"{node}={secret}\n" for node, secret in table.items())
    assert secrets_of(text) == table


# --- refusals: line number, never the line ------------------------------------------------------

BAD_LINES = [
    (f"2001=ok\n{CANARY}\n", 2, "has no '='"),
    (f"2001 {CANARY}\n", 1, "has no '='"),
    (f"# c\nnode-{CANARY}={CANARY}\n", 2, "not a node number"),
    (f"={CANARY}\n", 1, "not a node number"),
    (f"20 01={CANARY}\n", 1, "not a node number"),
    ("2001=\n", 1, "secret of node 2001 is empty"),
    ("2001 = \t \n", 1, "secret of node 2001 is empty"),
    (f"2001={CANARY}\n\n2001={CANARY}x\n", 3, "first on line 1"),
]


@pytest.mark.parametrize(("text", "line", "problem"), BAD_LINES)
def test_bad_line_names_file_and_line_number_only(text: str, line: int, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_peers(text, HERE)
    err = info.value
    assert err.path == str(HERE)
    assert err.key == f"line {line}"
    assert problem in str(err)
    assert CANARY not in str(err)
    assert CANARY not in repr(err)
    assert err.__cause__ is None and err.__context__ is None


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, b"2001=a\n2002=" + CANARY.encode() + b"\xff\n")
    with pytest.raises(ConfigError) as info:
        read_peers_file(path)
    assert info.value.key == "line 2"
    assert "not UTF-8" in str(info.value)
    assert CANARY not in str(info.value)
    # No chained exception holds the file's bytes either.
    assert info.value.__cause__ is None and info.value.__context__ is None


# --- the file -----------------------------------------------------------------------------------


def test_reads_a_private_file(tmp_path: Path) -> None:
    for mode in (0o600, 0o400):
        path = write(tmp_path, f"2001={CANARY}\n", mode)
        peers = read_peers_file(path)
        assert peers.path == path
        assert peers.secrets["2001"].equals(CANARY)
        path.chmod(0o600)
        path.unlink()


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o660, 0o666, 0o610, 0o601])
def test_group_or_other_permissions_are_refused(tmp_path: Path, mode: int) -> None:
    path = write(tmp_path, f"2001={CANARY}\n", mode)
    with pytest.raises(ConfigError) as info:
        read_peers_file(path)
    message = str(info.value)
    assert info.value.path == str(path)
    assert f"{mode:04o}" in message
    assert f"chmod 600 {path}" in message
    assert CANARY not in message


def test_owner_execute_bit_alone_is_accepted(tmp_path: Path) -> None:
    # 0700 gives nobody else anything; the check is about group and others.
    path = write(tmp_path, "2001=a\n", 0o700)
    assert read_peers_file(path).secrets["2001"].equals("a")


def test_symlink_to_a_private_file_is_followed(tmp_path: Path) -> None:
    real = write(tmp_path, "2001=a\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert read_peers_file(link).secrets["2001"].equals("a")
    real.chmod(0o644)
    with pytest.raises(ConfigError, match="0644"):
        read_peers_file(link)


def test_directory_fifo_and_socket_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir(mode=0o700)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        for path in (folder, fifo):
            # The FIFO has no writer: opening it must not hang.
            with pytest.raises(ConfigError, match="is not a regular file"):
                read_peers_file(path)
        with pytest.raises(ConfigError, match="cannot open the peers file"):
            read_peers_file(sock_path)


def test_device_is_refused() -> None:
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_peers_file(Path("/dev/null"))


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, f"2001={CANARY}\n")
    os.chown(path, 54321, -1)
    with pytest.raises(ConfigError) as info:
        read_peers_file(path)
    message = str(info.value)
    assert "uid 54321" in message
    assert "chown" in message
    assert CANARY not in message


def test_file_owned_by_the_running_user_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "2001=a\n")
    assert path.stat().st_uid == os.geteuid()
    assert read_peers_file(path).secrets


def test_missing_file_is_left_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_peers_file(tmp_path / "nope")
    with pytest.raises(NotADirectoryError):
        read_peers_file(write(tmp_path, "") / "below")


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, b"#" * (MAX_BYTES + 1))
    with pytest.raises(ConfigError, match="larger than"):
        read_peers_file(path)
    path.write_bytes(b"#" * MAX_BYTES)
    assert read_peers_file(path).secrets == {}


def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path, "2001=a\n", 0o000)
    if os.geteuid() != 0:
        with pytest.raises(ConfigError, match="cannot open the peers file"):
            read_peers_file(path)
        return
    # Root reads any file: read it as an ordinary user instead (the file stays root's and
    # mode 0000; its directory is opened up so that only the file's own mode refuses).
    tmp_path.chmod(0o755)
    code = (
        "import os\n"
        "from node.errors import ConfigError\n"
        "from node.peers_file import read_peers_file\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "try:\n"
        f"    read_peers_file({str(path)!r})\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert "cannot open the peers file" in out.stdout, out.stdout + out.stderr
