"""Files written all at once, files hashed, JSON lines read: the one atomic writer, the one file
hash and the one JSON-lines reader.

``write_lines_atomic`` writes a temporary file beside the target, fsyncs it, renames it over
the target and fsyncs the folder, so a reader (or a crash) sees the old file or the new one,
never half of it. Run folders, the verbatim store, its audit log and training data use it.

``read_jsonl`` reads every JSON-lines file of the project (run records, error records, the
deletion log, bench records): lines end at "\\n" only, a torn last line (an append cut short by
a kill) is left out and reported, any other bad line is a LoadError naming file and line.

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
from pathlib import Path
from typing import Iterable, Sequence

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
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
            n += 1
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return n


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` all at once (a temporary file, fsynced, then renamed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_jsonl(path: str | os.PathLike, keys: Sequence[str] = (),
               what: str = "a JSON object") -> tuple[list[dict], bool]:
    r"""The JSON objects of a JSON-lines file, one a line, and whether a torn last line was left out.

    Lines end at "\n" only. ``str.splitlines`` would also end them at U+2028, U+2029 and U+0085,
    which JSON allows raw inside a string (``json.dumps(..., ensure_ascii=False)`` writes them so;
    pasted chat text holds them), and cut a valid record in two.
    Blank lines are skipped; a missing file reads as no lines. Every line must be a JSON object
    holding ``keys`` (``what`` names such a line in errors, e.g. "a question record").

    Only the last line may be bad: an append cut short by a kill (a writer that appends
    ``record + "\n"`` and fsyncs, like the eval runner). It is left out and the flag says so; so is
    a last line that parses but lacks its newline (its writer died before finishing it). A bad
    line anywhere else means the file was damaged or edited, and raises LoadError naming the
    file and the line rather than guessing.

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
        if i == last and (problem is not None or i == len(lines) - 1):
            return out, True  # cut off, or parsed yet its newline never made it: an unfinished append
        if problem is not None:
            raise LoadError(str(p), None, None, f"line {i + 1} is not {what} ({problem}); only a cut-off last "
                            "line is left out")
        out.append(value)
    return out, False


def _parse_line(line: bytes, keys: Sequence[str]) -> tuple[dict | None, str | None]:
    """(the object on one line, what is wrong with it: None when nothing)."""
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text: {e.reason} at byte {e.start}"
    except ValueError as e:
        return None, f"not valid JSON: {e}"
    except RecursionError:
        return None, "nested deeper than the JSON parser allows"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    missing = next((k for k in keys if k not in value), None)
    return (value, None) if missing is None else (None, f"field {missing} missing")
