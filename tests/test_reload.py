"""Tests for node.reload (what a SIGHUP may change) and Controller.reload (applying it)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from node.config import Address, NodeConfig, iter_template_keys, load_config
from node.controller import Controller
from node.daemon import reload
from node.errors import ConfigError
from node.events import EventBus
from node.reload import RELOADABLE, ReloadPlan, changed_keys, plan_reload
from node.secrets import SecretStore

CANARY = "Canary-reload-e19c"
BASE = '[listener]\nbind = "127.0.0.1:4570"\n[control]\n'


def load(tmp_path: Path, text: str, name: str = "node.toml") -> NodeConfig:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return load_config(path)


def plan_for(tmp_path: Path, extra: str) -> ReloadPlan:
    """The plan for a node running on BASE whose file gained `extra`."""
    return plan_reload(load(tmp_path, BASE), load(tmp_path, BASE + extra))


def test_reloadable_keys_exist() -> None:
    keys = set(iter_template_keys())
    assert keys >= RELOADABLE


def test_nothing_changed(tmp_path: Path) -> None:
    config = load(tmp_path, BASE)
    plan = plan_reload(config, load(tmp_path, BASE))
    assert plan.applied == () and plan.needs_restart == ()
    assert plan.config == config


def test_listener_rules_apply_but_bind_needs_a_restart(tmp_path: Path) -> None:
    running = load(tmp_path, BASE)
    loaded = load(
        tmp_path,
        '[listener]\nbind = "127.0.0.1:4571"\nanswer = "manual"\nmax_calls = 3\nauth = "off"\n'
        'allowed_nodes = ["2001"]\ncalltoken = "required"\n[control]\n',
    )
    plan = plan_reload(running, loaded)
    assert plan.applied == (
        "listener.allowed_nodes",
        "listener.answer",
        "listener.auth",
        "listener.calltoken",
        "listener.max_calls",
    )
    assert plan.needs_restart == ("listener.bind",)
    assert plan.config.listener.bind == Address("127.0.0.1", 4570)
    assert plan.config.listener.answer == "manual"
    assert plan.config.listener.allowed_nodes == ("2001",)


def test_peers_file_and_nodes_file_apply(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path, '[secrets]\npeers_file = "p"\n[links]\nnodes_file = "/var/extnodes"\n'
    )
    assert plan.applied == ("links.nodes_file", "secrets.peers_file")
    assert plan.needs_restart == ()
    assert plan.config.secrets.peers_file == tmp_path / "p"
    assert plan.config.nodes_file == Path("/var/extnodes")


def test_dns_lookup_settings_apply(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        '[links]\ndns = false\ndns_domain = "example.org"\ndns_servers = ["127.0.0.1:5353"]\n'
        "dns_timeout_ms = 500\n",
    )
    assert plan.applied == (
        "links.dns",
        "links.dns_domain",
        "links.dns_servers",
        "links.dns_timeout_ms",
    )
    assert plan.needs_restart == ()
    assert plan.config.dns.servers == (Address("127.0.0.1", 5353),)
    assert not plan.config.dns.enabled


def test_http_registration_and_status_posts_need_a_restart(tmp_path: Path) -> None:
    http = '[register]\nmethod = "http"\nnode_id = "2000"\n'
    running = load(tmp_path, BASE + http)
    loaded = load(tmp_path, BASE + http + 'url = "https://r.example.org/"\n[statpost]\n')
    plan = plan_reload(running, loaded)
    assert plan.needs_restart == ("register.url", "statpost")
    assert plan.config == running


def test_controller_reload_points_lookups_at_the_new_nodes_file(tmp_path: Path) -> None:
    (tmp_path / "new").write_text("2000=radio@192.0.2.7:4569/2000,192.0.2.7\n")
    controller = make_controller(tmp_path, BASE + "[links]\ndns = false\n")
    controller.reload(load(tmp_path, BASE + '[links]\ndns = false\nnodes_file = "new"\n'))
    assert asyncio.run(controller.resolver.lookup("2000")).host == "192.0.2.7"


def test_everything_else_keeps_its_running_value(tmp_path: Path) -> None:
    running = load(tmp_path, BASE)
    loaded = load(
        tmp_path,
        'codec_policy = "ulaw_only"\n'
        + BASE.replace("[control]\n", '[control]\nbind = "127.0.0.1:9999"\n')
        + '[register]\npeer = "192.0.2.1:4569"\nnode_id = "2000"\n'
        + '[secrets]\nsource = "config"\nsecret = "'
        + CANARY
        + '"\n[bridge]\nmode = "conference"\n[audio]\ninput = "USB"\n'
        + "[announce.events.hangup]\nenabled = true\n"
        + '[links.2001]\nshape = "standard"\n',
    )
    plan = plan_reload(running, loaded)
    assert plan.applied == ()
    assert plan.needs_restart == (
        "announce.events.hangup.enabled",
        "audio.input",
        "bridge.mode",
        "codec_policy",
        "control.bind",
        "links.2001",
        "register",
        "secrets.secret",
        "secrets.source",
    )
    assert plan.config == running
    assert plan.config.station_rate == 16000
    assert CANARY not in repr(plan)


def test_top_level_fields_are_named_by_their_key_in_the_file(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, "[links]\nverify_source_ip = true\n[keying]\ntx_timeout_secs = 60\n")
    assert plan.needs_restart == ("keying.tx_timeout_secs", "links.verify_source_ip")
    assert plan.config == load(tmp_path, BASE)


def test_a_section_that_went_away_is_named_once(tmp_path: Path) -> None:
    running = load(tmp_path, BASE + '[register]\npeer = "192.0.2.1:4569"\nnode_id = "2000"\n')
    assert changed_keys(running, load(tmp_path, BASE)) == ("register",)


def test_the_node_number_is_named_once_wherever_the_file_gives_it(tmp_path: Path) -> None:
    reg = '[register]\npeer = "192.0.2.1:4569"\nnode_id = "2000"\n'
    registered = load(tmp_path, BASE + reg)
    # The same number, also written at the top: nothing changed.
    assert changed_keys(registered, load(tmp_path, 'node_id = "2000"\n' + BASE + reg)) == ()
    private = load(tmp_path, 'node_id = "1999"\n' + BASE)
    assert changed_keys(private, load(tmp_path, 'node_id = "1998"\n' + BASE)) == ("node_id",)
    assert changed_keys(private, registered) == ("node_id", "register")


def test_changed_keys_ignores_the_path(tmp_path: Path) -> None:
    a = load(tmp_path, BASE, "a.toml")
    b = load(tmp_path, BASE, "b.toml")
    assert changed_keys(a, b) == ()


# --- Controller.reload and the daemon's reload ---------------------------------------------------


def make_controller(tmp_path: Path, text: str) -> Controller:
    config = load(tmp_path, text)
    return Controller(config, EventBus(), SecretStore(config, {}))


def write_peers(tmp_path: Path, text: str) -> None:
    peers = tmp_path / "peers"
    peers.write_text(text)
    peers.chmod(0o600)


def test_controller_reload_applies_policy_and_keeps_listening_off(tmp_path: Path) -> None:
    write_peers(tmp_path, "2001=one\n")
    controller = make_controller(tmp_path, BASE + '[secrets]\npeers_file = "peers"\n')
    controller.set_listening(False)
    write_peers(tmp_path, f"2002={CANARY}\n")
    loaded = load(
        tmp_path,
        BASE.replace("[listener]\n", '[listener]\nanswer = "manual"\nallowed_nodes = ["2002"]\n')
        + '[secrets]\npeers_file = "peers"\n',
    )
    done = controller.reload(loaded)
    assert done.plan.applied == ("listener.allowed_nodes", "listener.answer")
    assert done.peers.added == ("2002",) and done.peers.removed == ("2001",)
    policy = controller._port.inbound
    assert policy.answer == "manual"
    assert policy.allowed_nodes == ("2002",)
    assert policy.enabled is False
    assert controller.config.listener.answer == "manual"
    assert controller.secrets.peer_secret("2001") is None


def test_controller_reload_failure_changes_nothing(tmp_path: Path) -> None:
    write_peers(tmp_path, "2001=one\n")
    text = BASE + '[secrets]\npeers_file = "peers"\n'
    controller = make_controller(tmp_path, text)
    before = controller.config
    policy = controller._port.inbound
    write_peers(tmp_path, f"{CANARY}\n")
    loaded = load(tmp_path, text.replace("[listener]\n", '[listener]\nanswer = "manual"\n'))
    with pytest.raises(ConfigError):
        controller.reload(loaded)
    assert controller.config is before
    assert controller._port.inbound is policy
    assert controller.secrets.peer_ids() == frozenset({"2001"})


def test_daemon_reload_logs_the_outcome(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_peers(tmp_path, "2001=one\n")
    text = BASE + '[secrets]\npeers_file = "peers"\n'
    controller = make_controller(tmp_path, text)
    path = tmp_path / "node.toml"
    caplog.set_level(logging.INFO, logger="node")

    path.write_text('codec_policy = "ulaw_only"\n' + text.replace("4570", "4599"))
    write_peers(tmp_path, "2001=two\n")
    outcome = reload(path, controller)
    assert outcome == (
        "reloaded: no reloadable setting changed; peer secrets changed 2001; "
        "needs a restart: codec_policy, listener.bind"
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("codec_policy changed in" in w and "needs a restart" in w for w in warnings)
    assert any("listener.bind changed in" in w for w in warnings)

    caplog.clear()
    write_peers(tmp_path, f"2001=three\n{CANARY}\n")
    outcome = reload(path, controller)
    assert outcome.startswith("reload failed")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "nothing changed" in errors[0] and "line 2" in errors[0]
    assert CANARY not in caplog.text
    kept = controller.secrets.peer_secret("2001")
    assert kept is not None and kept.equals("two")

    path.write_text("[listener\n")
    assert reload(path, controller).startswith("reload failed")
    assert "TOML syntax error" in caplog.text
