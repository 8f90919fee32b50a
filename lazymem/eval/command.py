"""The ``lazymem eval`` command line: its options, the EvalConfig they give, and running it.

>>> add_arguments(argparse.ArgumentParser()).parse_args(["--limit", "0", "--set", "seed=1"]).limit
0
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from lazymem.errors import SEED_MAX, int_in, path_text
from lazymem.eval import runner
from lazymem.eval.config import JUDGES, EvalConfig, apply_overrides
from lazymem.eval.runfiles import RECORDS_FILE
from lazymem.eval.scoring import summary_text
from lazymem.eval.shards import shard_arg
from lazymem.pipeline import method_names
from lazymem.secrets import redact


def default_config_path() -> Path:
    """configs/eval/demo.yaml of the checkout holding this package."""
    return Path(__file__).resolve().parents[2] / "configs" / "eval" / "demo.yaml"


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``lazymem eval`` options to `p` (the CLI's ``eval`` subparser); returns it."""
    p.epilog = (
        "exit status: 0 every question answered; 3 the run finished but some questions failed (recorded "
        "with their errors; a rerun redoes only them); 2 bad input (one line naming file and field); "
        "1 a bug (its traceback is printed)"
    )
    p.add_argument(
        "config",
        nargs="?",
        type=path_text,
        default=None,
        help="YAML recipe (default: configs/eval/demo.yaml, offline CPU demo)",
    )
    p.add_argument(
        "--out",
        type=path_text,
        default=None,
        help="run folder (default: runs/eval/<config name>, with --shard i/K: <config name>-shard<i>of<K>)",
    )
    p.add_argument("--dataset", help="dataset SPEC (overrides the recipe)")
    p.add_argument("--subset", help="named subset, e.g. paper")
    p.add_argument("--split", choices=("train", "validation", "test"), help="the paper's split")
    p.add_argument("--ids", help="comma-separated question ids")
    p.add_argument("--types", help="comma-separated question types or abbreviations (KU,MS,...)")
    p.add_argument("--limit", type=int_in(0, 10_000_000), help="at most this many questions (0 = all)")
    p.add_argument(
        "--shard",
        type=shard_arg,
        metavar="i/K",
        help="only the i-th of K disjoint parts of the selected questions (by question id; applied "
        "last); merge the K run folders with lazymem merge",
    )
    p.add_argument("--method", choices=method_names())
    p.add_argument("--judge", choices=JUDGES)
    p.add_argument("--seed", type=int_in(0, SEED_MAX), help=f"sampling seed of every model call (0..{SEED_MAX})")
    p.add_argument("--workers", type=int_in(1, 1024), help="questions in flight (server backends, 1..1024)")
    p.add_argument("--cache-dir", type=path_text, help="LLM call cache directory")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the LLM call cache")
    p.add_argument("--baseline", type=path_text, help="a finished run folder to compare with")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any recipe key, e.g. --set pipeline.retrieval.n=20 (repeatable)",
    )
    p.add_argument(
        "--force-new",
        action="store_true",
        help="start afresh: move earlier records, errors and summary of the run folder into "
        "previous-<time>/ inside it (never deleted) instead of resuming them",
    )
    p.add_argument("--overwrite", action="store_true", help="the old name of --force-new (nothing is deleted)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    """The EvalConfig of parsed ``lazymem eval`` arguments (recipe, then flags, then --set)."""
    from lazymem.yamlio import read_mapping

    path = Path(args.config) if args.config else default_config_path()
    data = read_mapping(path)
    flags = {
        "dataset": args.dataset,
        "subset": args.subset,
        "split": args.split,
        "limit": args.limit,
        "judge": args.judge,
        "seed": args.seed,
        "workers": args.workers,
        "baseline": args.baseline,
        "llm_cache_dir": args.cache_dir,
        "shard": getattr(args, "shard", None),
    }
    data.update({k: v for k, v in flags.items() if v is not None})
    if args.ids:
        data["ids"] = [s for s in args.ids.split(",") if s]
    if args.types:
        data["types"] = [s for s in args.types.split(",") if s]
    if args.no_cache:
        data["llm_cache"] = False
    if args.method:
        data.setdefault("pipeline", {})
        data["pipeline"] = dict(data["pipeline"] or {}, method=args.method)
    return EvalConfig.from_dict(apply_overrides(data, args.overrides))


def warn_missing_tokenizer(config: EvalConfig) -> bool:
    """Say on stderr, before the first question, that memory tokens will be missing when the run counts
    them and the Qwen3 tokenizer is not found (with the command that fetches it); True when it said so."""
    if not config.count_tokens:
        return False
    from lazymem.llm.tokens import tokenizer_warning

    missing = tokenizer_warning()
    if missing:
        print(f"lazymem eval: warning: {missing}", file=sys.stderr, flush=True)
    return missing is not None


# `lazymem eval` finished, but some questions failed (each recorded with its error; a rerun redoes only
# them). Not 1, which the CLI keeps for a bug (an unexpected exception and its traceback), nor 2 (bad input).
EXIT_QUESTIONS_FAILED = 3


def run_from_args(args: argparse.Namespace, command: Sequence[str] | None = None) -> int:
    """Run parsed ``lazymem eval`` arguments (for a CLI that adds add_arguments' options);
    ``command`` is recorded in the manifest (default sys.argv)."""
    config = config_from_args(args)
    if args.print_config:
        json.dump(redact(config.to_dict()), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    warn_missing_tokenizer(config)
    stem = Path(args.config).stem if args.config else "eval_demo"
    if config.shard is not None:  # each shard its own folder by default: runs/eval/<stem>-shard1of3
        stem += "-shard{}of{}".format(*config.shard.split("/"))
    out = args.out or str(Path("runs") / "eval" / stem)
    with runner.sigterm_exits():  # SIGTERM: the manifest says interrupted, the process exits 143
        summary = runner.evaluate(
            config, out, progress=not args.no_progress, command=command, force_new=args.force_new or args.overwrite
        )
    if args.json:
        json.dump(summary, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(summary_text(summary))
        print(f"records: {Path(out) / RECORDS_FILE}")
    c = summary["counts"]
    return 0 if c["error"] == 0 and c["missing"] == 0 else EXIT_QUESTIONS_FAILED
