"""The one place secrets live: the `Secret` type, the `SecretStore` and log redaction.

Where credentials come from is chosen by `[secrets].source` (spec "[secrets]"):

- `env`: NET_NODE and NET_SECRET at startup; NET_NODE must equal `[register].node_id`.
- `control`: nothing at startup; POST /secrets calls `SecretStore.set`.
- `config`: the inline `[secrets].secret` key, accepted only from a file no one but its owner can
  read or write.

The AMI password (`[ami]` enabled) follows the same source: NET_AMI_SECRET, POST /secrets with
username `ami:<[ami] username>`, or the inline `[secrets].ami_secret`.

Per-node inbound peer secrets come, whatever the source, from `NET_PEER_<NODE>` variables and
from the peers file named by `[secrets] peers_file` (`node.peers_file`; it lifts the spec's known
limitation 1, "Per-node inbound credentials come only from environment variables"). A node may
have a secret in one of the two, not both: two secrets for one node mean one is stale, and
guessing which one the operator meant is how a revoked secret keeps working. The peers file is
re-read on SIGHUP (`SecretStore.reload`); the environment is fixed at startup. The `[portal]`
password comes from the variable named by `[portal].credential_env`, the `[wireguard]` private
(and preshared) key from the variables named by `[wireguard].private_key_env` (and
`preshared_key_env`).

Every value the store has ever held is remembered for `redact`, so a secret replaced through
POST /secrets or removed from the peers file is still scrubbed from logs.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import string
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

from node.credential import REDACTED, Secret, check_private_file, private_mode_problem
from node.errors import CommandError, ConfigError
from node.peers_file import PeersFile, read_peers_file
from node.wg_key import decode_key

__all__ = [
    "AMI_USER_PREFIX",
    "ENV_AMI_SECRET",
    "ENV_NODE",
    "ENV_PEER_PREFIX",
    "ENV_SECRET",
    "REDACTED",
    "PeersChange",
    "RedactingFilter",
    "Secret",
    "SecretSettings",
    "SecretStore",
    "check_private_file",
    "private_mode_problem",
    "shown_text",
]

ENV_NODE = "NET_NODE"
ENV_SECRET = "NET_SECRET"
#: A further node's registration password (`[nodes.<number>.register]`): NET_SECRET_<number>.
ENV_NODE_SECRET_PREFIX = "NET_SECRET_"
ENV_PEER_PREFIX = "NET_PEER_"
ENV_AMI_SECRET = "NET_AMI_SECRET"
#: POST /secrets names the AMI credential `ami:<user>`.
AMI_USER_PREFIX = "ami:"
#: Where errors about environment variables point, in place of a file name.
ENVIRONMENT = "environment"

_NODE_ID = re.compile(r"[0-9]+")
_PRINTABLE = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")
#: A peer's free text (a registrar's CAUSE or reply) is shown to operators at most this long.
MAX_SHOWN_TEXT = 120


def shown_text(text: str, private: Iterable[str], limit: int = MAX_SHOWN_TEXT) -> str:
    """A peer's free text made fit to show: printable, short, and free of anything we sent that
    must stay private (a hostile registrar could echo a password back)."""
    clean = "".join(c if c in _PRINTABLE else "?" for c in text).strip()
    for value in private:
        if value:
            clean = clean.replace(value, REDACTED)
    return clean[:limit]


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretSettings:
    """What the store needs to know of the configuration, as plain values.

    Built by whoever owns the configuration (`NodeConfig.secret_settings`), so this module knows
    nothing of how the configuration is declared or read. `config_file` is the file errors name
    (and whose permissions `source = "config"` checks), None for a configuration built in code;
    `source`, `node_id`, the inline secrets, `peers_file` and the environment variable names
    are the keys of those names (`[secrets]`, `[register]`, `[portal] credential_env`,
    `[wireguard] private_key_env` / `preshared_key_env`), None where the section is absent;
    `ami_user` is the `[ami]` login name, None when AMI is off.
    """

    config_file: Path | None = None
    source: str = "env"
    node_id: str | None = None
    inline_secret: Secret | None = None
    inline_ami_secret: Secret | None = None
    ami_user: str | None = None
    peers_file: Path | None = None
    portal_env: str | None = None
    wg_private_env: str | None = None
    wg_preshared_env: str | None = None
    #: The further nodes of a host that register (`[nodes.<number>.register]`): each one's
    #: password is its own (NET_SECRET_<number>, or POST /secrets with its number).
    further_nodes: tuple[str, ...] = ()


class HasSecretSettings(Protocol):
    """A configuration that can say what the store needs (`NodeConfig` is one)."""

    @property
    def secret_settings(self) -> SecretSettings: ...


def _settings(source: SecretSettings | HasSecretSettings) -> SecretSettings:
    return source if isinstance(source, SecretSettings) else source.secret_settings


@dataclass(frozen=True, slots=True)
class PeersChange:
    """What a reload changed in the inbound peer secrets: node ids only, never a secret."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def describe(self) -> str:
        """`added 2001, 2002; changed 2003; removed 2004`, or `unchanged`."""
        parts = [
            f"{what} {', '.join(nodes)}"
            for what, nodes in (
                ("added", self.added),
                ("changed", self.changed),
                ("removed", self.removed),
            )
            if nodes
        ]
        return "; ".join(parts) or "unchanged"


