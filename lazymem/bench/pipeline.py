"""The query path per stage, engine against engine, and the eval cold against warm, in one run.

    lazymem bench pipeline [--config configs/eval/demo.yaml] [--limit N] [--engines a,b] [--no-cold-warm]

For the same questions of an eval config (its data set, selection and pipeline), each engine
(``ENGINES``: transformers one window at a time, transformers batched, llama.cpp with one
instance, llama.cpp with one instance per thread) runs the whole query path with no LLM cache:
model load, then per question retrieval, memory processing and answer, as
``LazyMemPipeline.answer`` times them. The retriever is shared and built before the first
engine (indexing is store-time work), with query vectors not cached, so every retrieval pays
its query encode. Each engine's decisions and memories are compared with the first engine's.
Then the eval itself runs twice as fresh processes on one new, empty ``LAZYMEM_CACHE``
(``cold_warm``): the first fills every cache, the second should load no model at all.
Written: JSON with every number, and a figure (stages a question by engine; cold vs warm).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from lazymem.errors import ConfigError
from lazymem.stats import percentiles

STAGES = ("retrieval", "processing", "answer")
LLAMACPP_MISSING = (
    "llama-cpp-python is not installed: pip install -e '.[llamacpp]' "
    "(it compiles from source, ~7-10 min on 2 cores; `make env` does it)"
)


def engines(threads: int, batch_size: int) -> dict[str, dict]:
    """The engines compared, as overrides of each in-process role's LLMConfig.

    >>> sorted(engines(2, 4))
    ['llamacpp', 'llamacpp_batched', 'llamacpp_parallel', 'transformers_batched', 'transformers_sequential']
    >>> engines(2, 4)["llamacpp_parallel"]["batch_size"]
    2
    """
    return {
        "transformers_sequential": {"backend": "transformers", "batch_size": 1, "num_threads": threads},
        "transformers_batched": {"backend": "transformers", "batch_size": batch_size, "num_threads": threads},
        # one instance on every thread: windows one after another, the shared prompt prefix reused
        "llamacpp": {"backend": "llamacpp", "batch_size": 1, "num_threads": threads},
        # one instance per thread: windows side by side (of one question or several)
        "llamacpp_parallel": {"backend": "llamacpp", "batch_size": threads, "num_threads": threads},
        # a question's windows in one multi-sequence batch on every thread (lazymem.llm.llamacpp_batch);
        # the memory model only (extra_body.decode), the answer model as llamacpp
        "llamacpp_batched": {"backend": "llamacpp", "batch_size": 1, "num_threads": threads, "decode": "batched"},
    }


def _engine_config(pipeline, overrides: dict):
    """The pipeline config with the engine in every in-process role (an endpoint role is kept)."""
    repl = {}
    overrides = dict(overrides)
    decode = overrides.pop("decode", None)
    for role in ("mpm", "answer"):
        cfg = getattr(pipeline, role)
        if cfg is not None and cfg.backend in ("auto", "transformers", "llamacpp"):
            extra = dict(cfg.extra_body or {})
            extra.pop("decode", None)  # the engine's own (mpm_decoding: card sets batched on llama.cpp)
            if role == "mpm" and overrides.get("backend") == "llamacpp":
                extra["decode"] = decode or "sequential"
            repl[role] = dataclasses.replace(cfg, cache_dir=None, extra_body=extra or None, **overrides)
    return dataclasses.replace(pipeline, **repl)


def _missing(overrides: dict) -> str | None:
    if overrides["backend"] == "llamacpp" and importlib.util.find_spec("llama_cpp") is None:
        return LLAMACPP_MISSING
    return None


def run_engine(name: str, pipeline, retriever, items: Sequence, progress: bool = True) -> tuple[dict, list, list]:
    """Load the engine's models, then answer every question.

    Returns (per-stage seconds and gate counts, each window's ops or None when it failed the
    gate, each question's memory)."""
    from lazymem.pipeline import LazyMemPipeline

    pipe = LazyMemPipeline(pipeline, retriever=retriever)
    t0 = time.perf_counter()
    pipe.warm_up()
    load_s = time.perf_counter() - t0
    per_q, decided, memories, errors = [], [], [], []
    for history, q in items:
        r = pipe.answer(history, q)
        per_q.append({k: round(r.timings.get(k, 0.0), 3) for k in (*STAGES, "total")})
        per_q[-1].update(mpm_tokens(r.windows))
        decided.append(
            [[d.op for d in w.verdict.decisions] if w.verdict is not None and w.verdict.ok else None for w in r.windows]
        )
        memories.append(r.memory)
        if r.error:
            errors.append(f"{q.id}: {r.error}")
        if progress:
            t = per_q[-1]
            print(
                f"[bench] {name} {q.id}: retrieval {t['retrieval']:.2f} s, processing {t['processing']:.1f} s, "
                f"answer {t['answer']:.1f} s",
                flush=True,
            )
    out = {
        "load_s": round(load_s, 2),
        "per_question": per_q,
        "stages": {k: percentiles([t[k] for t in per_q], digits=3) for k in (*STAGES, "total")},
        "windows": sum(len(d) for d in decided),
        "gate_ok": sum(d is not None for ds in decided for d in ds),
        "errors": errors,
    }
    return out, decided, memories


def mpm_tokens(windows: Sequence) -> dict:
    """A question's memory-model tokens over its windows: generated, prompt tokens read, and of those the
    ones evaluated (not taken from a cached prefix); None where a count is unknown."""
    from lazymem.llm.usage import cached_prompt_tokens, completion_tokens_written, prompt_tokens_read

    calls = [w.output for w in windows if getattr(w, "output", None) is not None]
    gen = [completion_tokens_written(c) for c in calls]
    read = [prompt_tokens_read(c) for c in calls]
    cached = [cached_prompt_tokens(c) or 0 for c in calls]
    known = all(v is not None for v in gen + read)
    return {
        "generated_tokens": sum(gen) if known else None,
        "prompt_tokens": sum(read) if known else None,
        "evaluated_prompt_tokens": sum(r - c for r, c in zip(read, cached)) if known else None,
    }


def engine_rates(
    mpm, threads: int, prompt: int = 512, steps: int = 64, sequences: Sequence[int] = (1, 2, 4, 8, 12)
) -> dict:
    """The memory model's rates on llama.cpp with ``threads`` threads: one sequence's prefill (tokens a second,
    a ``prompt``-token batch) and decode (seconds a token, ``steps`` single tokens after it), and the seconds of
    a step that decodes one token of each of b sequences (each after a ``prompt``-token prompt; b in
    ``sequences``) on the batched engine's context (``lazymem.llm.llamacpp_batch.BatchContext``)."""
    import llama_cpp

    from lazymem.llm.gguf_build import gguf_for
    from lazymem.llm.llamacpp import new_llama

    quant = (mpm.extra_body or {}).get("quant", "q8_0")
    llm = new_llama(
        llama_cpp,
        model_path=str(gguf_for(mpm.model, mpm.adapter, quant)),
        n_ctx=2048,
        n_threads=threads,
        n_batch=512,
        seed=0,
        verbose=False,
    )
    try:
        llm.eval([1000 + i for i in range(8)])  # warm
        llm.reset()
        t0 = time.perf_counter()
        llm.eval([1000 + i % 4000 for i in range(prompt)])
        prefill = prompt / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i in range(steps):
            llm.eval([2000 + i])
        decode = (time.perf_counter() - t0) / steps
        step_s = _batched_steps(llm, threads, prompt, steps // 2, sequences)
    finally:
        llm.close()
    return {
        "prefill_tokens_per_s": round(prefill, 1),
        "decode_s_per_token": round(decode, 5),
        "step_s_by_sequences": step_s,
        "threads": threads,
    }


def _batched_steps(llm, threads: int, prompt: int, steps: int, sequences: Sequence[int]) -> dict:
    """{b: seconds of one step of one token from each of b sequences} on one ``BatchContext`` over ``llm``."""
    from lazymem.llm.llamacpp_batch import BatchContext

    ctx = BatchContext(llm, n_threads=threads, stream=prompt + steps + 256, max_seqs=max(sequences))
    try:
        out = {}
        for b in sequences:
            for seq in range(1, b + 1):
                ctx.lc.llama_memory_seq_rm(ctx.mem, seq, -1, -1)
                ids = [1000 + (p * 7 + seq) % 4000 for p in range(prompt)]
                for at in range(0, prompt, ctx.n_batch):
                    ctx._decode([(ids[p], p, seq, False) for p in range(at, min(prompt, at + ctx.n_batch))])
            ctx._decode([(2000, prompt, seq, True) for seq in range(1, b + 1)])  # warm
            t0 = time.perf_counter()
            for i in range(1, steps + 1):
                ctx._decode([(2000 + i, prompt + i, seq, True) for seq in range(1, b + 1)])
            out[str(b)] = round((time.perf_counter() - t0) / steps, 5)
        return out
    finally:
        ctx.close()


def decode_bound(stats: dict, rates: dict) -> dict | None:
    """An engine's one-sequence limit a question: its generated tokens at the measured decode rate plus its
    evaluated prompt tokens at the measured prefill rate (what one sequence at a time cannot beat; batched
    decoding can go under its decode part), and the ratio of its processing seconds to it. With the rates'
    ``step_s_by_sequences``, also the batched floor: the generated tokens at the cheapest measured seconds a
    token (a step of b sequences over b) plus the same prefill, what no batch of up to that many windows,
    kept full at every step, can beat at these tokens."""
    rows = stats["per_question"]
    if not rows or any(r.get("generated_tokens") is None for r in rows):
        return None
    n = len(rows)
    gen = sum(r["generated_tokens"] for r in rows) / n
    evaluated = sum(r["evaluated_prompt_tokens"] for r in rows) / n
    decode_s = gen * rates["decode_s_per_token"]
    prefill_s = evaluated / rates["prefill_tokens_per_s"]
    processing = stats["stages"]["processing"]["mean"]
    out = {
        "generated_tokens": round(gen, 1),
        "evaluated_prompt_tokens": round(evaluated, 1),
        "prompt_tokens": round(sum(r["prompt_tokens"] for r in rows) / n, 1),
        "decode_s": round(decode_s, 2),
        "prefill_s": round(prefill_s, 2),
        "limit_s": round(decode_s + prefill_s, 2),
        "processing_over_limit": round(processing / (decode_s + prefill_s), 2),
    }
    steps = rates.get("step_s_by_sequences")
    if steps:
        b, per_token = min(((int(k), v / int(k)) for k, v in steps.items()), key=lambda kv: kv[1])
        floor = gen * per_token + prefill_s
        out.update(
            batched_floor_s=round(floor, 2),
            batched_floor_sequences=b,
            processing_over_batched_floor=round(processing / floor, 2),
        )
    return out


def _agreement(ref: tuple, other: tuple) -> dict:
    """How far an engine's decisions and memories match the reference engine's."""
    (dec_a, mem_a), (dec_b, mem_b) = ref, other
    pairs = [(x, y) for qa, qb in zip(dec_a, dec_b) for x, y in zip(qa, qb)]
    both = [(x, y) for x, y in pairs if x is not None and y is not None]
    return {
        "windows": len(pairs),
        "both_gated": len(both),
        "identical_decisions": sum(x == y for x, y in both),
        "identical_memories": sum(a == b for a, b in zip(mem_a, mem_b)),
        "questions": len(mem_a),
    }


def cold_warm(config_path: str | os.PathLike, overrides: Sequence[str] = (), progress: bool = True) -> dict:
    """``lazymem eval CONFIG`` twice as fresh processes on one new, empty cache: wall times, ratio, same records."""
    from lazymem.eval.runfiles import RECORDS_FILE, load_records

    def records(out: Path) -> list[dict]:
        rows, _ = load_records(out / RECORDS_FILE)
        return sorted(
            (
                {
                    "question_id": r.question_id,
                    "status": r.status,
                    "answer": r.answer,
                    "memory": r.memory,
                    # the pool's positions only: its timings differ by design
                    "pool": None if r.pool is None else list(r.pool.positions),
                }
                for r in rows
            ),
            key=lambda r: r["question_id"],
        )

    from lazymem.llm.tokens import DIR_ENV, qwen3_tokenizer_dir

    with tempfile.TemporaryDirectory(prefix="lazymem-cold-") as tmp:
        # a new cache for the calls, but the Qwen3 tokenizer of this one (else memory tokens go missing)
        env = {
            **os.environ,
            "LAZYMEM_CACHE": str(Path(tmp) / "cache"),
            DIR_ENV: str(qwen3_tokenizer_dir()),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        walls = {}
        for run in ("cold", "warm"):
            cmd = [sys.executable, "-m", "lazymem.cli", "eval", str(config_path), "--out", str(Path(tmp) / run)]
            for o in overrides:
                cmd += ["--set", o]
            t0 = time.perf_counter()
            done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            walls[run] = time.perf_counter() - t0
            if done.returncode != 0:
                raise RuntimeError(
                    f"bench pipeline: the {run} `lazymem eval {config_path}` failed "
                    f"(exit {done.returncode}): {done.stderr.strip()[-600:]}"
                )
            if progress:
                print(f"[bench] eval {run}: {walls[run]:.1f} s", flush=True)
        same = records(Path(tmp) / "cold") == records(Path(tmp) / "warm")
    return {
        "cold_s": round(walls["cold"], 2),
        "warm_s": round(walls["warm"], 2),
        "ratio": round(walls["cold"] / walls["warm"], 1),
        "same_records": same,
    }


def figure(result: dict):
    """Mean seconds a question by stage for each engine (stacked), and the eval cold vs warm."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    ran = {k: v for k, v in result["engines"].items() if "stages" in v}
    cw = result.get("cold_warm")
    fig = make_subplots(
        rows=1,
        cols=2 if cw else 1,
        column_widths=[0.7, 0.3] if cw else None,
        subplot_titles=["seconds a question, by stage (mean)"] + (["the eval, cold vs warm (log)"] if cw else []),
    )
    names = list(ran)
    for stage, colour in zip(STAGES, ("#4C78A8", "#F58518", "#54A24B")):
        fig.add_trace(
            go.Bar(
                y=names,
                x=[ran[n]["stages"][stage]["mean"] for n in names],
                name=stage,
                orientation="h",
                marker_color=colour,
            ),
            row=1,
            col=1,
        )
    for n in names:
        fig.add_annotation(
            x=ran[n]["stages"]["total"]["mean"],
            y=n,
            xanchor="left",
            showarrow=False,
            text=f" {ran[n]['stages']['total']['mean']:.1f} s"
            + (f" ({result['speedup'][n]:.1f}x)" if n in result.get("speedup", {}) else ""),
            row=1,
            col=1,
        )
    if cw:
        fig.add_trace(
            go.Bar(
                x=["cold", "warm"],
                y=[cw["cold_s"], cw["warm_s"]],
                showlegend=False,
                marker_color=["#B279A2", "#9D755D"],
                text=[f"{cw['cold_s']:.1f} s", f"{cw['warm_s']:.2f} s"],
                textposition="outside",
            ),
            row=1,
            col=2,
        )
        fig.update_yaxes(type="log", title_text="seconds", row=1, col=2)
    fig.update_layout(
        barmode="stack",
        height=360,
        width=1000,
        template="plotly_white",
        title=f"Query path, {result['questions']} questions, {result['threads']} threads<br>"
        f"<sup>{result['config']}; speedup vs {result['reference']}</sup>",
        legend=dict(orientation="h", y=-0.18),
    )
    fig.update_xaxes(title_text="seconds", row=1, col=1)
    return fig


def bench_pipeline(
    config_path: str | os.PathLike = "configs/eval/demo.yaml",
    overrides: Sequence[str] = (),
    limit: int | None = None,
    engine_names: Sequence[str] | None = None,
    threads: int | None = None,
    do_cold_warm: bool = True,
    out: str | os.PathLike | None = "figures/bench_pipeline.json",
    figure_dir: str | os.PathLike | None = "figures",
    progress: bool = True,
) -> dict:
    """Run the benchmark (see the module docstring) and write its JSON and figure.

    Args:
        config_path: an eval config (``lazymem eval`` format); its dataset, selection and pipeline.
        overrides: ``key=value`` overrides of the config, as ``lazymem eval --set``.
        limit: questions (default: the config's limit).
        engine_names: a subset of ``engines()`` (default all; llama.cpp ones are reported as
            skipped, with the reason, when llama-cpp-python is missing).
        threads: CPU threads for every engine (default: all cores).
        do_cold_warm: also time the eval cold vs warm (two fresh processes).
    """
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, seeded, select_questions
    from lazymem.retrieve import Retriever

    config = seeded(EvalConfig.from_yaml(config_path, overrides))
    if limit is not None:
        config = dataclasses.replace(config, limit=limit)
    from lazymem.pipeline.methods import method_class, method_names

    method = method_class(config.pipeline.method)
    if not (method.uses_mpm and method.mpm_client):
        engines_for = [n for n in method_names() if method_class(n).uses_mpm and method_class(n).mpm_client]
        raise ConfigError(
            f"{config_path}: pipeline.method {config.pipeline.method!r} has no memory-processing "
            f"model to compare engines on (use one of {engines_for})"
        )
    threads = threads or os.cpu_count() or 1
    table = engines(threads, config.pipeline.mpm.batch_size)
    names = list(engine_names or table)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ConfigError(f"bench pipeline: unknown engine(s) {unknown}; engines are {list(table)}")
    dataset = load_dataset(config.dataset, subset=config.subset)
    items = [(dataset.history(q), q) for q in select_questions(dataset, config)]
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    t_start = time.perf_counter()
    retriever = Retriever(config.pipeline.retrieval, cache_queries=False)  # each query encoded: a new question
    t0 = time.perf_counter()
    for history, q in items:  # index every history now: store-time work, not any engine's
        retriever.retrieve(history, q.text)
    index_s = time.perf_counter() - t0
    result: dict = {
        "config": str(config_path),
        "overrides": list(overrides),
        "dataset": config.dataset,
        "questions": len(items),
        "question_ids": [q.id for _, q in items],
        "threads": threads,
        "cpus": os.cpu_count(),
        "mpm": config.pipeline.mpm.model,
        "adapter": config.pipeline.mpm.adapter,
        "answer": config.pipeline.answer.model,
        "mpm_sampling": config.pipeline.mpm_sampling.as_dict(),
        "index_s": round(index_s, 2),
        "engines": {},
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    kept: dict[str, tuple] = {}
    for name in names:
        why = _missing(table[name])
        if why is not None:
            result["engines"][name] = {"skipped": why}
            print(f"[bench] {name}: skipped ({why})", flush=True)
            continue
        stats, decided, memories = run_engine(
            name, _engine_config(config.pipeline, table[name]), retriever, items, progress
        )
        result["engines"][name] = {**table[name], **stats}
        kept[name] = (decided, memories)
    ran = [n for n in names if n in kept]
    if ran:
        # the pipeline's own default engine is the reference where it ran
        ref = result["reference"] = "transformers_batched" if "transformers_batched" in ran else ran[0]
        base = result["engines"][ref]["stages"]
        result["speedup"] = {
            n: round(base["total"]["mean"] / result["engines"][n]["stages"]["total"]["mean"], 2) for n in ran
        }
        result["processing_speedup"] = {
            n: round(base["processing"]["mean"] / result["engines"][n]["stages"]["processing"]["mean"], 2)
            for n in ran
            if result["engines"][n]["stages"]["processing"]["mean"]
        }
        result["agreement_with_reference"] = {n: _agreement(kept[ref], kept[n]) for n in ran if n != ref}
        if any(table[n]["backend"] == "llamacpp" for n in ran):
            result["rates"] = engine_rates(config.pipeline.mpm, threads)
            for n in ran:
                if table[n]["backend"] == "llamacpp":
                    result["engines"][n]["decode_bound"] = decode_bound(result["engines"][n], result["rates"])
    if do_cold_warm:
        result["cold_warm"] = cold_warm(config_path, [*overrides, *([f"limit={limit}"] if limit else [])], progress)
    from lazymem.runinfo import package_versions

    result["machine"] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": package_versions(("torch", "transformers", "peft", "llama-cpp-python")),
    }
    result["wall_s"] = round(time.perf_counter() - t_start, 1)
    result["loadavg_1_5_15"] = {"start": load_before, "end": os.getloadavg() if hasattr(os, "getloadavg") else None}
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1) + "\n")
    if figure_dir is not None and ran:
        from lazymem.viz.save import save_figure

        result["figure"] = save_figure(figure(result), Path(out).stem if out else "bench_pipeline", figure_dir)
    if progress:
        print(summary(result))
    return result


def summary(result: dict) -> str:
    """The result as a short text table."""
    lines = [
        f"{'engine':<26}{'load s':>8}{'retrieval':>11}{'processing':>12}{'answer':>9}{'total':>9}{'x':>7}{'gate ok':>9}"
    ]
    for name, e in result["engines"].items():
        if "skipped" in e:
            lines.append(f"{name:<26}skipped: {e['skipped']}")
            continue
        s = e["stages"]
        lines.append(
            f"{name:<26}{e['load_s']:>8.1f}{s['retrieval']['mean']:>11.3f}{s['processing']['mean']:>12.1f}"
            f"{s['answer']['mean']:>9.1f}{s['total']['mean']:>9.1f}{result['speedup'][name]:>7.2f}"
            f"{e['gate_ok']:>5}/{e['windows']}"
        )
    if result.get("rates"):
        r = result["rates"]
        lines.append(
            f"memory model, one sequence on {r['threads']} threads: prefill {r['prefill_tokens_per_s']:.0f} "
            f"tokens/s, decode {r['decode_s_per_token'] * 1000:.1f} ms a token"
        )
        if r.get("step_s_by_sequences"):
            lines.append(
                "a step of one token from each of b sequences: "
                + ", ".join(f"b={b} {v * 1000:.1f} ms" for b, v in r["step_s_by_sequences"].items())
            )
    for name, e in result["engines"].items():
        b = e.get("decode_bound")
        if b:
            lines.append(
                f"{name}: {b['generated_tokens']:.0f} tokens generated, {b['evaluated_prompt_tokens']:.0f} of "
                f"{b['prompt_tokens']:.0f} prompt tokens evaluated a question; one-sequence limit "
                f"{b['limit_s']:.1f} s (decode {b['decode_s']:.1f} + prefill {b['prefill_s']:.1f}); processing "
                f"{b['processing_over_limit']:.2f}x it"
                + (
                    f"; batched floor {b['batched_floor_s']:.1f} s (b={b['batched_floor_sequences']}), processing "
                    f"{b['processing_over_batched_floor']:.2f}x it"
                    if "batched_floor_s" in b
                    else ""
                )
            )
    for name, a in result.get("agreement_with_reference", {}).items():
        lines.append(
            f"{name} vs {result['reference']}: decisions identical in {a['identical_decisions']} of "
            f"{a['both_gated']} windows gated by both; memories identical in {a['identical_memories']} of "
            f"{a['questions']} questions"
        )
    cw = result.get("cold_warm")
    if cw:
        lines.append(
            f"eval cold {cw['cold_s']:.1f} s, warm {cw['warm_s']:.2f} s: {cw['ratio']}x "
            f"(same records: {cw['same_records']})"
        )
    return "\n".join(lines)
