"""What an evaluation runs: EvalConfig, YAML overrides, the config fingerprint, and question selection.

>>> EvalConfig(limit=0).limit  # 0, like None, means every selected question
0
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lazymem.errors import SEED_MAX, ConfigError, check_fields
from lazymem.fields import h, require
from lazymem.pipeline import PipelineConfig
from lazymem.records import Question

if TYPE_CHECKING:
    from lazymem.records import Dataset

JUDGES = ("longmemeval", "locomo", "none")
T = TypeVar("T")
# Fields that change how a run goes, not what it records: a run may resume under new values.
_OPERATIONAL = {
    "eval": {
        "ids",
        "types",
        "limit",
        "stratified",
        "split",
        "split_seed",
        "shard",
        "workers",
        "llm_cache",
        "llm_cache_dir",
        "baseline",
    },
    "llm": {"concurrency", "timeout", "max_retries", "retry_wait", "batch_size", "num_threads", "cache_dir"},
    "retrieval": {
        "cache_dir",
        "disk_cache",
        "batch_size",
        "num_threads",
        "query_threads",
        "dense_concurrency",
        "dense_api_key_env",
    },
}


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation: a pipeline, a dataset, which questions, which judge; keys as in configs/eval/*.yaml."""

    pipeline: PipelineConfig = field(default_factory=PipelineConfig, metadata=h("the query pipeline"))
    dataset: str = field(
        default="synthetic:messages=400,seed=0,histories=4,questions=12",
        metadata=h("dataset SPEC for lazymem.data.datasets.load_dataset"),
    )
    subset: str | None = field(default=None, metadata=h("named subset, e.g. 'paper' for LoCoMo"))
    split: str | None = field(
        default=None, metadata=h("'train', 'validation' or 'test' of the paper's split; None = all")
    )
    split_seed: int = field(default=42, metadata=h("seed of the stratified split (the paper's: 42)"))
    ids: tuple[str, ...] = field(default=(), metadata=h("only these question ids (empty = all)"))
    types: tuple[str, ...] = field(
        default=(), metadata=h("only these question types, names or abbreviations (KU, MS, ...)")
    )
    limit: int | None = field(
        default=None, metadata=h("at most this many questions, the first in dataset order; 0 or None = all")
    )
    stratified: bool = field(
        default=False,
        metadata=h(
            "with limit: the first questions of each type, in proportion to the types' shares (largest remainder), "
            "instead of the first `limit` overall"
        ),
    )
    shard: str | None = field(
        default=None,
        metadata=h(
            "'i/K': only the i-th of K disjoint parts of the selected questions (every K-th by question id, from i); "
            "applied last; merge the K run folders with `lazymem merge`"
        ),
    )
    judge: str = field(default="none", metadata=h(f"judge prompt family, one of {JUDGES}"))
    judge_max_tokens: int | None = field(default=None, metadata=h("judge reply cap; None = official (10 / 1024)"))
    judge_json_mode: bool = field(
        default=True,
        metadata=h("LoCoMo judge: request the JSON reply {label: CORRECT|WRONG} by schema (Mem0 sends JSON mode)"),
    )
    seed: int = field(default=0, metadata=h("sampling seed of every model call"))
    workers: int = field(default=1, metadata=h("questions in flight at once (helps with a server backend)"))
    llm_cache: bool = field(default=True, metadata=h("keep model calls in the disk cache"))
    llm_cache_dir: str | None = field(default=None, metadata=h("cache directory; None = $LAZYMEM_CACHE/llm"))
    count_tokens: bool = field(default=True, metadata=h("count memory tokens with the Qwen3 tokenizer"))
    baseline: str | None = field(
        default=None, metadata=h("a finished run dir to compare with (ratios in summary.json)")
    )

    def __post_init__(self):
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        require(
            isinstance(self.pipeline, PipelineConfig),
            "EvalConfig",
            "pipeline",
            self.pipeline,
            "must be a PipelineConfig",
        )
        require(
            isinstance(self.dataset, str) and self.dataset.strip() != "",
            "EvalConfig",
            "dataset",
            self.dataset,
            "must be a dataset SPEC",
        )
        require(
            self.subset is None or isinstance(self.subset, str),
            "EvalConfig",
            "subset",
            self.subset,
            "must be a subset name or None",
        )
        require(
            self.split in (None, "train", "validation", "test"),
            "EvalConfig",
            "split",
            self.split,
            "must be train, validation, test or None",
        )
        require(
            is_int(self.split_seed) and 0 <= self.split_seed <= SEED_MAX,
            "EvalConfig",
            "split_seed",
            self.split_seed,
            f"must be an integer in 0..{SEED_MAX}",
        )
        for name in ("ids", "types"):
            v = getattr(self, name)
            if isinstance(v, str):
                v = (v,)
            require(
                isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
                "EvalConfig",
                name,
                getattr(self, name),
                "must be a list of strings",
            )
            object.__setattr__(self, name, tuple(v))
        require(
            self.limit is None or (is_int(self.limit) and self.limit >= 0),
            "EvalConfig",
            "limit",
            self.limit,
            "must be None or 0 (all questions), or an integer >= 1",
        )
        require(self.judge in JUDGES, "EvalConfig", "judge", self.judge, f"must be one of {JUDGES}")
        require(
            self.judge == "none" or self.pipeline.judge is not None,
            "EvalConfig",
            "judge",
            self.judge,
            "needs a judge model: set pipeline.judge (an LLM config), or judge: none",
        )
        require(
            self.judge_max_tokens is None or (is_int(self.judge_max_tokens) and self.judge_max_tokens >= 1),
            "EvalConfig",
            "judge_max_tokens",
            self.judge_max_tokens,
            "must be None or an integer >= 1",
        )
        require(
            isinstance(self.judge_json_mode, bool),
            "EvalConfig",
            "judge_json_mode",
            self.judge_json_mode,
            "must be true or false",
        )
        require(isinstance(self.stratified, bool), "EvalConfig", "stratified", self.stratified, "must be true or false")
        if self.shard is not None:
            parse_shard(self.shard, "EvalConfig.shard")  # a ConfigError naming the field
        require(
            is_int(self.seed) and 0 <= self.seed <= SEED_MAX,
            "EvalConfig",
            "seed",
            self.seed,
            f"must be an integer in 0..{SEED_MAX}",
        )
        require(
            is_int(self.workers) and self.workers >= 1, "EvalConfig", "workers", self.workers, "must be an integer >= 1"
        )
        require(isinstance(self.llm_cache, bool), "EvalConfig", "llm_cache", self.llm_cache, "must be true or false")
        require(
            self.llm_cache_dir is None or (isinstance(self.llm_cache_dir, str) and self.llm_cache_dir.strip() != ""),
            "EvalConfig",
            "llm_cache_dir",
            self.llm_cache_dir,
            "must be a path or None (an empty string would mean the working directory)",
        )
        require(
            isinstance(self.count_tokens, bool),
            "EvalConfig",
            "count_tokens",
            self.count_tokens,
            "must be true or false",
        )
        require(
            self.baseline is None or isinstance(self.baseline, str),
            "EvalConfig",
            "baseline",
            self.baseline,
            "must be a run directory or None",
        )

    @classmethod
    def from_dict(cls, values: Mapping) -> EvalConfig:
        """Build from a mapping (a whole configs/eval/*.yaml); errors name the bad field."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"eval config: expected a mapping, got {type(values).__name__}")
        check_fields(cls, values, "eval config")
        v = dict(values)
        p = v.get("pipeline")  # absent or empty (`pipeline:`) = the defaults; 0, "" or [] are refused, not defaults
        v["pipeline"] = PipelineConfig.from_dict({} if p is None else p)
        return cls(**v)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, overrides: Sequence[str] = ()) -> EvalConfig:
        """Load a YAML recipe; ``overrides`` are ``dotted.key=value`` strings (values parsed as YAML)."""
        from lazymem.yamlio import read_mapping

        return cls.from_dict(apply_overrides(read_mapping(path), overrides))

    def to_dict(self) -> dict:
        """Plain JSON-ready values."""
        d = dataclasses.asdict(self)
        d["ids"], d["types"] = list(self.ids), list(self.types)
        d["pipeline"] = self.pipeline.to_dict()
        return d


def apply_overrides(data: Mapping, overrides: Sequence[str]) -> dict:
    """A copy of a nested mapping with ``a.b.c=value`` overrides (value parsed as YAML).

    >>> apply_overrides({"pipeline": {"window": {"w": 2}}}, ["pipeline.window.w=3", "limit=5"])
    {'pipeline': {'window': {'w': 3}}, 'limit': 5}

    A method's setting has two spellings, its section's and the flat one of earlier configs
    (``lazymem.pipeline.config.LEGACY_KEYS``); an override replaces the setting in either:

    >>> apply_overrides({"pipeline": {"lazymem": {"structured": False, "grounded": True}}},
    ...                 ["pipeline.structured=true"])
    {'pipeline': {'lazymem': {'grounded': True}, 'structured': True}}
    """
    import copy

    from lazymem.yamlio import load_yaml

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
        _drop_other_spelling(out, parts)
        try:
            node[parts[-1]] = load_yaml(raw)
        except ConfigError as e:  # one line: where in the value, and the problem
            raise ConfigError(f"override {item!r}: the value, {e}") from None
    return out


def _drop_other_spelling(data: dict, parts: list[str]) -> None:
    """Before an override sets ``pipeline.<flat key>``, ``pipeline.<section>.<field>`` or a whole
    ``pipeline.<section>``, drop what the other spelling of the same settings says (the override wins)."""
    from lazymem.pipeline.config import LEGACY_KEYS

    pipeline = data.get("pipeline")
    if parts[0] != "pipeline" or len(parts) not in (2, 3) or not isinstance(pipeline, dict):
        return
    for old, (section, key) in LEGACY_KEYS.items():
        if len(parts) == 2 and parts[1] == old and isinstance(pipeline.get(section), dict):
            pipeline[section].pop(key, None)
        elif parts[1:] in ([section, key], [section]):
            pipeline.pop(old, None)


FINGERPRINT_VERSION = 3  # the shape hashed: bump it (and keep reading the old ones) when the shape changes
# Fields added to LLMConfig after runs were made: unset, they are left out of the hash (versions 2 and 3), so
# the runs before them stay resumable; version 1 hashed them unset, and runs made so stay resumable too.
LATER_LLM_FIELDS = {"thinking_budget": None, "thinking_budget_mode": "two_phase"}
# Versions 1 and 2 hashed the sections of these methods for every method's runs (LazyMem's settings and the
# extractive section were PipelineConfig fields then); the other methods' sections only for their own runs.
SHARED_BEFORE_V3 = ("lazymem", "extractive")


def config_fingerprint(config: EvalConfig) -> str:
    """sha256 of what decides a question's record (question selection and operational
    settings left out), so a rerun can tell whether earlier records still belong.

    Version 3 hashes the shared pipeline settings and the run's own method's settings only (its section,
    ``pipeline.<method>``): another method's settings, a method added since included, never change it.
    ``config_fingerprints`` also gives the hashes of versions 2 and 1, which a committed run's manifest
    may hold. Secrets (API keys, a base_url's password; ``lazymem.secrets.redact``) are hashed redacted:
    they change no identity, and the redacted config a manifest records gives its own fingerprint back.
    """
    return config_fingerprints(config)[0]


def config_fingerprints(config: EvalConfig) -> tuple[str, ...]:
    """Every fingerprint a run of ``config`` may have been recorded with, the current version's first, then
    those of older versions where they differ: a run whose manifest holds any of them still belongs.

    - version 3 (``fingerprint_payload``): the method's own section only, nested under its name;
    - version 2: the shape before the sections (``PipelineConfig.legacy_dict``: LazyMem's settings and the
      extractive section for every method, NanoMemory's and Mem0's flat for their own runs; a method's
      section that came later for its own runs, nested), a model's later fields left out while unset;
    - version 1: version 2 with those later fields hashed unset.

    >>> c = EvalConfig()
    >>> fps = config_fingerprints(c)
    >>> fps[0] == config_fingerprint(c) and len(fps) in (1, 2, 3) and all(len(f) == 64 for f in fps)
    True
    """
    from lazymem.secrets import redact

    out: list[str] = []
    for version in (3, 2, 1):  # of the redacted payload: a key or URL password is no part of what ran
        fp = _sha256(redact(fingerprint_payload(config, version)))
        if fp not in out:
            out.append(fp)
    return tuple(out)


def fingerprint_payload(config: EvalConfig, version: int = FINGERPRINT_VERSION) -> dict:
    """What fingerprint ``version`` hashes (``config_fingerprints``): the config's values without the
    operational fields.

    >>> p = fingerprint_payload(EvalConfig.from_dict({"pipeline": {"method": "nanomemory"}}))["pipeline"]
    >>> [name for name in ("lazymem", "extractive", "nanomemory", "mem0") if name in p]  # its own section only
    ['nanomemory']
    """
    from lazymem.llm.models import recorded_adapter
    from lazymem.pipeline.methods import settings_classes

    if version not in (1, 2, 3):
        raise ValueError(f"fingerprint version {version}: versions are 1, 2 and 3")
    d = config.to_dict()
    for k in _OPERATIONAL["eval"]:
        d.pop(k, None)
    pipeline, method = config.pipeline, config.pipeline.method
    if version == 3:
        p = pipeline.to_dict()
        for name in settings_classes():
            if name != method:
                p.pop(name, None)
    else:
        from lazymem.pipeline.config import LEGACY_KEYS

        p = pipeline.legacy_dict()
        for old, (section, _) in LEGACY_KEYS.items():
            if section not in SHARED_BEFORE_V3 and section != method:
                p.pop(old, None)
        then = {*SHARED_BEFORE_V3, *(section for section, _ in LEGACY_KEYS.values())}  # the sections of then
        if method in pipeline.sections and method not in then:  # a method with settings added since: its own
            p[method] = pipeline.to_dict()[method]
    d["pipeline"] = p
    for role in ("mpm", "answer", "judge"):
        if p.get(role):
            for k in _OPERATIONAL["llm"]:
                p[role].pop(k, None)
            if p[role].get("adapter") is None:  # a field added later: unset, it leaves older runs resumable
                p[role].pop("adapter", None)
            else:  # a shipped version under one name, whichever alias selects it
                p[role]["adapter"] = recorded_adapter(p[role]["adapter"])
            if version > 1 and p[role].get("thinking_budget") is None:
                for k, default in LATER_LLM_FIELDS.items():
                    if p[role].get(k, default) == default:
                        p[role].pop(k, None)
    for k in _OPERATIONAL["retrieval"]:
        p["retrieval"].pop(k, None)
    # Added later, the judge's JSON mode leaves older runs resumable where it changes nothing: without a judge.
    if d.get("judge") == "none":
        d.pop("judge_json_mode", None)
    return d


def _sha256(payload: dict) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def seeded(config: EvalConfig) -> EvalConfig:
    """The config with the eval seed in both samplings (one seed governs every call)."""
    p = config.pipeline
    return dataclasses.replace(
        config,
        pipeline=dataclasses.replace(
            p,
            mpm_sampling=dataclasses.replace(p.mpm_sampling, seed=config.seed),
            answer_sampling=dataclasses.replace(p.answer_sampling, seed=config.seed),
        ),
    )


def resolve_cache(config: EvalConfig) -> tuple[EvalConfig, str | None]:
    """The config with every model's cache_dir filled in (unless caching is off or set), and that directory."""
    if not config.llm_cache:
        return config, None
    if config.llm_cache_dir:
        cache = str(Path(config.llm_cache_dir).expanduser())
    else:
        from lazymem.paths import cache_root

        cache = str(cache_root() / "llm")
    p = config.pipeline
    repl = {
        role: dataclasses.replace(getattr(p, role), cache_dir=cache)
        for role in ("mpm", "answer", "judge")
        if getattr(p, role) is not None and getattr(p, role).cache_dir is None
    }
    return dataclasses.replace(config, pipeline=dataclasses.replace(p, **repl)), cache


def select_questions(dataset: Dataset, config: EvalConfig) -> list[Question]:
    """The questions to run, in dataset order: split, then ids, then types, then limit (0 or None: no limit),
    then the shard (``shard_questions``)."""
    qs = _select_unsharded(dataset, config)
    return qs if config.shard is None else shard_questions(qs, *parse_shard(config.shard, "EvalConfig.shard"))


def parse_shard(text: Any, where: str = "shard") -> tuple[int, int]:
    """``"i/K"`` as ``(i, K)`` with 0 <= i < K; a ConfigError naming ``where`` otherwise.

    >>> parse_shard("2/3"), parse_shard("0/1")
    ((2, 3), (0, 1))
    >>> parse_shard("3/3", "EvalConfig.shard")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: EvalConfig.shard='3/3': must be 'i/K' with K >= 1 and 0 <= i < K, e.g. '0/4'
    """
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text) if isinstance(text, str) else None
    if m is None or not int(m[1]) < int(m[2]):
        raise ConfigError(f"{where}={text!r}: must be 'i/K' with K >= 1 and 0 <= i < K, e.g. '0/4'")
    return int(m[1]), int(m[2])