class SecretStore:
    """All credentials of one daemon, resolved at startup per `[secrets].source`.

    `environ` defaults to `os.environ`; tests pass a dict. Raises `ConfigError` when the
    configured source cannot supply what the configuration needs. Afterwards only POST /secrets
    (`set`) and a reload of the peers file (`reload`) change what it holds.
    """

    def __init__(
        self,
        config: SecretSettings | HasSecretSettings,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        settings = _settings(config)
        env: Mapping[str, str] = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._path = str(settings.config_file) if settings.config_file is not None else "<config>"
        self._source = settings.source
        self._node_id = settings.node_id
        self._node_secret: Secret | None = None
        #: The registration passwords of a host's further nodes, by number.
        self._further_ids = settings.further_nodes
        self._further: dict[str, Secret] = {}
        self._env_peers: dict[str, Secret] = {}
        self._peers: dict[str, Secret] = {}
        self._portal: Secret | None = None
        self._wg_private: Secret | None = None
        self._wg_preshared: Secret | None = None
        #: The `[ami]` user (None when AMI is off) and its password.
        self._ami_user = settings.ami_user
        self._ami_secret: Secret | None = None
        # Everything ever known, longest first so a secret that contains another is replaced whole.
        self._known: tuple[str, ...] = ()

        # A NET_SECRET or NET_AMI_SECRET present in the environment is scrubbed from logs even
        # where it is unused.
        for name in (ENV_SECRET, ENV_AMI_SECRET):
            stray = env.get(name)
            if stray:
                self._remember(stray)
        for name, value in env.items():
            if name.startswith(ENV_NODE_SECRET_PREFIX) and value:
                self._remember(value)

        if self._source == "env":
            self._load_env(env)
            self._load_further(env)
        elif self._source == "config":
            self._load_inline(settings)
            if self._further_ids:
                node = self._further_ids[0]
                raise ConfigError(
                    self._path,
                    f"nodes.{node}.register",
                    "a further node's registration password cannot be in the config file "
                    "(secrets.secret is the first node's)",
                    f'secrets.source = "env" with {ENV_NODE_SECRET_PREFIX}{node}, or "control"',
                )
        self._load_ami(settings, env)
        self._load_env_peers(env)
        self._peers = self._merge_peers(self._read_peers_file(settings))
        self._load_portal(settings, env)
        self._load_wireguard(settings, env)

    # --- startup ------------------------------------------------------------------------------

    def _load_env(self, env: Mapping[str, str]) -> None:
        if self._node_id is None:
            # Nothing to register: NET_NODE/NET_SECRET have no use, and there is no id to match.
            return
        net_node = env.get(ENV_NODE)
        net_secret = env.get(ENV_SECRET)
        if not net_secret:
            raise ConfigError(
                ENVIRONMENT,
                ENV_SECRET,
                f"is not set, but [register] is configured and secrets.source is env "
                f"(set {ENV_SECRET} to the password of node {self._node_id})",
            )
        if net_node is None or net_node == "":
            raise ConfigError(
                ENVIRONMENT,
                ENV_NODE,
                f"is not set; it must name the node whose password {ENV_SECRET} holds "
                f"(register.node_id = {self._node_id} in {self._path})",
            )
        if net_node.strip() != self._node_id:
            shown = (
                net_node
                if _NODE_ID.fullmatch(net_node.strip())
                else "a value that is not a node number"
            )
            raise ConfigError(
                self._path,
                "register.node_id",
                f"is {self._node_id} but {ENV_NODE} is {shown}; {ENV_SECRET} must be the password "
                f"of register.node_id",
            )
        self._node_secret = Secret(net_secret)
        self._remember(net_secret)

    def _load_further(self, env: Mapping[str, str]) -> None:
        for node in self._further_ids:
            name = f"{ENV_NODE_SECRET_PREFIX}{node}"
            value = env.get(name)
            if not value:
                raise ConfigError(
                    ENVIRONMENT,
                    name,
                    f"is not set, but [nodes.{node}.register] is configured and secrets.source "
                    f"is env (set {name} to the password of node {node})",
                )
            self._further[node] = Secret(value)

    def _load_inline(self, settings: SecretSettings) -> None:
        if settings.config_file is not None:
            check_private_file(settings.config_file, "secrets.secret")
        secret = settings.inline_secret
        if secret is not None:
            self._remember(secret.reveal())
        if self._node_id is None:
            return
        if secret is None:
            raise ConfigError(
                self._path,
                "secrets.secret",
                f"is empty, but [register] is configured and secrets.source is config "
                f"(set it to the password of node {self._node_id})",
            )
        self._node_secret = secret

    def _load_ami(self, settings: SecretSettings, env: Mapping[str, str]) -> None:
        inline = settings.inline_ami_secret
        if inline is not None:
            self._remember(inline.reveal())
        if self._ami_user is None or self._source == "control":
            return
        if self._source == "env":
            value = env.get(ENV_AMI_SECRET)
            if not value:
                raise ConfigError(
                    ENVIRONMENT,
                    ENV_AMI_SECRET,
                    f"is not set, but [ami] is enabled and secrets.source is env (set "
                    f"{ENV_AMI_SECRET} to the AMI password of user {self._ami_user})",
                )
            self._ami_secret = Secret(value)
            return
        if inline is None:
            raise ConfigError(
                self._path,
                "secrets.ami_secret",
                f"is empty, but [ami] is enabled and secrets.source is config (set it to the AMI "
                f"password of user {self._ami_user})",
            )
        self._ami_secret = inline

    def _load_env_peers(self, env: Mapping[str, str]) -> None:
        for name, value in env.items():
            if not name.startswith(ENV_PEER_PREFIX):
                continue
            node = name[len(ENV_PEER_PREFIX) :]
            if value:
                self._remember(value)
            if not _NODE_ID.fullmatch(node):
                raise ConfigError(
                    ENVIRONMENT,
                    name,
                    "the part after NET_PEER_ must be a node number",
                    "NET_PEER_<digits>, e.g. NET_PEER_2001",
                )
            if not value:
                raise ConfigError(ENVIRONMENT, name, "is empty; a peer secret must not be empty")
            self._env_peers[node] = Secret(value)

    def _read_peers_file(self, settings: SecretSettings) -> PeersFile | None:
        path = settings.peers_file
        if path is None:
            return None
        try:
            peers = read_peers_file(path)
        except (FileNotFoundError, NotADirectoryError):
            # The value is not repeated: a path that leads nowhere may be a pasted secret.
            config_file = settings.config_file
            base = f", {config_file.absolute().parent}" if config_file is not None else ""
            raise ConfigError(
                self._path,
                "secrets.peers_file",
                f"names a file that does not exist (a relative path is resolved against the "
                f"config file's directory{base})",
                "the path of an existing peers file",
            ) from None
        for secret in peers.secrets.values():
            self._remember(secret.reveal())
        return peers

    def _merge_peers(self, peers: PeersFile | None) -> dict[str, Secret]:
        merged = dict(self._env_peers)
        if peers is None:
            return merged
        for node, secret in peers.secrets.items():
            if node in merged:
                raise ConfigError(
                    str(peers.path),
                    f"line {peers.lines[node]}",
                    f"node {node} also has a secret in {ENV_PEER_PREFIX}{node}; give each node "
                    f"one secret (remove the variable or the line)",
                )
            merged[node] = secret
        return merged

    def _load_portal(self, settings: SecretSettings, env: Mapping[str, str]) -> None:
        var = settings.portal_env
        if var is None:
            return
        value = env.get(var)
        if not value:
            raise ConfigError(
                self._path,
                "portal.credential_env",
                f"names the environment variable {var}, which is not set or empty",
            )
        self._portal = Secret(value)
        self._remember(value)

    def _load_wireguard(self, settings: SecretSettings, env: Mapping[str, str]) -> None:
        if settings.wg_private_env is None:
            return
        self._wg_private = self._env_key(env, settings.wg_private_env, "wireguard.private_key_env")
        if settings.wg_preshared_env is not None:
            self._wg_preshared = self._env_key(
                env, settings.wg_preshared_env, "wireguard.preshared_key_env"
            )

    def _env_key(self, env: Mapping[str, str], var: str, key: str) -> Secret:
        """A base64 WireGuard key from the environment variable `var` (named by `key`)."""
        value = env.get(var, "").strip()
        if not value:
            raise ConfigError(
                self._path, key, f"names the environment variable {var}, which is not set or empty"
            )
        # Remembered before it is checked: a value that is not a key is still someone's secret.
        self._remember(value)
        try:
            decode_key(value)
        except ValueError as exc:
            raise ConfigError(ENVIRONMENT, var, str(exc)) from None
        return Secret(value)

    def remember_transient(self, value: str) -> None:
        """Redact `value` from every log line from now on (a credential the node obtained at
        run time, e.g. a web-transceiver token)."""
        if value:
            self._remember(value)

    def _remember(self, value: str) -> None:
        with self._lock:
            if value in self._known:
                return
            self._known = tuple(sorted((*self._known, value), key=len, reverse=True))

    # --- reload -------------------------------------------------------------------------------

    def reload(self, config: SecretSettings | HasSecretSettings) -> PeersChange:
        """SIGHUP: take the inbound peer secrets of `config`'s peers file for calls from now on.

        All or nothing: on any problem (`ConfigError`) the store is unchanged. Calls already set
        up keep the secret they were admitted with. The environment is not re-read (a process
        cannot see changes to it), and the registration credential is not reloaded: a changed
        source or inline secret needs a restart. With `source = "config"` the config file's
        permissions are checked again, as at startup.
        """
        settings = _settings(config)
        if settings.source == "config" and settings.config_file is not None:
            check_private_file(settings.config_file, "secrets.secret")
        new = self._merge_peers(self._read_peers_file(settings))
        with self._lock:
            old = self._peers
            self._peers = new
        return PeersChange(
            added=_sorted_ids(new.keys() - old.keys()),
            changed=_sorted_ids(n for n in new.keys() & old.keys() if not new[n].equals(old[n])),
            removed=_sorted_ids(old.keys() - new.keys()),
        )

    # --- queries ------------------------------------------------------------------------------

    @property
    def source(self) -> str:
        """`[secrets].source`: `env`, `control` or `config`."""
        return self._source

    @property
    def node_id(self) -> str | None:
        """This node's number (the register username), or None when registration is unconfigured."""
        return self._node_id

    def node_secret(self, node_id: str | None = None) -> Secret | None:
        """The registration password of the first node (or of `node_id`, a further node of the
        host), or None when none has been provided (yet)."""
        if node_id is None or node_id == self._node_id:
            return self._node_secret
        return self._further.get(node_id)

    def peer_secret(self, node_id: str) -> Secret | None:
        """The secret provisioned for an inbound caller's node id, or None when unknown."""
        return self._peers.get(node_id)

    def portal_secret(self) -> Secret | None:
        """The `[portal]` password, or None when there is no `[portal]` section."""
        return self._portal

    def wireguard_keys(self) -> tuple[Secret, Secret | None] | None:
        """The `[wireguard]` private key and preshared key (base64 text), None without
        `[wireguard]`."""
        if self._wg_private is None:
            return None
        return self._wg_private, self._wg_preshared

    @property
    def ami_user(self) -> str | None:
        """The `[ami]` login name, None when AMI is off."""
        return self._ami_user

    def ami_secret(self) -> Secret | None:
        """The AMI password, or None when none has been provided (yet)."""
        return self._ami_secret

    def ami_login(self, username: str, secret: str) -> bool:
        """Whether `username`/`secret` is the AMI login. The name compares case-insensitively
        (as Asterisk's manager users do), the password in constant time."""
        expected = self._ami_secret
        if self._ami_user is None or expected is None:
            return False
        name_ok = hmac.compare_digest(
            username.lower().encode("utf-8", "surrogateescape"),
            self._ami_user.lower().encode(),
        )
        return expected.equals(secret) and name_ok

    def peer_ids(self) -> frozenset[str]:
        """Node ids that have a provisioned inbound secret (ids are not secret)."""
        return frozenset(self._peers)

    # --- commands -----------------------------------------------------------------------------

    def set(self, username: str, secret: str | Secret) -> None:
        """POST /secrets: provide the registration credential after start (source = control).

        Raises `CommandError` (never echoing the secret) when the source is not `control`, when
        registration is unconfigured, or when `username` is not `[register].node_id`.
        """
        if self._source != "control":
            raise CommandError(
                f"secrets.source is {self._source}; POST /secrets is accepted only when "
                f"secrets.source is control",
                status=409,
            )
        if isinstance(username, str) and username.startswith(AMI_USER_PREFIX):
            self._set_ami(username[len(AMI_USER_PREFIX) :], secret)
            return
        if isinstance(username, str) and username in self._further_ids:
            further = self._new_secret(secret)
            self._remember(further.reveal())
            self._further[username] = further
            return
        if self._node_id is None:
            raise CommandError(
                "registration is not configured ([register] is absent), so there is no "
                "credential to set",
                status=409,
            )
        if not isinstance(username, str) or username != self._node_id:
            shown = username if isinstance(username, str) and _NODE_ID.fullmatch(username) else "?"
            raise CommandError(
                f"username {shown} is not this node's id ({self._node_id})",
                status=400,
            )
        value = self._new_secret(secret)
        self._remember(value.reveal())
        self._node_secret = value

    def _set_ami(self, user: str, secret: str | Secret) -> None:
        if self._ami_user is None:
            raise CommandError(
                "[ami] is not enabled, so there is no AMI credential to set", status=409
            )
        if user.lower() != self._ami_user.lower():
            # The name sent is not repeated: it may be the password in the wrong field.
            raise CommandError(
                f"the username does not name the AMI user (ami:{self._ami_user})", status=400
            )
        value = self._new_secret(secret)
        self._remember(value.reveal())
        self._ami_secret = value

    @staticmethod
    def _new_secret(secret: str | Secret) -> Secret:
        if isinstance(secret, Secret):
            return secret
        if isinstance(secret, str) and secret:
            return Secret(secret)
        raise CommandError("secret must be a non-empty string", status=400)

    def redact(self, text: str) -> str:
        """`text` with every secret the store has ever known replaced by `***`."""
        for value in self._known:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def __repr__(self) -> str:
        return (
            f"SecretStore(source={self._source!r}, node_id={self._node_id!r}, "
            f"node_secret={'set' if self._node_secret else 'unset'}, peers={len(self._peers)}, "
            f"portal={'set' if self._portal else 'unset'}, "
            f"wireguard={'set' if self._wg_private else 'unset'}, "
            f"ami={'set' if self._ami_secret else 'unset'})"
        )

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("a SecretStore cannot be pickled")


def _sorted_ids(nodes: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(nodes, key=lambda n: (len(n), n)))


class RedactingFilter(logging.Filter):
    """Scrubs every secret the store knows from log records: message, args, traceback, stack.

    Attach it to handlers (`handler.addFilter(RedactingFilter(store))`): a filter on a logger does
    not see records that propagate from its children, a filter on a handler sees them all.
    """

    def __init__(self, store: SecretStore) -> None:
        super().__init__()
        self._store = store

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self._store.redact
        try:
            message = record.getMessage()
        except Exception:
            # A broken format string: keep what we can show without formatting it.
            message = f"{record.msg!s} {record.args!r}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
