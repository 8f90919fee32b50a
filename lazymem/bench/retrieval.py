"""Retrieval benchmark: index cost and per-query latency of each stage as histories grow.

One run measures, side by side, a LongMemEval_S haystack (~400 messages) and synthetic
histories of growing size: building each component (tokenising, rank-bm25, bm25s, the
first-time dense embedding with its messages/s, loading embeddings from the disk cache)
and, per query, each stage (BM25 with both backends, dense with cached embeddings, RRF,
rerank when configured, windowing) and the end-to-end path, as mean / median / p90.

The first-time embedding of 100k messages takes minutes on 2 CPU cores; it is stored in
the embedding cache, so a rerun loads it in well under a second and reports the cost
measured when it was made (``embed_source`` says which). ``max_embed_messages`` skips the
encoder for bigger histories and times dense search over a random unit matrix of the
same shape instead (search cost does not depend on the values).

>>> percentiles([0.001, 0.002, 0.003, 0.010], scale=1e3, suffix="_ms", digits=4)["median_ms"]
2.5
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lazymem.records import History
from lazymem.retrieve import (
    SPARSE_BACKENDS,
    BM25Index,
    HistoryIndex,
    RetrievalConfig,
    Retriever,
    history_fingerprint,
)
from lazymem.stats import percentiles
from lazymem.text import text_hash, tokenize

DEFAULT_LONGMEMEVAL = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "longmemeval" / "s_fragment_3haystacks.json"
)


def _queries(history: History, questions: Sequence[str], n: int, seed: int) -> list[str]:
    """The history's real questions first, then user-message openings as stand-in queries."""
    out = list(dict.fromkeys(questions))[:n]
    rng = random.Random(seed)
    users = [m.text for m in history if m.role == "user" and len(tokenize(m.text)) >= 3] or [m.text for m in history]
    while len(out) < n and users:
        out.append(" ".join(rng.choice(users).split()[:12]))
    return out


def _histories(longmemeval_path, sizes, seed):
    """(label, history, question texts) for the benchmark."""
    found = []
    if longmemeval_path is not None:
        from lazymem.data import load_longmemeval

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fragment's repairs are reported by its own loader
            ds = load_longmemeval(longmemeval_path)
        hid, history = next(iter(ds.histories.items()))
        found.append((f"longmemeval_s:{hid}", history, [q.text for q in ds.questions if q.history_id == hid]))
    for n in sizes:
        from lazymem.data import synthetic_dataset

        ds = synthetic_dataset(n_messages=n, seed=seed)
        # One history of n messages is expected; if the generator splits them, time the longest.
        hid, history = max(ds.histories.items(), key=lambda kv: len(kv[1]))
        found.append((f"synthetic:{len(history)}", history, [q.text for q in ds.questions if q.history_id == hid]))
    return found


