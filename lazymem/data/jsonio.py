"""Read a benchmark JSON file into Python objects, turning every way it can be bad into a LoadError.

Missing file, a directory, unreadable bytes, non-UTF-8 text, malformed or truncated JSON,
nesting deeper than the parser's recursion limit, and lone UTF-16 surrogates (``"\\ud800"``
escapes: valid JSON, but no UTF-8 text can hold them) each get an error naming the file and,
for surrogates, where in the document.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "deep.json")
>>> _ = open(p, "w").write("[" * 100000 + "]" * 100000)
>>> read_json(p)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lazymem.errors.LoadError: ...deep.json: nested deeper than the JSON parser allows (more than ~1000 levels of [ or {)
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from lazymem.errors import LoadError


def read_json(path: str | Path) -> tuple[Any, str]:
    """(the parsed document, the sha256 of its bytes); LoadError naming the file on any bad input."""
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
        obj = json.loads(data)
    except json.JSONDecodeError as e:
        raise LoadError(file, None, None, f"not valid JSON (truncated or malformed?): {e.msg} at line {e.lineno} "
                        f"column {e.colno} (char {e.pos} of {len(data)})") from None
    except UnicodeDecodeError as e:
        raise LoadError(file, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except RecursionError:
        raise LoadError(file, None, None, "nested deeper than the JSON parser allows (more than ~1000 levels "
                        "of [ or {)") from None
    where = _surrogate_path(obj)
    if where is not None:
        raise LoadError(file, None, where, "holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its "
                        "pair): not representable as UTF-8 text")
    return obj, hashlib.sha256(data).hexdigest()


def _surrogate_path(obj: Any, where: str = "$") -> str | None:
    """JSONPath-like location of the first string (value or key) holding a lone surrogate, else None.

    >>> _surrogate_path({"a": [1, "ok", "bad\\ud800"]})
    '$.a[2]'
    """
    stack = [(obj, where)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, str):
            if not _utf8(value):
                return at
        elif isinstance(value, dict):
            for k, v in reversed(list(value.items())):
                if not _utf8(k):
                    return f"{at} (a key)"
                stack.append((v, f"{at}.{k}"))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(value))))
    return None


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
