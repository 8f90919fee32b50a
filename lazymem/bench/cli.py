"""``lazymem bench retrieval|pipeline|embedding|latency``: the parsers and thin handlers (logic in the modules)."""

from __future__ import annotations

import functools

from lazymem.errors import int_in, ints_in, path_text

# Upper bounds of the counts: far above any real benchmark, so a mistyped value is refused at once.
MAX_HISTORY = 1_000_000  # messages of one synthetic history
MAX_QUESTIONS = 1_000_000
MAX_THREADS = 1024


def cmd_bench_retrieval(args, retrieval_config) -> int:
    from lazymem.bench.retrieval import DEFAULT_LONGMEMEVAL, bench_retrieval

    lme = args.longmemeval if args.longmemeval else (DEFAULT_LONGMEMEVAL if DEFAULT_LONGMEMEVAL.exists() else None)
    bench_retrieval(
        sizes=args.sizes,
        longmemeval_path=None if lme == "none" else lme,
        n_queries=args.n_queries,
        config=retrieval_config(args),
        out=args.out,
        max_embed_messages=args.max_embed_messages,
    )
    return 0


def cmd_bench_pipeline(args) -> int:
    from lazymem.bench.pipeline import bench_pipeline

    config, overrides = args.config, list(args.set)
    if args.cell:  # a cell of a results table: its base recipe with the set's and the row's overrides
        from lazymem.errors import ConfigError
        from lazymem.eval.table import EvalTableConfig
        from lazymem.fields import build_recipe
        from lazymem.yamlio import read_mapping

        table = build_recipe(EvalTableConfig, read_mapping(args.config), args.config)
        set_name, _, row = args.cell.partition("/")
        if set_name not in table.sets or row not in table.rows:
            raise ConfigError(
                f"{args.config}: --cell {args.cell!r}: sets are {sorted(table.sets)}, rows are {sorted(table.rows)}"
            )
        config, overrides = table.base, [*table.cell_overrides(set_name, row), *overrides]
    bench_pipeline(
        config,
        overrides=overrides,
        limit=args.limit,
        engine_names=[e for e in args.engines.split(",") if e] if args.engines else None,
        threads=args.threads,
        do_cold_warm=not args.no_cold_warm,
        out=args.out,
        figure_dir=None if args.no_figure else args.figure_dir,
    )
    return 0


def cmd_bench_embedding(args) -> int:
    from lazymem.bench.embedding import bench_embedding

    bench_embedding(
        n_texts=args.texts,
        batch_sizes=args.batch_sizes,
        threads=args.threads,
        n_queries=args.queries,
        model=args.dense_model,
        longmemeval_path=args.longmemeval,
        out=args.out,
    )
    return 0


def cmd_bench_latency(args) -> int:
    from lazymem.bench.latency import bench_latency

    bench_latency(args.config, overrides=args.set, limit=args.limit, warmup=args.warmup, runs=args.runs, out=args.out)
    return 0


def add_bench_parser(sub, retrieval_opts, retrieval_config) -> None:
    """Add ``bench`` and its subcommands to the ``lazymem`` parser (``retrieval_opts`` adds the retrieval
    flags, ``retrieval_config(args)`` reads them back)."""
    bench = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench_command", required=True)
    s = bench.add_parser("retrieval", help="per-stage retrieval latency and index cost vs history size")
    s.add_argument(
        "--sizes",
        type=ints_in(1, MAX_HISTORY),
        default="1000,10000,100000",
        help=f"synthetic history sizes (messages, each 1..{MAX_HISTORY})",
    )
    s.add_argument(
        "--longmemeval",
        type=path_text,
        default=None,
        help="LongMemEval_S file for the ~400-message haystack ('none' to skip)",
    )
    s.add_argument("--n-queries", type=int_in(1, 10_000), default=20, help="queries a size (1..10000)")
    s.add_argument(
        "--max-embed-messages",
        type=int_in(0, MAX_HISTORY),
        default=None,
        help="histories longer than this and not yet cached get random stand-in embeddings",
    )
    s.add_argument("--out", type=path_text, default="figures/bench_retrieval.json")
    retrieval_opts(s)
    s.set_defaults(func=functools.partial(cmd_bench_retrieval, retrieval_config=retrieval_config))

    s = bench.add_parser("pipeline", help="seconds a question by stage for each engine, and the eval cold vs warm")
    s.add_argument(
        "--config", type=path_text, default="configs/eval/demo.yaml", help="an eval config (lazymem eval format)"
    )
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config value")
    s.add_argument(
        "--cell",
        default=None,
        metavar="SET/ROW",
        help="with --config a results table (configs/tables/*.yaml): bench that cell (its base, set and row)",
    )
    s.add_argument(
        "--limit", type=int_in(0, MAX_QUESTIONS), default=None, help="questions (default: the config's limit)"
    )
    s.add_argument(
        "--engines",
        default=None,
        help="comma list of transformers_sequential, transformers_batched, llamacpp, llamacpp_parallel, "
        "llamacpp_batched (default: all)",
    )
    s.add_argument(
        "--threads", type=int_in(1, MAX_THREADS), default=None, help="CPU threads of every engine (default: all cores)"
    )
    s.add_argument("--no-cold-warm", action="store_true", help="skip the eval cold vs warm (two fresh processes)")
    s.add_argument("--out", type=path_text, default="figures/bench_pipeline.json")
    s.add_argument("--figure-dir", type=path_text, default="figures", help="where the figure goes (HTML + PNG)")
    s.add_argument("--no-figure", action="store_true")
    s.set_defaults(func=cmd_bench_pipeline)

    s = bench.add_parser("embedding", help="first-time embedding throughput and one query's encode cost")
    s.add_argument("--texts", type=int_in(1, MAX_HISTORY), default=512, help="distinct message texts to embed")
    s.add_argument("--batch-sizes", type=ints_in(1, 65_536), default="16,64,128")
    s.add_argument(
        "--threads",
        type=ints_in(1, MAX_THREADS),
        default=None,
        help="comma list of torch thread counts (default: 1 and all cores)",
    )
    s.add_argument("--queries", type=int_in(1, 10_000), default=30)
    s.add_argument("--dense-model", default=None, help="default: the retrieval default (MiniLM, offline)")
    s.add_argument(
        "--longmemeval", type=path_text, default=None, help="LongMemEval_S file (default: ../shared/data's fragment)"
    )
    s.add_argument("--out", type=path_text, default="figures/bench_embedding.json")
    s.set_defaults(func=cmd_bench_embedding)

    s = bench.add_parser(
        "latency",
        help="the paper's latency protocol: questions one at a time, 3 warm-up runs "
        "discarded, mean/P50/P90/P95 by stage over the next 3 (LLM cache off)",
    )
    s.add_argument("config", type=path_text, help="an eval recipe (lazymem eval format), any pipeline.method")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config value")
    s.add_argument(
        "--limit", type=int_in(0, MAX_QUESTIONS), default=None, help="questions (default: the config's limit)"
    )
    s.add_argument("--warmup", type=int_in(0, 1000), default=3, help="warm-up runs discarded (paper: 3)")
    s.add_argument("--runs", type=int_in(1, 1000), default=3, help="measured runs (paper: 3)")
    s.add_argument("--out", type=path_text, default=None, help="write every latency as JSON here")
    s.set_defaults(func=cmd_bench_latency)
