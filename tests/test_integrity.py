"""Data integrity of run folders: one JSON-lines reader that splits on "\\n" only,
metrics that cannot be computed are missing (never 0), and hand-edited run files are named errors.

Every model is a scripted FakeBackend and retrieval is BM25 only, so the file runs in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lazymem.errors import LoadError
from lazymem.llm import DIR_ENV, FETCH_COMMAND, FakeBackend, LLMConfig
from lazymem.records import Dataset, History, Message, Question

# Characters str.splitlines() ends a line at that json.dumps(..., ensure_ascii=False) writes raw inside a
# string (LS, PS, NEL); the other ones it knows (\x1c-\x1e, \v, \f, \r) are control characters JSON escapes.
BREAKS = "\u2028\u2029\x85"
SYNTH = "synthetic:messages=60,seed=0,histories=1,questions=6"
FAKE = {"backend": "fake", "model": "fake"}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """The LLM cache under tmp_path; the Qwen3 tokenizer stays wherever it was found."""
    from lazymem.llm import qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "lazymem_cache"))


@pytest.fixture
def no_tokenizer(tmp_path, monkeypatch):
    """The Qwen3 tokenizer is not found: its directory is an empty folder (as under another HOME)."""
    empty = tmp_path / "no-tokenizer"
    empty.mkdir()
    monkeypatch.setenv(DIR_ENV, str(empty))
    return empty


# --- one JSON-lines reader --------------------------------------------------------------------------


def test_reader_splits_on_newline_only_and_drops_only_a_torn_tail(tmp_path):
    from lazymem.files import read_jsonl

    p = tmp_path / "a.jsonl"
    recs = [{"question_id": f"q{i}", "text": f"line{c}break"} for i, c in enumerate(BREAKS)]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    assert all(c in text for c in BREAKS)  # written raw, as ensure_ascii=False does
    p.write_text(text + '{"question_id": "torn", "te', encoding="utf-8")
    assert read_jsonl(p) == (recs, True)
    p.write_text(text + "\n\n", encoding="utf-8")
    assert read_jsonl(p) == (recs, False)
    p.write_text(text.replace('"q1"', "q1", 1), encoding="utf-8")  # damage in the middle: never skipped
    with pytest.raises(LoadError, match=r"a\.jsonl: line 2 is not a JSON object \(not valid JSON"):
        read_jsonl(p)
    p.write_text('{"x": 1}\n{"question_id": "q"}\n', encoding="utf-8")
    with pytest.raises(LoadError, match=r"line 1 is not a question record \(field question_id missing\)"):
        read_jsonl(p, keys=("question_id",), what="a question record")
    assert read_jsonl(tmp_path / "missing.jsonl") == ([], False)


def test_run_folder_readers_keep_records_with_line_separators(tmp_path):
    """errors.jsonl (the attempt counter) and the deletion log read through the one reader."""
    from lazymem.data.deletions import read_log_lines
    from lazymem.eval.runfiles import read_jsonl, read_records

    p = tmp_path / "errors.jsonl"
    recs = [{"question_id": "q1", "question": {"text": f"a{BREAKS}b"}}, {"question_id": "q2"}]
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    assert read_jsonl(p) == recs and read_records(p) == (recs, False)
    log = tmp_path / "deletions.log"
    log.write_text(json.dumps({"id": "a", "status": "pending"}) + "\n" + '{"id": "b", "sta', encoding="utf-8")
    assert read_log_lines(log) == [('{"id": "a", "status": "pending"}', {"id": "a", "status": "pending"})]


def _breaks_dataset() -> Dataset:
    texts = [f"I moved to Lisbon{BREAKS[0]}in May.", "Nice!", f"My dog is Biscuit{BREAKS[1]}a corgi.", "Cute."]
    msgs = tuple(
        Message(i, f"s0#{i}", "s0", i, "user" if i % 2 == 0 else "assistant", t, "2023/05/10")
        for i, t in enumerate(texts)
    )
    qs = (
        Question(
            "q1", "single-session-user", f"Where do I live?{BREAKS[0]}", "Lisbon", "h", "2023/06/01", evidence=(0,)
        ),
        Question(
            "q2",
            "single-session-user",
            f"What is my dog called?{BREAKS[1]}",
            "Biscuit",
            "h",
            "2023/06/01",
            evidence=(2,),
        ),
    )
    return Dataset("breaks", {"h": History("h", msgs)}, qs, source="test", sha256="1" * 64)


def test_a_line_separator_record_round_trips_through_the_run_and_the_report(tmp_path, capsys):
    """Records holding raw U+2028/U+2029 are written, resumed (the attempt counter reads errors.jsonl)
    and reported like any other."""
    from lazymem.cli import main
    from lazymem.eval import EvalConfig, evaluate, read_records
    from lazymem.pipeline import PipelineConfig
    from lazymem.retrieve import RetrievalConfig

    ds, out = _breaks_dataset(), tmp_path / "run"
    config = EvalConfig(
        pipeline=PipelineConfig(
            method="oracle_turn", retrieval=RetrievalConfig(dense_model=None), answer=LLMConfig(**FAKE)
        ),
        dataset="breaks",
        judge="none",
    )

    def flaky(prompt, sampling):  # q1 fails on the first run
        return ConnectionError("server down") if "Where do I live?" in prompt[-1]["content"] else "Biscuit"

    evaluate(config, out, progress=False, clients={"answer": FakeBackend(flaky)}, dataset=ds)
    evaluate(config, out, progress=False, clients={"answer": FakeBackend(lambda p, s: "Lisbon")}, dataset=ds)
    assert "\u2028" in (out / "errors.jsonl").read_text(encoding="utf-8")  # raw, not escaped
    assert "\u2029" in (out / "records.jsonl").read_text(encoding="utf-8")
    recs, truncated = read_records(out / "records.jsonl")
    assert not truncated and [r["question_id"] for r in recs] == ["q2", "q1"]
    assert recs[1]["question"]["text"] == ds.questions[0].text and BREAKS[1] in recs[0]["memory"]
    assert recs[1]["attempt"] == 2  # the error record of the first run was counted
    assert main(["report", str(out), "--resamples", "50"]) == 0
    assert "| run | 2 | 0 |" in capsys.readouterr().out


def test_bench_pipeline_cold_warm_reads_line_separator_records(tmp_path, monkeypatch):
    """`lazymem bench pipeline`'s cold/warm check compares records read by the one reader."""
    import subprocess

    from lazymem.bench import pipeline as bench

    rec = {"question_id": "q1", "status": "ok", "answer": f"Lisbon{BREAKS}", "memory": "m", "pool": {"positions": [1]}}

    def fake_eval(cmd, **kw):
        out = Path(cmd[cmd.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "records.jsonl").write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
        return subprocess.CompletedProcess(cmd, 0, None, "")

    monkeypatch.setattr(bench.subprocess, "run", fake_eval)
    assert bench.cold_warm(tmp_path / "c.yaml", progress=False)["same_records"] is True


# --- memory tokens without the tokenizer: missing, never 0 ----------------------------------------


def test_count_of_empty_text_needs_the_tokenizer(no_tokenizer):
    from lazymem.llm import TokenizerMissing, count_tokens, count_tokens_batch
    from lazymem.llm.tokens import tokenizer_warning

    with pytest.raises(TokenizerMissing, match="fetch_qwen3_tokenizer.sh"):
        count_tokens("")
    with pytest.raises(TokenizerMissing):
        count_tokens_batch([])
    assert FETCH_COMMAND in tokenizer_warning() and str(no_tokenizer) in tokenizer_warning()


def test_summary_of_partly_counted_memories_is_missing_not_a_mean():
    from lazymem.eval import summarize, summary_text

    base = {"status": "ok", "question": {"type": "t"}, "timings": {}}
    recs = [
        dict(base, question_id="a", memory_tokens=0, tokenizer="qwen3"),
        dict(base, question_id="b", memory_tokens=None, tokenizer="missing"),
    ]
    s = summarize(recs)
    assert s["memory_tokens"] == {"mean": None, "n": 1, "tokenizer": "missing"}
    assert "memory tokens missing" in summary_text(dict(s, dataset="d")) and FETCH_COMMAND in summary_text(s)
    s = summarize([dict(base, question_id="a", memory_tokens=0, tokenizer="qwen3")])
    assert s["memory_tokens"] == {"mean": 0.0, "n": 1, "tokenizer": "qwen3"}  # counted: an empty memory is 0


def _recipe(tmp_path, method="lazymem") -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "dataset": SYNTH,
                "limit": 2,
                "judge": "none",
                "pipeline": {
                    "method": method,
                    "retrieval": {"dense_model": None, "n": 3},
                    "window": {"w": 1},
                    "mpm": FAKE,
                    "answer": FAKE,
                },
            }
        )
    )
    return path


