"""``lazymem eval-table --config <table> --smoke``: the table's every cell on CPU, offline, in minutes.

A paper table (configs/tables/paper_table1_*.yaml) names a GPU node's models: Qwen3-32B answering,
judging and building memory, LazyMem-4B, Qwen3-Embedding-8B, BGE-Reranker-v2-M3. The smoke run keeps
every setting of every cell exactly and replaces only

- the served models (every ``backend: openai`` role): one scripted server of the Qwen3 family on a
  loopback port (``lazymem.llm.scripted``: the real Qwen3 tokenizer and chat template, thinking unless
  ``enable_thinking`` is false, vLLM's context check, ``max_tokens`` cut-offs, the reasoning parser's
  ``reasoning`` field), reached through the same client the GPU node uses, with the same model names;
- in-process models on a GPU (``device: cuda``): the same model on the CPU, on llama.cpp where the model
  is the GGUF SmolLM2 (its fast CPU engine; transformers otherwise);
- the retrieval models: Qwen3-Embedding-8B by the offline MiniLM, no reranker (none ships offline);
- the data size: ``questions`` questions a set (the first in dataset order); a dataset that is not on
  disk (LongMemEval-S from the hub) by the LongMemEval_S haystacks in ``../shared/data`` when present,
  else the embedded synthetic set (LongMemEval's question types), without the split;
- the LLM response cache: off, so every call reaches the server.

It prints what it replaced, runs the cells through ``run_eval_table`` into a fresh folder, and fails
(``SmokeFailed``) on what a real run would trip on: a cell with errors or unanswered questions, a judge
reply with no verdict, a judge that gives the wrong verdict on the gold answer or on a wrong one, an
answerer's reasoning lost, an MPM output the gate cannot read, a prompt over the served context.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.eval.dryrun import on_disk

LONGMEMEVAL_LOCAL = "../shared/data/longmemeval/s_fragment_3haystacks.json"
SYNTHETIC = "synthetic:messages=400,seed=0,histories=4,questions=12"
MINILM = "minilm-offline"
WRONG_ANSWER = "Zanzibar, in the winter of 1887, with a purple umbrella."


class SmokeFailed(RuntimeError):
    """A smoke run found what a real run would trip on (the message lists every failed check)."""


@dataclass
class Plan:
    """What the smoke replaces, per cell and in all (setting, the config's value, the smoke's value)."""

    replaced: dict[tuple[str, str, str], set] = field(default_factory=dict)

    def add(self, setting: str, paper: Any, smoke: Any, cell: str) -> None:
        self.replaced.setdefault((setting, str(paper), str(smoke)), set()).add(cell)

    def text(self) -> str:
        rows = sorted(self.replaced.items())
        w = max([len(s) for (s, _, _), _ in rows] + [7])
        lines = [f"  {'setting':<{w}}  config value -> smoke value  [cells]"]
        for (setting, paper, smoke), cells in rows:
            lines.append(f"  {setting:<{w}}  {paper} -> {smoke}  [{len(cells)} cell(s)]")
        return "\n".join(lines)


def cell_smoke_overrides(cfg: Any, url: str, cell: str, plan: Plan) -> list[str]:
    """KEY=VALUE overrides that replace one cell's models (see the module docstring)."""
    from lazymem.pipeline.methods import method_class
    from lazymem.secrets import redact_urls

    out: list[str] = []
    p = cfg.pipeline
    for role in ("mpm", "answer", "judge"):
        llm = getattr(p, role)
        if (
            llm is None
            or (role == "mpm" and not method_class(p.method).uses_mpm)
            or (role == "judge" and cfg.judge == "none")
        ):
            continue
        if llm.backend == "openai":
            out.append(f"pipeline.{role}.base_url={url}")
            plan.add(
                f"pipeline.{role}",
                f"{llm.model} at {redact_urls(llm.base_url or 'api.openai.com')}",
                f"{llm.model} on the scripted Qwen3-family server",
                cell,
            )
        elif llm.device != "cpu":
            out.append(f"pipeline.{role}.device=cpu")
            engine = llm.backend
            if llm.backend == "transformers" and llm.model == "smollm2-offline" and _llamacpp_runs_smollm2():
                out.append(f"pipeline.{role}.backend=llamacpp")
                engine = "llamacpp"
            plan.add(
                f"pipeline.{role}", f"{llm.model} ({llm.backend}, {llm.device})", f"{llm.model} ({engine}, cpu)", cell
            )
    r = p.retrieval
    if r.dense_model and r.dense_model != MINILM and not r.dense_base_url:
        out.append(f"pipeline.retrieval.dense_model={MINILM}")
        out.append("pipeline.retrieval.query_prompt_name=null")
        plan.add("pipeline.retrieval.dense_model", r.dense_model, f"{MINILM} (all-MiniLM-L6-v2, offline)", cell)
    if r.reranker:
        out.append("pipeline.retrieval.reranker=null")
        plan.add("pipeline.retrieval.reranker", r.reranker, "none (no reranker ships offline)", cell)
    if r.device != "cpu":
        out.append("pipeline.retrieval.device=cpu")
        plan.add("pipeline.retrieval.device", r.device, "cpu", cell)
    if cfg.llm_cache:
        out.append("llm_cache=false")
        plan.add("llm_cache", True, "false (every call reaches the server)", cell)
    return out


