"""Window-level evaluation of a memory-processing model on held-out query-window pairs.

The training-time view of the MPM, cheaper than a whole pipeline run: take query-window
pairs with exact gold labels (an ``sft.jsonl`` from ``lazymem train sft-data`` on data the
model never saw: another synthetic seed, LoCoMo), let the model write each window's decision
array through the same client as inference (``lazymem.llm``, base model plus an optional LoRA
``adapter``; free generation, or count-constrained decoding with ``structured``), and score
every output with the training reward's own pieces:

- ``gate_fmt``: the paper's Gate Fmt. (a parseable array with one decision per message);
  ``strict_gate``: the reward's indicator I[o in V] (schema, content for every KEEP);
- ``gold_keep_recall``: gold messages kept / gold messages shown, a window whose output fails
  the strict gate keeping nothing (as in the pipeline); ``nongold_drop_rate`` likewise for the rest;
- ``reward``: the phase-1 GRPO reward I[o in V] R_act (eta 0.915), averaged over windows;
  ``r_act_valid``: R_act over the windows that pass the gate;
- ``rewritten_rate``: KEEPs whose content is not a verbatim span of their message (``n_rewritten``)
  / KEEP decisions of outputs that pass the gate (``n_keep_decisions``), the texts read back from
  each prompt's window block (``lazymem.construct.grounded``); ``grounded`` decoding makes it 0;
- ``s_per_window``: model time per window (cached calls excluded);
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

Calls go through the LLM cache (``cache_dir``), so an interrupted evaluation reruns for free
up to where it stopped. Rows keep their order; ``limit`` takes a balanced, seeded subset
(half gold-bearing windows, half all-DROP, as many as there are).

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

import concurrent.futures
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lazymem.construct.prior import KeepPrior
from lazymem.errors import ConfigError, LoadError
from lazymem.fields import h
from lazymem.llm import LLMConfig, Sampling
from lazymem.train.rewards import ETA, action_reward, format_gate

if TYPE_CHECKING:
    from lazymem.llm import Completion, LLMClient

NEEDED = ("prompt", "decision_positions", "gold_labels")
SUMMARY_FILE = "summary.json"
RECORDS_FILE = "windows.jsonl"


@dataclass(frozen=True)
class WindowEvalConfig:
    """One window-level evaluation: which pairs, which model, how it decodes."""

    data: str = field(default="", metadata=h("JSONL of query-window pairs with gold labels (an sft.jsonl)"))
    mpm: LLMConfig = field(default_factory=LLMConfig, metadata=h("the model: base plus optional LoRA adapter"))
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.0, max_tokens=640),
                               metadata=h("decoding (greedy; 640 tokens: trace + JSON + kept text of 8 "
                                          "messages; bounds a runaway)"))
    structured: bool = field(default=False, metadata=h("count-constrained decoding (decision_schema(n) per window)"))
    structured_trace: bool = field(default=False, metadata=h(
        "structured: an n-line <think> trace first (gold-trace models)"))
    grounded: bool = field(default=False, metadata=h(
        "grounded decoding: a KEEP's content only a verbatim span of its message (transformers, llamacpp)"))
    keep_prior: float = field(default=0.0, metadata=h(
        "the lexical KEEP prior (pipeline.keep_prior): keep_prior x each message's share of the query's content "
        "words on ' KEEP' at its trace line's op (transformers, llamacpp); 0 = off"))
    keep_prior_dense: float = field(default=0.0, metadata=h(
        "the dense KEEP prior beside it (pipeline.keep_prior_dense): keep_prior_dense x the query-message cosine "
        "under keep_prior_model; 0 = off"))
    keep_prior_model: str = field(default="minilm-offline", metadata=h("keep_prior_dense's sentence encoder"))
    trace_independent: bool = field(default=False, metadata=h(
        "structured_trace: each message's op decided without the ops before it (pipeline.trace_independent)"))
    schema_max_content: int = field(default=512, metadata=h("structured: max characters of a KEEP's content"))
    schema_max_reason: int = field(default=64, metadata=h("structured: max characters of a reason"))
    limit: int | None = field(default=None, metadata=h("a balanced seeded subset of this many windows; None = all"))
    seed: int = field(default=0, metadata=h("seed of the subset"))
    eta: float = field(default=ETA, metadata=h("gold-retention weight of R_act (paper 0.915)"))
    batch_windows: int = field(default=8, metadata=h("windows per generate call"))

    def __post_init__(self):
        if not isinstance(self.data, str) or not self.data:
            raise ConfigError("WindowEvalConfig.data must be the path of a JSONL of query-window pairs")
        if self.limit is not None and not (isinstance(self.limit, int) and self.limit >= 1):
            raise ConfigError(f"WindowEvalConfig.limit must be None or an integer >= 1, got {self.limit!r}")
        if not (isinstance(self.batch_windows, int) and self.batch_windows >= 1):
            raise ConfigError(f"WindowEvalConfig.batch_windows must be >= 1, got {self.batch_windows!r}")
        try:
            self.prior  # noqa: B018  (KeepPrior checks the weights and the encoder's name)
        except ConfigError as e:
            raise ConfigError(f"WindowEvalConfig (keep_prior, keep_prior_dense, keep_prior_model): {e}") from None
        if self.prior and self.mpm.backend not in ("transformers", "llamacpp", "fake"):
            raise ConfigError(f"WindowEvalConfig.keep_prior: backend {self.mpm.backend!r} cannot bias ' KEEP' line by "
                              "line (backends transformers, llamacpp)")
        if self.trace_independent and not (self.structured and self.structured_trace):
            raise ConfigError("WindowEvalConfig.trace_independent needs structured: true and structured_trace: true")
        if self.sampling.trace_independent:
            raise ConfigError("WindowEvalConfig.sampling: trace_independent must be unset there: set the window "
                              "evaluation's (or the row's) trace_independent: true")
        if self.grounded and self.mpm.backend not in ("transformers", "llamacpp", "fake"):
            raise ConfigError(f"WindowEvalConfig.grounded: backend {self.mpm.backend!r} cannot do grounded decoding "
                              "(it needs token-level control: backends transformers, llamacpp)")

    @property
    def prior(self) -> KeepPrior:
        """The per-message KEEP prior of keep_prior, keep_prior_dense and keep_prior_model."""
        return KeepPrior(self.keep_prior, self.keep_prior_dense, self.keep_prior_model)


def load_pairs(path: str | Path) -> list[dict]:
    """The rows of a query-window JSONL; a row without a needed field is a DataError naming file, line, field."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: no such file (build held-out pairs with `lazymem train sft-data --config ...`)")
    rows = []
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise LoadError(str(p), f"line {n}", None, f"not JSON ({e})") from None
            for name in NEEDED:
                if name not in row:
                    raise LoadError(str(p), f"line {n}", name, f"missing (needed: {', '.join(NEEDED)})")
            if len(row["decision_positions"]) != len(row["gold_labels"]):
                raise LoadError(str(p), f"line {n}", "gold_labels", f"{len(row['gold_labels'])} labels for "
                                f"{len(row['decision_positions'])} decision_positions")
            rows.append(row)
    return rows


