"""``lazymem data summary|split|lengths``: what a data set holds, the paper's split, message lengths.

The command line's data commands (``lazymem.cli`` adds them with ``add_parser``); the logic is in
``lazymem.data.datasets`` (``summarize``), ``lazymem.data.split`` and ``lazymem.data.lengths``.
"""

from __future__ import annotations

from lazymem.errors import SEED_MAX, int_in, path_text
from lazymem.files import print_json, write_json

SPEC_HELP = (
    "dataset SPEC: a LongMemEval/LoCoMo JSON path (optionally PATH#subset), "
    "'synthetic:messages=N,seed=S,...', or a public LongMemEval name"
)


def cmd_summary(args) -> int:
    from lazymem.data.datasets import load_dataset, summarize, summary_text

    s = summarize(load_dataset(args.spec, subset=args.subset))
    print_json(s) if args.json else print(summary_text(s))
    return 0


def cmd_split(args) -> int:
    from lazymem.data.datasets import load_dataset
    from lazymem.data.split import SPLITS, stratified_split

    ds = load_dataset(args.spec, subset=args.subset)
    split = stratified_split(ds.questions, seed=args.seed)
    table = split.counts_by_type(ds.questions)
    out = {
        "dataset": ds.name,
        "seed": args.seed,
        "counts_by_type": table,
        "totals": {s: len(split.ids(s)) for s in SPLITS},
    }
    if args.ids:
        out["ids"] = {s: list(split.ids(s)) for s in SPLITS}
    if args.json:
        print_json(out)
    else:
        width = max(len(t) for t in table) if table else 4
        print(f"{'type':<{width}}  total  train  validation  test")
        for t, row in sorted(table.items()):
            print(f"{t:<{width}}  {row['total']:>5}  {row['train']:>5}  {row['validation']:>10}  {row['test']:>4}")
        tot = out["totals"]
        print(
            f"{'total':<{width}}  {len(ds.questions):>5}  {tot['train']:>5}  {tot['validation']:>10}  {tot['test']:>4}"
        )
    return 0


def cmd_lengths(args) -> int:
    from lazymem.data.datasets import load_dataset
    from lazymem.data.lengths import lengths_table, message_lengths

    results = {spec: message_lengths(load_dataset(spec)) for spec in args.specs}
    for unit in ("words", "chars") if args.unit == "both" else (args.unit,):
        print(f"\nMessage length in {'characters' if unit == 'chars' else 'words'}:\n")
        print(lengths_table(results, unit))
    if args.json_out:
        write_json(args.json_out, results, indent=2)
    return 0


def add_parser(sub) -> None:
    """Add ``data`` and its subcommands to the ``lazymem`` parser's subparsers ``sub``."""
    data = sub.add_parser("data", help="datasets: summaries and splits").add_subparsers(
        dest="data_command", required=True
    )
    s = data.add_parser("summary", help="question counts by type, messages, gold evidence")
    s.add_argument("spec", help=SPEC_HELP)
    s.add_argument("--subset", help="named subset, e.g. 'paper' for LoCoMo")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_summary)
    s = data.add_parser("split", help="the paper's stratified 72/8/20 split (seed 42)")
    s.add_argument("spec", help=SPEC_HELP)
    s.add_argument("--subset")
    s.add_argument("--seed", type=int_in(0, SEED_MAX), default=42, help=f"seed of the split (0..{SEED_MAX})")
    s.add_argument("--ids", action="store_true", help="include the question ids of each split")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_split)
    s = data.add_parser(
        "lengths", help="message lengths by role kind (user / assistant / named speaker), in words and characters"
    )
    s.add_argument("specs", nargs="+", help=SPEC_HELP + "; several side by side")
    s.add_argument("--unit", choices=("words", "chars", "both"), default="both")
    s.add_argument(
        "--json", dest="json_out", type=path_text, metavar="FILE", help="also write the statistics as JSON here"
    )
    s.set_defaults(func=cmd_lengths)