def _llamacpp_runs_smollm2() -> bool:
    """Whether llama.cpp is installed and the SmolLM2 GGUF ships here (the fast CPU engine for the row)."""
    from lazymem.llm.models import smollm2_gguf

    try:
        import llama_cpp  # noqa: F401

        smollm2_gguf()
        return True
    except Exception:
        return False


def set_smoke_overrides(cfg: Any, questions: int, data: str | None, cell: str, plan: Plan) -> list[str]:
    """KEY=VALUE overrides that shrink one set's data (and replace a dataset that is not on disk)."""
    out = [f"limit={questions}", "stratified=false"]
    plan.add("questions a set", cfg.limit or "all", questions, cell)
    spec = data or (cfg.dataset if on_disk(cfg.dataset) else None)
    if spec is None:
        spec = LONGMEMEVAL_LOCAL if Path(LONGMEMEVAL_LOCAL).exists() and cfg.judge != "locomo" else None
        if spec is None and cfg.judge == "locomo":
            raise SmokeFailed(
                f"{cell}: the LoCoMo dataset {cfg.dataset!r} is not on disk; give a local copy with "
                "--smoke-data PATH#paper"
            )
        spec = spec or SYNTHETIC
    if spec != cfg.dataset:
        out.append(f"dataset={spec}")
        plan.add("dataset", cfg.dataset, spec, cell)
    if cfg.split and spec != cfg.dataset:
        out.append("split=null")
        plan.add("split", f"{cfg.split} (seed {cfg.split_seed})", "none (all questions of the local data)", cell)
    return out


def smoke_table(config: Any, url: str, questions: int, data: str | None, output_dir: str) -> tuple[Any, Plan]:
    """The table config with every cell's replacements appended (rows: models; sets: data), and the plan."""
    import dataclasses

    from lazymem.eval.config import EvalConfig
    from lazymem.eval.table import _overrides

    plan = Plan()
    rows, sets = {}, {}
    for set_name in config.sets:
        first = EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, next(iter(config.rows))))
        sets[set_name] = [
            *_overrides(config.sets[set_name] or {}, f"sets.{set_name}"),
            *set_smoke_overrides(first, questions, data, set_name, plan),
        ]
    for row in config.rows:
        extra: list[str] = []
        for set_name in config.sets:
            cfg = EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, row))
            extra += [o for o in cell_smoke_overrides(cfg, url, f"{set_name}/{row}", plan) if o not in extra]
        rows[row] = [*_overrides(config.rows[row] or {}, f"rows.{row}"), *extra]
    new = dataclasses.replace(config, sets=sets, rows=rows, output_dir=output_dir, executor=None, shards=1)
    return new, plan


def _records(folder: Path) -> list[dict]:
    path = folder / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judge_probe(cfg: Any, dataset: Any) -> list[str]:
    """Ask the cell's judge (client, reply cap and kind as configured) about the gold answer and a wrong
    one for the first judged question; the failures (an empty list when both verdicts are right)."""
    from lazymem.eval.config import select_questions
    from lazymem.eval.judge import judge_answer
    from lazymem.llm.factory import make_client

    qs = [q for q in select_questions(dataset, cfg) if q.answer and not q.abstention and q.category != 5]
    if not qs:
        return ["judge probe: no question with a gold answer among the selected ones"]
    q, client, fails = qs[0], make_client(cfg.pipeline.judge), []
    for response, want in ((q.answer, True), (WRONG_ANSWER, False)):
        got = judge_answer(
            client,
            q,
            response,
            cfg.judge,
            seed=cfg.seed,
            max_tokens=cfg.judge_max_tokens,
            json_mode=cfg.judge_json_mode,
        )
        if got["label"] is not want:
            fails.append(
                f"judge probe on {q.id}: the {'gold' if want else 'wrong'} answer got label "
                f"{got['label']!r} (error: {got['error']}; reply {str(got['response'])[:80]!r})"
            )
    return fails


