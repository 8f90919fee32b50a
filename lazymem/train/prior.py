"""Choose the lexical KEEP prior (``pipeline.keep_prior``) and the KEEP bias together, on development windows.

Under ``pipeline.keep_prior`` = a and ``logit_bias {" KEEP": b}``, message i of a window is KEEP when

    logit P(KEEP_i) + a * x_i + b >= 0

where P(KEEP_i) is the model's probability of KEEP against DROP at trace line i's ``->`` and x_i the
share of the query's content words message i has (``lexical_scores``, the extractive processor's
relevance; ``probe.line_overlap``). A ``choose_keep_bias`` record already holds P(KEEP) of every
line of its windows, teacher-forced, so any (a, b) is re-read from it without the model: this
module scores a grid of (a, b) by mean R_act per window (the paper's action reward, as the KEEP
bias alone is chosen) and picks the best on the development records, then reports the chosen
pair (and the best bias without a prior) on other records, e.g. a diagnostic set that must not
choose anything.

    lazymem train keep-prior DEV_RECORD.json... [--report RECORD.json...] --out FILE

>>> windows = [[(2.0, 0.0, True), (-1.0, 0.5, False)], [(-3.0, 1.0, True), (0.0, 0.0, False)]]
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

from lazymem.errors import ConfigError
from lazymem.train.probe import overlap_windows
from lazymem.train.rewards import action_reward

PRIORS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
BIASES = tuple(round(0.25 * k, 2) for k in range(-8, 25))  # -2 .. 6 in steps of 0.25

Line = tuple[float, float, bool]  # (logit P(KEEP), query-word overlap, gold)


def scored_windows(record: Mapping, rows: Sequence[dict] | None = None) -> list[list[Line]]:
    """Each probed window of a ``choose_keep_bias`` record as (logit P(KEEP), overlap, gold) per line;
    its windows are rebuilt from its settings unless ``rows`` are given."""
    return [[(math.log(max(p, 1e-6) / max(1 - p, 1e-6)), x, g) for p, x, g in w] for w in overlap_windows(record, rows)]


def grid_row(windows: Sequence[Sequence[Line]], prior: float, bias: float) -> dict:
    """Gold-line recall, non-gold keep rate and mean R_act per window at (prior, bias)."""
    gold, non, r_act = [], [], []
    for w in windows:
        keep = [z + prior * x + bias >= 0 for z, x, _ in w]
        r_act.append(action_reward(["KEEP" if k else "DROP" for k in keep], [g for _, _, g in w]))
        for k, (_, _, g) in zip(keep, w):
            (gold if g else non).append(k)
    return {"keep_prior": prior, "keep_bias": bias,
            "gold_recall": statistics.fmean(gold) if gold else None,
            "nongold_keep_rate": statistics.fmean(non) if non else None,
            "mean_r_act": statistics.fmean(r_act) if r_act else None}


def best_row(grid: Sequence[Mapping]) -> Mapping:
    """The highest mean R_act; ties: the smaller prior, then the smaller bias (which keeps less).

    >>> best_row([{"keep_prior": 2.0, "keep_bias": 1.0, "mean_r_act": 0.8},
    ...           {"keep_prior": 0.0, "keep_bias": 1.5, "mean_r_act": 0.8}])["keep_prior"]
    0.0
    """
    return max(grid, key=lambda r: (r["mean_r_act"], -r["keep_prior"], -r["keep_bias"]))


def choose_keep_prior(select: Sequence[str], report: Sequence[str] = (), priors: Sequence[float] = PRIORS,
                      biases: Sequence[float] = BIASES) -> dict:
    """Pick (keep_prior, keep_bias) with the best mean R_act over the windows of the ``select`` records
    (development windows only), and the best bias with no prior beside it; report both on each of
    ``report``'s records (read only, never used to choose)."""
    if not select:
        raise ConfigError("lazymem train keep-prior: give at least one development record to choose on")
    records = {p: json.loads(Path(p).read_text(encoding="utf-8")) for p in (*select, *report)}
    windows = [w for p in select for w in scored_windows(records[p])]
    grid = [grid_row(windows, float(a), float(b)) for a in priors for b in biases]
    chosen = best_row(grid)
    plain = best_row([r for r in grid if r["keep_prior"] == 0.0]) if 0.0 in priors else None
    reported = {}
    for p in report:
        ws = scored_windows(records[p])
        reported[p] = {"chosen": grid_row(ws, chosen["keep_prior"], chosen["keep_bias"]),
                       "no_prior": None if plain is None else grid_row(ws, 0.0, plain["keep_bias"])}
    return {
        "settings": {"select": list(select), "report": list(report), "priors": [float(a) for a in priors],
                     "biases": [float(b) for b in biases]},
        "chosen": {"by": "max mean R_act (eta 0.915) over the select records' windows; ties: smaller prior, "
                         "then smaller bias", **chosen},
        "no_prior": plain,
        "windows": len(windows),
        "gold_lines": sum(g for w in windows for _, _, g in w),
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
    ap.add_argument("--out", required=True, help="write the choice, the grid and the reports as JSON here")
    return ap


def run_from_args(args: argparse.Namespace) -> int:
    """Choose on the select records; a markdown summary on stdout, the record in --out."""
    from lazymem.files import write_json

    rec = choose_keep_prior(args.select, args.report, args.priors)
    write_json(Path(args.out), rec)
    print("| windows | keep_prior | keep_bias | gold recall | non-gold kept | mean R_act |")
    print("|---|---:|---:|---:|---:|---:|")

    def line(name: str, r: Mapping | None) -> None:
        if r is not None:
            print(f"| {name} | {r['keep_prior']:g} | {r['keep_bias']:g} | {r['gold_recall']:.3f} | "
                  f"{r['nongold_keep_rate']:.3f} | {r['mean_r_act']:.3f} |")

    line(f"chosen on {len(args.select)} record(s), {rec['windows']} windows", rec["chosen"])
    line("  best without a prior", rec["no_prior"])
    for p, r in rec["reported"].items():
        line(f"{p}: chosen", r["chosen"])
        line(f"{p}: no prior", r["no_prior"])
    return 0