def shard_questions(questions: Sequence[T], i: int, k: int) -> list[T]:
    """Shard ``i`` of ``k`` (``EvalConfig.shard``): the questions sorted by id (``.id``, or the item itself),
    every k-th from the i-th, kept in their given order; the k shards are disjoint, complete, and differ
    in size by at most one (``lazymem.eval.shards`` merges their runs).

    >>> qs = [Question(f"q{n}", "t", "?", "a", "h") for n in (10, 2, 1, 30, 3)]
    >>> [[q.id for q in shard_questions(qs, i, 2)] for i in range(2)]  # by id: q1 q10 q2 q3 q30
    [['q2', 'q1', 'q30'], ['q10', 'q3']]
    """
    parse_shard(f"{i}/{k}")
    order = sorted(range(len(questions)), key=lambda n: getattr(questions[n], "id", questions[n]))
    keep = set(order[i::k])
    return [q for n, q in enumerate(questions) if n in keep]


def _select_unsharded(dataset: Dataset, config: EvalConfig) -> list[Question]:
    qs = list(dataset.questions)
    if config.split is not None:
        from lazymem.data import stratified_split

        keep = set(stratified_split(dataset.questions, seed=config.split_seed).ids(config.split))
        qs = [q for q in qs if q.id in keep]
    if config.ids:
        known = {q.id for q in qs}
        missing = [i for i in config.ids if i not in known]
        if missing:
            raise ConfigError(
                f"EvalConfig.ids: {len(missing)} id(s) not among the {len(qs)} selectable questions "
                f"of {dataset.name!r}, e.g. {missing[:3]}"
            )
        wanted = set(config.ids)
        qs = [q for q in qs if q.id in wanted]
    if config.types:
        available = sorted({q.type for q in dataset.questions})
        unknown = [t for t in config.types if not any(t in (q.type, q.abbrev) for q in dataset.questions)]
        if unknown:
            raise ConfigError(f"EvalConfig.types: {unknown} match no question; types here: {available}")
        wanted = set(config.types)
        qs = [q for q in qs if q.type in wanted or q.abbrev in wanted]
    if config.limit and config.stratified:
        return stratified_head(qs, config.limit)
    if config.limit:  # None and 0 both mean every question
        qs = qs[: config.limit]
    return qs