def check_cells(config: Any, out: Path, family: Any) -> tuple[list[str], list[str]]:
    """(what passed, what failed) over the finished smoke cells."""
    from lazymem.eval.config import EvalConfig
    from lazymem.eval.table import CellInputs
    from lazymem.pipeline.methods import method_class
    from lazymem.sweep import Cell

    passed, failed = [], []
    prepared = CellInputs(config)
    for set_name in config.sets:
        probed = False
        for row in config.rows:
            if config.only and row not in config.only:
                continue
            name, folder = f"{set_name}/{row}", out / set_name / row
            summary = json.loads((folder / "summary.json").read_text()) if (folder / "summary.json").exists() else {}
            counts = summary.get("counts") or {}
            cfg = EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, row))
            if not counts or counts.get("ok") != counts.get("selected") or counts.get("error"):
                errors = [r.get("error") for r in _records(folder) if r.get("status") != "ok"][:2]
                failed.append(f"{name}: {counts.get('ok')} of {counts.get('selected')} questions ok; errors {errors}")
                continue
            recs = [r for r in _records(folder) if r.get("status") == "ok"]
            acc = summary.get("accuracy") or {}
            if cfg.judge != "none":
                if acc.get("judge_no_verdict") or acc.get("judge_errors"):
                    failed.append(f"{name}: {acc.get('judge_no_verdict')} judge replies with no verdict")
                else:
                    passed.append(
                        f"{name}: {acc.get('n')} judged, every reply a verdict (accuracy {acc.get('overall')})"
                    )
            thinks = (
                cfg.pipeline.answer.backend == "openai"
                and (cfg.pipeline.answer.chat_template_kwargs or {}).get("enable_thinking", True) is not False
            )
            if thinks:
                lost = [r["question_id"] for r in recs if not r.get("answer_think") or "<think>" in r.get("answer", "")]
                (failed if lost else passed).append(
                    f"{name}: answerer's reasoning "
                    + (f"lost on {lost[:3]}" if lost else f"kept beside the answer on {len(recs)} of {len(recs)}")
                )
            empty = [r["question_id"] for r in recs if not (r.get("memory") or "").strip()]
            if len(empty) == len(recs):  # a method that builds nothing (Mem0 extracting no fact) is broken
                failed.append(f"{name}: empty memory on every question ({len(recs)})")
            cons = summary.get("construction") or {}
            served_mpm = cfg.pipeline.mpm.backend == "openai" and method_class(cfg.pipeline.method).uses_mpm
            if cons.get("n_windows") and served_mpm:
                fmt = cons.get("gate_fmt")
                (failed if fmt != 1.0 else passed).append(
                    f"{name}: MPM outputs the gate reads: {fmt} of {cons.get('n_windows')} windows"
                )
            if cfg.judge != "none" and not probed:
                probed = True
                fails = judge_probe(cfg, prepared(Cell((set_name, row), folder))[1])
                failed += [f"{set_name}: {f}" for f in fails]
                if not fails:
                    passed.append(
                        f"{set_name}: the judge as configured says correct to the gold answer and wrong to a wrong one"
                    )
    for model, n in sorted(family.max_prompt_tokens.items()):
        passed.append(f"{model}: longest prompt {n:,} tokens (context {family.max_model_len:,})")
    return passed, failed


@contextlib.contextmanager
def fresh_stores(root: Path):
    """A cache root of the smoke's own for what a run builds from model replies (Mem0's stores, the LLM
    response cache), sharing the tokenizers, converted models and text embeddings of the usual one
    (they do not depend on any reply): a store built against another server is never reused."""
    from lazymem.paths import CACHE_ENV, cache_root

    old = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("tokenizers", "models", "embeddings"):
        if (old / sub).exists() and not (root / sub).exists():
            (root / sub).symlink_to((old / sub).resolve(), target_is_directory=True)
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(root)
    try:
        yield root
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def run_smoke(
    config: Any,
    questions: int = 1,
    data: str | None = None,
    output_dir: str | None = None,
    progress: bool = True,
    echo=print,
) -> dict:
    """Run the table's smoke (see the module docstring); the report, or SmokeFailed."""
    from lazymem.eval.table import run_eval_table
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer

    t0 = time.perf_counter()
    out = Path(output_dir or f"runs/smoke/{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.iterdir()):
        raise SmokeFailed(
            f"smoke output folder {out} is not empty: a smoke run starts from nothing (give another --out)"
        )
    family = ScriptedQwen3()
    with fresh_stores(out / "cache"), ScriptedServer(family) as url:
        smoke, plan = smoke_table(config, url, questions, data, str(out))
        echo(f"smoke run of {config.base}'s table into {out}: the paper's settings in every cell, replacing:")
        echo(plan.text())
        table = run_eval_table(smoke, progress=progress)
        passed, failed = check_cells(smoke, out, family)
    seconds = time.perf_counter() - t0
    echo("checks:")
    for line in passed:
        echo(f"  ok    {line}")
    for line in failed:
        echo(f"  FAIL  {line}")
    echo(
        f"smoke {'FAILED' if failed else 'passed'} in {seconds:.0f} s ({len(family.requests)} requests to the "
        f"scripted server); table: {out / 'table.md'}"
    )
    report = {
        "output_dir": str(out),
        "seconds": seconds,
        "passed": passed,
        "failed": failed,
        "replaced": [
            {"setting": s, "config": a, "smoke": b, "cells": sorted(c)}
            for (s, a, b), c in sorted(plan.replaced.items())
        ],
        "requests": len(family.requests),
        "table": table,
    }
    (out / "smoke.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    if failed:
        raise SmokeFailed("smoke run failed:\n" + "\n".join(f"  {f}" for f in failed))
    return report
