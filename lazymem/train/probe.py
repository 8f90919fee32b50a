"""How well a memory-processing model ranks gold above non-gold messages, teacher-forced.

``keep_probe`` feeds each held-out window's prompt and its gold think trace (``N. role: "first
words ..." ->`` per message, the format the gold-trace teacher writes) through the model in one
forward pass per window and reads, at every line's ``->``, the probability of `` KEEP`` against
`` DROP`` (their first tokens). Because the trace is teacher-forced, this isolates the decision
from the format: it says whether a model that writes nothing but DROP has learned anything
about relevance (AUC of P(KEEP) for gold vs non-gold lines), and what a KEEP threshold would
buy (gold recall, non-gold keep rate and the mean action reward R_act per threshold, with the
``keep_bias`` logit bias that applies that threshold at generation). Choose a threshold on a
development set (never on the set you report).

    lazymem train probe PAIRS.jsonl [--adapter DIR|none] [--limit 40]

>>> trace_lines([{"role": "user", "content": "one two three four five six seven eight nine"}])
['1. user: "one two three four five six seven eight ..." ->']
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import SEED_MAX, ConfigError, int_in, path_text
from lazymem.train.rewards import action_reward
from lazymem.train.teacher import trace_head

THRESHOLDS = (0.5, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.03, 0.02, 0.01, 0.007, 0.005, 0.003, 0.002, 0.001)


def trace_lines(messages: Sequence[dict]) -> list[str]:
    """The gold trace's lines up to each decision (the gold-trace teacher's quoting)."""
    return [trace_head(i, m["role"], m["content"]) for i, m in enumerate(messages, start=1)]


def window_messages(prompt: Sequence[dict]) -> list[dict]:
    """The decided messages of a window prompt, in order (bridges included)."""
    block = prompt[-1]["content"].split("# History Window\n", 1)[1]
    data, _ = json.JSONDecoder().raw_decode(block)
    return [
        m
        for part in ("previous_bridge", "core_messages", "next_bridge")
        for m in data.get(part, [])
        if m.get("content", "").strip()
    ]


def auc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    """P(a random positive scores above a random negative), ties half.

    >>> auc([0.9, 0.4], [0.1, 0.4])
    0.875
    """
    if not pos or not neg:
        return None
    return sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / (len(pos) * len(neg))


def roc_curve(pos: Sequence[float], neg: Sequence[float]) -> list[tuple[float, float]]:
    """(non-gold kept, gold kept) at every threshold of the scores, from keeping nothing to keeping
    everything: the ROC of P(KEEP), whose area is ``auc``; tied scores move together.

    >>> roc_curve([0.9, 0.4], [0.1, 0.4])
    [(0.0, 0.0), (0.0, 0.5), (0.5, 1.0), (1.0, 1.0)]
    """
    if not pos or not neg:
        return []
    points, tp, fp = [(0.0, 0.0)], 0, 0
    marked = sorted([(s, True) for s in pos] + [(s, False) for s in neg], key=lambda x: -x[0])
    for i, (score, gold) in enumerate(marked):
        tp, fp = tp + gold, fp + (not gold)
        if i + 1 == len(marked) or marked[i + 1][0] != score:
            points.append((fp / len(neg), tp / len(pos)))
    return points


def record_roc(record: Mapping) -> list[tuple[float, float]]:
    """``roc_curve`` of a ``keep_probe`` record's per-line scores (``scores``: windows of [P(KEEP), gold])."""
    lines = [(p, g) for w in record.get("scores", []) for p, g in w]
    return roc_curve([p for p, g in lines if g], [p for p, g in lines if not g])


CONTEXTS = ("gold", "drop")