def _embeddings(history, fp, hashes, encoder, cache, max_embed_messages, seed, progress):
    """Embeddings for the bench plus what they cost: from the disk cache, computed, or a stand-in."""
    info: dict = {}
    texts = [m.text for m in history]
    ns = encoder.namespace
    if cache is not None:
        t0 = time.perf_counter()
        emb = cache.load(ns, fp, hashes)
        if emb is not None:
            info["cache_load_s"] = time.perf_counter() - t0
            note = cache.info(ns, fp)
            info["embed_source"] = "cache"  # embed_s / embedded: the first-time cost noted when stored
            info["embed_s"], info["embedded"] = note.get("encode_s"), note.get("encoded")
            return emb, info
    if max_embed_messages is not None and len(texts) > max_embed_messages:
        rng = np.random.default_rng(seed)
        emb = rng.standard_normal((len(texts), encoder.dim), dtype=np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        info["embed_source"] = "stand-in"  # random unit rows: more than max_embed_messages, not cached
        return emb, info
    n_before = encoder.n_texts_encoded
    t0 = time.perf_counter()
    emb = (
        cache.embed(encoder, texts, key=fp, hashes=hashes, progress=progress)
        if cache is not None
        else encoder.encode_docs(texts, progress=progress)
    )
    info["embed_s"] = time.perf_counter() - t0
    info["embedded"] = encoder.n_texts_encoded - n_before  # distinct texts not found on disk
    info["embed_source"] = "computed"
    if cache is not None:
        t0 = time.perf_counter()
        cache.load(ns, fp, hashes)
        info["cache_load_s"] = time.perf_counter() - t0
    return emb, info


def _window_fn():
    try:
        from lazymem.retrieve import build_windows
    except ImportError:  # windowing lives in another module; the bench runs without it
        return None
    return build_windows


def bench_history(
    label: str,
    history: History,
    queries: Sequence[str],
    config: RetrievalConfig,
    retriever: Retriever,
    max_embed_messages: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Build costs and per-query stage latencies for one history."""
    texts = [m.text for m in history]
    build: dict = {"n_messages": len(history)}
    t0 = time.perf_counter()
    tokens = [tokenize(t) for t in texts]
    build["tokenize_s"] = time.perf_counter() - t0
    indexes = {}
    for backend in SPARSE_BACKENDS:
        t0 = time.perf_counter()
        indexes[backend] = BM25Index(texts, backend, config.bm25_k1, config.bm25_b, config.bm25_epsilon, tokens=tokens)
        build[f"bm25_{backend}_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fp = history_fingerprint(history)
    hashes = tuple(text_hash(t) for t in texts)
    build["fingerprint_s"] = time.perf_counter() - t0
    emb = None
    if retriever.encoder is not None:
        emb, info = _embeddings(
            history, fp, hashes, retriever.encoder, retriever.cache, max_embed_messages, seed, progress
        )
        build.update(info)
        if build.get("embed_s") and build.get("embedded"):
            # Repeated texts are encoded once, so count both what the model saw and what it covered.
            build["embed_texts_per_s"] = build["embedded"] / build["embed_s"]
            build["embed_msgs_per_s"] = len(history) / build["embed_s"]
    idx = HistoryIndex(history, fp, hashes, indexes[config.sparse] if config.sparse else None, emb, {})

    build_windows = _window_fn()
    stages: dict[str, list[float]] = {f"bm25_{b}": [] for b in SPARSE_BACKENDS}
    for extra in (
        "bm25",
        "dense_encode",
        "dense_search",
        "dense",
        "rrf",
        "rerank",
        "window",
        "retrieve_total",
        "end_to_end",
    ):
        stages[extra] = []
    depth = min(config.depth, len(history)) if config.depth is not None else None
    if not queries:
        return {
            "history": label,
            "n_messages": len(history),
            "n_queries": 0,
            "build": build,
            "query": {},
            "window": None,
        }
    retriever.search(idx, queries[0])  # warm-up: first encoder call pays one-off costs
    for q in queries:
        for b in SPARSE_BACKENDS:
            t0 = time.perf_counter()
            indexes[b].search(q, depth)
            stages[f"bm25_{b}"].append(time.perf_counter() - t0)
        pool = retriever.search(idx, q)
        tm = pool.timings
        if "bm25" in tm:  # the configured backend, inside the retriever
            stages["bm25"].append(tm["bm25"])
        if "dense" in tm:
            stages["dense_encode"].append(tm["dense_encode"])
            stages["dense_search"].append(tm["dense"] - tm["dense_encode"])
            stages["dense"].append(tm["dense"])
        stages["rrf"].append(tm["rrf"])
        if "rerank" in tm:
            stages["rerank"].append(tm["rerank"])
        stages["retrieve_total"].append(tm["total"])
        if build_windows is not None:
            t0 = time.perf_counter()
            build_windows(history, pool.positions)
            stages["window"].append(time.perf_counter() - t0)
        stages["end_to_end"].append(tm["total"] + (stages["window"][-1] if build_windows is not None else 0.0))
    return {
        "history": label,
        "n_messages": len(history),
        "n_queries": len(queries),
        "build": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in build.items()},
        "query": {k: percentiles(v, scale=1e3, suffix="_ms", digits=4) for k, v in stages.items() if v},
        "window": (
            "lazymem.retrieve.window.build_windows"
            if build_windows is not None
            else "not measured (lazymem.retrieve.window missing)"
        ),
    }


def growth(rows: Sequence[dict]) -> dict:
    """Median latency / build cost ratios between consecutive sizes of the synthetic histories.

    >>> rows = [{"history": "synthetic:10", "n_messages": 10, "query": {"rrf": {"median_ms": 1.0}}, "build": {}},
    ...         {"history": "synthetic:100", "n_messages": 100, "query": {"rrf": {"median_ms": 3.0}}, "build": {}}]
    >>> growth(rows)["rrf"]
    {'10->100 (x10)': 3.0}
    """
    syn = sorted((r for r in rows if r["history"].startswith("synthetic")), key=lambda r: r["n_messages"])
    out: dict[str, dict] = {}
    for a, b in zip(syn, syn[1:]):
        span = f"{a['n_messages']}->{b['n_messages']} (x{b['n_messages'] / a['n_messages']:g})"
        for stage, st in b["query"].items():
            base = a["query"].get(stage, {}).get("median_ms")
            if base and st.get("median_ms") is not None:
                out.setdefault(stage, {})[span] = round(st["median_ms"] / base, 2)
        for key, val in b["build"].items():
            base = a["build"].get(key)
            if key.endswith("_s") and isinstance(val, (int, float)) and isinstance(base, (int, float)) and base > 0:
                out.setdefault(f"build:{key}", {})[span] = round(val / base, 2)
    return out


def tables(result: dict) -> tuple[str, str, str]:
    """Build, latency and growth tables as text."""
    import pandas as pd

    build = pd.DataFrame([{"history": r["history"], **r["build"]} for r in result["histories"]]).set_index("history")
    lat = pd.DataFrame(
        [
            {"history": r["history"], "stage": s, **{k: v for k, v in st.items() if k != "n"}}
            for r in result["histories"]
            for s, st in r["query"].items()
        ]
    ).set_index(["history", "stage"])
    grow = pd.DataFrame(result["growth"]).T if result["growth"] else pd.DataFrame()
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.float_format", "{:.3f}".format):
        return build.T.to_string(), lat.to_string(), grow.to_string()


def bench_retrieval(
    sizes: Sequence[int] = (1000, 10000, 100000),
    longmemeval_path: str | os.PathLike | None = DEFAULT_LONGMEMEVAL if DEFAULT_LONGMEMEVAL.exists() else None,
    n_queries: int = 20,
    config: RetrievalConfig | None = None,
    out: str | os.PathLike | None = None,
    max_embed_messages: int | None = None,
    seed: int = 0,
    progress: bool = True,
    verbose: bool = True,
) -> dict:
    """Benchmark retrieval on a LongMemEval_S haystack and synthetic histories of the given sizes.

    Args:
        sizes: synthetic history sizes (messages), from lazymem.data.synthetic.synthetic_dataset.
        longmemeval_path: a LongMemEval_S file (its first haystack is used) or None to skip.
        n_queries: queries per history: its real questions, then user-message openings.
        config: retrieval settings for the end-to-end path (both BM25 backends are always timed).
        out: write the result as JSON here.
        max_embed_messages: histories longer than this that are not in the embedding cache
            get a random stand-in matrix instead of minutes of encoding.
        verbose: print the tables.
    """
    import torch

    config = config or RetrievalConfig()
    retriever = Retriever(config, cache_queries=False)  # every query encoded: the cost of a new question
    retriever.warm_up()
    t_start = time.perf_counter()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    rows = []
    for label, history, questions in _histories(longmemeval_path, sizes, seed):
        if verbose:
            print(f"[bench] {label}: {len(history)} messages", flush=True)
        rows.append(
            bench_history(
                label,
                history,
                _queries(history, questions, n_queries, seed),
                config,
                retriever,
                max_embed_messages,
                seed,
                progress,
            )
        )
    from importlib.metadata import version

    result = {
        "config": dataclasses.asdict(config),
        "sizes": list(sizes),
        "longmemeval_path": str(longmemeval_path) if longmemeval_path is not None else None,
        "n_queries": n_queries,
        "max_embed_messages": max_embed_messages,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "versions": {p: version(p) for p in ("numpy", "rank-bm25", "bm25s", "torch", "sentence-transformers")},
        },
        "histories": rows,
        "growth": growth(rows),
        "wall_s": round(time.perf_counter() - t_start, 2),
        # Other work on the same cores inflates every number: record how busy they were.
        "loadavg_1_5_15": {"start": load_before, "end": os.getloadavg() if hasattr(os, "getloadavg") else None},
    }
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1))
    if verbose:
        b, lat, g = tables(result)
        print(
            "\n== index build (seconds; embedded = distinct texts encoded; *_per_s per second; embed_source: "
            "computed = this run, cache = loaded from disk with the cost noted when stored, "
            "stand-in = random rows past max_embed_messages) ==\n" + b
        )
        print("\n== per-query latency (ms) ==\n" + lat)
        print("\n== growth of median cost between synthetic sizes ==\n" + g)
    return result
