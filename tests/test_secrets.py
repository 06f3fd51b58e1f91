"""Tests for node.secrets: Secret, every source, redaction, and a canary that never leaks."""

from __future__ import annotations

import base64
import copy
import dataclasses
import io
import logging
import pickle
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from node.config import Address, NodeConfig, RegisterConfig, SecretsConfig, load_config
from node.errors import CommandError, ConfigError
from node.secrets import (
    REDACTED,
    RedactingFilter,
    Secret,
    SecretSettings,
    SecretStore,
    check_private_file,
)

CANARY = "Canary-9c1e-hunter2"
OTHER = "Zebra-Other-55aa"
BASE = "[listener]\n[control]\n"
REGISTER = '[register]\npeer = "192.0.2.1:4569"\nnode_id = "2000"\n'


def write(tmp_path: Path, text: str, mode: int = 0o600, name: str = "node.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def load(tmp_path: Path, text: str, mode: int = 0o600) -> NodeConfig:
    return load_config(write(tmp_path, text, mode))


def assert_hidden(*things: object) -> None:
    for thing in things:
        assert CANARY not in repr(thing)
        assert CANARY not in str(thing)


# --- Secret -------------------------------------------------------------------------------------


def test_secret_never_shows_itself() -> None:
    s = Secret(CANARY)
    assert repr(s) == "Secret('***')"
    assert str(s) == REDACTED
    assert f"{s}" == REDACTED
    assert f"{s!r}" == "Secret('***')"
    assert f"{s:>40}" == REDACTED
    assert "%s %r" % (s, s) == "*** Secret('***')"  # noqa: UP031 - %-formatting is what logging uses
    assert "{}".format(s) == REDACTED  # noqa: UP032
    assert s.reveal() == CANARY
    assert_hidden(s, [s], {"k": s}, (s,))


def test_secret_refuses_pickle_without_revealing() -> None:
    s = Secret(CANARY)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError) as info:
            pickle.dumps(s, protocol=protocol)
        assert CANARY not in str(info.value)


def test_secret_copies_are_the_same_object() -> None:
    s = Secret(CANARY)
    assert copy.copy(s) is s
    assert copy.deepcopy(s) is s
    assert copy.deepcopy({"a": [s]})["a"][0] is s


def test_secret_comparison() -> None:
    s = Secret(CANARY)
    assert s.equals(CANARY)
    assert s.equals(Secret(CANARY))
    assert not s.equals(OTHER)
    assert not s.equals(CANARY + "x")
    assert not s.equals(None)  # type: ignore[arg-type]
    assert s == Secret(CANARY)
    assert s != Secret(OTHER)
    # Comparing with a plain str through == is deliberately not supported: use equals().
    assert (s == CANARY) is False
    assert hash(s) == hash(Secret(CANARY))
    assert s.equals("Caf\u00e9") is False


def test_secret_is_immutable_and_validated() -> None:
    s = Secret(CANARY)
    with pytest.raises(AttributeError):
        s._value = OTHER  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del s._value
    assert not hasattr(s, "__dict__")
    with pytest.raises(ValueError):
        Secret("")
    with pytest.raises(TypeError) as info:
        Secret(12345)  # type: ignore[arg-type]
    assert "12345" not in str(info.value)


@given(st.text(min_size=6))
def test_no_secret_text_survives_repr_or_str(value: str) -> None:
    assume(value not in "Secret('***')")
    s = Secret(value)
    assert value not in repr(s)
    assert value not in str(s)
    assert value not in f"{s}"


# --- env source ---------------------------------------------------------------------------------


def test_env_source_reads_node_and_secret(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER)
    store = SecretStore(config, {"NET_NODE": "2000", "NET_SECRET": CANARY})
    assert store.source == "env"
    assert store.node_id == "2000"
    node_secret = store.node_secret()
    assert node_secret is not None
    assert node_secret.equals(CANARY)
    assert_hidden(store, node_secret)


def test_env_node_mismatch_names_both_ids_but_not_the_secret(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {"NET_NODE": "2001", "NET_SECRET": CANARY})
    message = str(info.value)
    assert "2000" in message
    assert "2001" in message
    assert "NET_NODE" in message
    assert info.value.key == "register.node_id"
    assert str(config.path) in message
    assert CANARY not in message


