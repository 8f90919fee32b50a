"""Choose the KEEP prior (``pipeline.keep_prior``, ``pipeline.keep_prior_dense``) and the KEEP bias together,
on development windows.

Under ``pipeline.keep_prior`` = a, ``pipeline.keep_prior_dense`` = d and ``logit_bias {" KEEP": b}``, message
i of a window is KEEP when

    logit P(KEEP_i) + a * x_i + d * s_i + b >= 0

where P(KEEP_i) is the model's probability of KEEP against DROP at trace line i's ``->``, x_i the share of
the query's content words message i has (``lexical_scores``, the extractive processor's relevance;
``lexical.line_overlap``) and s_i the cosine similarity of the query and the message under the prior's
sentence encoder (``lazymem.construct.prior.dense_scores``). A ``choose_keep_bias`` record already holds
P(KEEP) of every line of its windows, teacher-forced, so any (a, d, b) is re-read from it without the
model: this module scores a grid of (a, d, b) by mean R_act per window (the paper's action reward, as the
KEEP bias alone is chosen) and picks the best on the development records, then reports the chosen triple
(the best with no dense prior, and the best bias alone) on other records, e.g. a diagnostic set that must
not choose anything.

Each grid row also carries the memory it costs: the mean Qwen3 tokens a window keeps (the kept messages'
text, before the ``[timestamp] role:`` prefix every kept message gets alike), beside the extractive
processor's on the same windows (keep a message whose word overlap with the query is at least its
threshold, verbatim: exactly ``ExtractiveProcessor``'s decisions). ``--budget extractive`` chooses only
among the triples that keep no more tokens a window than extractive does over the development windows
(the token half of the floor a default must clear against extractive, read on development windows),
``--budget extractive-per-shape`` only among those within extractive's tokens in each development
record's windows of each shape; without a budget the tokens are reported, never used. The record
breaks the chosen triple and extractive down by window shape (radius x length x stride) for each
record, with the triple that keeps the most gold there within extractive's tokens (what a setting
for that one shape and set alone could do).

    lazymem train keep-prior DEV_RECORD.json... [--report RECORD.json...] [--dense-priors 0]
        [--budget extractive] --out FILE

>>> windows = [[(2.0, 0.0, 0.0, True), (-1.0, 0.5, 0.0, False)], [(-3.0, 1.0, 0.0, True), (0.0, 0.0, 0.0, False)]]
>>> row = grid_row(windows, 4.0, -1.0)
>>> row["gold_recall"], row["nongold_keep_rate"]
(1.0, 0.5)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lazymem.construct.extractive import ExtractiveConfig
from lazymem.construct.prior import DEFAULT_DENSE_MODEL, dense_scores
from lazymem.errors import ConfigError, float_in, path_text
from lazymem.train.lexical import overlap_windows
from lazymem.train.probe import probed_rows, window_messages
from lazymem.train.rewards import action_reward

PRIORS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
DENSE_PRIORS = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0)
BIASES = tuple(round(0.25 * k, 2) for k in range(-24, 25))  # -6 .. 6 in steps of 0.25 (a dense prior adds up to d)

Line = tuple[float, float, float, bool]  # (logit P(KEEP), query-word overlap, query cosine, gold)
BUDGETS = ("extractive", "extractive-per-shape")


def scored_windows(
    record: Mapping, rows: Sequence[dict] | None = None, dense_model: str | None = None
) -> list[list[Line]]:
    """Each probed window of a ``choose_keep_bias`` record as (logit P(KEEP), overlap, cosine, gold) per line;
    its windows are rebuilt from its settings unless ``rows`` are given; the cosine is 0 without a
    ``dense_model``."""
    from lazymem.construct.grounded import window_query

    rows = probed_rows(record["settings"]) if rows is None else rows
    out = []
    for r, w in zip(rows, overlap_windows(record, rows)):
        cos = (
            dense_scores(window_query(r["prompt"]), [m["content"] for m in window_messages(r["prompt"])], dense_model)
            if dense_model
            else [0.0] * len(w)
        )
        out.append([(math.log(max(p, 1e-6) / max(1 - p, 1e-6)), x, c, g) for (p, x, g), c in zip(w, cos)])
    return out


def window_tokens(record: Mapping, rows: Sequence[dict] | None = None) -> list[list[int]]:
    """Qwen3 tokens of each decided message of each probed window of a ``choose_keep_bias`` record, in the
    order of ``scored_windows`` (TokenizerMissing, naming the fetch command, without the tokenizer)."""
    from lazymem.llm.tokens import count_tokens_batch

    rows = probed_rows(record["settings"]) if rows is None else rows
    return [count_tokens_batch([m["content"] for m in window_messages(r["prompt"])]) for r in rows]


def _decided_row(
    windows: Sequence[Sequence[Line]], keep: Callable[[Line], bool], tokens: Sequence[Sequence[int]] | None
) -> dict:
    gold, non, r_act, kept_tokens = [], [], [], []
    for i, w in enumerate(windows):
        ks = [keep(line) for line in w]
        r_act.append(action_reward(["KEEP" if k else "DROP" for k in ks], [g for *_, g in w]))
        for k, (*_, g) in zip(ks, w):
            (gold if g else non).append(k)
        if tokens is not None:
            if len(tokens[i]) != len(w):
                raise ValueError(f"window {i}: {len(tokens[i])} token counts for {len(w)} lines")
            kept_tokens.append(sum(t for t, k in zip(tokens[i], ks) if k))
    row = {
        "gold_recall": statistics.fmean(gold) if gold else None,
        "nongold_keep_rate": statistics.fmean(non) if non else None,
        "mean_r_act": statistics.fmean(r_act) if r_act else None,
    }
    if tokens is not None:
        row["tokens_per_window"] = statistics.fmean(kept_tokens) if kept_tokens else None
    return row


def grid_row(
    windows: Sequence[Sequence[Line]],
    prior: float,
    bias: float,
    dense: float = 0.0,
    tokens: Sequence[Sequence[int]] | None = None,
) -> dict:
    """Gold-line recall, non-gold keep rate and mean R_act per window at (prior, dense, bias), and the mean
    tokens a window keeps when each line's ``tokens`` are given."""
    return {
        "keep_prior": prior,
        "keep_prior_dense": dense,
        "keep_bias": bias,
        **_decided_row(windows, lambda ln: ln[0] + prior * ln[1] + dense * ln[2] + bias >= 0, tokens),
    }


