"""GRPO prompts (paper Sec. 3.3 and App. "RL data balancing"): a balanced set of query-window prompts.

``build_rl_prompts(RLDataConfig(...)) -> card`` builds the pool of query-window prompts with
the same selection and builder as SFT data (``sft_data.select_questions``,
``sft_data.query_window_pairs``: byte-identical to inference), then draws a set of ``size``
prompts, half gold-bearing (a window with at least one gold message) sampled WITH
replacement and half without gold sampled WITHOUT replacement; the paper draws 10,000 from a
pool of 11,072 of which 8.98% bear gold. Each row carries what a GRPO reward needs:

- ``prompt`` (chat messages), ``decision_positions`` and ``gold_labels`` (the action reward);
- ``question_id``, ``query``, ``query_time``, ``gold_answer``, ``reasoning_chain`` and
  ``sources`` (per decision: the message's role, content, timestamp): the quality reward's
  judge prompt (paper App. "Quality Reward": the judge receives the referenced reasoning chain).

The referenced reasoning chain is the data's own where a question has one, else the SFT
teacher's for that question (``reasoning_chains``: an SFT data folder or its
``annotations.jsonl``, joined by dataset and question id; ``teacher_chains`` says which trace),
else "". Rows without a chain are counted in the card (``reasoning_chains``), never silent.

Prompts longer than ``max_prompt_tokens`` (the paper's max input length, 8,192) leave the pool
before the draw, as VERL's ``filter_overlong_prompts`` does (TRL's GRPOTrainer truncates no prompt):
counted with the policy's tokenizer and chat template (``tokenizer``) as the trainer will tokenize
them, and counted in the card (``overlong_prompts``: dropped, gold-bearing or not, the longest kept).

Writes ``rl_prompts.jsonl`` and a pool card (``card.json``, ``card.md``) to ``output_dir``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError, LoadError
from lazymem.fields import h
from lazymem.train.sft_data import (
    PairsConfig,
    QueryWindow,
    gold_in_windows,
    load_sources,
    pair_columns,
    query_window_pairs,
    select_questions,
)
from lazymem.train.teacher import OK, think_text


@dataclass(frozen=True)
class RLDataConfig(PairsConfig):
    """RL prompts: PairsConfig (questions default: the whole train split) plus the balanced size."""

    size: int | None = field(
        default=10000, metadata=h("prompts to draw (the paper: 10,000); None = twice the prompts without gold")
    )
    gold_fraction: float = field(
        default=0.5, metadata=h("share of gold-bearing prompts in the drawn set (the paper: 0.5)")
    )
    output_dir: str = field(default="runs/train_data/rl", metadata=h("where rl_prompts.jsonl and the pool card go"))
    reasoning_chains: str | None = field(
        default=None,
        metadata=h(
            "an SFT data folder (or its annotations.jsonl): each question's teacher trace becomes the judge's referenced "
            "reasoning chain; None = only chains the data has"
        ),
    )
    max_prompt_tokens: int | None = field(
        default=None,
        metadata=h(
            "drop pool prompts longer than this many tokens (chat template and generation prompt included) before the "
            "draw (the paper: 8192, its max input length); None = keep every prompt"
        ),
    )
    tokenizer: str | None = field(
        default=None,
        metadata=h(
            "the policy's tokenizer that max_prompt_tokens counts with: a base model (hub id or local dir); None = the "
            "Qwen3 tokenizer that ships here (lazymem.llm.tokens.qwen3_tokenizer_dir)"
        ),
    )

    def __post_init__(self):
        super().__post_init__()
        self._need(
            self.size is None or (isinstance(self.size, int) and not isinstance(self.size, bool) and self.size >= 1),
            "size",
            "must be None or an integer >= 1",
        )
        self._need(
            isinstance(self.gold_fraction, (int, float))
            and not isinstance(self.gold_fraction, bool)
            and 0 <= self.gold_fraction <= 1,
            "gold_fraction",
            "must be in [0, 1]",
        )
        self._need(
            self.reasoning_chains is None or (isinstance(self.reasoning_chains, str) and self.reasoning_chains),
            "reasoning_chains",
            "must be None or the path of an SFT data folder or its annotations.jsonl",
        )
        self._need(
            self.max_prompt_tokens is None
            or (
                isinstance(self.max_prompt_tokens, int)
                and not isinstance(self.max_prompt_tokens, bool)
                and self.max_prompt_tokens >= 1
            ),
            "max_prompt_tokens",
            "must be None or an integer >= 1",
        )
        self._need(
            self.tokenizer is None or (isinstance(self.tokenizer, str) and self.tokenizer),
            "tokenizer",
            "must be None (the shipped Qwen3 tokenizer) or a model name / local directory",
        )

    def to_dict(self) -> dict:
        d = super().to_dict()
        for name in ("max_prompt_tokens", "tokenizer"):  # unset: cards of earlier prompt sets stay as they were
            if d.get(name) is None:
                d.pop(name)
        return d


def chat_tokenizer(name: str | None) -> Any:
    """The tokenizer whose chat template a policy sees: ``name`` (alias, local dir, hub id) or, for None,
    the Qwen3 tokenizer that ships here."""
    from transformers import AutoTokenizer

    if name is None:
        from lazymem.llm.tokens import require_qwen3_tokenizer

        return AutoTokenizer.from_pretrained(str(require_qwen3_tokenizer()))
    from lazymem.llm.models import resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(name))


def prompt_tokens(prompts: Sequence[Sequence[Mapping[str, str]]], tokenizer: Any) -> list[int]:
    """Tokens of each chat prompt as a trainer feeds it: the chat template with the generation prompt."""
    texts = [
        tokenizer.apply_chat_template([dict(m) for m in p], tokenize=False, add_generation_prompt=True) for p in prompts
    ]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]] if texts else []


def overlong(lengths: Sequence[int], limit: int | None) -> list[int]:
    """Indices of the prompts longer than ``limit`` tokens (none when ``limit`` is None).

    >>> overlong([10, 9000, 8192, 8193], 8192), overlong([9000], None)
    ([1, 3], [])
    """
    return [] if limit is None else [i for i, n in enumerate(lengths) if n > limit]


def balance_pool(
    gold_bearing: Sequence[bool], size: int | None, gold_fraction: float = 0.5, seed: int = 0
) -> list[int]:
    """Pool indices of a balanced draw, shuffled: round(size * gold_fraction) gold-bearing ones
    WITH replacement, the rest from the others WITHOUT replacement (``random.Random(seed)``).
    ``size`` None: twice the number of prompts without gold.

    >>> picked = balance_pool([True, False, False, False, False], 6, seed=0)
    >>> sorted(picked)
    [0, 0, 0, 2, 3, 4]

    Raises:
        ConfigError: fewer prompts without gold than the draw needs, or no gold-bearing prompt
            while some are asked for.
    """
    gold = [i for i, g in enumerate(gold_bearing) if g]
    other = [i for i, g in enumerate(gold_bearing) if not g]
    if size is None:
        size = 2 * len(other)
    n_gold = round(size * gold_fraction)
    n_other = size - n_gold
    if n_other > len(other):
        raise ConfigError(
            f"size {size} needs {n_other} prompts without gold, drawn without replacement, but the pool "
            f"has {len(other)} (of {len(gold_bearing)}); lower size or use size: null"
        )
    if n_gold and not gold:
        raise ConfigError(f"size {size} needs {n_gold} gold-bearing prompts but the pool has none")
    rng = random.Random(seed)
    picked = rng.choices(gold, k=n_gold) + rng.sample(other, n_other)
    rng.shuffle(picked)
    return picked


def annotations_path(path: str | Path) -> Path:
    """The annotations file of ``reasoning_chains``: the path itself, or a folder's annotations.jsonl."""
    return Path(path) / "annotations.jsonl" if Path(path).is_dir() else Path(path)


