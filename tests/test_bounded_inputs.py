"""Hostile inputs are refused at once with one line naming the file, record and field: YAML aliases that
loop or explode, counts far beyond any real run, oversized integers in data, an unreadable tokenizer,
a folder that is not a model, a directory given as an output file, and empty path flags."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazymem.cli import build_parser, main
from lazymem.errors import ConfigError, LoadError, ModelLoadError

BIG = "99999999999999999999"
SYNTHETIC = "synthetic:messages=40,seed=0,histories=2,questions=4"
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi")
)


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail the test (instead of hanging it) when the block runs longer than `seconds`."""

    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: the input was not refused at once")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    """(exit status, stderr) of ``lazymem ARGS`` run in this process; argparse's exits count as statuses."""
    try:
        code = main(args)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


# --- YAML: recursive aliases and alias bombs -----------------------------------------------------------


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n", "pipeline: &p\n  x: [1, *p]\n"])
def test_recursive_yaml_alias_is_a_config_error_naming_the_file(tmp_path, text):
    from lazymem.eval.config import EvalConfig
    from lazymem.yamlio import read_mapping

    path = tmp_path / "loop.yaml"
    path.write_text(text)
    with deadline(10):
        with pytest.raises(ConfigError, match=r"loop\.yaml:\d+:\d+: .*recursive alias"):
            read_mapping(path)
        with pytest.raises(ConfigError, match="loop.yaml"):
            EvalConfig.from_yaml(path)


def test_yaml_alias_bomb_is_refused_at_once_by_the_cli(tmp_path, capsys):
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)
    with deadline(10):
        code, err = run_cli(["eval", str(path), "--print-config"], capsys)
    assert code == 2
    assert f"{path}: not valid YAML: its aliases (*name) expand to more than" in err
    assert "Traceback" not in err


def test_a_recipe_may_still_share_values_with_aliases(tmp_path):
    from lazymem.yamlio import read_mapping

    path = tmp_path / "shared.yaml"
    path.write_text("base: &b {n: 20, w: 2}\nother: *b\nmerged: {<<: *b, w: 3}\n")
    assert read_mapping(path) == {"base": {"n": 20, "w": 2}, "other": {"n": 20, "w": 2}, "merged": {"n": 20, "w": 3}}


def test_every_yaml_reader_refuses_alias_bombs(tmp_path):
    from lazymem.eval.config import apply_overrides
    from lazymem.notebooks.params import load_grid
    from lazymem.train.sft_data import SFTDataConfig

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(LAUGHS)
    with deadline(10):
        with pytest.raises(ConfigError, match="bomb.yaml"):
            load_grid(bomb)
        with pytest.raises(ConfigError, match="bomb.yaml"):
            SFTDataConfig.from_yaml(str(bomb))
        with pytest.raises(ConfigError, match="override 'limit=&a .*recursive alias"):
            apply_overrides({}, ["limit=&a [*a]"])


def test_no_module_reads_yaml_around_the_bounded_loader():
    """Every YAML text goes through lazymem.yamlio (yaml.safe_load would skip the alias bounds)."""
    root = Path(__file__).resolve().parents[1] / "lazymem"
    allowed = {"yamlio.py", "errors.py"}  # errors.py: a doctest
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name not in allowed and any(f"yaml.{fn}(" in p.read_text() for fn in ("safe_load", "load", "full_load"))
    ]
    assert offenders == []


# --- counts and seeds: checked at parse time -----------------------------------------------------------


@pytest.mark.parametrize(
    "args, flag",
    [
        (["bench", "retrieval", "--sizes", BIG], "--sizes"),
        (["bench", "retrieval", "--sizes", "1000," + "9" * 5000], "--sizes"),
        (["bench", "retrieval", "--n-queries", BIG], "--n-queries"),
        (["bench", "retrieval", "--max-embed-messages", "-1"], "--max-embed-messages"),
        (["bench", "embedding", "--batch-sizes", "0"], "--batch-sizes"),
        (["perturb", "run", "--draws", BIG], "--draws"),
        (["perturb", "run", "--seed", "-1"], "--seed"),
        (["eval", "--seed", "-1"], "--seed"),
        (["eval", "--limit", BIG], "--limit"),
        (["data", "split", SYNTHETIC, "--seed", BIG], "--seed"),
        (["coverage", SYNTHETIC, "--w", "0,1,99999"], "--w"),
        (["coverage", SYNTHETIC, "--n", "0"], "--n"),
        (["retrieve", SYNTHETIC, "--question", "q", "--rrf-k", "nan"], "--rrf-k"),
        (["report", "run", "--resamples", "0"], "--resamples"),
        (["demo", "--questions", BIG], "--questions"),
        (["notebooks", "run", "--max-parallel", "0"], "--max-parallel"),
        (["fusion-tuning", SYNTHETIC, "--w", "0,1," + BIG], "--w"),
        (["fusion-tuning", SYNTHETIC, "--rrf-k", "10,-1"], "--rrf-k"),
        (["fusion-tuning", SYNTHETIC, "--weights", "1:2,3"], "--weights"),
        (["fusion-tuning", SYNTHETIC, "--depths", "50,0"], "--depths"),
    ],
)
def test_counts_beyond_their_range_are_refused_at_parse_time(args, flag, capsys):
    with deadline(10):
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: must be " in err and " in " in err, err


