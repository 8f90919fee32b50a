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
from lazymem.eval.runfiles import latest_records
from lazymem.records import type_abbrev
from lazymem.stats import percentiles  # noqa: F401  (re-exported: lazymem.eval.percentiles)

STAGES = ("retrieval", "processing", "answer", "total", "judge", "index", "load")


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(records: Iterable[dict], judge: str = "none", selected: Sequence[str] | None = None) -> dict:
    """The run's numbers from its records (the last record per question counts).

    Accuracy is the mean judge label over ok records with a label; Gate Fmt. is the share of
    MPM outputs that are a parseable array of the right length (construction_stats.n_fmt);
    gold-keep recall is gold messages kept / gold messages inside windows, over all questions.
    """
    latest = latest_records(records)
    if selected is not None:
        latest = {i: latest[i] for i in selected if i in latest}
    ok = [r for r in latest.values() if r["status"] == "ok"]
    counts = {"selected": len(selected) if selected is not None else len(latest), "recorded": len(latest),
              "ok": len(ok), "error": sum(r["status"] != "ok" for r in latest.values())}
    counts["missing"] = counts["selected"] - counts["recorded"]
    out: dict[str, Any] = {"counts": counts, "judge": judge,
                           "method": next((r.get("method") for r in latest.values()), None)}

    def by_group(key, value) -> dict:
        groups: dict[str, list[float]] = defaultdict(list)
        for r in ok:
            v = value(r)
            if v is not None:
                groups[key(r)].append(float(v))
        return {g: {"mean": statistics.fmean(v), "n": len(v)} for g, v in sorted(groups.items())}

    def abbrev(r):
        return type_abbrev(r["question"]["type"])

    if judge != "none":
        labels = [r["judge"]["label"] for r in ok if r.get("judge") and r["judge"].get("label") is not None]
        out["accuracy"] = {
            "overall": _mean([float(x) for x in labels]), "n": len(labels),
            "unjudged": sum(1 for r in ok if not r.get("judge") or r["judge"].get("label") is None),
            "skipped": sum(1 for r in ok if r.get("judge") and r["judge"].get("skipped")),
            "unparseable": sum(1 for r in ok if r.get("judge") and r["judge"].get("unparseable")),
            "judge_errors": sum(1 for r in latest.values() if (r.get("judge") or {}).get("error")),
            "question_errors": counts["error"],
            "by_type": by_group(abbrev, lambda r: None if not r.get("judge") else r["judge"].get("label")),
        }
    else:
        out["accuracy"] = None
    f1 = [r["locomo_f1"] for r in ok if r.get("locomo_f1") is not None]
    out["locomo_f1"] = None if not f1 else {
        "overall": statistics.fmean(f1), "n": len(f1),
        "by_category": by_group(lambda r: r["question"]["type"], lambda r: r.get("locomo_f1"))}
    pf = [r["answer_f1"] for r in ok if r.get("answer_f1") is not None]
    out["proxy"] = None if not pf else {
        "note": "token F1 / normalised containment of the gold answer: quick proxies, not the paper's LLM-judge score",
        "answer_f1": statistics.fmean(pf), "answer_contains": _mean([float(r["answer_contains"]) for r in ok
                                                                     if r.get("answer_contains") is not None]),
        "n": len(pf), "answer_f1_by_type": by_group(abbrev, lambda r: r.get("answer_f1"))}
    cons = [r["construction"] for r in ok if r.get("construction")]
    if cons:
        tot = {k: sum(c[k] for c in cons) for k in ("n_windows", "n_valid", "n_fmt", "n_messages", "n_kept",
                                                    "n_gold", "n_gold_kept")}
        failures = Counter()
        for c in cons:
            failures.update(c.get("failures") or {})
        n_rewritten, rate = rewritten_rate(cons)  # None for records made before n_rewritten existed
        out["construction"] = {
            **tot, "gate_fmt": tot["n_fmt"] / tot["n_windows"] if tot["n_windows"] else None,
            "n_rewritten": n_rewritten, "rewritten_rate": rate,
            "gate_pass_rate": tot["n_valid"] / tot["n_windows"] if tot["n_windows"] else None,
            "gold_keep_recall": tot["n_gold_kept"] / tot["n_gold"] if tot["n_gold"] else None,
            "kept_per_question": tot["n_kept"] / len(cons), "windows_per_question": tot["n_windows"] / len(cons),
            "failures": dict(sorted(failures.items())), "n_questions": len(cons),
            # All@k of the windows: questions whose every gold message the memory step was shown
            "all_gold_shown": _mean([float(r["construction"]["n_gold"] >= r["n_gold"]) for r in ok
                                     if r.get("construction") and r.get("n_gold")])}
    else:
        out["construction"] = None
    pooled = [r for r in ok if r.get("gold_in_pool") is not None]
    n_gold = sum(r["n_gold"] for r in pooled)
    out["retrieval"] = None if not pooled else {
        "gold_in_pool": sum(r["gold_in_pool"] for r in pooled), "n_gold": n_gold,
        "gold_recall": sum(r["gold_in_pool"] for r in pooled) / n_gold if n_gold else None,
        "rerankers": sorted({r["pool"].get("reranker") for r in pooled if r.get("pool")}, key=str)}
    out["memory_tokens"] = memory_tokens(ok)
    out["memory_measures"] = summarize_measures(ok)
    out["latency_s"] = {s: percentiles([r["timings"][s] for r in ok if r.get("timings", {}).get(s) is not None])
                        for s in STAGES}
    calls = [w.get("output") for r in ok for w in r.get("windows") or () if w.get("output")]
    answers = [r["answer_output"] for r in ok if r.get("answer_output")]
    out["calls"] = {"mpm": len(calls), "mpm_cached": sum(bool(c.get("cached")) for c in calls),
                    "answer": len(answers), "answer_cached": sum(bool(c.get("cached")) for c in answers),
                    "note": "latencies of cached calls are cache reads, not model time"}
    return out


