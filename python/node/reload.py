"""SIGHUP: which settings of a re-read config file a running node takes, and which need a restart.

Reloadable, for what happens from now on (calls already up are never touched):

- `[listener]` `answer`, `max_calls`, `auth`, `allowed_nodes`, `calltoken`: the rules the next
  inbound NEW meets. POST /disable_inbound stays in force across a reload.
- `[secrets] peers_file`: which peers file the inbound peer secrets come from (its content is
  re-read on every reload, whether the key changed or not; `SecretStore.reload`).
- `[links] nodes_file`: which file node numbers resolve in (its content is read at each dial
  anyway, so an updated file needs no reload at all).
- `[links] dns`, `dns_domain`, `dns_servers`, `dns_timeout_ms`: how node numbers are looked up
  in DNS (the lookup cache starts empty after such a change).
- `[links] warn_loss_pct`, `warn_rtt_ms`: the link health thresholds, from the next check.

Everything else was wired into sockets, threads and devices at startup (`listener.bind`,
`control.bind`, `codec_policy` and so the station rate, `[audio]`, `[bridge]`, `[register]`, the
secrets source, ...): a change is reported as needing a restart and the running value stays.
`[bridge]` and `[audio]` have live commands instead (POST /bridge, POST /devices, POST /levels).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from node.config import Address, NodeConfig

__all__ = ["RELOADABLE", "ReloadPlan", "changed_keys", "plan_reload"]

#: Dotted keys a reload applies.
RELOADABLE: frozenset[str] = frozenset(
    {
        "listener.answer",
        "listener.max_calls",
        "listener.auth",
        "listener.allowed_nodes",
        "listener.calltoken",
        "secrets.peers_file",
        "links.nodes_file",
        "links.dns",
        "links.dns_domain",
        "links.dns_servers",
        "links.dns_timeout_ms",
        "links.warn_loss_pct",
        "links.warn_rtt_ms",
    }
)

# Top-level fields whose dotted name differs from the attribute (`[links] nodes_file`).
_KEY_OF_FIELD = {
    "nodes_file": "links.nodes_file",
    "verify_source_ip": "links.verify_source_ip",
    "link_warn_loss_pct": "links.warn_loss_pct",
    "link_warn_rtt_ms": "links.warn_rtt_ms",
}
_ABSENT = object()
_TABLE = object()


@dataclass(frozen=True, slots=True)
class ReloadPlan:
    """The outcome of comparing the running configuration with the re-read file."""

    #: What the node runs with after the reload: the file's reloadable settings, the running
    #: value of everything else.
    config: NodeConfig
    #: Dotted keys that changed and take effect.
    applied: tuple[str, ...]
    #: Dotted keys (or whole sections) that changed but keep their running value until a restart.
    needs_restart: tuple[str, ...]


def plan_reload(running: NodeConfig, loaded: NodeConfig) -> ReloadPlan:
    """Merge a freshly loaded config into the running one. Pure: nothing is applied here."""
    changed = changed_keys(running, loaded)
    applied = tuple(k for k in changed if k in RELOADABLE)
    needs_restart = tuple(k for k in changed if k not in RELOADABLE)
    config = dataclasses.replace(
        running,
        listener=dataclasses.replace(loaded.listener, bind=running.listener.bind),
        secrets=dataclasses.replace(running.secrets, peers_file=loaded.secrets.peers_file),
        nodes_file=loaded.nodes_file,
        dns=loaded.dns,
        link_warn_loss_pct=loaded.link_warn_loss_pct,
        link_warn_rtt_ms=loaded.link_warn_rtt_ms,
    )
    return ReloadPlan(config, applied, needs_restart)


def changed_keys(old: NodeConfig, new: NodeConfig) -> tuple[str, ...]:
    """Dotted keys whose value differs, sorted; a section that appeared or went is named alone.

    Only names: values are never part of the result (an inline secret may be among them).
    """
    # The further nodes of a host are reloaded each on its own (`daemon.reload`), never as a
    # key of the first.
    old, new = dataclasses.replace(old, nodes=()), dataclasses.replace(new, nodes=())
    a, b = _flatten(old), _flatten(new)
    keys = {k for k in a.keys() | b.keys() if not _same(a.get(k, _ABSENT), b.get(k, _ABSENT))}
    return tuple(sorted(k for k in keys if not any(p in keys for p in _prefixes(k))))


def _same(x: object, y: object) -> bool:
    if x is y:
        return True
    if x is _ABSENT or y is _ABSENT:
        return False
    return bool(x == y)


def _prefixes(key: str) -> Iterable[str]:
    parts = key.split(".")
    for i in range(1, len(parts)):
        yield ".".join(parts[:i])


def _flatten(config: NodeConfig) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        if f.name == "path":
            continue
        if f.name == "node_id" and (config.register is not None or config.node_id is None):
            # With [register] it is register.node_id's number (the loader refuses two): named
            # once, there.
            continue
        if f.name == "dns":
            # Keys of [links] in the file, one dataclass in the config.
            dns = config.dns
            flat["links.dns"] = dns.enabled
            flat["links.dns_domain"] = dns.domain
            flat["links.dns_servers"] = dns.servers
            flat["links.dns_timeout_ms"] = dns.timeout_ms
            continue
        _walk(flat, _KEY_OF_FIELD.get(f.name, f.name), getattr(config, f.name))
    return flat


def _walk(flat: dict[str, Any], key: str, value: object) -> None:
    # An Address is one value ("host:port"), not a section.
    # A table is recorded as present, so a section that appears (even empty) or goes is seen
    # under its own name.
    if dataclasses.is_dataclass(value) and not isinstance(value, type | Address):
        flat[key] = _TABLE
        for f in dataclasses.fields(value):
            _walk(flat, f"{key}.{f.name}", getattr(value, f.name))
    elif isinstance(value, Mapping):
        flat[key] = _TABLE
        for name, item in value.items():
            _walk(flat, f"{key}.{name}", item)
    else:
        flat[key] = value