def _numeric_flags_without_range(parser: argparse.ArgumentParser, where: str = "lazymem") -> list[str]:
    """Flags of `parser` and its subparsers whose type is a bare int or float (no range)."""
    out = []
    for action in parser._actions:
        if action.type in (int, float):
            out.append(f"{where} {'/'.join(action.option_strings) or action.dest}")
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _numeric_flags_without_range(sub, f"{where} {name}")
    return out


def test_every_numeric_flag_has_a_range():
    assert _numeric_flags_without_range(build_parser()) == []


def test_config_seed_out_of_range_is_a_config_error():
    from lazymem.eval.config import EvalConfig

    with pytest.raises(ConfigError, match=r"EvalConfig.seed=-1: must be an integer in 0\.\.4294967295"):
        EvalConfig(seed=-1)


# --- empty path flags ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, flag",
    [
        (["eval", "--cache-dir", ""], "--cache-dir"),
        (["eval", "--out", ""], "--out"),
        (["coverage", SYNTHETIC, "--cache-dir", ""], "--cache-dir"),
        (["coverage", SYNTHETIC, "--out", ""], "--out"),
        (["bench", "retrieval", "--out", ""], "--out"),
        (["perturb", "run", "--out", " "], "--out"),
    ],
)
def test_empty_path_flags_are_refused_at_parse_time(args, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(args)
    assert exc.value.code == 2
    assert f"argument {flag}: must be a path, got an empty string" in capsys.readouterr().err


def test_empty_cache_dir_in_a_config_is_a_config_error():
    from lazymem.eval.config import EvalConfig
    from lazymem.retrieve import RetrievalConfig

    with pytest.raises(ConfigError, match="EvalConfig.llm_cache_dir=''"):
        EvalConfig(llm_cache_dir="")
    with pytest.raises(ConfigError, match="RetrievalConfig.cache_dir=''"):
        RetrievalConfig(cache_dir="")


# --- integers beyond range in data ---------------------------------------------------------------------


def test_huge_integer_in_a_dataset_is_a_load_error_naming_file_record_and_field(shared_data, tmp_path):
    from lazymem.data.datasets import load_dataset

    samples = json.loads((shared_data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[:2]
    text = json.dumps(samples)
    qa = samples[1]["qa"][0]
    marker = json.dumps({"question": qa["question"]})[1:-1]  # the question's text, as JSON writes it
    assert marker in text
    text = text.replace(marker, marker + ', "adversarial_answer": ' + "9" * 5000, 1)
    path = tmp_path / "big.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LoadError) as exc:
        load_dataset(f"locomo:{path}")
    e = exc.value
    assert e.file == str(path)
    assert e.record.startswith("record 1") and samples[1]["sample_id"] in e.record
    assert e.field == "qa[0].adversarial_answer"
    assert "5000 digits" in e.problem


def test_huge_integer_in_a_json_lines_file_names_the_line(tmp_path):
    from lazymem.files import read_jsonl

    path = tmp_path / "r.jsonl"
    path.write_text('{"n": 1}\n{"n": ' + "9" * 5000 + "}\n" + '{"n": 2}\n')
    with pytest.raises(LoadError, match=r"r\.jsonl: line 2 .*field \$\.n: an integer beyond the 64-bit range"):
        read_jsonl(path)


# --- an unreadable tokenizer -----------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "not json {", '{"model": 3}'])
def test_unreadable_tokenizer_json_is_one_load_error_at_start(tmp_path, monkeypatch, content):
    from lazymem.llm import tokens

    (tmp_path / "tokenizer.json").write_text(content)
    monkeypatch.setenv(tokens.DIR_ENV, str(tmp_path))
    tokens.qwen3_tokenizer.cache_clear()
    with pytest.raises(LoadError, match=rf"{tmp_path}/tokenizer.json: not a Qwen3 tokenizer file .*fetch it again"):
        tokens.tokenizer_warning()  # what eval and perturb call before the first question


# --- a folder that is not a model ------------------------------------------------------------------------


def test_dense_model_folder_that_is_not_a_model_stops_at_start(tmp_path):
    from lazymem.retrieve import RetrievalConfig, Retriever

    (tmp_path / "notes.txt").write_text("not a model")
    retriever = Retriever(RetrievalConfig(dense_model=str(tmp_path), cache_dir=str(tmp_path / "cache")))
    with pytest.raises(
        ModelLoadError, match=rf"{tmp_path}: the dense model is a folder but not a model: .*config.json"
    ):
        retriever.warm_up()


@pytest.mark.parametrize("role", ["--dense-model", "--reranker"])
def test_coverage_with_a_folder_that_is_not_a_model_is_one_error(tmp_path, capsys, role):
    other = ["--dense-model", "none"] if role == "--reranker" else []
    with deadline(120):
        code, err = run_cli(["coverage", SYNTHETIC, "--n", "10", "--k", "5", role, str(tmp_path), *other], capsys)
    assert code == 2, err
    assert err.count("error:") == 1 and f"{tmp_path}: the " in err and "not a model" in err, err
    assert "Traceback" not in err


# --- a directory as --out ----------------------------------------------------------------------------------


def test_writing_over_a_directory_leaves_no_temporary_file_and_names_the_target(tmp_path):
    from lazymem.files import write_json

    target = tmp_path / "out.json"
    target.mkdir()
    with pytest.raises(IsADirectoryError) as exc:
        write_json(target, {"a": 1})
    assert exc.value.filename == str(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_coverage_out_directory_is_refused_before_retrieval(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    code, err = run_cli(
        ["coverage", SYNTHETIC, "--dense-model", "none", "--n", "10", "--k", "5", "--out", "out"], capsys
    )
    assert code == 2
    assert "--out out: is a directory" in err and ".tmp" not in err
    assert [p.name for p in (tmp_path / "out").iterdir()] == [] and sorted(os_names(tmp_path)) == ["out"]


def os_names(folder: Path) -> list[str]:
    """Every entry of `folder`, hidden ones included."""
    return [p.name for p in folder.iterdir()]


# --- property: odd YAML loads or is a ConfigError --------------------------------------------------------

KEYS = ["dataset", "limit", "seed", "split_seed", "workers", "judge", "ids", "types", "llm_cache_dir", "shard", "x"]
SCALARS = [
    "1",
    "-1",
    "0",
    "true",
    "null",
    "''",
    "x",
    "1e999",
    ".nan",
    "9" * 40,
    "[]",
    "{}",
    "~",
    '"\\ud800"',
    "!!binary aGk=",
    "2020-01-01",
    "synthetic:messages=40",
    "{method: rag}",
    "[1, [2, [3]]]",
]


@st.composite
def yaml_documents(draw) -> str:
    """A YAML document of recipe-like lines with odd values, anchors and aliases (defined, undefined,
    recursive or multiplying), nested pipeline sections, and random punctuation spliced in."""
    n_anchors = draw(st.integers(0, 4))
    anchors = [f"a{i}" for i in range(n_anchors)]

    def value(depth: int) -> str:
        kind = draw(st.sampled_from(["scalar", "alias", "list", "map"] if depth < 3 else ["scalar", "alias"]))
        if kind == "alias":
            return "*" + draw(st.sampled_from(anchors + ["nowhere"]))
        if kind == "list":
            items = [value(depth + 1) for _ in range(draw(st.integers(0, 4)))]
            text = "[" + ", ".join(items) + "]"
        elif kind == "map":
            pairs = [f"{draw(st.sampled_from(KEYS))}: {value(depth + 1)}" for _ in range(draw(st.integers(0, 3)))]
            text = "{" + ", ".join(pairs) + "}"
        else:
            return draw(st.sampled_from(SCALARS))
        if anchors and draw(st.booleans()):
            text = f"&{draw(st.sampled_from(anchors))} {text}"
        return text

    lines = [f"{draw(st.sampled_from(KEYS + ['pipeline']))}: {value(0)}" for _ in range(draw(st.integers(0, 8)))]
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):  # splice punctuation in somewhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(alphabet=":&*[]{}-#!|>'\"\n ,", max_size=6)) + text[at:]
    return text


@settings(
    max_examples=100, deadline=5000, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=yaml_documents())
def test_odd_yaml_recipes_load_or_raise_a_config_error(tmp_path, text):
    from lazymem.eval.config import EvalConfig

    path = tmp_path / "recipe.yaml"
    path.write_text(text, encoding="utf-8")
    with deadline(10):
        try:
            EvalConfig.from_yaml(path)
        except ConfigError:
            pass


def test_laughs_document_is_what_the_property_test_must_survive(tmp_path):
    """The alias bomb itself, as one example of the property above."""
    from lazymem.eval.config import EvalConfig

    path = tmp_path / "recipe.yaml"
    path.write_text(LAUGHS)
    with deadline(10), pytest.raises(ConfigError, match="expand to more than"):
        EvalConfig.from_yaml(path)
