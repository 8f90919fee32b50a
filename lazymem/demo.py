"""`make demo`: the main job on the embedded default data set, offline, on CPU.

Stages: data summary -> hybrid retrieval over every question (All@k by window radius, as
the paper's Table 2) -> windows + training-free extractive construction on a few
questions -> figures in figures/ (HTML + PNG) -> the whole query path on the demo questions
(`lazymem eval configs/eval/demo.yaml`, records in runs/eval/demo-<mpm>-<engine>/; a rerun reads
the LLM cache), printing per question the kept memory next to the gold evidence. The memory-processing
model (``mpm``) is LazyMem-135M (SmolLM2-135M-Instruct + the LoRA adapter this project trained,
free generation) by default; ``base`` is the untrained SmolLM2 with schema-constrained decoding,
``extractive`` the training-free processor.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lazymem.eval import EvalConfig
    from lazymem.eval.records import RunRecord
    from lazymem.records import Dataset

DEMO_MPMS = ("lazymem-135m", "base", "extractive")
# Overrides of configs/eval/demo.yaml (which runs LazyMem-135M) per --mpm choice.
_MPM_OVERRIDES = {
    "lazymem-135m": [],
    "base": [
        "pipeline.mpm_decoding=null",
        "pipeline.mpm.adapter=null",
        "pipeline.structured=true",
        "pipeline.structured_trace=false",
        "pipeline.grounded=false",
        "pipeline.schema_max_content=100",
        "pipeline.schema_max_reason=0",
        "pipeline.mpm_sampling.logit_bias=null",
        "pipeline.keep_prior=0",
    ],
    # the bias and the prior are LazyMem-135M's; untrained SmolLM2 wrote 0/30 valid arrays freely
    "extractive": [
        "pipeline.mpm_decoding=null",
        "pipeline.method=extractive",
        "pipeline.structured=false",
        "pipeline.structured_trace=false",
        "pipeline.grounded=false",
        "pipeline.keep_prior=0",
        "pipeline.mpm_sampling.logit_bias=null",
    ],
}


def demo_eval_config(mpm: str = "lazymem-135m") -> EvalConfig:
    """configs/eval/demo.yaml with the memory-processing model ``mpm`` (one of DEMO_MPMS)."""
    from pathlib import Path

    from lazymem.errors import ConfigError
    from lazymem.eval import EvalConfig

    if mpm not in _MPM_OVERRIDES:
        raise ConfigError(f"demo mpm {mpm!r}: one of {', '.join(DEMO_MPMS)}")
    recipe = Path(__file__).resolve().parents[1] / "configs" / "eval" / "demo.yaml"
    return EvalConfig.from_yaml(recipe, _MPM_OVERRIDES[mpm])


def show_memories(records: dict[str, RunRecord], ds: Dataset, width: int = 104) -> None:
    """Per question: the answers, then the gold evidence (kept or not) and the kept memory lines."""
    for qid, r in records.items():
        q = ds.question(qid)
        history = ds.history(q)
        kept = {d.pos: d for d in r.decisions or () if d.op == "KEEP"}
        c = r.construction
        print(f"- [{q.abbrev}] {q.text}\n    gold answer: {q.answer!r}   model answer: {(r.answer or '')[:80]!r}")
        if c:
            print(
                f"    {c.n_windows} windows, gate ok {c.n_valid}/{c.n_windows}, kept {c.n_kept}/"
                f"{c.n_messages} messages, gold kept {c.n_gold_kept}/{c.n_gold} (gold in windows)"
            )
        for pos in q.evidence:
            m = history.messages[pos]
            mark = "KEPT   " if pos in kept else "dropped" if c else "       "
            print(f"    gold  [{mark}] {m.role}: {m.text[:width]}")
        for pos, d in sorted(kept.items()):
            tag = "gold" if pos in q.evidence else "    "
            print(f"    kept  [{tag}]    {(d.content or '')[:width]}")
        if not kept:
            print("    kept  (nothing)")


def run_demo(
    spec: str | None = None,
    n_construct: int = 4,
    figures_dir: str = "figures",
    with_eval: bool = True,
    eval_out: str | None = None,
    mpm: str = "lazymem-135m",
) -> dict:
    """Run every stage on `spec` (default: the embedded synthetic set) and print a summary."""
    from lazymem.data import DEFAULT_SPEC, load_dataset, summarize, summary_text
    from lazymem.eval import coverage_table
    from lazymem.eval.paper import all_at_50_reference
    from lazymem.pipeline import LazyMemPipeline, PipelineConfig
    from lazymem.retrieve import RetrievalConfig, Retriever, retrieve_many
    from lazymem.viz import all_at_k_vs_w, save_figures, window_strip

    spec = spec or DEFAULT_SPEC
    t0 = time.perf_counter()
    print(f"== 1. data: {spec} (offline, CPU) ==")
    ds = load_dataset(spec)
    print(summary_text(summarize(ds)))

    print("\n== 2. retrieve broadly: BM25 + all-MiniLM-L6-v2 (offline) + RRF, n=50, no reranker ==")
    config = RetrievalConfig()
    retriever = Retriever(config)
    t = time.perf_counter()
    pools = retrieve_many(ds, config, retriever=retriever)
    t_retrieve = time.perf_counter() - t
    cov = coverage_table({q: p.positions for q, p in pools.items()}, ds, k=50, radii=(0, 1, 2, 3))
    print(
        f"retrieval for {len(pools)} questions: {t_retrieve:.1f} s (first run embeds every message once; "
        f"reruns read the embedding cache)"
    )
    print("  w  All@50  windows/question  messages/question")
    for w in ("0", "1", "2", "3"):
        st = cov["window_stats"][w]
        print(f"  {w}  {cov['all_at_k'][w]:.3f}   {st['P']:>14.1f}   {st['covered']:>16.1f}")

    print(
        f"\n== 3. window (w=2, L=8, s=7) + construct: training-free extractive processor on {n_construct} questions =="
    )
    pipeline = LazyMemPipeline(PipelineConfig(method="extractive", retrieval=config), retriever=retriever)
    shown = None
    for q in [q for q in ds.questions if q.evidence][:n_construct]:
        history = ds.history(q)
        c = pipeline.process(history, q)  # retrieve (cached index) -> window -> construct, no answer
        s = c.stats
        print(
            f"- [{q.abbrev}] {q.text}\n    gold answer: {q.answer!r}; {s.n_windows} windows, gate ok "
            f"{s.n_valid}/{s.n_windows}, "
            f"kept {s.n_kept}/{s.n_messages} messages, gold kept {s.n_gold_kept}/{s.n_gold}"
        )
        first = c.memory.splitlines()[:2]
        for line in first:
            print(f"    memory: {line[:110]}")
        if shown is None:
            shown = (history, c, q)

    print(f"\n== 4. figures -> {figures_dir}/ ==")
    figs = {
        "demo_all_at_k_vs_w": all_at_k_vs_w(
            {int(w): v for w, v in cov["all_at_k"].items()}, paper=all_at_50_reference("both")
        )
    }
    if shown is not None:
        history, c, q = shown
        figs["demo_window_strip"] = window_strip(
            history, [w.window for w in c.windows], gate=[w.verdict for w in c.windows], question=q
        )
    written = save_figures(figs, figures_dir)
    for name, paths in written.items():
        print(f"  {name}: {paths['html']}" + (f", {paths['png']}" if paths.get("png") else " (no PNG: see warning)"))
    result = {"summary": summarize(ds), "coverage": cov, "figures": written}
    if with_eval:
        result["eval"] = _eval_stage(mpm, eval_out)
    print(f"\n[demo done in {time.perf_counter() - t0:.1f} s]")
    return result


def _eval_stage(mpm: str, eval_out: str | None) -> dict:
    from lazymem.data import load_dataset
    from lazymem.errors import ConfigError
    from lazymem.eval import evaluate
    from lazymem.eval import summary_text as eval_summary_text
    from lazymem.eval.runfiles import latest_records, load_records

    if mpm == "lazymem-135m":
        from lazymem.llm.models import resolve_adapter

        try:
            resolve_adapter("lazymem-135m")
        except ConfigError as e:
            print(f"\nnote: {e}\n      -> running the untrained base instead (--mpm base)")
            mpm = "base"
    config = demo_eval_config(mpm)
    # one folder per engine: a run folder resumes only under the same config, and `backend: auto`
    # is llama.cpp where installed, transformers elsewhere
    engine = "" if mpm == "extractive" else f"-{config.pipeline.mpm.backend}"
    out = eval_out or f"runs/eval/demo-{mpm}{engine}"
    what = {
        "lazymem-135m": "LazyMem-135M v2 (SmolLM2-135M-Instruct + this project's LoRA adapter, count-constrained "
        f"with its trace, grounded, lexical KEEP prior {config.pipeline.lazymem.keep_prior:g}, on "
        f"{config.pipeline.mpm.backend})",
        "base": "untrained SmolLM2-135M-Instruct, schema-constrained decoding",
        "extractive": "the training-free extractive processor",
    }[mpm]
    print(f"\n== 5. construct + answer on {config.limit or 'all'} questions: {what}; SmolLM2 answers ({out}/) ==")
    print(
        "   first run converts the model (~20 s); reruns read the LLM cache. Other processors: "
        "lazymem demo --mpm {" + ",".join(DEMO_MPMS) + "}"
    )
    t = time.perf_counter()
    summary = evaluate(config, out, command=["lazymem", "demo", "--mpm", mpm])
    print(eval_summary_text(summary))
    records, _ = load_records(f"{out}/records.jsonl")
    show_memories(latest_records(records), load_dataset(config.dataset))
    print(
        f"[eval stage {time.perf_counter() - t:.1f} s]  More: lazymem eval configs/eval/demo.yaml --limit 0 "
        "--out runs/eval/demo-all (every question), configs/eval/locomo_paper.yaml (LoCoMo), "
        "lazymem train recipe --list (LazyMem-135M's training recipe, step by step)"
    )
    return summary
