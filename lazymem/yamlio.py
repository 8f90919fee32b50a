"""Read a YAML recipe file as a mapping, turning every way it can be bad into a ConfigError naming it.

One reader for every recipe (``lazymem eval``, ``lazymem train``, pipeline configs): a missing
file, a directory, malformed YAML (one line: ``file:line:column: not valid YAML: problem``), an
empty file (it would silently run every default) and a top level that is not a mapping (a list,
a string) are errors, never tracebacks.

Every YAML text the project reads goes through ``load_yaml``: it composes the document, refuses a
recursive alias (``a: &a [*a]``) and aliases that expand past ``MAX_EXPANDED_NODES`` values (a
"billion laughs" tree of shared lists), and only then builds the Python values, so no later walk
over the values can loop or explode.

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
>>> load_yaml("a: &a [*a]", "r.yaml")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lazymem.errors.ConfigError: r.yaml:1:8: not valid YAML: the alias *a is used inside the value it names ...
"""  # noqa: E501  (a doctest's expected output is one line)

from __future__ import annotations

import functools
import os
from pathlib import Path

from lazymem.errors import ConfigError, yaml_error_text

# Values a document may hold once every alias (*name) is expanded: far above any recipe, far below
# what makes a walk over the values slow.
MAX_EXPANDED_NODES = 100_000


def read_mapping(path: str | os.PathLike, what: str = "recipe", allow_empty: bool = False) -> dict:
    """The YAML file's top-level mapping; ConfigError naming the file otherwise."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, expected a YAML {what} file")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read the {what}: {getattr(e, 'strerror', None) or e}") from None
    data = load_yaml(text, str(p))
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


def load_yaml(text: str, source: str | None = None):
    """The Python value of one YAML document (None when empty); ConfigError naming `source` (a file, or
    what the text is) when the text is not valid YAML, nests too deeply, holds a recursive alias or
    expands past MAX_EXPANDED_NODES values.

    >>> load_yaml("a: &x [1, 2]\\nb: *x", "r.yaml")
    {'a': [1, 2], 'b': [1, 2]}
    >>> load_yaml("", "r.yaml") is None
    True
    >>> load_yaml("[1, 2")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: line 1, column 6: not valid YAML: expected ',' or ']', ...
    """
    import yaml

    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, source)
        return loader.construct_document(node)
    except yaml.YAMLError as e:  # one line: file:line:column: problem
        raise ConfigError(yaml_error_text(e, source)) from None
    except RecursionError:
        raise ConfigError(_located(source, "not valid YAML: nested too deeply to read")) from None
    finally:
        loader.dispose()


def _located(source: str | None, problem: str) -> str:
    """``source: problem``, or the problem alone when the text has no name."""
    return f"{source}: {problem}" if source else problem


@functools.lru_cache(maxsize=1)
def _loader_class():
    """yaml.SafeLoader whose composer refuses an alias used inside the value it names (``a: &a [*a]``)."""
    import yaml
    from yaml.composer import ComposerError

    class BoundedLoader(yaml.SafeLoader):
        """SafeLoader that remembers which anchored values are finished and refuses an alias to one that is not."""

        def __init__(self, stream):
            super().__init__(stream)
            self._finished: set[int] = set()  # id() of the anchored nodes composed to their end

        def compose_node(self, parent, index):
            """Compose one node; an alias to an anchored value still being composed is a recursive alias."""
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                target = self.anchors.get(event.anchor)
                if target is not None and id(target) not in self._finished:
                    raise ComposerError(
                        None,
                        None,
                        f"the alias *{event.anchor} is used inside the value it names (a recursive alias); "
                        "a recipe must be a tree: write the value out instead",
                        event.start_mark,
                    )
                return super().compose_node(parent, index)
            anchored = self.peek_event().anchor is not None
            node = super().compose_node(parent, index)
            if anchored:
                self._finished.add(id(node))
            return node

    return BoundedLoader


def _check_expansion(root, source: str | None) -> None:
    """ConfigError naming `source` when the composed document, its aliases expanded, holds more than
    MAX_EXPANDED_NODES values, or (defensively) a node inside itself. Shared nodes are sized once, so
    the check is linear in the text, however many times the aliases multiply it.

    >>> import yaml
    >>> _check_expansion(yaml.compose("a: [1, 2]"), "r.yaml")
    >>> laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\\n" + "".join(
    ...     f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\\n" for p, n in zip("abcd", "bcde"))
    >>> _check_expansion(yaml.compose(laughs), "r.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: r.yaml: not valid YAML: its aliases (*name) expand to more than 100000 values; ...
    """
    sizes: dict[int, int] = {}  # id(node) -> values under it, itself included, aliases expanded
    on_path = {id(root)}
    stack = [[root, iter(_children(root)), 1]]  # [node, its children still to visit, its size so far]
    while stack:
        frame = stack[-1]
        child = next(frame[1], None)
        if child is None:
            stack.pop()
            on_path.discard(id(frame[0]))
            sizes[id(frame[0])] = frame[2]
            if stack:
                stack[-1][2] += frame[2]
                _within_bound(stack[-1][2], source)
        elif id(child) in sizes:  # an alias to a node already sized
            frame[2] += sizes[id(child)]
            _within_bound(frame[2], source)
        elif id(child) in on_path:
            raise ConfigError(_located(source, "not valid YAML: an alias (*name) is used inside the value it names"))
        else:
            on_path.add(id(child))
            stack.append([child, iter(_children(child)), 1])


def _within_bound(size: int, source: str | None) -> None:
    """ConfigError naming `source` when `size` values exceed MAX_EXPANDED_NODES."""
    if size > MAX_EXPANDED_NODES:
        raise ConfigError(
            _located(
                source,
                f"not valid YAML: its aliases (*name) expand to more than {MAX_EXPANDED_NODES} values; "
                "a recipe that large is a mistake: write the values out, or use fewer aliases",
            )
        )


def _children(node) -> list:
    """The nodes directly under a composed YAML node (a mapping's keys and values, a sequence's items)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


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
