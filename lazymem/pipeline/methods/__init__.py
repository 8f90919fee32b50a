"""Memory methods by name: one ``Method`` class each (``base.Method``), registered once here.

``REGISTRY`` maps a method's name (``pipeline.method``) to ``"module:Class"``; classes are
imported on first use, so a method's heavy dependencies (Mem0) load only when it runs (a method's
module itself imports nothing heavy: every config imports it to find its settings). To add a
baseline: write a module with a ``Method`` subclass (and its settings dataclass, ``settings_class``)
and add one line below (docs/ARCHITECTURE.md).

>>> method_class("rag").retrieves, method_class("oracle_turn").retrieves
(True, False)
>>> method_class("nanomemory").writes_text, method_class("lazymem").constructs
(True, True)
>>> list(settings_classes())  # the methods with settings: each is the config section of its name
['lazymem', 'extractive', 'nanomemory', 'mem0']
>>> method_class("bm42")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lazymem.errors.ConfigError: unknown method 'bm42'; methods are ['lazymem', 'extractive', 'rag', ...]
"""

from __future__ import annotations

import importlib

from lazymem.errors import ConfigError
from lazymem.pipeline.methods.base import Method, MethodOutput

REGISTRY: dict[str, str] = {
    "lazymem": "lazymem.pipeline.methods.construct:LazyMem",
    "extractive": "lazymem.pipeline.methods.construct:Extractive",
    "rag": "lazymem.pipeline.methods.text:RAG",
    "oracle_turn": "lazymem.pipeline.methods.text:OracleTurn",
    "oracle_session": "lazymem.pipeline.methods.text:OracleSession",
    "nanomemory": "lazymem.pipeline.methods.nanomemory:NanoMemoryMethod",
    "mem0": "lazymem.pipeline.methods.mem0:Mem0Method",
    "full": "lazymem.pipeline.methods.text:Full",
}


def method_names() -> tuple[str, ...]:
    """The registered method names, in registry order."""
    return tuple(REGISTRY)


def method_class(name: str) -> type[Method]:
    """The class registered under ``name`` (ConfigError naming the known ones otherwise)."""
    target = REGISTRY.get(name) if isinstance(name, str) else None
    if target is None:
        raise ConfigError(f"unknown method {name!r}; methods are {list(REGISTRY)}")
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Method)) or cls.name != name:
        raise ConfigError(f"method registry: {target} is not a Method subclass named {name!r}")
    return cls


def settings_classes() -> dict[str, type]:
    """Method name -> its settings dataclass (``Method.settings_class``), for the methods that have settings,
    in registry order: the sections of ``PipelineConfig`` (``pipeline.<name>``)."""
    classes = {name: method_class(name).settings_class for name in REGISTRY}
    return {name: cls for name, cls in classes.items() if cls is not None}


__all__ = ["REGISTRY", "Method", "MethodOutput", "method_class", "method_names", "settings_classes"]
