"""Errors that say where bad input is: file, record and field."""
from __future__ import annotations


class LoadError(ValueError):
    """Bad input file: names the file, the record (index or id) and the field.

    >>> str(LoadError("a.json", "record 3 (id 'x')", "haystack_sessions[0][1].role", "missing"))
    "a.json: record 3 (id 'x'), field haystack_sessions[0][1].role: missing"
    >>> str(LoadError("a.json", None, None, "not valid JSON"))
    'a.json: not valid JSON'
    """

    def __init__(self, file: str, record: str | None, field: str | None, problem: str):
        self.file, self.record, self.field, self.problem = str(file), record, field, problem
        where = ", ".join(
            part for part in (record, f"field {field}" if field is not None else None) if part is not None
        )
        super().__init__(f"{self.file}: {where + ': ' if where else ''}{problem}")


class ConfigError(ValueError):
    """A configuration value that cannot work (names the field and what is allowed)."""


class ModelLoadError(RuntimeError):
    """A model that cannot load: it stops a run (it is not one question's error)."""


def check_fields(cls, values, where: str) -> None:
    """Raise ConfigError naming `where` when `values` has keys that are not fields of dataclass `cls`.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class C:
    ...     a: int = 0
    >>> check_fields(C, {"a": 1, "b": 2}, "C")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: C: unknown field(s) ['b']; known: ['a']
    """
    from dataclasses import fields

    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}; known: {sorted(known)}")
