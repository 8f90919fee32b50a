"""Bad input never ends in a traceback: random mutations of valid LongMemEval / LoCoMo files give a
Dataset or a LoadError naming the file, random mutations of a valid recipe give a config or a
ConfigError, and the CLI turns bad paths, recipes and settings into a named error with exit 2."""

from __future__ import annotations

import copy
import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazymem.data import load_locomo, load_longmemeval
from lazymem.data.synthetic import generate_records
from lazymem.errors import LoadError

LME = generate_records(60, seed=3, n_histories=1, questions_per_history=6)
LOCOMO = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I got a puppy."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!"},
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is the puppy?"}],
        },
        "qa": [
            {"question": "What did Ann get?", "answer": "a puppy", "evidence": ["D1:1"], "category": 4},
            {"question": "When?", "answer": "May", "evidence": ["D1:1", "D2:1"], "category": 2},
        ],
    }
]

ODD_VALUES = [None, True, 0, -1, 1.5, "", "x", "\ud800", [], {}, [[]], {"a": None}, "D99:99", 10**30]


def _paths(obj, at=()):
    """Every (container path) in a JSON tree: where a mutation can land."""
    yield at
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, at + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, at + (i,))


def _mutate(doc, data):
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            key = path[-1]
            kind = data.draw(st.sampled_from(["delete", "replace", "wrap", "duplicate"]))
            if kind == "delete":
                del parent[key]
            elif kind == "replace":
                # a copy: the same [] or {} put in two places, then wrapped, would make a cycle
                parent[key] = copy.deepcopy(data.draw(st.sampled_from(ODD_VALUES)))
            elif kind == "wrap":
                parent[key] = [parent[key]]
            elif isinstance(parent, list):
                parent.append(copy.deepcopy(parent[key]))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the path
    return doc


def _write(tmp_path, doc, data):
    text = json.dumps(doc, ensure_ascii=True)  # lone surrogates survive as \ud800 escapes
    cut = data.draw(st.sampled_from(["none", "none", "truncate", "junk"]))
    if cut == "truncate":
        text = text[: data.draw(st.integers(0, max(len(text) - 1, 0)))]
    elif cut == "junk":
        i = data.draw(st.integers(0, len(text)))
        text = text[:i] + data.draw(st.sampled_from(["\x00", "}", "[[", "\\", "\udcff"])) + text[i:]
    path = tmp_path / "mutated.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


@pytest.mark.parametrize("loader, doc", [(load_longmemeval, LME), (load_locomo, LOCOMO)], ids=["longmemeval", "locomo"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_files_load_or_raise_a_named_error(tmp_path, loader, doc, data):
    path = _write(tmp_path, _mutate(doc, data), data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repaired / dropped evidence warns; that is a result, not a failure
        try:
            loader(path)
        except LoadError as e:
            assert str(path) in str(e)


def test_directory_deep_nesting_and_lone_surrogate_name_the_file(tmp_path):
    with pytest.raises(LoadError, match="is a directory"):
        load_longmemeval(tmp_path)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50000 + "]" * 50000)
    with pytest.raises(LoadError, match=r"deep\.json: nested deeper"):
        load_locomo(deep)
    lone = tmp_path / "lone.json"
    bad = copy.deepcopy(LOCOMO)
    bad[0]["conversation"]["session_1"][0]["text"] = "I got a \ud800 puppy."
    lone.write_text(json.dumps(bad))
    with pytest.raises(
        LoadError,
        match=r"lone\.json: record 0 \(sample_id 'conv-1'\), field conversation\.session_1\[0\]\.text: .*surrogate",
    ):
        load_locomo(lone)


def test_cli_reports_bad_paths_without_a_traceback(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "a_file"
    f.write_text("x")
    cases = [
        ["data", "summary", str(tmp_path)],  # a directory where a file is expected
        ["train", "sft", "--config", str(tmp_path)],
        ["train", "sft", "--config", str(f)],  # YAML that is a string, not a mapping
        ["notebooks", "run", "01_data", "--out-root", str(f / "sub")],
    ]  # a path inside a file
    for args in cases:
        r = subprocess.run([sys.executable, "-m", "lazymem.cli", *args], capture_output=True, text=True, timeout=300)
        assert r.returncode == 2, (args, r.stderr[-800:])
        assert "Traceback" not in r.stderr and "lazymem: error:" in r.stderr, (args, r.stderr[-800:])


# --- recipes: the config parser on random mutations of a valid recipe --------------------------------


def _recipe():
    from pathlib import Path

    import yaml

    return yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "eval" / "locomo_paper.yaml").read_text())


RECIPE = _recipe()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_recipes_parse_or_raise_a_named_error(tmp_path, data):
    import yaml

    from lazymem.errors import ConfigError
    from lazymem.eval import EvalConfig

    path = tmp_path / "recipe.yaml"
    text = yaml.safe_dump(_mutate(RECIPE, data), allow_unicode=True)
    cut = data.draw(st.sampled_from(["none", "none", "truncate"]))
    if cut == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        EvalConfig.from_yaml(path)
    except ConfigError:
        pass


@pytest.mark.parametrize(
    "recipe, sets, message",
    [
        ("- a\n- b\n", [], "mapping of keys.*got a list"),
        ("just text\n", [], "mapping of keys.*got a string"),
        ("", [], "empty"),
        ("pipeline: {method: rag\n  x: [", [], "not valid YAML"),
        ("dataset: synthetic:messages=60,seed=1\n", ["pipeline.window={w: ["], "override.*not valid YAML"),
        ("dataset: synthetic:messages=60,seed=1\n", ["pipeline.retrieval.device=cuda:7"], "no CUDA GPU"),
        (
            "dataset: synthetic:messages=60,seed=1\n",
            ["pipeline.answer.backend=transformers", "pipeline.answer.model=/no/such/model"],
            "no model directory",
        ),
    ],
)
def test_eval_recipe_errors_are_named_and_exit_2(tmp_path, capsys, recipe, sets, message):
    import re

    from lazymem.cli import main

    path = tmp_path / "r.yaml"
    path.write_text(recipe)
    argv = [
        "eval",
        str(path),
        "--out",
        str(tmp_path / "out"),
        "--limit",
        "1",
        "--set",
        "pipeline.method=rag",
        "--set",
        "pipeline.answer.backend=fake",
        "--set",
        "pipeline.answer.model=f",
    ]
    if not any("device" in s for s in sets):  # the device is checked when the encoder loads
        argv += ["--set", "pipeline.retrieval.dense_model=null"]
    for s in sets:
        argv += ["--set", s]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "lazymem: error:" in err and re.search(message, err, re.S), err[-600:]


def test_eval_cache_dir_that_is_a_file_is_a_named_error(tmp_path, capsys):
    from lazymem.cli import main

    f = tmp_path / "afile"
    f.write_text("x")
    path = tmp_path / "r.yaml"
    path.write_text(
        "dataset: synthetic:messages=60,seed=1,histories=1,questions=6\nlimit: 1\n"
        "pipeline: {method: rag, retrieval: {dense_model: null}, answer: {backend: fake, model: f}}\n"
    )
    assert main(["eval", str(path), "--out", str(tmp_path / "o"), "--set", f"pipeline.retrieval.cache_dir={f}"]) == 2
    assert "is a file, expected a directory" in capsys.readouterr().err
