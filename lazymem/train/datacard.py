"""Data cards for training data: what went in, what came out, and the paper's numbers beside ours.

Every training-data build leaves ``card.json`` (machine-readable: sources with sha256, the
resolved config, seeds, counts, lengths, file hashes, prompt hash, package versions) and
``card.md`` (the same numbers as a short table, ours beside the paper's App. "Training Data").

>>> length_stats(["a b", "c"], tokens=False)["mean"]
2.0
>>> ratio(1, 4), ratio(1, 0)
(0.25, None)
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lazymem.files import sha256_file
from lazymem.files import write_jsonl as write_json_lines
from lazymem.prompts import PROMPTS
from lazymem.runinfo import git_commit, now, package_versions
from lazymem.secrets import redact
from lazymem.stats import percentiles

log = logging.getLogger("lazymem.train")

# The paper's App. "Training Data" (LongMemEval train split, DeepSeek-V4-Flash teacher).
PAPER_SFT = {
    "questions": 100,
    "query_window_pairs": 3075,
    "keep_share": 0.0392,
    "discarded": 36,
    "windows_with_keep": 388,
    "all_drop_windows_kept": 388,
    "instances": 776,
    "input_tokens_mean": 2585,
    "target_tokens_mean": 873,
}
PAPER_RL = {
    "pool": 11072,
    "gold_bearing_share": 0.0898,
    "size": 10000,
    "gold_bearing_sampled": 5000,
    "other_sampled": 5000,
}
CARD_PACKAGES = ("lazymem", "datasets", "trl", "transformers", "tokenizers", "sentence-transformers", "rank-bm25")
TOKENIZER = "Qwen3 (lazymem.llm.count_tokens_batch, no special tokens)"


def ratio(a: float, b: float, digits: int = 6) -> float | None:
    """a / b rounded, None when b is 0."""
    return round(a / b, digits) if b else None


def length_stats(texts: Sequence[str], tokens: bool = True) -> dict:
    """mean / median / p90 / p95 / n of the texts' Qwen3 token counts, or of their characters
    (with ``unit`` saying which) when ``tokens`` is False or the tokenizer is missing."""
    counts, unit = None, "characters"
    if tokens:
        from lazymem.llm import TokenizerMissing, count_tokens_batch

        try:
            counts, unit = count_tokens_batch(list(texts)), "qwen3 tokens"
        except TokenizerMissing:
            unit = "characters (tokenizer missing)"
    if counts is None:
        counts = [len(t) for t in texts]
    return {"unit": unit, **percentiles(counts, digits=1)}


def prompt_text(messages: Iterable[Mapping[str, str]]) -> str:
    """The text of a chat prompt for length counting: contents joined by newlines (no template tokens)."""
    return "\n".join(m["content"] for m in messages)


def write_jsonl(path: str | os.PathLike, rows: Iterable[Mapping]) -> dict:
    """Write rows as JSON lines (UTF-8, atomically via a temp file); returns {path, rows, sha256}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = write_json_lines(path, rows)
    return {"path": str(path), "rows": n, "sha256": sha256_file(path)}


def provenance() -> dict:
    """When, from which commit, with which package versions and prompt hash the data was built."""
    return {
        "created": now(),
        "git_commit": git_commit(),
        "packages": package_versions(CARD_PACKAGES),
        "prompt_sha256": {"window_annotation": PROMPTS["window_annotation"].sha256},
    }


