"""Read a YAML recipe file as a mapping, turning every way it can be bad into a ConfigError naming it.

One reader for every recipe (``lazymem eval``, ``lazymem train``, pipeline configs): a missing
file, a directory, malformed YAML, an empty file (it would silently run every default) and a
top level that is not a mapping (a list, a string) are errors, never tracebacks.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "r.yaml")
>>> _ = open(p, "w").write("- a\\n- b\\n")
>>> read_mapping(p)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lazymem.errors.ConfigError: ...r.yaml: a recipe is a mapping of keys (key: value lines), got a list
"""
from __future__ import annotations

import os
from pathlib import Path

from lazymem.errors import ConfigError


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
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    if data is None:
        if allow_empty:
            return {}
        raise ConfigError(f"{p}: the {what} is empty (it would silently run every default); write the keys "
                          "you mean, e.g. `dataset: ...`")
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string"}.get(type(data), type(data).__name__)
        raise ConfigError(f"{p}: a {what} is a mapping of keys (key: value lines), got {kind}")
    return data
