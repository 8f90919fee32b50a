"""Window-level evaluation of a memory-processing model on held-out query-window pairs.

The training-time view of the MPM, cheaper than a whole pipeline run: take query-window
pairs with exact gold labels (an ``sft.jsonl`` from ``lazymem train sft-data`` on data the
model never saw: another synthetic seed, LoCoMo), let the model write each window's decision
array through the same client as inference (``lazymem.llm``, base model plus an optional LoRA
``adapter``; free generation, or count-constrained decoding with ``structured``), and score
every output with the training reward's own pieces (``lazymem.train.window_scores``: Gate Fmt., the
strict gate, gold-keep recall, non-gold drop, reward, rewritten rate, answer recall, kept tokens).

Calls go through the LLM cache (``cache_dir``), so an interrupted evaluation reruns for free
up to where it stopped. Rows keep their order; ``limit`` takes a balanced, seeded subset
(half gold-bearing windows, half all-DROP, as many as there are).
"""

from __future__ import annotations

import concurrent.futures
import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lazymem.construct.prior import KeepPrior
from lazymem.errors import ConfigError, LoadError
from lazymem.fields import h
from lazymem.llm import LLMConfig, Sampling
from lazymem.train.rewards import ETA
from lazymem.train.window_scores import row_answers, score_rows, summarize

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
    sampling: Sampling = field(
        default_factory=lambda: Sampling(temperature=0.0, max_tokens=640),
        metadata=h("decoding (greedy; 640 tokens: trace + JSON + kept text of 8 messages; bounds a runaway)"),
    )
    structured: bool = field(default=False, metadata=h("count-constrained decoding (decision_schema(n) per window)"))
    structured_trace: bool = field(
        default=False, metadata=h("structured: an n-line <think> trace first (gold-trace models)")
    )
    grounded: bool = field(
        default=False,
        metadata=h("grounded decoding: a KEEP's content only a verbatim span of its message (transformers, llamacpp)"),
    )
    keep_prior: float = field(
        default=0.0,
        metadata=h(
            "the lexical KEEP prior (pipeline.keep_prior): keep_prior x each message's share of the query's content "
            "words on ' KEEP' at its trace line's op (transformers, llamacpp); 0 = off"
        ),
    )
    keep_prior_dense: float = field(
        default=0.0,
        metadata=h(
            "the dense KEEP prior beside it (pipeline.keep_prior_dense): keep_prior_dense x the query-message cosine "
            "under keep_prior_model; 0 = off"
        ),
    )
    keep_prior_model: str = field(default="minilm-offline", metadata=h("keep_prior_dense's sentence encoder"))
    trace_independent: bool = field(
        default=False,
        metadata=h(
            "structured_trace: each message's op decided without the ops before it (pipeline.trace_independent)"
        ),
    )
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
            raise ConfigError(
                f"WindowEvalConfig.keep_prior: backend {self.mpm.backend!r} cannot bias ' KEEP' line by "
                "line (backends transformers, llamacpp)"
            )
        if self.trace_independent and not (self.structured and self.structured_trace):
            raise ConfigError("WindowEvalConfig.trace_independent needs structured: true and structured_trace: true")
        if self.sampling.trace_independent:
            raise ConfigError(
                "WindowEvalConfig.sampling: trace_independent must be unset there: set the window "
                "evaluation's (or the row's) trace_independent: true"
            )
        if self.grounded and self.mpm.backend not in ("transformers", "llamacpp", "fake"):
            raise ConfigError(
                f"WindowEvalConfig.grounded: backend {self.mpm.backend!r} cannot do grounded decoding "
                "(it needs token-level control: backends transformers, llamacpp)"
            )

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
                raise LoadError(
                    str(p),
                    f"line {n}",
                    "gold_labels",
                    f"{len(row['gold_labels'])} labels for {len(row['decision_positions'])} decision_positions",
                )
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


