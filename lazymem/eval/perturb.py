"""Memory perturbation study (the paper's appendix "Downstream perturbation").

For each question, a full-gold memory is compared with paired variants: drop one gold
message (each gold message in turn), drop all gold, and add 1, 5 or all local non-gold
messages (the non-gold messages of the question's windows: retrieval + windowing as in the
pipeline; random additions drawn ``draws`` times). Each memory is answered with the same
answer model and prompt (``answer_text``) and scored (judge label, else LoCoMo F1 / the
answer-F1 proxy); the variants of one question are averaged first, then accuracy, the
paired change from full gold with a question-level paired bootstrap 95% interval, the share
of initially correct answers flipped to incorrect (C->I) and the mean memory tokens are
reported, as in the paper's Table tab:action_reward_perturbation.

>>> sorted(variants([1, 2], [5, 6, 7], "drop_one_gold"))
[[1], [2]]
>>> [len(v) for v in variants([1], [5, 6, 7], "add_1_nongold", draws=2, seed=0)]
[2, 2]
"""
from __future__ import annotations

import random
import statistics
from typing import TYPE_CHECKING, Any, Callable, Sequence

from lazymem.prompts import PROMPTS, text_memory
from lazymem.records import History, Question
from lazymem.stats import paired_bootstrap

if TYPE_CHECKING:
    from lazymem.llm import LLMClient, Sampling

CONDITIONS = ("full_gold", "drop_one_gold", "drop_all_gold", "add_1_nongold", "add_5_nongold", "add_all_nongold")


def variants(gold: Sequence[int], nongold: Sequence[int], condition: str, draws: int = 3,
             seed: int = 0) -> list[list[int]]:
    """The memories (sorted positions) of one condition for one question."""
    gold, nongold = sorted(gold), sorted(set(nongold) - set(gold))
    if condition == "full_gold":
        return [gold]
    if condition == "drop_one_gold":
        return [[p for p in gold if p != g] for g in gold]
    if condition == "drop_all_gold":
        return [[]]
    if condition == "add_all_nongold":
        return [sorted(gold + nongold)]
    if condition in ("add_1_nongold", "add_5_nongold"):
        k = 1 if condition == "add_1_nongold" else 5
        if len(nongold) <= k:
            return [sorted(gold + nongold)]
        rng = random.Random(f"{seed}:{condition}:{gold}")
        return [sorted(gold + rng.sample(nongold, k)) for _ in range(draws)]
    raise ValueError(f"condition {condition!r}: one of {CONDITIONS}")


def perturbation_study(items: Sequence[tuple[History, Question, Sequence[int]]], answer: "LLMClient",
                       sampling: "Sampling", score: Callable[[Question, str], float | None],
                       conditions: Sequence[str] = CONDITIONS, draws: int = 3, seed: int = 0,
                       count_tokens: Callable[[str], int] | None = None, n_resamples: int = 9999) -> dict:
    """Run the study over (history, question, local non-gold positions) items.

    ``score(question, answer) -> 0..1`` (a judge label or F1); questions without gold evidence
    are skipped. All answer prompts go to ``answer`` in one ``generate`` call per condition.
    """
    items = [(h, q, ng) for h, q, ng in items if q.evidence]
    per_q: dict[str, dict[str, float]] = {c: {} for c in conditions}
    tokens: dict[str, list[int]] = {c: [] for c in conditions}
    answers: dict[str, dict[str, list[str]]] = {c: {} for c in conditions}
    for c in conditions:
        prompts, owners = [], []
        for h, q, ng in items:
            for v in variants(q.evidence, ng, c, draws, seed):
                memory = text_memory([h[p] for p in v])
                prompts.append(PROMPTS["answer_text"].messages(query_time=q.query_time, query=q.text,
                                                               memory_text=memory))
                owners.append(q)
                if count_tokens is not None:
                    tokens[c].append(count_tokens(memory))
        outs = answer.generate(prompts, sampling) if prompts else []
        scores: dict[str, list[float]] = {}
        for q, o in zip(owners, outs):
            text = "" if o.error is not None else o.text.strip()
            answers[c].setdefault(q.id, []).append(text)
            s = score(q, text)
            if s is not None:
                scores.setdefault(q.id, []).append(float(s))
        per_q[c] = {qid: statistics.fmean(v) for qid, v in scores.items()}
    base = per_q.get("full_gold", {})
    rows = []
    for c in conditions:
        s = per_q[c]
        row: dict[str, Any] = {"condition": c, "questions": len(s),
                               "accuracy": statistics.fmean(s.values()) if s else None,
                               "tokens": statistics.fmean(tokens[c]) if tokens[c] else None,
                               "delta": None, "low": None, "high": None, "c_to_i": None}
        if c != "full_gold" and base:
            b = paired_bootstrap(s, base, n_resamples=n_resamples, seed=seed)
            row.update(delta=b["delta"], low=b["low"], high=b["high"])
            correct = [qid for qid, v in base.items() if v >= 0.5 and qid in s]
            row["c_to_i"] = statistics.fmean(1.0 - s[qid] for qid in correct) if correct else None
        rows.append(row)
    return {"rows": rows, "per_question": per_q, "answers": answers, "draws": draws, "seed": seed}


def perturbation_markdown(study: dict) -> str:
    """The study as the paper's table: Acc., Delta (95% CI), C->I, Tok."""
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}"

    lines = ["| memory | questions | Acc. (%) | Delta (pp) [95% CI] | C->I (%) | Tok. |", "|---|---:|---:|---|---:|---:|"]
    for r in study["rows"]:
        ci = "-" if r["delta"] is None else f"{pct(r['delta'])} [{pct(r['low'])}, {pct(r['high'])}]"
        tok = "-" if r["tokens"] is None else f"{r['tokens']:,.0f}"
        lines.append(f"| {r['condition']} | {r['questions']} | {pct(r['accuracy'])} | {ci} | {pct(r['c_to_i'])} | {tok} |")
    return "\n".join(lines) + "\n"
