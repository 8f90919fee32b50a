"""Errors that say where bad input is: file, record and field; and the CLI's one line for each.

The project's own errors are LoadError (a bad input file), ConfigError (a bad config or flag
value) and ModelLoadError (a model that cannot load); with OSError and YAML errors they are
what ``error_message`` turns into one line for the CLI (exit 2). Anything else is a bug.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any


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


def int_at_least(low: int):
    """An argparse ``type=`` for integers >= `low` (argparse then exits 2 with a usage line).

    >>> int_at_least(1)("3")
    3
    >>> int_at_least(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 0 is not an integer >= 1
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is not an integer >= {low}")
        return value

    parse.__name__ = f"integer >= {low}"  # argparse names the type in its messages
    return parse


SEED_MAX = 2**32 - 1  # numpy's and torch's seeds are unsigned 32-bit integers


def int_in(low: int, high: int):
    """An argparse ``type=`` for integers in ``low..high`` (argparse then exits 2 naming the flag).

    Counts and sizes have an upper bound so that a mistyped value is refused at once, not a run that
    never ends; the text is checked for length before it is converted (a 5,000-digit number is refused
    as out of range, never a conversion error).

    >>> int_in(1, 1000)("3")
    3
    >>> int_in(1, 1000)("99999999999999999999")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer in 1..1000, got 99999999999999999999
    >>> int_in(0, 10)("x")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer in 0..10, got 'x'
    """

    def parse(text: str) -> int:
        value = _int_or_none(text)
        if value is None or not low <= value <= high:
            shown = text if value is not None else repr(text)
            raise argparse.ArgumentTypeError(f"must be an integer in {low}..{high}, got {_shorten(shown)}")
        return value

    parse.__name__ = f"integer in {low}..{high}"  # argparse names the type in its messages
    return parse


def ints_in(low: int, high: int, most: int = 64):
    """An argparse ``type=`` for a comma-separated list of 1..`most` integers, each in ``low..high``.

    >>> ints_in(1, 100)("1,10, 100")
    [1, 10, 100]
    >>> ints_in(1, 100)("5,0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be comma-separated integers in 1..100 (at most 64), got '5,0'
    """

    def parse(text: str) -> list[int]:
        parts = [x.strip() for x in str(text).split(",") if x.strip()]
        values = [_int_or_none(x) for x in parts]
        if not 1 <= len(values) <= most or any(v is None or not low <= v <= high for v in values):
            raise argparse.ArgumentTypeError(
                f"must be comma-separated integers in {low}..{high} (at most {most}), got {_shorten(repr(text))}"
            )
        return values

    parse.__name__ = f"integers in {low}..{high}"
    return parse


def float_in(low: float, high: float):
    """An argparse ``type=`` for finite numbers in ``low..high``.

    >>> float_in(0, 1)("0.5")
    0.5
    >>> float_in(0, 1)("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number in 0..1, got 'nan'
    """

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 64 else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:  # NaN fails every comparison
            raise argparse.ArgumentTypeError(f"must be a number in {low}..{high}, got {_shorten(repr(text))}")
        return value

    parse.__name__ = f"number in {low}..{high}"
    return parse


def path_text(text: str) -> str:
    """An argparse ``type=`` for a file or folder path: refuses "" (it would mean the working directory)
    and text with a NUL character (no file can have it).

    >>> path_text("runs/x")
    'runs/x'
    >>> path_text("")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a path, got an empty string (it would mean the working directory)
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a path, got an empty string (it would mean the working directory)")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"must be a path, got text with a NUL character: {_shorten(repr(text))}")
    return text


path_text.__name__ = "path"


def _int_or_none(text: str) -> int | None:
    """The integer `text` spells (at most 30 characters: no count needs more), else None."""
    text = str(text).strip()
    if len(text) > 30:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _shorten(text: str, most: int = 60) -> str:
    """`text`, cut to `most` characters with a note of its length (a message stays one short line)."""
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def error_message(e: BaseException) -> str | None:
    """The one-line message the CLI prints for the project's own errors; None for anything else (a bug).

    >>> error_message(ConfigError("EvalConfig.limit=-1: must be an integer >= 0"))
    'EvalConfig.limit=-1: must be an integer >= 0'
    >>> error_message(IsADirectoryError(21, "Is a directory", "runs/x"))
    'runs/x: is a directory (a file was expected)'
    >>> error_message(KeyError("status")) is None and error_message(ZeroDivisionError()) is None
    True
    """
    import errno

    if isinstance(e, (LoadError, ConfigError, ModelLoadError)):  # they name file, record and field
        return str(e)
    if isinstance(e, OSError):
        where = e.filename or ""
        what = {
            errno.EISDIR: "is a directory (a file was expected)",
            errno.ENOTDIR: "is not a directory (a folder was expected, or a path inside a file was given)",
            errno.EEXIST: "already exists and is not a directory",
            errno.ENOENT: "no such file or directory",
            errno.EACCES: "permission denied",
        }.get(e.errno, e.strerror or str(e))
        return f"{where}: {what}" if where else what
    try:
        import yaml
    except ImportError:  # pragma: no cover - pyyaml is a dependency
        return None
    if isinstance(e, yaml.YAMLError):
        return yaml_error_text(e)
    return None


def report_exception(e: Exception, prog: str) -> int:
    """Print a command's exception on stderr and return its exit status: 2 and one line
    (``prog: error: ...``) for the project's own errors (``error_message``), else 1 and the traceback
    (a bug). Lone surrogates from bad input ("\\ud800") are printed escaped, never a second crash."""
    import sys
    import traceback

    def say(text: str) -> None:
        enc = getattr(sys.stderr, "encoding", None) or "utf-8"
        print(text.encode(enc, "backslashreplace").decode(enc), file=sys.stderr)

    msg = error_message(e)
    if msg is None:
        say("".join(traceback.format_exception(e)).rstrip("\n"))
        say(f"{prog}: internal error (a bug, please report it with the traceback above): {type(e).__name__}: {e}")
        return 1
    say(f"{prog}: error: {msg}")
    return 2


def yaml_error_text(e: Exception, source: str | None = None) -> str:
    """A YAML error in one line: ``file:line:column: not valid YAML: problem (context)``.

    `source` names the file when the error's mark does not (YAML read from a string).

    >>> import yaml
    >>> try:
    ...     yaml.safe_load("a: 1\\nb: {c: [\\n")
    ... except yaml.YAMLError as e:
    ...     print(yaml_error_text(e, "r.yaml"))
    r.yaml:3:1: not valid YAML: expected the node content, but found '<stream end>' (while parsing a flow node)
    """
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or " ".join(str(e).split())
    context = getattr(e, "context", None)
    name = getattr(mark, "name", None)
    if name in ("<unicode string>", "<byte string>", "<file>", "<stdin>"):
        name = None
    where = source or name
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
        where = f"{where}:{line}:{column}" if where else f"line {line}, column {column}"
    text = f"not valid YAML: {problem}" + (f" ({context})" if context else "")
    return f"{where}: {text}" if where else text


def json_kind(v: Any) -> str:
    """What a JSON value is, for error messages.

    >>> [json_kind(v) for v in (None, [1], {}, "x", 3, True)]
    ['null', 'a list', 'an object', 'a string', 'a number', 'a boolean']
    """
    if v is None:
        return "null"
    for t, name in (
        (bool, "a boolean"),
        (str, "a string"),
        (Mapping, "an object"),
        (list, "a list"),
        ((int, float), "a number"),
    ):
        if isinstance(v, t):
            return name
    return f"a {type(v).__name__}"