def test_env_node_holding_the_secret_is_not_echoed(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {"NET_NODE": CANARY, "NET_SECRET": CANARY})
    assert CANARY not in str(info.value)
    assert "not a node number" in str(info.value)


@pytest.mark.parametrize(
    ("environ", "key"),
    [
        ({"NET_NODE": "2000"}, "NET_SECRET"),
        ({"NET_NODE": "2000", "NET_SECRET": ""}, "NET_SECRET"),
        ({"NET_SECRET": CANARY}, "NET_NODE"),
        ({"NET_NODE": "", "NET_SECRET": CANARY}, "NET_NODE"),
    ],
)
def test_env_missing_variables_are_clear_errors(
    tmp_path: Path, environ: dict[str, str], key: str
) -> None:
    config = load(tmp_path, BASE + REGISTER)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, environ)
    assert info.value.key == key
    assert "2000" in str(info.value)
    assert CANARY not in str(info.value)


def test_env_without_register_needs_nothing_but_still_redacts(tmp_path: Path) -> None:
    config = load(tmp_path, BASE)
    store = SecretStore(config, {"NET_NODE": "1", "NET_SECRET": CANARY})
    assert store.node_id is None
    assert store.node_secret() is None
    assert store.redact(f"x{CANARY}y") == "x***y"


# --- peers --------------------------------------------------------------------------------------


def test_peer_secrets_come_from_net_peer_variables(tmp_path: Path) -> None:
    config = load(tmp_path, BASE)
    store = SecretStore(config, {"NET_PEER_2001": CANARY, "NET_PEER_2002": OTHER, "PATH": "/bin"})
    peer = store.peer_secret("2001")
    assert peer is not None
    assert peer.equals(CANARY)
    other = store.peer_secret("2002")
    assert other is not None
    assert other.equals(OTHER)
    assert store.peer_secret("2003") is None
    assert store.peer_ids() == frozenset({"2001", "2002"})
    assert store.redact(f"{CANARY} {OTHER}") == "*** ***"
    assert_hidden(store)


@pytest.mark.parametrize("source", ["env", "control", "config"])
def test_peer_secrets_are_read_for_every_source(tmp_path: Path, source: str) -> None:
    config = load(tmp_path, BASE + f'[secrets]\nsource = "{source}"\n')
    store = SecretStore(config, {"NET_PEER_7": CANARY})
    assert store.peer_secret("7") is not None


@pytest.mark.parametrize("name", ["NET_PEER_", "NET_PEER_abc", "NET_PEER_20 01", "NET_PEER_-1"])
def test_peer_suffix_must_be_a_node_number(tmp_path: Path, name: str) -> None:
    config = load(tmp_path, BASE)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {name: CANARY})
    assert info.value.key == name
    assert info.value.path == "environment"
    assert "NET_PEER_<digits>" in str(info.value)
    assert CANARY not in str(info.value)


def test_empty_peer_secret_is_refused(tmp_path: Path) -> None:
    config = load(tmp_path, BASE)
    with pytest.raises(ConfigError, match="empty"):
        SecretStore(config, {"NET_PEER_2001": ""})


# --- the peers file -----------------------------------------------------------------------------

PEERS = '[secrets]\npeers_file = "peers"\n'


def write_peers(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    return write(tmp_path, text, mode, "peers")


def test_peers_file_is_relative_to_the_config_and_joins_the_environment(tmp_path: Path) -> None:
    write_peers(tmp_path, f"# peers\n2001={CANARY}\n")
    config = load(tmp_path, BASE + PEERS)
    assert config.secrets.peers_file == tmp_path / "peers"
    store = SecretStore(config, {"NET_PEER_2002": OTHER})
    first, second = store.peer_secret("2001"), store.peer_secret("2002")
    assert first is not None and first.equals(CANARY)
    assert second is not None and second.equals(OTHER)
    assert store.peer_ids() == frozenset({"2001", "2002"})
    assert store.redact(f"a {CANARY} b") == "a *** b"
    assert_hidden(store, config)
    assert "peers=2" in repr(store)


@pytest.mark.parametrize("source", ["env", "control", "config"])
def test_peers_file_is_read_for_every_source(tmp_path: Path, source: str) -> None:
    write_peers(tmp_path, "2001=x\n")
    config = load(tmp_path, BASE + f'[secrets]\nsource = "{source}"\npeers_file = "peers"\n')
    assert SecretStore(config, {}).peer_secret("2001") is not None


def test_a_node_in_the_file_and_the_environment_is_refused(tmp_path: Path) -> None:
    write_peers(tmp_path, f"2000=a\n\n2001={CANARY}\n")
    config = load(tmp_path, BASE + PEERS)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {"NET_PEER_2001": OTHER})
    message = str(info.value)
    assert info.value.path == str(tmp_path / "peers")
    assert info.value.key == "line 3"
    assert "NET_PEER_2001" in message
    assert CANARY not in message and OTHER not in message


