"""The `lazymem` command line: thin wrappers over the package (all logic lives in modules).

lazymem --version
lazymem data summary SPEC [--subset paper] [--json]
lazymem data split SPEC [--seed 42] [--json]
lazymem retrieve SPEC --question ID [--w 2] [--json]
lazymem coverage SPEC [--k 50] [--w 0,1,2,3] [--json] [--out FILE]
lazymem bench retrieval [--sizes 1000,10000,100000] [--out FILE]
lazymem bench pipeline [--config configs/eval/demo.yaml] [--limit N] [--engines a,b] [--no-cold-warm]
lazymem bench embedding [--texts 512] [--batch-sizes 16,64,128] [--threads 1,2]
lazymem bench latency CONFIG [--limit N] [--warmup 3] [--runs 3] [--out FILE]
lazymem eval [CONFIG] [--out DIR] [--shard i/K] [...]
lazymem eval-table --config FILE [--set only=[row]] [--dry-run] [--page] [--executor local|slurm --max-parallel N --shards K]
lazymem judge-audit --config FILE [--set k=v] [--limit N] [--out DIR]
lazymem jobs DIR [--json]
lazymem merge RUN_DIR [RUN_DIR ...] --out DIR [--json] [--no-progress]
lazymem report RUN_DIR [RUN_DIR ...] [--names a,b] [--out DIR]
lazymem train sft-data|rl-data|sft|grpo|eval-windows|keep-bias|release --config FILE [--set k=v]
lazymem train recipe [--only STEP ...] [--until STEP] [--list]
lazymem train probe PAIRS [--adapter DIR]
lazymem train lexical-check RECORD.json... [--out FILE]
lazymem train keep-prior DEV_RECORD.json... [--report RECORD.json...] --out FILE
lazymem remeasure RUN_DIR [RUN_DIR ...]
lazymem fusion-tuning SPEC [--verify] [--out FILE]
lazymem notebooks run NOTEBOOK [--grid FILE] [-p k=v] [--executor local|slurm]
lazymem notebooks build [NAMES] [--no-execute]
lazymem demo [--mpm lazymem-135m|base|extractive]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from lazymem.errors import (  # noqa: F401 (error_message)
    ConfigError,
    error_message,
    float_in,
    int_in,
    path_text,
    report_exception,
)
from lazymem.files import print_json


def cmd_notebooks_run(args) -> int:
    from lazymem.jobs import config_from_args
    from lazymem.notebooks import parse_param, results_table, run_grid

    params = dict(parse_param(p) for p in args.param)
    results = run_grid(
        args.notebook,
        args.grid,
        params,
        out_root=args.out_root,
        force=args.force,
        kernel=args.kernel,
        progress=not args.no_progress,
        executor=config_from_args(args),
        command=["lazymem", *args.argv],
    )
    print(results_table(results))
    return 0 if all(r.ok for r in results) else 1


def cmd_eval(args) -> int:
    from lazymem.eval import run_from_args

    return run_from_args(args, command=["lazymem", *args.argv])


def _recipe_data(path: str, sets: list[str]) -> dict:
    """A YAML recipe's mapping with ``--set key=value`` overrides applied (errors name the file)."""
    from lazymem.eval.config import apply_overrides
    from lazymem.yamlio import read_mapping

    return apply_overrides(read_mapping(path), sets)


