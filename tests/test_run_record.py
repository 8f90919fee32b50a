"""RunRecord (lazymem.eval.records): exact round trips of every committed records file, typed parts, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lazymem.errors import LoadError
from lazymem.eval.records import (
    CallMeta,
    ConstructionRecord,
    Mem0Part,
    NanoMemoryPart,
    PoolRecord,
    QuestionMeta,
    RunRecord,
    Timings,
    WindowRecord,
)
from lazymem.eval.runfiles import load_records

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs/results/lazymem-135m/table/synthetic_heldout"  # committed (LoCoMo records are not)
COMMITTED = sorted(
    {
        *ROOT.glob("docs/results/**/records.jsonl"),
        *ROOT.glob("docs/results/**/errors.jsonl"),
        *ROOT.glob("docs/results/lazymem-135m/**/records.jsonl"),
        *ROOT.glob("docs/results/lazymem-135m/**/errors.jsonl"),
        *ROOT.glob("tests/fixtures/**/*.jsonl"),
    }
)


def test_the_repository_has_records_to_check():
    # committed: LazyMem-135M's table on the synthetic held-out set (the LoCoMo cells' records quote LoCoMo text
    # and stay out of git, .gitignore), the extractive held-out run and the test fixtures
    assert len(COMMITTED) >= 8


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_record_round_trips_exactly(path):
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records, truncated = load_records(path)
    assert not truncated and len(records) == len(lines)
    for line, rec in zip(lines, records):
        d = json.loads(line)
        assert rec.to_json() == d
        assert json.dumps(rec.to_json()) == json.dumps(d)  # the key order too
        assert json.dumps(RunRecord.from_json(rec.to_json()).to_json()) == json.dumps(d)


def test_committed_records_are_typed():
    recs = load_records(TABLE / "grpo_sft_gpu_keepbias/records.jsonl")[0]
    r = next(r for r in recs if r.windows)
    assert isinstance(r.question, QuestionMeta) and isinstance(r.question.evidence, tuple)
    assert isinstance(r.pool, PoolRecord) and r.pool.hits[0].rank == 1
    assert isinstance(r.windows[0], WindowRecord) and isinstance(r.construction, ConstructionRecord)
    assert isinstance(r.answer_output, CallMeta) and isinstance(r.timings, Timings) and r.timings.total > 0
    assert r.kept_positions == {d.pos for d in r.decisions if d.op == "KEEP"}
    assert r.nano is None and r.mem0 is None and r.baseline is None


def test_a_bad_field_names_the_file_record_and_field():
    good = json.loads((TABLE / "rag_top50/records.jsonl").read_text(encoding="utf-8").splitlines()[0])
    bad = json.loads(json.dumps(good))
    bad["pool"]["hits"][2]["rank"] = "3"
    with pytest.raises(LoadError) as e:
        RunRecord.from_json(bad, "run/records.jsonl", 7)
    assert str(e.value) == (
        f"run/records.jsonl: record 7 (question_id {good['question_id']!r}), "
        "field pool.hits[2].rank: '3' is not an integer"
    )
    assert e.value.field == "pool.hits[2].rank"
    for field, value, problem in [
        ("timings", [1], "a list, expected an object"),
        ("locomo_f1", "0.5", "'0.5' is not a number"),
        ("status", None, "None is not a string"),
    ]:
        with pytest.raises(LoadError, match=f"field {field}: {problem}"):
            RunRecord.from_json({**good, field: value})
    del bad["question_id"]
    with pytest.raises(LoadError, match="field question_id: missing"):
        RunRecord.from_json(bad)
    with pytest.raises(LoadError, match="a list, expected an object"):
        RunRecord.from_json([good], "run/records.jsonl", 1)


def test_a_bad_line_in_a_file_is_a_load_error_naming_it(tmp_path):
    lines = (TABLE / "extractive/records.jsonl").read_text().splitlines()[:3]
    d = json.loads(lines[1])
    d["windows"] = {"not": "a list"}
    p = tmp_path / "records.jsonl"
    p.write_text("\n".join([lines[0], json.dumps(d), lines[2]]) + "\n")
    with pytest.raises(
        LoadError,
        match=r"records\.jsonl: record 2 \(question_id .*\), field windows: an object, "
        r"expected a list",
    ):
        load_records(p)


def test_nanomemory_records_carry_the_typed_nanomemory_part():
    recs = load_records(TABLE / "nanomemory/records.jsonl")[0]
    assert recs and all(isinstance(r.baseline, NanoMemoryPart) and r.nano is r.baseline for r in recs)
    r = recs[0]
    assert r.nano.sessions[0].session_id and isinstance(r.nano.sessions[0].gold, tuple)
    assert isinstance(r.nano.prune_output, CallMeta) and r.nano.prune_output.model
    assert r.gold_shown == r.nano.gold_shown == r.gold_in_pool  # the runner counts gold shown as in the pool
    assert r.to_json()["baseline"]["fit"] == r.nano.fit


def test_mem0_records_carry_the_typed_mem0_part():
    d = {
        "question_id": "q1",
        "method": "mem0",
        "status": "ok",
        "error": None,
        "memory": "[d] Ann likes tea",
        "baseline": {
            "method": "mem0",
            "top_k": 30,
            "user_id": "u1",
            "store": "s",
            "settings": {"chunk": 2},
            "ingestion": {"adds": 3, "built_now": False},
            "n_memories": 5,
            "results": [{"id": "m1", "memory": "Ann likes tea", "score": 0.8, "date": "d", "positions": [1, 2]}],
            "gold_shown": 1,
            "n_gold": 2,
            "new_key": [1],
        },
    }
    r = RunRecord.from_json(d)
    assert isinstance(r.baseline, Mem0Part) and r.mem0 is r.baseline and r.nano is None
    assert r.mem0.results[0].positions == (1, 2) and r.mem0.ingestion["adds"] == 3 and r.gold_shown == 1
    assert json.dumps(r.to_json()) == json.dumps(d)  # the unknown "new_key" kept
    with pytest.raises(LoadError, match=r"field baseline\.results\[0\]\.positions: a string, expected a list"):
        RunRecord.from_json({**d, "baseline": {**d["baseline"], "results": [{"positions": "1,2"}]}})
    other = RunRecord.from_json({**d, "method": "some_removed_method"})
    assert other.baseline == d["baseline"] and other.gold_shown == 1  # kept as read


def test_a_record_missing_optional_keys_stays_without_them():
    old = {
        "question_id": "q1",
        "method": "rag",
        "status": "ok",
        "error": None,
        "pool": {"positions": [2], "hits": [{"pos": 2, "rank": 1, "score": 0.1}]},
        "construction": {
            "n_windows": 1,
            "n_valid": 1,
            "n_fmt": 1,
            "n_messages": 2,
            "n_decided": 2,
            "n_kept": 1,
            "n_gold": 1,
            "n_gold_kept": 1,
            "failures": {},
            "gate_fmt": 1.0,
        },
        "memory": "m",
        "answer": "a",
        "timings": {"total": 1.0},
        "question": {"type": "t", "evidence": [2]},
    }
    r = RunRecord.from_json(old)
    assert r.answer_think is None and r.memory_measures is None and r.construction.n_rewritten is None
    out = r.to_json()
    assert "answer_think" not in out and "memory_measures" not in out and "n_rewritten" not in out["construction"]
    assert "bm25_rank" not in out["pool"]["hits"][0] and out == old
    # a field set later goes at the end, as a dict's new key does; a removed one is gone
    later = r.with_(memory_measures=None, run_id="abc")
    assert list(later.to_json())[-2:] == ["memory_measures", "run_id"]
    assert later.without("run_id").to_json() == dict(old, memory_measures=None)


def test_a_record_built_in_code_writes_the_runner_order():
    r = RunRecord.failed("q1", "rag", "pipeline: ValueError: x", "Traceback ...")
    assert list(r.to_json()) == ["question_id", "method", "status", "error", "traceback", "timings"]
    assert r.to_json()["timings"] == {} and not r.ok
    r = r.with_(
        question=QuestionMeta(
            type="t",
            abbrev="T",
            category=None,
            text="?",
            answer="a",
            query_time=None,
            history_id="h",
            evidence=(1,),
            abstention=False,
        ),
        n_gold=1,
    )
    assert r.to_json()["question"]["evidence"] == [1]
    back = RunRecord.from_json(r.to_json())
    assert back == r and json.dumps(back.to_json()) == json.dumps(r.to_json())  # same fields, keys and order
    fresh = RunRecord("q2", "rag", "ok", memory="m")
    keys = list(fresh.to_json())
    assert "traceback" not in keys and "run_id" not in keys and keys[:4] == ["question_id", "method", "status", "error"]