def keep_probe(rows: Sequence[dict], model: Any, tokenizer: Any, context: str = "gold") -> dict:
    """Teacher-forced P(KEEP) per decision line of each row (prompt, gold_labels); the summary. ``context``
    says what the lines before each decision end with: ``gold``, the gold ops (how a trained trace reads);
    ``drop``, DROP on every line (how ``Sampling.trace_independent`` decodes: each line's decision is then
    exactly the one greedy decoding makes there, biases and priors added)."""
    if context not in CONTEXTS:
        raise ConfigError(f"keep_probe: context must be one of {CONTEXTS}, got {context!r}")
    import torch

    keep = tokenizer.encode(" KEEP", add_special_tokens=False)[0]
    drop = tokenizer.encode(" DROP", add_special_tokens=False)[0]
    scores: list[tuple[float, bool]] = []
    windows: list[list[tuple[float, bool]]] = []
    t0 = time.perf_counter()
    for r in rows:
        lines = trace_lines(window_messages(r["prompt"]))
        if len(lines) != len(r["gold_labels"]):
            raise ValueError(f"{r.get('question_id')}: {len(lines)} messages vs {len(r['gold_labels'])} gold labels")
        text = tokenizer.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True) + "<think>\n"
        marks = []
        for line, gold in zip(lines, r["gold_labels"]):
            text += line
            marks.append(len(tokenizer(text, add_special_tokens=False)["input_ids"]))
            text += (" KEEP" if gold and context == "gold" else " DROP") + "\n"
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0].float(), -1)
        windows.append([])
        for mark, gold in zip(marks, r["gold_labels"]):
            pk, pd = logp[mark - 1, keep].exp().item(), logp[mark - 1, drop].exp().item()
            windows[-1].append((pk / (pk + pd), bool(gold)))
        scores += windows[-1]
    gold = [s for s, g in scores if g]
    non = [s for s, g in scores if not g]
    return {
        "windows": len(rows),
        "gold_lines": len(gold),
        "nongold_lines": len(non),
        "auc": auc(gold, non),
        "p_keep_gold_median": statistics.median(gold) if gold else None,
        "p_keep_nongold_median": statistics.median(non) if non else None,
        "thresholds": [
            {
                "threshold": t,
                "keep_bias": keep_bias(t),
                "gold_recall": sum(s >= t for s in gold) / len(gold) if gold else None,
                "nongold_keep_rate": sum(s >= t for s in non) / len(non) if non else None,
                "mean_r_act": statistics.fmean(
                    action_reward(["KEEP" if p >= t else "DROP" for p, _ in w], [g for _, g in w]) for w in windows
                )
                if windows
                else None,
            }
            for t in THRESHOLDS
        ],
        "seconds": round(time.perf_counter() - t0, 1),
        # per window, per decision line: [P(KEEP), gold]; any other threshold is re-read from these
        "scores": [[[round(p, 6), g] for p, g in w] for w in windows],
    }


def keep_bias(threshold: float) -> float:
    """The logit bias on `` KEEP`` that turns greedy KEEP-vs-DROP into "KEEP when P(KEEP) >= threshold"
    (P(KEEP) renormalised over the two: bias = ln((1 - t) / t); pass it as ``Sampling.logit_bias``).

    >>> keep_bias(0.5), round(keep_bias(0.1), 3)
    (0.0, 2.197)
    """
    return round(math.log((1 - threshold) / threshold), 6)


def balanced(rows: Sequence[dict], limit: int, seed: int = 0) -> list[dict]:
    """limit/2 windows with gold and limit/2 without (seeded)."""
    g = [r for r in rows if any(r["gold_labels"])]
    n = [r for r in rows if not any(r["gold_labels"])]
    random.Random(seed).shuffle(g)
    random.Random(seed).shuffle(n)
    return g[: limit // 2] + n[: limit - limit // 2]


def best_threshold(thresholds: Sequence[Mapping]) -> Mapping:
    """The threshold row with the highest mean R_act (ties: the higher threshold, which keeps less).

    >>> best_threshold([{"threshold": 0.5, "mean_r_act": 0.4}, {"threshold": 0.1, "mean_r_act": 0.7},
    ...                 {"threshold": 0.05, "mean_r_act": 0.7}])["threshold"]
    0.1
    """
    return max(thresholds, key=lambda t: (t["mean_r_act"], t["threshold"]))


def recall_threshold(thresholds: Sequence[Mapping], target: float) -> Mapping:
    """The highest threshold (the smallest bias) whose gold-line recall reaches ``target``; the one
    with the highest recall when none does (ties: the higher threshold).

    >>> rows = [{"threshold": 0.5, "gold_recall": 0.4}, {"threshold": 0.1, "gold_recall": 0.85},
    ...         {"threshold": 0.05, "gold_recall": 0.9}]
    >>> recall_threshold(rows, 0.8)["threshold"], recall_threshold(rows, 0.95)["threshold"]
    (0.1, 0.05)
    """
    ok = [t for t in thresholds if t["gold_recall"] >= target]
    if ok:
        return max(ok, key=lambda t: t["threshold"])
    return max(thresholds, key=lambda t: (t["gold_recall"], t["threshold"]))


@dataclass(frozen=True)
class KeepBiasConfig:
    """Choose the KEEP logit bias on development windows; the keys of configs/recipes/lazymem-135m/keep_bias.yaml."""

    pairs: str = field(default="", metadata={"help": "development query-window pairs (never the reported set)"})
    base: str = field(default="smollm2-offline", metadata={"help": "base model alias or dir"})
    adapter: str | None = field(default=None, metadata={"help": "PEFT adapter dir (None = the base)"})
    limit: int = field(default=40, metadata={"help": "balanced windows (half with gold)"})
    seed: int = field(default=0, metadata={"help": "seed of the balanced subset"})
    output: str = field(default="runs/keep_bias.json", metadata={"help": "the probe and the chosen bias (JSON)"})
    target_recall: float | None = field(
        default=None,
        metadata={
            "help": (
                "None: the threshold with the best mean R_act; a number: the smallest bias whose gold-line recall on "
                "the development windows reaches it (an operating point for a recall floor)"
            )
        },
    )
    styles: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "help": (
                "only the pairs of these training styles (a pair's `style`: synthetic, synthetic-long, casual); None = all"
            )
        },
    )
    context: str = field(
        default="gold",
        metadata={
            "help": (
                "what each decision line is read after: 'gold', the gold ops of the lines before it; 'drop', DROP on every "
                "line before it (the decisions of Sampling.trace_independent)"
            )
        },
    )

    def __post_init__(self):
        if not self.pairs:
            raise ConfigError("KeepBiasConfig.pairs: give the development pairs JSONL (lazymem train sft-data output)")
        if not (isinstance(self.limit, int) and self.limit >= 2):
            raise ConfigError(f"KeepBiasConfig.limit={self.limit!r}: must be an integer >= 2")
        if self.target_recall is not None and not (
            isinstance(self.target_recall, (int, float)) and 0 < self.target_recall <= 1
        ):
            raise ConfigError(f"KeepBiasConfig.target_recall={self.target_recall!r}: must be in (0, 1] or null")
        if self.styles is not None:
            if isinstance(self.styles, str) or not all(isinstance(x, str) for x in self.styles):
                raise ConfigError(f"KeepBiasConfig.styles={self.styles!r}: a list of style names or null")
            object.__setattr__(self, "styles", tuple(self.styles))
        if self.context not in CONTEXTS:
            raise ConfigError(f"KeepBiasConfig.context={self.context!r}: one of {CONTEXTS}")


