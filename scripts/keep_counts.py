"""How many messages a window's decisions KEEP, against how many of its messages are gold.

    python scripts/keep_counts.py SOURCE... [--out F]

A SOURCE is one of:
- training or development pairs (``lazymem train sft-data`` output, ``sft.jsonl``): the labels (n_gold, n_keep);
- a window evaluation's ``windows.jsonl`` (``lazymem train eval-windows``): the decoded n_keep against n_gold;
- an eval run directory or its ``windows.jsonl`` (``lazymem eval`` / ``eval-table``): per window, the decided
  positions that are gold and the KEEP decisions.

For each, the joint counts of (gold messages, KEEPs) per window, the share of windows with two or more KEEPs,
and, over windows with gold, the ones that lost gold while keeping something else. A model trained only on
windows with at most one gold message learns to keep at most one message per window; where the question's
evidence is two adjacent turns (LoCoMo's question and answer), or the retrieval hit beside the gold, that
selector keeps one and drops the other.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path


def window_counts(row: Mapping) -> tuple[int, int, int]:
    """(gold messages decided, KEEPs, gold KEEPs) of one window row of any of the three kinds."""
    if "decisions" in row:  # an eval run's window: decisions carry their positions, gold the question's evidence
        gold = set(row.get("gold") or ())
        dec = [d for d in (row.get("decisions") or ()) if isinstance(d, Mapping)]
        keep = [d.get("pos") for d in dec if d.get("op") == "KEEP"]
        return sum(1 for d in dec if d.get("pos") in gold), len(keep), sum(1 for p in keep if p in gold)
    if "gold_labels" in row:  # training pairs: the labels themselves
        labels = list(row["gold_labels"])
        return sum(1 for g in labels if g), sum(1 for g in labels if g), sum(1 for g in labels if g)
    if "n_gold" in row and "n_keep" in row:  # a window evaluation's decoded window
        return int(row["n_gold"]), int(row["n_keep"]), int(row.get("gold_kept") or 0)
    raise ValueError(f"a window row with neither decisions, gold_labels nor n_gold/n_keep: keys {sorted(row)[:12]}")


def rows_of(source: str | Path) -> Iterable[dict]:
    p = Path(source)
    if p.is_dir():
        p = p / "windows.jsonl"
    if not p.is_file():
        raise SystemExit(f"keep_counts: {source}: no such file (nor a run directory with windows.jsonl)")
    with p.open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise SystemExit(f"keep_counts: {p}: line {i} is not JSON ({e})") from None


def summarise(rows: Iterable[Mapping]) -> dict:
    joint: collections.Counter = collections.Counter()
    gold_windows = lost_other = gold_total = gold_kept = 0
    for r in rows:
        n_gold, n_keep, kept = window_counts(r)
        joint[(n_gold, n_keep)] += 1
        if n_gold:
            gold_windows += 1
            gold_total += n_gold
            gold_kept += kept
            lost_other += kept < n_gold and n_keep > kept
    windows = sum(joint.values())

    def share(which: int) -> float | None:  # windows with 2+ gold (which 0) or 2+ KEEPs (which 1)
        return round(sum(n for key, n in joint.items() if key[which] >= 2) / windows, 4) if windows else None

    return {
        "windows": windows,
        "joint": {f"{g} gold, {k} keep": n for (g, k), n in sorted(joint.items())},
        "share_windows_2plus_gold": share(0),
        "share_windows_2plus_keep": share(1),
        "gold_windows": gold_windows,
        "gold_messages": gold_total,
        "gold_kept": gold_kept,
        "gold_windows_lost_gold_kept_other": lost_other,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", help="sft.jsonl, a window evaluation's windows.jsonl, or an eval run dir")
    ap.add_argument("--out", help="write the summaries as JSON here")
    args = ap.parse_args(argv)
    out = {s: summarise(rows_of(s)) for s in args.sources}
    print("| source | windows | 2+ gold | 2+ KEEP | gold kept | gold windows that kept another instead |")
    print("|---|---:|---:|---:|---:|---:|")
    for s, r in out.items():
        print(
            f"| {s} | {r['windows']} | {r['share_windows_2plus_gold']} | {r['share_windows_2plus_keep']} | "
            f"{r['gold_kept']} / {r['gold_messages']} | "
            f"{r['gold_windows_lost_gold_kept_other']} / {r['gold_windows']} |"
        )
    if args.out:
        from lazymem.files import write_json

        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