def extractive_row(
    windows: Sequence[Sequence[Line]],
    tokens: Sequence[Sequence[int]] | None = None,
    threshold: float = ExtractiveConfig().threshold,
) -> dict:
    """The extractive processor on the same windows: KEEP where the word overlap is at least ``threshold``.

    >>> extractive_row([[(2.0, 0.5, 0.0, True), (-1.0, 0.0, 0.0, False)]], [[7, 3]])["tokens_per_window"]
    7.0
    """
    rule = ExtractiveConfig(threshold=threshold)
    return {"threshold": threshold, **_decided_row(windows, lambda ln: rule.keeps(ln[1]), tokens)}


def best_row(grid: Sequence[Mapping]) -> Mapping:
    """The highest mean R_act; ties: the smaller prior, then the smaller dense prior, then the smaller bias
    (which keeps less).

    >>> best_row([{"keep_prior": 2.0, "keep_bias": 1.0, "mean_r_act": 0.8},
    ...           {"keep_prior": 0.0, "keep_bias": 1.5, "mean_r_act": 0.8}])["keep_prior"]
    0.0
    """
    return max(
        grid, key=lambda r: (r["mean_r_act"], -r["keep_prior"], -r.get("keep_prior_dense", 0.0), -r["keep_bias"])
    )


class _Scored:
    """One record's probed windows: the lines, each line's tokens (None without the tokenizer) and shapes."""

    def __init__(self, record: Mapping, dense_model: str | None, need_tokens: bool):
        from lazymem.llm.tokens import TokenizerMissing

        rows = probed_rows(record["settings"])
        self.windows = scored_windows(record, rows, dense_model=dense_model)
        try:
            self.tokens: list[list[int]] | None = window_tokens(record, rows)
        except TokenizerMissing as e:
            if need_tokens:
                raise ConfigError(f"lazymem train keep-prior --budget needs each message's tokens: {e}") from e
            self.tokens = None
        self.shapes = [
            "x".join(str(v) for v in r["window_shape"]) if r.get("window_shape") else "unknown" for r in rows
        ]

    def cells(self) -> dict[str, tuple[list[list[Line]], list[list[int]] | None]]:
        """This record's windows and their tokens, by window shape."""
        out = {}
        for shape in sorted(set(self.shapes)):
            ix = [i for i, s in enumerate(self.shapes) if s == shape]
            out[shape] = ([self.windows[i] for i in ix], None if self.tokens is None else [self.tokens[i] for i in ix])
        return out

    def by_shape(self, chosen: Mapping, grid: Sequence[Mapping]) -> dict:
        """The chosen triple and extractive on this record's windows of each shape, and (with tokens) the grid
        triple keeping the most gold there within extractive's tokens: what the best setting for that one
        shape and set alone could do."""
        out = {}
        for shape, (ws, ts) in self.cells().items():
            ext = extractive_row(ws, ts)
            out[shape] = {
                "windows": len(ws),
                "chosen": grid_row(ws, chosen["keep_prior"], chosen["keep_bias"], chosen["keep_prior_dense"], ts),
                "extractive": ext,
            }
            if ts is not None:
                rows = [grid_row(ws, r["keep_prior"], r["keep_bias"], r["keep_prior_dense"], ts) for r in grid]
                within = [r for r in rows if r["tokens_per_window"] <= ext["tokens_per_window"]]
                out[shape]["most_gold_within_extractive_tokens"] = max(
                    within, key=lambda r: (r["gold_recall"] or 0.0, -r["tokens_per_window"], r["mean_r_act"])
                )
        return out


