"""Typed JSON parts: frozen dataclasses that give back exactly the JSON object they were read from.

A ``JsonPart`` subclass declares its fields with plain type hints (``str``, ``int``, ``float``,
``bool``, ``Any``, ``X | None``, ``tuple[X, ...]``, ``Mapping[str, X]``, another part). ``from_json``
checks every known field's type (a field whose type admits None may be absent) and keeps the
object's key order and its unknown keys, so ``to_json()`` returns an equal object with the same
key order: an absent key stays absent, an unknown one is never dropped. A part built in code
writes its fields in declaration order, leaving out those in ``OMIT_IF_NONE`` that are None;
``with_`` changes fields and appends the keys it adds, as assigning to a dict would.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Point(JsonPart):
...     x: int
...     label: str | None = None
>>> p = Point.from_json({"label": "a", "x": 1, "z": [2]})
>>> p.x, p.to_json()
(1, {'label': 'a', 'x': 1, 'z': [2]})
>>> Point.from_json({"x": "1"}, "p")
Traceback (most recent call last):
...
lazymem.eval.records.part.FieldError: p.x: '1' is not an integer
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lazymem.errors import json_kind  # noqa: F401  (record readers name a value's kind with it)

_META = ("json_keys", "json_extra")


class FieldError(ValueError):
    """A field of a JSON part that does not fit its type; ``path`` is its dotted place (``pool.hits[3].rank``)."""

    def __init__(self, path: str, problem: str):
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True)
class Codec:
    """How one field is read from and written to JSON."""

    decode: Callable[[Any, str], Any]  # (json value, path) -> typed value; raises FieldError
    encode: Callable[[Any], Any]  # typed value -> json value
    optional: bool  # None is allowed (and the key may be absent)


def _scalar(t: type, name: str) -> Codec:
    def decode(v, path):
        if isinstance(v, bool) and t is not bool or not isinstance(v, (int, float) if t is float else t):
            raise FieldError(path, f"{v!r} is not {name}")
        return v

    return Codec(decode, lambda v: v, False)


_SCALARS = {
    str: _scalar(str, "a string"),
    int: _scalar(int, "an integer"),
    float: _scalar(float, "a number"),
    bool: _scalar(bool, "true or false"),
}


def _encode_any(v: Any) -> Any:
    return v.to_json() if isinstance(v, JsonPart) else v


_ANY = Codec(lambda v, path: v, _encode_any, True)


def codec(hint: Any) -> Codec:
    """The codec of a resolved type hint."""
    if hint is Any:
        return _ANY
    if hint in _SCALARS:
        return _SCALARS[hint]
    if isinstance(hint, type) and issubclass(hint, JsonPart):
        return Codec(lambda v, path: hint.from_json(v, path), lambda v: v.to_json(), False)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [codec(a) for a in args if a is not type(None)]
        nullable = type(None) in args

        def decode(v, path):
            if v is None and nullable:
                return None
            if len(options) == 1:  # its own error, with the path of the innermost bad field
                return options[0].decode(v, path)
            problems = []
            for c in options:
                try:
                    return c.decode(v, path)
                except FieldError as e:
                    problems.append(e.problem)
            raise FieldError(path, f"{v!r} is not {' or '.join(p.split(' is not ')[-1] for p in problems)}")

        def encode(v):
            if v is None:
                return None
            return options[0].encode(v) if len(options) == 1 else next(c.encode(v) for c in options if _fits(c, v))

        return Codec(decode, encode, nullable)
    if origin is tuple:
        item = codec(args[0])

        def decode_seq(v, path):
            if not isinstance(v, (list, tuple)):  # a tuple: a part built from the pipeline's objects
                raise FieldError(path, f"{json_kind(v)}, expected a list")
            return tuple(item.decode(x, f"{path}[{i}]") for i, x in enumerate(v))

        return Codec(decode_seq, lambda v: [item.encode(x) for x in v], False)
    if origin in (Mapping, dict, typing.Mapping):
        value = codec(args[1]) if args else _ANY

        def decode_map(v, path):
            if not isinstance(v, Mapping):
                raise FieldError(path, f"{json_kind(v)}, expected an object")
            return {k: value.decode(x, f"{path}.{k}") for k, x in v.items()}

        return Codec(decode_map, lambda v: {k: value.encode(x) for k, x in v.items()}, False)
    raise TypeError(f"no JSON codec for type hint {hint!r}")


def _fits(c: Codec, v: Any) -> bool:
    try:
        c.decode(c.encode(v), "")
        return True
    except (FieldError, AttributeError, TypeError):
        return False


_CODECS: dict[type, dict[str, Codec]] = {}


@dataclass(frozen=True)
class JsonPart:
    """Base of the typed record parts (see the module docstring)."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset()  # left out of a part built in code while None

    # the key order read (None: declaration order), and the keys this class does not know, with their values
    json_keys: tuple[str, ...] | None = field(default=None, kw_only=True, repr=False, compare=False)
    json_extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, repr=False)

    @classmethod
    def codecs(cls) -> dict[str, Codec]:
        """Codec of every declared field, in declaration order (computed once per class)."""
        if cls not in _CODECS:
            hints = typing.get_type_hints(cls)
            _CODECS[cls] = {f.name: codec(hints[f.name]) for f in dataclasses.fields(cls) if f.name not in _META}
        return _CODECS[cls]

    @classmethod
    def decode_field(cls, name: str, value: Any, path: str, data: Mapping) -> Any:
        """One field's typed value (subclasses override it for fields whose type depends on others)."""
        return cls.codecs()[name].decode(value, path)

    @classmethod
    def from_json(cls, data: Any, path: str = ""):
        """The part of a JSON object; FieldError naming the field's path when a value does not fit."""
        if not isinstance(data, Mapping):
            raise FieldError(path or cls.__name__, f"{json_kind(data)}, expected an object")
        kwargs: dict[str, Any] = {}
        for name, c in cls.codecs().items():
            where = f"{path}.{name}" if path else name
            if name in data:
                kwargs[name] = cls.decode_field(name, data[name], where, data)
            elif c.optional:
                kwargs[name] = None
            else:
                raise FieldError(where, "missing")
        extra = {k: v for k, v in data.items() if k not in kwargs}
        return cls(**kwargs, json_keys=tuple(data), json_extra=extra)

    def keys(self) -> tuple[str, ...]:
        """The JSON keys this part writes, in order."""
        if self.json_keys is not None:
            return self.json_keys
        own = tuple(n for n in self.codecs() if n not in self.OMIT_IF_NONE or getattr(self, n) is not None)
        return own + tuple(k for k in self.json_extra if k not in own)

    def to_json(self) -> dict:
        """The JSON object (read back by ``from_json`` into an equal part)."""
        c = self.codecs()
        return {k: c[k].encode(getattr(self, k)) if k in c else self.json_extra[k] for k in self.keys()}

    def with_(self, **changes: Any):
        """A copy with `changes`; keys it did not write yet are appended (like new keys of a dict)."""
        keys = self.keys()
        return dataclasses.replace(self, **changes, json_keys=keys + tuple(k for k in changes if k not in keys))

    def without(self, *names: str):
        """A copy with the keys `names` left out (their fields None, as when they were absent)."""
        keys = self.keys()
        fields = {n: None for n in names if n in self.codecs()}
        extra = {k: v for k, v in self.json_extra.items() if k not in names}
        return dataclasses.replace(self, **fields, json_keys=tuple(k for k in keys if k not in names), json_extra=extra)

    def get(self, name: str, default: Any = None) -> Any:
        """A field or unknown key by its JSON name, `default` when absent or None."""
        v = getattr(self, name, None) if name in self.codecs() else self.json_extra.get(name)
        return default if v is None else v
