"""The one home of file I/O: files written all at once, files hashed, JSON and JSON lines read and written.

``write_lines_atomic`` writes a temporary file beside the target, fsyncs it, renames it over
the target and fsyncs the folder, so a reader (or a crash) sees the old file or the new one,
never half of it. Run folders, the verbatim store, its audit log and training data use it;
``write_jsonl`` and ``write_json`` are it for JSON lines and one JSON document.

``read_jsonl`` reads every JSON-lines file of the project (run records, error records, the
deletion log, bench records): lines end at "\\n" only, a torn last line (an append cut short by
a kill) is left out and reported, any other bad line is a LoadError naming file and line.

``read_json`` reads a benchmark JSON file (LongMemEval, LoCoMo, a run manifest), turning every
way it can be bad into a LoadError: missing file, a directory, unreadable bytes, non-UTF-8 text,
malformed or truncated JSON, nesting deeper than the parser's recursion limit, and lone UTF-16
surrogates (``"\\ud800"`` escapes: valid JSON, but no UTF-8 text can hold them).

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
>>> write_lines_atomic(p, ["one", "two"])
2
>>> open(p).read(), sha256_file(p)[:12]
('one\\ntwo\\n', 'c3f9c8c283a2')
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lazymem.errors import LoadError


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    """fsync a folder so a rename inside it survives a crash (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_lines_atomic(path: str | os.PathLike, lines: Iterable[str]) -> int:
    """Replace ``path`` with these lines, each ended by a newline, all at once; returns the line count."""

    def write(f) -> int:
        n = 0
        for line in lines:
            f.write(line + "\n")
            n += 1
        return n

    return _write_then_replace(Path(path), write)


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` all at once (a temporary file, fsynced, then renamed).

    A target that cannot be replaced (a directory, say) leaves no temporary file behind, and the
    error names the target:

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); target = os.path.join(d, "out.json"); os.mkdir(target)
    >>> write_atomic(target, "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IsADirectoryError: [Errno 21] Is a directory: '...out.json'
    >>> os.listdir(d)
    ['out.json']
    """
    _write_then_replace(Path(path), lambda f: f.write(text))


def _write_then_replace(path: Path, write) -> Any:
    """Call ``write(file)`` on a temporary file beside `path`, fsync it and rename it over `path`;
    returns what ``write`` returned. On any failure the temporary file is removed and an OSError
    names `path` (what the caller asked for), never the temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            result = write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(e, OSError) and e.filename == str(tmp):
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    fsync_dir(path.parent)
    return result


def write_jsonl(path: str | os.PathLike, rows: Iterable[Mapping]) -> int:
    """Replace ``path`` with one JSON object a line (UTF-8 kept as is), all at once; returns the row count.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "r.jsonl")
    >>> write_jsonl(p, [{"q": "café"}, {"q": 2}]), open(p, encoding="utf-8").read()
    (2, '{"q": "café"}\\n{"q": 2}\\n')
    """
    return write_lines_atomic(path, (json.dumps(row, ensure_ascii=False) for row in rows))


def print_json(obj: Any) -> None:
    """``obj`` on standard output as indented JSON (UTF-8 kept as is; what JSON cannot hold, as text):
    what every ``--json`` flag of the command line prints."""
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def write_json(path: str | os.PathLike, obj: Any, indent: int = 1, **dumps: Any) -> None:
    """Replace ``path`` with ``obj`` as indented JSON and a final newline, all at once.

    ``dumps`` passes on to ``json.dumps`` (``default=str``, ``ensure_ascii=False``, ...).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "s.json")
    >>> write_json(p, {"n": 1}); open(p).read()
    '{\\n "n": 1\\n}\\n'
    """
    write_atomic(path, json.dumps(obj, indent=indent, **dumps) + "\n")


def read_jsonl(
    path: str | os.PathLike, keys: Sequence[str] = (), what: str = "a JSON object"
) -> tuple[list[dict], bool]:
    r"""The JSON objects of a JSON-lines file, one a line, and whether a torn last line was left out.

    Lines end at "\n" only. ``str.splitlines`` would also end them at U+2028, U+2029 and U+0085,
    which JSON allows raw inside a string (``json.dumps(..., ensure_ascii=False)`` writes them so;
    pasted chat text holds them), and cut a valid record in two.
    Blank lines are skipped; a missing file reads as no lines. Every line must be a JSON object
    holding ``keys`` (``what`` names such a line in errors, e.g. "a question record").

    Only the last line may be unfinished: an append cut short by a kill (a writer that appends
    ``record + "\n"`` and fsyncs, like the eval runner) lacks its newline, whether or not what
    made it parses. It is left out and the flag says so. A bad line anywhere else, a finished last
    line included, means the file was damaged or edited, and raises LoadError naming the file and
    the line rather than guessing (and rather than dropping it on the next rewrite).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "r.jsonl")
    >>> _ = open(p, "w", encoding="utf-8").write('{"q": "a\u2028b"}\n{"q": "c"}\n{"q": "d')
    >>> read_jsonl(p)
    ([{'q': 'a\u2028b'}, {'q': 'c'}], True)
    >>> _ = open(p, "w").write('{"q": 1}\nnot json\n{"q": 2}\n')
    >>> read_jsonl(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: ...r.jsonl: line 2 is not a JSON object (...); only a cut-off last line is left out
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return [], False
    lines = data.split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    out: list[dict] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        value, problem = _parse_line(line, keys)
        if i == last and i == len(lines) - 1:
            return out, True  # its newline never made it: an unfinished append, cut off or not
        if problem is not None:
            raise LoadError(
                str(p), None, None, f"line {i + 1} is not {what} ({problem}); only a cut-off last line is left out"
            )
        out.append(value)
    return out, False


def _parse_line(line: bytes, keys: Sequence[str]) -> tuple[dict | None, str | None]:
    """(the object on one line, what is wrong with it: None when nothing)."""
    try:
        value = json.loads(line.decode("utf-8"), parse_int=_bounded_int)
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text: {e.reason} at byte {e.start}"
    except ValueError as e:
        return None, f"not valid JSON: {e}"
    except RecursionError:
        return None, "nested deeper than the JSON parser allows"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    big = next((at for v, at in _walk(value) if isinstance(v, OutOfRangeInt)), None)
    if big is not None:
        return None, f"field {big}: an integer beyond the 64-bit range (-2**63..2**63-1)"
    missing = next((k for k in keys if k not in value), None)
    return (value, None) if missing is None else (None, f"field {missing} missing")


def read_json(path: str | Path) -> tuple[Any, str]:
    """(the parsed document, the sha256 of its bytes); LoadError naming the file on any bad input.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "deep.json")
    >>> _ = open(p, "w").write("[" * 100000 + "]" * 100000)
    >>> read_json(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: ...deep.json: nested deeper than the JSON parser allows (more than ~1000 levels of [ or {)
    """
    p = Path(path).expanduser()
    file = str(p)
    if p.is_dir():
        raise LoadError(file, None, None, "is a directory, expected a JSON file")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise LoadError(file, None, None, "no such file") from None
    except OSError as e:
        raise LoadError(file, None, None, f"cannot be read: {e.strerror or e}") from None
    try:
        obj = json.loads(data, parse_int=_bounded_int)
    except json.JSONDecodeError as e:
        raise LoadError(
            file,
            None,
            None,
            f"not valid JSON (truncated or malformed?): {e.msg} at line {e.lineno} "
            f"column {e.colno} (char {e.pos} of {len(data)})",
        ) from None
    except UnicodeDecodeError as e:
        raise LoadError(file, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except RecursionError:
        raise LoadError(
            file, None, None, "nested deeper than the JSON parser allows (more than ~1000 levels of [ or {)"
        ) from None
    found = _bad_value(obj)
    if found is not None:
        where, problem = found
        record, field = _record_and_field(obj, where)
        raise LoadError(file, record, field, problem)
    return obj, hashlib.sha256(data).hexdigest()


INT_LIMIT = 2**63  # integers in data files lie in -2**63..2**63-1 (64-bit); beyond is a mistake, never a count


class OutOfRangeInt(str):
    """Where JSON held an integer beyond INT_LIMIT: its text (the parser keeps it, the load refuses it)."""


def _bounded_int(text: str) -> int | OutOfRangeInt:
    """``json.loads``'s ``parse_int``: the integer, or OutOfRangeInt for one beyond 64 bits (a 5,000-digit
    number would otherwise stop the parser with a bare ValueError, Python's int-string limit).

    >>> _bounded_int("-12"), type(_bounded_int("9" * 5000)).__name__
    (-12, 'OutOfRangeInt')
    """
    if len(text) > 20:
        return OutOfRangeInt(text)
    value = int(text)
    return value if -INT_LIMIT <= value < INT_LIMIT else OutOfRangeInt(text)


def _record_and_field(obj: Any, where: str) -> tuple[str | None, str]:
    """Split a JSONPath-like location into (the record, the field) when the document is a list of records.

    >>> _record_and_field([{}, {"sample_id": "conv-26"}], "$[1].qa[0].answer")
    ("record 1 (sample_id 'conv-26')", 'qa[0].answer')
    >>> _record_and_field({}, "$.a")
    (None, '$.a')
    """
    if isinstance(obj, list) and where.startswith("$["):
        index, _, rest = where[2:].partition("]")
        record = obj[int(index)]
        key = next((k for k in RECORD_ID_KEYS if isinstance(record, dict) and isinstance(record.get(k), str)), None)
        named = f" ({key} {record[key]!r})" if key else ""
        return f"record {index}{named}", rest.lstrip(".") or "(the record itself)"
    return None, where


RECORD_ID_KEYS = ("question_id", "sample_id", "id")  # what names a record of LongMemEval, LoCoMo, others


def _bad_value(obj: Any) -> tuple[str, str] | None:
    """(JSONPath-like location, problem) of the first value that cannot be data: a string (value or key)
    holding a lone surrogate, or an integer beyond 64 bits; None when every value is fine.

    >>> _bad_value({"a": [1, "ok", "bad\\ud800"]})[0]
    '$.a[2]'
    """
    for value, at in _walk(obj):
        if isinstance(value, OutOfRangeInt):
            return at, (
                f"an integer of {len(value.lstrip('-'))} digits, beyond the 64-bit range "
                f"(-2**63..2**63-1) that data files may hold; fix the value (write it as a string if it is an id)"
            )
        if isinstance(value, str) and not _utf8(value):
            return at, (
                "holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its "
                "pair): not representable as UTF-8 text"
            )
    return None


def _walk(obj: Any, where: str = "$"):
    """Every value and key under `obj`, depth first, with its JSONPath-like location (a key's: "(a key)")."""
    stack = [(obj, where)]
    while stack:
        value, at = stack.pop()
        yield value, at
        if isinstance(value, dict):
            for k, v in reversed(list(value.items())):
                yield k, f"{at} (a key)"
                stack.append((v, f"{at}.{k}"))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(value))))


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
