"""A run's numbers from its records: summary.json, the baseline comparison, the text summary, the running score.

``summarize`` gives accuracy per type (judge labels), LoCoMo F1 per category, Gate Fmt.,
the rewritten rate, gold-keep recall, the memory's own measures (evidence recall, answer recall
in memory: lazymem.eval.memory_measures), memory tokens, latency percentiles per stage and counts;
``compare_with_baseline`` the ratios to a baseline run; ``check_records`` turns a hand-edited
record these cannot read into a LoadError naming the file, the record and the field.

Memory tokens are a number only when every ok record was counted with the Qwen3 tokenizer:
a run without the tokenizer (``tokenizer: "missing"``) reports ``mean: None`` with ``n`` the
records that were counted, never a mean of the few counts it has (nor 0).

>>> percentiles([1.0, 2.0, 3.0, 4.0])["median"]
2.5
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lazymem.errors import LoadError
from lazymem.eval.memory_measures import MATCHES, MEASURES, rewritten_rate, summarize_measures
from lazymem.eval.records import MeasuresRecord, RunRecord, json_kind  # noqa: F401  (json_kind: re-exported)
from lazymem.eval.runfiles import latest_records
from lazymem.eval.usage import summarize_usage
from lazymem.records import type_abbrev
from lazymem.stats import percentiles  # noqa: F401  (re-exported: lazymem.eval.percentiles)

STAGES = ("retrieval", "processing", "answer", "total", "judge", "index", "load")


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(
    records: Iterable[RunRecord | Mapping],
    judge: str = "none",
    selected: Sequence[str] | None = None,
    file: str = "records.jsonl",
) -> dict:
    """The run's numbers from its records (the last record per question counts).

    Accuracy is the mean judge label over ok records with a label; Gate Fmt. is the share of
    MPM outputs that are a parseable array of the right length (construction_stats.n_fmt);
    gold-keep recall is gold messages kept / gold messages inside windows, over all questions.
    Raw records (dicts) are read with ``RunRecord.from_json``; a record the summary cannot read (an ok
    record without its question type, ...) is a LoadError naming `file`, the record and the field.
    """
    latest = latest_records(check_records(records, file))
    if selected is not None:
        latest = {i: latest[i] for i in selected if i in latest}
    ok = [r for r in latest.values() if r.ok]
    counts = {
        "selected": len(selected) if selected is not None else len(latest),
        "recorded": len(latest),
        "ok": len(ok),
        "error": sum(not r.ok for r in latest.values()),
    }
    counts["missing"] = counts["selected"] - counts["recorded"]
    out: dict[str, Any] = {"counts": counts, "judge": judge, "method": next((r.method for r in latest.values()), None)}

    def by_group(key, value) -> dict:
        groups: dict[str, list[float]] = defaultdict(list)
        for r in ok:
            v = value(r)
            if v is not None:
                groups[key(r)].append(float(v))
        return {g: {"mean": statistics.fmean(v), "n": len(v)} for g, v in sorted(groups.items())}

    def abbrev(r):
        return type_abbrev(r.question.type)

    if judge != "none":
        labels = [r.label for r in ok if r.label is not None]
        out["accuracy"] = {
            "overall": _mean([float(x) for x in labels]),
            "n": len(labels),
            "unjudged": sum(1 for r in ok if r.label is None),
            "skipped": sum(1 for r in ok if r.judge and r.judge.skipped),
            "unparseable": sum(1 for r in ok if r.judge and r.judge.unparseable),
            "judge_errors": sum(1 for r in latest.values() if r.judge and r.judge.error),
            # replies with no verdict (an error of the judge, e.g. a thinking model cut off): never counted wrong
            "judge_no_verdict": sum(1 for r in latest.values() if r.judge and r.judge.error and r.judge.unparseable),
            "question_errors": counts["error"],
            "by_type": by_group(abbrev, lambda r: r.label),
        }
    else:
        out["accuracy"] = None
    f1 = [r.locomo_f1 for r in ok if r.locomo_f1 is not None]
    out["locomo_f1"] = (
        None
        if not f1
        else {
            "overall": statistics.fmean(f1),
            "n": len(f1),
            "by_category": by_group(lambda r: r.question.type, lambda r: r.locomo_f1),
        }
    )
    pf = [r.answer_f1 for r in ok if r.answer_f1 is not None]
    out["proxy"] = (
        None
        if not pf
        else {
            "note": "token F1 / normalised containment of the gold answer: quick proxies, not the paper's LLM-judge score",
            "answer_f1": statistics.fmean(pf),
            "answer_contains": _mean([float(r.answer_contains) for r in ok if r.answer_contains is not None]),
            "n": len(pf),
            "answer_f1_by_type": by_group(abbrev, lambda r: r.answer_f1),
        }
    )
    cons = [r.construction for r in ok if r.construction]
    if cons:
        tot = {k: sum(getattr(c, k) for c in cons) for k in _COUNTS}
        failures = Counter()
        for c in cons:
            failures.update(c.failures or {})
        n_rewritten, rate = rewritten_rate(cons)  # None for records made before n_rewritten existed
        out["construction"] = {
            **tot,
            "gate_fmt": tot["n_fmt"] / tot["n_windows"] if tot["n_windows"] else None,
            "n_rewritten": n_rewritten,
            "rewritten_rate": rate,
            "gate_pass_rate": tot["n_valid"] / tot["n_windows"] if tot["n_windows"] else None,
            "gold_keep_recall": tot["n_gold_kept"] / tot["n_gold"] if tot["n_gold"] else None,
            "kept_per_question": tot["n_kept"] / len(cons),
            "windows_per_question": tot["n_windows"] / len(cons),
            "failures": dict(sorted(failures.items())),
            "n_questions": len(cons),
            # All@k of the windows: questions whose every gold message the memory step was shown
            "all_gold_shown": _mean(
                [float(r.construction.n_gold >= r.n_gold) for r in ok if r.construction and r.n_gold]
            ),
        }
    else:
        out["construction"] = None
    pooled = [r for r in ok if r.gold_in_pool is not None]
    n_gold = sum(r.n_gold for r in pooled)
    out["retrieval"] = (
        None
        if not pooled
        else {
            "gold_in_pool": sum(r.gold_in_pool for r in pooled),
            "n_gold": n_gold,
            "gold_recall": sum(r.gold_in_pool for r in pooled) / n_gold if n_gold else None,
            "rerankers": sorted({r.pool.reranker for r in pooled if r.pool}, key=str),
        }
    )
    out["memory_tokens"] = memory_tokens(ok)
    out["memory_measures"] = summarize_measures(ok)
    out["latency_s"] = {
        s: percentiles([r.stage_seconds(s) for r in ok if r.stage_seconds(s) is not None]) for s in STAGES
    }
    calls = [w.output for r in ok for w in r.windows or () if w.output]
    answers = [r.answer_output for r in ok if r.answer_output]
    out["calls"] = {
        "mpm": len(calls),
        "mpm_cached": sum(bool(c.cached) for c in calls),
        "answer": len(answers),
        "answer_cached": sum(bool(c.cached) for c in answers),
        "note": "latencies of cached calls are cache reads, not model time",
    }
    usage = summarize_usage(ok, out["latency_s"])  # every call's tokens a question; absent: not measured
    if usage is not None:
        out["usage"] = usage
    return out


def memory_tokens(ok: Sequence[RunRecord]) -> dict:
    """Mean Qwen3 memory tokens of ok records: None (not 0) unless every one was counted.

    ``n`` is how many were counted; ``tokenizer`` is "qwen3" when all were, else why not
    ("missing": the tokenizer was not found; "off": counting was switched off).

    >>> def rec(n, tok):
    ...     return RunRecord("q", "rag", "ok", memory_tokens=n, tokenizer=tok)
    >>> memory_tokens([rec(0, "qwen3"), rec(None, "missing")])
    {'mean': None, 'n': 1, 'tokenizer': 'missing'}
    >>> memory_tokens([rec(0, "qwen3"), rec(6, "qwen3")])
    {'mean': 3.0, 'n': 2, 'tokenizer': 'qwen3'}
    """
    counts = [float(r.memory_tokens) for r in ok if r.memory_tokens is not None]
    why = {r.tokenizer for r in ok if r.memory_tokens is None}
    if not why:
        return {"mean": _mean(counts), "n": len(counts), "tokenizer": "qwen3" if counts else None}
    return {"mean": None, "n": len(counts), "tokenizer": next((w for w in ("missing", "off") if w in why), None)}


_COUNTS = ("n_windows", "n_valid", "n_fmt", "n_messages", "n_kept", "n_gold", "n_gold_kept")


def _record_problem(r: RunRecord) -> tuple[str, str] | None:
    """(field, problem) of the first field of a typed record that summaries and reports cannot read, else None.

    The types are checked when a record is read (``RunRecord.from_json``); what is left is what a type
    cannot say: an ok record's question type, the measures' ranges, gold_in_pool without n_gold."""
    if r.ok and (r.question is None or not isinstance(r.question.type, str)):
        return "question.type", "null, expected a string"
    bad_measure = _measures_problem(r.memory_measures)
    if r.ok and bad_measure is not None:
        return bad_measure
    if r.ok and r.gold_in_pool is not None and r.n_gold is None:
        return "n_gold", "null, but gold_in_pool is a number (the share needs both)"
    return None


def _measures_problem(m: MeasuresRecord | None) -> tuple[str, str] | None:
    """(field, problem) of a record's ``memory_measures`` object when summaries cannot read it."""
    if m is None:
        return None
    for k in MEASURES:
        v = getattr(m, k)
        if v is not None and not 0 <= v <= 1:
            return f"memory_measures.{k}", f"{v!r} is not a share (a number from 0 to 1, or null)"
    for k in ("n_gold", "n_gold_in_memory"):
        v = getattr(m, k)
        if v is not None and v < 0:
            return f"memory_measures.{k}", f"{v!r} is not a count"
    if m.evidence_match not in MATCHES:
        return "memory_measures.evidence_match", f"{m.evidence_match!r}, expected one of {MATCHES}"
    return None