def choose_keep_prior(
    select: Sequence[str],
    report: Sequence[str] = (),
    priors: Sequence[float] = PRIORS,
    biases: Sequence[float] = BIASES,
    dense_priors: Sequence[float] = DENSE_PRIORS,
    dense_model: str = DEFAULT_DENSE_MODEL,
    budget: str | None = None,
) -> dict:
    """Pick (keep_prior, keep_prior_dense, keep_bias) with the best mean R_act over the windows of the
    ``select`` records (development windows only), the best with no dense prior and the best bias with no
    prior; report all three on each of ``report``'s records (read only, never used to choose). Under
    ``budget="extractive"`` only triples keeping no more tokens a window than extractive on the select
    windows are chosen; under ``"extractive-per-shape"``, no more in any select record's windows of any
    one shape."""
    if not select:
        raise ConfigError("lazymem train keep-prior: give at least one development record to choose on")
    if budget is not None and budget not in BUDGETS:
        raise ConfigError(f"lazymem train keep-prior: budget must be one of {BUDGETS} or none, got {budget!r}")
    model = dense_model if any(dense_priors) else None
    scored = {
        p: _Scored(json.loads(Path(p).read_text(encoding="utf-8")), model, budget is not None)
        for p in dict.fromkeys((*select, *report))
    }
    windows = [w for p in select for w in scored[p].windows]
    have_tokens = all(scored[p].tokens is not None for p in select)
    tokens = [t for p in select for t in scored[p].tokens] if have_tokens else None
    extractive = extractive_row(windows, tokens)
    grid = [
        grid_row(windows, float(a), float(b), float(d), tokens) for a in priors for d in dense_priors for b in biases
    ]
    if budget is None:
        allowed = grid
    elif budget == "extractive":
        allowed = [r for r in grid if r["tokens_per_window"] <= extractive["tokens_per_window"]]
    else:  # every (select record, window shape) cell within extractive's tokens there
        cells = [
            (ws, ts, extractive_row(ws, ts)["tokens_per_window"])
            for p in select
            for ws, ts in scored[p].cells().values()
        ]
        allowed = [
            r
            for r in grid
            if all(
                grid_row(ws, r["keep_prior"], r["keep_bias"], r["keep_prior_dense"], ts)["tokens_per_window"] <= cap
                for ws, ts, cap in cells
            )
        ]
    chosen = best_row(allowed)  # a bias that keeps nothing is always within a budget
    lexical = best_row([r for r in allowed if r["keep_prior_dense"] == 0.0]) if 0.0 in dense_priors else None
    plain = (
        best_row([r for r in allowed if r["keep_prior"] == 0.0 and r["keep_prior_dense"] == 0.0])
        if 0.0 in priors and 0.0 in dense_priors
        else None
    )
    reported = {}
    for p in report:
        sc = scored[p]
        reported[p] = {
            name: None
            if r is None
            else grid_row(sc.windows, r["keep_prior"], r["keep_bias"], r["keep_prior_dense"], sc.tokens)
            for name, r in (("chosen", chosen), ("no_dense", lexical), ("no_prior", plain))
        }
        reported[p]["extractive"] = extractive_row(sc.windows, sc.tokens)
        reported[p]["by_shape"] = sc.by_shape(chosen, grid)
    by = "max mean R_act (eta 0.915) over the select records' windows"
    if budget == "extractive":
        by += " among the triples keeping no more tokens a window than extractive there"
    elif budget == "extractive-per-shape":
        by += (
            " among the triples keeping no more tokens a window than extractive in each select record's "
            "windows of each shape"
        )
    return {
        "settings": {
            "select": list(select),
            "report": list(report),
            "priors": [float(a) for a in priors],
            "dense_priors": [float(d) for d in dense_priors],
            "dense_model": model,
            "biases": [float(b) for b in biases],
            "budget": budget,
        },
        "chosen": {
            "by": by + "; ties: smaller prior, then smaller dense prior, then smaller bias",
            **chosen,
            **({"keep_prior_model": model} if chosen["keep_prior_dense"] else {}),
        },
        "no_dense": lexical,
        "no_prior": plain,
        "extractive": extractive,
        "by_shape": {p: scored[p].by_shape(chosen, grid) for p in select},
        "windows": len(windows),
        "gold_lines": sum(ln[-1] for w in windows for ln in w),
        "reported": reported,
        "grid": grid,
    }


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem train keep-prior``'s arguments."""
    ap.add_argument(
        "select",
        nargs="+",
        help="keep-bias records of DEVELOPMENT windows to choose on (lazymem "
        "train keep-bias output; their pairs must be built)",
    )
    ap.add_argument(
        "--report",
        nargs="+",
        default=[],
        metavar="RECORD.json",
        help="keep-bias records to report the chosen pair on (never used to choose)",
    )
    ap.add_argument("--priors", nargs="+", type=float_in(0, 1e6), default=list(PRIORS), help="keep_prior grid")
    ap.add_argument(
        "--dense-priors",
        nargs="+",
        type=float_in(0, 1e6),
        default=list(DENSE_PRIORS),
        help="keep_prior_dense grid ('0' alone: the lexical prior only, no encoder loaded)",
    )
    ap.add_argument(
        "--dense-model",
        default=DEFAULT_DENSE_MODEL,
        help="the dense prior's sentence encoder (pipeline.keep_prior_model)",
    )
    ap.add_argument(
        "--budget",
        choices=BUDGETS,
        default=None,
        help="choose only among triples keeping no more tokens a window than this processor does on "
        "the development windows (default: none; the tokens are reported either way)",
    )
    ap.add_argument(
        "--out", type=path_text, required=True, help="write the choice, the grid and the reports as JSON here"
    )
    return ap


