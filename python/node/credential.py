"""A credential that never shows itself (`Secret`), and the check that a file holding one is
private.

The bottom of the secrets stack: the secret store, the peers file, the configuration and the
protocol machines all hold `Secret`s, so this module imports nothing of theirs.
"""

from __future__ import annotations

import hmac
import os
import stat
from typing import Any, NoReturn

from node.errors import ConfigError

__all__ = ["REDACTED", "Secret", "check_private_file", "private_mode_problem"]

#: What every redacted secret is shown as.
REDACTED = "***"


class Secret:
    """A credential that never shows itself.

    `repr`, `str` and `format` print `***`; pickling is refused (a pickle is a byte string that
    would carry the value to wherever it is written). `copy`/`deepcopy` return the same object,
    which is safe because a `Secret` is immutable, and lets `dataclasses.asdict` walk a config that
    holds one. `reveal()` is for the single place that needs the text (the MD5 challenge answer).
    """

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            # The type name only: the value might be the secret in the wrong shape.
            raise TypeError(f"Secret wraps a str, not {type(value).__name__}")
        if not value:
            raise ValueError("a secret must not be empty")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The secret text. Call only where the value itself is needed, never to log it."""
        return self._value

    def equals(self, other: Secret | str) -> bool:
        """Constant-time comparison, so response timing says nothing about the value."""
        theirs = other._value if isinstance(other, Secret) else other
        if not isinstance(theirs, str):
            return False
        return hmac.compare_digest(self._value.encode(), theirs.encode())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return self.equals(other)

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __repr__(self) -> str:
        return f"Secret('{REDACTED}')"

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, format_spec: str) -> str:
        return REDACTED

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("a Secret cannot be pickled")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


def private_mode_problem(mode: int, path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """`(problem, accepted)` when group or others may read or write a file of `mode`, else None."""
    loose = stat.S_IMODE(mode) & 0o077
    if not loose:
        return None
    return (
        f"the file holds a secret but its mode is {stat.S_IMODE(mode):04o}: group or others "
        f"may read or write it; refusing it (fix: chmod 600 {path})",
        "a file readable and writable by its owner alone (mode 0600 or 0400)",
    )


def check_private_file(path: str | os.PathLike[str], key: str) -> None:
    """Refuse a file that group or others may read or write (it holds a secret).

    `os.stat` follows symlinks on purpose: mounted secrets are often symlinks, and it is the
    target's mode that decides who can read the content.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(
            str(path), key, f"cannot check the file's permissions: {exc.strerror}"
        ) from None
    problem = private_mode_problem(mode, path)
    if problem is not None:
        raise ConfigError(str(path), key, *problem)
