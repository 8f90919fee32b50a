"""The `lazymem` command line: thin wrappers over the package (all logic lives in modules).

    lazymem data summary SPEC [--subset paper] [--json]
    lazymem data split SPEC [--seed 42] [--json]
    lazymem demo
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _summary_text(s: dict) -> str:
    lines = [f"dataset   {s['name']}", f"source    {s['source']}", f"sha256    {s['sha256'][:16]}...",
             f"histories {s['histories']}   sessions {s['sessions']}   messages {s['messages']}  "
             f"(per history min {s['messages_per_history']['min']}, median {s['messages_per_history']['median']}, "
             f"max {s['messages_per_history']['max']})",
             f"questions {s['questions']}   abstention {s['abstention_questions']}"
             + (f"   by history {s['questions_by_history']}" if "questions_by_history" in s else "")]
    width = max((len(t) for t in s["questions_by_type"]), default=4)
    for t, n in s["questions_by_type"].items():
        lines.append(f"  {t:<{width}}  {n:>6}")
    g = s["gold_evidence"]
    lines.append(f"gold evidence: {g['evidence_refs']} refs over {g['questions_with_evidence']} questions "
                 f"(mean {g['mean_per_question']}), {g['questions_spanning_sessions']} questions span sessions, "
                 f"{g['gold_messages']} distinct gold messages")
    if s["load_issues"]:
        lines.append(f"load issues: {s['load_issues']} (repaired or dropped, see --json)")
    return "\n".join(lines)


def cmd_data_summary(args) -> int:
    from lazymem.datasets import load_dataset, summarize

    s = summarize(load_dataset(args.spec, subset=args.subset))
    _print_json(s) if args.json else print(_summary_text(s))
    return 0


def cmd_data_split(args) -> int:
    from lazymem.datasets import load_dataset
    from lazymem.split import SPLITS, stratified_split

    ds = load_dataset(args.spec, subset=args.subset)
    split = stratified_split(ds.questions, seed=args.seed)
    table = split.counts_by_type(ds.questions)
    out = {"dataset": ds.name, "seed": args.seed, "counts_by_type": table,
           "totals": {s: len(split.ids(s)) for s in SPLITS}}
    if args.ids:
        out["ids"] = {s: list(split.ids(s)) for s in SPLITS}
    if args.json:
        _print_json(out)
    else:
        width = max(len(t) for t in table) if table else 4
        print(f"{'type':<{width}}  total  train  validation  test")
        for t, row in sorted(table.items()):
            print(f"{t:<{width}}  {row['total']:>5}  {row['train']:>5}  {row['validation']:>10}  {row['test']:>4}")
        tot = out["totals"]
        print(f"{'total':<{width}}  {len(ds.questions):>5}  {tot['train']:>5}  {tot['validation']:>10}  {tot['test']:>4}")
    return 0


def cmd_demo(args) -> int:
    from lazymem.datasets import DEFAULT_SPEC, load_dataset, summarize

    t0 = time.perf_counter()
    print(f"== lazymem demo: embedded default data set ({DEFAULT_SPEC}), offline, CPU ==")
    ds = load_dataset(DEFAULT_SPEC)
    print(_summary_text(summarize(ds)))
    print(f"[data stage done in {time.perf_counter() - t0:.2f} s]")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lazymem", description="LazyMem research workbench")
    sub = p.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="datasets: summaries and splits").add_subparsers(dest="data_command", required=True)
    spec_help = ("dataset SPEC: a LongMemEval/LoCoMo JSON path (optionally PATH#subset), "
                 "'synthetic:messages=N,seed=S,...', or a public LongMemEval name")
    s = data.add_parser("summary", help="question counts by type, messages, gold evidence")
    s.add_argument("spec", help=spec_help)
    s.add_argument("--subset", help="named subset, e.g. 'paper' for LoCoMo")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_data_summary)
    s = data.add_parser("split", help="the paper's stratified 72/8/20 split (seed 42)")
    s.add_argument("spec", help=spec_help)
    s.add_argument("--subset")
    s.add_argument("--seed", type=int, default=42)
    s.add_argument("--ids", action="store_true", help="include the question ids of each split")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_data_split)

    s = sub.add_parser("demo", help="the main job on the embedded default data set (offline, CPU)")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, KeyError, RuntimeError) as e:
        # LoadError/ConfigError are ValueErrors: their message already names file, record and field.
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"lazymem: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