def test_missing_peers_file_names_the_key_not_the_value(tmp_path: Path) -> None:
    # A value that leads nowhere may be a secret pasted into the wrong key: not repeated.
    config = load(tmp_path, BASE + f'[secrets]\npeers_file = "{CANARY}"\n')
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {})
    assert info.value.path == str(config.path)
    assert info.value.key == "secrets.peers_file"
    assert "does not exist" in str(info.value)
    assert str(tmp_path) in str(info.value)
    assert CANARY not in str(info.value)


def test_loose_peers_file_is_refused_at_startup(tmp_path: Path) -> None:
    write_peers(tmp_path, f"2001={CANARY}\n", 0o640)
    with pytest.raises(ConfigError) as info:
        SecretStore(load(tmp_path, BASE + PEERS), {})
    assert "0640" in str(info.value)
    assert CANARY not in str(info.value)


def test_reload_adds_changes_and_removes_peers(tmp_path: Path) -> None:
    peers = write_peers(tmp_path, "2001=one\n2002=two\n2003=three\n")
    config = load(tmp_path, BASE + PEERS)
    store = SecretStore(config, {"NET_PEER_9": "nine"})
    peers.write_text(f"2001=one\n2002={CANARY}\n2004=four\n2005=five\n")
    change = store.reload(config)
    assert change.added == ("2004", "2005")
    assert change.changed == ("2002",)
    assert change.removed == ("2003",)
    assert change.describe() == "added 2004, 2005; changed 2002; removed 2003"
    assert CANARY not in repr(change)
    assert store.peer_secret("2003") is None
    new = store.peer_secret("2002")
    assert new is not None and new.equals(CANARY)
    assert store.peer_ids() == frozenset({"9", "2001", "2002", "2004", "2005"})
    # A secret removed from the file is still scrubbed from logs.
    assert store.redact("three two") == "*** ***"
    assert not store.reload(config)
    assert store.reload(config).describe() == "unchanged"


def test_reload_that_fails_changes_nothing(tmp_path: Path) -> None:
    peers = write_peers(tmp_path, "2001=one\n")
    config = load(tmp_path, BASE + PEERS)
    store = SecretStore(config, {"NET_PEER_9": "nine"})
    for text, mode in (
        (f"2001=two\n{CANARY}\n", 0o600),
        ("2001=two\n", 0o644),
        ("2001=two\n9=nine-again\n", 0o600),
    ):
        peers.write_text(text)
        peers.chmod(mode)
        with pytest.raises(ConfigError) as info:
            store.reload(config)
        assert CANARY not in str(info.value)
        kept = store.peer_secret("2001")
        assert kept is not None and kept.equals("one")
    peers.unlink()
    with pytest.raises(ConfigError, match="does not exist"):
        store.reload(config)
    assert store.peer_ids() == frozenset({"9", "2001"})


def test_reload_can_drop_and_add_the_peers_file(tmp_path: Path) -> None:
    write_peers(tmp_path, "2001=one\n")
    with_file = load(tmp_path, BASE + PEERS)
    store = SecretStore(with_file, {})
    assert store.reload(load_config(write(tmp_path, BASE))).removed == ("2001",)
    assert store.peer_ids() == frozenset()
    assert store.reload(with_file).added == ("2001",)


def test_reload_with_config_source_checks_the_config_file_again(tmp_path: Path) -> None:
    write_peers(tmp_path, "2001=one\n")
    config = load(tmp_path, BASE + '[secrets]\nsource = "config"\npeers_file = "peers"\n')
    store = SecretStore(config, {})
    assert config.path is not None
    config.path.chmod(0o644)
    with pytest.raises(ConfigError, match="0644"):
        store.reload(config)


# --- control source -----------------------------------------------------------------------------


