"""lazymem bench latency: the paper's protocol (3 warm-up runs discarded, statistics over the next 3,
questions one after another, no LLM cache) on scripted pipelines, the command, and notebook 08's shape.

No timing is asserted: scripted timings stand in for measured ones where numbers are checked.
"""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import pytest
import yaml

from lazymem.bench.latency import STAGES, bench_latency, measure, no_cache, summarize


def _q(i: int):
    return SimpleNamespace(id=f"q{i}")


class ScriptedPipeline:
    """answer() returns scripted timings: 100 s during the warm-up calls, then 1, 2, 3, ... seconds."""

    def __init__(self, n_warmup_calls: int):
        self.calls: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self.n_warmup_calls = n_warmup_calls
        self._lock = threading.Lock()

    def answer(self, history, q):
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.calls.append(q.id)
        k = len(self.calls)
        t = 100.0 if k <= self.n_warmup_calls else float(k - self.n_warmup_calls)
        with self._lock:
            self.in_flight -= 1
        timings = {"retrieval": 0.5, "processing": t, "answer": 1.0, "total": t + 1.5}
        return SimpleNamespace(timings=timings, status="ok", error=None)


def test_three_warmup_runs_are_discarded_and_the_next_three_summarised():
    items = [(None, _q(1)), (None, _q(2))]
    pipe = ScriptedPipeline(n_warmup_calls=3 * 2)
    runs = measure(pipe.answer, items)
    assert len(pipe.calls) == 6 * 2  # 3 warm-up + 3 measured passes over both questions
    assert pipe.calls == ["q1", "q2"] * 6  # each pass in question order, one after another
    assert [r["warmup"] for r in runs] == [True, True, True, False, False, False]
    s = summarize(runs)
    proc = s["stages"]["processing"]
    assert proc["n"] == 3 * 2  # every question of the three measured runs
    assert proc["mean"] == pytest.approx(3.5) and proc["median"] == pytest.approx(3.5)  # 1..6: no 100 s warm-up
    assert proc["p95"] == pytest.approx(5.75)  # linear interpolation (lazymem.stats.percentiles)
    assert s["run_means"]["processing"] == [1.5, 3.5, 5.5]
    assert s["stages"]["total"]["mean"] == pytest.approx(5.0)
    assert set(s["stages"]) == set(STAGES) == {"retrieval", "processing", "answer", "total"}


def test_run_counts_are_settable_and_checked():
    pipe = ScriptedPipeline(n_warmup_calls=1)
    runs = measure(pipe.answer, [(None, _q(1))], warmup=1, runs=2)
    assert len(pipe.calls) == 3 and summarize(runs)["stages"]["processing"]["n"] == 2
    from lazymem.errors import ConfigError

    with pytest.raises(ConfigError, match="measured runs"):
        measure(pipe.answer, [(None, _q(1))], warmup=3, runs=0)


