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

from pathlib import Path
from typing import Any

from lazymem.eval.table import EvalTableConfig, cell_changes
from lazymem.pipeline.methods import method_class
from lazymem.pipeline.methods.construct import max_windows  # noqa: F401 (re-exported: the bound's home)
from lazymem.secrets import redact_urls


def on_disk(spec: str) -> bool:
    """Whether load_dataset(spec) reads a local file or the generator (never the hub)."""
    spec = str(spec)
    for prefix in ("longmemeval:", "locomo:"):
        spec = spec[len(prefix):] if spec.startswith(prefix) else spec
    if spec == "synthetic" or spec.startswith("synthetic:"):
        return True
    if "#" in spec and not Path(spec).exists():
        spec = spec.rpartition("#")[0]
    return Path(spec).expanduser().exists()


def _llm(cfg: Any) -> dict:
    where = (redact_urls(cfg.base_url) if cfg.base_url else "https://api.openai.com/v1 (default)") \
        if cfg.backend == "openai" else "scripted fake" if cfg.backend == "fake" else f"in process ({cfg.device})"
    out = {"backend": cfg.backend, "model": cfg.model, "endpoint": where}
    if cfg.adapter:
        out["adapter"] = cfg.adapter
    if cfg.backend == "openai":
        out["api_key_env"] = cfg.api_key_env
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
        out["dense"] = {"backend": "openai" if r.dense_base_url else "sentence-transformers", "model": r.dense_model,
                        "endpoint": redact_urls(r.dense_base_url) if r.dense_base_url else f"in process ({r.device})"}
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

    calls: dict[str, Any] = {"answer": n_q, "judge": n_q if "judge" in cell_models(cfg) else 0,
                             **method.calls(p, dataset, questions, hists)}
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


def dry_run(config: EvalTableConfig) -> dict:
    """The plan of an eval-table: cells (resolved config, data, questions, state, calls), the models
    and endpoints it needs (deduplicated), totals and warnings. Runs nothing, loads no model."""
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, select_questions
    from lazymem.secrets import redact

    out = Path(config.output_dir)
    cells, datasets, models, warnings = [], {}, {}, []
    for set_name in config.sets:
        for row in config.rows:
            cfg = EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, row))
            p, key = cfg.pipeline, (cfg.dataset, cfg.subset)
            if key not in datasets:
                datasets[key] = load_dataset(cfg.dataset, subset=cfg.subset) if on_disk(cfg.dataset) else None
            ds = datasets[key]
            questions = select_questions(ds, cfg) if ds is not None else None
            if config.only and row not in config.only:
                state = "not run (only)"
            else:
                changes = cell_changes(out / set_name / row, cfg, ds) if ds is not None else None
                state = ("new" if changes is None and ds is not None else "unknown (dataset not on disk)" if ds is None
                         else f"stale, will be recomputed ({'; '.join(changes)})" if changes
                         else "finished or resumable")
            used = cell_models(cfg)
            for role, m in used.items() if state != "not run (only)" else ():
                entry = models.setdefault(tuple(sorted(m.items())), dict(m, roles=[], cells=[]))
                entry["roles"] = sorted(set(entry["roles"]) | {role})
                entry["cells"] = sorted(set(entry["cells"]) | {f"{set_name}/{row}"})
            cells.append({
                "set": set_name, "row": row, "state": state, "method": p.method,
                "models": used, "judge": cfg.judge,
                "retrieval": {"n": p.retrieval.n, "sparse": p.retrieval.sparse, "dense_model": p.retrieval.dense_model,
                              "reranker": p.retrieval.reranker, "rrf_k": p.retrieval.rrf_k},
                "window": {"w": p.window.w, "L": p.window.L, "s": p.window.s},
                "method_settings": method_class(p.method).settings(p),
                "data": {"dataset": redact_urls(cfg.dataset), "subset": cfg.subset, "split": cfg.split,
                         "split_seed": cfg.split_seed if cfg.split else None, "limit": cfg.limit,
                         "on_disk": ds is not None, "sha256": ds.sha256 if ds is not None else None},
                "questions": len(questions) if questions is not None else None,
                "calls": cell_calls(cfg, ds, questions),
                "config": redact(cfg.to_dict()),
            })
    served: dict[str, set] = {}
    for m in models.values():
        if m["backend"] == "openai":
            served.setdefault(m["endpoint"], set()).add(m["model"])
    warnings += [f"{url} is named with {len(names)} models ({', '.join(sorted(names))}): one vLLM server serves one "
                 "unless started with several --served-model-name / --lora-modules" for url, names in served.items()
                 if len(names) > 1]
    warnings += [f"dataset {spec!r} is not on disk: it is fetched at run time, so question and call counts are "
                 "unknown here" for (spec, _), ds in datasets.items() if ds is None]
    totals: dict[str, Any] = {}
    for c in cells:
        if c["state"] == "not run (only)":
            continue
        for k, v in c["calls"].items():
            if k.endswith("per_question"):
                continue
            totals[k] = None if v is None or totals.get(k, 0) is None else totals.get(k, 0) + v
    return {"base": config.base, "output_dir": config.output_dir, "cells": cells,
            "models": sorted(models.values(), key=lambda m: (m["backend"], m["model"], m["endpoint"])),
            "api_key_envs": sorted({m["api_key_env"] for m in models.values() if m.get("api_key_env")}),
            "totals": totals, "warnings": warnings}


