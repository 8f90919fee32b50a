"""A new method with settings, added as docs/ARCHITECTURE.md says: the page's code is the whole recipe.

The toy ``first_k`` (the history's first k messages as the memory) is read from the page, registered
for one test at a time, run end to end through ``lazymem.eval.evaluate`` on the synthetic data set
with the fake backend, and every committed result stays fresh beside it.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from fakerun import FAKE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.errors import ConfigError
from lazymem.eval.config import EvalConfig, config_fingerprint, config_fingerprints, fingerprint_payload
from lazymem.pipeline import PipelineConfig
from lazymem.pipeline.methods import REGISTRY, method_class, method_names, settings_classes

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ARCHITECTURE.md"


def page_recipe() -> tuple[str, str, dict]:
    """The page's worked example: (the module's code, the target of its REGISTRY line, the recipe selecting it)."""
    text = DOC.read_text(encoding="utf-8")
    code = re.search(r"```python\n( *# lazymem/pipeline/methods/first_k\.py\n.*?)```", text, re.S)
    line = re.search(r'`"first_k": "([\w.:]+)",`', text)
    recipe = re.search(r"```yaml\n( *pipeline:\n *method: first_k\n.*?)```", text, re.S)
    assert code and line and recipe, f"{DOC} lost its worked example of adding a method"
    return textwrap.dedent(code[1]), line[1], yaml.safe_load(textwrap.dedent(recipe[1]))


def register_first_k(folder: Path, monkeypatch) -> type:
    """The page's module written to ``folder`` and its registry line (the module renamed: it lives outside the
    package); ``monkeypatch`` takes the line out again after the test."""
    code, target, _ = page_recipe()
    assert target == "lazymem.pipeline.methods.first_k:FirstK"
    (folder / "first_k_from_the_page.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "first_k_from_the_page", raising=False)
    monkeypatch.setitem(REGISTRY, "first_k", "first_k_from_the_page:FirstK")
    return method_class("first_k")


@pytest.fixture
def first_k(tmp_path, monkeypatch):
    yield register_first_k(tmp_path, monkeypatch)
    sys.modules.pop("first_k_from_the_page", None)


def test_the_pages_code_registers_a_method_whose_settings_are_its_section(first_k):
    assert method_names()[-1] == "first_k" and first_k.label == "First k messages"
    assert settings_classes()["first_k"] is first_k.settings_class
    assert PipelineConfig().first_k.k == 5  # every config holds its section, the defaults where it says nothing
    _, _, recipe = page_recipe()
    c = EvalConfig.from_dict({**recipe, "dataset": SYNTH})
    assert c.pipeline.method == "first_k" and c.pipeline.first_k.k == 3
    assert c.to_dict()["pipeline"]["first_k"] == {"k": 3} and EvalConfig.from_dict(c.to_dict()) == c
    with pytest.raises(ConfigError, match=r"pipeline.first_k: first_k.k=0: must be an integer >= 1"):
        PipelineConfig.from_dict({"method": "first_k", "first_k": {"k": 0}})
    with pytest.raises(ConfigError, match=r"pipeline.first_k: unknown field\(s\) \['n'\]"):
        PipelineConfig.from_dict({"first_k": {"n": 3}})


def test_its_settings_change_its_own_fingerprint_and_no_other_methods(tmp_path, monkeypatch):
    server = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}  # every method accepts it

    def fps(method: str, **pipeline) -> tuple[str, ...]:
        return config_fingerprints(
            EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": method, "mpm": server, **pipeline}})
        )

    before = {name: fps(name) for name in method_names()}
    register_first_k(tmp_path, monkeypatch)
    for name, fingerprints in before.items():  # every version, with the method registered and its k set
        assert fps(name) == fps(name, first_k={"k": 7}) == fingerprints, name
    assert fps("first_k", first_k={"k": 3}) != fps("first_k", first_k={"k": 4})  # where it acts, it counts
    hashed = fingerprint_payload(EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": "first_k"}}))
    assert set(hashed["pipeline"]) & set(settings_classes()) == {"first_k"}
    assert fingerprint_payload(EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": "first_k"}}), 2)[
        "pipeline"
    ]["first_k"] == {"k": 5}  # the older shapes hash it too, for its runs


def committed_cell_states(overrides: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """``cell_changes`` of every committed cell of every configs/tables/*.yaml (a cell with results), with
    ``overrides`` added to each cell's; cells whose data set is not on this machine are left out."""
    from lazymem.data import load_dataset
    from lazymem.eval.runfiles import RESULT_FILES
    from lazymem.eval.table import EvalTableConfig, cell_changes
    from lazymem.train.recipe import load_recipe

    states, datasets = {}, {}
    for path in sorted((REPO / "configs" / "tables").glob("*.yaml")):
        table = load_recipe(EvalTableConfig, path)
        for set_name in table.sets:
            for row in table.rows:
                folder = Path(table.output_dir) / set_name / row
                if not any((folder / n).exists() for n in RESULT_FILES):
                    continue  # configured, not run yet
                cfg = EvalConfig.from_yaml(table.base, [*table.cell_overrides(set_name, row), *overrides])
                key = (cfg.dataset, cfg.subset)
                if key not in datasets:
                    try:
                        datasets[key] = load_dataset(cfg.dataset, subset=cfg.subset)
                    except (OSError, ConnectionError):
                        datasets[key] = None
                if datasets[key] is not None:
                    states[f"{path.stem}/{set_name}/{row}"] = cell_changes(folder, cfg, datasets[key])
    return states


@pytest.mark.skipif(
    not (REPO.parent / "shared" / "data" / "locomo" / "locomo10.json").exists(),
    reason="the committed tables' LoCoMo data is not in ../shared/data on this machine",
)
def test_every_committed_result_stays_fresh_beside_a_new_method(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    before = committed_cell_states()
    register_first_k(tmp_path, monkeypatch)
    after = committed_cell_states(("pipeline.first_k.k=7",))  # registered, and its settings set in every cell
    stale = {cell: changes for cell, changes in after.items() if changes}
    assert before == after and not stale and len(after) >= 18, (len(after), stale)


def test_it_runs_end_to_end_on_the_synthetic_set(first_k, tmp_path):
    from lazymem.data import load_dataset
    from lazymem.eval import evaluate
    from lazymem.eval.attribution import attribute
    from lazymem.eval.table import cell_changes
    from lazymem.llm import FakeBackend

    _, _, recipe = page_recipe()
    recipe["pipeline"].update({"answer": FAKE, "retrieval": {"dense_model": None}})
    config = EvalConfig.from_dict({**recipe, "dataset": SYNTH, "limit": 3})
    ds = load_dataset(SYNTH)
    answer = FakeBackend(lambda prompt, sampling: "an answer")
    summary = evaluate(config, tmp_path / "run", progress=False, clients={"answer": answer}, dataset=ds)
    assert summary["counts"]["ok"] == 3
    for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines():
        rec = json.loads(line)
        q = next(x for x in ds.questions if x.id == rec["question_id"])
        first = ds.history(q).messages[:3]
        assert rec["method"] == "first_k" and rec["baseline"]["positions"] == [m.pos for m in first]
        assert all(m.text in rec["memory"] for m in first) and rec["answer"] == "an answer"
        m = rec["memory_measures"]
        assert m["evidence_match"] == "identity"  # asked the method for its positions
        assert m["evidence_recall"] == len({x.pos for x in first} & set(q.evidence)) / len(set(q.evidence))
        assert attribute(rec)["stage"] in (None, "QA error", "no gold evidence", "not in memory")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["pipeline"]["first_k"] == {"k": 3} and manifest["models"]["mpm"] is None
    assert cell_changes(tmp_path / "run", config, ds) == []  # a rerun reads it back
    other = EvalConfig.from_dict(
        {**recipe, "dataset": SYNTH, "limit": 3, "pipeline": {**recipe["pipeline"], "first_k": {"k": 4}}}
    )
    assert config_fingerprint(other) != config_fingerprint(config)
    assert cell_changes(tmp_path / "run", other, ds)[0].startswith("config_sha256")