def check_records(records: Iterable[RunRecord | Mapping], file: str) -> list[RunRecord]:
    """The records typed (a raw dict is read with ``RunRecord.from_json``), or a LoadError naming `file`, the
    record (its place and question id) and the field, for the first record (in file order) that ``summarize``
    and the reports cannot read: a field of the wrong type, a missing question type, a share outside 0..1.

    >>> check_records([{"question_id": "q1", "method": "rag", "status": "ok", "question": {"type": "t"},
    ...                 "answer_f1": "0.5"}], "run/records.jsonl")
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: run/records.jsonl: record 1 (question_id 'q1'), field answer_f1: '0.5' is not a number
    """
    out = []
    for i, r in enumerate(records, start=1):
        rec = r if isinstance(r, RunRecord) else RunRecord.from_json(r, file, i)
        bad = _record_problem(rec)
        if bad is not None:
            raise LoadError(file, f"record {i} (question_id {rec.question_id!r})", *bad)
        out.append(rec)
    return out


def compare_with_baseline(summary: Mapping, baseline: Mapping, baseline_dir: str = "") -> dict:
    """Ratios and deltas against a baseline run's summary (e.g. RAG Top50).

    ``memory_tokens.reduction`` = baseline mean / ours (the paper's "68.7x fewer tokens").

    >>> compare_with_baseline({"memory_tokens": {"mean": 100.0}}, {"memory_tokens": {"mean": 6870.0}})["memory_tokens"]
    {'ours': 100.0, 'baseline': 6870.0, 'reduction': 68.7}
    """

    def get(d, *path):
        for p in path:
            if not isinstance(d, Mapping) or d.get(p) is None:
                return None
            d = d[p]
        return d

    def pair(path, how):
        a, b = get(summary, *path), get(baseline, *path)
        res = {"ours": a, "baseline": b}
        if a is not None and b is not None:
            if how == "delta":
                res["delta"] = a - b
            elif how == "reduction":
                res["reduction"] = b / a if a else None
            else:
                res["ratio"] = a / b if b else None
        return res

    return {
        "baseline_dir": baseline_dir,
        "method": get(baseline, "method"),
        "accuracy": pair(("accuracy", "overall"), "delta"),
        "locomo_f1": pair(("locomo_f1", "overall"), "delta"),
        "memory_tokens": pair(("memory_tokens", "mean"), "reduction"),
        "evidence_recall": pair(("memory_measures", "evidence_recall", "mean"), "delta"),
        "latency_total_mean": pair(("latency_s", "total", "mean"), "ratio"),
    }