def memory_tokens(ok: Sequence[Mapping]) -> dict:
    """Mean Qwen3 memory tokens of ok records: None (not 0) unless every one was counted.

    ``n`` is how many were counted; ``tokenizer`` is "qwen3" when all were, else why not
    ("missing": the tokenizer was not found; "off": counting was switched off).

    >>> memory_tokens([{"memory_tokens": 0, "tokenizer": "qwen3"}, {"memory_tokens": None, "tokenizer": "missing"}])
    {'mean': None, 'n': 1, 'tokenizer': 'missing'}
    >>> memory_tokens([{"memory_tokens": 0, "tokenizer": "qwen3"}, {"memory_tokens": 6, "tokenizer": "qwen3"}])
    {'mean': 3.0, 'n': 2, 'tokenizer': 'qwen3'}
    """
    counts = [float(r["memory_tokens"]) for r in ok if r.get("memory_tokens") is not None]
    why = {r.get("tokenizer") for r in ok if r.get("memory_tokens") is None}
    if not why:
        return {"mean": _mean(counts), "n": len(counts), "tokenizer": "qwen3" if counts else None}
    return {"mean": None, "n": len(counts), "tokenizer": next((w for w in ("missing", "off") if w in why), None)}


_NUMBERS = ("memory_tokens", "n_gold", "gold_in_pool", "locomo_f1", "answer_f1", "answer_contains")
_OBJECTS = ("question", "judge", "construction", "pool", "timings", "answer_output", "baseline", "memory_measures")
_COUNTS = ("n_windows", "n_valid", "n_fmt", "n_messages", "n_kept", "n_gold", "n_gold_kept")


def _number(v: Any, label: bool = False) -> bool:
    return v is None or (isinstance(v, (int, float)) and (label or not isinstance(v, bool)))


def json_kind(v: Any) -> str:
    """What a JSON value is, for error messages.

    >>> [json_kind(v) for v in (None, [1], {}, "x", 3, True)]
    ['null', 'a list', 'an object', 'a string', 'a number', 'a boolean']
    """
    if v is None:
        return "null"
    for t, name in ((bool, "a boolean"), (str, "a string"), (Mapping, "an object"), (list, "a list"),
                    ((int, float), "a number")):
        if isinstance(v, t):
            return name
    return f"a {type(v).__name__}"


