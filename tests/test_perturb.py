"""Memory perturbation study on a hand-made history with a scripted answerer."""

from __future__ import annotations

import pytest

from lazymem.eval.perturb import CONDITIONS, perturbation_markdown, perturbation_study, variants
from lazymem.llm import FakeBackend, Sampling
from lazymem.records import History, Message, Question

TEXTS = [
    "I adopted Biscuit.",
    "Nice.",
    "Biscuit loves the beach.",
    "Cool.",
    "I live in Porto.",
    "Ok.",
    "Rain today.",
    "Sure.",
    "I like tea.",
    "Fine.",
]


def history() -> History:
    return History("h", tuple(Message(i, f"m{i}", "s", i, "user", t, "2023/05/01") for i, t in enumerate(TEXTS)))


def test_variants_draw_local_nongold_reproducibly():
    assert variants([2, 0], [1, 2, 3], "full_gold") == [[0, 2]]
    assert variants([0, 2], [1, 3], "drop_all_gold") == [[]]
    assert variants([0, 2], [1, 3, 0], "add_all_nongold") == [[0, 1, 2, 3]]
    five = variants([0], list(range(1, 10)), "add_5_nongold", draws=3, seed=1)
    assert len(five) == 3 and all(len(v) == 6 and 0 in v for v in five)
    assert five == variants([0], list(range(1, 10)), "add_5_nongold", draws=3, seed=1)
    with pytest.raises(ValueError, match="one of"):
        variants([0], [], "shuffle")


def test_study_recovers_a_known_sensitivity():
    h = history()
    qs = [Question(f"q{i}", "t", "Where does Biscuit go?", "beach", "h", evidence=(0, 2)) for i in range(6)]
    qs.append(Question("nogold", "t", "?", "x", "h"))  # skipped: no gold evidence

    def answerer(prompt, sampling):
        memory = prompt[-1]["content"]
        return "beach" if "I adopted Biscuit." in memory and "loves the beach" in memory else "no idea"

    fake = FakeBackend(answerer)
    study = perturbation_study(
        [(h, q, list(range(10))) for q in qs],
        fake,
        Sampling(max_tokens=8),
        lambda q, a: float(a == q.answer),
        draws=2,
        count_tokens=lambda m: len(m.split()),
        n_resamples=500,
    )
    rows = {r["condition"]: r for r in study["rows"]}
    assert list(rows) == list(CONDITIONS) and rows["full_gold"]["accuracy"] == 1.0
    assert rows["drop_one_gold"]["accuracy"] == 0.0 and rows["drop_one_gold"]["delta"] == -1.0
    assert rows["drop_one_gold"]["c_to_i"] == 1.0 and rows["drop_all_gold"]["tokens"] == 0
    add5 = rows["add_5_nongold"]
    assert add5["accuracy"] == 1.0 and add5["low"] == add5["high"] == 0.0
    assert rows["add_all_nongold"]["tokens"] > rows["add_5_nongold"]["tokens"] > rows["full_gold"]["tokens"]
    assert rows["full_gold"]["questions"] == 6
    assert len(fake.calls) == 6 * (1 + 2 + 1 + 2 + 2 + 1)  # every variant answered once
    assert "| drop_one_gold | 6 | 0.0 | -100.0 [-100.0, -100.0] | 100.0 |" in perturbation_markdown(study)


def _echo_run(tmp_path):
    from lazymem.eval import evaluate, quick_config

    cfg = quick_config("synthetic:messages=120,seed=3,histories=1,questions=6", "rag", limit=4, backend="fake", n=10)
    run = tmp_path / "run"
    evaluate(cfg, run, progress=False)
    return run


def test_perturb_run_uses_the_runs_windows_answerer_and_score(tmp_path, capsys):
    """A finished run (echo answerer: its answer is the prompt, so gold in memory scores) through the CLI."""
    import json

    from lazymem.cli import main
    from lazymem.eval.perturb import local_nongold, perturb_run

    run = _echo_run(tmp_path)
    assert main(["perturb", str(run), "--draws", "2", "--no-progress"]) == 0
    study = json.loads((run / "perturbation" / "perturbation.json").read_text())
    rows = {r["condition"]: r for r in study["rows"]}
    assert study["metric"] == "answer_f1 (proxy)" and rows["full_gold"]["questions"] == 4
    assert rows["full_gold"]["accuracy"] > rows["drop_all_gold"]["accuracy"]  # the echo loses the gold words
    assert rows["drop_all_gold"]["delta"] < 0 and rows["drop_all_gold"]["tokens"] == 0
    assert rows["add_all_nongold"]["tokens"] > rows["full_gold"]["tokens"]
    assert "| full_gold | 4 |" in capsys.readouterr().out
    assert "answers" not in study and (run / "perturbation" / "answers.json").is_file()
    rec = json.loads((run / "records.jsonl").read_text().splitlines()[0])
    ng = local_nongold(rec)
    assert ng and not set(ng) & set(rec["question"]["evidence"]) and set(ng) <= set(rec["pool"]["positions"])
    again = perturb_run(run, None, draws=2, limit=2, progress=False, n_resamples=100)  # the first 2 only
    assert {r["questions"] for r in again["rows"]} == {2}


def test_perturb_run_names_what_is_wrong_with_the_run(tmp_path):
    import json

    from lazymem.errors import ConfigError
    from lazymem.eval.perturb import perturb_run

    with pytest.raises(ConfigError, match="manifest.json"):
        perturb_run(tmp_path, progress=False)
    run = _echo_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m["dataset"]["sha256"] = "0" * 64
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ConfigError, match="dataset.sha256"):
        perturb_run(run, progress=False)
    (run / "records.jsonl").unlink()
    with pytest.raises(ConfigError, match="no records.jsonl"):
        perturb_run(run, progress=False)