def summary_text(s: Mapping) -> str:
    """A short human-readable summary."""

    def f(x, d=3):
        return "-" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))

    c = s["counts"]
    lines = [
        f"{s.get('method')} on {s.get('dataset')}: {c['ok']} ok, {c['error']} error, {c['missing']} missing "
        f"of {c['selected']} selected"
    ]
    if s.get("accuracy"):
        a = s["accuracy"]
        lines.append(
            f"accuracy ({s['judge']} judge) {f(a['overall'])} over {a['n']}  "
            + "  ".join(f"{t} {f(v['mean'])}" for t, v in a["by_type"].items())
            + f"  (unparseable judge replies counted wrong: {a.get('unparseable', 0)}, skipped "
            f"{a.get('skipped', 0)}, errored questions {a.get('question_errors', c['error'])}"
            + (f", of them judge replies with no verdict: {a['judge_no_verdict']}" if a.get("judge_no_verdict") else "")
            + ")"
        )
    if s.get("locomo_f1"):
        lf = s["locomo_f1"]
        lines.append(
            f"LoCoMo F1 {f(lf['overall'])}  " + "  ".join(f"{t} {f(v['mean'])}" for t, v in lf["by_category"].items())
        )
    if s.get("proxy"):
        pr = s["proxy"]
        lines.append(
            f"proxy (not the paper's metric): answer F1 {f(pr['answer_f1'])}, contains gold {f(pr['answer_contains'])}"
        )
    if s.get("construction"):
        k = s["construction"]
        lines.append(
            f"gate fmt {f(k['gate_fmt'])}, rewritten {f(k.get('rewritten_rate'))}, "
            f"gate pass {f(k['gate_pass_rate'])}, gold-keep recall "
            f"{f(k['gold_keep_recall'])}, {f(k['windows_per_question'], 1)} windows and "
            f"{f(k['kept_per_question'], 1)} kept messages per question; failures {k['failures']}"
        )
    mm = s.get("memory_measures") or {}
    if mm:
        lines.append(
            f"memory: evidence recall {f((mm.get('evidence_recall') or {}).get('mean'))}, answer recall in "
            f"memory {f((mm.get('answer_recall_in_memory') or {}).get('mean'))} (match "
            + (", ".join(f"{k} {v}" for k, v in mm.get("evidence_match", {}).items()) or "-")
            + (f"; {mm['unmeasured']} records without measures" if mm.get("unmeasured") else "")
            + ")"
        )
    m = s["memory_tokens"]
    if m["mean"] is None and m["tokenizer"] == "missing":
        from lazymem.llm.tokens import FETCH_COMMAND

        lines.append(
            f"memory tokens missing: the Qwen3 tokenizer was not found ({m['n']} of {c['ok']} ok records "
            f"counted); fetch it with `{FETCH_COMMAND}` and rerun"
        )
    else:
        lines.append(f"memory tokens mean {f(m['mean'], 1)} (tokenizer {m['tokenizer']})")
    lat = s["latency_s"]
    lines.append(
        "latency s (mean/p95): "
        + "  ".join(f"{st} {f(lat[st]['mean'], 2)}/{f(lat[st]['p95'], 2)}" for st in STAGES if lat[st]["n"])
    )
    if s.get("baseline") and "memory_tokens" in s["baseline"]:
        b = s["baseline"]
        lines.append(
            f"vs baseline {b['baseline_dir']}: memory tokens reduction "
            f"{f(b['memory_tokens'].get('reduction'), 1)}x, "
            f"accuracy delta {f(b['accuracy'].get('delta'))}"
        )
    return "\n".join(lines)


