"""Scores of a window evaluation (``lazymem.train.heldout``): one record per window from the model's output and
the row's gold labels, and the rates over them.

- ``gate_fmt``: the paper's Gate Fmt. (a parseable array with one decision per message);
  ``strict_gate``: the reward's indicator I[o in V] (schema, content for every KEEP);
- ``gold_keep_recall``: gold messages kept / gold messages shown, a window whose output fails
  the strict gate keeping nothing (as in the pipeline); ``nongold_drop_rate`` likewise for the rest;
- ``reward``: the phase-1 GRPO reward I[o in V] R_act (eta 0.915), averaged over windows;
  ``r_act_valid``: R_act over the windows that pass the gate;
- ``rewritten_rate``: KEEPs whose content is not a verbatim span of their message (``n_rewritten``)
  / KEEP decisions of outputs that pass the gate (``n_keep_decisions``), the texts read back from
  each prompt's window block (``lazymem.construct.grounded``); ``grounded`` decoding makes it 0;
- ``s_per_window`` (added by ``heldout.evaluate_windows``): model time per window (cached calls excluded);
- ``answer_recall``: over the windows that show gold, the share of the question's gold answer tokens (LoCoMo's
  normalisation: ``lazymem.answers.answer_recall``) found in the text the window keeps (its KEEP
  contents; nothing for a window failing the strict gate), beside ``answer_recall_shown``: in the gold messages
  the window shows, the most keeping them could give. Whether a kept span still holds the answer, which
  gold-keep (by identity) cannot tell; the answers are read from each row's ``dataset`` (a synthetic spec is
  regenerated), absent where it cannot be loaded;
- ``kept_tokens``: Qwen3 tokens of the KEEP contents a window's output holds (0 for a window that fails the
  strict gate), beside ``extractive_tokens``: the training-free extractive processor's on the same window
  (``ExtractiveProcessor``, verbatim: what the tables compare memory size with), means over the windows;
  absent without the tokenizer.

>>> rows = [{"decision_positions": [3, 4], "gold_labels": [True, False]}]
>>> out = ('[{"op": "KEEP", "compressed_content": "x", "reason": ""}, '
...        '{"op": "DROP", "compressed_content": "", "reason": ""}]')
>>> s = summarize(score_rows(rows, [out]))
>>> s["gate_fmt"], s["gold_keep_recall"], s["nongold_drop_rate"], s["reward"]
(1.0, 1.0, 1.0, 1.0)
>>> summarize(score_rows(rows, ["[]"]))["gold_keep_recall"]
0.0
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence

from lazymem.errors import ConfigError, LoadError
from lazymem.train.rewards import ETA, action_reward, format_gate


def row_answers(rows: Sequence[Mapping]) -> dict[tuple[str, str], tuple]:
    """(dataset, question_id) -> (answer, category, abstention) of every row whose ``dataset`` loads (a synthetic
    spec regenerated, a file read); a dataset that cannot be loaded gives no answers (logged), never an error.

    >>> a = row_answers([{"dataset": "synthetic:messages=60,seed=1,histories=1,questions=6", "question_id": "x"}])
    >>> len(a) > 0, all(len(v) == 3 for v in a.values())
    (True, True)
    """
    import logging

    from lazymem.data.datasets import load_dataset

    out: dict[tuple[str, str], tuple] = {}
    for spec in sorted({r["dataset"] for r in rows if r.get("dataset")}):
        try:
            ds = load_dataset(spec)
        except (LoadError, ConfigError, OSError, ValueError) as e:
            logging.getLogger("lazymem.train").warning("answer recall: dataset %r not loaded (%s)", spec, e)
            continue
        out.update({(spec, q.id): (q.answer, q.category, q.abstention) for q in ds.questions})
    return out


def score_rows(
    rows: Sequence[Mapping],
    outputs: Sequence[str],
    eta: float = ETA,
    answers: Mapping[tuple[str, str], tuple] | None = None,
) -> list[dict]:
    """One record per window: gate verdicts, decisions counted against the gold labels, rewards; with
    ``answers`` (``row_answers``), the answer recall of what a gold window keeps."""
    from lazymem.answers import answer_recall
    from lazymem.construct.grounded import count_rewritten, window_texts

    count = _token_counter()
    out = []
    for row, raw in zip(rows, outputs, strict=True):
        gold = [bool(g) for g in row["gold_labels"]]
        v = format_gate(raw, row["decision_positions"])
        texts = window_texts(row["prompt"]) if "prompt" in row else None
        n_keep_decisions, n_rewritten = (
            count_rewritten(v.decisions, dict(zip(row["decision_positions"], texts)))
            if texts is not None and len(texts) == len(gold)
            else (None, None)
        )
        ops = [d.op for d in v.decisions] if v.ok else []  # the gate returns decisions only when it passes
        kept = [op == "KEEP" for op in ops] if v.ok else [False] * len(gold)  # a failed window keeps nothing
        r_act = action_reward(ops, gold, eta) if v.ok else None
        known = (answers or {}).get((row.get("dataset"), row.get("question_id")))
        recall = {}
        if known is not None and any(gold) and texts is not None and len(texts) == len(gold):
            kept_text = " ".join(d.content for d in v.decisions if d.op == "KEEP") if v.ok else ""
            recall = {
                "answer_recall": answer_recall(kept_text, *known),
                "answer_recall_shown": answer_recall(" ".join(t for t, g in zip(texts, gold) if g), *known),
            }
            if recall["answer_recall_shown"] is None:  # no answer tokens to look for (abstention, empty answer)
                recall = {}
        out.append(
            {
                "question_id": row.get("question_id"),
                "window_index": row.get("window_index"),
                "n_messages": len(gold),
                "n_gold": sum(gold),
                "strict_gate": v.ok,
                "gate_fmt": v.fmt_ok,
                "reason": v.reason,
                "n_decisions": len(v.decisions) if v.decisions else 0,
                "n_keep": sum(kept),
                "gold_kept": sum(k and g for k, g in zip(kept, gold)),
                "nongold_dropped": sum((not k) and (not g) for k, g in zip(kept, gold)),
                "r_act": r_act,
                "reward": r_act if r_act is not None else 0.0,
                "n_keep_decisions": n_keep_decisions,
                "n_rewritten": n_rewritten,
                "output": raw,
                **(
                    {
                        "kept_tokens": sum(count(d.content) for d in v.decisions if d.op == "KEEP") if v.ok else 0,
                        "extractive_tokens": _extractive_tokens(row, texts, count),
                    }
                    if count is not None and texts is not None and len(texts) == len(gold)
                    else {}
                ),
                **recall,
                **({"style": row["style"]} if row.get("style") else {}),
                **({"window_shape": list(row["window_shape"])} if row.get("window_shape") else {}),
            }
        )
    return out


def _token_counter():
    """``count_tokens`` (Qwen3), or None without the tokenizer (no count rather than 0)."""
    from lazymem.llm.tokens import TokenizerMissing, count_tokens, require_qwen3_tokenizer

    try:
        require_qwen3_tokenizer()
    except TokenizerMissing:
        return None
    return count_tokens


def _extractive_tokens(row: Mapping, texts: Sequence[str], count) -> int:
    """Tokens the extractive processor (verbatim, its default threshold) keeps of one window row."""
    from lazymem.construct.extractive import extractive_keeps
    from lazymem.construct.grounded import window_query

    return sum(count(t) for t, k in zip(texts, extractive_keeps(window_query(row["prompt"]), texts)) if k)


def summarize(records: Sequence[Mapping]) -> dict:
    """Rates over the windows (see the module docstring)."""
    n = len(records)
    n_gold = sum(r["n_gold"] for r in records)
    n_rest = sum(r["n_messages"] - r["n_gold"] for r in records)
    valid = [r["r_act"] for r in records if r["r_act"] is not None]
    judged = [r for r in records if r.get("n_rewritten") is not None]  # windows whose texts were read back
    n_keeps = sum(r["n_keep_decisions"] for r in judged)

    def rate(x: float, d: int) -> float | None:
        return round(x / d, 6) if d else None

    return {
        "windows": n,
        "gold_windows": sum(r["n_gold"] > 0 for r in records),
        "gold_messages": n_gold,
        "gate_fmt": rate(sum(r["gate_fmt"] for r in records), n),
        "strict_gate": rate(sum(r["strict_gate"] for r in records), n),
        "gold_keep_recall": rate(sum(r["gold_kept"] for r in records), n_gold),
        "nongold_drop_rate": rate(sum(r["nongold_dropped"] for r in records), n_rest),
        "reward": rate(sum(r["reward"] for r in records), n),
        "r_act_valid": rate(sum(valid), len(valid)),
        "keep_share": rate(sum(r["n_keep"] for r in records), sum(r["n_messages"] for r in records)),
        "n_keep_decisions": n_keeps if judged else None,
        "n_rewritten": sum(r["n_rewritten"] for r in judged) if judged else None,
        "rewritten_rate": rate(sum(r["n_rewritten"] for r in judged), n_keeps),
        **(
            {
                "kept_tokens": round(statistics.fmean(r["kept_tokens"] for r in records), 3),
                "extractive_tokens": round(statistics.fmean(r["extractive_tokens"] for r in records), 3),
            }
            if records and all("kept_tokens" in r for r in records)
            else {}
        ),
        **_answer_rates(records),
        "failures": dict(sorted(Counter(r["reason"] for r in records if not r["strict_gate"]).items())),
        "by_size": by_size(records),
        **({"by_style": by_group(records, "style")} if any(r.get("style") for r in records) else {}),
        **({"by_shape": by_group(records, "window_shape")} if any(r.get("window_shape") for r in records) else {}),
    }


def _answer_rates(rs: Sequence[Mapping]) -> dict:
    """Mean ``answer_recall`` and ``answer_recall_shown`` over the windows that have them (none: absent)."""
    judged = [r for r in rs if r.get("answer_recall") is not None]
    if not judged:
        return {}
    return {
        "answer_windows": len(judged),
        "answer_recall": round(statistics.fmean(r["answer_recall"] for r in judged), 6),
        "answer_recall_shown": round(statistics.fmean(r["answer_recall_shown"] for r in judged), 6),
    }


def by_group(records: Sequence[Mapping], key: str) -> dict:
    """Gate Fmt., gold-keep recall and non-gold drop per value of ``key`` (a window's data style, or its
    shape ``w,L,s``): v2's data mixes styles and shapes, and a rate over the mixture hides which one fails.

    >>> by_group([{"window_shape": [1, 4, 3], "n_messages": 4, "n_gold": 1, "gate_fmt": True, "gold_kept": 1,
    ...            "nongold_dropped": 3},
    ...           {"window_shape": [2, 8, 7], "n_messages": 8, "n_gold": 0, "gate_fmt": False, "gold_kept": 0,
    ...            "nongold_dropped": 0}], "window_shape")
    {'1,4,3': {'windows': 1, 'gold_windows': 1, 'gate_fmt': 1.0, 'gold_keep_recall': 1.0, 'nongold_drop_rate': 1.0}, \
'2,8,7': {'windows': 1, 'gold_windows': 0, 'gate_fmt': 0.0, 'gold_keep_recall': None, 'nongold_drop_rate': 0.0}}
    """

    def name(r: Mapping) -> str:
        v = r.get(key)
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    return {
        value: _group_rates([r for r in records if name(r) == value], nongold=True)
        for value in sorted({name(r) for r in records})
    }


def _group_rates(rs: Sequence[Mapping], nongold: bool) -> dict:
    """Windows, gold windows, Gate Fmt. and gold-keep recall of one group of window records (and, with
    ``nongold``, the non-gold drop rate)."""
    n_gold = sum(r["n_gold"] for r in rs)
    out = {
        "windows": len(rs),
        "gold_windows": sum(r["n_gold"] > 0 for r in rs),
        "gate_fmt": round(sum(r["gate_fmt"] for r in rs) / len(rs), 6),
        "gold_keep_recall": round(sum(r["gold_kept"] for r in rs) / n_gold, 6) if n_gold else None,
    }
    if nongold:
        n_rest = sum(r["n_messages"] - r["n_gold"] for r in rs)
        out["nongold_drop_rate"] = round(sum(r["nongold_dropped"] for r in rs) / n_rest, 6) if n_rest else None
    if rs and all("kept_tokens" in r for r in rs):
        out["kept_tokens"] = round(statistics.fmean(r["kept_tokens"] for r in rs), 3)
        out["extractive_tokens"] = round(statistics.fmean(r["extractive_tokens"] for r in rs), 3)
    return {**out, **_answer_rates(rs)}


def by_size(records: Sequence[Mapping]) -> dict:
    """Gate Fmt. and gold-keep recall per window size (messages decided), so that size and gold
    presence are not confounded in a small balanced subset.

    >>> by_size([{"n_messages": 8, "n_gold": 1, "gate_fmt": True, "gold_kept": 1},
    ...          {"n_messages": 5, "n_gold": 0, "gate_fmt": False, "gold_kept": 0}])
    {'5': {'windows': 1, 'gold_windows': 0, 'gate_fmt': 0.0, 'gold_keep_recall': None}, \
'8': {'windows': 1, 'gold_windows': 1, 'gate_fmt': 1.0, 'gold_keep_recall': 1.0}}
    """
    return {
        str(size): _group_rates([r for r in records if r["n_messages"] == size], nongold=False)
        for size in sorted({r["n_messages"] for r in records})
    }
