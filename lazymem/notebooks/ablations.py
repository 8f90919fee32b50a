"""Notebook 09's sweep points: one eval config per radius or training stage, its run, its table row.

A point is an ordinary resumable eval run (``lazymem.eval.evaluate``) in its own folder, run through
the sweep engine (``lazymem.sweep``: a point of other inputs is recomputed, its old results set
aside); its row is the report's (``lazymem.eval.report.build_report``) plus All@k over the run's own
records (every gold message of a question among the positions its memory step saw).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the eval package loads at call time, not when lazymem.notebooks is imported
    from lazymem.eval import EvalConfig
    from lazymem.eval.records import RunRecord

UNCHANGED = "keep"  # ``adapter`` value meaning: leave the memory-processing model's adapter as configured
ROW_KEYS = {
    "gate_fmt": "gate_fmt",
    "strict_gate": "gate_strict",
    "gold_keep_recall": "gold_keep_recall",
    "memory_tokens": "memory_tokens",
    "questions": "questions",
    "errors": "errors",
}  # row key -> report's


def ablation_config(
    dataset: str,
    method: str,
    w: int,
    *,
    limit: int = 2,
    model: str = "smollm2-offline",
    base_url: str = "",
    n: int = 20,
    recipe: str = "",
    adapter: str | None = UNCHANGED,
) -> EvalConfig:
    """One point's EvalConfig: windows of radius ``w`` (L 8, s 7), from ``recipe`` (an eval YAML,
    its models and pool kept) when given, else from ``quick_config`` with the notebook's parameters.

    ``adapter`` sets the memory-processing model's adapter (None = the base model, decoded with
    the schema constraint and no KEEP bias); ``UNCHANGED`` leaves it as configured.

    >>> c = ablation_config("synthetic:messages=50,seed=0", "extractive", 1, n=10)
    >>> c.pipeline.method, c.pipeline.window.w, c.pipeline.retrieval.n, c.limit
    ('extractive', 1, 10, 2)
    >>> ablation_config("synthetic:messages=50,seed=0", "lazymem", 2, adapter=None).pipeline.lazymem.structured
    True
    """
    import dataclasses

    from lazymem.eval import EvalConfig, quick_config

    if recipe:
        sets = [
            f"dataset={dataset}",
            f"limit={limit}",
            f'pipeline.window={{"w": {w}, "L": 8, "s": 7}}',
            f"pipeline.method={method}",
        ]
        if adapter != UNCHANGED:
            sets += [f"pipeline.mpm.adapter={adapter or 'null'}", f"pipeline.structured={adapter is None}"]
            if adapter is None:
                sets += ["pipeline.mpm_sampling.logit_bias=null"]
        return EvalConfig.from_yaml(recipe, sets)
    cfg = quick_config(dataset, method, limit=limit, model=model, base_url=base_url, n=n, w=w)
    if adapter == UNCHANGED:
        return cfg
    mpm = dataclasses.replace(cfg.pipeline.mpm, adapter=adapter)
    lazymem = dataclasses.replace(cfg.pipeline.lazymem, structured=adapter is None)
    return dataclasses.replace(cfg, pipeline=dataclasses.replace(cfg.pipeline, mpm=mpm, lazymem=lazymem))


def run_all_at_k(records: Iterable[RunRecord]) -> float | None:
    """All@k of a run: the share of its ok questions with gold evidence whose every gold message was
    among the positions the memory step saw (``lazymem.eval.attribution.candidates``: the windows,
    else the pool); None when no question has gold evidence.

    >>> from lazymem.eval.records import RunRecord
    >>> def rec(status, evidence, **parts):
    ...     return RunRecord.from_json({"question_id": "q", "status": status,
    ...                                 "question": {"type": "t", "answer": "a", "evidence": evidence}, **parts})
    >>> recs = [rec("ok", [3], windows=[{"positions": [2, 3, 4]}]),
    ...         rec("ok", [7, 9], windows=[], pool={"positions": [9]}),
    ...         rec("ok", [], windows=[]), rec("error", [1])]
    >>> run_all_at_k(recs)
    0.5
    >>> run_all_at_k(recs[2:]) is None
    True
    """
    from lazymem.eval.attribution import candidates

    covered = [
        set(r.question.evidence) <= (candidates(r) or set())
        for r in records
        if r.ok and r.question is not None and r.question.evidence
    ]
    return sum(covered) / len(covered) if covered else None


def ablation_sweep(points: Mapping[Any, tuple[str | Path, EvalConfig]], n_resamples: int = 100) -> dict[Any, dict]:
    """Run (or resume) every point into its folder through the sweep engine (``lazymem.sweep``) and
    return {name: row} (``ablation_point``'s row), in the points' order.

    A point whose earlier results were made from other inputs (config, dataset bytes, prompts:
    ``lazymem.eval.table.cell_changes``) is recomputed, its old results set aside into
    ``<folder>/previous-<time>/``, as eval-table does; a finished point costs nothing.
    """
    from lazymem.eval import evaluate
    from lazymem.eval.report import build_report
    from lazymem.eval.runfiles import latest_records, load_records
    from lazymem.eval.table import cell_changes
    from lazymem.sweep import Cell, run_cells

    datasets: dict[tuple, Any] = {}

    def dataset(cfg: EvalConfig) -> Any:
        from lazymem.data import load_dataset

        key = (cfg.dataset, cfg.subset)
        if key not in datasets:
            datasets[key] = load_dataset(cfg.dataset, subset=cfg.subset)
        return datasets[key]

    def run(cell: Cell, changes: tuple[str, ...]) -> dict[str, Any]:
        evaluate(cell.spec, cell.folder, progress=False, dataset=dataset(cell.spec), force_new=bool(changes))
        row = build_report([cell.folder], n_resamples=n_resamples)["rows"][0]
        records = latest_records(load_records(cell.folder / "records.jsonl")[0]).values()
        return {
            "score": row["score"],
            "metric": row["metric"],
            "All@k": run_all_at_k(records),
            **{k: row[v] for k, v in ROW_KEYS.items()},
        }

    names = list(points)
    cells = [Cell((str(name),), Path(folder), cfg) for name, (folder, cfg) in points.items()]
    outcomes = run_cells(
        cells,
        check=lambda cell: cell_changes(cell.folder, cell.spec, dataset(cell.spec)),
        run=run,
        resume=True,
        progress=None,
        label="ablations",
    )
    return {name: o.result for name, o in zip(names, outcomes, strict=True)}


def ablation_point(run_dir: str | Path, config: EvalConfig, n_resamples: int = 100) -> dict[str, Any]:
    """Run (or resume) one point into ``run_dir`` and return its row: score and metric, All@k,
    Gate Fmt., the strict gate, gold-keep recall, memory tokens, questions and errors."""
    return ablation_sweep({"point": (run_dir, config)}, n_resamples)["point"]