def _record_problem(r: Mapping) -> tuple[str, str] | None:
    """(field, problem) of the first field of a record that summaries and reports cannot read, else None."""
    if not isinstance(r.get("status"), str):
        return "status", f"{json_kind(r.get('status'))}, expected a string (\"ok\" or \"error\")"
    for k in _OBJECTS:
        if r.get(k) is not None and not isinstance(r[k], Mapping):
            return k, f"{json_kind(r[k])}, expected an object"
    for k in _NUMBERS:
        if not _number(r.get(k), label=k == "answer_contains"):
            return k, f"{r[k]!r} is not a number"
    if r["status"] != "ok":
        return None
    q = r.get("question") or {}
    if not isinstance(q.get("type"), str):
        return "question.type", f"{json_kind(q.get('type'))}, expected a string"
    if not isinstance(q.get("evidence", []), list):
        return "question.evidence", f"{json_kind(q['evidence'])}, expected a list of positions"
    if not _number((r.get("judge") or {}).get("label"), label=True):
        return "judge.label", f"{r['judge']['label']!r} is not a label (true / false / null)"
    bad = next((k for k, v in (r.get("timings") or {}).items() if not _number(v)), None)
    if bad is not None:
        return f"timings.{bad}", f"{r['timings'][bad]!r} is not a number of seconds"
    c = r.get("construction")
    if c:
        bad = next((k for k in _COUNTS if not isinstance(c.get(k), (int, float)) or isinstance(c.get(k), bool)), None)
        if bad is not None:
            return f"construction.{bad}", f"{c.get(bad)!r} is not a count"
        if not isinstance(c.get("failures") or {}, Mapping):
            return "construction.failures", "expected an object of failure counts"
        bad = next((k for k in ("n_rewritten", "n_keep_decisions") if c.get(k) is not None and
                    (not isinstance(c[k], int) or isinstance(c[k], bool))), None)
        if bad is not None:
            return f"construction.{bad}", f"{c[bad]!r} is not a count"
    bad_measure = _measures_problem(r.get("memory_measures"))
    if bad_measure is not None:
        return bad_measure
    w = r.get("windows")
    if w is not None and not (isinstance(w, list) and all(
            isinstance(x, Mapping) and isinstance(x.get("output") or {}, Mapping) for x in w)):
        return "windows", "expected a list of window objects (each output an object or null)"
    if r.get("gold_in_pool") is not None and r.get("n_gold") is None:
        return "n_gold", "null, but gold_in_pool is a number (the share needs both)"
    return None


def _measures_problem(m: Mapping | None) -> tuple[str, str] | None:
    """(field, problem) of a record's ``memory_measures`` object when summaries cannot read it."""
    if m is None:
        return None
    for k in MEASURES:
        v = m.get(k)
        if not _number(v) or (v is not None and not 0 <= v <= 1):
            return f"memory_measures.{k}", f"{v!r} is not a share (a number from 0 to 1, or null)"
    for k in ("n_gold", "n_gold_in_memory"):
        v = m.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            return f"memory_measures.{k}", f"{v!r} is not a count"
    if m.get("evidence_match") not in MATCHES:
        return "memory_measures.evidence_match", f"{m.get('evidence_match')!r}, expected one of {MATCHES}"
    return None


def check_records(records: Iterable[Mapping], file: str) -> None:
    """LoadError naming `file`, the record (its place and question id) and the field, for the first
    record (in file order) that ``summarize`` and the reports cannot read: a non-numeric score or
    count, a list where an object belongs, a missing status or question type.

    >>> check_records([{"question_id": "q1", "status": "ok", "question": {"type": "t"}, "answer_f1": "0.5"}],
    ...               "run/records.jsonl")
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: run/records.jsonl: record 1 (question_id 'q1'), field answer_f1: '0.5' is not a number
    """
    for i, r in enumerate(records, start=1):
        bad = _record_problem(r)
        if bad is not None:
            raise LoadError(file, f"record {i} (question_id {r.get('question_id')!r})", *bad)


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

    return {"baseline_dir": baseline_dir, "method": get(baseline, "method"),
            "accuracy": pair(("accuracy", "overall"), "delta"),
            "locomo_f1": pair(("locomo_f1", "overall"), "delta"),
            "memory_tokens": pair(("memory_tokens", "mean"), "reduction"),
            "evidence_recall": pair(("memory_measures", "evidence_recall", "mean"), "delta"),
            "latency_total_mean": pair(("latency_s", "total", "mean"), "ratio")}


