"""How a configuration key is declared, once, for the loader, the template and the docs.

A section is a frozen dataclass; each field is a key, annotated
`Annotated[<type>, key("what the operator reads in the template", ...)]`. `key` returns a
`msgspec.Meta`: msgspec checks the type and the bounds (`ge`, `le`), the rest (the prose, an
example value, how the template shows the key, a parser for values msgspec cannot type) rides in
`Meta.extra` and is read back here by `keys_of`.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec

from node.config.values import Parser

__all__ = ["MISSING", "NO_EXAMPLE", "Key", "Show", "key", "keys_of"]

#: How the template shows a key: `on` as a setting (switched off with its section), `off` as a
#: switched-off setting even in a section that is on, `prose` as an example inside the comment
#: (`# key = value`, for keys whose every value depends on another key), `hidden` not at all
#: (an inline secret, which the template mentions only in prose).
Show = Literal["on", "off", "prose", "hidden"]

#: The default of a required key.
MISSING: Any = dataclasses.MISSING


class _NoExample:
    def __repr__(self) -> str:
        return "NO_EXAMPLE"


#: A key whose template shows its default.
NO_EXAMPLE: Any = _NoExample()


def key(
    doc: str = "",
    *,
    ext: bool = False,
    example: object = NO_EXAMPLE,
    show: Show = "on",
    parse: Parser | None = None,
    accepted: str | None = None,
    tables: tuple[str, ...] = (),
    notes: Mapping[str, str] | None = None,
    ge: float | None = None,
    le: float | None = None,
) -> msgspec.Meta:
    """Declare a key.

    `doc` is the template's comment (an empty one: the previous key's comment covers this one);
    `ext` marks a key the product spec does not have; `example` is shown in the template instead
    of the default; `parse` reads values msgspec cannot type (addresses, paths, secrets) and
    raises `Invalid`; `accepted` describes what a key of a plain type takes where its type alone
    does not say it; `tables`/`notes` list the subtables of a mapping key (`[announce.events.*]`)
    and a comment for some of them; `ge`/`le` bound a number.
    """
    extra = {
        "ext": ext,
        "example": example,
        "show": show,
        "parse": parse,
        "accepted": accepted,
        "tables": tables,
        "notes": dict(notes or {}),
    }
    return msgspec.Meta(ge=ge, le=le, description=doc, extra=extra)


@dataclass(frozen=True, slots=True)
class Key:
    """One declared key, read back from its section's annotations."""

    name: str
    #: The annotation without `Annotated`: `int`, `Literal[...]`, `Address | None`, a section.
    type: Any
    #: The whole annotation, bounds included: what msgspec checks a value against.
    hint: Any
    default: Any
    doc: str = ""
    ext: bool = False
    example: Any = NO_EXAMPLE
    show: Show = "on"
    parse: Parser | None = None
    accepted: str | None = None
    tables: tuple[str, ...] = ()
    notes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ge: float | None = None
    le: float | None = None

    @property
    def required(self) -> bool:
        return self.default is MISSING

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The accepted values of a `Literal` key, else None."""
        if get_origin(self.type) is Literal:
            return tuple(get_args(self.type))
        return None

    @property
    def section(self) -> type | None:
        """The section type of a subtable key (`[announce.tts]`), else None. A dataclass read
        by a parser (`Address`) is a value, not a table."""
        if self.parse is None and dataclasses.is_dataclass(self.type):
            return self.type
        return None

    @property
    def shown(self) -> Any:
        """The value the template writes: the example, else the default."""
        return self.default if self.example is NO_EXAMPLE else self.example


@functools.cache
def keys_of(model: type) -> tuple[Key, ...]:
    """The declared keys of a section, in declaration order."""
    hints = typing.get_type_hints(
        model, globalns=vars(sys.modules[model.__module__]), include_extras=True
    )
    out = []
    for f in dataclasses.fields(model):
        hint = full = hints[f.name]
        meta: msgspec.Meta | None = None
        if get_origin(hint) is Annotated:
            hint, *rest = get_args(hint)
            meta = next((m for m in rest if isinstance(m, msgspec.Meta)), None)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = MISSING
        extra = dict(meta.extra or {}) if meta is not None else {}
        out.append(
            Key(
                name=f.name,
                type=hint,
                hint=full,
                default=default,
                doc=(meta.description or "") if meta is not None else "",
                ge=meta.ge if meta is not None else None,
                le=meta.le if meta is not None else None,
                **extra,
            )
        )
    return tuple(out)
