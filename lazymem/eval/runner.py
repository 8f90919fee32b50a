"""Run the query pipeline over a dataset, judge the answers, and record everything.

``evaluate(EvalConfig(...), out_dir)`` writes, in ``out_dir``:

- ``records.jsonl``: one JSON line per question (pool with per-stage ranks, windows with
  raw MPM outputs and gate verdicts, merged decisions, memory, answer, judge prompt,
  response and label, LoCoMo F1, memory tokens, wall times, error). Each line is appended,
  flushed and fsynced as soon as its question is done, so a killed run loses nothing
  finished. A rerun resumes: questions recorded "ok" are skipped, those recorded "error"
  are redone (their old lines move to ``errors.jsonl``), a half-written last line is dropped.
- ``summary.json``: accuracy per type (judge labels), LoCoMo F1 per category, Gate Fmt.,
  gold-keep recall, memory tokens, latency percentiles per stage, counts, and the ratios to
  a baseline run when one is given.
- ``manifest.json``: resolved config (API keys never, only the NAME of their environment
  variable), git commit, package versions, dataset sha256, prompt hashes, model ids, the
  reranker that ran, times and command line of every run into this folder.
- ``windows.jsonl``: the same windows, one line each, for the window explorer notebook.

Model calls go through the LLM disk cache (``llm_cache_dir``, default
``$LAZYMEM_CACHE/llm``), so rerunning a finished configuration is cheap and identical.

>>> percentiles([1.0, 2.0, 3.0, 4.0])["median"]
2.5
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import statistics
import sys
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from lazymem.errors import ConfigError, check_fields
from lazymem.llm import LLMConfig, Sampling
from lazymem.pipeline import PipelineConfig
from lazymem.records import Question, type_abbrev

if TYPE_CHECKING:
    from lazymem.llm import LLMClient
    from lazymem.pipeline import LazyMemPipeline
    from lazymem.records import Dataset

JUDGES = ("longmemeval", "locomo", "none")
RECORDS_FILE = "records.jsonl"
ERRORS_FILE = "errors.jsonl"
SUMMARY_FILE = "summary.json"
MANIFEST_FILE = "manifest.json"
WINDOWS_FILE = "windows.jsonl"  # read by lazymem.notebooks.load_window_records
# Official request settings: LongMemEval's evaluate_qa.py asks for 10 tokens; Mem0's LoCoMo
# judge sets no cap (its reply is one sentence and a JSON label): 1024 leaves room.
JUDGE_MAX_TOKENS = {"longmemeval": 10, "locomo": 1024}
MANIFEST_PACKAGES = ("lazymem", "numpy", "torch", "transformers", "tokenizers", "sentence-transformers",
                     "rank-bm25", "bm25s", "FlagEmbedding", "openai", "outlines", "vllm", "nltk", "tqdm", "pyyaml")
STAGES = ("retrieval", "processing", "answer", "total", "judge", "index")
# Fields that change how a run goes, not what it records: a run may resume under new values.
_OPERATIONAL = {
    "eval": {"ids", "types", "limit", "split", "split_seed", "workers", "llm_cache", "llm_cache_dir", "baseline"},
    "llm": {"concurrency", "timeout", "max_retries", "retry_wait", "batch_size", "num_threads", "cache_dir"},
    "retrieval": {"cache_dir", "disk_cache", "batch_size", "num_threads", "query_threads"},
}
# Config keys whose values would be credentials (api_key_env holds only a variable NAME).
_SECRET_KEY = re.compile(r"(^|[_-])(api_?key|secret|password|access_?token|authorization|auth)$", re.IGNORECASE)


def _h(text: str) -> dict:
    return {"help": text}


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation: a pipeline, a dataset, which questions, which judge; keys as in configs/eval_*.yaml."""

    pipeline: PipelineConfig = field(default_factory=PipelineConfig, metadata=_h("the query pipeline"))
    dataset: str = field(default="synthetic:messages=400,seed=0,histories=4,questions=12",
                         metadata=_h("dataset SPEC for lazymem.data.datasets.load_dataset"))
    subset: str | None = field(default=None, metadata=_h("named subset, e.g. 'paper' for LoCoMo"))
    split: str | None = field(default=None, metadata=_h("'train', 'validation' or 'test' of the paper's split; None = all"))
    split_seed: int = field(default=42, metadata=_h("seed of the stratified split (the paper's: 42)"))
    ids: tuple[str, ...] = field(default=(), metadata=_h("only these question ids (empty = all)"))
    types: tuple[str, ...] = field(default=(), metadata=_h("only these question types, names or abbreviations (KU, MS, ...)"))
    limit: int | None = field(default=None, metadata=_h("at most this many questions, the first in dataset order"))
    judge: str = field(default="none", metadata=_h(f"judge prompt family, one of {JUDGES}"))
    judge_max_tokens: int | None = field(default=None, metadata=_h("judge reply cap; None = official (10 / 1024)"))
    seed: int = field(default=0, metadata=_h("sampling seed of every model call"))
    workers: int = field(default=1, metadata=_h("questions in flight at once (helps with a server backend)"))
    llm_cache: bool = field(default=True, metadata=_h("keep model calls in the disk cache"))
    llm_cache_dir: str | None = field(default=None, metadata=_h("cache directory; None = $LAZYMEM_CACHE/llm"))
    count_tokens: bool = field(default=True, metadata=_h("count memory tokens with the Qwen3 tokenizer"))
    baseline: str | None = field(default=None, metadata=_h("a finished run dir to compare with (ratios in summary.json)"))

    def __post_init__(self):
        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise ConfigError(f"EvalConfig.{name}={getattr(self, name)!r}: {allowed}")

        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        need(isinstance(self.pipeline, PipelineConfig), "pipeline", "must be a PipelineConfig")
        need(isinstance(self.dataset, str) and self.dataset.strip() != "", "dataset", "must be a dataset SPEC")
        need(self.subset is None or isinstance(self.subset, str), "subset", "must be a subset name or None")
        need(self.split in (None, "train", "validation", "test"), "split", "must be train, validation, test or None")
        need(is_int(self.split_seed), "split_seed", "must be an integer")
        for name in ("ids", "types"):
            v = getattr(self, name)
            if isinstance(v, str):
                v = (v,)
            need(isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v), name, "must be a list of strings")
            object.__setattr__(self, name, tuple(v))
        need(self.limit is None or (is_int(self.limit) and self.limit >= 1), "limit", "must be None or an integer >= 1")
        need(self.judge in JUDGES, "judge", f"must be one of {JUDGES}")
        need(self.judge == "none" or self.pipeline.judge is not None, "judge",
             "needs a judge model: set pipeline.judge (an LLM config), or judge: none")
        need(self.judge_max_tokens is None or (is_int(self.judge_max_tokens) and self.judge_max_tokens >= 1),
             "judge_max_tokens", "must be None or an integer >= 1")
        need(is_int(self.seed), "seed", "must be an integer")
        need(is_int(self.workers) and self.workers >= 1, "workers", "must be an integer >= 1")
        need(isinstance(self.llm_cache, bool), "llm_cache", "must be true or false")
        need(self.llm_cache_dir is None or isinstance(self.llm_cache_dir, str), "llm_cache_dir", "must be a path or None")
        need(isinstance(self.count_tokens, bool), "count_tokens", "must be true or false")
        need(self.baseline is None or isinstance(self.baseline, str), "baseline", "must be a run directory or None")

    @classmethod
    def from_dict(cls, values: Mapping) -> "EvalConfig":
        """Build from a mapping (a whole configs/eval_*.yaml); errors name the bad field."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"eval config: expected a mapping, got {type(values).__name__}")
        check_fields(cls, values, "eval config")
        v = dict(values)
        v["pipeline"] = PipelineConfig.from_dict(v.get("pipeline") or {})
        return cls(**v)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, overrides: Sequence[str] = ()) -> "EvalConfig":
        """Load a YAML recipe; ``overrides`` are ``dotted.key=value`` strings (values parsed as YAML)."""
        import yaml

        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
        return cls.from_dict(apply_overrides(data, overrides))

    def to_dict(self) -> dict:
        """Plain JSON-ready values."""
        d = dataclasses.asdict(self)
        d["ids"], d["types"] = list(self.ids), list(self.types)
        return d


def apply_overrides(data: Mapping, overrides: Sequence[str]) -> dict:
    """A copy of a nested mapping with ``a.b.c=value`` overrides (value parsed as YAML).

    >>> apply_overrides({"pipeline": {"window": {"w": 2}}}, ["pipeline.window.w=3", "limit=5"])
    {'pipeline': {'window': {'w': 3}}, 'limit': 5}
    """
    import copy

    import yaml

    out = copy.deepcopy(dict(data))
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r}: expected KEY=VALUE, e.g. pipeline.retrieval.n=20")
        parts = key.strip().split(".")
        node = out
        for p in parts[:-1]:
            if node.get(p) is None:
                node[p] = {}
            if not isinstance(node[p], dict):
                raise ConfigError(f"override {item!r}: {p!r} is not a section")
            node = node[p]
        node[parts[-1]] = yaml.safe_load(raw)
    return out


def config_fingerprint(config: EvalConfig) -> str:
    """sha256 of what decides a question's record (question selection and operational
    settings left out), so a rerun can tell whether earlier records still belong."""
    import hashlib

    d = config.to_dict()
    for k in _OPERATIONAL["eval"]:
        d.pop(k, None)
    p = d["pipeline"]
    for role in ("mpm", "answer", "judge"):
        if p.get(role):
            for k in _OPERATIONAL["llm"]:
                p[role].pop(k, None)
    for k in _OPERATIONAL["retrieval"]:
        p["retrieval"].pop(k, None)
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode("utf-8")).hexdigest()


# --- question selection ----------------------------------------------------------------------------


def select_questions(dataset: "Dataset", config: EvalConfig) -> list[Question]:
    """The questions to run, in dataset order: split, then ids, then types, then limit."""
    qs = list(dataset.questions)
    if config.split is not None:
        from lazymem.data import stratified_split

        keep = set(stratified_split(dataset.questions, seed=config.split_seed).ids(config.split))
        qs = [q for q in qs if q.id in keep]
    if config.ids:
        known = {q.id for q in qs}
        missing = [i for i in config.ids if i not in known]
        if missing:
            raise ConfigError(f"EvalConfig.ids: {len(missing)} id(s) not among the {len(qs)} selectable questions "
                              f"of {dataset.name!r}, e.g. {missing[:3]}")
        wanted = set(config.ids)
        qs = [q for q in qs if q.id in wanted]
    if config.types:
        available = sorted({q.type for q in dataset.questions})
        unknown = [t for t in config.types if not any(t in (q.type, q.abbrev) for q in dataset.questions)]
        if unknown:
            raise ConfigError(f"EvalConfig.types: {unknown} match no question; types here: {available}")
        wanted = set(config.types)
        qs = [q for q in qs if q.type in wanted or q.abbrev in wanted]
    if config.limit is not None:
        qs = qs[: config.limit]
    return qs


# --- records file ----------------------------------------------------------------------------------


def read_records(path: str | os.PathLike) -> tuple[list[dict], bool]:
    """Records of a records.jsonl and whether its last line was cut off (and is left out).

    Only the last line may be incomplete (an append interrupted by a kill); a bad line
    anywhere else means the file was damaged otherwise, and raises rather than guessing.
    """
    p = Path(path)
    if not p.exists():
        return [], False
    data = p.read_bytes()
    lines = data.split(b"\n")
    records, truncated = [], False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        last = i == len(lines) - 1 or all(not x.strip() for x in lines[i + 1:])
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or "question_id" not in rec:
                raise ValueError("not a question record")
        except (ValueError, UnicodeDecodeError) as e:
            if last:
                truncated = True
                break
            raise ValueError(f"{p}: line {i + 1} is not a question record ({e}); only a cut-off last line "
                             "is repaired automatically") from None
        if last and not data.endswith(b"\n"):
            truncated = True  # parsed, yet the newline never made it: treat as unfinished
            break
        records.append(rec)
    return records, truncated


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class _Secrets:
    """Masks API key values out of everything written (belt and braces: none should be there)."""

    def __init__(self, llm_configs: Iterable[LLMConfig | None]):
        self.values = sorted({os.environ[c.api_key_env] for c in llm_configs
                              if c is not None and len(os.environ.get(c.api_key_env, "")) >= 6
                              and os.environ[c.api_key_env] != "EMPTY"}, key=len, reverse=True)

    def dumps(self, obj: Any, **kw) -> str:
        text = json.dumps(obj, ensure_ascii=False, default=str, **kw)
        for v in self.values:
            text = text.replace(v, "***")
        return text


def scrub(obj: Any) -> Any:
    """A copy with values under credential-looking keys replaced (api_key_env is a name, kept).

    >>> scrub({"api_key_env": "OPENAI_API_KEY", "extra_body": {"api_key": "sk-1"}, "max_tokens": 5})
    {'api_key_env': 'OPENAI_API_KEY', 'extra_body': {'api_key': '<redacted>'}, 'max_tokens': 5}
    """
    if isinstance(obj, Mapping):
        return {k: ("<redacted>" if isinstance(k, str) and _SECRET_KEY.search(k) and obj[k] is not None
                    else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


# --- one question ------------------------------------------------------------------------------------


def _tokens(text: str) -> tuple[int | None, str]:
    """(Qwen3 token count, tokenizer status); never raises for a missing tokenizer."""
    try:
        from lazymem.llm import count_tokens

        return count_tokens(text), "qwen3"
    except (OSError, ImportError):  # TokenizerMissing is a FileNotFoundError
        return None, "missing"


def judge_answer(client: "LLMClient", question: Question, response: str, kind: str, seed: int = 0,
                 max_tokens: int | None = None) -> dict:
    """Ask the official judge of `kind` about one response; a record with prompt, reply and label.

    ``label`` is True/False, or None when the reply could not be read (LoCoMo) or the
    question is not judged (LoCoMo category 5, which Mem0's judge skips).
    """
    from lazymem.eval.judge import (
        locomo_judge_prompt,
        longmemeval_judge_prompt,
        longmemeval_judge_template,
        parse_correct_wrong,
        parse_yes_no,
    )

    out = {"kind": kind, "prompt_name": None, "prompt": None, "response": None, "label": None,
           "skipped": None, "error": None, "output": None}
    if kind == "longmemeval":
        out["prompt_name"] = longmemeval_judge_template(question.type, question.abstention).name
        prompt = longmemeval_judge_prompt(question, response)
    elif kind == "locomo":
        out["prompt_name"] = "locomo_judge"
        if question.category == 5:
            out["skipped"] = "category 5 (adversarial) has no gold answer; Mem0's judge skips it"
            return out
        prompt = locomo_judge_prompt(question, response)
    else:
        raise ConfigError(f"judge kind {kind!r}: must be 'longmemeval' or 'locomo'")
    out["prompt"] = prompt
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens or JUDGE_MAX_TOKENS[kind], seed=seed)
    c = client.generate([prompt], sampling)[0]
    out["output"] = {"model": c.model, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                     "latency_s": c.latency_s, "cached": c.cached, "finish_reason": c.finish_reason}
    if c.error is not None:
        out["error"] = c.error
        return out
    out["response"] = c.text
    out["label"] = parse_yes_no(c.text) if kind == "longmemeval" else parse_correct_wrong(c.text)
    return out


def _contains(prediction: str, answer: str) -> bool:
    from lazymem.eval.judge import normalize_answer

    gold = normalize_answer(answer)
    return bool(gold) and f" {gold} " in f" {normalize_answer(prediction)} "


def question_meta(q: Question) -> dict:
    return {"type": q.type, "abbrev": q.abbrev, "category": q.category, "text": q.text, "answer": q.answer,
            "query_time": q.query_time, "history_id": q.history_id, "evidence": list(q.evidence),
            "abstention": q.abstention}


def run_question(pipeline: "LazyMemPipeline", dataset: "Dataset", question: Question, config: EvalConfig) -> dict:
    """The record of one question: the pipeline's result, scores, judge, tokens, timings.

    Never raises for a failed model call or an unexpected exception: the record says
    ``status: "error"`` with the message, and the run goes on.
    """
    rec: dict[str, Any]
    try:
        result = pipeline.answer(dataset.history(question), question)
        rec = result.to_dict()
    except Exception as e:  # a bug or bad input in one question must not end the run
        rec = {"question_id": question.id, "method": pipeline.config.method, "status": "error",
               "error": f"pipeline: {type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=6)[-3000:],
               "timings": {}}
        result = None
    rec["question"] = question_meta(question)
    pool_positions = set(rec["pool"]["positions"]) if rec.get("pool") else None
    rec["n_gold"] = len(question.evidence)
    rec["gold_in_pool"] = len(pool_positions & set(question.evidence)) if pool_positions is not None else None
    rec.update(memory_tokens=None, tokenizer=None, locomo_f1=None, answer_f1=None, answer_contains=None, judge=None)
    if result is None:
        return rec
    if config.count_tokens:
        rec["memory_tokens"], rec["tokenizer"] = _tokens(result.memory)
    else:
        rec["tokenizer"] = "off"
    if not result.ok:
        return rec
    from lazymem.eval.judge import locomo_f1, token_f1

    if question.category is not None:
        rec["locomo_f1"] = locomo_f1(result.answer, question.answer, question.category)
    elif question.answer:  # a proxy for runs without a judge; not a metric of the paper
        rec["answer_f1"] = token_f1(result.answer, question.answer)
        rec["answer_contains"] = _contains(result.answer, question.answer)
    if config.judge != "none":
        t0 = time.perf_counter()
        rec["judge"] = judge_answer(pipeline.client("judge"), question, result.answer, config.judge,
                                    seed=config.seed, max_tokens=config.judge_max_tokens)
        rec["timings"]["judge"] = time.perf_counter() - t0
        if rec["judge"]["error"] is not None:
            rec["status"], rec["error"] = "error", f"judge: {rec['judge']['error']}"
    return rec


# --- summary -----------------------------------------------------------------------------------------


def percentiles(values: Sequence[float]) -> dict:
    """mean, median, P90, P95 (linear interpolation) and n of some latencies.

    >>> percentiles([1.0, 2.0, 3.0, 4.0, 5.0])
    {'mean': 3.0, 'median': 3.0, 'p90': 4.6, 'p95': 4.8, 'n': 5}
    """
    xs = sorted(float(v) for v in values)
    if not xs:
        return {"mean": None, "median": None, "p90": None, "p95": None, "n": 0}

    def q(p: float) -> float:
        k = (len(xs) - 1) * p
        lo, hi = math.floor(k), math.ceil(k)
        return round(xs[lo] + (xs[hi] - xs[lo]) * (k - lo), 10)

    return {"mean": round(statistics.fmean(xs), 10), "median": q(0.5), "p90": q(0.9), "p95": q(0.95), "n": len(xs)}


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def latest_records(records: Iterable[dict]) -> dict[str, dict]:
    """The last record of every question id, in order of first appearance."""
    out: dict[str, dict] = {}
    for r in records:
        out[r["question_id"]] = r
    return out


def summarize(records: Iterable[dict], judge: str = "none", selected: Sequence[str] | None = None) -> dict:
    """The run's numbers from its records (the last record per question counts).

    Accuracy is the mean judge label over ok records with a label; Gate Fmt. is the share of
    MPM outputs that are a parseable array of the right length (construction_stats.n_fmt);
    gold-keep recall is gold messages kept / gold messages inside windows, over all questions.
    """
    latest = latest_records(records)
    if selected is not None:
        latest = {i: latest[i] for i in selected if i in latest}
    ok = [r for r in latest.values() if r["status"] == "ok"]
    counts = {"selected": len(selected) if selected is not None else len(latest), "recorded": len(latest),
              "ok": len(ok), "error": sum(r["status"] != "ok" for r in latest.values())}
    counts["missing"] = counts["selected"] - counts["recorded"]
    out: dict[str, Any] = {"counts": counts, "judge": judge,
                           "method": next((r.get("method") for r in latest.values()), None)}

    def by_group(key, value) -> dict:
        groups: dict[str, list[float]] = defaultdict(list)
        for r in ok:
            v = value(r)
            if v is not None:
                groups[key(r)].append(float(v))
        return {g: {"mean": statistics.fmean(v), "n": len(v)} for g, v in sorted(groups.items())}

    def abbrev(r):
        return type_abbrev(r["question"]["type"])

    if judge != "none":
        labels = [r["judge"]["label"] for r in ok if r.get("judge") and r["judge"]["label"] is not None]
        out["accuracy"] = {
            "overall": _mean([float(x) for x in labels]), "n": len(labels),
            "unjudged": sum(1 for r in ok if not r.get("judge") or r["judge"]["label"] is None),
            "by_type": by_group(abbrev, lambda r: None if not r.get("judge") else r["judge"]["label"]),
        }
    else:
        out["accuracy"] = None
    f1 = [r["locomo_f1"] for r in ok if r.get("locomo_f1") is not None]
    out["locomo_f1"] = None if not f1 else {
        "overall": statistics.fmean(f1), "n": len(f1),
        "by_category": by_group(lambda r: r["question"]["type"], lambda r: r.get("locomo_f1"))}
    pf = [r["answer_f1"] for r in ok if r.get("answer_f1") is not None]
    out["proxy"] = None if not pf else {
        "note": "token F1 / normalised containment of the gold answer: quick proxies, not the paper's LLM-judge score",
        "answer_f1": statistics.fmean(pf), "answer_contains": _mean([float(r["answer_contains"]) for r in ok
                                                                     if r.get("answer_contains") is not None]),
        "n": len(pf), "answer_f1_by_type": by_group(abbrev, lambda r: r.get("answer_f1"))}
    cons = [r["construction"] for r in ok if r.get("construction")]
    if cons:
        tot = {k: sum(c[k] for c in cons) for k in ("n_windows", "n_valid", "n_fmt", "n_messages", "n_kept",
                                                    "n_gold", "n_gold_kept")}
        failures = Counter()
        for c in cons:
            failures.update(c.get("failures") or {})
        out["construction"] = {
            **tot, "gate_fmt": tot["n_fmt"] / tot["n_windows"] if tot["n_windows"] else None,
            "gate_pass_rate": tot["n_valid"] / tot["n_windows"] if tot["n_windows"] else None,
            "gold_keep_recall": tot["n_gold_kept"] / tot["n_gold"] if tot["n_gold"] else None,
            "kept_per_question": tot["n_kept"] / len(cons), "windows_per_question": tot["n_windows"] / len(cons),
            "failures": dict(sorted(failures.items())), "n_questions": len(cons)}
    else:
        out["construction"] = None
    pooled = [r for r in ok if r.get("gold_in_pool") is not None]
    n_gold = sum(r["n_gold"] for r in pooled)
    out["retrieval"] = None if not pooled else {
        "gold_in_pool": sum(r["gold_in_pool"] for r in pooled), "n_gold": n_gold,
        "gold_recall": sum(r["gold_in_pool"] for r in pooled) / n_gold if n_gold else None,
        "rerankers": sorted({r["pool"]["reranker"] for r in pooled if r.get("pool")})}
    toks = [r["memory_tokens"] for r in ok if r.get("memory_tokens") is not None]
    tokenizers = sorted({r.get("tokenizer") for r in ok if r.get("tokenizer")})
    out["memory_tokens"] = {"mean": _mean(toks), "n": len(toks),
                            "tokenizer": "qwen3" if toks else (tokenizers[0] if tokenizers else None)}
    out["latency_s"] = {s: percentiles([r["timings"][s] for r in ok if r.get("timings", {}).get(s) is not None])
                        for s in STAGES}
    calls = [w.get("output") for r in ok for w in r.get("windows") or () if w.get("output")]
    answers = [r["answer_output"] for r in ok if r.get("answer_output")]
    out["calls"] = {"mpm": len(calls), "mpm_cached": sum(bool(c["cached"]) for c in calls),
                    "answer": len(answers), "answer_cached": sum(bool(c["cached"]) for c in answers),
                    "note": "latencies of cached calls are cache reads, not model time"}
    return out


def compare_with_baseline(summary: Mapping, baseline: Mapping, baseline_dir: str = "") -> dict:
    """Ratios and deltas against a baseline run's summary (e.g. RAG Top50).

    ``memory_tokens.reduction`` = baseline mean / ours (the paper's "68.7x fewer tokens").

    >>> compare_with_baseline({"memory_tokens": {"mean": 100.0}}, {"memory_tokens": {"mean": 6870.0}})["memory_tokens"]
    {'ours': 100.0, 'baseline': 6870.0, 'reduction': 68.7}
    """
    def get(d, *path):
        for p in path:
            if not isinstance(d, Mapping) or d.get(p) is None:
                return None
            d = d[p]
        return d

    def pair(path, how):
        a, b = get(summary, *path), get(baseline, *path)
        res = {"ours": a, "baseline": b}
        if a is not None and b is not None:
            if how == "delta":
                res["delta"] = a - b
            elif how == "reduction":
                res["reduction"] = b / a if a else None
            else:
                res["ratio"] = a / b if b else None
        return res

    return {"baseline_dir": baseline_dir, "method": get(baseline, "method"),
            "accuracy": pair(("accuracy", "overall"), "delta"),
            "locomo_f1": pair(("locomo_f1", "overall"), "delta"),
            "memory_tokens": pair(("memory_tokens", "mean"), "reduction"),
            "latency_total_mean": pair(("latency_s", "total", "mean"), "ratio")}


# --- provenance --------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_commit(path: str | os.PathLike | None = None) -> str:
    """``git rev-parse HEAD`` of the checkout holding `path` (the package), else "unknown"."""
    import subprocess

    where = Path(path) if path else Path(__file__).resolve().parent
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


def package_versions(names: Sequence[str] = MANIFEST_PACKAGES) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            out[n] = None
    return out


def _resolve_cache(config: EvalConfig) -> tuple[EvalConfig, str | None]:
    """The config with every model's cache_dir filled in (unless caching is off or set)."""
    if not config.llm_cache:
        return config, None
    if config.llm_cache_dir:
        cache = str(Path(config.llm_cache_dir).expanduser())
    else:
        from lazymem.paths import cache_root

        cache = str(cache_root() / "llm")
    p = config.pipeline
    repl = {role: dataclasses.replace(getattr(p, role), cache_dir=cache)
            for role in ("mpm", "answer", "judge") if getattr(p, role) is not None and getattr(p, role).cache_dir is None}
    return dataclasses.replace(config, pipeline=dataclasses.replace(p, **repl)), cache


def _seeded(config: EvalConfig) -> EvalConfig:
    """The config with the eval seed in both samplings (one seed governs every call)."""
    p = config.pipeline
    return dataclasses.replace(config, pipeline=dataclasses.replace(
        p, mpm_sampling=dataclasses.replace(p.mpm_sampling, seed=config.seed),
        answer_sampling=dataclasses.replace(p.answer_sampling, seed=config.seed)))


def _check_judge(questions: Sequence[Question], kind: str) -> None:
    """Fail before any model call when the judge cannot handle a selected question."""
    if kind == "longmemeval":
        from lazymem.eval.judge import longmemeval_judge_template

        for q in questions:
            try:
                longmemeval_judge_template(q.type, q.abstention)
            except ValueError as e:
                raise ConfigError(f"judge 'longmemeval' on question {q.id!r}: {e} (use judge: locomo or none)") from None
    elif kind == "locomo":
        bad = [q.id for q in questions if q.category is None]
        if bad:
            raise ConfigError(f"judge 'locomo' needs LoCoMo questions; {bad[:3]} have no category (use longmemeval or none)")


def _resume(out: Path, fingerprint: str, old_manifest: Mapping | None, secrets: "_Secrets") -> tuple[list[dict], bool]:
    """Earlier ok records of `out` (one per question) and whether a cut-off last line was dropped.

    The records file is rewritten to hold exactly those; error records (to be redone) move to
    errors.jsonl. Records of another configuration raise instead of mixing two runs.
    """
    records_path, errors_path = out / RECORDS_FILE, out / ERRORS_FILE
    existing, truncated = read_records(records_path)
    if existing and old_manifest and old_manifest.get("config_sha256") not in (None, fingerprint):
        raise ConfigError(
            f"{out} holds records of a different configuration (config_sha256 {old_manifest['config_sha256'][:12]} "
            f"!= {fingerprint[:12]}); use another output folder or overwrite=True (--overwrite)")
    # Keep one line per question: its ok record. Error records (to redo) move to errors.jsonl.
    latest = latest_records(existing)
    kept = [r for r in latest.values() if r["status"] == "ok"]
    stale = [r for r in existing if r["status"] != "ok"]
    if truncated or stale or len(kept) != len(existing):
        if stale:
            with open(errors_path, "a", encoding="utf-8") as f:
                for r in stale:
                    f.write(secrets.dumps(r) + "\n")
                f.flush()
                os.fsync(f.fileno())
        _write_atomic(records_path, "".join(secrets.dumps(r) + "\n" for r in kept))
    return kept, truncated


def _new_manifest(config: EvalConfig, dataset: "Dataset", n_selected: int, fingerprint: str, cache_dir: str | None,
                  clients: Mapping | None, old_manifest: Mapping | None, run_info: dict) -> dict:
    """The manifest of a run starting now (earlier runs into the same folder are kept in ``runs``)."""
    from lazymem.prompts import prompt_hashes

    p = config.pipeline
    judged = p.judge is not None and config.judge != "none"
    return {
        "config": scrub(config.to_dict()), "config_sha256": fingerprint,
        "git_commit": git_commit(), "python": sys.version.split()[0], "packages": package_versions(),
        "dataset": {"spec": config.dataset, "subset": config.subset, "name": dataset.name, "source": dataset.source,
                    "sha256": dataset.sha256, "questions_total": len(dataset.questions), "selected": n_selected,
                    "load_issues": len(dataset.issues)},
        "prompt_hashes": prompt_hashes(),
        "models": {"mpm": p.mpm.model if p.method == "lazymem" else None, "answer": p.answer.model,
                   "judge": p.judge.model if judged else None},
        "backends": {"mpm": p.mpm.backend if p.method == "lazymem" else None, "answer": p.answer.backend,
                     "judge": p.judge.backend if judged else None},
        "injected_clients": sorted(clients or {}),
        "retrieval": {"sparse": p.retrieval.sparse, "dense_model": p.retrieval.dense_model,
                      "reranker_config": p.retrieval.reranker, "reranker_ran": None},
        "llm_cache_dir": cache_dir,
        "runs": list((old_manifest or {}).get("runs", [])) + [run_info],
        "start": (old_manifest or {}).get("start") or run_info["start"],  # of the first run into the folder
        "end": None,
        "status": "running",
    }


# --- the run -----------------------------------------------------------------------------------------


def evaluate(config: EvalConfig, out_dir: str | os.PathLike, progress: bool = True, *,
             clients: Mapping[str, "LLMClient"] | None = None, dataset: "Dataset | None" = None,
             retriever: Any = None, overwrite: bool = False, command: Sequence[str] | None = None) -> dict:
    """Run (or resume) an evaluation into `out_dir`; returns the summary (also in summary.json).

    Args:
        config: what to run.
        out_dir: the run folder (created).
        progress: show a tqdm bar with the running score.
        clients: ready clients by role ("mpm", "answer", "judge"), used as given (no cache
            wrapping); e.g. scripted fakes.
        dataset: an already loaded dataset (else ``load_dataset(config.dataset, config.subset)``).
        retriever: a ready Retriever (or anything with ``retrieve(history, query) -> Pool``).
        overwrite: discard earlier records in `out_dir` instead of resuming.
        command: the command line for the manifest (default sys.argv).
    """
    from lazymem.pipeline import LazyMemPipeline

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config, cache_dir = _resolve_cache(_seeded(config))
    secrets = _Secrets([config.pipeline.mpm, config.pipeline.answer, config.pipeline.judge])
    fingerprint = config_fingerprint(config)
    records_path, manifest_path = out / RECORDS_FILE, out / MANIFEST_FILE
    if dataset is None:
        from lazymem.data import load_dataset

        dataset = load_dataset(config.dataset, subset=config.subset)
    questions = select_questions(dataset, config)
    _check_judge(questions, config.judge)

    old_manifest = _read_json(manifest_path)
    if overwrite:
        for name in (RECORDS_FILE, ERRORS_FILE, SUMMARY_FILE, WINDOWS_FILE):
            (out / name).unlink(missing_ok=True)
        old_manifest = None
    kept, truncated = _resume(out, fingerprint, old_manifest, secrets)
    done = {r["question_id"] for r in kept}
    attempts = Counter(r["question_id"] for r in _read_jsonl(out / ERRORS_FILE))
    todo = [q for q in questions if q.id not in done]

    run_id = uuid.uuid4().hex[:12]
    run_info = {"run_id": run_id, "start": _now(), "end": None, "status": "running", "pid": os.getpid(),
                "command": list(command if command is not None else sys.argv), "questions_todo": len(todo),
                "resumed_ok": len(done & {q.id for q in questions}), "dropped_truncated_line": truncated}
    p = config.pipeline
    manifest = _new_manifest(config, dataset, len(questions), fingerprint, cache_dir, clients, old_manifest, run_info)
    _write_atomic(manifest_path, secrets.dumps(manifest, indent=2) + "\n")

    pipeline = LazyMemPipeline(p, clients=clients, retriever=retriever)
    selected_ids = {q.id for q in questions}
    scores = _RunningScore([r for r in kept if r["question_id"] in selected_ids], config.judge)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=f"eval {p.method}", unit="q", dynamic_ncols=True)
        bar.set_postfix_str(scores.text())
    status = "interrupted"
    write_lock = threading.Lock()
    try:
        if todo:
            pipeline.warm_up()
        with open(records_path, "a", encoding="utf-8") as f:
            def write(rec: dict) -> None:
                rec.update(run_id=run_id, attempt=attempts[rec["question_id"]] + 1, recorded_at=_now())
                line = secrets.dumps(rec) + "\n"
                with write_lock:
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())  # a kill -9 after this loses nothing finished
                scores.add(rec)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(scores.text())

            if config.workers == 1:
                for q in todo:
                    write(run_question(pipeline, dataset, q, config))
            else:
                import concurrent.futures

                with concurrent.futures.ThreadPoolExecutor(config.workers) as ex:
                    futures = [ex.submit(run_question, pipeline, dataset, q, config) for q in todo]
                    try:
                        for fut in concurrent.futures.as_completed(futures):
                            write(fut.result())
                    except BaseException:
                        for fut in futures:
                            fut.cancel()
                        raise
        status = "done"
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # e.g. a model that cannot load: the run stops, the manifest says why
        status = "failed"
        run_info["error"] = f"{type(e).__name__}: {e}"[:2000]
        raise
    finally:
        if bar is not None:
            bar.close()
        records, _ = read_records(records_path)
        summary = summarize(records, config.judge, selected=[q.id for q in questions])
        summary["dataset"] = dataset.name
        summary["run_dir"] = str(out)
        if config.baseline:
            base = _read_json(Path(config.baseline) / SUMMARY_FILE)
            summary["baseline"] = (compare_with_baseline(summary, base, config.baseline) if base is not None
                                   else {"baseline_dir": config.baseline, "error": "no summary.json there"})
        _write_atomic(out / SUMMARY_FILE, secrets.dumps(summary, indent=2) + "\n")
        _write_atomic(out / WINDOWS_FILE, "".join(secrets.dumps(w) + "\n" for w in window_lines(records)))
        run_info.update(end=_now(), status=status, questions_done=scores.n_new, errors=scores.n_new_errors)
        manifest["end"] = run_info["end"]
        manifest["status"] = status if summary["counts"]["error"] == 0 or status != "done" else "done_with_errors"
        manifest["retrieval"]["reranker_ran"] = (summary["retrieval"] or {}).get("rerankers")
        manifest["tokenizer"] = summary["memory_tokens"]["tokenizer"]
        _write_atomic(manifest_path, secrets.dumps(manifest, indent=2) + "\n")
    return summary


