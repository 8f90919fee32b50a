"""Is a model's P(KEEP) more than word overlap with the query? The lexical check of a probe record.

``lexical_check`` reads a ``lazymem train keep-bias`` record (``lazymem.train.probe``) back over the windows it
scored (rebuilt from its settings) and sets the model's AUC beside the extractive processor's word overlap
(``lexical_scores``), split by whether a line shares a content word with the query; ``pair_overlap`` measures
word overlap of whole pair files by training style (how much a style teaches that overlap means gold).
``overlap_windows`` (P(KEEP), overlap, gold per line) is also what the lexical KEEP prior is fitted on
(``lazymem.train.prior``).

    lazymem train lexical-check RECORDS... [--pairs PAIRS...] [--out checks.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from lazymem.construct.grounded import window_query
from lazymem.errors import ConfigError, path_text
from lazymem.train.probe import auc, probed_rows, window_messages


def line_overlap(row: Mapping) -> list[float]:
    """Word overlap with the query (``lexical_scores``, the extractive processor's relevance) of each
    decided message of a window row, in order."""
    from lazymem.construct.extractive import lexical_scores

    return lexical_scores(window_query(row["prompt"]), [m["content"] for m in window_messages(row["prompt"])])


def overlap_windows(record: Mapping, rows: Sequence[dict] | None = None) -> list[list[tuple[float, float, bool]]]:
    """Each window a probe record scored, as (P(KEEP), word overlap with the query, gold) per line; the
    windows are rebuilt from the record's settings unless ``rows`` are given, and must match its gold flags."""
    rows = probed_rows(record["settings"]) if rows is None else rows
    windows = record.get("scores") or []
    if len(rows) != len(windows):
        raise ValueError(
            f"{record['settings'].get('output', 'the record')}: {len(windows)} scored windows, "
            f"{len(rows)} rebuilt from its settings (were its pairs rebuilt differently?)"
        )
    out = []
    for r, w in zip(rows, windows):
        lex = line_overlap(r)
        if len(lex) != len(w) or any(bool(g) != bool(gl) for (_, g), gl in zip(w, r["gold_labels"])):
            raise ValueError(f"{r.get('question_id')}: the record's gold flags differ from the rebuilt window's")
        out.append([(p, x, bool(g)) for (p, g), x in zip(w, lex)])
    return out


def lexical_check(record: Mapping, rows: Sequence[dict] | None = None) -> dict:
    """Is the model's P(KEEP) more than word overlap with the query? On the windows a probe record
    scored (rebuilt from its settings unless ``rows`` are given): the AUC of the extractive
    processor's relevance (``lexical_scores``: the share of the query's content words a message
    has) beside the model's, the share of gold and non-gold lines that share no content word with
    the query, and the model's AUC within the lines with no shared word and within those with some
    (where lexical matching cannot tell gold from the rest, and where it can).

    A gold line that shares no word is one lexical matching cannot find at any threshold; a model
    whose AUC there is near 0.5 has learned little beyond word overlap.
    """
    windows = overlap_windows(record, rows)
    lines = [ln for w in windows for ln in w]  # (model P(KEEP), lexical score, gold)

    def split(keep):
        sel = [ln for ln in lines if keep(ln)]
        return [p for p, _, g in sel if g], [p for p, _, g in sel if not g]

    gold = [x for _, x, g in lines if g]
    non = [x for _, x, g in lines if not g]
    return {
        "windows": len(windows),
        "gold_lines": len(gold),
        "nongold_lines": len(non),
        "auc_model": auc(*split(lambda ln: True)),
        "auc_lexical": auc(gold, non),
        "gold_no_shared_word": sum(x == 0 for x in gold) / len(gold) if gold else None,
        "nongold_no_shared_word": sum(x == 0 for x in non) / len(non) if non else None,
        "auc_model_no_shared_word": auc(*split(lambda ln: ln[1] == 0)),
        "auc_model_shared_word": auc(*split(lambda ln: ln[1] > 0)),
    }


def pair_overlap(rows: Sequence[dict]) -> dict[str, dict]:
    """Per training style (a pair's ``style``), how much its windows' lines share words with the query:
    the word-overlap AUC of gold vs non-gold lines, the shares of gold and non-gold lines that share no
    content word, and the mean overlap of non-gold lines. A style whose distractors seldom share the
    query's words teaches a model that overlap means gold (LoCoMo's half do)."""
    by: dict[str, tuple[list[float], list[float]]] = {}
    for r in rows:
        lex = line_overlap(r)
        gold, non = by.setdefault(r.get("style") or "?", ([], []))
        for x, g in zip(lex, r["gold_labels"]):
            (gold if g else non).append(x)
    return {
        style: {
            "gold_lines": len(g),
            "nongold_lines": len(n),
            "auc_lexical": auc(g, n),
            "gold_no_shared_word": sum(x == 0 for x in g) / len(g) if g else None,
            "nongold_no_shared_word": sum(x == 0 for x in n) / len(n) if n else None,
            "nongold_mean_overlap": statistics.fmean(n) if n else None,
        }
        for style, (g, n) in sorted(by.items())
    }


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem train lexical-check``'s arguments."""
    ap.add_argument(
        "records",
        nargs="*",
        help="keep-bias records (lazymem train keep-bias output; their pairs must be built, as their configs say)",
    )
    ap.add_argument(
        "--pairs",
        nargs="+",
        default=[],
        metavar="PAIRS.jsonl",
        help="also: word overlap of every window line of these pair files, by style (pair_overlap)",
    )
    ap.add_argument("--out", type=path_text, help="write the checks as JSON here (one entry per record / pair file)")
    return ap


def run_from_args(args: argparse.Namespace) -> int:
    """``lexical_check`` of each record; a markdown table on stdout, JSON with --out."""
    from lazymem.files import write_json

    out = {}
    for path in args.records:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        out[path] = {
            "pairs": record["settings"]["pairs"],
            "adapter": record["settings"].get("adapter"),
            "styles": record["settings"].get("styles"),
            **lexical_check(record),
        }
    cols = (
        "auc_model",
        "auc_lexical",
        "gold_no_shared_word",
        "nongold_no_shared_word",
        "auc_model_no_shared_word",
        "auc_model_shared_word",
    )
    if out:
        print("| record | windows | gold | " + " | ".join(cols) + " |")
        print("|---|---:|---:|" + "---:|" * len(cols))
    for path, r in out.items():
        cells = ["-" if r[c] is None else f"{r[c]:.3f}" for c in cols]
        print(f"| {path} | {r['windows']} | {r['gold_lines']} | " + " | ".join(cells) + " |")
    if args.pairs:
        from lazymem.train.heldout import load_pairs

        cols = ("auc_lexical", "gold_no_shared_word", "nongold_no_shared_word", "nongold_mean_overlap")
        print("| pairs | style | gold | non-gold | " + " | ".join(cols) + " |")
        print("|---|---|---:|---:|" + "---:|" * len(cols))
        for path in args.pairs:
            out[path] = {"by_style": pair_overlap(load_pairs(path))}
            for style, r in out[path]["by_style"].items():
                cells = ["-" if r[c] is None else f"{r[c]:.3f}" for c in cols]
                print(f"| {path} | {style} | {r['gold_lines']} | {r['nongold_lines']} | " + " | ".join(cells) + " |")
    if not out:
        raise ConfigError("lazymem train lexical-check: give keep-bias records, --pairs files, or both")
    if args.out:
        write_json(Path(args.out), out)
    return 0
