"""Choose the KEEP prior (``pipeline.keep_prior``, ``pipeline.keep_prior_dense``) and the KEEP bias together,
on development windows.

Under ``pipeline.keep_prior`` = a, ``pipeline.keep_prior_dense`` = d and ``logit_bias {" KEEP": b}``, message
i of a window is KEEP when

    logit P(KEEP_i) + a * x_i + d * s_i + b >= 0

where P(KEEP_i) is the model's probability of KEEP against DROP at trace line i's ``->``, x_i the share of
the query's content words message i has (``lexical_scores``, the extractive processor's relevance;
``probe.line_overlap``) and s_i the cosine similarity of the query and the message under the prior's
sentence encoder (``lazymem.construct.prior.dense_scores``). A ``choose_keep_bias`` record already holds
P(KEEP) of every line of its windows, teacher-forced, so any (a, d, b) is re-read from it without the
model: this module scores a grid of (a, d, b) by mean R_act per window (the paper's action reward, as the
KEEP bias alone is chosen) and picks the best on the development records, then reports the chosen triple
(the best with no dense prior, and the best bias alone) on other records, e.g. a diagnostic set that must
not choose anything.

    lazymem train keep-prior DEV_RECORD.json... [--report RECORD.json...] [--dense-priors 0] --out FILE

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
from collections.abc import Mapping, Sequence
from pathlib import Path

from lazymem.construct.prior import DEFAULT_DENSE_MODEL, dense_scores
from lazymem.errors import ConfigError
from lazymem.train.probe import overlap_windows, probed_rows, window_messages
from lazymem.train.rewards import action_reward

PRIORS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
DENSE_PRIORS = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0)
BIASES = tuple(round(0.25 * k, 2) for k in range(-24, 25))  # -6 .. 6 in steps of 0.25 (a dense prior adds up to d)

Line = tuple[float, float, float, bool]  # (logit P(KEEP), query-word overlap, query cosine, gold)


def scored_windows(record: Mapping, rows: Sequence[dict] | None = None,
                   dense_model: str | None = None) -> list[list[Line]]:
    """Each probed window of a ``choose_keep_bias`` record as (logit P(KEEP), overlap, cosine, gold) per line;
    its windows are rebuilt from its settings unless ``rows`` are given; the cosine is 0 without a
    ``dense_model``."""
    from lazymem.construct.grounded import window_query

    rows = probed_rows(record["settings"]) if rows is None else rows
    out = []
    for r, w in zip(rows, overlap_windows(record, rows)):
        cos = (dense_scores(window_query(r["prompt"]), [m["content"] for m in window_messages(r["prompt"])],
                            dense_model) if dense_model else [0.0] * len(w))
        out.append([(math.log(max(p, 1e-6) / max(1 - p, 1e-6)), x, c, g) for (p, x, g), c in zip(w, cos)])
    return out


def grid_row(windows: Sequence[Sequence[Line]], prior: float, bias: float, dense: float = 0.0) -> dict:
    """Gold-line recall, non-gold keep rate and mean R_act per window at (prior, dense, bias)."""
    gold, non, r_act = [], [], []
    for w in windows:
        keep = [z + prior * x + dense * c + bias >= 0 for z, x, c, _ in w]
        r_act.append(action_reward(["KEEP" if k else "DROP" for k in keep], [g for *_, g in w]))
        for k, (*_, g) in zip(keep, w):
            (gold if g else non).append(k)
    return {"keep_prior": prior, "keep_prior_dense": dense, "keep_bias": bias,
            "gold_recall": statistics.fmean(gold) if gold else None,
            "nongold_keep_rate": statistics.fmean(non) if non else None,
            "mean_r_act": statistics.fmean(r_act) if r_act else None}


def best_row(grid: Sequence[Mapping]) -> Mapping:
    """The highest mean R_act; ties: the smaller prior, then the smaller dense prior, then the smaller bias
    (which keeps less).

    >>> best_row([{"keep_prior": 2.0, "keep_bias": 1.0, "mean_r_act": 0.8},
    ...           {"keep_prior": 0.0, "keep_bias": 1.5, "mean_r_act": 0.8}])["keep_prior"]
    0.0
    """
    return max(grid, key=lambda r: (r["mean_r_act"], -r["keep_prior"], -r.get("keep_prior_dense", 0.0),
                                    -r["keep_bias"]))


def choose_keep_prior(select: Sequence[str], report: Sequence[str] = (), priors: Sequence[float] = PRIORS,
                      biases: Sequence[float] = BIASES, dense_priors: Sequence[float] = DENSE_PRIORS,
                      dense_model: str = DEFAULT_DENSE_MODEL) -> dict:
    """Pick (keep_prior, keep_prior_dense, keep_bias) with the best mean R_act over the windows of the
    ``select`` records (development windows only), the best with no dense prior and the best bias with no
    prior; report all three on each of ``report``'s records (read only, never used to choose)."""
    if not select:
        raise ConfigError("lazymem train keep-prior: give at least one development record to choose on")
    model = dense_model if any(dense_priors) else None
    records = {p: json.loads(Path(p).read_text(encoding="utf-8")) for p in (*select, *report)}
    windows = [w for p in select for w in scored_windows(records[p], dense_model=model)]
    grid = [grid_row(windows, float(a), float(b), float(d)) for a in priors for d in dense_priors for b in biases]
    chosen = best_row(grid)
    lexical = best_row([r for r in grid if r["keep_prior_dense"] == 0.0]) if 0.0 in dense_priors else None
    plain = (best_row([r for r in grid if r["keep_prior"] == 0.0 and r["keep_prior_dense"] == 0.0])
             if 0.0 in priors and 0.0 in dense_priors else None)
    reported = {}
    for p in report:
        ws = scored_windows(records[p], dense_model=model)
        reported[p] = {name: None if r is None else grid_row(ws, r["keep_prior"], r["keep_bias"], r["keep_prior_dense"])
                       for name, r in (("chosen", chosen), ("no_dense", lexical), ("no_prior", plain))}
    return {
        "settings": {"select": list(select), "report": list(report), "priors": [float(a) for a in priors],
                     "dense_priors": [float(d) for d in dense_priors], "dense_model": model,
                     "biases": [float(b) for b in biases]},
        "chosen": {"by": "max mean R_act (eta 0.915) over the select records' windows; ties: smaller prior, "
                         "then smaller dense prior, then smaller bias", **chosen,
                   **({"keep_prior_model": model} if chosen["keep_prior_dense"] else {})},
        "no_dense": lexical,
        "no_prior": plain,
        "windows": len(windows),
        "gold_lines": sum(ln[-1] for w in windows for ln in w),
        "reported": reported,
        "grid": grid,
    }


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem train keep-prior``'s arguments."""
    ap.add_argument("select", nargs="+", help="keep-bias records of DEVELOPMENT windows to choose on (lazymem "
                                               "train keep-bias output; their pairs must be built)")
    ap.add_argument("--report", nargs="+", default=[], metavar="RECORD.json",
                    help="keep-bias records to report the chosen pair on (never used to choose)")
    ap.add_argument("--priors", nargs="+", type=float, default=list(PRIORS), help="keep_prior grid")
    ap.add_argument("--dense-priors", nargs="+", type=float, default=list(DENSE_PRIORS),
                    help="keep_prior_dense grid ('0' alone: the lexical prior only, no encoder loaded)")
    ap.add_argument("--dense-model", default=DEFAULT_DENSE_MODEL,
                    help="the dense prior's sentence encoder (pipeline.keep_prior_model)")
    ap.add_argument("--out", required=True, help="write the choice, the grid and the reports as JSON here")
    return ap


def run_from_args(args: argparse.Namespace) -> int:
    """Choose on the select records; a markdown summary on stdout, the record in --out."""
    from lazymem.files import write_json

    rec = choose_keep_prior(args.select, args.report, args.priors, dense_priors=args.dense_priors,
                            dense_model=args.dense_model)
    write_json(Path(args.out), rec)
    print("| windows | keep_prior | keep_prior_dense | keep_bias | gold recall | non-gold kept | mean R_act |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def line(name: str, r: Mapping | None) -> None:
        if r is not None:
            print(f"| {name} | {r['keep_prior']:g} | {r['keep_prior_dense']:g} | {r['keep_bias']:g} | "
                  f"{r['gold_recall']:.3f} | {r['nongold_keep_rate']:.3f} | {r['mean_r_act']:.3f} |")

    line(f"chosen on {len(args.select)} record(s), {rec['windows']} windows", rec["chosen"])
    line("  best without a dense prior", rec["no_dense"])
    line("  best without a prior", rec["no_prior"])
    for p, r in rec["reported"].items():
        for name in ("chosen", "no_dense", "no_prior"):
            line(f"{p}: {name}", r[name])
    return 0
