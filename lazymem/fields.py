"""Config dataclass helpers: a field's help text, and the one check that names a bad value.

Every stage's config is a dataclass whose fields carry ``metadata=h("what it is")`` (the help that
``--help`` tables and docs read) and whose ``__post_init__`` checks each value with ``require``, so
every bad value reads the same way: ``Class.field=value: what is allowed``.

>>> from dataclasses import dataclass, field, fields
>>> @dataclass(frozen=True)
... class Demo:
...     n: int = field(default=1, metadata=h("how many"))
...     def __post_init__(self):
...         require(self.n >= 1, "Demo", "n", self.n, "must be an integer >= 1")
>>> fields(Demo)[0].metadata["help"]
'how many'
>>> Demo(n=0)
Traceback (most recent call last):
...
lazymem.errors.ConfigError: Demo.n=0: must be an integer >= 1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from lazymem.errors import ConfigError, check_fields

T = TypeVar("T")


def h(text: str, **extra: Any) -> dict[str, Any]:
    """Field metadata: the help text, plus any other keys a config reads (e.g. ``omit_when_none``).

    >>> h("number of results")
    {'help': 'number of results'}
    >>> h("a later key", omit_when_none=True)
    {'help': 'a later key', 'omit_when_none': True}
    """
    return {"help": text, **extra}


def require(ok: bool, where: str, name: str, value: Any, allowed: str) -> None:
    """Raise ConfigError ``f"{where}.{name}={value!r}: {allowed}"`` unless ``ok``.

    >>> require(True, "RetrievalConfig", "n", 3, "must be an integer >= 1")
    >>> require(False, "RetrievalConfig", "n", 0, "must be an integer >= 1")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: RetrievalConfig.n=0: must be an integer >= 1
    >>> require(False, "Sampling", "stop", "x", "must be a list of strings")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: Sampling.stop='x': must be a list of strings
    """
    if not ok:
        raise ConfigError(f"{where}.{name}={value!r}: {allowed}")


def build_recipe(cls: type[T], values: Mapping, where: str, nested: Mapping[str, type] | None = None) -> T:
    """``cls(**values)`` with nested mappings turned into their dataclasses; errors name ``where``."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping of {cls.__name__} fields, got {type(values).__name__}")
    check_fields(cls, values, where)
    v = dict(values)
    for name, sub in (nested or {}).items():
        if isinstance(v.get(name), Mapping):
            check_fields(sub, v[name], f"{where}.{name}")
            try:
                v[name] = sub(**v[name])
            except (ConfigError, TypeError) as e:
                raise ConfigError(f"{where}.{name}: {e}") from None
    for f in dataclasses.fields(cls):  # YAML lists for tuple fields
        if isinstance(v.get(f.name), list) and "tuple" in str(f.type):
            v[f.name] = tuple(v[f.name])
    try:
        return cls(**v)
    except (ConfigError, TypeError) as e:
        raise ConfigError(f"{where}: {e}") from None
