"""LazyMem-135M's recipes (lazymem.notebooks.recipe): every step's config exists and parses with its overrides,
the steps that share one config file differ only in what their overrides say, and configs/recipes/ holds no
file that no step runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazymem.eval.config import apply_overrides
from lazymem.notebooks.recipe import ABLATION, GPU_VARIANTS, RECIPE, Step, run_recipe
from lazymem.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[1]
STEPS = (*RECIPE, *ABLATION)


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_every_step_config_exists_and_takes_its_overrides(step, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = apply_overrides(read_mapping(step.config), step.sets)
    for item in step.sets:
        key, value = item.split("=", 1)
        assert str(data[key]) == value  # an override names a key the runner reads
    assert step.command.startswith("lazymem ") and step.config in step.command


def test_steps_that_share_a_file_differ_only_in_overrides_and_write_their_own_output():
    names = [s.name for s in STEPS]
    assert len(set(names)) == len(names) and RECIPE[-1].name == "release"
    probes = [s for s in STEPS if s.kind == "keep-bias"]
    assert len({s.config for s in probes}) == 2 and len(probes) == 6  # the shipped model's and the ablation's
    outputs = [apply_overrides(read_mapping(ROOT / s.config), s.sets)["output"] for s in probes]
    assert len(set(outputs)) == len(outputs)  # no stage overwrites another's result
    # each keep-prior step chooses on its own model's development probes (never the LoCoMo ones) and reports
    # on its LoCoMo probe
    for prior in (s for s in STEPS if s.kind == "keep-prior"):
        own = [
            apply_overrides(read_mapping(ROOT / s.config), s.sets)
            for s in probes
            if Path(s.config).parent == Path(prior.config).parent
        ]
        choice, pairs = read_mapping(ROOT / prior.config), {p["output"]: p["pairs"] for p in own}
        assert set(choice["select"]) | set(choice["report"]) == set(pairs)
        assert not any("locomo_dev" in pairs[p] for p in choice["select"])
        assert all("locomo_dev" in pairs[p] for p in choice["report"])


def test_configs_recipes_holds_only_what_a_step_runs():
    """LazyMem-135M's recipes (the shipped model and its ablation) hold only configs a step of ``lazymem train
    recipe`` runs; the paper's and the quickstart recipes are loaded by tests/test_train.py."""
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "configs" / "recipes").glob("lazymem-135m*/*.yaml")}
    used = {s.config for s in STEPS}
    assert used <= files and files - used == set(GPU_VARIANTS)
    assert set(GPU_VARIANTS.values()) <= used


def test_a_finished_keep_prior_record_is_read_back_without_choosing_again(monkeypatch):
    import lazymem.train.prior as prior
    from lazymem.notebooks.recipe import run_step

    def refuse(*a, **k):
        raise AssertionError("chose again")

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(prior, "choose_keep_prior", refuse)
    for step in (s for s in STEPS if s.kind == "keep-prior"):
        rec = run_step(step.kind, read_mapping(step.config), step.config)
        assert rec["chosen"]["keep_prior"] in (3.0, 5.0) and rec["settings"]["dense_priors"] == [0.0]


def test_unknown_step_is_a_named_error():
    from lazymem.errors import ConfigError

    with pytest.raises(ConfigError, match="recipe step 'nope'"):
        run_recipe(only=("nope",))
    assert Step("x", "c.yaml", "eval-table").command == "lazymem eval-table --config c.yaml"
    from lazymem.notebooks.recipe import run_step

    with pytest.raises(ConfigError, match=r"p.yaml: unknown field\(s\) \['grid'\]"):
        run_step("keep-prior", {"select": ["a.json"], "out": "b.json", "grid": 3}, "p.yaml")


def test_release_from_outputs_that_link_to_the_shipped_files_copies_nothing(tmp_path):
    """The recipe's SFT outputs link to the package's weights, so a rerelease on a checkout rewrites the card only."""
    import json
    import os

    from lazymem.train.release import ReleaseConfig, ship

    asset = tmp_path / "asset"
    asset.mkdir()
    (asset / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (asset / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    final = tmp_path / "sft" / "final"
    final.mkdir(parents=True)
    for f in ("adapter_config.json", "adapter_model.safetensors"):
        os.symlink(os.path.relpath(asset / f, final), final / f)
    card = ship(
        ReleaseConfig(
            adapter=str(final),
            sft_data=str(tmp_path / "none.json"),
            sft_run=str(tmp_path / "sft"),
            window_table=None,
            pipeline_table=None,
            dest=str(asset),
            measure_load=False,
        )
    )
    assert card["adapter_bytes"] == 64 and card["stage"] == "sft" and (asset / "README.md").is_file()
    assert (final / "adapter_model.safetensors").is_symlink() and not (asset / "adapter_model.safetensors").is_symlink()