def _sampling(config: WindowEvalConfig, row: Mapping) -> Sampling:
    """The decoding of one row's window, as the pipeline decodes one (``lazymem.pipeline.query.window_sampling``):
    its texts when grounded, its KEEP priors with keep_prior / keep_prior_dense, its decision schema when
    structured."""
    from lazymem.construct.grounded import window_query
    from lazymem.pipeline.query import window_sampling

    texts = _texts(row) if config.grounded or config.prior else None
    return window_sampling(
        config.sampling,
        len(row["decision_positions"]),
        structured=config.structured,
        structured_trace=config.structured_trace,
        texts=texts if config.grounded else None,
        prior=config.prior(window_query(row["prompt"]), texts) if config.prior else None,
        schema_max_content=config.schema_max_content,
        schema_max_reason=config.schema_max_reason,
        independent=config.trace_independent,
    )


def _texts(row: Mapping) -> tuple[str, ...]:
    """The decided messages' texts of a row (grounded decoding and the keep prior need them from its prompt)."""
    from lazymem.construct.grounded import window_texts

    texts = window_texts(row["prompt"])
    if texts is None or len(texts) != len(row["decision_positions"]):
        raise ConfigError(
            f"WindowEvalConfig.grounded / keep_prior: row {row.get('question_id')}/"
            f"{row.get('window_index')}: its "
            "prompt has no window block with one message per decision position"
        )
    return texts


def evaluate_windows(
    config: WindowEvalConfig,
    out_dir: str | Path | None = None,
    *,
    client: LLMClient | None = None,
    progress: bool = True,
) -> dict:
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
        idx = order[start : start + config.batch_windows]
        by_n: dict[int, list[int]] = {}
        for i in idx:  # grounded or a keep prior: one call per window (its own texts)
            by_n.setdefault(
                i
                if config.grounded or config.prior
                else len(chosen[i]["decision_positions"])
                if config.structured
                else 0,
                [],
            ).append(i)

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
    summary = {
        **summarize(records),
        "errors": sum(c.error is not None for c in outputs),
        "s_per_window": round(wall / len(fresh), 2) if fresh else None,
        "cached": len(outputs) - len(fresh),
        "model": config.mpm.model,
        "adapter": config.mpm.adapter,
        "structured": config.structured,
        "grounded": config.grounded,
        "data": config.data,
        "limit": config.limit,
        "seed": config.seed,
    }
    if out_dir is not None:
        from lazymem.files import write_json, write_jsonl

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / RECORDS_FILE, records)
        write_json(out / SUMMARY_FILE, summary)
    return summary


# --- the training table's markdown (the table itself: lazymem.train.window_table) ------------------

TABLE_COLUMNS = (
    "gate_fmt",
    "strict_gate",
    "gold_keep_recall",
    "nongold_drop_rate",
    "reward",
    "keep_share",
    "rewritten_rate",
    "kept_tokens",
    "extractive_tokens",
    "answer_recall",
    "answer_recall_shown",
    "s_per_window",
)
MARK_TEXTS = {
    "recomputed": "recomputed: its earlier results were of other settings (set aside in its folder's previous-<time>/)",
    "stale": "stale, not shown: its results are of other settings and `only` / `only_sets` left it out",
    "failed": "failed as a job (`lazymem jobs <output_dir>` shows its log and the command that reruns it)",
}  # the notes under a table, per mark (lazymem.sweep.Outcome.mark)


def table_markdown(table: Mapping[str, Mapping[str, Mapping]]) -> str:
    """One markdown table per held-out set, a row per model.

    >>> print(table_markdown({"s": {"base": {"windows": 2, "gate_fmt": 0.5, "reward": None}}}).splitlines()[4])
    | base | 2 | 0.500 | - | - | - | - | - | - | - | - | - | - | - |
    """
    from lazymem.sweep import mark_notes

    lines = []
    for set_name, rows in table.items():
        lines += [
            f"## {set_name}",
            "",
            "| row | windows | " + " | ".join(TABLE_COLUMNS) + " |",
            "|---|---:|" + "---:|" * len(TABLE_COLUMNS),
        ]
        for row, s in rows.items():
            cells = [
                (
                    "-"
                    if s.get(c) is None
                    else f"{s[c]:.1f}"
                    if c.endswith("_tokens")
                    else f"{s[c]:.2f}"
                    if c == "s_per_window"
                    else f"{s[c]:.3f}"
                )
                for c in TABLE_COLUMNS
            ]
            lines.append(f"| {row} | {s.get('windows', '-')} | " + " | ".join(cells) + " |")
        notes = mark_notes(rows, MARK_TEXTS)
        lines += ["", *notes, ""] if notes else [""]
    return "\n".join(lines)