def balanced_subset(rows: Sequence[Mapping], limit: int | None, seed: int = 0) -> list[int]:
    """Indices (ascending) of up to ``limit`` rows, half gold-bearing and half not where both suffice.

    >>> balanced_subset([{"gold_labels": [g]} for g in (1, 0, 0, 1, 0, 1)], 4)
    [1, 2, 3, 5]
    """
    if limit is None or limit >= len(rows):
        return list(range(len(rows)))
    gold = [i for i, r in enumerate(rows) if any(r["gold_labels"])]
    rest = [i for i, r in enumerate(rows) if not any(r["gold_labels"])]
    rng = random.Random(seed)
    n_gold = min(len(gold), max(limit - len(rest), limit // 2))
    return sorted(rng.sample(gold, n_gold) + rng.sample(rest, min(len(rest), limit - n_gold)))


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


def score_rows(rows: Sequence[Mapping], outputs: Sequence[str], eta: float = ETA,
               answers: Mapping[tuple[str, str], tuple] | None = None) -> list[dict]:
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
        n_keep_decisions, n_rewritten = (count_rewritten(v.decisions, dict(zip(row["decision_positions"], texts)))
                                         if texts is not None and len(texts) == len(gold) else (None, None))
        ops = [d.op for d in v.decisions] if v.ok else []  # the gate returns decisions only when it passes
        kept = [op == "KEEP" for op in ops] if v.ok else [False] * len(gold)  # a failed window keeps nothing
        r_act = action_reward(ops, gold, eta) if v.ok else None
        known = (answers or {}).get((row.get("dataset"), row.get("question_id")))
        recall = {}
        if known is not None and any(gold) and texts is not None and len(texts) == len(gold):
            kept_text = " ".join(d.content for d in v.decisions if d.op == "KEEP") if v.ok else ""
            recall = {"answer_recall": answer_recall(kept_text, *known),
                      "answer_recall_shown": answer_recall(" ".join(t for t, g in zip(texts, gold) if g), *known)}
            if recall["answer_recall_shown"] is None:  # no answer tokens to look for (abstention, empty answer)
                recall = {}
        out.append({
            "question_id": row.get("question_id"), "window_index": row.get("window_index"),
            "n_messages": len(gold), "n_gold": sum(gold), "strict_gate": v.ok, "gate_fmt": v.fmt_ok,
            "reason": v.reason, "n_decisions": len(v.decisions) if v.decisions else 0,
            "n_keep": sum(kept), "gold_kept": sum(k and g for k, g in zip(kept, gold)),
            "nongold_dropped": sum((not k) and (not g) for k, g in zip(kept, gold)),
            "r_act": r_act, "reward": r_act if r_act is not None else 0.0,
            "n_keep_decisions": n_keep_decisions, "n_rewritten": n_rewritten, "output": raw,
            **({"kept_tokens": sum(count(d.content) for d in v.decisions if d.op == "KEEP") if v.ok else 0,
                "extractive_tokens": _extractive_tokens(row, texts, count)}
               if count is not None and texts is not None and len(texts) == len(gold) else {}),
            **recall,
            **({"style": row["style"]} if row.get("style") else {}),
            **({"window_shape": list(row["window_shape"])} if row.get("window_shape") else {}),
        })
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
        "windows": n, "gold_windows": sum(r["n_gold"] > 0 for r in records), "gold_messages": n_gold,
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
        **({"kept_tokens": round(statistics.fmean(r["kept_tokens"] for r in records), 3),
            "extractive_tokens": round(statistics.fmean(r["extractive_tokens"] for r in records), 3)}
           if records and all("kept_tokens" in r for r in records) else {}),
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
    return {"answer_windows": len(judged),
            "answer_recall": round(statistics.fmean(r["answer_recall"] for r in judged), 6),
            "answer_recall_shown": round(statistics.fmean(r["answer_recall_shown"] for r in judged), 6)}


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

    return {value: _group_rates([r for r in records if name(r) == value], nongold=True)
            for value in sorted({name(r) for r in records})}


def _group_rates(rs: Sequence[Mapping], nongold: bool) -> dict:
    """Windows, gold windows, Gate Fmt. and gold-keep recall of one group of window records (and, with
    ``nongold``, the non-gold drop rate)."""
    n_gold = sum(r["n_gold"] for r in rs)
    out = {"windows": len(rs), "gold_windows": sum(r["n_gold"] > 0 for r in rs),
           "gate_fmt": round(sum(r["gate_fmt"] for r in rs) / len(rs), 6),
           "gold_keep_recall": round(sum(r["gold_kept"] for r in rs) / n_gold, 6) if n_gold else None}
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
    return {str(size): _group_rates([r for r in records if r["n_messages"] == size], nongold=False)
            for size in sorted({r["n_messages"] for r in records})}


def _sampling(config: WindowEvalConfig, row: Mapping) -> Sampling:
    """The decoding of one row's window, as the pipeline decodes one (``lazymem.pipeline.query.window_sampling``):
    its texts when grounded, its KEEP priors with keep_prior / keep_prior_dense, its decision schema when
    structured."""
    from lazymem.construct.grounded import window_query
    from lazymem.pipeline.query import window_sampling

    texts = _texts(row) if config.grounded or config.prior else None
    return window_sampling(config.sampling, len(row["decision_positions"]), structured=config.structured,
                           structured_trace=config.structured_trace, texts=texts if config.grounded else None,
                           prior=config.prior(window_query(row["prompt"]), texts) if config.prior else None,
                           schema_max_content=config.schema_max_content, schema_max_reason=config.schema_max_reason,
                           independent=config.trace_independent)


def _texts(row: Mapping) -> tuple[str, ...]:
    """The decided messages' texts of a row (grounded decoding and the keep prior need them from its prompt)."""
    from lazymem.construct.grounded import window_texts

    texts = window_texts(row["prompt"])
    if texts is None or len(texts) != len(row["decision_positions"]):
        raise ConfigError(f"WindowEvalConfig.grounded / keep_prior: row {row.get('question_id')}/"
                          f"{row.get('window_index')}: its "
                          "prompt has no window block with one message per decision position")
    return texts


def evaluate_windows(config: WindowEvalConfig, out_dir: str | Path | None = None, *,
                     client: LLMClient | None = None, progress: bool = True) -> dict:
    """Generate, score and (with ``out_dir``) write ``windows.jsonl`` and ``summary.json``; returns the summary."""
    from tqdm.auto import tqdm

    rows = load_pairs(config.data)
    chosen = [rows[i] for i in balanced_subset(rows, config.limit, config.seed)]
    if client is None:
        from lazymem.llm import make_client

        client = make_client(config.mpm)
    outputs: list[Completion] = []
    # Structured decoding needs one schema per window size: group calls by size, keep row order.
    order = sorted(range(len(chosen)), key=lambda i: len(chosen[i]["decision_positions"]) if config.structured else 0)
    done: dict[int, Completion] = {}
    bar = tqdm(total=len(chosen), desc="windows", unit="win", disable=not progress)
    t0 = time.perf_counter()
    for start in range(0, len(order), config.batch_windows):
        idx = order[start:start + config.batch_windows]
        by_n: dict[int, list[int]] = {}
        for i in idx:  # grounded or a keep prior: one call per window (its own texts)
            by_n.setdefault(i if config.grounded or config.prior else len(chosen[i]["decision_positions"])
                            if config.structured else 0, []).append(i)

        def run(group: list[int]) -> list[Completion]:
            return client.generate([chosen[i]["prompt"] for i in group], _sampling(config, chosen[group[0]]))

        groups = list(by_n.values())
        # llama.cpp's model instances (or a server) take separate calls side by side, as the pipeline's do;
        # transformers would only queue them on its model lock
        workers = min(len(groups), config.mpm.batch_size) if config.mpm.backend in ("llamacpp", "openai") else 1
        if workers > 1:
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(run, groups))
        else:
            results = [run(g) for g in groups]
        for group, res in zip(groups, results):
            done.update(zip(group, res))
        bar.update(len(idx))
    bar.close()
    wall = time.perf_counter() - t0
    outputs = [done[i] for i in range(len(chosen))]
    records = score_rows(chosen, [c.text for c in outputs], config.eta, answers=row_answers(chosen))
    for r, c in zip(records, outputs):
        r.update(error=c.error, cached=c.cached, latency_s=c.latency_s, completion_tokens=c.completion_tokens)
    fresh = [c for c in outputs if not c.cached]
    summary = {**summarize(records), "errors": sum(c.error is not None for c in outputs),
               "s_per_window": round(wall / len(fresh), 2) if fresh else None, "cached": len(outputs) - len(fresh),
               "model": config.mpm.model, "adapter": config.mpm.adapter, "structured": config.structured,
               "grounded": config.grounded,
               "data": config.data, "limit": config.limit, "seed": config.seed}
    if out_dir is not None:
        from lazymem.files import write_json, write_jsonl

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / RECORDS_FILE, records)
        write_json(out / SUMMARY_FILE, summary)
    return summary


