"""The paper's latency protocol, for any method: ``lazymem bench latency CONFIG``.

    lazymem bench latency configs/eval/demo.yaml [--set KEY=VALUE] [--limit N] [--out FILE]

What the paper does (appendix "Latency Protocol and Breakdown", ``app:latency``):

    "We process questions strictly sequentially, without batching or parallelism across
    questions. For the current question, LazyMem issues independent history-window requests
    concurrently (up to 64 at a time). [...] We discard three warm-up runs and report
    statistics over the next three runs."

and its Table ``tab:latency_results`` breaks "end-to-end latency down into retrieval, memory
processing, and answer generation" with Mean, Med., P90 and P95 of each. The paper does not
say what one run is; here a run is one pass over the question set (the questions of an eval
recipe, one after another), so the protocol is ``warmup + runs`` passes over the same
questions: the first ``warmup`` (3) are discarded, and each stage's statistics
(``lazymem.stats.percentiles``: mean, median = P50, P90, P95) are taken over every question of
the next ``runs`` (3), i.e. over ``runs x questions`` latencies; each measured run's own mean
is reported beside them. Inside a question nothing changes: the windows still go to the
model in one ``generate`` call (concurrently on a server, batched in process).

The one query path times the stages: every question is ``LazyMemPipeline.answer`` and its
``timings`` (retrieval without indexing the history, which is store-time work; processing;
answer; total = their sum; model loading kept out), as in ``lazymem bench pipeline``. One
pipeline serves every run (models loaded once, before the first warm-up run).

Caches: the LLM response cache is OFF for every role (whatever the recipe says): with it on,
every run after the first would read answers back from disk and measure nothing. Query
vectors are encoded anew on every question (not cached). What an engine keeps by itself stays
on, as in the paper's vLLM serving: llama.cpp reuses the KV cache of a prompt prefix it has
just read, vLLM its prefix cache. Written: JSON with every latency (``--out``) and a printed
table; ``lazymem.viz.pareto.bench_latency_rows`` turns the JSON into the rows notebook 08's
latency panel draws.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.stats import percentiles

STAGES = ("retrieval", "processing", "answer", "total")
PAPER_WARMUP_RUNS = 3  # "We discard three warm-up runs
PAPER_MEASURED_RUNS = 3  # and report statistics over the next three runs."
PROTOCOL_QUOTE = (
    "We process questions strictly sequentially, without batching or parallelism across questions. "
    "[...] We discard three warm-up runs and report statistics over the next three runs. "
    "(paper, appendix Latency Protocol and Breakdown)"
)
CACHE_NOTE = (
    "LLM response cache: off for every role (a cached rerun would measure nothing); query vectors "
    "encoded on every question; engine prefix caches (llama.cpp KV reuse, vLLM prefix cache) as the "
    "engine has them"
)


def no_cache(config):
    """An EvalConfig made for timing: one question at a time and no LLM response cache in any role.

    >>> from lazymem.eval.config import EvalConfig
    >>> c = no_cache(EvalConfig.from_dict({"workers": 8, "pipeline": {"answer": {"cache_dir": "/tmp/c"}}}))
    >>> c.workers, c.llm_cache, c.pipeline.answer.cache_dir
    (1, False, None)
    """
    p = config.pipeline
    roles = {
        r: dataclasses.replace(getattr(p, r), cache_dir=None)
        for r in ("mpm", "answer", "judge")
        if getattr(p, r) is not None
    }
    return dataclasses.replace(
        config, workers=1, llm_cache=False, llm_cache_dir=None, pipeline=dataclasses.replace(p, **roles)
    )


def measure(
    answer: Callable[[Any, Any], Any],
    items: Sequence[tuple[Any, Any]],
    warmup: int = PAPER_WARMUP_RUNS,
    runs: int = PAPER_MEASURED_RUNS,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """``warmup + runs`` passes over ``items`` ((history, question) pairs), one question at a time.

    ``answer(history, question)`` returns something with ``timings`` (seconds by stage),
    ``status``, ``error`` (a ``QueryResult``). Returns one entry per run: ``run`` (1-based),
    ``warmup`` (True for the discarded ones), ``wall_s`` and ``per_question`` (the question id,
    status and each stage's seconds; a stage the result lacks is 0.0).
    """
    if warmup < 0 or runs < 1:
        raise ConfigError(f"bench latency: warm-up runs must be >= 0 and measured runs >= 1 (got {warmup}, {runs})")
    out = []
    for i in range(warmup + runs):
        t0, per_q = time.perf_counter(), []
        for history, q in items:  # strictly one after another: the next starts when this one has answered
            r = answer(history, q)
            t = r.timings
            per_q.append(
                {
                    "question_id": q.id,
                    "status": r.status,
                    "error": r.error,
                    **{k: round(float(t.get(k, 0.0)), 4) for k in STAGES},
                }
            )
        out.append(
            {"run": i + 1, "warmup": i < warmup, "wall_s": round(time.perf_counter() - t0, 3), "per_question": per_q}
        )
        if progress is not None:
            mean = sum(x["total"] for x in per_q) / max(len(per_q), 1)
            kind = "warm-up, discarded" if i < warmup else "measured"
            progress(
                f"[bench latency] run {i + 1}/{warmup + runs} ({kind}): {len(per_q)} questions, mean total {mean:.2f} s"
            )
    return out


def summarize(runs: Sequence[Mapping]) -> dict:
    """Each stage's statistics over every question of the measured (non-warm-up) runs, and each run's mean.

    >>> r = [{"warmup": True, "per_question": [{"retrieval": 9, "processing": 9, "answer": 9, "total": 27}]},
    ...      {"warmup": False, "per_question": [{"retrieval": 1, "processing": 2, "answer": 3, "total": 6}]},
    ...      {"warmup": False, "per_question": [{"retrieval": 1, "processing": 4, "answer": 3, "total": 8}]}]
    >>> s = summarize(r)
    >>> s["stages"]["total"]["mean"], s["stages"]["total"]["n"], s["run_means"]["processing"]
    (7.0, 2, [2.0, 4.0])
    """
    measured = [r for r in runs if not r["warmup"]]
    values = {k: [q[k] for r in measured for q in r["per_question"]] for k in STAGES}
    return {
        "stages": {k: percentiles(v, digits=4) for k, v in values.items()},
        "run_means": {
            k: [
                round(sum(q[k] for q in r["per_question"]) / len(r["per_question"]), 4) if r["per_question"] else None
                for r in measured
            ]
            for k in STAGES
        },
    }


def bench_latency(
    config_path: str | os.PathLike,
    overrides: Sequence[str] = (),
    limit: int | None = None,
    warmup: int = PAPER_WARMUP_RUNS,
    runs: int = PAPER_MEASURED_RUNS,
    out: str | os.PathLike | None = None,
    progress: bool = True,
    clients: Mapping[str, Any] | None = None,
) -> dict:
    """Run the protocol (module docstring) on an eval recipe's questions and method; write JSON, print a table.

    Args:
        config_path: an eval recipe (``lazymem eval`` format): data set, selection, pipeline (any method).
        overrides: ``key=value`` overrides, as ``lazymem eval --set``.
        limit: questions (default: the recipe's limit).
        warmup, runs: discarded and measured passes (the paper: 3 and 3).
        clients: ready clients by role (tests: scripted fakes); the others come from the recipe.
    """
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, seeded, select_questions
    from lazymem.pipeline import LazyMemPipeline
    from lazymem.retrieve import Retriever
    from lazymem.runinfo import git_commit, now, package_versions

    config = seeded(EvalConfig.from_yaml(config_path, overrides))
    if limit is not None:
        config = dataclasses.replace(config, limit=limit)
    asked_workers = config.workers
    config = no_cache(config)
    dataset = load_dataset(config.dataset, subset=config.subset)
    items = [(dataset.history(q), q) for q in select_questions(dataset, config)]
    if not items:
        raise ConfigError(f"{config_path}: the recipe selects no question to time")
    p = config.pipeline
    # each query encoded anew: a repeated question must not read its vector back from the cache
    pipe = LazyMemPipeline(p, clients=clients, retriever=Retriever(p.retrieval, cache_queries=False))
    say = (lambda s: print(s, flush=True)) if progress else None
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None  # a busy machine slows every stage
    t0 = time.perf_counter()
    pipe.warm_up()
    load_s = time.perf_counter() - t0
    try:
        measured = measure(pipe.answer, items, warmup, runs, say)
    finally:
        pipe.close()
    roles = {
        r: {
            "backend": getattr(p, r).backend,
            "model": getattr(p, r).model,
            "adapter": getattr(p, r).adapter,
            "cache_dir": getattr(p, r).cache_dir,
        }
        for r in ("mpm", "answer")
        if getattr(p, r) is not None
    }
    result = {
        "config": str(config_path),
        "overrides": list(overrides),
        "limit": limit,
        "method": p.method,
        "dataset": config.dataset,
        "questions": len(items),
        "question_ids": [q.id for _, q in items],
        "protocol": {
            "warmup_runs": warmup,
            "measured_runs": runs,
            "run": "one pass over the questions",
            "questions_in_flight": 1,
            "workers_in_recipe": asked_workers,
            "statistics_over": "every question of the measured runs",
            "quote": PROTOCOL_QUOTE,
        },
        "llm_cache": "off",
        "cache_note": CACHE_NOTE,
        "processing_stage": pipe.method.processing_stage,
        "models": roles,
        "load_s": round(load_s, 2),
        **summarize(measured),
        "runs": measured,
        "errors": sorted(
            {f"{q['question_id']}: {q['error']}" for r in measured for q in r["per_question"] if q["error"]}
        ),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "versions": package_versions(("torch", "transformers", "llama-cpp-python", "vllm")),
            "loadavg_1_5_15": {"start": load_before, "end": os.getloadavg() if hasattr(os, "getloadavg") else None},
        },
        "git_commit": git_commit(),
        "when": now(),
    }
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1) + "\n")
    if progress:
        print(latency_table(result))
    return result


def latency_table(result: Mapping) -> str:
    """The result as the paper's table: a row per stage, mean / P50 / P90 / P95 in seconds."""
    p = result["protocol"]
    lines = [
        f"{result['method']} on {result['questions']} questions of {result['config']}: "
        f"{p['warmup_runs']} warm-up runs discarded, statistics over the next {p['measured_runs']} "
        f"(n = {result['stages']['total']['n']}), one question at a time; {result['cache_note']}",
        f"{'stage':<12}{'mean':>9}{'P50':>9}{'P90':>9}{'P95':>9}   run means",
    ]
    for k in STAGES:
        s = result["stages"][k]
        if k == "processing" and not result.get("processing_stage", True):
            lines.append(f"{k:<12}{'-':>9}{'-':>9}{'-':>9}{'-':>9}   (no memory-processing stage)")
            continue
        cells = "".join(f"{s[x]:>9.3f}" if s[x] is not None else f"{'-':>9}" for x in ("mean", "median", "p90", "p95"))
        lines.append(f"{k:<12}{cells}   {', '.join(f'{m:.3f}' for m in result['run_means'][k] if m is not None)}")
    if result.get("errors"):
        lines.append(f"errors ({len(result['errors'])}): " + "; ".join(result["errors"][:3]))
    return "\n".join(lines)
