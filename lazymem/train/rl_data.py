"""GRPO prompts (paper Sec. 3.3 and App. "RL data balancing"): a balanced set of query-window prompts.

``build_rl_prompts(RLDataConfig(...)) -> card`` builds the pool of query-window prompts with
the same selection and builder as SFT data (``sft_data.select_questions``,
``sft_data.query_window_pairs``: byte-identical to inference), then draws a set of ``size``
prompts, half gold-bearing (a window with at least one gold message) sampled WITH
replacement and half without gold sampled WITHOUT replacement; the paper draws 10,000 from a
pool of 11,072 of which 8.98% bear gold. Each row carries what a GRPO reward needs:

- ``prompt`` (chat messages), ``decision_positions`` and ``gold_labels`` (the action reward);
- ``question_id``, ``query``, ``query_time``, ``gold_answer``, ``reasoning_chain`` ("" unless
  the data has one) and ``sources`` (per decision: the message's role, content, timestamp):
  the quality reward's judge prompt.

Writes ``rl_prompts.jsonl`` and a pool card (``card.json``, ``card.md``) to ``output_dir``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence

from lazymem.errors import ConfigError
from lazymem.train.sft_data import (
    PairsConfig,
    QueryWindow,
    gold_in_windows,
    load_sources,
    pair_columns,
    query_window_pairs,
    select_questions,
)


def _h(text: str) -> dict:
    return {"help": text}


@dataclass(frozen=True)
class RLDataConfig(PairsConfig):
    """RL prompts: PairsConfig (questions default: the whole train split) plus the balanced size."""

    size: int | None = field(
        default=10000, metadata=_h("prompts to draw (the paper: 10,000); None = twice the prompts without gold"))
    gold_fraction: float = field(default=0.5, metadata=_h("share of gold-bearing prompts in the drawn set (the paper: 0.5)"))
    output_dir: str = field(default="runs/train_data/rl", metadata=_h("where rl_prompts.jsonl and the pool card go"))

    def __post_init__(self):
        super().__post_init__()
        self._need(self.size is None or (isinstance(self.size, int) and not isinstance(self.size, bool) and self.size >= 1),
                   "size", "must be None or an integer >= 1")
        self._need(isinstance(self.gold_fraction, (int, float)) and not isinstance(self.gold_fraction, bool)
                   and 0 <= self.gold_fraction <= 1, "gold_fraction", "must be in [0, 1]")


def balance_pool(gold_bearing: Sequence[bool], size: int | None, gold_fraction: float = 0.5,
                 seed: int = 0) -> list[int]:
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
        raise ConfigError(f"size {size} needs {n_other} prompts without gold, drawn without replacement, but the pool "
                          f"has {len(other)} (of {len(gold_bearing)}); lower size or use size: null")
    if n_gold and not gold:
        raise ConfigError(f"size {size} needs {n_gold} gold-bearing prompts but the pool has none")
    rng = random.Random(seed)
    picked = rng.choices(gold, k=n_gold) + rng.sample(other, n_other)
    rng.shuffle(picked)
    return picked


def rl_row(pair: QueryWindow) -> dict:
    """One GRPO prompt row: the chat prompt, the reward's columns and the pair's metadata."""
    q, p, h = pair.question, pair.prompt, pair.history
    return {"prompt": list(p.messages), **pair_columns(pair), "has_gold": any(p.gold_labels),
            "query": q.text, "query_time": q.query_time, "gold_answer": q.answer,
            "reasoning_chain": getattr(q, "reasoning_chain", "") or "",
            "sources": [{"role": h[i].role, "content": h[i].text, "timestamp": h[i].timestamp}
                        for i in p.decision_positions]}


def build_rl_prompts(config: RLDataConfig) -> dict:
    """Build the balanced GRPO prompt set into ``config.output_dir``; returns the pool card."""
    from lazymem.train.datacard import PAPER_RL, length_stats, prompt_text, provenance, ratio, sources_md, table
    from lazymem.train.datacard import write_card, write_jsonl

    datasets, sources = load_sources(config)
    selected, selection = select_questions(datasets, config)
    pool = [pair for pairs in query_window_pairs(datasets, selected, config, desc="rl pool") for pair in pairs]
    selection["gold_messages_in_windows"] = gold_in_windows(pool)
    gold = [any(p.prompt.gold_labels) for p in pool]
    picked = balance_pool(gold, config.size, config.gold_fraction, config.seed)
    rows = [rl_row(pool[i]) for i in picked]
    files = {"rl_prompts": write_jsonl(f"{config.output_dir}/rl_prompts.jsonl", rows)}
    n_gold = sum(gold)
    gold_picked = [i for i in picked if gold[i]]
    counts = {
        "questions": selection["used"], "pool": len(pool), "gold_bearing": n_gold,
        "gold_bearing_share": ratio(n_gold, len(pool)), "size": len(rows), "gold_bearing_sampled": len(gold_picked),
        "gold_bearing_unique": len(set(gold_picked)), "other_sampled": len(rows) - len(gold_picked),
    }
    lengths = length_stats([prompt_text(pool[i].prompt.messages) for i in sorted(set(picked))])
    card = {"kind": "rl", "sources": sources, "seeds": {"seed": config.seed, "split_seed": config.split_seed},
            "selection": selection, **counts, "prompt_lengths_unique": lengths,
            "sampling": "gold-bearing WITH replacement, others WITHOUT replacement, shuffled",
            "paper": PAPER_RL, "files": files, "config": config.to_dict(), **provenance()}
    md = "\n".join([
        "# RL prompt pool card", "", "Sources:", sources_md(sources), "",
        f"Seeds: seed {config.seed}, split seed {config.split_seed}; questions by type: {selection['used_by_type']}; "
        f"their gold messages shown in some window: {selection['gold_messages_in_windows']} of "
        f"{selection['gold_messages']}", "",
        table([("questions", counts["questions"], None), ("pool (query-window prompts)", len(pool), PAPER_RL["pool"]),
               ("gold-bearing share of the pool", counts["gold_bearing_share"], PAPER_RL["gold_bearing_share"]),
               ("drawn prompts", len(rows), PAPER_RL["size"]),
               ("gold-bearing drawn (with replacement)", counts["gold_bearing_sampled"], PAPER_RL["gold_bearing_sampled"]),
               ("distinct gold-bearing prompts drawn", counts["gold_bearing_unique"], None),
               ("others drawn (without replacement)", counts["other_sampled"], PAPER_RL["other_sampled"]),
               (f"prompt length, mean ({lengths['unit']})", lengths["mean"], None)]), ""])
    write_card(config.output_dir, card, md)
    return card