def summary_text(s: Mapping) -> str:
    """A short human-readable summary."""
    def f(x, d=3):
        return "-" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))

    c = s["counts"]
    lines = [f"{s.get('method')} on {s.get('dataset')}: {c['ok']} ok, {c['error']} error, {c['missing']} missing "
             f"of {c['selected']} selected"]
    if s.get("accuracy"):
        a = s["accuracy"]
        lines.append(f"accuracy ({s['judge']} judge) {f(a['overall'])} over {a['n']}  "
                     + "  ".join(f"{t} {f(v['mean'])}" for t, v in a["by_type"].items())
                     + f"  (unparseable judge replies counted wrong: {a.get('unparseable', 0)}, skipped "
                       f"{a.get('skipped', 0)}, errored questions {a.get('question_errors', c['error'])})")
    if s.get("locomo_f1"):
        lf = s["locomo_f1"]
        lines.append(f"LoCoMo F1 {f(lf['overall'])}  "
                     + "  ".join(f"{t} {f(v['mean'])}" for t, v in lf["by_category"].items()))
    if s.get("proxy"):
        pr = s["proxy"]
        lines.append(f"proxy (not the paper's metric): answer F1 {f(pr['answer_f1'])}, "
                     f"contains gold {f(pr['answer_contains'])}")
    if s.get("construction"):
        k = s["construction"]
        lines.append(f"gate fmt {f(k['gate_fmt'])}, rewritten {f(k.get('rewritten_rate'))}, "
                     f"gate pass {f(k['gate_pass_rate'])}, gold-keep recall "
                     f"{f(k['gold_keep_recall'])}, {f(k['windows_per_question'], 1)} windows and "
                     f"{f(k['kept_per_question'], 1)} kept messages per question; failures {k['failures']}")
    mm = s.get("memory_measures") or {}
    if mm:
        lines.append(f"memory: evidence recall {f((mm.get('evidence_recall') or {}).get('mean'))}, answer recall in "
                     f"memory {f((mm.get('answer_recall_in_memory') or {}).get('mean'))} (match "
                     + (", ".join(f"{k} {v}" for k, v in mm.get("evidence_match", {}).items()) or "-")
                     + (f"; {mm['unmeasured']} records without measures" if mm.get("unmeasured") else "") + ")")
    m = s["memory_tokens"]
    if m["mean"] is None and m["tokenizer"] == "missing":
        from lazymem.llm.tokens import FETCH_COMMAND

        lines.append(f"memory tokens missing: the Qwen3 tokenizer was not found ({m['n']} of {c['ok']} ok records "
                     f"counted); fetch it with `{FETCH_COMMAND}` and rerun")
    else:
        lines.append(f"memory tokens mean {f(m['mean'], 1)} (tokenizer {m['tokenizer']})")
    lat = s["latency_s"]
    lines.append("latency s (mean/p95): " + "  ".join(
        f"{st} {f(lat[st]['mean'], 2)}/{f(lat[st]['p95'], 2)}" for st in STAGES if lat[st]["n"]))
    if s.get("baseline") and "memory_tokens" in s["baseline"]:
        b = s["baseline"]
        lines.append(f"vs baseline {b['baseline_dir']}: memory tokens reduction "
                     f"{f(b['memory_tokens'].get('reduction'), 1)}x, "
                     f"accuracy delta {f(b['accuracy'].get('delta'))}")
    return "\n".join(lines)


class RunningScore:
    """The progress bar's running numbers over all ok records so far.

    >>> s = RunningScore([{"status": "ok", "judge": {"label": True}}], "longmemeval")
    >>> s.add({"status": "error"}); s.text()
    'acc=1.000 err=1'
    """

    def __init__(self, records: Iterable[dict], judge: str):
        self.judge = judge
        self.labels: list[float] = []
        self.f1: list[float] = []
        self.errors = 0
        self.n_new = self.n_new_errors = 0
        for r in records:
            self._count(r)

    def _count(self, r: dict) -> None:
        if r["status"] != "ok":
            self.errors += 1
            return
        j = r.get("judge")
        if j and j.get("label") is not None:
            self.labels.append(float(j["label"]))
        f = r.get("locomo_f1") if r.get("locomo_f1") is not None else r.get("answer_f1")
        if f is not None:
            self.f1.append(f)

    def add(self, r: dict) -> None:
        self.n_new += 1
        self.n_new_errors += r["status"] != "ok"
        self._count(r)

    def text(self) -> str:
        parts = []
        if self.judge != "none":
            parts.append(f"acc={statistics.fmean(self.labels):.3f}" if self.labels else "acc=-")
        if self.f1:
            parts.append(f"f1={statistics.fmean(self.f1):.3f}")
        parts.append(f"err={self.errors}")
        return " ".join(parts)
