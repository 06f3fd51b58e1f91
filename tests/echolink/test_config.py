"""`[echolink]`: the keys as documented, and errors that name the file, the key and what is
accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from node.config import load_config
from node.errors import ConfigError

BASE = '[listener]\nbind = "127.0.0.1:0"\n[control]\nbind = "127.0.0.1:0"\n[echolink]\n'


def load(tmp_path: Path, body: str) -> object:
    path = tmp_path / "node.toml"
    path.write_text(BASE + body)
    return load_config(path)


def test_the_keys_and_their_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, 'callsign = "n0call-l"\nnode_number = "123456"\n')
    el = config.echolink  # type: ignore[attr-defined]
    assert (el.callsign, el.node_number, el.bind) == ("N0CALL-L", "123456", "0.0.0.0")
    assert el.directory == ("servers.echolink.org",) and el.max_stations == 10
    assert (el.allow, el.deny, el.welcome) == (("*",), (), "")


@pytest.mark.parametrize(
    ("body", "key", "accepted"),
    [
        ('callsign = "N0 CALL"\nnode_number = "1"', "echolink.callsign", "a callsign"),
        ('callsign = "N0CALL"\nnode_number = "²"', "echolink.node_number", "1 to 6 digits"),
        ('callsign = "N0CALL"\nnode_number = "1234567"', "echolink.node_number", "1 to 6"),
        ('callsign = "N0CALL"\nnode_number = "1"\nbind = "::1"', "echolink.bind", "IPv4"),
        ('callsign = "N0CALL"\nnode_number = "1"\ndirectory = []', "echolink.directory", "host"),
        ('callsign = "N0CALL"\nnode_number = "1"\nmax_stations = 0', "echolink.max_stations", ""),
        ('callsign = "N0CALL"\nnode_number = "1"\ndeny = ["a b"]', "echolink.deny", "pattern"),
        ('callsign = "N0CALL"\nnode_number = "1"\npassword = "x"', "echolink.password", ""),
        ('node_number = "1"', "echolink.callsign", ""),
    ],
)
def test_errors_name_the_file_the_key_and_what_is_accepted(
    tmp_path: Path, body: str, key: str, accepted: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, body)
    assert err.value.path == str(tmp_path / "node.toml")
    assert err.value.key is not None and err.value.key.startswith(key)
    assert accepted in str(err.value)
    assert '"x"' not in str(err.value)  # a value that may be a password is never repeated