def test_eval_without_tokenizer_warns_first_and_reports_tokens_missing(tmp_path, monkeypatch, capsys, no_tokenizer):
    """The real `lazymem eval` on a tiny recipe. The echoing fake MPM fails the format gate, so
    every memory is empty: with the tokenizer those are 0 tokens, without it they are unknown."""
    import sys

    from lazymem.cli import main
    from lazymem.eval import runner
    from lazymem.eval.table import table_row
    from lazymem.notebooks.tables import eval_overview

    real = runner.run_question

    def marked(*a, **kw):
        print("QUESTION STARTS", file=sys.stderr)
        return real(*a, **kw)

    monkeypatch.setattr(runner, "run_question", marked)
    out = tmp_path / "run"
    assert main(["eval", str(_recipe(tmp_path)), "--out", str(out), "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "QUESTION STARTS" in cap.err and FETCH_COMMAND in cap.err
    assert cap.err.index(FETCH_COMMAND) < cap.err.index("QUESTION STARTS")
    assert "warning" in cap.err and str(no_tokenizer) in cap.err
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text(encoding="utf-8").split("\n") if x]
    assert [r["memory"] for r in recs] == ["", ""]  # the case that read as 0 tokens
    assert all(r["memory_tokens"] is None and r["tokenizer"] == "missing" for r in recs)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["memory_tokens"] == {"mean": None, "n": 0, "tokenizer": "missing"}
    assert "memory tokens missing" in cap.out and FETCH_COMMAND in cap.out
    assert eval_overview({"lazymem": summary})[1][0]["memory_tokens"] is None
    row = table_row(summary, {"memory_tokens": {"mean": 100.0}})  # eval-table's columns
    assert row["memory_tokens"] is None and row["ratio_to_ref"] is None
    assert main(["report", str(out), "--resamples", "50", "--metric", "answer_f1"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| run |"))
    assert "0.0 |" not in row.split("|")[-5] and row.split("|")[-5].strip() == "-"  # the memory tokens column


def test_perturb_without_tokenizer_shows_tokens_missing(tmp_path, capsys, no_tokenizer):
    from lazymem.cli import main

    out = tmp_path / "run"
    assert main(["eval", str(_recipe(tmp_path, "rag")), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["perturb", str(out), "--draws", "1", "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "warning" in cap.err and FETCH_COMMAND in cap.err
    study = json.loads((out / "perturbation" / "perturbation.json").read_text())
    assert study["tokenizer"] == "missing" and all(r["tokens"] is None for r in study["rows"])
    assert all(line.rstrip().endswith("| - |") for line in cap.out.splitlines() if line.startswith("| full_gold"))


# --- hand-edited run files: exit 2 naming file, record and field ------------------------------------


def _run_folder(tmp_path, record: dict, manifest: object = None) -> Path:
    run = tmp_path / "edited"
    run.mkdir()
    rec = {
        "question_id": "q1",
        "status": "ok",
        "question": {"type": "single-session-user", "evidence": [1]},
        "answer_f1": 0.5,
        "memory_tokens": 3,
        "tokenizer": "qwen3",
        "timings": {"total": 1.0},
    }
    rec.update(record)
    rec = {k: v for k, v in rec.items() if v is not ...}
    (run / "records.jsonl").write_text(json.dumps(rec) + "\n")
    if manifest is not None:
        (run / "manifest.json").write_text(json.dumps(manifest))
    return run


@pytest.mark.parametrize(
    "record, manifest, message",
    [
        (
            {"answer_f1": "high"},
            None,
            r"records\.jsonl: record 1 \(question_id 'q1'\), field "
            r"answer_f1: 'high' is not a number",
        ),
        ({"status": ...}, None, r"records\.jsonl: record 1 \(question_id 'q1'\), field status: missing"),
        ({"question": ["t"]}, None, r"records\.jsonl: .*question_id 'q1'.*field question: a list, expected an object"),
        ({"timings": {"total": "1s"}}, None, r"records\.jsonl: .*field timings\.total: '1s' is not a number"),
        ({}, {"config": ["judge", "none"]}, r"manifest\.json: field config: a list, expected an object"),
        ({}, ["config"], r"manifest\.json: a list, expected an object"),
        ({}, {"config": {"judge": 3}}, r"manifest\.json: field config\.judge: a number, expected a string"),
    ],
)
def test_report_on_hand_edited_files_names_file_record_and_field(tmp_path, capsys, record, manifest, message):
    import re

    from lazymem.cli import main

    run = _run_folder(tmp_path, record, manifest)
    assert main(["report", str(run), "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert "lazymem: error:" in err and re.search(message, err), err[-600:]


def test_perturb_on_hand_edited_manifest_names_file_and_field(tmp_path, capsys):
    from lazymem.cli import main

    run = _run_folder(tmp_path, {}, {"config": ["a list"]})
    assert main(["perturb", str(run), "--no-progress"]) == 2
    assert "manifest.json: field config: a list, expected an object" in capsys.readouterr().err
    (run / "manifest.json").write_text(json.dumps({"status": "done"}))
    assert main(["perturb", str(run), "--no-progress"]) == 2
    assert "manifest.json: field config: missing" in capsys.readouterr().err
