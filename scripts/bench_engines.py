"""Memory processing per question: transformers vs llama.cpp, same model, same windows, one run.

    python scripts/bench_engines.py [--config configs/eval/lazymem135m.yaml] \
        [--dataset ../shared/data/locomo/locomo10.json#paper] [--limit 4] [--out docs/results/bench_engines.json]

The config's pipeline (retrieval, windowing, MPM model + adapter, sampling) builds every window
prompt of the first ``limit`` questions once; each engine then processes each question's windows
(one generate call per question, as the pipeline makes it), without the LLM cache. Reported:
model load seconds, processing seconds per question (median, mean, each), their ratio, and how far
the outputs agree: identical texts, where each pair of texts parts (shared prefix), and identical
KEEP/DROP decisions after the format gate. No output text is written (LoCoMo's messages are quoted
in the traces and stay out of the repository).
transformers runs batched (the config's batch_size); llama.cpp once with one instance on all
threads (windows one after another, the shared prompt prefix reused) and once with one instance
per thread (windows side by side). Every engine gets the same threads (all cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _decisions(item, text):
    from lazymem.construct.gate import strip_think

    verdict = item.gate(strip_think(text)) if text is not None else None
    return [d.op for d in verdict.decisions] if verdict is not None and verdict.ok else None


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/eval/lazymem135m.yaml")
    ap.add_argument("--dataset", default="../shared/data/locomo/locomo10.json#paper")
    ap.add_argument("--limit", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default="docs/results/bench_engines.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(ROOT))
    import yaml

    from lazymem.data import load_dataset
    from lazymem.llm import make_client
    from lazymem.pipeline import LazyMemPipeline, PipelineConfig

    raw = yaml.safe_load(Path(args.config).read_text())
    base = PipelineConfig.from_dict(raw["pipeline"])
    ds = load_dataset(args.dataset)
    pipe = LazyMemPipeline(base)
    questions = []
    for q in ds.questions[: args.limit]:
        history = ds.history(q)
        windows = pipe.windows(history, q, pipe.retrieve(history, q))
        questions.append((q.id, pipe.prompts(history, q, windows)))
    engines = {
        "transformers": dataclasses.replace(base.mpm, cache_dir=None, num_threads=args.threads),
        "llamacpp": dataclasses.replace(
            base.mpm, backend="llamacpp", cache_dir=None, batch_size=1, num_threads=args.threads
        ),
        # as many instances as threads, one thread each, windows side by side
        "llamacpp_parallel": dataclasses.replace(
            base.mpm, backend="llamacpp", cache_dir=None, batch_size=args.threads, num_threads=args.threads
        ),
    }
    result: dict = {
        "config": args.config,
        "dataset": args.dataset,
        "limit": args.limit,
        "model": base.mpm.model,
        "adapter": base.mpm.adapter,
        "sampling": base.mpm_sampling.as_dict(),
        "windows": sum(len(items) for _, items in questions),
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "engines": {},
    }
    texts: dict[str, list] = {}
    for name, cfg in engines.items():
        client = make_client(cfg)
        t0 = time.perf_counter()
        client.load()
        load_s = time.perf_counter() - t0
        per_q, outs = [], []
        for qid, items in questions:
            t0 = time.perf_counter()
            done = client.generate([list(it.messages) for it in items], base.mpm_sampling)
            per_q.append(time.perf_counter() - t0)
            outs.extend(c.text if c.ok else None for c in done)
            print(f"{name} {qid}: {len(items)} windows in {per_q[-1]:.1f} s", flush=True)
        texts[name] = outs
        result["engines"][name] = {
            "load_s": round(load_s, 2),
            "per_question_s": [round(x, 2) for x in per_q],
            "median_s": round(statistics.median(per_q), 2),
            "mean_s": round(statistics.mean(per_q), 2),
            "errors": sum(t is None for t in outs),
        }
        del client
    items = [it for _, its in questions for it in its]
    a, b = texts["transformers"], texts["llamacpp"]
    dec_a = [_decisions(it, t) for it, t in zip(items, a)]
    dec_b = [_decisions(it, t) for it, t in zip(items, b)]
    e = result["engines"]
    for name in ("llamacpp", "llamacpp_parallel"):
        result[f"speedup_mean_{name}"] = round(e["transformers"]["mean_s"] / e[name]["mean_s"], 2)
        result[f"speedup_median_{name}"] = round(e["transformers"]["median_s"] / e[name]["median_s"], 2)
    result["parallel_same_texts_as_sequential"] = texts["llamacpp"] == texts["llamacpp_parallel"]
    result["identical_texts"] = sum(x == y and x is not None for x, y in zip(a, b))
    result["identical_decisions"] = sum(x == y and x is not None for x, y in zip(dec_a, dec_b))
    result["gate_ok"] = {
        "transformers": sum(d is not None for d in dec_a),
        "llamacpp": sum(d is not None for d in dec_b),
    }
    # Where the outputs part: the shared prefix of each pair, as a share of the longer text (no
    # output text is written: LoCoMo's messages, quoted in the traces, stay out of the results).
    shared = [
        len(os.path.commonprefix([x, y])) / max(len(x), len(y), 1) if x is not None and y is not None else None
        for x, y in zip(a, b)
    ]
    result["shared_prefix_share"] = [None if v is None else round(v, 3) for v in shared]
    both = [(x, y) for x, y in zip(dec_a, dec_b) if x is not None and y is not None]
    result["decisions_both_gated"] = len(both)
    result["decision_agreement_both_gated"] = round(sum(x == y for x, y in both) / len(both), 3) if both else None
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
