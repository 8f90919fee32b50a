"""Message lengths of datasets, by role kind (user / assistant / named speaker), in words and characters.

    python scripts/message_lengths.py SPEC [SPEC ...] [--unit words|chars|both] [--json FILE]

Each SPEC is anything ``lazymem.data.load_dataset`` takes: a generator spec
(``synthetic:...``, ``synthetic-casual:...``) or a LongMemEval / LoCoMo file. Prints one Markdown
table per unit: n, mean, median, p10, p90, p99 and max per (dataset, role kind), so the training
generators' lengths can be read beside the real data's, e.g.

    python scripts/message_lengths.py "synthetic:messages=400,seed=21,histories=4,questions=10,varied=1" \\
        ../shared/data/longmemeval/s_fragment_3haystacks.json ../shared/data/locomo/locomo10.json
"""
from __future__ import annotations

import argparse
import json
import sys

from lazymem.data import load_dataset
from lazymem.data.lengths import lengths_table, message_lengths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("specs", nargs="+", help="dataset SPECs or files")
    parser.add_argument("--unit", choices=("words", "chars", "both"), default="both")
    parser.add_argument("--json", help="also write the statistics as JSON here")
    args = parser.parse_args(argv)
    results = {spec: message_lengths(load_dataset(spec)) for spec in args.specs}
    for unit in (("words", "chars") if args.unit == "both" else (args.unit,)):
        print(f"\nMessage length in {'characters' if unit == 'chars' else 'words'}:\n")
        print(lengths_table(results, unit))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
