"""Every token and second a question costs: each record's model calls by stage, and the run's bill a question.

The paper's efficiency measure counts memory tokens (what the answer model reads). The memory-processing
model's own calls (one a window, each a long prompt that writes a trace and an array), the answer, the
judge, NanoMemory's pruning call and Mem0's extraction calls at ingestion cost tokens too. Each call's
record (``CallMeta``) holds its engine's counts: ``prompt_tokens`` / ``completion_tokens`` (the model's own
tokenizer), ``cached_prompt_tokens`` (served from a prefix cache, where the engine says), ``passes`` (a call
that ran as several requests) and the Qwen3 counts (``lazymem.llm.usage``). ``record_usage`` sums them by
stage into a record's ``usage``:

- ``mpm``: the window calls (trace and array passes, the content writer) or NanoMemory's pruning call;
- ``answer``: the answer call; ``judge``: the judge's calls (a retried one counts twice);
- ``ingestion`` (Mem0): the store's extraction calls for the whole history (``progress.json``'s ``usage``),
  with the store's name; the summary spreads it over the questions that used the store.

Each stage holds ``calls``, ``prompt_tokens`` (read, over every pass), ``cached_prompt_tokens``,
``completion_tokens`` (written), ``seconds`` (the calls' own seconds) and ``qwen3_prompt_tokens`` /
``qwen3_completion_tokens``; a count that some call of the stage lacks is left out (not measured, never 0).
A stage that made no call has ``calls: 0`` and zero tokens (measured: nothing was read).

``summarize_usage`` gives the summary's ``usage``: means a question over ok records, each only when every
ok record has it (records made before usage existed leave the whole object out).

>>> calls = [CallMeta("m", 100, 20, 0.5, False, "stop", cached_prompt_tokens=60),
...          CallMeta("m", 120, 10, 0.25, False, "stop", cached_prompt_tokens=100)]
>>> stage_usage(calls)
{'calls': 2, 'prompt_tokens': 220, 'cached_prompt_tokens': 160, 'completion_tokens': 30, 'seconds': 0.75}
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.eval.records import CallMeta, RunRecord
from lazymem.llm.usage import USAGE_TOTALS

STAGES = ("mpm", "answer", "judge", "ingestion")  # a record's usage stages
COUNTS = USAGE_TOTALS  # a stage's counts: the ones a call meter totals (lazymem.llm.usage)
QUERY_STAGES = ("mpm", "answer", "ingestion")  # what answering a question costs (the judge is the evaluation's)


def _total(values: Sequence[Any]) -> Any:
    """The sum, or None when any value is unknown."""
    return None if any(v is None for v in values) else sum(values)


def _pass_total(call: CallMeta, name: str) -> Any:
    """One count of a call: over its passes where it ran several, else its own."""
    if call.passes and name in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens"):
        return _total([p.get(name) for p in call.passes])
    return {"seconds": call.latency_s}.get(name, getattr(call, name, None))


def stage_usage(calls: Sequence[CallMeta], qwen3: Sequence[tuple[int, int] | None] | None = None) -> dict:
    """A stage's counts over its calls (``COUNTS``; a count some call lacks is left out). ``qwen3``: the
    calls' Qwen3 (read, written) counts where their records do not hold them (the judge's)."""
    out: dict[str, Any] = {"calls": len(calls)}
    for name in COUNTS[1:5]:
        out[name] = _total([_pass_total(c, name) for c in calls])
    if qwen3 is None:
        out["qwen3_prompt_tokens"] = _total([c.qwen3_prompt_tokens for c in calls])
        out["qwen3_completion_tokens"] = _total([c.qwen3_completion_tokens for c in calls])
    else:
        out["qwen3_prompt_tokens"] = _total([None if q is None else q[0] for q in qwen3])
        out["qwen3_completion_tokens"] = _total([None if q is None else q[1] for q in qwen3])
    return {k: v for k, v in out.items() if v is not None}


def _judge_qwen3(rec: RunRecord) -> list[tuple[int, int] | None]:
    """Qwen3 (read, written) counts of the judge's calls from its prompt and replies; None each without the
    tokenizer."""
    from lazymem.llm.usage import chatml, qwen3_count

    j = rec.judge
    replies = [(j.retry_of or {}).get("response")] if j.retry_of else []
    replies.append(j.response)
    counts = qwen3_count([chatml(j.prompt)] + [r or "" for r in replies]) if j.prompt is not None else None
    if counts is None:
        return [None] * len(replies)
    return [(counts[0], n) for n in counts[1:]]


def _judge_calls(rec: RunRecord) -> list[CallMeta]:
    """The judge's calls: a retried judgment's first attempt, then the last."""
    j = rec.judge
    if j is None or j.output is None:
        return []
    first = (j.retry_of or {}).get("output")
    return ([CallMeta.from_json(first, "judge.retry_of.output")] if first else []) + [j.output]


def record_usage(rec: RunRecord) -> dict:
    """A record's ``usage``: its calls' counts by stage (module docstring); stages the method has no calls of
    (the judge when none ran, ingestion but for Mem0) are left out."""
    mpm = [w.output for w in rec.windows or () if w.output is not None]
    if rec.nano is not None and rec.nano.prune_output is not None:
        mpm.append(rec.nano.prune_output)
    out: dict[str, Any] = {"mpm": stage_usage(mpm)}
    out["answer"] = stage_usage([rec.answer_output] if rec.answer_output is not None else [])
    if rec.judge is not None:
        calls = _judge_calls(rec)
        qwen3 = _judge_qwen3(rec) if calls else []
        out["judge"] = stage_usage(calls, qwen3[-len(calls) :] if calls else [])
    mem0 = rec.mem0
    ingestion = (mem0.ingestion or {}).get("usage") if mem0 is not None else None
    if mem0 is not None and isinstance(ingestion, Mapping):
        out["ingestion"] = {
            **{k: ingestion[k] for k in COUNTS if ingestion.get(k) is not None},
            "store": mem0.store,
            "complete": ingestion.get("chunks") == (mem0.ingestion or {}).get("n_chunks"),
        }
    return out


def with_usage(rec: RunRecord) -> RunRecord:
    """``rec`` with its ``usage`` (``record_usage``)."""
    return rec.with_(usage=record_usage(rec))


def _mean_of(values: Sequence[Any]) -> float | None:
    """The mean, or None when there are none or any is unknown."""
    return None if not values or any(v is None for v in values) else statistics.fmean(values)


def _stage_means(recs: Sequence[RunRecord], stage: str) -> dict:
    """Mean counts a question of one stage; a count some record lacks is left out."""
    rows = [(r.usage or {}).get(stage) or {} for r in recs]
    out = {name: _mean_of([row.get(name) for row in rows]) for name in COUNTS}
    return {k: v for k, v in out.items() if v is not None}


def amortized_ingestion(recs: Sequence[RunRecord]) -> dict | None:
    """Mem0's ingestion a question: each store's calls counted once (its fullest record), over the questions
    that used it; None when no record has ingestion usage, or some store's was not measured throughout."""
    stores: dict[str, Mapping] = {}
    users = 0
    for r in recs:
        ing = (r.usage or {}).get("ingestion")
        if ing is None:
            continue
        users += 1
        best = stores.get(ing.get("store"))
        if best is None or (ing.get("calls") or 0) >= (best.get("calls") or 0):
            stores[ing.get("store")] = ing
    if not stores or not all(s.get("complete") for s in stores.values()):
        return None
    out: dict[str, Any] = {"stores": len(stores), "questions": users}
    for name in COUNTS:
        total = _total([s.get(name) for s in stores.values()])
        if total is not None:
            out[name] = total / users
    return out