class _RunningScore:
    """The progress bar's running numbers over all ok records so far."""

    def __init__(self, records: Iterable[dict], judge: str):
        self.judge = judge
        self.labels: list[float] = []
        self.f1: list[float] = []
        self.errors = 0
        self.n_new = self.n_new_errors = 0
        for r in records:
            self._count(r)

    def _count(self, r: dict) -> None:
        if r["status"] != "ok":
            self.errors += 1
            return
        j = r.get("judge")
        if j and j.get("label") is not None:
            self.labels.append(float(j["label"]))
        f = r.get("locomo_f1") if r.get("locomo_f1") is not None else r.get("answer_f1")
        if f is not None:
            self.f1.append(f)

    def add(self, r: dict) -> None:
        self.n_new += 1
        self.n_new_errors += r["status"] != "ok"
        self._count(r)

    def text(self) -> str:
        parts = []
        if self.judge != "none":
            parts.append(f"acc={statistics.fmean(self.labels):.3f}" if self.labels else "acc=-")
        if self.f1:
            parts.append(f"f1={statistics.fmean(self.f1):.3f}")
        parts.append(f"err={self.errors}")
        return " ".join(parts)


def window_lines(records: Iterable[dict]) -> list[dict]:
    """Per-window lines for the window explorer (lazymem.notebooks.load_window_records)."""
    out = []
    for r in latest_records(records).values():
        if r["status"] != "ok":
            continue
        for i, w in enumerate(r.get("windows") or ()):
            line = {"question_id": r["question_id"], "positions": w["positions"], "hits": w["hits"],
                    "gold": w["gold"], "merged_id": w["merged_id"], "sub_id": w["sub_id"],
                    "verdict": w["verdict"], "decisions": w["decisions"]}
            if i == 0:
                line.update(memory=r["memory"], answer=r["answer"], judge=r.get("judge"))
            out.append(line)
    return out


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_jsonl(path: Path) -> list[dict]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