def test_control_source_starts_empty_and_is_filled_by_set(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER + '[secrets]\nsource = "control"\n')
    store = SecretStore(config, {"NET_NODE": "9", "NET_SECRET": OTHER})
    assert store.node_secret() is None
    store.set("2000", CANARY)
    secret = store.node_secret()
    assert secret is not None
    assert secret.equals(CANARY)
    # Rotation: the new secret is used, the old one is still scrubbed from logs.
    store.set("2000", Secret(OTHER + "2"))
    rotated = store.node_secret()
    assert rotated is not None
    assert rotated.equals(OTHER + "2")
    assert store.redact(f"{CANARY}|{OTHER}2") == "***|***"
    assert_hidden(store)


def test_control_set_wrong_username(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER + '[secrets]\nsource = "control"\n')
    store = SecretStore(config, {})
    with pytest.raises(CommandError) as info:
        store.set("2001", CANARY)
    assert info.value.status == 400
    assert "2000" in str(info.value)
    assert CANARY not in str(info.value)
    with pytest.raises(CommandError) as info:
        store.set(CANARY, CANARY)
    assert CANARY not in str(info.value)
    assert store.node_secret() is None


@pytest.mark.parametrize("bad", ["", 5, None])
def test_control_set_needs_a_non_empty_string(tmp_path: Path, bad: object) -> None:
    config = load(tmp_path, BASE + REGISTER + '[secrets]\nsource = "control"\n')
    store = SecretStore(config, {})
    with pytest.raises(CommandError) as info:
        store.set("2000", bad)  # type: ignore[arg-type]
    assert info.value.status == 400


def test_set_is_refused_for_other_sources(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER)
    store = SecretStore(config, {"NET_NODE": "2000", "NET_SECRET": OTHER})
    with pytest.raises(CommandError) as info:
        store.set("2000", CANARY)
    assert info.value.status == 409
    assert CANARY not in str(info.value)
    node_secret = store.node_secret()
    assert node_secret is not None
    assert node_secret.equals(OTHER)


def test_set_without_registration_is_refused(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + '[secrets]\nsource = "control"\n')
    store = SecretStore(config, {})
    with pytest.raises(CommandError) as info:
        store.set("2000", CANARY)
    assert info.value.status == 409


# --- config source ------------------------------------------------------------------------------

INLINE = BASE + REGISTER + f'[secrets]\nsource = "config"\nsecret = "{CANARY}"\n'


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_config_source_reads_the_inline_secret(tmp_path: Path, mode: int) -> None:
    config = load(tmp_path, INLINE, mode)
    store = SecretStore(config, {})
    secret = store.node_secret()
    assert secret is not None
    assert secret.equals(CANARY)
    assert config.secrets.secret is not None
    assert_hidden(config, config.secrets, store, dataclasses.asdict(config))
    assert CANARY not in repr(dataclasses.asdict(config))


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o660, 0o666])
def test_config_source_refuses_a_file_others_can_touch(tmp_path: Path, mode: int) -> None:
    config = load(tmp_path, INLINE, mode)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {})
    message = str(info.value)
    assert info.value.key == "secrets.secret"
    assert str(config.path) in message
    assert f"{mode:04o}" in message
    assert "chmod 600" in message
    assert CANARY not in message


def test_config_source_checks_permissions_even_without_a_secret(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + '[secrets]\nsource = "config"\n', 0o644)
    with pytest.raises(ConfigError, match="refusing it"):
        SecretStore(config, {})


def test_config_source_follows_symlinks_to_the_real_file(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text(INLINE, encoding="utf-8")
    real.chmod(0o644)
    link = tmp_path / "node.toml"
    link.symlink_to(real)
    with pytest.raises(ConfigError):
        check_private_file(link, "secrets.secret")
    real.chmod(0o600)
    check_private_file(link, "secrets.secret")


def test_config_source_empty_secret_with_registration(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER + '[secrets]\nsource = "config"\nsecret = ""\n')
    assert config.secrets.secret is None
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {})
    assert info.value.key == "secrets.secret"
    assert "empty" in str(info.value)


def test_inline_secret_with_another_source_is_refused_without_echo(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, BASE + f'[secrets]\nsource = "control"\nsecret = "{CANARY}"\n')
    assert info.value.key == "secrets.secret"
    assert CANARY not in str(info.value)


def test_config_built_in_code_skips_the_file_check() -> None:
    config = NodeConfig(
        register=RegisterConfig(peer=Address("192.0.2.1", 4569), node_id="2000"),
        secrets=SecretsConfig(source="config", secret=Secret(CANARY)),
    )
    store = SecretStore(config, {})
    node_secret = store.node_secret()
    assert node_secret is not None
    assert node_secret.equals(CANARY)


