"""First-time embedding throughput and the cost of encoding one query, side by side in one run.

    lazymem bench embedding [--texts 512] [--batch-sizes 16,64,128] [--threads 1,2] [--queries 30]

Documents: the same distinct message texts (a LongMemEval_S haystack's, the long kind that
dominates first-time cost; synthetic messages when the file is missing) encoded with every
batch size x thread count, once in sentence-transformers' order (it sorts a call's texts by
length, longest first, so a batch pads to similar lengths) and once as unsorted batches in
history order (one ``encode`` call per batch: what a batch loop without sorting pays).
Texts a second. Queries: each of ``queries`` questions (the history's own, then user-message
openings) encoded one at a time by a bare ``SentenceTransformer.encode`` (torch's threads),
by ``DenseEncoder.encode_queries`` (the retriever's path: the model's query prompt, one
thread) and as the retriever's ``dense_encode`` stage; milliseconds, median and p90, and the retriever's ratio to bare.
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from lazymem.stats import percentiles


def _texts(longmemeval_path, n: int, seed: int):
    """(source, distinct document texts in history order, question texts, the first history)."""
    if longmemeval_path is not None and Path(longmemeval_path).exists():
        from lazymem.data import load_longmemeval

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = load_longmemeval(longmemeval_path)
        source = f"longmemeval_s:{Path(longmemeval_path).name}"
    else:
        from lazymem.data import synthetic_dataset

        ds = synthetic_dataset(n_messages=max(4 * n, 400), seed=seed, varied=1)
        source = "synthetic"
    docs = list(dict.fromkeys(m.text for h in ds.histories.values() for m in h if m.text.strip()))
    first = next(iter(ds.histories.values()))
    return source, docs[:n], [q.text for q in ds.questions if q.history_id == first.id], first


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def bench_embedding(
    n_texts: int = 512,
    batch_sizes: Sequence[int] = (16, 64, 128),
    threads: Sequence[int] | None = None,
    n_queries: int = 30,
    model: str | None = None,
    longmemeval_path: str | os.PathLike | None = None,
    seed: int = 0,
    out: str | os.PathLike | None = "figures/bench_embedding.json",
    progress: bool = True,
) -> dict:
    """Run the benchmark (module docstring); returns and writes the result."""
    import numpy as np
    import torch

    from lazymem.bench.retrieval import DEFAULT_LONGMEMEVAL, _queries
    from lazymem.retrieve import RetrievalConfig, Retriever
    from lazymem.retrieve.dense import DenseEncoder
    from lazymem.runtime import torch_threads

    cores = os.cpu_count() or 1
    threads = list(threads or sorted({1, cores}))
    config = RetrievalConfig(**({"dense_model": model} if model else {}))
    lme = (
        longmemeval_path
        if longmemeval_path is not None
        else (DEFAULT_LONGMEMEVAL if DEFAULT_LONGMEMEVAL.exists() else None)
    )
    source, docs, questions, history = _texts(lme, n_texts, seed)
    enc = DenseEncoder(config.dense_model)
    st = enc.model  # load once, before any timing
    t_start = time.perf_counter()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    lengths = [len(st.tokenizer(t, truncation=True, max_length=st.max_seq_length)["input_ids"]) for t in docs]
    st.encode(docs[:8], batch_size=8)  # warm-up: first calls pay one-off costs
    rows = []
    for th in threads:
        for bs in batch_sizes:
            for order in ("sorted", "unsorted"):
                with torch_threads(th):
                    if order == "sorted":
                        s = _timed(lambda bs=bs: st.encode(docs, batch_size=bs, normalize_embeddings=True))
                    else:
                        s = _timed(
                            lambda bs=bs: [
                                st.encode(docs[i : i + bs], batch_size=bs, normalize_embeddings=True)
                                for i in range(0, len(docs), bs)
                            ]
                        )
                rows.append(
                    {
                        "threads": th,
                        "batch_size": bs,
                        "order": order,
                        "s": round(s, 3),
                        "texts_per_s": round(len(docs) / s, 1),
                    }
                )
                if progress:
                    print(
                        f"[bench] embed {len(docs)} texts, {th} thread(s), batch {bs}, {order}: "
                        f"{rows[-1]['texts_per_s']} texts/s",
                        flush=True,
                    )
    best = max(rows, key=lambda r: r["texts_per_s"])

    # one query at a time: bare model vs the encoder's path vs the retriever's stage
    qs = _queries(history, questions, n_queries, seed)  # its real questions, then user-message openings
    retriever = Retriever(config, cache_queries=False)
    idx = retriever.index(history)
    st.encode(qs[:1])
    enc.encode_queries(qs[:1])
    bare, bare1, ours, stage = [], [], [], []
    for q in qs:
        bare.append(_timed(st.encode, [q]))
        with torch_threads(1):
            bare1.append(_timed(st.encode, [q]))
        ours.append(_timed(enc.encode_queries, [q]))
        stage.append(retriever.search(idx, q).timings["dense_encode"])
    query = {
        "bare_encode_torch_threads": percentiles(bare, scale=1e3, suffix="_ms", digits=3),
        "bare_encode_1_thread": percentiles(bare1, scale=1e3, suffix="_ms", digits=3),
        "dense_encoder_encode_queries": percentiles(ours, scale=1e3, suffix="_ms", digits=3),
        "retriever_dense_encode": percentiles(stage, scale=1e3, suffix="_ms", digits=3),
    }
    query["history_messages"] = len(history)
    query["retriever_over_bare_1_thread"] = round(float(np.median(stage) / np.median(bare1)), 2)
    query["retriever_over_bare_torch_threads"] = round(float(np.median(stage) / np.median(bare)), 2)
    from importlib.metadata import version

    result = {
        "model": config.dense_model,
        "source": source,
        "texts": len(docs),
        "tokens": {
            "mean": round(float(np.mean(lengths)), 1),
            "max": int(max(lengths)),
            "max_seq_length": st.max_seq_length,
        },
        "documents": rows,
        "best": best,
        "sorted_over_unsorted": {
            f"{r['threads']}t/b{r['batch_size']}": round(
                r["texts_per_s"]
                / next(
                    u["texts_per_s"]
                    for u in rows
                    if u["order"] == "unsorted" and u["threads"] == r["threads"] and u["batch_size"] == r["batch_size"]
                ),
                2,
            )
            for r in rows
            if r["order"] == "sorted"
        },
        "encoder_default_batch_size": enc.batch_size,
        "queries": len(qs),
        "query": query,
        "cpus": cores,
        "torch_threads": torch.get_num_threads(),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "versions": {p: version(p) for p in ("torch", "sentence-transformers")},
        },
        "wall_s": round(time.perf_counter() - t_start, 1),
        "loadavg_1_5_15": {"start": load_before, "end": os.getloadavg() if hasattr(os, "getloadavg") else None},
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1) + "\n")
    if progress:
        print(summary(result))
    return result


def summary(result: dict) -> str:
    """The result as a short text table."""
    lines = [
        f"{result['texts']} distinct texts ({result['source']}; {result['tokens']['mean']} tokens on average, "
        f"max {result['tokens']['max']}), texts a second:",
        f"{'threads':>8}{'batch':>7}{'sorted':>9}{'unsorted':>10}",
    ]
    for r in result["documents"]:
        if r["order"] == "sorted":
            u = next(
                x
                for x in result["documents"]
                if x["order"] == "unsorted" and x["threads"] == r["threads"] and x["batch_size"] == r["batch_size"]
            )
            lines.append(f"{r['threads']:>8}{r['batch_size']:>7}{r['texts_per_s']:>9.1f}{u['texts_per_s']:>10.1f}")
    q = result["query"]
    lines.append(
        "one query (ms, median / p90): "
        + ", ".join(f"{k} {v['median_ms']:.1f} / {v['p90_ms']:.1f}" for k, v in q.items() if isinstance(v, dict))
    )
    lines.append(f"retriever's encode over a bare 1-thread encode: {q['retriever_over_bare_1_thread']}x")
    return "\n".join(lines)