def _recipe(tmp_path, **extra) -> str:
    cfg = {
        "dataset": "synthetic:messages=60,seed=0,histories=1,questions=3",
        "limit": 2,
        "judge": "none",
        "workers": 8,
        "llm_cache": True,
        "llm_cache_dir": str(tmp_path / "llm-cache"),
        "pipeline": {
            "method": "rag",
            "retrieval": {"n": 3, "sparse": "bm25s", "dense_model": None},
            "answer": {"backend": "fake", "model": "answerer"},
            "answer_sampling": {"temperature": 0.0, "max_tokens": 8},
        },
        **extra,
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_bench_latency_runs_questions_one_at_a_time_with_the_llm_cache_off(tmp_path, monkeypatch):
    """A recipe with 8 workers and the LLM cache on: every one of the 6 x 2 answers is a real model call
    (no cache hit, nothing written to the cache), never two at once."""
    from lazymem.llm.fake import FakeBackend

    calls, state = [], {"now": 0, "max": 0}
    real = FakeBackend.generate

    def generate(self, prompts, sampling=None):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        calls.append(len(prompts))
        try:
            return real(self, prompts, sampling) if sampling is not None else real(self, prompts)
        finally:
            state["now"] -= 1

    monkeypatch.setattr(FakeBackend, "generate", generate)
    out = tmp_path / "latency.json"
    res = bench_latency(_recipe(tmp_path), out=out, progress=False)
    assert sum(calls) == 6 * 2 and state["max"] == 1
    assert not (tmp_path / "llm-cache").exists() or not any((tmp_path / "llm-cache").rglob("*"))
    saved = json.loads(out.read_text())
    assert saved["llm_cache"] == "off" and "off" in saved["cache_note"]
    assert saved["models"]["answer"]["cache_dir"] is None
    p = saved["protocol"]
    assert (p["warmup_runs"], p["measured_runs"], p["questions_in_flight"], p["workers_in_recipe"]) == (3, 3, 1, 8)
    assert "three warm-up" in p["quote"]
    assert saved["questions"] == 2 and len(saved["runs"]) == 6
    assert all(len(r["per_question"]) == 2 for r in saved["runs"])
    assert all(saved["stages"][k]["n"] == 6 for k in STAGES) and res["processing_stage"] is False
    assert res["stages"]["total"]["mean"] is not None


def test_no_cache_turns_off_every_role_and_runs_one_question_at_a_time(tmp_path):
    from lazymem.eval.config import EvalConfig

    cfg = EvalConfig.from_yaml(_recipe(tmp_path), ["pipeline.answer.cache_dir=/tmp/x"])
    c = no_cache(cfg)
    assert (c.workers, c.llm_cache, c.llm_cache_dir, c.pipeline.answer.cache_dir) == (1, False, None, None)


def test_cli_help_and_run(tmp_path, capsys):
    from lazymem.cli import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "latency", "--help"])
    assert e.value.code == 0
    help_text = capsys.readouterr().out
    assert "warm-up" in help_text and "--limit" in help_text and "--set" in help_text
    out = tmp_path / "l.json"
    assert (
        main(
            [
                "bench",
                "latency",
                _recipe(tmp_path),
                "--limit",
                "1",
                "--warmup",
                "1",
                "--runs",
                "2",
                "--set",
                "pipeline.retrieval.n=2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "1 warm-up runs discarded" in printed and "P95" in printed and "(no memory-processing stage)" in printed
    saved = json.loads(out.read_text())
    assert saved["questions"] == 1 and len(saved["runs"]) == 3 and saved["overrides"] == ["pipeline.retrieval.n=2"]


def test_bench_output_feeds_notebook_08s_latency_panel(tmp_path):
    """bench_latency_rows puts a bench result in a report row exactly where pareto_figure's latency panel reads."""
    from lazymem.notebooks.compare import report_figure
    from lazymem.viz.pareto import bench_latency_rows

    path = tmp_path / "rag.json"
    bench = {
        "method": "rag",
        "protocol": {"warmup_runs": 3, "measured_runs": 3},
        "stages": {
            k: {"mean": 2.0 + i, "median": 1.5 + i, "p90": 3.0 + i, "p95": 4.0 + i, "n": 6}
            for i, k in enumerate(STAGES)
        },
    }
    path.write_text(json.dumps(bench))
    stale = {k: {"mean": 99.0, "median": 99.0, "p90": 99.0, "p95": 99.0, "n": 2} for k in STAGES}
    rows = [
        {"system": "rag", "method": "rag", "score": 0.5, "memory_tokens": 100.0, "latency_s": stale},
        {"system": "oracle_turn", "method": "oracle_turn", "score": 0.7, "memory_tokens": 10.0, "latency_s": stale},
    ]
    new = bench_latency_rows(rows, {"rag": bench})
    assert new[0]["latency_s"]["total"] == bench["stages"]["total"] and new[1]["latency_s"] == stale
    assert "3 warm-up runs discarded" in new[0]["latency_source"] and rows[0]["latency_s"] is stale  # not mutated
    fig = report_figure({"rows": rows, "metric": "answer_f1"}, latency={"rag": str(path)})
    panel = next(t for t in fig.data if t.error_x is not None and t.error_x.array is not None)
    at = list(panel.text).index("rag")
    assert panel.x[at] == 5.0  # the bench's mean total, not the eval run's 99
    assert panel.error_x.array[at] == pytest.approx(2.0) and panel.error_x.arrayminus[at] == pytest.approx(0.5)
    from lazymem.errors import ConfigError, LoadError

    with pytest.raises(ConfigError, match="name no row"):
        bench_latency_rows(rows, {"nanomemory": bench})
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(LoadError, match="bad.json"):
        report_figure({"rows": rows, "metric": "answer_f1"}, latency={"rag": str(tmp_path / "bad.json")})
