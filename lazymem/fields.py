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

from typing import Any

from lazymem.errors import ConfigError


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