def _n(v: Any) -> str:
    return "unknown" if v is None else f"{v:,}"


CALL_NAMES = {"answer": "answer", "judge": "judge", "mpm": "MPM", "mpm_max": "MPM <=", "mpm_min": "MPM >=",
              "embed_queries": "query embeddings", "embed_documents_max": "document embeddings <=",
              "embed_memories": "memory embeddings (one per fact Mem0 extracts)",
              "rerank_pairs_max": "reranker pairs <="}


def dry_run_text(plan: dict) -> str:
    """The plan as the text ``lazymem eval-table --dry-run`` prints."""
    lines = [f"eval-table dry run: base {plan['base']}, cells in {plan['output_dir']}/<set>/<row> "
             "(nothing run, no model loaded, no network)", "", "cells:"]
    for c in plan["cells"]:
        d, r, win = c["data"], c["retrieval"], c["window"]
        lines.append(f"  {c['set']} / {c['row']}: method {c['method']} [{c['state']}]")
        for role, m in c["models"].items():
            extra = f" + adapter {m['adapter']}" if m.get("adapter") else ""
            lines.append(f"    {role:<8} {m['model']}{extra} ({m['backend']}, {m['endpoint']})")
        settings = "".join(f", {k}={v}" for k, v in c["method_settings"].items())
        lines.append(f"    retrieval n={r['n']} sparse={r['sparse']} dense={r['dense_model']} "
                     f"reranker={r['reranker']}; "
                     f"window w={win['w']} L={win['L']} s={win['s']}; judge {c['judge']}{settings}")
        split = f", split {d['split']} (seed {d['split_seed']})" if d["split"] else ""
        lines.append(f"    data {d['dataset']}{' subset ' + d['subset'] if d['subset'] else ''}{split}"
                     f"{', limit ' + str(d['limit']) if d['limit'] else ''}: {_n(c['questions'])} questions"
                     + ("" if d["on_disk"] else " (not on disk: fetched at run time)"))
        calls = c["calls"]
        lines.append("    calls: " + ", ".join(f"{CALL_NAMES[k]} {_n(v)}" for k, v in calls.items() if k in CALL_NAMES)
                     + (f" (MPM <= {calls['mpm_max_per_question']} a question)" if "mpm_max_per_question" in calls
                        else ""))
    lines += ["", "models and endpoints (deduplicated):"]
    for m in plan["models"]:
        extra = f" + adapter {m['adapter']}" if m.get("adapter") else ""
        lines.append(f"  {m['model']}{extra}: {m['backend']}, {m['endpoint']}; as {', '.join(m['roles'])} "
                     f"in {len(m['cells'])} cell(s)")
    if plan["api_key_envs"]:
        lines.append(f"  API keys read from the environment variables: {', '.join(plan['api_key_envs'])} "
                     "(unset is fine for a local server started without --api-key)")
    lines += ["", "model calls of the cells that run (<= an upper bound: windows are known only after retrieval; "
              ">= a lower bound; embeddings are first-time ones: the disk cache keeps them, so cells that share "
              "a dense model embed each message once):"]
    lines.append("  " + ", ".join(f"{CALL_NAMES[k]} {_n(plan['totals'][k])}"
                                  for k in CALL_NAMES if k in plan["totals"]))
    if plan["warnings"]:
        lines += ["", "warnings:"] + [f"  - {w}" for w in plan["warnings"]]
    return "\n".join(lines) + "\n"