def run_from_args(args: argparse.Namespace) -> int:
    """Choose on the select records; a markdown summary on stdout, the record in --out."""
    from lazymem.files import write_json

    rec = choose_keep_prior(
        args.select,
        args.report,
        args.priors,
        dense_priors=args.dense_priors,
        dense_model=args.dense_model,
        budget=args.budget,
    )
    write_json(Path(args.out), rec)
    print(
        "| windows | keep_prior | keep_prior_dense | keep_bias | gold recall | non-gold kept | mean R_act | "
        "tokens a window |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")

    def line(name: str, r: Mapping | None) -> None:
        if r is not None:
            tok = r.get("tokens_per_window")
            settings = (
                f"{r['keep_prior']:g} | {r['keep_prior_dense']:g} | {r['keep_bias']:g}"
                if "keep_bias" in r
                else f"- | - | overlap >= {r['threshold']:g}"
            )
            print(
                f"| {name} | {settings} | {r['gold_recall']:.3f} | {r['nongold_keep_rate']:.3f} | "
                f"{r['mean_r_act']:.3f} | {'-' if tok is None else f'{tok:.1f}'} |"
            )

    line(f"chosen on {len(args.select)} record(s), {rec['windows']} windows", rec["chosen"])
    line("  best without a dense prior", rec["no_dense"])
    line("  best without a prior", rec["no_prior"])
    line("  extractive", rec["extractive"])
    for p, r in rec["reported"].items():
        for name in ("chosen", "no_dense", "no_prior", "extractive"):
            line(f"{p}: {name}", r[name])
    for p, shapes in (*rec["by_shape"].items(), *((p, r["by_shape"]) for p, r in rec["reported"].items())):
        for shape, r in shapes.items():
            line(f"{p}, shape {shape} ({r['windows']}): chosen", r["chosen"])
            line(f"{p}, shape {shape}: extractive", r["extractive"])
            line(
                f"{p}, shape {shape}: most gold within extractive's tokens", r.get("most_gold_within_extractive_tokens")
            )
    return 0
