"""Measures of the memory itself, independent of the answer model: evidence recall and answer recall.

With a 135M answerer every system's LoCoMo F1 is near zero, so scores cannot tell a good memory
from a bad one. These two per-question numbers look at the memory block handed to the answer
model (a record's ``memory``) instead, like LongMemEval's retrieval recall:

- ``evidence_recall``: the share of the question's gold messages (ALL of ``question.evidence``,
  not only those the windows showed) present in the memory; None when it has no gold evidence
  (abstention questions, LoCoMo adversarial ones without evidence).
- ``answer_recall_in_memory``: the share of the gold answer's distinct tokens (LoCoMo's official
  normalisation and Porter stems, ``lazymem.answers.answer_recall``; a list answer is joined with
  commas; category 3's gold is cut at its first ";" as the official scorer does) found among the
  memory text's tokens. None when the gold answer has no token after normalisation, and for
  questions whose gold is an abstention (LongMemEval ``_abs``, LoCoMo category 5).

How a gold message counts as present (``evidence_match`` in the record):

- ``"identity"``: methods whose memory is made of messages, by position: lazymem and extractive
  (the KEEP decisions: a kept message counts even when its content was rewritten), rag (the
  pool's top-n messages), oracle_turn (the gold turns), oracle_session (every message of the gold
  sessions), full (every message).
- ``"text"``: methods that write new text, whose lines cannot be traced to positions: mem0 (its
  facts) and nanomemory (its memory is the pruning call's reply: the record says which sessions
  the pruner was *shown*, which ``gold_in_pool`` already counts, not what its reply kept), and any
  method not listed above. THE TEXT RULE: a gold message is present when one memory line
  (the memory split on newlines) holds at least half of the message's content stems
  (``content_stems``: the project's word tokenizer with its stopword list, ``lazymem.text``, then
  LoCoMo's normalisation and Porter stems), and at least two of them (all of them when the
  message has fewer than two); a message without any content stem is never found.

Known errors of the text rule. False negatives: paraphrase with other words (synonyms,
"yesterday" resolved to a date, "I" resolved to a name), and a long chatty message condensed into
a short fact (the fact holds under half of the message's stems). False positives: short gold
messages (two or three content stems, e.g. a name and a verb) matched by any line that shares
them; a memory written as one long line (a pruner that echoes everything on one line) covers every
message it repeats, relevant or not; the ``[date] speaker:`` prefix of a line adds date and name
stems.

Known errors of answer recall: it credits a memory that repeats the question when the question
names its answer ("walking tours or a camping trip?": a pruner that restates the question holds
every gold token), and gold tokens found anywhere in the memory (a "3" in a date for the answer
"3"); it misses answers the memory implies but does not spell (a count of events, "3 days"
between two dates, a preference rubric).

>>> m = measure_memory("rag", "[2023/05/01] user: I adopted a corgi named Biscuit.", [1, 4], {1, 2, 3},
...                    ["I adopted a corgi named Biscuit.", "Biscuit loves the beach."], "Biscuit")
>>> d = m.to_dict()
>>> d["evidence_recall"], d["n_gold"], d["n_gold_in_memory"], d["answer_recall_in_memory"], d["evidence_match"]
(0.5, 2, 1, 1.0, 'identity')
>>> sorted(d)
['answer_recall_in_memory', 'evidence_match', 'evidence_recall', 'n_gold', 'n_gold_in_memory']

Audited measures (questions loaded with LoCoMo errata, ``Question.audit``; ``audited_summary``,
the summary's ``audited`` object): beside each published measure the same measure against the
errata's corrected evidence (``evidence_recall``, ``gold_keep_recall``) and corrected answer
(``answer_recall_in_memory``); LoCoMo F1 and judge accuracy over all questions, the clean ones
(no erratum) and those whose published answer is right (clean or wrong citation); and the
ceiling: the share of questions whose published answer is right, overall and by category. The
memory is the one the run built (an Oracle Turn memory holds the published evidence, its audited
recall says how much of the corrected evidence that is). Category 5 questions (``"unaudited"``)
are left out of the audited object.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from lazymem.answers import answer_recall, answer_tokens
from lazymem.text import tokenize

if TYPE_CHECKING:
    from lazymem.eval.records import ConstructionRecord, RunRecord
    from lazymem.records import Dataset, History, Question

MATCHES = ("identity", "text")
MIN_COVERAGE = 0.5  # the text rule: share of a gold message's content stems one memory line must hold
MIN_SHARED = 2  # ... and at least this many of them (all, for a message with fewer)
MEASURES = ("evidence_recall", "answer_recall_in_memory")


@dataclass(frozen=True)
class MemoryMeasures:
    """One question's memory measures (the record's ``memory_measures`` object)."""

    evidence_recall: float | None  # gold messages in memory / gold messages; None without gold
    n_gold: int  # the question's gold messages (distinct positions)
    n_gold_in_memory: int | None  # of those, present in the memory; None without gold
    answer_recall_in_memory: float | None  # gold answer tokens in the memory text / gold answer tokens
    evidence_match: str  # "identity" (by position) or "text" (the text rule)

    def to_dict(self) -> dict:
        return asdict(self)


def content_stems(text: str) -> frozenset[str]:
    """The text rule's tokens: words without stopwords (``lazymem.text.tokenize``), LoCoMo-normalised, stemmed.

    >>> sorted(content_stems("I went to an LGBTQ support group, and it was SO powerful!"))
    ['group', 'lgbtq', 'power', 'support', 'went']
    """
    return frozenset(answer_tokens(" ".join(tokenize(text))))


def line_covers(line: frozenset[str], gold: frozenset[str]) -> bool:
    """Whether a memory line's stems hold a gold message's (see the module docstring's text rule).

    >>> g = content_stems("I went to an LGBTQ support group yesterday.")
    >>> line_covers(content_stems("Caroline went to an LGBTQ support group on 7 May 2023"), g)
    True
    >>> line_covers(content_stems("Caroline attended a support meeting"), g)
    False
    >>> line_covers(content_stems("Thanks Mel!"), content_stems("Thanks, Caroline!"))
    False
    """
    shared = len(gold & line)
    return bool(gold) and shared >= min(MIN_SHARED, len(gold)) and shared >= MIN_COVERAGE * len(gold)


def gold_in_text(memory: str, gold_texts: Sequence[str]) -> int:
    """How many of the gold messages' texts the memory holds under the text rule.

    >>> gold_in_text("[7 May 2023] Caroline went to an LGBTQ support group\\nMelanie paints", [
    ...     "I went to a LGBTQ support group yesterday and it was so powerful.", "I love painting sunsets!"])
    1
    """
    lines = [content_stems(line) for line in memory.splitlines() if line.strip()]
    return sum(any(line_covers(line, content_stems(t)) for line in lines) for t in gold_texts)


def measure_memory(
    method: str,
    memory: str,
    evidence: Iterable[int],
    positions: Iterable[int] | None,
    gold_texts: Sequence[str],
    answer: Any,
    category: int | None = None,
    abstention: bool = False,
) -> MemoryMeasures:
    """The measures of one memory.

    Args:
        method: the pipeline method (says nothing by itself: ``positions`` decides the match).
        memory: the memory block handed to the answer model.
        evidence: the question's gold positions.
        positions: the positions whose messages are in the memory (identity match), or None when
            its lines cannot be traced to positions (text match over ``gold_texts``).
        gold_texts: the gold messages' texts, in the order of ``sorted(set(evidence))``.
        answer, category, abstention: the gold answer and what ``answer_recall`` needs.
    """
    gold = sorted(set(evidence))
    if positions is not None:
        found, match = len(set(gold) & set(positions)), "identity"
    else:
        if len(gold_texts) != len(gold):
            raise ValueError(f"method {method}: {len(gold_texts)} gold texts for {len(gold)} gold positions")
        found, match = gold_in_text(memory, gold_texts), "text"
    return MemoryMeasures(
        evidence_recall=found / len(gold) if gold else None,
        n_gold=len(gold),
        n_gold_in_memory=found if gold else None,
        answer_recall_in_memory=answer_recall(memory, answer, category, abstention),
        evidence_match=match,
    )


def memory_positions(record: RunRecord, question: Question, history: History) -> set[int] | None:
    """Positions whose messages make up a record's memory, or None when the method writes new text
    (its ``Method.memory_positions``): lazymem / extractive: KEEP decisions; rag: the pool;
    oracle_turn: the gold; oracle_session: the gold sessions; full: all; nanomemory, mem0: None.
    """
    from lazymem.pipeline.methods import method_class, method_names

    name = record.method
    if name not in method_names():
        return None
    return method_class(name).memory_positions(record, question, history)


def measure_record(record: RunRecord | Mapping, question: Question, history: History) -> MemoryMeasures:
    """The measures of a run record's memory (``lazymem.eval.runner.run_question`` stores them); a raw
    record (a dict) is read with ``RunRecord.from_json``."""
    from lazymem.eval.records import RunRecord

    record = RunRecord.of(record)
    gold = sorted(set(question.evidence))
    positions = memory_positions(record, question, history)
    texts = [history[p].text for p in gold] if positions is None else []
    return measure_memory(
        str(record.method),
        record.memory or "",
        gold,
        positions,
        texts,
        question.answer,
        question.category,
        question.abstention,
    )


def audited_question(record: RunRecord | Mapping, question: Question, history: History) -> dict:
    """One ok record's measures against the question's errata (``audited_evidence``, ``audited_answer``),
    and the gold of the windows it showed (``gold_shown``) and kept (``gold_kept``), published and audited.

    >>> from lazymem.records import Message, History, Question
    >>> h = History("h", tuple(Message(i, f"D1:{i}", "s1", i, "A", t, "") for i, t in
    ...                         enumerate(["I live in Rome.", "I moved to Paris.", "Nice."])))
    >>> q = Question("h:q0", "single-hop", "Where?", "Rome", "h", evidence=(0,), category=4,
    ...              audit="hallucination", audited_evidence=(1,), audited_answer="Paris")
    >>> rec = {"question_id": "h:q0", "method": "rag", "status": "ok", "memory": "A: I moved to Paris.",
    ...        "pool": {"positions": [1, 2]}}
    >>> a = audited_question(rec, q, h)
    >>> a["evidence_recall"], a["evidence_recall_audited"], a["answer_recall_in_memory_audited"]
    (0.0, 1.0, 1.0)
    """
    from lazymem.eval.records import RunRecord

    record = RunRecord.of(record)
    published = measure_record(record, question, history)
    fixed = sorted(set(question.audited_evidence))
    positions = memory_positions(record, question, history)
    texts = [history[p].text for p in fixed] if positions is None else []
    audited = measure_memory(
        str(record.method),
        record.memory or "",
        fixed,
        positions,
        texts,
        question.audited_answer,
        question.category,
        question.abstention,
    )
    out = {
        "evidence_recall": published.evidence_recall,
        "evidence_recall_audited": audited.evidence_recall,
        "answer_recall_in_memory": published.answer_recall_in_memory,
        "answer_recall_in_memory_audited": audited.answer_recall_in_memory,
    }
    if record.construction is not None and record.windows is not None:
        shown, kept = record.window_positions, record.kept_positions
        for suffix, gold in (("", set(question.evidence)), ("_audited", set(fixed))):
            out[f"gold_shown{suffix}"] = len(gold & shown)
            out[f"gold_kept{suffix}"] = len(gold & shown & kept)
    return out


def _mean_n(values: Iterable[float | bool | None]) -> dict:
    """{"mean", "n"} over the values that are not None (mean None when there are none)."""
    vs = [float(v) for v in values if v is not None]
    return {"mean": statistics.fmean(vs) if vs else None, "n": len(vs)}


def _keep(built: Sequence[Mapping], suffix: str) -> dict:
    """Gold kept / gold shown summed over questions (as ``summarize``'s gold-keep recall), with the counts."""
    shown = sum(m[f"gold_shown{suffix}"] for m in built)
    kept = sum(m[f"gold_kept{suffix}"] for m in built)
    return {"mean": kept / shown if shown else None, "n_gold_shown": shown, "n_gold_kept": kept}


def audited_summary(records: Iterable[RunRecord | Mapping], dataset: Dataset, selected: Sequence[str] | None = None):
    """The summary's ``audited`` object (see the module docstring) over a run's latest records, or None
    when the dataset carries no errata. Counts and the ceiling are over the recorded questions; the
    measures over ok records. A record whose question is not in the dataset is a ValueError."""
    from lazymem.eval.records import RunRecord
    from lazymem.eval.runfiles import latest_records

    if not dataset.errata_sha256:
        return None
    latest = latest_records(RunRecord.of(r) for r in records)
    if selected is not None:
        latest = {i: latest[i] for i in selected if i in latest}
    questions = {q.id: q for q in dataset.questions}
    unknown = sorted(set(latest) - set(questions))
    if unknown:
        raise ValueError(f"records of questions not in {dataset.name!r}: {unknown[:3]}")
    asked = [questions[i] for i in latest if questions[i].audit not in ("", "unaudited")]
    rows = [(latest[q.id], q, audited_question(latest[q.id], q, dataset.history(q))) for q in asked if latest[q.id].ok]
    out: dict[str, Any] = {
        "errata": {"source": dataset.errata_source, "sha256": dataset.errata_sha256},
        "questions": len(asked),
        "ok": len(rows),
        "flagged": sum(q.audit != "clean" for q in asked),
        "wrong_citation": sum(q.audit == "wrong_citation" for q in asked),
        "wrong_answer": sum(q.answer_is_wrong for q in asked),
        "by_audit": {a: n for a, n in sorted(Counter(q.audit for q in asked).items())},
    }
    for name in ("evidence_recall", "answer_recall_in_memory"):
        out[name] = {
            "published": _mean_n(m[name] for _, _, m in rows),
            "audited": _mean_n(m[f"{name}_audited"] for _, _, m in rows),
        }
    built = [m for _, _, m in rows if "gold_shown" in m]
    out["gold_keep_recall"] = None
    if built:
        out["gold_keep_recall"] = {
            kind: _keep(built, sfx) for kind, sfx in (("published", ""), ("audited", "_audited"))
        }
    groups = {
        "all": lambda q: True,
        "clean": lambda q: q.audit == "clean",
        "answer_right": lambda q: not q.answer_is_wrong,
    }
    for name, value in (("locomo_f1", lambda r: r.locomo_f1), ("accuracy", lambda r: r.label)):
        got = {g: _mean_n(value(r) for r, q, _ in rows if keep(q)) for g, keep in groups.items()}
        out[name] = got if got["all"]["n"] else None
    by_type: dict[str, list[Question]] = {}
    for q in sorted(asked, key=lambda q: (q.category or 0, q.type)):
        by_type.setdefault(q.type, []).append(q)
    out["ceiling"] = {
        "overall": _mean_n(not q.answer_is_wrong for q in asked)["mean"],
        "by_category": {t: _mean_n(not q.answer_is_wrong for q in qs)["mean"] for t, qs in by_type.items()},
    }
    return out


def summarize_measures(ok: Sequence[RunRecord]) -> dict:
    """Means with counts over ok records; a mean is None (never a part's mean, never 0) when some ok
    record has no ``memory_measures`` (records written before the field existed: ``unmeasured``).

    >>> from lazymem.eval.records import RunRecord
    >>> def rec(**m):
    ...     return RunRecord.from_json({"question_id": "q", "method": "rag", "status": "ok",
    ...                                 **({"memory_measures": m} if m else {})})
    >>> new = rec(evidence_recall=0.5, answer_recall_in_memory=None, evidence_match="identity")
    >>> s = summarize_measures([new, rec(evidence_recall=1.0, evidence_match="identity")])
    >>> s["evidence_recall"], s["answer_recall_in_memory"], s["evidence_match"]
    ({'mean': 0.75, 'n': 2}, {'mean': None, 'n': 0}, {'identity': 2})
    >>> summarize_measures([new, rec()])["evidence_recall"], summarize_measures([rec()])["unmeasured"]
    ({'mean': None, 'n': 1}, 1)
    """
    measured = [r.memory_measures for r in ok if r.memory_measures is not None]
    unmeasured = len(ok) - len(measured)
    out: dict[str, Any] = {}
    for name in MEASURES:
        values = [float(getattr(m, name)) for m in measured if getattr(m, name) is not None]
        out[name] = {"mean": statistics.fmean(values) if values and not unmeasured else None, "n": len(values)}
    matches: dict[str, int] = {}
    for m in measured:
        matches[str(m.evidence_match)] = matches.get(str(m.evidence_match), 0) + 1
    return {**out, "evidence_match": dict(sorted(matches.items())), "unmeasured": unmeasured}


def question_measures(latest: Mapping[str, RunRecord], name: str) -> dict[str, float]:
    """Per-question values of one measure over ok records (for paired intervals), None skipped.

    >>> from lazymem.eval.records import RunRecord
    >>> recs = [{"question_id": "q1", "status": "ok", "memory_measures": {"evidence_recall": 0.5}},
    ...         {"question_id": "q2", "status": "ok"}, {"question_id": "q3", "status": "error"}]
    >>> question_measures({d["question_id"]: RunRecord.from_json(dict(d, method="rag")) for d in recs},
    ...                   "evidence_recall")
    {'q1': 0.5}
    """
    out: dict[str, float] = {}
    for qid, r in latest.items():
        v = getattr(r.memory_measures, name) if r.ok and r.memory_measures is not None else None
        if v is not None:
            out[qid] = float(v)
    return out


def rewritten_rate(cons: Sequence[ConstructionRecord]) -> tuple[int | None, float | None]:
    """(KEEPs rewritten, their share of KEEP decisions) over records' ``construction`` objects.

    ``n_rewritten`` (KEEPs whose content is not a verbatim span of their own message) is out of
    ``n_keep_decisions`` when the records give it, else of ``n_kept`` (positions kept). (None, None)
    when any record lacks ``n_rewritten`` (made before it existed): missing, never 0.

    >>> from lazymem.eval.records import ConstructionRecord
    >>> def c(**kw):
    ...     return ConstructionRecord(n_windows=1, n_valid=1, n_fmt=1, n_messages=4, n_decided=4, n_kept=2,
    ...                               n_gold=0, n_gold_kept=0, failures={}, **kw)
    >>> rewritten_rate([c(n_rewritten=1, n_keep_decisions=4), c(n_rewritten=0, n_keep_decisions=0)])
    (1, 0.25)
    >>> rewritten_rate([c(n_rewritten=1), c()])
    (None, None)
    """
    if not cons or any(c.n_rewritten is None for c in cons):
        return None, None
    n = sum(int(c.n_rewritten) for c in cons)
    key = "n_keep_decisions" if all(c.n_keep_decisions is not None for c in cons) else "n_kept"
    out_of = sum(int(getattr(c, key) or 0) for c in cons)
    return n, n / out_of if out_of else None