def _tokens(stage: Mapping, qwen3: bool) -> Any:
    """A stage's tokens read plus written (engine's, or Qwen3's), None when either is unknown."""
    a, b = ("qwen3_prompt_tokens", "qwen3_completion_tokens") if qwen3 else ("prompt_tokens", "completion_tokens")
    return None if stage.get(a) is None or stage.get(b) is None else stage[a] + stage[b]


def summarize_usage(ok: Sequence[RunRecord], seconds: Mapping[str, Mapping] | None = None) -> dict | None:
    """The summary's ``usage`` (None when no ok record has usage): per stage the mean counts a question, the
    headline means (``mpm_tokens_in`` / ``mpm_tokens_out``, ``all_call_tokens`` (MPM, answer and amortized
    ingestion: what answering costs) and with the judge, in the models' own tokens and in Qwen3's), and
    ``seconds_by_stage`` (mean wall seconds a question from the records' timings, ``seconds``)."""
    measured = [r for r in ok if r.usage is not None]
    if not measured:
        return None
    full = len(measured) == len(ok)  # a mean counts only when every ok record was measured
    per = {s: _stage_means(measured, s) if full else {} for s in ("mpm", "answer", "judge")}
    if not any((r.usage or {}).get("judge") for r in measured):
        del per["judge"]
    ingestion = amortized_ingestion(measured) if full else None
    if ingestion is not None:
        per["ingestion"] = ingestion
    out: dict[str, Any] = {"n": len(measured), "per_question": per}
    mpm = per.get("mpm", {})
    for key, name in (("mpm_tokens_in", "prompt_tokens"), ("mpm_tokens_out", "completion_tokens")):
        if mpm.get(name) is not None:
            out[key] = mpm[name]
    for qwen3, suffix in ((False, ""), (True, "_qwen3")):
        query = [per.get(s) for s in QUERY_STAGES if per.get(s) is not None or s != "ingestion"]
        if any(r.mem0 is not None for r in measured) and ingestion is None:
            continue  # Mem0's ingestion not measured: no whole bill
        query_total = _total([None if s is None else _tokens(s, qwen3) for s in query])
        if query_total is not None:
            out[f"all_call_tokens{suffix}"] = query_total
            if "judge" in per:
                judge = _tokens(per["judge"], qwen3)
                if judge is not None:
                    out[f"all_call_tokens_with_judge{suffix}"] = query_total + judge
    if seconds:
        out["seconds_by_stage"] = {s: v["mean"] for s, v in seconds.items() if v.get("n") and v.get("mean") is not None}
    out["note"] = (
        "means a question; tokens are each engine's own counts (prompt tokens over every pass, cached ones "
        "included) and Qwen3's; calls served from the LLM disk cache count as made"
    )
    return out