# --- the training table's markdown (the table itself: lazymem.train.window_table) ------------------

TABLE_COLUMNS = ("gate_fmt", "strict_gate", "gold_keep_recall", "nongold_drop_rate", "reward", "keep_share",
                 "rewritten_rate", "kept_tokens", "extractive_tokens", "answer_recall", "answer_recall_shown",
                 "s_per_window")
MARK_TEXTS = {"recomputed": "recomputed: its earlier results were of other settings (set aside in its folder's "
                            "previous-<time>/)",
              "stale": "stale, not shown: its results are of other settings and `only` / `only_sets` left it "
                       "out",
              "failed": "failed as a job (`lazymem jobs <output_dir>` shows its log and the command that reruns "
                        "it)"}  # the notes under a table, per mark (lazymem.sweep.Outcome.mark)


def table_markdown(table: Mapping[str, Mapping[str, Mapping]]) -> str:
    """One markdown table per held-out set, a row per model.

    >>> print(table_markdown({"s": {"base": {"windows": 2, "gate_fmt": 0.5, "reward": None}}}).splitlines()[4])
    | base | 2 | 0.500 | - | - | - | - | - | - | - | - | - | - | - |
    """
    from lazymem.sweep import mark_notes

    lines = []
    for set_name, rows in table.items():
        lines += [f"## {set_name}", "", "| row | windows | " + " | ".join(TABLE_COLUMNS) + " |",
                  "|---|---:|" + "---:|" * len(TABLE_COLUMNS)]
        for row, s in rows.items():
            cells = [("-" if s.get(c) is None else f"{s[c]:.1f}" if c.endswith("_tokens")
                      else f"{s[c]:.2f}" if c == "s_per_window" else f"{s[c]:.3f}")
                     for c in TABLE_COLUMNS]
            lines.append(f"| {row} | {s.get('windows', '-')} | " + " | ".join(cells) + " |")
        notes = mark_notes(rows, MARK_TEXTS)
        lines += ["", *notes, ""] if notes else [""]
    return "\n".join(lines)
