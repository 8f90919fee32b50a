"""Read a YAML recipe file as a mapping, turning every way it can be bad into a ConfigError naming it.

One reader for every recipe (``lazymem eval``, ``lazymem train``, pipeline configs): a missing
file, a directory, malformed YAML (one line: ``file:line:column: not valid YAML: problem``), an
empty file (it would silently run every default) and a top level that is not a mapping (a list,
a string) are errors, never tracebacks.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "r.yaml")
>>> _ = open(p, "w").write("- a\\n- b\\n")
>>> read_mapping(p)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lazymem.errors.ConfigError: ...r.yaml: a recipe is a mapping of keys (key: value lines), got a list
>>> _ = open(p, "w").write("a: 1\\nb: [2\\n")
>>> read_mapping(p)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lazymem.errors.ConfigError: ...r.yaml:3:1: not valid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence)
"""  # noqa: E501  (a doctest's expected output is one line)

from __future__ import annotations

import os
from pathlib import Path

from lazymem.errors import ConfigError, yaml_error_text


def read_mapping(path: str | os.PathLike, what: str = "recipe", allow_empty: bool = False) -> dict:
    """The YAML file's top-level mapping; ConfigError naming the file otherwise."""
    import yaml

    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, expected a YAML {what} file")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read the {what}: {getattr(e, 'strerror', None) or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:  # one line: file:line:column: problem
        raise ConfigError(yaml_error_text(e, str(p))) from None
    except RecursionError:
        raise ConfigError(f"{p}: not valid YAML: nested too deeply to read") from None
    if data is None:
        if allow_empty:
            return {}
        raise ConfigError(
            f"{p}: the {what} is empty (it would silently run every default); write the keys "
            "you mean, e.g. `dataset: ...`"
        )
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string"}.get(type(data), type(data).__name__)
        raise ConfigError(f"{p}: a {what} is a mapping of keys (key: value lines), got {kind}")
    if (bad := _unencodable(data)) is not None:
        raise ConfigError(
            f"{p}: field {bad or '(a key)'}: text that is not valid Unicode (a lone surrogate such as "
            "\\ud800, from a YAML escape): it could not be written to any record"
        )
    return data


def _unencodable(obj, at: str = "") -> str | None:
    """The dotted path of the first string (key or value) that UTF-8 cannot encode, else None.

    >>> _unencodable({"a": {"b": ["ok", "\\ud800"]}})
    'a.b[1]'
    >>> _unencodable({"a": 1}) is None
    True
    """
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return at
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            where = f"{at}.{k}" if at else str(k)
            if (bad := _unencodable(k, where)) is not None or (bad := _unencodable(v, where)) is not None:
                return bad
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if (bad := _unencodable(v, f"{at}[{i}]")) is not None:
                return bad
    return None
