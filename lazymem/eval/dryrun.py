"""What ``lazymem eval-table --dry-run`` prints: every cell's resolved config, the models and endpoints
the table needs, and how many model calls it will make; nothing is run, no model is loaded and
nothing goes over the network (a dataset is read only when it is on disk or synthetic).

Calls per cell: ``answer`` = questions; ``judge`` = questions when a judge is set; ``mpm``:
each method says (``Method.calls``): lazymem at most ``max_windows(n, w, L, s)`` a question (the
windows are known only after retrieval, so this is a bound), nanomemory one pruning call a question,
mem0 at least one extraction call per ``Memory.add`` (one per ``mem0.chunk`` messages of each
session of each history, once per history); embeddings: one query a question and, the first time
(the disk cache keeps them), what ``Method.documents`` counts (every message; nanomemory: every
turn) of the histories asked about; reranker pairs at most ``rerank_depth`` a question.

>>> max_windows(50, 2, 8, 7)  # the paper's n, w, L, s: merging never adds sub-windows here
50
>>> max_windows(10, 5, 8, 7)  # an 11-message window needs two 8-message sub-windows
20
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from lazymem.eval.table import EvalTableConfig, cell_changes, reported_line
from lazymem.pipeline.methods import method_class
from lazymem.pipeline.methods.construct import max_windows  # noqa: F401 (re-exported: the bound's home)
from lazymem.secrets import redact_urls


def on_disk(spec: str) -> bool:
    """Whether load_dataset(spec) reads a local file or the generator (never the hub)."""
    spec = str(spec).partition("?errata=")[0]  # the data file, not its errata (lazymem.data.datasets)
    for prefix in ("longmemeval:", "locomo:"):
        spec = spec[len(prefix) :] if spec.startswith(prefix) else spec
    if spec == "synthetic" or spec.startswith("synthetic:"):
        return True
    if "#" in spec and not Path(spec).exists():
        spec = spec.rpartition("#")[0]
    return Path(spec).expanduser().exists()


def _llm(cfg: Any) -> dict:
    where = (
        (redact_urls(cfg.base_url) if cfg.base_url else "https://api.openai.com/v1 (default)")
        if cfg.backend == "openai"
        else "scripted fake"
        if cfg.backend == "fake"
        else f"in process ({cfg.device})"
    )
    out = {"backend": cfg.backend, "model": cfg.model, "endpoint": where}
    if cfg.adapter:
        out["adapter"] = cfg.adapter
    if cfg.backend == "openai":
        out["api_key_env"] = cfg.api_key_env
    return out


def judge_settings(cfg: Any) -> dict | None:
    """How a cell's judge is asked: reply cap, thinking (chat_template_kwargs), thinking budget; None: no judge.

    A thinking model (Qwen3 thinks unless ``enable_thinking`` is false) under the official 10-token
    LongMemEval cap writes only thinking: the dry run shows these so that a config that forgets them
    is seen before a GPU hour is spent.
    """
    from lazymem.eval.judge import JUDGE_MAX_TOKENS

    if cfg.judge == "none" or cfg.pipeline.judge is None:
        return None
    j = cfg.pipeline.judge
    kwargs = dict(j.chat_template_kwargs or {})
    thinking = (
        "off (enable_thinking: false)"
        if kwargs.get("enable_thinking") is False
        else f"budget {j.thinking_budget} tokens ({j.thinking_budget_mode})"
        if j.thinking_budget
        else "on (enable_thinking: true), no budget"
        if kwargs.get("enable_thinking") is True
        else "the model's default (Qwen3: on), no budget"
    )
    return {
        "kind": cfg.judge,
        "max_tokens": cfg.judge_max_tokens or JUDGE_MAX_TOKENS[cfg.judge],
        "max_tokens_source": "judge_max_tokens" if cfg.judge_max_tokens else "official",
        "chat_template_kwargs": kwargs or None,
        "thinking_budget": j.thinking_budget,
        "thinking_budget_mode": j.thinking_budget_mode if j.thinking_budget else None,
        "thinking": thinking,
    }


def open_settings(cfg: Any) -> dict:
    """The settings the paper leaves open and the project chose (``lazymem.eval.paper.PROJECT_CHOICES``),
    as this cell resolves them."""
    from lazymem.eval.paper import PROJECT_CHOICES

    out = {}
    for key in PROJECT_CHOICES:
        v: Any = cfg
        for part in key.split("."):
            v = getattr(v, part, None)
        if dataclasses.is_dataclass(v):
            v = {k: x for k, x in dataclasses.asdict(v).items() if x not in (None, (), {})}
        out[key] = v
    return out


def cell_models(cfg: Any) -> dict[str, dict]:
    """The models one cell uses, by role (mpm, answer, judge, dense, reranker)."""
    p = cfg.pipeline
    method = method_class(p.method)
    out = {"answer": _llm(p.answer)}
    if method.uses_mpm:
        out["mpm"] = _llm(p.mpm)
    if cfg.judge != "none" and p.judge is not None:
        out["judge"] = _llm(p.judge)
    r = p.retrieval
    if method.uses_dense and r.dense_model:
        out["dense"] = {
            "backend": "openai" if r.dense_base_url else "sentence-transformers",
            "model": r.dense_model,
            "endpoint": redact_urls(r.dense_base_url) if r.dense_base_url else f"in process ({r.device})",
        }
    if method.retrieves and r.reranker:
        out["reranker"] = {"backend": r.reranker_backend, "model": r.reranker, "endpoint": f"in process ({r.device})"}
    return out


def cell_calls(cfg: Any, dataset: Any, questions: list | None) -> dict:
    """Model calls of one cell: exact counts, or bounds named ``*_max`` / ``*_min`` (None: unknown offline)."""
    p, n_q = cfg.pipeline, (len(questions) if questions is not None else None)
    method = method_class(p.method)
    hists = [dataset.histories[h] for h in dict.fromkeys(q.history_id for q in questions)] if questions else []

    def total(per_question):
        return None if questions is None else sum(per_question(q) for q in questions)

    calls: dict[str, Any] = {
        "answer": n_q,
        "judge": n_q if "judge" in cell_models(cfg) else 0,
        **method.calls(p, dataset, questions, hists),
    }
    if "dense" in cell_models(cfg):
        calls["embed_queries"] = n_q
        docs = method.documents(hists)
        if docs is None:
            calls["embed_memories"] = None  # what the method embeds is known only after it ran (Mem0's facts)
        else:
            calls["embed_documents_max"] = docs if questions is not None else None
    if "reranker" in cell_models(cfg):
        calls["rerank_pairs_max"] = total(lambda q: min(p.retrieval.rerank_depth, len(dataset.histories[q.history_id])))
    return calls


def current_state(cell: Path, row: str, named: bool, n: int) -> str:
    """The plan's word for a cell whose results match its inputs: how much of it is recorded here, and
    what a run does with it (``run_eval_table``: a summary without records is rerun only when named)."""
    from lazymem.eval.runfiles import RECORDS_FILE, latest_records, read_records
    from lazymem.eval.table import summary_only

    if summary_only(cell):
        if named:
            return f"finished, summary only (no records here): reruns its {n} questions in place"
        return f"finished, summary only (no records here): shown as it is; --set only=[{row}] reruns its {n} questions"
    records = cell / RECORDS_FILE
    done = len(latest_records(read_records(records)[0])) if records.exists() else 0
    return f"finished ({done} of {n} recorded)" if done >= n else f"resumable ({done} of {n} recorded)"


def dry_run(config: EvalTableConfig) -> dict:
    """The plan of an eval-table: cells (resolved config, data, questions, state, calls), the models
    and endpoints it needs (deduplicated), totals and warnings. Runs nothing, loads no model."""
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, select_questions
    from lazymem.eval.judge_audit import judge_differences
    from lazymem.secrets import redact

    out = Path(config.output_dir)
    cells, datasets, models, warnings = [], {}, {}, []
    audits = config.judge_audits()  # a bad file: the error
    for set_name in config.sets:
        for row in config.rows:
            cfg = EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, row))
            if set_name in audits and cfg.judge != "none" and (differ := judge_differences(audits[set_name][1], cfg)):
                warnings.append(
                    f"{set_name} / {row}: the judge audit {audits[set_name][0]} is of another judge "
                    f"({'; '.join(differ)}): its rates will not stand beside this cell"
                )
            p, key = cfg.pipeline, (cfg.dataset, cfg.subset)
            if key not in datasets:
                datasets[key] = load_dataset(cfg.dataset, subset=cfg.subset) if on_disk(cfg.dataset) else None
            ds = datasets[key]
            questions = select_questions(ds, cfg) if ds is not None else None
            if config.only and row not in config.only:
                state = "not run (only)"
            else:
                changes = cell_changes(out / set_name / row, cfg, ds) if ds is not None else None
                state = (
                    "new"
                    if changes is None and ds is not None
                    else "unknown (dataset not on disk)"
                    if ds is None
                    else f"stale, will be recomputed ({'; '.join(changes)})"
                    if changes
                    else current_state(out / set_name / row, row, bool(config.only), len(questions or ()))
                )
            used = cell_models(cfg)
            for role, m in used.items() if state != "not run (only)" else ():
                entry = models.setdefault(tuple(sorted(m.items())), dict(m, roles=[], cells=[]))
                entry["roles"] = sorted(set(entry["roles"]) | {role})
                entry["cells"] = sorted(set(entry["cells"]) | {f"{set_name}/{row}"})
            cells.append(
                {
                    "set": set_name,
                    "row": row,
                    "state": state,
                    "method": p.method,
                    "not_in_paper": row in config.not_in_paper,
                    "models": used,
                    "judge": cfg.judge,
                    "judge_settings": judge_settings(cfg),
                    "open_settings": open_settings(cfg),
                    "retrieval": {
                        "n": p.retrieval.n,
                        "sparse": p.retrieval.sparse,
                        "dense_model": p.retrieval.dense_model,
                        "reranker": p.retrieval.reranker,
                        "rrf_k": p.retrieval.rrf_k,
                    },
                    "window": {"w": p.window.w, "L": p.window.L, "s": p.window.s},
                    "method_settings": method_class(p.method).settings(p),
                    "data": {
                        "dataset": redact_urls(cfg.dataset),
                        "subset": cfg.subset,
                        "split": cfg.split,
                        "split_seed": cfg.split_seed if cfg.split else None,
                        "limit": cfg.limit,
                        "on_disk": ds is not None,
                        "sha256": ds.sha256 if ds is not None else None,
                    },
                    "questions": len(questions) if questions is not None else None,
                    "calls": cell_calls(cfg, ds, questions),
                    "config": redact(cfg.to_dict()),
                }
            )
    served: dict[str, set] = {}
    for m in models.values():
        if m["backend"] == "openai":
            served.setdefault(m["endpoint"], set()).add(m["model"])
    warnings += [
        f"{url} is named with {len(names)} models ({', '.join(sorted(names))}): one vLLM server serves one "
        "unless started with several --served-model-name / --lora-modules"
        for url, names in served.items()
        if len(names) > 1
    ]
    warnings += [
        f"dataset {spec!r} is not on disk: it is fetched at run time, so question and call counts are unknown here"
        for (spec, _), ds in datasets.items()
        if ds is None
    ]
    totals: dict[str, Any] = {}
    for c in cells:
        if c["state"] == "not run (only)":
            continue
        for k, v in c["calls"].items():
            if k.endswith("per_question"):
                continue
            totals[k] = None if v is None or totals.get(k, 0) is None else totals.get(k, 0) + v
    from lazymem.eval.table import reported_only

    not_run = {
        set_name: reported_only(
            config.paper_systems_not_run, next((c["data"]["dataset"] for c in cells if c["set"] == set_name), None)
        )
        for set_name in config.sets
    }
    warnings += [
        f"{c['set']} / {c['row']}: the judge thinks with no budget under max_tokens "
        f"{c['judge_settings']['max_tokens']}: its replies may be all thinking and give no verdict"
        for c in cells
        if c["judge_settings"]
        and c["state"] != "not run (only)"
        and "no budget" in c["judge_settings"]["thinking"]
        and c["judge_settings"]["max_tokens"] < 4096
    ]
    return {
        "base": config.base,
        "output_dir": config.output_dir,
        "cells": cells,
        "paper_systems_not_run": {k: v for k, v in not_run.items() if v},
        "models": sorted(models.values(), key=lambda m: (m["backend"], m["model"], m["endpoint"])),
        "api_key_envs": sorted({m["api_key_env"] for m in models.values() if m.get("api_key_env")}),
        "totals": totals,
        "warnings": warnings,
    }


def _n(v: Any) -> str:
    return "unknown" if v is None else f"{v:,}"


CALL_NAMES = {
    "answer": "answer",
    "judge": "judge",
    "mpm": "MPM",
    "mpm_max": "MPM <=",
    "mpm_min": "MPM >=",
    "embed_queries": "query embeddings",
    "embed_documents_max": "document embeddings <=",
    "embed_memories": "memory embeddings (one per fact Mem0 extracts)",
    "rerank_pairs_max": "reranker pairs <=",
}


def dry_run_text(plan: dict) -> str:
    """The plan as the text ``lazymem eval-table --dry-run`` prints."""
    lines = [
        f"eval-table dry run: base {plan['base']}, cells in {plan['output_dir']}/<set>/<row> "
        "(nothing run, no model loaded, no network)",
        "",
        "cells:",
    ]
    for c in plan["cells"]:
        d, r, win = c["data"], c["retrieval"], c["window"]
        mark = " (ours, not in the paper)" if c.get("not_in_paper") else ""
        lines.append(f"  {c['set']} / {c['row']}{mark}: method {c['method']} [{c['state']}]")
        for role, m in c["models"].items():
            extra = f" + adapter {m['adapter']}" if m.get("adapter") else ""
            lines.append(f"    {role:<8} {m['model']}{extra} ({m['backend']}, {m['endpoint']})")
        settings = "".join(f", {k}={v}" for k, v in c["method_settings"].items())
        lines.append(
            f"    retrieval n={r['n']} sparse={r['sparse']} dense={r['dense_model']} "
            f"reranker={r['reranker']}; "
            f"window w={win['w']} L={win['L']} s={win['s']}; judge {c['judge']}{settings}"
        )
        js = c.get("judge_settings")
        if js:
            kw = f", chat_template_kwargs {js['chat_template_kwargs']}" if js["chat_template_kwargs"] else ""
            lines.append(
                f"    judge {js['kind']}: max_tokens {js['max_tokens']} ({js['max_tokens_source']}), "
                f"thinking {js['thinking']}{kw}"
            )
        split = f", split {d['split']} (seed {d['split_seed']})" if d["split"] else ""
        lines.append(
            f"    data {d['dataset']}{' subset ' + d['subset'] if d['subset'] else ''}{split}"
            f"{', limit ' + str(d['limit']) if d['limit'] else ''}: {_n(c['questions'])} questions"
            + ("" if d["on_disk"] else " (not on disk: fetched at run time)")
        )
        calls = c["calls"]
        lines.append(
            "    calls: "
            + ", ".join(f"{CALL_NAMES[k]} {_n(v)}" for k, v in calls.items() if k in CALL_NAMES)
            + (f" (MPM <= {calls['mpm_max_per_question']} a question)" if "mpm_max_per_question" in calls else "")
        )
    first = next((c for c in plan["cells"] if c.get("open_settings")), None)
    if first:
        lines += [
            "",
            "settings the paper leaves open, as the project chose them (first cell; "
            "lazymem.eval.paper.PROJECT_CHOICES says why):",
        ]
        lines += [f"  {k} = {v}" for k, v in first["open_settings"].items()]
    for set_name, rows in (plan.get("paper_systems_not_run") or {}).items():
        lines += ["", f"systems of the paper's Table 1 not run here ({set_name}; the paper's reported numbers):"]
        lines += [f"  {reported_line(r)}" for r in rows]
    lines += ["", "models and endpoints (deduplicated):"]
    for m in plan["models"]:
        extra = f" + adapter {m['adapter']}" if m.get("adapter") else ""
        lines.append(
            f"  {m['model']}{extra}: {m['backend']}, {m['endpoint']}; as {', '.join(m['roles'])} "
            f"in {len(m['cells'])} cell(s)"
        )
    if plan["api_key_envs"]:
        lines.append(
            f"  API keys read from the environment variables: {', '.join(plan['api_key_envs'])} "
            "(unset is fine for a local server started without --api-key)"
        )
    lines += [
        "",
        "model calls of the cells that run (<= an upper bound: windows are known only after retrieval; "
        ">= a lower bound; embeddings are first-time ones: the disk cache keeps them, so cells that share "
        "a dense model embed each message once):",
    ]
    lines.append(
        "  " + ", ".join(f"{CALL_NAMES[k]} {_n(plan['totals'][k])}" for k in CALL_NAMES if k in plan["totals"])
    )
    if plan["warnings"]:
        lines += ["", "warnings:"] + [f"  - {w}" for w in plan["warnings"]]
    return "\n".join(lines) + "\n"
