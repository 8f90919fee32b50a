"""`make demo`: the main job on the embedded default data set, offline, on CPU.

Stages: data summary -> hybrid retrieval over every question (All@k by window radius, as
the paper's Table 2) -> windows + training-free extractive construction on a few
questions -> figures in figures/ (HTML + PNG) -> the whole query path with SmolLM2-135M
as memory-processing model and answerer on a few questions (`lazymem eval
configs/eval_demo.yaml`, records in runs/eval/demo/; a rerun reads the LLM cache).
"""
from __future__ import annotations

import time


def run_demo(spec: str | None = None, n_construct: int = 4, figures_dir: str = "figures", with_eval: bool = True,
             eval_out: str = "runs/eval/demo") -> dict:
    """Run every stage on `spec` (default: the embedded synthetic set) and print a summary."""
    from lazymem.data import DEFAULT_SPEC, load_dataset, summarize, summary_text
    from lazymem.eval import coverage_table
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
    print(f"retrieval for {len(pools)} questions: {t_retrieve:.1f} s (first run embeds every message once; "
          f"reruns read the embedding cache)")
    print("  w  All@50  windows/question  messages/question")
    for w in ("0", "1", "2", "3"):
        st = cov["window_stats"][w]
        print(f"  {w}  {cov['all_at_k'][w]:.3f}   {st['P']:>14.1f}   {st['covered']:>16.1f}")

    print(f"\n== 3. window (w=2, L=8, s=7) + construct: training-free extractive processor on {n_construct} questions ==")
    pipeline = LazyMemPipeline(PipelineConfig(method="extractive", retrieval=config), retriever=retriever)
    shown = None
    for q in [q for q in ds.questions if q.evidence][:n_construct]:
        history = ds.history(q)
        c = pipeline.process(history, q)  # retrieve (cached index) -> window -> construct, no answer
        s = c.stats
        print(f"- [{q.abbrev}] {q.text}\n    gold answer: {q.answer!r}; {s.n_windows} windows, gate ok {s.n_valid}/{s.n_windows}, "
              f"kept {s.n_kept}/{s.n_messages} messages, gold kept {s.n_gold_kept}/{s.n_gold}")
        first = c.memory.splitlines()[:2]
        for line in first:
            print(f"    memory: {line[:110]}")
        if shown is None:
            shown = (history, c, q)

    print(f"\n== 4. figures -> {figures_dir}/ ==")
    figs = {"demo_all_at_k_vs_w": all_at_k_vs_w({int(w): v for w, v in cov["all_at_k"].items()}, paper=True)}
    if shown is not None:
        history, c, q = shown
        figs["demo_window_strip"] = window_strip(history, [w.window for w in c.windows],
                                                 gate=[w.verdict for w in c.windows], question=q)
    written = save_figures(figs, figures_dir)
    for name, paths in written.items():
        print(f"  {name}: {paths['html']}" + (f", {paths['png']}" if paths.get("png") else " (no PNG: see warning)"))
    result = {"summary": summarize(ds), "coverage": cov, "figures": written}
    if with_eval:
        from pathlib import Path

        from lazymem.eval import EvalConfig, evaluate
        from lazymem.eval import summary_text as eval_summary_text

        recipe = Path(__file__).resolve().parents[1] / "configs" / "eval_demo.yaml"
        print(f"\n== 5. construct + answer with SmolLM2-135M-Instruct on CPU ({recipe.name} -> {eval_out}/) ==")
        print("   schema-constrained decoding (untrained SmolLM2 writes no valid decision array freely); "
              "first run converts the model and builds the grammar (~2-3 min), reruns read the LLM cache")
        t = time.perf_counter()
        summary = evaluate(EvalConfig.from_yaml(recipe), eval_out, command=["lazymem", "demo"])
        print(eval_summary_text(summary))
        print(f"[eval stage {time.perf_counter() - t:.1f} s]")
        result["eval"] = summary
    print(f"\n[demo done in {time.perf_counter() - t0:.1f} s]")
    return result
