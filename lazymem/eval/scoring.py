"""A run's numbers from its records: summary.json, the baseline comparison, the text summary, the running score.

``summarize`` gives accuracy per type (judge labels), LoCoMo F1 per category, Gate Fmt.,
gold-keep recall, memory tokens, latency percentiles per stage and counts;
``compare_with_baseline`` the ratios to a baseline run.

>>> percentiles([1.0, 2.0, 3.0, 4.0])["median"]
2.5
"""
from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, Sequence

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
        labels = [r["judge"]["label"] for r in ok if r.get("judge") and r["judge"]["label"] is not None]
        out["accuracy"] = {
            "overall": _mean([float(x) for x in labels]), "n": len(labels),
            "unjudged": sum(1 for r in ok if not r.get("judge") or r["judge"]["label"] is None),
            "skipped": sum(1 for r in ok if r.get("judge") and r["judge"].get("skipped")),
            "unparseable": sum(1 for r in ok if r.get("judge") and r["judge"].get("unparseable")),
            "judge_errors": sum(1 for r in latest.values() if (r.get("judge") or {}).get("error")),
            "question_errors": counts["error"],
            "by_type": by_group(abbrev, lambda r: None if not r.get("judge") else r["judge"]["label"]),
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
        out["construction"] = {
            **tot, "gate_fmt": tot["n_fmt"] / tot["n_windows"] if tot["n_windows"] else None,
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
        "rerankers": sorted({r["pool"]["reranker"] for r in pooled if r.get("pool")})}
    toks = [r["memory_tokens"] for r in ok if r.get("memory_tokens") is not None]
    tokenizers = sorted({r.get("tokenizer") for r in ok if r.get("tokenizer")})
    out["memory_tokens"] = {"mean": _mean(toks), "n": len(toks),
                            "tokenizer": "qwen3" if toks else (tokenizers[0] if tokenizers else None)}
    out["latency_s"] = {s: percentiles([r["timings"][s] for r in ok if r.get("timings", {}).get(s) is not None])
                        for s in STAGES}
    calls = [w.get("output") for r in ok for w in r.get("windows") or () if w.get("output")]
    answers = [r["answer_output"] for r in ok if r.get("answer_output")]
    out["calls"] = {"mpm": len(calls), "mpm_cached": sum(bool(c["cached"]) for c in calls),
                    "answer": len(answers), "answer_cached": sum(bool(c["cached"]) for c in answers),
                    "note": "latencies of cached calls are cache reads, not model time"}
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

    return {"baseline_dir": baseline_dir, "method": get(baseline, "method"),
            "accuracy": pair(("accuracy", "overall"), "delta"),
            "locomo_f1": pair(("locomo_f1", "overall"), "delta"),
            "memory_tokens": pair(("memory_tokens", "mean"), "reduction"),
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
        lines.append(f"gate fmt {f(k['gate_fmt'])}, gate pass {f(k['gate_pass_rate'])}, gold-keep recall "
                     f"{f(k['gold_keep_recall'])}, {f(k['windows_per_question'], 1)} windows and "
                     f"{f(k['kept_per_question'], 1)} kept messages per question; failures {k['failures']}")
    m = s["memory_tokens"]
    lines.append(f"memory tokens mean {f(m['mean'], 1)} (tokenizer {m['tokenizer']})")
    lat = s["latency_s"]
    lines.append("latency s (mean/p95): " + "  ".join(
        f"{st} {f(lat[st]['mean'], 2)}/{f(lat[st]['p95'], 2)}" for st in STAGES if lat[st]["n"]))
    if s.get("baseline") and "memory_tokens" in s["baseline"]:
        b = s["baseline"]
        lines.append(f"vs baseline {b['baseline_dir']}: memory tokens reduction {f(b['memory_tokens'].get('reduction'), 1)}x, "
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
