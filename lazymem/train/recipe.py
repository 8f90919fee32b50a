"""Training recipes as YAML: one frozen dataclass per stage, the same keys in ``configs/recipes/<model>/<stage>.yaml``.

Nested sections (``lora:``, ``judge:``) become their dataclasses; unknown keys and wrong
types are ConfigErrors naming the file and the field; ``lora: null`` means full fine-tuning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from lazymem.fields import build_recipe

T = TypeVar("T")


def load_recipe(cls: type[T], path: str | Path, nested: Mapping[str, type] | None = None) -> T:
    """Read a YAML recipe file into ``cls``."""
    from lazymem.yamlio import read_mapping

    return build_recipe(cls, read_mapping(path), str(path), nested)


OMIT_WHEN_NONE = "omit_when_none"  # field metadata: a key added later, left out of records while unset


def recipe_dict(recipe: Any) -> dict:
    """A recipe as plain JSON-ready values (for run records).

    Fields marked ``OMIT_WHEN_NONE`` are left out while None, so a finished run recorded before
    they existed still matches its recipe (``finished_result``) and is not trained again.
    """
    d = dataclasses.asdict(recipe)
    for f in dataclasses.fields(recipe):
        if f.metadata.get(OMIT_WHEN_NONE) and d.get(f.name) is None:
            del d[f.name]
    return d