def test_config_with_a_secret_cannot_be_pickled_and_says_nothing(tmp_path: Path) -> None:
    config = load(tmp_path, INLINE)
    with pytest.raises(TypeError) as info:
        pickle.dumps(config)
    assert CANARY not in str(info.value)
    with pytest.raises(TypeError):
        pickle.dumps(SecretStore(config, {}))


# --- portal -------------------------------------------------------------------------------------

PORTAL = '[portal]\nuser = "N0CALL"\nnode = "2000"\ncredential_env = "PORTAL_PW"\n'


def test_portal_credential_is_resolved_from_the_named_variable(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + PORTAL + '[links.2001]\nshape = "wt-guest"\n')
    store = SecretStore(config, {"PORTAL_PW": CANARY})
    portal = store.portal_secret()
    assert portal is not None
    assert portal.equals(CANARY)
    assert store.redact(CANARY) == REDACTED
    assert_hidden(store)


def test_portal_variable_missing(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + PORTAL)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {})
    assert info.value.key == "portal.credential_env"
    assert "PORTAL_PW" in str(info.value)


def test_no_portal_no_portal_secret(tmp_path: Path) -> None:
    assert SecretStore(load(tmp_path, BASE), {"PORTAL_PW": CANARY}).portal_secret() is None


# --- wireguard ----------------------------------------------------------------------------------

#: A base64 private key made of the canary's bytes, so a leak of either form is caught.
WG_KEY_CANARY = base64.b64encode(CANARY.encode().ljust(32, b"!")).decode()
WIREGUARD = (
    '[wireguard]\naddress = "10.8.0.2"\nprivate_key_env = "WG_KEY"\n'
    'peer_public_key = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="\n'
    'allowed_ips = ["10.8.0.0/24"]\n'
)


def test_wireguard_keys_are_resolved_from_the_named_variables(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + WIREGUARD + 'preshared_key_env = "WG_PSK"\n')
    psk = base64.b64encode(b"p" * 32).decode()
    store = SecretStore(config, {"WG_KEY": f" {WG_KEY_CANARY}\n", "WG_PSK": psk})
    keys = store.wireguard_keys()
    assert keys is not None
    private, preshared = keys
    assert private.equals(WG_KEY_CANARY)
    assert preshared is not None and preshared.equals(psk)
    assert store.redact(f"key={WG_KEY_CANARY}") == "key=***"
    assert WG_KEY_CANARY not in repr(store) and "wireguard=set" in repr(store)
    assert SecretStore(load(tmp_path, BASE), {"WG_KEY": WG_KEY_CANARY}).wireguard_keys() is None


@pytest.mark.parametrize(
    ("environ", "key", "fragment"),
    [
        ({}, "wireguard.private_key_env", "WG_KEY"),
        ({"WG_KEY": ""}, "wireguard.private_key_env", "not set or empty"),
        ({"WG_KEY": CANARY}, "WG_KEY", "44 characters of base64"),
        ({"WG_KEY": base64.b64encode(CANARY.encode()).decode()}, "WG_KEY", "32 bytes"),
    ],
)
def test_wireguard_key_missing_or_malformed(
    tmp_path: Path, environ: dict[str, str], key: str, fragment: str
) -> None:
    config = load(tmp_path, BASE + WIREGUARD)
    with pytest.raises(ConfigError) as info:
        SecretStore(config, environ)
    assert info.value.key == key
    assert fragment in str(info.value)
    assert CANARY not in str(info.value) and CANARY not in repr(info.value.args)
    assert base64.b64encode(CANARY.encode()).decode() not in str(info.value)


def test_wireguard_preshared_key_variable_missing(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + WIREGUARD + 'preshared_key_env = "WG_PSK"\n')
    with pytest.raises(ConfigError) as info:
        SecretStore(config, {"WG_KEY": WG_KEY_CANARY})
    assert info.value.key == "wireguard.preshared_key_env"


# --- redaction ----------------------------------------------------------------------------------


def test_redact_replaces_every_occurrence_longest_first(tmp_path: Path) -> None:
    config = load(tmp_path, BASE)
    store = SecretStore(config, {"NET_PEER_1": "abc", "NET_PEER_2": "abcdef"})
    assert store.redact("abcdef abc xabcx") == "*** *** x***x"
    assert store.redact("nothing here") == "nothing here"


