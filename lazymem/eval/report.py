"""Tables across systems from finished run folders, with paired bootstrap intervals.

``lazymem report RUN_DIR [RUN_DIR ...] [--names a,b] [--reference NAME] [--out DIR]`` reads
each run's records (the last record per question), and writes ``report.json`` and
``report.md`` (the command, ``lazymem.notebooks.compare``, adds the Pareto figure):

- one row per system: questions (ok / errors), the score overall and by question type
  (the judge's accuracy when the run was judged, with unparseable replies counted wrong;
  else LoCoMo's official F1; else the answer-F1 proxy), answer-context memory tokens
  (Qwen3 tokenizer), latency per stage (mean, median, P90, P95 of retrieval / processing /
  answer / total), the paper's Gate Fmt., the rewritten rate and the strict gate rate, gold-keep
  recall, and the memory's own measures: evidence recall and answer recall in memory
  (``lazymem.eval.memory_measures``; "-" for runs made before they were recorded);
- paired bootstrap 95% intervals (``lazymem.stats.paired_bootstrap``) for the difference
  between each system and the reference (default: the first) on the questions both
  answered, for the score, memory tokens, evidence recall and answer recall in memory.

Runs on different questions are paired on their shared question ids; the report says how
many questions each pair shares.

>>> from lazymem.eval.records import RunRecord
>>> r = {"q1": RunRecord.from_json({"question_id": "q1", "method": "rag", "status": "ok",
...                                 "question": {"type": "t"}, "locomo_f1": 0.5, "judge": None})}
>>> question_scores(r, "locomo_f1")
{'q1': 0.5}
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError, LoadError, int_in, path_text
from lazymem.eval.memory_measures import MEASURES, question_measures
from lazymem.eval.paper import system_label
from lazymem.eval.records import RunRecord
from lazymem.eval.runfiles import (
    MANIFEST_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    check_manifest,
    check_records_belong,
    latest_records,
    load_records,
    read_json,
)
from lazymem.eval.scoring import check_records, json_kind, summarize
from lazymem.eval.table import audited_columns, usage_columns
from lazymem.stats import paired_bootstrap

METRICS = ("accuracy", "locomo_f1", "answer_f1")
LATENCY_STAGES = ("retrieval", "processing", "answer", "total")


def question_scores(latest: Mapping[str, RunRecord], metric: str) -> dict[str, float]:
    """Per-question score of ok records: judge label (accuracy), locomo_f1 or answer_f1."""
    out: dict[str, float] = {}
    for qid, r in latest.items():
        if not r.ok:
            continue
        v = r.label if metric == "accuracy" else getattr(r, metric)
        if v is not None:
            out[qid] = float(v)
    return out


def load_run(run_dir: str | Path, name: str | None = None) -> dict:
    """A finished (or partial) run folder: its latest records and a fresh summary of them."""
    d = Path(run_dir)
    path = d / RECORDS_FILE
    if not path.is_file():
        raise ConfigError(f"{d}: no {RECORDS_FILE} (not a lazymem eval run folder)")
    records = check_records(load_records(path)[0], str(path))
    manifest = read_manifest(d / MANIFEST_FILE, required=False)
    if manifest:
        check_records_belong(path, records, manifest)
    config = manifest.get("config") or {}
    judge = config.get("judge") or _judge_of(records)
    latest = latest_records(records)
    summary = summarize(records, judge)
    stored = read_json(d / SUMMARY_FILE) or {}
    if stored.get("audited"):  # LoCoMo errata (the run's spec, or `lazymem remeasure --errata`)
        summary["audited"] = stored["audited"]
    return {
        "name": name or d.name,
        "dir": str(d),
        "latest": latest,
        "summary": summary,
        "dataset": config.get("dataset"),
        "status": run_status(d, manifest),
    }


def lock_held(folder: str | Path) -> bool | None:
    """Whether a live process holds the run folder's lock (``runfiles.RunLock``); None where it cannot be told.

    Probed with a shared, non-blocking flock on ``.lock``, released at once: a writer holds it
    exclusively until it exits, and the OS drops it when the writer dies (even by kill -9).
    """
    from lazymem.eval.runfiles import LOCK_FILE

    try:
        import fcntl
    except ImportError:  # Windows: no flock to probe
        return None
    try:
        fd = os.open(Path(folder) / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return True
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False


def run_status(folder: str | Path, manifest: Mapping) -> str | None:
    """The manifest's status, except that a run recorded ``running`` whose folder lock nobody holds was
    killed outright (kill -9, a lost node): ``interrupted`` (the next ``lazymem eval`` into it resumes it)."""
    status = manifest.get("status")
    if status == "running" and lock_held(folder) is False:
        return "interrupted"
    return status if isinstance(status, str) else None


def read_manifest(path: str | Path, required: bool = True) -> dict:
    """A run's manifest.json, checked where the reports read it; LoadError naming the file and the field
    when it is not JSON, not an object, or ``config`` / ``dataset`` (and their strings) have the wrong type.
    A missing file is a LoadError when ``required``, else ``{}``.
    """
    from lazymem.files import read_json

    p = Path(path)
    if not required and not p.exists():
        return {}
    m, _ = read_json(p)
    if not isinstance(m, dict):
        raise LoadError(str(p), None, None, f"{json_kind(m)}, expected an object (a lazymem eval manifest)")
    for field in ("config", "dataset"):
        if m.get(field) is not None and not isinstance(m[field], Mapping):
            raise LoadError(
                str(p),
                None,
                field,
                f"{json_kind(m[field])}, expected an object "
                f"({'the resolved config of the run' if field == 'config' else 'name, path and sha256'})",
            )
    for field, value in [
        *((f"config.{k}", (m.get("config") or {}).get(k)) for k in ("judge", "dataset")),
        ("dataset.sha256", (m.get("dataset") or {}).get("sha256")),
    ]:
        if value is not None and not isinstance(value, str):
            raise LoadError(str(p), None, field, f"{json_kind(value)}, expected a string")
    return check_manifest(m, p)


def _judge_of(records: Sequence[RunRecord]) -> str:
    kinds = {r.judge.kind for r in records if r.judge is not None} - {None}
    return kinds.pop() if len(kinds) == 1 else "none"


def pick_metric(runs: Sequence[Mapping]) -> str:
    """accuracy when every run was judged, else locomo_f1 when every run has it, else answer_f1."""
    for m in METRICS:
        if all(question_scores(r["latest"], m) for r in runs):
            return m
    raise ConfigError("the runs share no score: none has judge labels, LoCoMo F1 or answer F1 for every run")


def system_row(run: Mapping, metric: str) -> dict:
    s, latest = run["summary"], run["latest"]
    scores = question_scores(latest, metric)
    by_type: dict[str, list[float]] = {}
    for qid, v in scores.items():
        by_type.setdefault(latest[qid].question.type, []).append(v)
    acc = s.get("accuracy") or {}
    cons = s.get("construction") or {}
    measures = s.get("memory_measures") or {}
    return {
        "system": run["name"],
        "method": s.get("method"),
        "questions": s["counts"]["recorded"],
        "status": run.get("status"),
        # how tables and figures show it (Oracle Session on LoCoMo: "(ours, not in the paper)")
        "label": system_label(run["name"], s.get("method"), run.get("dataset") or s.get("dataset")),
        "ok": s["counts"]["ok"],
        "errors": s["counts"]["error"],
        "unparseable_judge": acc.get("unparseable"),
        "metric": metric,
        "score": sum(scores.values()) / len(scores) if scores else None,
        "scored": len(scores),
        "by_type": {t: sum(v) / len(v) for t, v in sorted(by_type.items())},
        "memory_tokens": s["memory_tokens"]["mean"],
        "latency_s": {st: s["latency_s"][st] for st in LATENCY_STAGES},
        "gate_fmt": cons.get("gate_fmt"),
        "rewritten_rate": cons.get("rewritten_rate"),
        "gate_strict": cons.get("gate_pass_rate"),
        "gold_keep_recall": cons.get("gold_keep_recall"),
        **{k: (measures.get(k) or {}).get("mean") for k in MEASURES},
        **({"audited": audited_columns(s["audited"])} if s.get("audited") else {}),
        **usage_columns(s.get("usage")),  # MPM and all-call tokens a question, where measured (lazymem.eval.usage)
    }


def build_report(
    run_dirs: Sequence[str | Path],
    names: Sequence[str] | None = None,
    metric: str | None = None,
    reference: str | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
) -> dict:
    """The report of several runs (see the module docstring)."""
    if not run_dirs:
        raise ConfigError("lazymem report: name at least one run folder")
    if names is not None and len(names) != len(run_dirs):
        raise ConfigError(f"lazymem report: {len(names)} names for {len(run_dirs)} run folders")
    runs = [load_run(d, names[i] if names else None) for i, d in enumerate(run_dirs)]
    if len({r["name"] for r in runs}) != len(runs):
        raise ConfigError(f"lazymem report: system names repeat {[r['name'] for r in runs]}: pass --names")
    metric = metric or pick_metric(runs)
    if metric not in METRICS:
        raise ConfigError(f"lazymem report: metric {metric!r} must be one of {METRICS}")
    ref = next((r for r in runs if r["name"] == reference), None) if reference else runs[0]
    if ref is None:
        raise ConfigError(f"lazymem report: reference {reference!r} is none of {[r['name'] for r in runs]}")
    rows = [system_row(r, metric) for r in runs]
    pairs = []
    for r in runs:
        if r is ref:
            continue
        tokens = {q: float(x.memory_tokens) for q, x in r["latest"].items() if x.ok and x.memory_tokens is not None}
        ref_tokens = {
            q: float(x.memory_tokens) for q, x in ref["latest"].items() if x.ok and x.memory_tokens is not None
        }
        pairs.append(
            {
                "system": r["name"],
                "reference": ref["name"],
                "score": paired_bootstrap(
                    question_scores(r["latest"], metric),
                    question_scores(ref["latest"], metric),
                    n_resamples=n_resamples,
                    seed=seed,
                ),
                "memory_tokens": paired_bootstrap(tokens, ref_tokens, n_resamples=n_resamples, seed=seed),
                **{
                    k: paired_bootstrap(
                        question_measures(r["latest"], k),
                        question_measures(ref["latest"], k),
                        n_resamples=n_resamples,
                        seed=seed,
                    )
                    for k in MEASURES
                },
            }
        )
    return {
        "metric": metric,
        "reference": ref["name"],
        "rows": rows,
        "pairs": pairs,
        "runs": [
            {"name": r["name"], "dir": r["dir"], "dataset": r["dataset"], "status": r.get("status")} for r in runs
        ],
    }


def _f(x: Any, d: int = 3) -> str:
    return "-" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))


def _interval(p: Mapping, d: int = 3) -> str:
    """``delta [low, high]`` of a paired bootstrap ("-" where it has no number: fewer than two pairs)."""
    return f"{_f(p['delta'], d)} [{_f(p['low'], d)}, {_f(p['high'], d)}]"


def audited_markdown(rows: Sequence[Mapping]) -> list[str]:
    """The report's section of audited LoCoMo measures (rows with a summary's ``audited`` object); [] without."""
    audited = [r for r in rows if r.get("audited")]
    if not audited:
        return []
    cols = list(audited_columns({"flagged": 0}))
    lines = [
        "",
        "## Audited LoCoMo (errata: corrected evidence and answers)",
        "",
        "| system | " + " | ".join(cols) + " |",
    ]
    lines.append("|---|" + "---:|" * len(cols))
    for r in audited:
        a = r["audited"]
        cells = [str(a[c]) if c == "flagged" and a[c] is not None else _f(a[c]) for c in cols]
        lines.append(f"| {r.get('label', r['system'])} | " + " | ".join(cells) + " |")
    return lines


def bill_markdown(rows: Sequence[Mapping]) -> list[str]:
    r"""The report's section of what a question costs (rows whose summary has ``usage``): the memory model's
    tokens read and written, every call's tokens, processing seconds; [] when no row has them.

    >>> print("\n".join(bill_markdown([{"system": "a", "mpm_tokens_in": 900.0, "mpm_tokens_out": 80.0,
    ...     "all_call_tokens": 1500.0, "latency_s": {"processing": {"mean": 2.5}}}, {"system": "b"}])))
    <BLANKLINE>
    ## The bill (a question, means; the judge not included)
    <BLANKLINE>
    | system | MPM tokens in | MPM tokens out | all-call tokens | processing s |
    |---|---:|---:|---:|---:|
    | a | 900.0 | 80.0 | 1500.0 | 2.50 |
    <BLANKLINE>
    - without call accounting (run before it): b
    """
    billed = [r for r in rows if r.get("all_call_tokens") is not None]
    if not billed:
        return []
    lines = [
        "",
        "## The bill (a question, means; the judge not included)",
        "",
        "| system | MPM tokens in | MPM tokens out | all-call tokens | processing s |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in billed:
        proc = ((r.get("latency_s") or {}).get("processing") or {}).get("mean")
        lines.append(
            f"| {r.get('label', r['system'])} | {_f(r.get('mpm_tokens_in'), 1)} | {_f(r.get('mpm_tokens_out'), 1)} | "
            f"{_f(r['all_call_tokens'], 1)} | {_f(proc, 2)} |"
        )
    if left := [r.get("label", r["system"]) for r in rows if r.get("all_call_tokens") is None]:
        lines += ["", f"- without call accounting (run before it): {', '.join(left)}"]
    return lines


def report_markdown(rep: Mapping) -> str:
    """The report as Markdown tables: systems, latency, paired differences."""
    m = rep["metric"]
    types = sorted({t for row in rep["rows"] for t in row["by_type"]})
    lines = [
        f"## Systems ({m}; paired intervals against {rep['reference']})",
        "",
        "| system | questions | errors | unparseable judge | "
        + m
        + " | "
        + " | ".join(types)
        + " | gold-keep recall | evidence recall | answer in memory | memory tokens | Gate Fmt. | rewritten "
        "| strict gate |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(types) + "---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rep["rows"]:
        lines.append(
            f"| {r.get('label', r['system'])} | {r['questions']} | {r['errors']} | "
            f"{_f(r['unparseable_judge'])} | "
            f"{_f(r['score'])} | "
            + " | ".join(_f(r["by_type"].get(t)) for t in types)
            + f" | {_f(r['gold_keep_recall'])} | {_f(r.get('evidence_recall'))} | "
            f"{_f(r.get('answer_recall_in_memory'))} | {_f(r['memory_tokens'], 1)} | {_f(r['gate_fmt'])} | "
            f"{_f(r.get('rewritten_rate'))} | {_f(r['gate_strict'])} |"
        )
    unfinished = {
        "interrupted": "interrupted (rerun `lazymem eval` into its folder to resume it)",
        "running": "still running (its folder is locked)",
        "failed": "failed (see its manifest)",
    }
    notes = [
        f"- {r['system']}: {unfinished[r.get('status')]}; its numbers cover the questions recorded so far"
        for r in rep["rows"]
        if r.get("status") in unfinished
    ]
    lines += ["", *notes] if notes else []
    lines += audited_markdown(rep["rows"])
    lines += bill_markdown(rep["rows"])
    lines += [
        "",
        "## Latency (seconds: mean / median / P90 / P95)",
        "",
        "| system | " + " | ".join(LATENCY_STAGES) + " |",
        "|---|" + "---|" * len(LATENCY_STAGES),
    ]
    for r in rep["rows"]:
        lat = r["latency_s"]
        lines.append(
            f"| {r.get('label', r['system'])} | "
            + " | ".join(
                "/".join(_f(lat[st].get(k), 2) for k in ("mean", "median", "p90", "p95")) for st in LATENCY_STAGES
            )
            + " |"
        )
    if rep["pairs"]:
        lines += [
            "",
            f"## Differences to {rep['reference']} (paired bootstrap 95% intervals)",
            "",
            f"| system | shared questions | {m} delta [95% CI] | memory tokens delta [95% CI] "
            "| evidence recall delta [95% CI] (n) | answer in memory delta [95% CI] (n) |",
            "|---|---:|---|---|---|---|",
        ]
        for p in rep["pairs"]:
            s, t = p["score"], p["memory_tokens"]
            lines.append(
                f"| {p['system']} | {s['n']} | {_interval(s)} | {_interval(t, 1)} | "
                + " | ".join(f"{_interval(p[k])} ({p[k]['n']})" if p.get(k) else "-" for k in MEASURES)
                + " |"
            )
    return "\n".join(lines) + "\n"


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``lazymem report`` options to `p` (the CLI's ``report`` subparser); returns it."""
    p.add_argument("runs", nargs="+", help="eval run folders (records.jsonl inside)")
    p.add_argument("--names", help="comma-separated system names (default: the folder names)")
    p.add_argument("--metric", choices=METRICS, help="the score (default: judge accuracy, else LoCoMo F1, else F1)")
    p.add_argument("--reference", help="the system the intervals compare with (default: the first)")
    p.add_argument("--resamples", type=int_in(1, 1_000_000), default=9999, help="bootstrap resamples")
    p.add_argument(
        "--out", type=path_text, help="write report.json, report.md and the Pareto figure (pareto.html / .png) here"
    )
    p.add_argument(
        "--paper",
        choices=("locomo", "longmemeval"),
        help="overlay the paper's reported points of this benchmark on the Pareto figure",
    )
    p.add_argument("--no-png", action="store_true", help="HTML figure only (PNG needs kaleido's Chromium)")
    return p