def teacher_chains(path: str | Path) -> dict[tuple[str, str], str]:
    """{(dataset SPEC, question id): the teacher's reasoning} from SFT annotations.

    A question's chain is the trace of one of its accepted windows (status ok) that shows gold
    evidence: the one with the most gold messages, then the first; its reasoning is the
    separate trace (``reasoning``) or the output's leading ``<think>...</think>``. Questions whose
    accepted gold windows carry no trace get none.

    Raises:
        LoadError: the file is missing, a line is not a JSON object, or a field is missing.
    """
    p = annotations_path(path)
    if not p.is_file():
        raise LoadError(
            str(p), None, None, "no such file (reasoning_chains: an SFT data folder or its annotations.jsonl)"
        )
    best: dict[tuple[str, str], tuple[tuple, str]] = {}
    with open(p, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise LoadError(str(p), f"line {i + 1}", None, f"not JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise LoadError(str(p), f"line {i + 1}", None, "not a JSON object")
            for name in ("dataset", "question_id", "status", "n_gold", "window_index", "output"):
                if name not in row:
                    raise LoadError(str(p), f"line {i + 1}", name, "missing (not an SFT annotations file?)")
            chain = (row.get("reasoning") or "").strip() or think_text(row["output"] or "")
            if row["status"] != OK or not row["n_gold"] or not chain:
                continue
            key, rank = (row["dataset"], row["question_id"]), (-row["n_gold"], row["window_index"])
            if key not in best or rank < best[key][0]:
                best[key] = (rank, chain)
    return {k: chain for k, (_, chain) in best.items()}


def rl_row(pair: QueryWindow, chains: dict[tuple[str, str], str] | None = None) -> dict:
    """One GRPO prompt row: the chat prompt, the reward's columns and the pair's metadata;
    ``chains`` (``teacher_chains``) gives a question without its own chain the teacher's."""
    q, p, h = pair.question, pair.prompt, pair.history
    chain = getattr(q, "reasoning_chain", "") or (chains or {}).get((pair.dataset, q.id), "")
    return {
        "prompt": list(p.messages),
        **pair_columns(pair),
        "has_gold": any(p.gold_labels),
        "query": q.text,
        "query_time": q.query_time,
        "gold_answer": q.answer,
        "reasoning_chain": chain,
        "sources": [
            {"role": h[i].role, "content": h[i].text, "timestamp": h[i].timestamp} for i in p.decision_positions
        ],
    }


def build_rl_prompts(config: RLDataConfig) -> dict:
    """Build the balanced GRPO prompt set into ``config.output_dir``; returns the pool card."""
    from lazymem.files import sha256_file
    from lazymem.train.datacard import (
        PAPER_RL,
        chain_counts,
        length_stats,
        prompt_text,
        provenance,
        ratio,
        sources_md,
        table,
        write_card,
        write_jsonl,
    )

    teacher = teacher_chains(config.reasoning_chains) if config.reasoning_chains else {}  # bad file: fail first
    datasets, sources = load_sources(config)
    selected, selection = select_questions(datasets, config)
    pool = [pair for pairs in query_window_pairs(datasets, selected, config, desc="rl pool") for pair in pairs]
    selection["gold_messages_in_windows"] = gold_in_windows(pool)
    pool, too_long = drop_overlong(pool, config)
    gold = [any(p.prompt.gold_labels) for p in pool]
    picked = balance_pool(gold, config.size, config.gold_fraction, config.seed)
    rows = [rl_row(pool[i], teacher) for i in picked]
    chains = chain_counts(rows, config.reasoning_chains)
    if config.reasoning_chains:
        chains["source_sha256"] = sha256_file(annotations_path(config.reasoning_chains))
    files = {"rl_prompts": write_jsonl(f"{config.output_dir}/rl_prompts.jsonl", rows)}
    n_gold = sum(gold)
    gold_picked = [i for i in picked if gold[i]]
    counts = {
        "questions": selection["used"],
        "pool": len(pool),
        "gold_bearing": n_gold,
        "gold_bearing_share": ratio(n_gold, len(pool)),
        "size": len(rows),
        "gold_bearing_sampled": len(gold_picked),
        "gold_bearing_unique": len(set(gold_picked)),
        "other_sampled": len(rows) - len(gold_picked),
    }
    lengths = length_stats([prompt_text(pool[i].prompt.messages) for i in sorted(set(picked))])
    card = {
        "kind": "rl",
        "sources": sources,
        "seeds": {"seed": config.seed, "split_seed": config.split_seed},
        "selection": selection,
        **counts,
        "prompt_lengths_unique": lengths,
        **({"overlong_prompts": too_long} if too_long else {}),
        "sampling": "gold-bearing WITH replacement, others WITHOUT replacement, shuffled",
        "reasoning_chains": chains,
        "paper": PAPER_RL,
        "files": files,
        "config": config.to_dict(),
        **provenance(),
    }
    md = "\n".join(
        [
            "# RL prompt pool card",
            "",
            "Sources:",
            sources_md(sources),
            "",
            f"Seeds: seed {config.seed}, split seed {config.split_seed}; questions by type: {selection['used_by_type']}; "
            f"their gold messages shown in some window: {selection['gold_messages_in_windows']} of "
            f"{selection['gold_messages']}",
            "",
            table(
                [
                    ("questions", counts["questions"], None),
                    ("pool (query-window prompts)", len(pool), PAPER_RL["pool"]),
                    ("gold-bearing share of the pool", counts["gold_bearing_share"], PAPER_RL["gold_bearing_share"]),
                    ("drawn prompts", len(rows), PAPER_RL["size"]),
                    (
                        "gold-bearing drawn (with replacement)",
                        counts["gold_bearing_sampled"],
                        PAPER_RL["gold_bearing_sampled"],
                    ),
                    ("distinct gold-bearing prompts drawn", counts["gold_bearing_unique"], None),
                    ("others drawn (without replacement)", counts["other_sampled"], PAPER_RL["other_sampled"]),
                    (f"prompt length, mean ({lengths['unit']})", lengths["mean"], None),
                ]
            ),
            "",
            *([overlong_md(too_long), ""] if too_long else []),
            f"Referenced reasoning chains (the judge's): {chains['rows_with_chain']} of {len(rows)} rows have one, "
            f"{chains['rows_empty']} are empty (source: {chains['source']}).",
            "",
        ]
    )
    write_card(config.output_dir, card, md)
    return card


def drop_overlong(pool: list[QueryWindow], config: RLDataConfig) -> tuple[list[QueryWindow], dict | None]:
    """The pool without prompts over ``config.max_prompt_tokens`` and what left it (None when no limit is set)."""
    if config.max_prompt_tokens is None:
        return pool, None
    lengths = prompt_tokens([p.prompt.messages for p in pool], chat_tokenizer(config.tokenizer))
    out = set(overlong(lengths, config.max_prompt_tokens))
    kept = [n for i, n in enumerate(lengths) if i not in out]
    gold_out = sum(any(pool[i].prompt.gold_labels) for i in out)
    return [p for i, p in enumerate(pool) if i not in out], {
        "limit": config.max_prompt_tokens,
        "tokenizer": config.tokenizer or "Qwen3 (shipped)",
        "unit": "tokens with the chat template and generation prompt",
        "pool_before": len(pool),
        "dropped": len(out),
        "dropped_gold_bearing": gold_out,
        "dropped_other": len(out) - gold_out,
        "longest_kept": max(kept) if kept else None,
        "longest": max(lengths) if lengths else None,
    }


def overlong_md(c: Mapping) -> str:
    """The card's sentence on prompts over the limit."""
    longest = "-" if c["longest_kept"] is None else f"{c['longest_kept']:,}"
    return (
        f"Prompts over {c['limit']:,} {c['unit']} ({c['tokenizer']}), dropped from the pool before the draw: "
        f"{c['dropped']} of {c['pool_before']} ({c['dropped_gold_bearing']} gold-bearing, {c['dropped_other']} "
        f"without gold); the longest kept has {longest} tokens."
    )