@pytest.fixture
def canary_store(tmp_path: Path) -> SecretStore:
    config = load(tmp_path, BASE + REGISTER + PORTAL)
    return SecretStore(
        config,
        {
            "NET_NODE": "2000",
            "NET_SECRET": CANARY,
            "NET_PEER_2001": OTHER,
            "PORTAL_PW": CANARY + "-portal",
        },
    )


@pytest.fixture
def captured(canary_store: SecretStore) -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    handler.addFilter(RedactingFilter(canary_store))
    parent = logging.getLogger("test_secrets")
    parent.addHandler(handler)
    parent.setLevel(logging.DEBUG)
    try:
        # A child logger: the filter sits on the handler, so propagated records are scrubbed too.
        yield logging.getLogger("test_secrets.child"), stream
    finally:
        parent.removeHandler(handler)


def test_logging_never_shows_a_secret(
    captured: tuple[logging.Logger, io.StringIO], canary_store: SecretStore
) -> None:
    logger, stream = captured
    secret = canary_store.node_secret()
    logger.info("plain %s", CANARY)
    logger.info(f"f-string {CANARY} and peer {OTHER}")
    logger.warning("dict %(pw)s", {"pw": CANARY})
    logger.error("secret object %s %r", secret, secret)
    try:
        raise ValueError(f"boom with {CANARY}")
    except ValueError:
        logger.exception("failed for %s", CANARY + "-portal")
    logger.info("with stack %s", CANARY, stack_info=True)
    logger.info("broken format %d", CANARY)
    out = stream.getvalue()
    assert CANARY not in out
    assert OTHER not in out
    assert "plain ***" in out
    assert "f-string *** and peer ***" in out
    assert "dict ***" in out
    assert "secret object *** Secret('***')" in out
    assert "boom with ***" in out
    assert "Traceback" in out
    assert "broken format" in out


def test_config_errors_with_the_canary_in_play_stay_clean(tmp_path: Path) -> None:
    # Every error raised while a canary is planted, formatted the way the CLI would print it.
    errors: list[BaseException] = []
    for text, environ in [
        (BASE + REGISTER, {"NET_NODE": "2001", "NET_SECRET": CANARY}),
        (BASE + REGISTER, {"NET_NODE": CANARY, "NET_SECRET": CANARY}),
        (BASE, {"NET_PEER_x": CANARY}),
        (BASE + PORTAL, {"NET_SECRET": CANARY}),
    ]:
        try:
            SecretStore(load(tmp_path, text), environ)
        except ConfigError as err:
            errors.append(err)
    try:
        SecretStore(load(tmp_path, INLINE, 0o644), {})
    except ConfigError as err:
        errors.append(err)
    assert len(errors) == 5
    for error in errors:
        rendered = "".join(traceback.format_exception(error))
        assert CANARY not in rendered


# --- the AMI password ---------------------------------------------------------------------------

AMI = '[ami]\nenabled = true\nusername = "Admin"\n'


def test_ami_password_from_net_ami_secret(tmp_path: Path) -> None:
    store = SecretStore(load(tmp_path, BASE + AMI), {"NET_AMI_SECRET": CANARY})
    assert store.ami_user == "Admin"
    assert store.ami_login("admin", CANARY)
    assert store.ami_login("ADMIN", CANARY)
    assert not store.ami_login("admin", OTHER)
    assert not store.ami_login("other", CANARY)
    assert store.redact(f"x{CANARY}x") == "x***x"
    assert "ami=set" in repr(store)
    assert_hidden(store)


def test_ami_env_variable_missing_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        SecretStore(load(tmp_path, BASE + AMI), {})
    assert info.value.key == "NET_AMI_SECRET"
    assert "Admin" in str(info.value)


def test_ami_off_needs_no_password_but_still_redacts_it(tmp_path: Path) -> None:
    store = SecretStore(load(tmp_path, BASE), {"NET_AMI_SECRET": CANARY})
    assert store.ami_user is None and store.ami_secret() is None
    assert not store.ami_login("admin", CANARY)
    assert store.redact(CANARY) == REDACTED