# --- command line ------------------------------------------------------------------------------------


def default_config_path() -> Path:
    """configs/eval_demo.yaml of the checkout holding this package."""
    return Path(__file__).resolve().parents[1] / "configs" / "eval_demo.yaml"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The ``lazymem eval`` options (added to `parser` when given, e.g. a CLI subparser)."""
    p = parser or argparse.ArgumentParser(prog="lazymem eval", description=__doc__.split("\n\n")[0])
    p.add_argument("config", nargs="?", default=None,
                   help="YAML recipe (default: configs/eval_demo.yaml, offline CPU demo)")
    p.add_argument("--out", default=None, help="run folder (default: runs/eval/<config name>)")
    p.add_argument("--dataset", help="dataset SPEC (overrides the recipe)")
    p.add_argument("--subset", help="named subset, e.g. paper")
    p.add_argument("--split", choices=("train", "validation", "test"), help="the paper's split")
    p.add_argument("--ids", help="comma-separated question ids")
    p.add_argument("--types", help="comma-separated question types or abbreviations (KU,MS,...)")
    p.add_argument("--limit", type=int, help="at most this many questions")
    p.add_argument("--method", choices=("lazymem", "extractive", "rag", "oracle_turn", "full"))
    p.add_argument("--judge", choices=JUDGES)
    p.add_argument("--seed", type=int)
    p.add_argument("--workers", type=int, help="questions in flight (server backends)")
    p.add_argument("--cache-dir", help="LLM call cache directory")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the LLM call cache")
    p.add_argument("--baseline", help="a finished run folder to compare with")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any recipe key, e.g. --set pipeline.retrieval.n=20 (repeatable)")
    p.add_argument("--overwrite", action="store_true", help="discard earlier records in the run folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    """The EvalConfig of parsed ``lazymem eval`` arguments (recipe, then flags, then --set)."""
    import yaml

    path = Path(args.config) if args.config else default_config_path()
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    flags = {"dataset": args.dataset, "subset": args.subset, "split": args.split, "limit": args.limit,
             "judge": args.judge, "seed": args.seed, "workers": args.workers, "baseline": args.baseline,
             "llm_cache_dir": args.cache_dir}
    data.update({k: v for k, v in flags.items() if v is not None})
    if args.ids:
        data["ids"] = [s for s in args.ids.split(",") if s]
    if args.types:
        data["types"] = [s for s in args.types.split(",") if s]
    if args.no_cache:
        data["llm_cache"] = False
    if args.method:
        data.setdefault("pipeline", {})
        data["pipeline"] = dict(data["pipeline"] or {}, method=args.method)
    return EvalConfig.from_dict(apply_overrides(data, args.overrides))


def summary_text(s: Mapping) -> str:
    """A short human-readable summary."""
    def f(x, d=3):
        return "-" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))

    c = s["counts"]
    lines = [f"{s.get('method')} on {s.get('dataset')}: {c['ok']} ok, {c['error']} error, {c['missing']} missing "
             f"of {c['selected']} selected"]
    if s.get("accuracy"):
        a = s["accuracy"]
        lines.append(f"accuracy ({s['judge']} judge) {f(a['overall'])} over {a['n']}  "
                     + "  ".join(f"{t} {f(v['mean'])}" for t, v in a["by_type"].items()))
    if s.get("locomo_f1"):
        lf = s["locomo_f1"]
        lines.append(f"LoCoMo F1 {f(lf['overall'])}  "
                     + "  ".join(f"{t} {f(v['mean'])}" for t, v in lf["by_category"].items()))
    if s.get("proxy"):
        pr = s["proxy"]
        lines.append(f"proxy (not the paper's metric): answer F1 {f(pr['answer_f1'])}, "
                     f"contains gold {f(pr['answer_contains'])}")
    if s.get("construction"):
        k = s["construction"]
        lines.append(f"gate fmt {f(k['gate_fmt'])}, gate pass {f(k['gate_pass_rate'])}, gold-keep recall "
                     f"{f(k['gold_keep_recall'])}, {f(k['windows_per_question'], 1)} windows and "
                     f"{f(k['kept_per_question'], 1)} kept messages per question; failures {k['failures']}")
    m = s["memory_tokens"]
    lines.append(f"memory tokens mean {f(m['mean'], 1)} (tokenizer {m['tokenizer']})")
    lat = s["latency_s"]
    lines.append("latency s (mean/p95): " + "  ".join(
        f"{st} {f(lat[st]['mean'], 2)}/{f(lat[st]['p95'], 2)}" for st in STAGES if lat[st]["n"]))
    if s.get("baseline") and "memory_tokens" in s["baseline"]:
        b = s["baseline"]
        lines.append(f"vs baseline {b['baseline_dir']}: memory tokens reduction {f(b['memory_tokens'].get('reduction'), 1)}x, "
                     f"accuracy delta {f(b['accuracy'].get('delta'))}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``lazymem eval``: run a recipe; exit 0 when every selected question is ok, 1 otherwise."""
    args = build_parser().parse_args(argv)
    return run_from_args(args, command=None if argv is None else ["lazymem", "eval", *argv])


def run_from_args(args: argparse.Namespace, command: Sequence[str] | None = None) -> int:
    """Run parsed ``lazymem eval`` arguments (for a CLI that adds build_parser's options);
    ``command`` is recorded in the manifest (default sys.argv)."""
    config = config_from_args(args)
    if args.print_config:
        json.dump(scrub(config.to_dict()), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    stem = Path(args.config).stem if args.config else "eval_demo"
    out = args.out or str(Path("runs") / "eval" / stem)
    summary = evaluate(config, out, progress=not args.no_progress, overwrite=args.overwrite, command=command)
    if args.json:
        json.dump(summary, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(summary_text(summary))
        print(f"records: {Path(out) / RECORDS_FILE}")
    c = summary["counts"]
    return 0 if c["error"] == 0 and c["missing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
