"""The value types of the configuration and the parsers that read them from TOML text.

`Address` (a socket address), `CodecOffer` and `FrozenDict` are what sections hold; the parsers
(`bind_address`, `peer_address`, `http_url`, ...) turn a raw TOML value into one of them or raise
`Invalid` with the problem and the accepted form. A parser never repeats a string it was given:
an operator may have pasted a password into the wrong key.
"""

from __future__ import annotations

import functools
import ipaddress
import operator
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

__all__ = [
    "ASL_DNS_DOMAIN",
    "ASL_REGISTER_URL",
    "ASL_STATPOST_URL",
    "FORMAT_ALAW",
    "FORMAT_SLIN",
    "FORMAT_SLIN16",
    "FORMAT_ULAW",
    "PORTAL_URL",
    "Address",
    "CodecOffer",
    "Context",
    "FrozenDict",
    "Invalid",
    "toml_type",
]

# IAX2 audio format bits (RFC 5456 §8.7): what `codec_offer` lists.
FORMAT_ULAW = 0x4
FORMAT_ALAW = 0x8
FORMAT_SLIN = 0x40
FORMAT_SLIN16 = 0x8000

#: ASL3's HTTP registrar (res_rpt_http_registrations) and stats collector (app_rpt statpost_url).
ASL_REGISTER_URL = "https://register.allstarlink.org/"
ASL_STATPOST_URL = "http://stats.allstarlink.org/uhandler"
#: The web-transceiver portal (`[portal] url`'s default).
PORTAL_URL = "https://www.allstarlink.org"
#: ASL3's node-lookup domain (app_rpt dns_node_domain).
ASL_DNS_DOMAIN = "nodes.allstarlink.org"

NODE_ID = re.compile(r"[0-9]+")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")

_K = TypeVar("_K")
_V = TypeVar("_V")


class FrozenDict(dict[_K, _V]):
    """A dict that refuses mutation, so a frozen config stays frozen.

    A `dict` subclass (not `MappingProxyType`) because `dataclasses.asdict` and `copy` know how
    to rebuild dicts; hashable when its values are, like the frozen dataclasses it holds.
    """

    __slots__ = ()

    def _readonly(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("configuration mappings are read-only")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly
    __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[type[FrozenDict[_K, _V]], tuple[dict[_K, _V]]]:
        return (type(self), (dict(self),))


@dataclass(frozen=True, slots=True)
class Address:
    """A socket address: an IP literal or host name, and a port.

    Written `host:port` or `[v6]:port` in the file; `str()` gives that form back.
    """

    host: str
    port: int

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port {self.port} is outside 0-65535")

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.split("%", 1)[0]).is_loopback
        except ValueError:
            return False

    def as_tuple(self) -> tuple[str, int]:
        """`(host, port)` as `socket` and asyncio take it."""
        return (self.host, self.port)


@dataclass(frozen=True, slots=True)
class CodecOffer:
    """What a codec policy offers (spec "codec_policy").

    `preferred` is the FORMAT/CAPABILITY offer, best first. `accept_extra` holds formats the
    node does not offer but takes when a peer asks for them (`allow_slin`: slin).
    """

    preferred: tuple[int, ...]
    accept_extra: frozenset[int] = frozenset()

    @property
    def capability(self) -> int:
        """The CAPABILITY bitmask of the offer."""
        return functools.reduce(operator.or_, self.preferred, 0)

    @property
    def accepted(self) -> frozenset[int]:
        """Every format a peer may end up using: the offer plus `accept_extra`."""
        return frozenset(self.preferred) | self.accept_extra

    def accepts(self, fmt: int) -> bool:
        return fmt in self.accepted


# --- reading values -----------------------------------------------------------------------------