def write_card(out_dir: str | os.PathLike, card: Mapping, markdown: str) -> None:
    """card.json (secrets redacted) and card.md in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "card.json").write_text(
        json.dumps(redact(dict(card)), indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    (out / "card.md").write_text(markdown, encoding="utf-8")


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2%}" if v < 1 else f"{v:,.1f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def table(rows: Sequence[tuple[str, object, object]]) -> str:
    """A Markdown table of (what, ours, paper) rows; shares (floats < 1) print as percentages.

    >>> print(table([("KEEP share", 0.0392, 0.0392)]))
    | | ours | paper |
    |---|---:|---:|
    | KEEP share | 3.92% | 3.92% |
    """
    lines = ["| | ours | paper |", "|---|---:|---:|"]
    lines += [f"| {name} | {_fmt(ours)} | {_fmt(paper)} |" for name, ours, paper in rows]
    return "\n".join(lines)


def sources_md(sources: Sequence[Mapping]) -> str:
    return "\n".join(f"- `{s['spec']}` ({s['name']}, sha256 `{s['sha256'][:16]}...`)" for s in sources)


def _shape(row: Mapping) -> str:
    w, L, s = row.get("window_shape") or ("?", "?", "?")
    return f"w={w},L={L},s={s}"


def by_style_and_shape(rows: Sequence[Mapping], limit: int | None = None) -> dict:
    """Instances by source style, by window shape, and by both; with ``limit``, how many rows
    of each style have input + target over ``limit`` Qwen3 tokens (characters / 4 when the
    tokenizer is missing).

    >>> rows = [{"style": "casual", "window_shape": [0, 4, 3]}, {"style": "synthetic", "window_shape": [2, 8, 7]}]
    >>> by_style_and_shape(rows)["by_style_shape"]
    {'casual': {'w=0,L=4,s=3': 1}, 'synthetic': {'w=2,L=8,s=7': 1}}
    """
    styles = Counter(r.get("style", "?") for r in rows)
    out = {
        "by_style": dict(sorted(styles.items())),
        "by_shape": dict(sorted(Counter(map(_shape, rows)).items())),
        "by_style_shape": {
            st: dict(sorted(Counter(_shape(r) for r in rows if r.get("style", "?") == st).items()))
            for st in sorted(styles)
        },
    }
    if limit is not None and rows:
        lengths, unit = instance_lengths(rows)
        total = [a + b for a, b in zip(lengths["input"], lengths["target"])]
        if unit == "characters":
            total = [n // 4 for n in total]
        over = Counter(r.get("style", "?") for r, n in zip(rows, total) if n > limit)
        out["over_limit"] = {
            "limit": limit,
            "unit": unit if unit != "characters" else "characters / 4",
            "by_style": {st: over.get(st, 0) for st in sorted(styles)},
            "total": sum(over.values()),
            "share": ratio(sum(over.values()), len(rows)),
        }
    return out


def style_shape_md(mix: Mapping) -> str:
    """The by-style x by-shape counts as a Markdown table (rows: styles; columns: shapes)."""
    shapes = list(mix["by_shape"])
    lines = ["| style | " + " | ".join(shapes) + " | all |", "|---|" + "---:|" * (len(shapes) + 1)]
    for st, n in mix["by_style"].items():
        cells = [str(mix["by_style_shape"][st].get(sh, 0)) for sh in shapes]
        lines.append(f"| {st} | " + " | ".join(cells) + f" | {n} |")
    lines.append(
        "| all | " + " | ".join(str(mix["by_shape"][sh]) for sh in shapes) + f" | {sum(mix['by_style'].values())} |"
    )
    if "over_limit" in mix:
        o = mix["over_limit"]
        lines += [
            "",
            f"Instances over {o['limit']} {o['unit']} (input + target): {o['total']} "
            f"({_fmt(o['share'] or 0.0)}), by style {o['by_style']}",
        ]
    return "\n".join(lines)


def sft_card(
    config,
    sources: Sequence[Mapping],
    selection: Mapping,
    annotated: Sequence[tuple],
    rows: Sequence[Mapping],
    files: Mapping,
    max_length: int | None = 2048,
) -> tuple[dict, str]:
    """The SFT data card (dict) and its Markdown.

    Args:
        config: the SFTDataConfig (``to_dict``, ``teacher_name``, seeds, ``balance``).
        annotated: (WindowPrompt, teacher.Annotation) of every query-window pair.
        rows: the written instances (``prompt`` / ``completion`` / ``n_keep`` / ``style`` / ``window_shape``).
        max_length: the SFT max_length the card counts instances over (None: not counted).
    """
    from lazymem.train.teacher import paper_group

    anns = [a for _, a in annotated]
    gated = [a for a in anns if a.n_decisions]  # outputs that passed the gate (dropped gold included)
    discards = Counter(a.status for a in anns if not a.ok)
    ok = [a for a in anns if a.ok]
    with_keep = sum(a.n_keep > 0 for a in ok)
    inputs = length_stats([prompt_text(r["prompt"]) for r in rows])
    targets = length_stats([r["completion"][0]["content"] for r in rows])
    n_keep_dec, n_dec = sum(a.n_keep for a in gated), sum(a.n_decisions for a in gated)
    counts = {
        "questions": selection["used"],
        "query_window_pairs": len(anns),
        "gold_bearing_windows": sum(any(p.gold_labels) for p, _ in annotated),
        "raw_decisions": n_dec,
        "keep_share": ratio(n_keep_dec, n_dec),
        "discarded": sum(discards.values()),
        "discards_by_reason": dict(sorted(discards.items())),
        "discards_by_paper_reason": dict(sorted(Counter(paper_group(r) for r in discards.elements()).items())),
        "windows_with_keep": with_keep,
        "all_drop_windows": len(ok) - with_keep,
        "all_drop_windows_kept": sum(r["n_keep"] == 0 for r in rows),
        "instances": len(rows),
        "targets_with_think": sum(bool(r.get("has_think")) for r in rows),
    }
    mix = by_style_and_shape(rows, limit=max_length)
    card = {
        "kind": "sft",
        "teacher": config.teacher_name,
        "sources": list(sources),
        "seeds": {"seed": config.seed, "split_seed": config.split_seed},
        "selection": dict(selection),
        **counts,
        "instances_by_style": mix["by_style"],
        "instances_by_shape": mix["by_shape"],
        "instances_by_style_shape": mix["by_style_shape"],
        **({"over_max_length": mix["over_limit"]} if "over_limit" in mix else {}),
        "lengths": {"input": inputs, "target": targets, "input_counts": "system + user contents joined by newlines"},
        "paper": PAPER_SFT,
        "files": dict(files),
        "config": config.to_dict(),
        **provenance(),
    }
    tok = inputs["unit"]
    md = "\n".join(
        [
            "# SFT data card",
            "",
            f"Teacher: **{config.teacher_name}**"
            + (
                (
                    " (KEEP each gold message's key span: its sentence holding the most of the answer's words, the whole "
                    "message when none does; DROP the rest; no model)"
                    if getattr(config, "teacher_keep", "") == "key_span"
                    else " (targets for a content adapter, never for deciding: KEEP each gold message's key span and each "
                    "non-gold message the extractive processor keeps, cut to its sentence most like the query; DROP "
                    "the rest; no model)"
                    if getattr(config, "teacher_keep", "") == "content"
                    else " (KEEP every gold message verbatim, DROP the rest; no model)"
                )
                if config.gold
                else ""
            ),
            f"Seeds: seed {config.seed}, split seed {config.split_seed}; split {config.to_dict()['split']!r}; "
            f"balance {'on' if config.balance else 'off'}",
            "",
            "Sources:",
            sources_md(sources),
            "",
            f"Questions used by type: {selection['used_by_type']}; their gold messages shown in some window: "
            f"{selection['gold_messages_in_windows']} of {selection['gold_messages']}",
            "",
            table(
                [
                    ("questions", counts["questions"], PAPER_SFT["questions"]),
                    ("query-window pairs", counts["query_window_pairs"], PAPER_SFT["query_window_pairs"]),
                    ("KEEP share of raw decisions", counts["keep_share"], PAPER_SFT["keep_share"]),
                    ("discarded", counts["discarded"], PAPER_SFT["discarded"]),
                    ("windows with KEEP", counts["windows_with_keep"], PAPER_SFT["windows_with_keep"]),
                    ("all-DROP windows kept", counts["all_drop_windows_kept"], PAPER_SFT["all_drop_windows_kept"]),
                    ("instances", counts["instances"], PAPER_SFT["instances"]),
                    (f"input length, mean ({tok})", inputs["mean"], PAPER_SFT["input_tokens_mean"]),
                    (f"input length, median ({tok})", inputs["median"], None),
                    (f"target length, mean ({tok})", targets["mean"], PAPER_SFT["target_tokens_mean"]),
                    (f"target length, median ({tok})", targets["median"], None),
                ]
            ),
            "",
            f"Discards by reason: {counts['discards_by_reason'] or 'none'}",
            "",
            "Instances by style (source kind) and window shape (w, L, s of the windowing):",
            "",
            style_shape_md(mix),
            "",
            'Paper: App. "Training Data" (LongMemEval train split, DeepSeek-V4-Flash in high-thinking mode; '
            "its tokenizer is not stated, ours is Qwen3, text only).",
            "",
        ]
    )
    return card, md


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The rows of a JSONL file written by ``write_jsonl`` (blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def instance_lengths(rows: Sequence[Mapping]) -> tuple[dict[str, list[int]], str]:
    """Per-instance input and target lengths of SFT rows (Qwen3 tokens, or characters when the
    tokenizer is missing), and the unit."""
    inputs = [prompt_text(r["prompt"]) for r in rows]
    targets = [r["completion"][-1]["content"] for r in rows]
    from lazymem.llm import TokenizerMissing, count_tokens_batch

    try:
        return {"input": count_tokens_batch(inputs), "target": count_tokens_batch(targets)}, "qwen3 tokens"
    except TokenizerMissing:  # lengths in characters, and the unit says so
        return {"input": [len(t) for t in inputs], "target": [len(t) for t in targets]}, "characters"


def decision_shares(rows: Sequence[Mapping]) -> dict[str, float]:
    """KEEP / DROP shares of the decisions in SFT rows.

    >>> decision_shares([{"decision_positions": [1, 2, 3, 4], "n_keep": 1}, {"decision_positions": [5], "n_keep": 0}])
    {'KEEP': 0.2, 'DROP': 0.8}
    """
    total = sum(len(r["decision_positions"]) for r in rows)
    keep = sum(r["n_keep"] for r in rows)
    return {"KEEP": keep / total if total else 0.0, "DROP": (total - keep) / total if total else 0.0}


def example_targets(rows: Sequence[Mapping], n: int = 2, keep_only: bool = True) -> list[dict]:
    """The first ``n`` instances (with a KEEP decision when ``keep_only``): question, type, target."""
    out = []
    for r in rows:
        if keep_only and not r.get("n_keep"):
            continue
        out.append(
            {
                "question_id": r.get("question_id"),
                "question_type": r.get("question_type"),
                "decisions": len(r["decision_positions"]),
                "gold": r.get("n_gold"),
                "target": r["completion"][-1]["content"],
            }
        )
        if len(out) == n:
            break
    return out


def chain_counts(rows: Sequence[dict], source: str | None) -> dict:
    """How many rows carry a referenced reasoning chain and how many send the judge an empty one
    (logged as a warning when any does)."""
    empty = sum(not r["reasoning_chain"] for r in rows)
    if empty:
        log.warning(
            'RL prompts: %d of %d rows have no referenced reasoning chain (%s); the judge gets "" there',
            empty,
            len(rows),
            f"none in {source}" if source else "set reasoning_chains to an SFT data folder",
        )
    return {
        "source": source or "the data only",
        "rows_with_chain": len(rows) - empty,
        "rows_empty": empty,
        "empty_share": ratio(empty, len(rows)),
        "questions_with_chain": len({r["question_id"] for r in rows if r["reasoning_chain"]}),
        "questions": len({r["question_id"] for r in rows}),
    }