class RunningScore:
    """The progress bar's running numbers over all ok records so far.

    >>> s = RunningScore([RunRecord.from_json({"question_id": "q1", "method": "rag", "status": "ok",
    ...                                        "judge": {"label": True}})], "longmemeval")
    >>> s.add(RunRecord("q2", "rag", "error")); s.text()
    'acc=1.000 err=1'
    """

    def __init__(self, records: Iterable[RunRecord], judge: str):
        self.judge = judge
        self.labels: list[float] = []
        self.f1: list[float] = []
        self.errors = 0
        self.n_new = self.n_new_errors = 0
        for r in records:
            self._count(r)

    def _count(self, r: RunRecord) -> None:
        if not r.ok:
            self.errors += 1
            return
        if r.label is not None:
            self.labels.append(float(r.label))
        f = r.locomo_f1 if r.locomo_f1 is not None else r.answer_f1
        if f is not None:
            self.f1.append(f)

    def add(self, r: RunRecord) -> None:
        self.n_new += 1
        self.n_new_errors += not r.ok
        self._count(r)

    def text(self) -> str:
        parts = []
        if self.judge != "none":
            parts.append(f"acc={statistics.fmean(self.labels):.3f}" if self.labels else "acc=-")
        if self.f1:
            parts.append(f"f1={statistics.fmean(self.f1):.3f}")
        parts.append(f"err={self.errors}")
        return " ".join(parts)
