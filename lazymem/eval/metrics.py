"""Retrieval and evidence-coverage metrics: LongMemEval's recall/NDCG and the paper's All@k.

recall_any, recall_all and ndcg_any reproduce `src/retrieval/eval_utils.py` of
xiaowu0162/LongMemEval (MIT licence, Copyright (c) 2024 Di Wu), including its DCG, in
which the first two ranks both have weight 1 (rank i >= 1, 0-based, is divided by
log2(i + 1)), and its ideal ranking, which puts every gold item of the corpus first.
The official script scores every non-abstention question and averages at
k in {1, 3, 5, 10, 30, 50}; here a question with no gold evidence gets None (recall_all
would otherwise be a vacuous 1.0) and every mean skips None.

All@k (paper Table 2) is the fraction of questions whose complete gold evidence lies
inside the top-k retrieved messages augmented with their radius-w windows.

>>> retrieval_metrics([3, 1, 2], {1, 2}, ks=(1, 3))
{'recall_any@1': 0.0, 'recall_all@1': 0.0, 'ndcg_any@1': 0.0, 'recall_any@3': 1.0, 'recall_all@3': 1.0, 'ndcg_any@3': 0.8154648767857288}
"""  # noqa: E501  (a doctest's expected output is one line)

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping, Sequence

from lazymem.records import Dataset
from lazymem.retrieve import Window, WindowConfig, build_windows, merge_spans, session_starts, window_stats

DEFAULT_KS = (1, 3, 5, 10, 30, 50)  # the official script's cut-offs


def _top(ranked: Sequence, k: int) -> Sequence:
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if len(set(ranked)) != len(ranked):
        # The official rankings are argsorts, never repeating an item; a repeat would
        # count one gold item twice in the DCG (NDCG above 1).
        seen = set()
        dup = next(x for x in ranked if x in seen or seen.add(x))
        raise ValueError(f"ranked list repeats item {dup!r}")
    return ranked[:k]


def recall_any(ranked: Sequence, gold: Collection, k: int) -> float | None:
    """1.0 if any gold item is in the top k, else 0.0; None when there is no gold.

    >>> recall_any([3, 1, 2], {1, 2}, 1), recall_any([3, 1, 2], {1, 2}, 2)
    (0.0, 1.0)
    """
    top = set(_top(ranked, k))
    if not gold:
        return None
    return float(any(g in top for g in gold))


def recall_all(ranked: Sequence, gold: Collection, k: int) -> float | None:
    """1.0 if every gold item is in the top k, else 0.0; None when there is no gold.

    >>> recall_all([3, 1, 2], {1, 2}, 2), recall_all([3, 1, 2], {1, 2}, 3)
    (0.0, 1.0)
    """
    top = set(_top(ranked, k))
    if not gold:
        return None
    return float(all(g in top for g in gold))


def dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's DCG@k: rel[0] + sum over i >= 1 of rel[i] / log2(i + 1).

    >>> dcg([0, 1, 1], 3)  # 0 + 1/log2(2) + 1/log2(3)
    1.6309297535714575
    """
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return float(rel[0]) + sum(r / math.log2(i + 1) for i, r in enumerate(rel[1:], start=1))


def ndcg_any(ranked: Sequence, gold: Collection, k: int) -> float | None:
    """LongMemEval's NDCG@k with binary relevance; None when there is no gold.

    The ideal ranking puts all gold items first, so its DCG@k is that of
    min(len(gold), k) ones. Every gold item is assumed to be in the corpus (true for
    message positions of one history), as in the official code where gold ids come
    from the corpus.

    >>> ndcg_any([3, 1, 2], {1, 2}, 3)  # (1 + 1/log2 3) / (1 + 1)
    0.8154648767857288
    """
    top = _top(ranked, k)
    gold = set(gold)
    if not gold:
        return None
    ideal = dcg([1] * min(len(gold), k), k)
    return dcg([1 if x in gold else 0 for x in top], k) / ideal


def retrieval_metrics(ranked: Sequence, gold: Collection, ks: Iterable[int] = DEFAULT_KS) -> dict[str, float | None]:
    """recall_any@k, recall_all@k and ndcg_any@k for each k, keyed as the official script.

    >>> retrieval_metrics([5, 9], {9}, ks=(1,))
    {'recall_any@1': 0.0, 'recall_all@1': 0.0, 'ndcg_any@1': 0.0}
    """
    out: dict[str, float | None] = {}
    for k in ks:
        out[f"recall_any@{k}"] = recall_any(ranked, gold, k)
        out[f"recall_all@{k}"] = recall_all(ranked, gold, k)
        out[f"ndcg_any@{k}"] = ndcg_any(ranked, gold, k)
    return out


def mean_skip_none(values: Iterable[float | bool | None]) -> float | None:
    """Mean over the values that are not None; None if there are none.

    >>> mean_skip_none([1.0, None, 0.0, True])
    0.6666666666666666
    """
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def all_covered(
    pool: Sequence[int],
    gold: Collection[int],
    k: int,
    w: int,
    n_messages: int,
    L: int = 8,
    s: int = 7,
    cross_sessions: bool = True,
    boundaries: Sequence[int] | None = None,
) -> bool | None:
    """Whether every gold position lies in the windows built from the top-k pool (All@k).

    The windows' union is the union of the merged spans (splitting into L/s sub-windows
    only adds overlap), so L and s are validated but do not change the answer; with
    w = 0 this is plain membership in the top k. None when there is no gold evidence.

    Args:
        pool: ranked retrieved positions (best first).
        gold: gold evidence positions.
        k: how many pool entries to keep.
        w: window radius.
        n_messages: history length.
        L, s: sub-window length and stride (kept for parity with WindowConfig).
        cross_sessions: False keeps windows inside sessions (then boundaries are needed).
        boundaries: sorted session start positions.

    >>> all_covered([10, 40], [12, 41], k=2, w=2, n_messages=100)
    True
    >>> all_covered([10, 40], [12, 41], k=1, w=2, n_messages=100)
    False
    >>> all_covered([10, 40], [12], k=2, w=0, n_messages=100)
    False
    """
    WindowConfig(w=w, L=L, s=s, cross_sessions=cross_sessions)  # validates
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    gold = set(gold)
    for g in gold:
        if not 0 <= g < n_messages:
            raise ValueError(f"gold position {g} outside the history [0, {n_messages})")
    if not gold:
        return None
    if cross_sessions:
        boundaries = None
    elif boundaries is None:
        raise ValueError("cross_sessions=False needs session boundaries")
    spans = merge_spans(pool[:k], n_messages, w, boundaries)
    starts = [a for a, _ in spans]
    for g in gold:
        i = bisect_right(starts, g) - 1
        if i < 0 or g > spans[i][1]:
            return False
    return True


def all_at_k(per_question: Iterable[bool | None]) -> float | None:
    """All@k over questions: the mean of all_covered results, skipping None.

    >>> all_at_k([True, False, None, True])
    0.6666666666666666
    """
    return mean_skip_none(per_question)


def gold_in_windows(windows: Sequence[Window], gold: Collection[int]) -> float | None:
    """Fraction of distinct gold positions inside at least one window; None without gold.

    >>> gold_in_windows(build_windows(100, [10]), [9, 50])
    0.5
    """
    gold = set(gold)
    if not gold:
        return None
    covered = {p for w in windows for p in w.positions}
    return len(gold & covered) / len(gold)


def coverage_table(
    pools: Mapping[str, Sequence[int]],
    dataset: Dataset,
    k: int = 50,
    radii: Iterable[int] = (0, 1, 2, 3),
    ks: Iterable[int] = DEFAULT_KS,
    config: WindowConfig | None = None,
) -> dict:
    """Coverage of a dataset's gold evidence by ranked pools: All@k per radius, recall, windows.

    Questions with no gold evidence, and abstention questions (the official script skips
    `_abs`), count in n_questions and window_stats but not in any coverage or recall
    mean. Every question of the dataset needs a pool (KeyError naming it otherwise);
    subset the dataset to evaluate part of it.

    Args:
        pools: ranked retrieved positions per question id (best first).
        dataset: a lazymem.records.Dataset.
        k: pool size used for All@k and windows.
        radii: radii w to evaluate.
        ks: cut-offs for the LongMemEval recall metrics.
        config: L, s and cross_sessions for the windows (its w is ignored).

    Returns:
        A JSON-safe dict: n_questions, n_with_evidence, k, all_at_k {str(w): value},
        recall {"recall_any@5": mean, ...}, by_type {type: {n, all_at_k}},
        window_stats {str(w): {P, M, processed, covered}} (means per question).
    """
    config = config or WindowConfig()
    radii = [int(w) for w in radii]
    ks = list(ks)
    covered: dict[int, list] = {w: [] for w in radii}
    recall: dict[str, list] = {}
    by_type: dict[str, dict] = {}
    stats: dict[int, dict[str, list]] = {w: {"P": [], "M": [], "processed": [], "covered": []} for w in radii}
    n_with = 0
    for q in dataset.questions:
        if q.id not in pools:
            raise KeyError(f"no retrieval pool for question {q.id!r} of dataset {dataset.name!r}")
        history = dataset.history(q)
        n = len(history)
        pool = list(pools[q.id])
        top = pool[:k]
        bounds = None if config.cross_sessions else session_starts(history)
        gold = () if q.abstention else tuple(q.evidence)
        t = by_type.setdefault(q.type, {"n": 0, "all_at_k": {w: [] for w in radii}})
        if gold:
            n_with += 1
            t["n"] += 1
            for name, value in retrieval_metrics(pool, gold, ks).items():
                recall.setdefault(name, []).append(value)
        for w in radii:
            cfg = WindowConfig(w=w, L=config.L, s=config.s, cross_sessions=config.cross_sessions)
            st = window_stats(build_windows(n, top, cfg, boundaries=bounds))
            for key in stats[w]:
                stats[w][key].append(st[key])
            if gold:
                c = all_covered(top, gold, k, w, n, config.L, config.s, config.cross_sessions, bounds)
                covered[w].append(c)
                t["all_at_k"][w].append(c)
    return {
        "n_questions": len(dataset.questions),
        "n_with_evidence": n_with,
        "k": k,
        "all_at_k": {str(w): all_at_k(covered[w]) for w in radii},
        "recall": {name: mean_skip_none(values) for name, values in recall.items()},
        "by_type": {
            typ: {"n": t["n"], "all_at_k": {str(w): all_at_k(v) for w, v in t["all_at_k"].items()}}
            for typ, t in sorted(by_type.items())
        },
        "window_stats": {str(w): {key: mean_skip_none(v) for key, v in stats[w].items()} for w in radii},
    }


def dataset_windows(
    dataset: Dataset, pools: Mapping[str, Sequence[int]], config: WindowConfig | None = None, k: int | None = None
) -> dict[str, list[Window]]:
    """Windows of every question around the top-``k`` of its pool (positions in rank order).

    ``pools`` maps question id -> ranked positions (``Pool.positions``); questions without a
    pool are left out.
    """
    config = config or WindowConfig()
    return {
        q.id: build_windows(dataset.history(q), list(pools[q.id])[:k], config, gold=q.evidence)
        for q in dataset.questions
        if q.id in pools
    }


def windows_summary(windows_by_question: Mapping[str, Sequence[Window]]) -> dict:
    """Mean windows per question and mean window length (None when there is nothing to average).

    >>> windows_summary({"q1": build_windows(100, [10, 14, 18]), "q2": []})
    {'questions': 2, 'mean_windows_per_question': 1.0, 'mean_window_length': 7.0}
    """
    lengths = [len(w) for ws in windows_by_question.values() for w in ws]
    n = len(windows_by_question)
    return {
        "questions": n,
        "mean_windows_per_question": len(lengths) / n if n else None,
        "mean_window_length": sum(lengths) / len(lengths) if lengths else None,
    }
