"""Comparing systems: ``lazymem report`` with its Pareto figure (notebook 08_compare and the CLI).

``report_with_figures(runs, ..., dataset="locomo", out="runs/report")`` builds the report
(``lazymem.eval.report``), writes ``report.json`` / ``report.md`` and the Pareto figure
(``pareto.html``, offline, and ``pareto.png``) with the paper's reported points of `dataset`
overlaid hollow, the memory-cost figure (``cost.html`` / ``cost.png``: ``report_cost_figure``) when the
runs carry memory measures, and returns (report, Pareto figure). ``method_runs`` gives notebooks 08 and 10 their
run folders: finished ones as given, else one quick run (or resume) per method. ``latency=
{system: "docs/results/latency/x.json"}`` draws those systems' latency from ``lazymem bench
latency`` (the paper's protocol) instead of the eval run's timings (``bench_latency``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lazymem.eval.paper import REPORTED
from lazymem.eval.report import build_report, report_markdown


def method_runs(runs: Sequence[str], methods: Sequence[str], dataset: str, out_root: str, **quick: Any) -> list[str]:
    """``runs`` when given; else each method evaluated (resumably) on ``dataset`` into ``<out_root>/<method>``
    with ``lazymem.eval.quick_config(dataset, method, **quick)``."""
    if runs:
        return [str(r) for r in runs]
    from lazymem.eval import evaluate, quick_config

    for m in methods:
        evaluate(quick_config(dataset, m, **quick), f"{out_root}/{m}", progress=False)
    return [f"{out_root}/{m}" for m in methods]


METRIC_LABELS = {"accuracy": "LLM-judge accuracy", "locomo_f1": "LoCoMo F1", "answer_f1": "answer F1 (proxy)"}


def bench_latency(latency: Mapping[str, str | Path | Mapping] | None) -> dict[str, Mapping]:
    """``{system: bench result}`` from ``{system: a `lazymem bench latency --out` JSON file (or its dict)}``."""
    from lazymem.errors import LoadError

    out: dict[str, Mapping] = {}
    for system, src in (latency or {}).items():
        if isinstance(src, Mapping):
            out[system] = src
            continue
        try:
            data = json.loads(Path(src).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LoadError(str(src), None, None, f"not a readable `lazymem bench latency` JSON ({e})") from None
        if not isinstance(data, Mapping) or not isinstance(data.get("stages"), Mapping):
            raise LoadError(str(src), None, "stages", "missing: not a `lazymem bench latency` result")
        out[system] = data
    return out


def report_figure(report: dict, dataset: str | None = None, latency: Mapping[str, str | Path | Mapping] | None = None):
    """The Pareto figure of a report; ``dataset`` ("locomo" / "longmemeval") overlays the paper's points;
    ``latency`` ({system: bench latency JSON}) replaces those systems' latencies (``bench_latency``)."""
    from lazymem.viz import pareto_figure
    from lazymem.viz.pareto import bench_latency_rows

    if dataset is not None and dataset not in REPORTED:
        raise ValueError(f"dataset {dataset!r}: the paper reports {sorted(REPORTED)}")
    rows = bench_latency_rows(report["rows"], bench_latency(latency)) if latency else report["rows"]
    return pareto_figure(
        rows,
        "score",
        REPORTED.get(dataset) if dataset else None,
        metric_label=METRIC_LABELS.get(report["metric"], report["metric"]),
        title=f"Accuracy-efficiency trade-offs ({', '.join(r['system'] for r in report['rows'])})",
    )


def report_with_figures(
    runs: Sequence[str | Path],
    names: Sequence[str] | None = None,
    metric: str | None = None,
    reference: str | None = None,
    dataset: str | None = None,
    out: str | Path | None = None,
    png: bool = True,
    n_resamples: int = 9999,
    latency: Mapping[str, str | Path | Mapping] | None = None,
) -> tuple[dict, Any]:
    rep = build_report(runs, names, metric, reference, n_resamples=n_resamples)
    fig = report_figure(rep, dataset, latency)
    if out is not None:
        from lazymem.viz import save_figure

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(rep, indent=2) + "\n")
        (out / "report.md").write_text(report_markdown(rep))
        save_figure(fig, "pareto", out, png=png)
        if (cost := report_cost_figure(rep)) is not None:
            save_figure(cost, "cost", out, png=png)
    return rep, fig


def report_cost_figure(report: Mapping):
    """The report's memory-cost figure (``lazymem.viz.cost``: evidence recall and answer recall in memory
    against all-call tokens and processing seconds), or None when no row has a memory measure."""
    from lazymem.viz.cost import memory_cost_figure

    rows = report["rows"]
    if not any(r.get("evidence_recall") is not None or r.get("answer_recall_in_memory") is not None for r in rows):
        return None
    names = ", ".join(r["system"] for r in rows)  # on a line of its own: six names overflow the title's line
    return memory_cost_figure(rows, title=f"What each memory holds against what it costs<br><sup>{names}</sup>")