def test_ami_password_inline_with_the_config_source(tmp_path: Path) -> None:
    text = BASE + AMI + f'[secrets]\nsource = "config"\nami_secret = "{CANARY}"\n'
    config = load(tmp_path, text)
    store = SecretStore(config, {"NET_AMI_SECRET": OTHER})
    assert store.ami_login("admin", CANARY) and not store.ami_login("admin", OTHER)
    assert_hidden(config, store, dataclasses.asdict(config))
    with pytest.raises(ConfigError) as info:
        SecretStore(load(tmp_path, BASE + AMI + '[secrets]\nsource = "config"\n'), {})
    assert info.value.key == "secrets.ami_secret"


def test_ami_password_through_post_secrets(tmp_path: Path) -> None:
    config = load(tmp_path, BASE + REGISTER + AMI + '[secrets]\nsource = "control"\n')
    store = SecretStore(config, {"NET_AMI_SECRET": OTHER})
    assert store.ami_secret() is None and not store.ami_login("admin", OTHER)
    store.set("ami:admin", CANARY)
    assert store.ami_login("Admin", CANARY)
    assert store.node_secret() is None
    with pytest.raises(CommandError) as info:
        store.set(f"ami:{CANARY}", OTHER)
    assert info.value.status == 400
    assert CANARY not in str(info.value) and "ami:Admin" in str(info.value)
    with pytest.raises(CommandError) as info:
        store.set("ami:admin", "")
    assert info.value.status == 400
    assert store.ami_login("admin", CANARY)


def test_ami_password_through_post_secrets_needs_ami_enabled(tmp_path: Path) -> None:
    store = SecretStore(load(tmp_path, BASE + '[secrets]\nsource = "control"\n'), {})
    with pytest.raises(CommandError) as info:
        store.set("ami:admin", CANARY)
    assert info.value.status == 409


# --- the store knows nothing of the configuration -----------------------------------------------


def test_the_store_is_built_from_plain_settings(tmp_path: Path) -> None:
    # Whoever owns the configuration hands the store plain values; a NodeConfig is one such owner.
    settings = SecretSettings(
        source="env", node_id="2000", ami_user="admin", portal_env="PORTAL_PW"
    )
    env = {"NET_NODE": "2000", "NET_SECRET": CANARY, "NET_AMI_SECRET": OTHER, "PORTAL_PW": "p"}
    store = SecretStore(settings, env)
    assert store.node_secret() == Secret(CANARY)
    assert store.ami_login("admin", OTHER)
    assert store.portal_secret() == Secret("p")
    config = load(tmp_path, BASE + REGISTER)
    assert config.secret_settings == SecretSettings(
        config_file=config.path, source="env", node_id="2000"
    )
    assert repr(SecretStore(config, env)) == repr(SecretStore(config.secret_settings, env))
    assert_hidden(settings, store)


def test_secrets_import_nothing_of_the_configuration() -> None:
    import subprocess
    import sys

    code = (
        "import sys, node.secrets, node.peers_file\n"
        "assert not [m for m in sys.modules if m.startswith('node.config')], sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_further_node_has_a_registration_password_of_its_own() -> None:
    settings = SecretSettings(source="env", node_id="1999", further_nodes=("1998",))
    env = {"NET_NODE": "1999", "NET_SECRET": "first-pw", "NET_SECRET_1998": "second-pw"}
    store = SecretStore(settings, environ=env)
    first, second = store.node_secret(), store.node_secret("1998")
    assert first is not None and first.equals("first-pw")
    assert second is not None and second.equals("second-pw")
    assert store.node_secret("1999") is first and store.node_secret("1997") is None
    assert "second-pw" not in store.redact("x second-pw y")
    # Missing: named by its variable, for its node.
    with pytest.raises(ConfigError) as info:
        SecretStore(settings, environ={"NET_NODE": "1999", "NET_SECRET": "first-pw"})
    assert info.value.key == "NET_SECRET_1998" and "node 1998" in str(info.value)
    # The config file holds the first node's password only.
    with pytest.raises(ConfigError) as info:
        SecretStore(dataclasses.replace(settings, source="config", inline_secret=Secret("x")))
    assert info.value.key == "nodes.1998.register" and "NET_SECRET_1998" in str(info.value)
    # Under source = control, POST /secrets with its number sets it.
    control = SecretStore(dataclasses.replace(settings, source="control"), environ={})
    control.set("1998", "later-pw")
    later = control.node_secret("1998")
    assert later is not None and later.equals("later-pw") and control.node_secret() is None