def choose_keep_bias(config: KeepBiasConfig) -> dict:
    """Probe the model on the development pairs and pick the threshold with the best mean R_act (the
    paper's action reward, eta-weighted toward keeping gold), or with ``target_recall`` the smallest
    bias that keeps that share of the gold lines; writes and returns the record, whose
    ``keep_bias`` goes into ``Sampling.logit_bias`` as {" KEEP": keep_bias}. A finished record for the
    same settings is read back."""
    from lazymem.files import write_json
    from lazymem.train.heldout import load_pairs
    from lazymem.train.modeling import load_policy, load_tokenizer

    settings = dataclasses.asdict(config)
    if config.target_recall is None:
        settings.pop("target_recall")  # records written before the option stay valid
    if config.styles is None:
        settings.pop("styles")  # likewise
    else:
        settings["styles"] = list(config.styles)
    if config.context == "gold":
        settings.pop("context")  # likewise
    out = Path(config.output)
    if out.is_file():
        done = json.loads(out.read_text(encoding="utf-8"))
        grid = [t.get("threshold") for t in done.get("thresholds", [])]
        if done.get("settings") == settings and grid == list(THRESHOLDS):  # same windows, same grid
            return done
    pairs = load_pairs(config.pairs)  # a bad file fails before the model loads
    if config.styles is not None:
        pairs = [r for r in pairs if r.get("style") in config.styles]
        if not pairs:
            raise ConfigError(
                f"KeepBiasConfig.styles={list(config.styles)}: no pair of {config.pairs} has one of "
                "these styles (a pair's `style` field)"
            )
    rows = balanced(pairs, config.limit, config.seed)
    model = load_policy(config.base, config.adapter, trainable=False)
    model.eval()
    res = keep_probe(rows, model, load_tokenizer(config.base), config.context)
    if config.target_recall is None:
        best, by = best_threshold(res["thresholds"]), "max mean R_act (eta 0.915) on the development windows"
    else:
        best = recall_threshold(res["thresholds"], config.target_recall)
        by = f"the smallest bias with gold-line recall >= {config.target_recall} on the development windows"
    record = {"settings": settings, "chosen": {"by": by, **best}, "keep_bias": best["keep_bias"], **res}
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, record)
    return record


def probed_rows(settings: Mapping) -> list[dict]:
    """The windows a ``choose_keep_bias`` record probed, rebuilt from its settings (pairs, styles,
    limit, seed) in the order of its ``scores``."""
    from lazymem.train.heldout import load_pairs

    pairs = load_pairs(settings["pairs"])
    if settings.get("styles"):
        pairs = [r for r in pairs if r.get("style") in settings["styles"]]
    return balanced(pairs, settings["limit"], settings.get("seed", 0))


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem train probe``'s arguments."""
    ap.add_argument("pairs", type=path_text, help="held-out query-window pairs (lazymem train sft-data output)")
    ap.add_argument("--base", default="smollm2-offline")
    ap.add_argument("--adapter", default="none", help="a PEFT adapter dir or alias; none = the base model")
    ap.add_argument("--limit", type=int_in(1, 1_000_000), default=40, help="balanced windows (half with gold)")
    ap.add_argument("--seed", type=int_in(0, SEED_MAX), default=0, help=f"seed of the sample (0..{SEED_MAX})")
    return ap


def run_from_args(args: argparse.Namespace) -> int:
    """Probe P(KEEP) on balanced held-out windows and print the JSON."""
    from lazymem.train.modeling import load_policy, load_tokenizer

    model = load_policy(args.base, None if args.adapter == "none" else args.adapter, trainable=False)
    model.eval()
    rows = [json.loads(line) for line in open(args.pairs, encoding="utf-8") if line.strip()]
    res = keep_probe(balanced(rows, args.limit, args.seed), model, load_tokenizer(args.base))
    print(json.dumps({"pairs": args.pairs, "adapter": args.adapter, **res}, indent=1))
    return 0