def cmd_train(args) -> int:
    from lazymem.notebooks.recipe import run_step

    if args.smoke:
        from lazymem.train.smoke import smoke_main

        return smoke_main(args.train_command, _recipe_data(args.config, args.set), args.config, as_json=args.json)
    t0 = time.perf_counter()
    out = run_step(args.train_command, _recipe_data(args.config, args.set), args.config)
    if args.train_command == "eval-windows":
        from lazymem.train.heldout import table_markdown

        print_json(out) if args.json else print(table_markdown(out))
    else:
        from lazymem.secrets import redact

        drop = ("log_history", "window_table", "pipeline_table", "sft_data", "rl_data")
        out = redact({k: v for k, v in out.items() if k not in drop})  # a teacher's key or URL password never shown
        print_json(out) if args.json else print(json.dumps(out, indent=1, default=str)[:4000])
    print(f"[train {args.train_command} done in {time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    return 0


def cmd_train_recipe(args) -> int:
    from lazymem.notebooks.recipe import RECIPE, run_recipe

    if args.list:
        for step in RECIPE:
            print(f"{step.name:<32} {step.command}")
        return 0
    seconds = run_recipe(until=args.until, only=tuple(args.only))
    print(json.dumps(seconds, indent=1))
    return 0


def cmd_fusion_tuning(args) -> int:
    from lazymem.eval.fusion_tuning import run_from_args

    return run_from_args(args, args.argv[1:])


def cmd_eval_table(args) -> int:
    from lazymem.eval.table import EvalTableConfig, apply_table_sets, run_eval_table, table_markdown
    from lazymem.jobs import config_from_args
    from lazymem.train.recipe import build_recipe
    from lazymem.yamlio import read_mapping

    data = apply_table_sets(read_mapping(args.config), args.set)
    data = {
        **data,
        "executor": config_from_args(args, data.get("executor"), f"{args.config}: executor"),
        **({"shards": args.shards} if args.shards is not None else {}),
    }
    config = build_recipe(EvalTableConfig, data, args.config)
    if args.dry_run:  # what it would run and call: nothing run, no model loaded, no network
        from lazymem.eval.dryrun import dry_run, dry_run_text

        plan = dry_run(config)
        print_json(plan) if args.json else print(dry_run_text(plan), end="")
        return 0
    if args.smoke:  # every cell with the table's settings, its models scripted or small: CPU, offline, minutes
        from lazymem.eval.smoke import SmokeFailed, run_smoke

        try:
            report = run_smoke(
                config,
                questions=args.smoke_questions,
                data=args.smoke_data,
                output_dir=args.out,
                progress=not args.no_progress,
            )
        except SmokeFailed as e:
            print(e, file=sys.stderr)
            return 1
        if args.json:
            print_json(report)
        return 0
    from lazymem.eval.runner import sigterm_exits

    with sigterm_exits():  # SIGTERM: the cell's manifest says interrupted, the process exits 143
        table = run_eval_table(
            config,
            progress=not args.no_progress,
            command=["lazymem", *(a for a in args.argv if a not in ("--page", "--no-progress"))],
            page_only=args.page,
            config_path=args.config,
        )
    print_json(table) if args.json else print(table_markdown(table, config.reference))
    return 1 if any(r.get("failed") for rows in table.values() for r in rows.values()) else 0


def cmd_jobs(args) -> int:
    """``lazymem jobs DIR``: 0 when no job failed, 1 otherwise."""
    from lazymem.jobs_status import jobs_status, status_text

    status = jobs_status(args.dir)
    print_json(status) if args.json else print(status_text(status))
    return 1 if status["counts"]["failed"] else 0


def add_executor_arguments(parser):
    """``--executor``, ``--max-parallel`` and the Slurm flags (unset flags leave the recipe's values)."""
    g = parser.add_argument_group("jobs (inline: this process; local: processes here; slurm: cluster jobs)")
    g.add_argument(
        "--executor",
        choices=("inline", "local", "slurm"),
        help="where each cell runs (default: the recipe's, else inline)",
    )
    g.add_argument("--max-parallel", type=int_in(1, 10_000), metavar="N", help="jobs at once (default 2)")
    g.add_argument("--partition", help="slurm partition")
    g.add_argument("--gpus-per-job", type=int_in(0, 64), metavar="N", help="GPUs per job (slurm --gpus-per-node)")
    g.add_argument(
        "--time-min", type=int_in(1, 525_600), metavar="MIN", help="a job's time limit in minutes (default 60)"
    )
    g.add_argument("--mem-gb", type=float_in(0.001, 1_000_000), metavar="GB", help="memory per job (slurm --mem)")
    g.add_argument("--cpus-per-job", type=int_in(1, 1024), metavar="N", help="CPUs per job (slurm --cpus-per-task)")
    return parser


def cmd_report(args) -> int:
    """``lazymem report``: print the tables; with --out also write them and the Pareto figure."""
    from lazymem.eval.report import report_markdown
    from lazymem.notebooks.compare import report_with_figures

    rep, _ = report_with_figures(
        args.runs,
        args.names.split(",") if args.names else None,
        args.metric,
        args.reference,
        args.paper,
        args.out,
        png=not args.no_png,
        n_resamples=args.resamples,
    )
    print(report_markdown(rep))
    if args.out:
        print(f"wrote report.json, report.md and pareto.html{'' if args.no_png else ' / pareto.png'} in {args.out}")
    return 0


def cmd_perturb(args) -> int:
    from lazymem.eval.perturb import perturb_command

    return perturb_command(args)


def cmd_demo(args) -> int:
    from lazymem.demo import run_demo

    run_demo(args.spec, n_construct=args.questions, with_eval=not args.no_eval, mpm=args.mpm)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from lazymem import __version__

    p = argparse.ArgumentParser(prog="lazymem", description="LazyMem research workbench")
    p.add_argument("--version", action="version", version=f"lazymem {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    from lazymem.data import command as data_command
    from lazymem.eval import retrieval_command

    data_command.add_parser(sub)
    retrieval_command.add_parsers(sub)

    from lazymem.bench.cli import add_bench_parser

    add_bench_parser(sub, retrieval_command.retrieval_arguments, retrieval_command.retrieval_config)

    from lazymem.eval import add_arguments as eval_arguments
    from lazymem.eval.perturb import perturb_parser
    from lazymem.eval.report import add_arguments as report_arguments

    s = sub.add_parser("eval", help="run the query pipeline over a dataset: records.jsonl, summary.json, manifest.json")
    eval_arguments(s)
    s.set_defaults(func=cmd_eval)

    nb = sub.add_parser("notebooks", help="build notebooks from their sources; run them with papermill").add_subparsers(
        dest="nb_command", required=True
    )
    s = nb.add_parser("run", help="execute a notebook once per grid point into papermill_runs/<notebook>/<run_id>/")
    s.add_argument("notebook", nargs="?", help="notebook path, name (02_retrieval_windows) or unique prefix (02)")
    s.add_argument("--grid", type=path_text, help="grid YAML: {notebook: ..., base: {...}, grid: {param: [values]}}")
    s.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    s.add_argument("--out-root", type=path_text, default="papermill_runs")
    s.add_argument("--force", action="store_true", help="rerun points that already finished")
    s.add_argument("--kernel", default="python3")
    s.add_argument("--no-progress", action="store_true")
    add_executor_arguments(s)
    s.set_defaults(func=cmd_notebooks_run)
    from lazymem.notebooks.build import add_arguments, run_from_args

    s = nb.add_parser(
        "build", help="write notebooks/NN_*.ipynb from notebooks/src/NN_*.py, execute, keep the checked outputs"
    )
    add_arguments(s)
    s.set_defaults(func=run_from_args)

    train = sub.add_parser("train", help="train the memory-processing model (paper Sec. 3.3)").add_subparsers(
        dest="train_command", required=True
    )
    for name, text in (
        ("sft-data", "SFT query-window pairs, teacher targets, balancing, data card"),
        ("rl-data", "RL prompts balanced 50/50 by gold presence, pool card"),
        ("sft", "supervised fine-tuning with TRL's SFTTrainer (full or LoRA), resumable"),
        ("grpo", "GRPO with TRL's GRPOTrainer: gated reward, curriculum, resumable"),
        ("eval-windows", "models x held-out query-window sets: Gate Fmt., gold-keep recall, reward"),
        ("keep-bias", "choose the KEEP logit bias on development windows (teacher-forced P(KEEP))"),
        ("release", "ship a trained adapter as lazymem-135m with its model card"),
    ):
        s = train.add_parser(name, help=text)
        s.add_argument(
            "--config", type=path_text, required=True, help="YAML recipe stage (configs/recipes/<model>/<stage>.yaml)"
        )
        s.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a recipe key (dotted for nested keys, e.g. lora.r=8)",
        )
        s.add_argument("--json", action="store_true", help="print the card / result as JSON")
        s.add_argument(
            "--smoke",
            action="store_true",
            help="sft-data, rl-data, sft, grpo: run the recipe's settings on CPU, offline, with tiny "
            "stand-ins for its models and data (printed); fails on what a real run would trip on",
        )
        s.set_defaults(func=cmd_train)
    s = train.add_parser("recipe", help="LazyMem-135M's training recipe, step by step (every step resumes)")
    s.add_argument("--only", nargs="+", default=[], metavar="STEP", help="run just these steps")
    s.add_argument("--until", metavar="STEP", help="run every step up to and including this one")
    s.add_argument("--list", action="store_true", help="print the steps (name, kind, config) and stop")
    s.set_defaults(func=cmd_train_recipe)
    from lazymem.train import probe

    s = probe.add_arguments(
        train.add_parser("probe", help="teacher-forced P(KEEP) on held-out windows (no generation)")
    )
    s.set_defaults(func=probe.run_from_args)
    from lazymem.train import lexical

    s = lexical.add_arguments(
        train.add_parser("lexical-check", help="is a probe's P(KEEP) more than word overlap with the query? (no model)")
    )
    s.set_defaults(func=lexical.run_from_args)
    from lazymem.train import prior

    s = prior.add_arguments(
        train.add_parser(
            "keep-prior", help="choose the lexical KEEP prior and the KEEP bias on development probe records (no model)"
        )
    )
    s.set_defaults(func=prior.run_from_args)
    from lazymem.eval import remeasure

    s = remeasure.add_arguments(
        sub.add_parser("remeasure", help="add the memory measures to eval runs made before them")
    )
    s.set_defaults(func=remeasure.run_from_args)
    from lazymem.eval.fusion_tuning import add_arguments as fusion_arguments

    s = fusion_arguments(
        sub.add_parser(
            "fusion-tuning", help="choose RRF k, weights and depths on development histories, report on the report set"
        )
    )
    s.set_defaults(func=cmd_fusion_tuning)

    from lazymem.eval import judge_audit

    s = judge_audit.add_arguments(
        sub.add_parser(
            "judge-audit", help="stress-test the judge: false accepts of wrong answers, false rejects of right ones"
        )
    )
    s.set_defaults(func=judge_audit.run_from_args)

    s = sub.add_parser("eval-table", help="several methods on the same questions: one eval run per cell, one table")
    s.add_argument(
        "--config", type=path_text, required=True, help="YAML: base recipe, sets, rows (configs/tables/*.yaml)"
    )
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a key (e.g. only=[sft])")
    s.add_argument("--json", action="store_true", help="print the table as JSON")
    s.add_argument("--no-progress", action="store_true")
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="print every cell's resolved config, the models and endpoints the table needs and its "
        "model calls (bounds where only retrieval can tell); runs nothing, loads no model, no network",
    )
    s.add_argument(
        "--smoke",
        action="store_true",
        help="run every cell on CPU, offline, in minutes: the table's settings exactly, its served models "
        "replaced by a scripted Qwen3-family server on a loopback port, GPU models on CPU, a few "
        "questions; prints what it replaced and fails on what a real run would trip on",
    )
    s.add_argument(
        "--smoke-questions", type=int_in(1, 1000), default=1, metavar="N", help="--smoke: questions a set (default 1)"
    )
    s.add_argument(
        "--smoke-data",
        metavar="SPEC",
        help="--smoke: the dataset every set reads (default: the config's where on disk, else local data)",
    )
    s.add_argument(
        "--out", type=path_text, metavar="DIR", help="--smoke: the (new or empty) folder for the smoke's cells"
    )
    s.add_argument(
        "--page",
        action="store_true",
        help="run nothing: write the result page (table.md/json: title, description, config, table, command, "
        "the cells' commits and dates) from the cells already finished; stale or missing cells show their mark",
    )
    add_executor_arguments(s).add_argument(
        "--shards",
        type=int_in(1, 10_000),
        metavar="K",
        help="K jobs per cell, each a part of its questions, merged into the cell",
    )
    s.set_defaults(func=cmd_eval_table)
    s = sub.add_parser(
        "jobs",
        help="a sweep's jobs: state, questions done, log's last line; the command that resubmits the failed ones",
    )
    s.add_argument("dir", help="the sweep's output folder (holding jobs/jobs.json)")
    s.add_argument("--json", action="store_true", help="print the status as JSON")
    s.set_defaults(func=cmd_jobs)
    from lazymem.eval import shards

    s = shards.add_arguments(sub.add_parser("merge", help=shards.HELP))
    s.set_defaults(func=shards.run_from_args)

    s = sub.add_parser("report", help="tables across run folders with paired bootstrap 95%% intervals")
    report_arguments(s)
    s.set_defaults(func=cmd_report)
    s = sub.add_parser("perturb", help="memory perturbation study (paper appendix) on a finished eval run's questions")
    perturb_parser(s)
    s.set_defaults(func=cmd_perturb)
    s = sub.add_parser("demo", help="the main job on the embedded default data set (offline, CPU)")
    s.add_argument("--spec", default=None, help="dataset SPEC (default: the embedded synthetic set)")
    s.add_argument("--questions", type=int_in(1, 1000), default=4, help="questions to run construction on (1..1000)")
    s.add_argument("--no-eval", action="store_true", help="stop before the construct/answer stage")
    s.add_argument(
        "--mpm",
        default="lazymem-135m",
        choices=("lazymem-135m", "base", "extractive"),
        help="memory processor of the construct/answer stage: LazyMem-135M (the shipped adapter), "
        "the untrained base (constrained decoding) or the extractive processor",
    )
    s.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command: 0/1 as the command says; 2 and one line for bad input (the project's own errors,
    OSError, YAML); anything else is a bug: its traceback on stderr and 1."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what the run records as its command
    try:
        return args.func(args)
    except Exception as e:
        return report_exception(e, "lazymem")


if __name__ == "__main__":
    sys.exit(main())
