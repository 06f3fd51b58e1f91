"""The peers file (`[secrets] peers_file`): per-node inbound secrets, one `<node>=<secret>` a line.

```
# comment lines start with '#'; blank lines are skipped
2001=first secret
2002 = s3cr=t#with everything after the first '=' (spaces and tabs around it trimmed)
```

One format only, so a line means one thing: the node number, the first `=`, the secret. A
secret may hold any character but a line break, including `=`, `#` and inner spaces; there are
no inline comments and no quoting. A node listed twice is an error, not "the last one wins":
two secrets for one node mean one of them is stale. One line may name no node:
`echolink=<password>`, the EchoLink directory password (`[echolink]`).

The file is opened first and checked on the open descriptor (no window between the check and the
read), and refused unless it is a regular file, mode 0600 or 0400, owned by the user the node
runs as or by root (as ssh treats `authorized_keys`: root can replace the file anyway). Errors
name the file and the line number, never a line's text.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from node.credential import Secret, private_mode_problem
from node.errors import ConfigError

__all__ = ["ECHOLINK_KEY", "MAX_BYTES", "PeersFile", "parse_peers", "read_peers_file"]

#: A peers file larger than this is refused (it would be a wrong path, not a peer list).
MAX_BYTES = 1 << 20

_NODE_ID = re.compile(r"[0-9]+")
#: The one line that is not a node: `echolink=<password>`, the EchoLink directory password.
ECHOLINK_KEY = "echolink"
_ACCEPTED = "<node>=<secret>, e.g. 2001=the secret of node 2001, or echolink=<password>"
# Trimmed around the node and the secret; other whitespace (a form feed, a no-break space) is
# part of the secret, as the operator typed it.
_BLANKS = " \t"


@dataclass(frozen=True, slots=True)
class PeersFile:
    """What one peers file provisions: a secret per node, and the line each came from."""

    path: Path
    secrets: Mapping[str, Secret]
    lines: Mapping[str, int]
    #: The `echolink=<password>` line: the EchoLink directory password (`[echolink]`).
    echolink: Secret | None = None

    def __repr__(self) -> str:
        return f"PeersFile(path={str(self.path)!r}, nodes={sorted(self.secrets)!r})"


def parse_peers(text: str, path: Path) -> PeersFile:
    """Parse the text of a peers file (`path` only names it in errors). Raises `ConfigError`."""
    where = str(path)
    secrets: dict[str, Secret] = {}
    lines: dict[str, int] = {}
    echolink: Secret | None = None
    # split("\n"), not splitlines(): that would also break at form feeds and U+2028, which may
    # be part of a secret, and would number the lines differently from an editor.
    for number, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        line = raw.removesuffix("\r")
        stripped = line.strip(_BLANKS)
        if not stripped or stripped.startswith("#"):
            continue
        node, sep, value = line.partition("=")
        node = node.strip(_BLANKS)
        value = value.strip(_BLANKS)
        key = f"line {number}"
        if not sep:
            raise ConfigError(where, key, "has no '='", _ACCEPTED)
        if node == ECHOLINK_KEY:
            if not value:
                raise ConfigError(where, key, "the EchoLink password is empty", _ACCEPTED)
            if echolink is not None:
                raise ConfigError(where, key, "echolink is listed again; give it one password")
            echolink = Secret(value)
            continue
        if not _NODE_ID.fullmatch(node):
            raise ConfigError(where, key, "the part before '=' is not a node number", _ACCEPTED)
        if not value:
            raise ConfigError(where, key, f"the secret of node {node} is empty", _ACCEPTED)
        if node in secrets:
            raise ConfigError(
                where,
                key,
                f"node {node} is listed again (first on line {lines[node]}); give each node one "
                f"secret",
            )
        secrets[node] = Secret(value)
        lines[node] = number
    return PeersFile(path, secrets, lines, echolink)


def read_peers_file(path: Path) -> PeersFile:
    """Read and parse a peers file after checking who may read and change it.

    Raises `ConfigError` naming the file and the reason; `FileNotFoundError` or
    `NotADirectoryError` when there is no such file, for the caller to report with the config key
    that named it.
    """
    where = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not hang the node; fstat below refuses it anyway.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError as exc:
        raise ConfigError(where, None, f"cannot open the peers file: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(where, None, "is not a regular file", "a regular file, mode 0600")
        me = os.geteuid()
        if info.st_uid not in (me, 0):
            raise ConfigError(
                where,
                None,
                f"the file holds secrets but is owned by {_user(info.st_uid)}, not by the user "
                f"the node runs as ({_user(me)}) or root; refusing it (fix: chown "
                f"{_name(me)} {path})",
            )
        problem = private_mode_problem(info.st_mode, path)
        if problem is not None:
            raise ConfigError(where, None, *problem)
        data = _read_at_most(fd, MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(where, None, f"cannot read the peers file: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ConfigError(where, None, f"is larger than {MAX_BYTES} bytes; not a peers file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_at: int | None = exc.start
    else:
        bad_at = None
    if bad_at is not None:
        # Raised outside the handler: a UnicodeDecodeError carries the whole file as its
        # `object`, and would ride along as the ConfigError's __context__.
        line = data[:bad_at].count(b"\n") + 1
        raise ConfigError(where, f"line {line}", "is not UTF-8 text")
    return parse_peers(text, path)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _name(uid: int) -> str:
    """The user name of `uid`, or the number when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _user(uid: int) -> str:
    name = _name(uid)
    return f"uid {uid}" if name == str(uid) else f"{name} (uid {uid})"