class Invalid(ValueError):
    """A value that does not fit its key: what is wrong and what would be accepted.

    `item` names an array element (`key[item]`) when the fault is in one.
    """

    def __init__(
        self,
        problem: str,
        accepted: Iterable[str] | str | None = None,
        *,
        item: int | None = None,
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.accepted = accepted
        self.item = item


@dataclass(frozen=True, slots=True)
class Context:
    """Where a value is read: the config file and the raw table holding the key."""

    path: Path
    table: Mapping[str, object]


#: A parser: the raw TOML value and where it is, to the value the section holds.
Parser = Callable[[object, Context], object]

_TOML_TYPES: Mapping[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    dict: "a table",
}


def toml_type(value: object) -> str:
    """What a raw TOML value is, in words ("an integer"), never the value itself."""
    for kind, name in _TOML_TYPES.items():
        if type(value) is kind:
            return name
    return f"a {type(value).__name__} value"


def string(value: object, accepted: str | None = None) -> str:
    if type(value) is not str:
        raise Invalid(f"must be a string, got {toml_type(value)}", accepted)
    return value


def host_ok(host: str, *, bind: bool) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return True
    except ValueError:
        pass
    if bind or len(host) > 253:
        return False
    return all(_HOST_LABEL.fullmatch(label) for label in host.rstrip(".").split("."))


def _split_address(raw: str, form: str) -> tuple[str, int]:
    if raw.startswith("["):
        close = raw.find("]")
        if close < 0 or raw[close + 1 : close + 2] != ":":
            raise Invalid("is not a socket address", form)
        host, port_text = raw[1:close], raw[close + 2 :]
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise Invalid("brackets must hold an IPv6 address", form) from None
    else:
        host, sep, port_text = raw.rpartition(":")
        if not sep or not host:
            raise Invalid("needs a host and a port", form)
        if ":" in host:
            raise Invalid("an IPv6 address needs brackets", "[ipv6]:port, e.g. [::1]:4569")
    if not port_text.isascii() or not port_text.isdigit():
        raise Invalid("port must be a number", form)
    return host, int(port_text)


def _address(raw: object, *, bind: bool) -> Address:
    form = "host:port or [ipv6]:port" + (", host an IP address or localhost" if bind else "")
    text = string(raw, form)
    host, port = _split_address(text, form)
    lo = 0 if bind else 1
    if not lo <= port <= 65535:
        raise Invalid(f"port {port} is out of range", f"a port from {lo} to 65535")
    if not host_ok(host, bind=bind):
        problem = (
            "host must be an IP address or localhost"
            if bind
            else "host is not a valid host name or IP address"
        )
        raise Invalid(problem, form)
    return Address(host, port)


def bind_address(raw: object, ctx: Context) -> Address:
    """Where a socket listens: an IP literal or localhost, any port (0: the OS picks)."""
    return _address(raw, bind=True)


def peer_address(raw: object, ctx: Context) -> Address:
    """Where to send: a host name or IP literal, port 1-65535."""
    return _address(raw, bind=False)


def nameserver(raw: object) -> Address:
    """A DNS server: an IP address, with an optional port (53 when absent)."""
    form = '"ip", "ip:port" or "[ipv6]:port", e.g. "127.0.0.1:5353"'
    text = string(raw, form)
    try:
        return Address(str(ipaddress.ip_address(text)), 53)
    except ValueError:
        pass
    host, port = _split_address(text, form)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise Invalid("host must be an IP address (a name server cannot be a name)", form) from None
    if not 1 <= port <= 65535:
        raise Invalid(f"port {port} is out of range", "a port from 1 to 65535")
    return Address(host, port)


def array(raw: object, accepted: str, item: Callable[[object], _V]) -> tuple[_V, ...]:
    """A TOML array read item by item; a fault names the item."""
    if type(raw) is not list:
        raise Invalid(f"must be an array, got {toml_type(raw)}", accepted)
    out = []
    for i, value in enumerate(raw):
        try:
            out.append(item(value))
        except Invalid as exc:
            raise Invalid(exc.problem, exc.accepted, item=i) from None
    return tuple(out)


def nameservers(raw: object, ctx: Context) -> tuple[Address, ...]:
    return array(raw, 'an array of "ip" or "ip:port" strings, e.g. ["127.0.0.1:5353"]', nameserver)


def file_path(raw: object, ctx: Context) -> Path | None:
    """A path: relative to the config file's directory, `~` expanded; "" means None."""
    text = string(raw)
    if not text:
        return None
    return ctx.path.absolute().parent / Path(text).expanduser()


def node_id(raw: object, ctx: Context) -> str:
    """A node number: digits, written as a string or a non-negative integer."""
    if type(raw) is int and raw >= 0:
        return str(raw)
    if type(raw) is not str or not NODE_ID.fullmatch(raw):
        raise Invalid("must be a node number (digits)", 'a string of digits, e.g. "2000"')
    return raw


def http_url(*, allow_query: bool) -> Callable[[object, Context], str]:
    """An http:// or https:// URL with a host and no user:password part."""
    accepted = "an http:// or https:// URL, e.g. " + (
        ASL_REGISTER_URL if allow_query else ASL_STATPOST_URL
    )

    def parse(raw: object, ctx: Context) -> str:
        value = string(raw)
        try:
            parts = urllib.parse.urlsplit(value)
            port = parts.port
        except ValueError:
            raise Invalid("is not a URL", accepted) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Invalid("is not an http:// or https:// URL with a host", accepted)
        if parts.username is not None or parts.password is not None:
            # It would be logged with every failure; credentials have their own place.
            raise Invalid("must not hold a user name or password", accepted)
        if port == 0:
            raise Invalid("port 0 is not a port to connect to", accepted)
        if not allow_query and (parts.query or parts.fragment):
            raise Invalid("must not have a query or fragment (the node appends the query)")
        return value

    return parse


def env_name(example: str, what: str) -> Callable[[object, Context], str]:
    """The NAME of an environment variable (never the value it holds)."""

    def parse(raw: object, ctx: Context) -> str:
        value = string(raw)
        if not ENV_NAME.fullmatch(value):
            raise Invalid(
                f"must be the NAME of an environment variable (not {what})",
                f"letters, digits and _, not starting with a digit, e.g. {example}",
            )
        return value

    return parse


def choice_set(choices: tuple[str, ...]) -> Callable[[object, Context], tuple[str, ...]]:
    """An array of distinct values out of `choices`, kept in the order of `choices`."""

    def parse(raw: object, ctx: Context) -> tuple[str, ...]:
        if type(raw) is not list:
            raise Invalid(f"must be an array, got {toml_type(raw)}", choices)
        for i, item in enumerate(raw):
            if type(item) is not str or item not in choices:
                raise Invalid("is not one of the accepted values", choices, item=i)
        return tuple(c for c in choices if c in raw)

    return parse


def domain(raw: object, ctx: Context) -> str:
    """A DNS domain name, lower-cased and without the root dot."""
    value = string(raw)
    bare = value.strip(".")
    ok = bool(bare) and len(bare) <= 253 and host_ok(bare, bind=False)
    if ok:
        try:
            ipaddress.ip_address(bare)
            ok = False
        except ValueError:
            pass
    if not ok:
        raise Invalid("is not a DNS domain name", f"a domain, e.g. {ASL_DNS_DOMAIN}")
    return bare.lower()
