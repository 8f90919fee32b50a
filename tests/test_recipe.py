"""LazyMem-135M's recipe list (lazymem.notebooks.recipe): every step's config exists and parses with its
overrides, and the stages that share one config file differ only in what their overrides say."""
from __future__ import annotations

from pathlib import Path

import pytest

from lazymem.eval.config import apply_overrides
from lazymem.notebooks.recipe import RECIPE, Step, run_recipe
from lazymem.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("step", RECIPE, ids=lambda s: s.name)
def test_every_step_config_exists_and_takes_its_overrides(step, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = apply_overrides(read_mapping(step.config), step.sets)
    for item in step.sets:
        key, value = item.split("=", 1)
        assert str(data[key]) == value  # an override names a key the runner reads
    assert step.command.startswith("lazymem ") and step.config in step.command


def test_keep_bias_stages_share_one_file_and_write_their_own_output():
    steps = [s for s in RECIPE if s.kind == "keep-bias"]
    v1 = [s for s in steps if not s.name.startswith("v2-")]  # v1's stages share keep_bias.yaml; v2 has its own
    assert len({s.config for s in v1}) == 1 and len(v1) >= 5 and len(steps) > len(v1)
    outputs = [apply_overrides(read_mapping(ROOT / s.config), s.sets)["output"] for s in steps]
    assert len(set(outputs)) == len(outputs)  # no stage overwrites another's result


def test_unknown_step_is_a_named_error():
    from lazymem.errors import ConfigError

    with pytest.raises(ConfigError, match="recipe step 'nope'"):
        run_recipe(only=("nope",))
    assert Step("x", "c.yaml", "eval-table").command == "lazymem eval-table --config c.yaml"