def stratified_head(questions: Sequence[Question], n: int) -> list[Question]:
    """The first questions of each type, ``n`` in all, shared in proportion to the types' counts
    (largest remainder, ties to the larger type), kept in their original order.

    >>> from lazymem.records import Question
    >>> qs = [Question(f"q{i}", t, "?", "a", "h") for i, t in enumerate("aaaaaabbbc")]
    >>> [q.id for q in stratified_head(qs, 5)]
    ['q0', 'q1', 'q2', 'q6', 'q7']
    """
    from collections import Counter

    if n >= len(questions):
        return list(questions)
    counts = Counter(q.type for q in questions)
    exact = {t: n * c / len(questions) for t, c in counts.items()}
    take = {t: int(v) for t, v in exact.items()}
    for t in sorted(counts, key=lambda t: (-(exact[t] - take[t]), -counts[t]))[: n - sum(take.values())]:
        take[t] += 1
    out = []
    for q in questions:
        if take[q.type] > 0:
            out.append(q)
            take[q.type] -= 1
    return out


def quick_config(
    dataset: str,
    method: str = "lazymem",
    *,
    limit: int | None = 2,
    model: str = "smollm2-offline",
    base_url: str = "",
    backend: str = "",
    judge: str = "none",
    judge_model: str = "",
    n: int = 50,
    w: int = 2,
    L: int = 8,
    s: int = 7,
    answer_max_tokens: int = 48,
) -> EvalConfig:
    """The EvalConfig a notebook builds from its parameters: one model as MPM and answerer.

    With ``base_url`` the model is served by an OpenAI-compatible server (vLLM, transformers
    serve) and the MPM decodes freely; without it the model runs in process and an untrained
    small MPM gets schema-constrained decoding (``structured``). A judge always runs on the
    server at ``base_url``. ``backend`` names another backend for the model explicitly
    ("vllm" in process on a GPU node, "fake" for tests: it echoes its prompt).

    >>> c = quick_config("synthetic:messages=50,seed=0", "rag", limit=0, n=20)
    >>> c.limit, c.pipeline.method, c.pipeline.retrieval.n, c.pipeline.answer.backend
    (0, 'rag', 20, 'transformers')
    """
    from lazymem.llm import LLMConfig

    if judge != "none" and not (base_url and judge_model):
        raise ConfigError(f"judge={judge!r} needs a judge model on a server: set base_url and judge_model")
    llm = LLMConfig(backend=backend, model=model) if backend else LLMConfig.local_or_server(model, base_url)
    judge_llm = LLMConfig.local_or_server(judge_model, base_url) if judge != "none" else None
    return EvalConfig.from_dict(
        {
            "dataset": dataset,
            "limit": limit,
            "judge": judge,
            "pipeline": {
                "method": method,
                "structured": method == "lazymem" and llm.backend == "transformers",
                "retrieval": {"n": n},
                "window": {"w": w, "L": L, "s": s},
                "mpm": llm,
                "answer": llm,
                "judge": judge_llm,
                "answer_sampling": {"temperature": 0.0, "max_tokens": answer_max_tokens},
            },
        }
    )
