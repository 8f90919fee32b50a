"""Settings of the query path: ``PipelineConfig``, the same keys as a recipe's ``pipeline:`` section.

Methods (``PipelineConfig.method``, one ``Method`` class each in ``lazymem.pipeline.methods``)
share retrieval and answering: ``lazymem`` (MPM construction), ``extractive`` (the training-free
ExtractiveProcessor instead of a model), ``rag`` (the paper's RAG TopN baseline: the pool's
messages verbatim, chronologically), ``oracle_turn`` (the gold evidence messages),
``oracle_session`` (the gold sessions), ``nanomemory`` (lazymem.pipeline.baselines), ``mem0`` (a
write-time baseline: Mem0, PyPI ``mem0ai``, ingests each history once with its own LLM calls to
the ``mpm`` server, and a question is answered from ``Memory.search``; lazymem.pipeline.mem0) and
``full`` (the whole history). A method's own settings are its section: ``extractive:``,
``nanomemory:`` (top_k, context), ``mem0:`` (top_k, chunk, observation_date). The flat spellings
of earlier configs and manifests (``nanomemory_top_k``, ``mem0_chunk``, ...) still load.

>>> PipelineConfig.from_dict({"method": "rag", "retrieval": {"n": 20}}).retrieval.n
20
>>> PipelineConfig.from_dict({"method": "rag", "nanomemory_top_k": 5}).nanomemory.top_k
5
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.construct import BRIDGES, ExtractiveConfig
from lazymem.construct.prior import KeepPrior
from lazymem.errors import ConfigError, check_fields
from lazymem.fields import h, require
from lazymem.llm import LLMConfig, Sampling
from lazymem.llm.base import CONTENT_ADAPTER_BACKENDS, cpu_backend
from lazymem.llm.models import LAZYMEM_135M, LAZYMEM_135M_VERSIONS, resolve_adapter
from lazymem.pipeline.methods import method_class, method_names
from lazymem.pipeline.methods.mem0 import MEM0_SERVE_HINT, Mem0Settings  # noqa: F401 (MEM0_SERVE_HINT re-exported)
from lazymem.pipeline.methods.nanomemory import NanoMemorySettings
from lazymem.retrieve import RetrievalConfig, WindowConfig

METHODS = method_names()  # the registered methods (lazymem.pipeline.methods.REGISTRY) at import time
ROLES = ("mpm", "answer", "judge")
GROUNDED_BACKENDS = ("transformers", "llamacpp", "fake")  # can enforce Sampling.grounded

# The paper prints no decoding settings for inference. Its MPM was trained to generate at
# most 3,072 tokens (Table "Explicit training hyperparameters", RL max generation length),
# and its judges run at temperature 0; we decode the MPM greedily under that cap. The answer
# cap is ours (the paper's answerer is Qwen3-32B in thinking mode: leave room for the trace).
DEFAULT_MPM_SAMPLING = Sampling(temperature=0.0, max_tokens=3072)
DEFAULT_ANSWER_SAMPLING = Sampling(temperature=0.0, max_tokens=1024)
# Earlier configs and manifests spelled the method sections flat: (section, field) of each old key.
LEGACY_KEYS = {"nanomemory_top_k": ("nanomemory", "top_k"), "nanomemory_context": ("nanomemory", "context"),
               "mem0_top_k": ("mem0", "top_k"), "mem0_chunk": ("mem0", "chunk"),
               "mem0_observation_date": ("mem0", "observation_date")}
SECTIONS = (("retrieval", RetrievalConfig), ("window", WindowConfig), ("mpm", LLMConfig), ("answer", LLMConfig),
            ("judge", LLMConfig), ("mpm_sampling", Sampling), ("answer_sampling", Sampling),
            ("extractive", ExtractiveConfig), ("nanomemory", NanoMemorySettings), ("mem0", Mem0Settings))


def _section(cls, values: Any, where: str):
    """Build a nested config dataclass from a YAML mapping, naming the section on errors."""
    if isinstance(values, cls):
        return values
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping of {cls.__name__} fields, got {type(values).__name__}")
    check_fields(cls, values, where)
    try:
        return cls(**values)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that decides one question's answer; the same keys as a recipe's ``pipeline:``."""

    method: str = field(default="lazymem", metadata=h(f"one of {METHODS}"))
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig, metadata=h("hybrid retrieval (Sec. 3.1)"))
    window: WindowConfig = field(default_factory=WindowConfig, metadata=h("history windowing w, L, s (Sec. 3.2)"))
    mpm: LLMConfig = field(default_factory=LLMConfig, metadata=h("the memory-processing model (method lazymem)"))
    answer: LLMConfig = field(default_factory=LLMConfig, metadata=h("the frozen answer model"))
    judge: LLMConfig | None = field(default=None, metadata=h("the LLM judge (None = no judge model)"))
    structured: bool = field(
        default=False,
        metadata=h("constrain MPM decoding to decision_schema(n) of each window (untrained small models need it)"))
    structured_trace: bool = field(
        default=False,
        metadata=h("structured: the MPM writes its n-line <think> trace before the array, whose ops follow it "
                   "(models trained with teacher gold-trace, e.g. LazyMem-135M; transformers or llamacpp)"))
    grounded: bool = field(
        default=False,
        metadata=h("grounded decoding: every KEEP's compressed_content can only be a verbatim span of its own "
                   "message (free or structured; backends transformers and llamacpp; LazyMem-135M's default)"))
    keep_prior: float = field(
        default=0.0,
        metadata=h("a lexical KEEP prior: where the MPM writes the op of message i's <think> trace line, keep_prior x "
                   "(the share of the query's content words message i has: the extractive processor's "
                   "lexical_scores) is added to ' KEEP''s logit, beside mpm_sampling.logit_bias (the prompt's "
                   "rule 11 as a decoding prior; 0 = off; backends transformers and llamacpp, models that write "
                   "a trace, e.g. LazyMem-135M)"))
    keep_prior_dense: float = field(
        default=0.0,
        metadata=h("a dense KEEP prior beside keep_prior: keep_prior_dense x (the cosine similarity of the question "
                   "and message i under keep_prior_model) is added to ' KEEP''s logit at message i's trace line "
                   "(lazymem.construct.prior.KeepPrior; 0 = off; same backends as keep_prior)"))
    keep_prior_model: str = field(
        default="minilm-offline",
        metadata=h("keep_prior_dense's sentence encoder (a weight is chosen for one encoder: all-MiniLM-L6-v2, "
                   "'minilm-offline', for LazyMem-135M's)"))
    trace_independent: bool = field(
        default=False,
        metadata=h("structured_trace: decide each message's op without the ops before it (its trace line read with "
                   "every earlier op DROP: KEEP where ' KEEP''s logit, KEEP bias and prior added, is at least "
                   "' DROP''s; Sampling.trace_independent), so a window can keep more than the one message a model "
                   "trained on one-gold windows keeps after its first KEEP; backends transformers and llamacpp"))
    mpm_sampling: Sampling = field(default=DEFAULT_MPM_SAMPLING,
                                   metadata=h("MPM decoding (json_schema is set per window)"))
    answer_sampling: Sampling = field(default=DEFAULT_ANSWER_SAMPLING, metadata=h("answer decoding"))
    schema_max_content: int = field(default=512,
                                    metadata=h("structured: max characters of a KEEP's compressed_content"))
    schema_max_reason: int = field(default=128, metadata=h("structured: max characters of a decision's reason"))
    strip_think: bool = field(default=True,
                              metadata=h("drop a leading <think>...</think> from MPM and answer outputs"))
    bridges: str = field(
        default="none",
        metadata=h("'none': every window message is a core message; 'overlap': messages a sub-window shares with "
                   "its neighbour sub-window are shown as previous_bridge / next_bridge"))
    extractive: ExtractiveConfig = field(default_factory=ExtractiveConfig,
                                         metadata=h("method extractive: threshold, mode"))
    nanomemory: NanoMemorySettings = field(default_factory=NanoMemorySettings,
                                           metadata=h("method nanomemory: top_k, context"))
    mem0: Mem0Settings = field(default_factory=Mem0Settings,
                               metadata=h("method mem0: top_k, chunk, observation_date"))

    def __post_init__(self):
        require(self.method in method_names(), "PipelineConfig", "method", self.method,
                f"must be one of {method_names()}")
        for name, cls in SECTIONS:
            if name != "judge":
                require(isinstance(getattr(self, name), cls), "PipelineConfig", name, getattr(self, name),
                        f"must be a {cls.__name__}")
        require(self.judge is None or isinstance(self.judge, LLMConfig), "PipelineConfig", "judge", self.judge,
                "must be an LLMConfig or None")
        require(isinstance(self.structured, bool), "PipelineConfig", "structured", self.structured,
                "must be true or false")
        require(isinstance(self.structured_trace, bool), "PipelineConfig", "structured_trace", self.structured_trace,
                "must be true or false")
        require(not self.structured_trace or self.mpm.backend in ("transformers", "llamacpp", "fake"),
                "PipelineConfig", "structured_trace", self.structured_trace,
                "needs backend transformers or llamacpp (the array follows the trace token by token, or in a "
                "second pass; a server's JSON schema cannot make it)")
        require(isinstance(self.grounded, bool), "PipelineConfig", "grounded", self.grounded, "must be true or false")
        require(not self.grounded or self.mpm.backend in GROUNDED_BACKENDS, "PipelineConfig", "grounded", self.grounded,
                f"needs token-level control of the MPM's decoding, which backends {GROUNDED_BACKENDS} have; "
             f"mpm.backend {self.mpm.backend!r} (an OpenAI-compatible server, vLLM) cannot do grounded decoding: "
             "set grounded: false (the rewritten count still measures it)")
        require(isinstance(self.trace_independent, bool), "PipelineConfig", "trace_independent",
                self.trace_independent, "must be true or false")
        require(not self.trace_independent or (self.structured and self.structured_trace), "PipelineConfig",
                "trace_independent", self.trace_independent,
                "needs structured: true and structured_trace: true (the array follows the decided trace)")
        require(not self.mpm_sampling.trace_independent, "PipelineConfig", "mpm_sampling", self.mpm_sampling,
                "trace_independent must be unset there: set pipeline.trace_independent: true")
        try:
            self.keep_prior_weights  # noqa: B018  (KeepPrior checks the weights and the encoder's name)
        except ConfigError as e:
            raise ConfigError(f"PipelineConfig (keep_prior = KeepPrior.lexical, keep_prior_dense = dense, "
                              f"keep_prior_model = dense_model): {e}") from None
        require(not self.keep_prior or self.mpm.backend in GROUNDED_BACKENDS, "PipelineConfig", "keep_prior",
                self.keep_prior, f"needs a logit bias that changes line by line, which backends {GROUNDED_BACKENDS} "
                f"give; mpm.backend {self.mpm.backend!r} cannot: set keep_prior: 0")
        require(not self.keep_prior_dense or self.mpm.backend in GROUNDED_BACKENDS, "PipelineConfig",
                "keep_prior_dense", self.keep_prior_dense, f"needs a logit bias that changes line by line, which "
                f"backends {GROUNDED_BACKENDS} give; mpm.backend {self.mpm.backend!r} cannot: set keep_prior_dense: 0")
        require(self.mpm_sampling.trace_keep_bias is None, "PipelineConfig", "mpm_sampling", self.mpm_sampling,
                "trace_keep_bias must be unset: set keep_prior and each window gets its messages' priors")
        require(self.mpm_sampling.grounded is None, "PipelineConfig", "mpm_sampling", self.mpm_sampling,
                "grounded must be unset: set grounded: true and each window gets its message texts")
        require(isinstance(self.strip_think, bool), "PipelineConfig", "strip_think", self.strip_think,
                "must be true or false")
        require(self.mpm_sampling.json_schema is None, "PipelineConfig", "mpm_sampling", self.mpm_sampling,
                "json_schema must be unset: set structured: true and each window gets decision_schema(n)")
        for name in ("schema_max_content", "schema_max_reason"):
            v = getattr(self, name)
            require(isinstance(v, int) and not isinstance(v, bool) and v >= (1 if name == "schema_max_content" else 0),
                    "PipelineConfig", name, getattr(self, name),
                    "must be an integer >= 1" if name == "schema_max_content" else "must be an integer >= 0")
        require(self.bridges in BRIDGES, "PipelineConfig", "bridges", self.bridges, f"must be one of {BRIDGES}")
        method_class(self.method).check(self)  # what the method itself needs (a dense model, a server)

    @classmethod
    def from_dict(cls, values: Mapping) -> PipelineConfig:
        """Build from a mapping (a recipe's ``pipeline:`` section); errors name the bad field."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"pipeline: expected a mapping, got {type(values).__name__}")
        v = dict(values)
        for old, (section, key) in LEGACY_KEYS.items():
            if old in v:
                part = v.get(section)
                part = dict(part) if isinstance(part, Mapping) else {} if part is None else part
                if isinstance(part, Mapping):
                    if key in part:
                        raise ConfigError(f"pipeline: {old} and {section}.{key} both set: keep {section}.{key}")
                    part[key] = v.pop(old)
                v[section] = part
        mode = v.pop("mpm_decoding", None)
        if mode is not None:
            v.update(_card_decoding(v, mode))
        check_fields(cls, v, "pipeline")
        for name, builder in SECTIONS:
            if name in v and v[name] is not None:
                v[name] = _section(builder, v[name], f"pipeline.{name}")
        try:
            return cls(**v)
        except ConfigError as e:
            raise ConfigError(f"pipeline: {e}") from None

    @classmethod
    def from_yaml(cls, path: str) -> PipelineConfig:
        """Load a YAML file: its ``pipeline:`` section, or the whole file when it has none."""
        from lazymem.yamlio import read_mapping

        data = read_mapping(path)
        return cls.from_dict(data.get("pipeline", data))

    def to_dict(self) -> dict:
        """Plain JSON-ready values (API keys never appear: LLMConfig holds only the variable name)."""
        d = dataclasses.asdict(self)
        d["mpm_sampling"], d["answer_sampling"] = self.mpm_sampling.as_dict(), self.answer_sampling.as_dict()
        d["retrieval"] = self.retrieval.as_dict()  # unset later fields left out: older fingerprints stay valid
        if not self.grounded:  # likewise: runs from before the option keep their fingerprint
            d.pop("grounded")
        if not self.keep_prior:  # likewise
            d.pop("keep_prior")
        if not self.trace_independent:  # likewise
            d.pop("trace_independent")
        if not self.keep_prior_dense:  # likewise
            d.pop("keep_prior_dense")
            d.pop("keep_prior_model")
        return d

    @property
    def keep_prior_weights(self) -> KeepPrior:
        """The per-message KEEP prior of ``keep_prior``, ``keep_prior_dense`` and ``keep_prior_model``."""
        return KeepPrior(self.keep_prior, self.keep_prior_dense, self.keep_prior_model)

    def legacy_dict(self) -> dict:
        """``to_dict`` in the flat shape of fingerprint version 1 (method sections as ``nanomemory_top_k``,
        ``mem0_chunk``, ...), so runs made before the sections stay resumable (``config_fingerprint``)."""
        d = self.to_dict()
        for old, (section, key) in LEGACY_KEYS.items():
            d[old] = d[section][key]
        for section in {section for section, _ in LEGACY_KEYS.values()}:
            d.pop(section)
        return d


# What `pipeline.mpm_decoding: card` sets when a card has no `decoding` (v1 shipped with free generation).
FREE_DECODING = {"structured": False, "structured_trace": False, "grounded": False, "keep_prior": 0.0,
                 "keep_prior_dense": 0.0, "trace_independent": False}


def shipped_decoding(name: str) -> tuple[dict, float | None]:
    """The decoding a shipped LazyMem-135M version was chosen with, read from its card (``card.json``): the
    pipeline settings (structured, trace, grounded, KEEP priors; ``FREE_DECODING`` updated with the card's
    ``decoding``) and its KEEP logit bias (None: none chosen). Only shipped versions have a card.

    >>> fields, bias = shipped_decoding("lazymem-135m-v1")
    >>> fields["structured"], bias
    (False, 1.734601)
    """
    path, card = _read_card(name)
    fields = dict(FREE_DECODING, **(card.get("decoding") or {}))
    unknown = set(fields) - set(FREE_DECODING) - {"keep_prior_model"}
    if unknown:
        raise ConfigError(f"{path}: decoding field(s) {sorted(unknown)} are not pipeline decoding settings")
    bias = (card.get("keep_bias") or {}).get("keep_bias")
    return fields, bias


def shipped_writer(name: str) -> str | None:
    """The content adapter a shipped LazyMem-135M version's card names (``content_adapter.name``: it writes each
    KEEP's content after the version's decisions, ``extra_body.content_adapter``); None where the card names none.

    >>> shipped_writer("lazymem-135m-v1") is None
    True
    """
    return ((_read_card(name)[1].get("content_adapter") or {}).get("name")) or None


def _read_card(name: str) -> tuple[Path, dict]:
    """The card.json of a shipped LazyMem-135M version (path, contents); another adapter has none."""
    if name != LAZYMEM_135M and name not in LAZYMEM_135M_VERSIONS:
        raise ConfigError(f"adapter {name!r}: only a shipped LazyMem-135M version ({LAZYMEM_135M}, "
                          f"{', '.join(LAZYMEM_135M_VERSIONS)}) has a card to read its decoding from; write the "
                          "decoding out (structured, grounded, keep_prior, mpm_sampling.logit_bias) for this adapter")
    path = Path(resolve_adapter(name)) / "card.json"
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the model card ({e})") from None


def _card_writer(mpm: Any, adapter: str) -> Any:
    """``mpm`` with the content adapter the card of ``adapter`` names (``shipped_writer``) in its
    ``extra_body.content_adapter``; None where the card names none. The in-process engines run it; another engine,
    or a config naming another content adapter, is refused (write the decoding out instead). A config setting
    ``content_adapter: null`` gets the card's decoding without it: the version's decisions with its own contents."""
    writer = shipped_writer(adapter)
    if writer is None:
        return None
    if isinstance(mpm, LLMConfig):
        backend, extra = mpm.backend, dict(mpm.extra_body or {})
    else:
        backend, extra = mpm.get("backend", "transformers"), dict(mpm.get("extra_body") or {})
        if backend == "auto":
            backend = cpu_backend(mpm.get("model", "smollm2-offline"))
    if "content_adapter" in extra and extra["content_adapter"] is None:  # the card's decoding without its writer
        extra.pop("content_adapter")
        return _with_extra(mpm, extra or None)
    if "content_adapter" in extra and extra["content_adapter"] != writer:
        raise ConfigError(f"pipeline.mpm_decoding: card sets the content adapter of {adapter!r} from its model card "
                          f"({writer!r}), and the config sets pipeline.mpm.extra_body.content_adapter: "
                          f"{extra['content_adapter']!r}: drop it, or mpm_decoding to write the decoding out")
    if backend not in CONTENT_ADAPTER_BACKENDS:
        raise ConfigError(f"pipeline.mpm_decoding: card: the card of {adapter!r} names a content adapter ({writer!r}, "
                          "extra_body.content_adapter: each KEEP's content written by a second adapter), which the "
                          f"in-process engines (llamacpp, transformers) run; backend {backend!r} cannot. Write the "
                          "decoding out (mpm_decoding: null and the card's keys) to run its decisions with their own "
                          "contents there")
    extra["content_adapter"] = writer
    return _with_extra(mpm, extra)


def _with_extra(mpm: Any, extra: dict | None) -> Any:
    return dataclasses.replace(mpm, extra_body=extra) if isinstance(mpm, LLMConfig) else {**mpm, "extra_body": extra}


def _card_decoding(values: Mapping, mode: Any) -> dict:
    """``pipeline.mpm_decoding: card``: the decoding the adapter's model card ships with (structured, trace,
    grounded, KEEP priors and ``mpm_sampling.logit_bias``; ``shipped_decoding``; its content adapter,
    ``mpm.extra_body.content_adapter``: ``shipped_writer``). A config
    that also sets one of those keys to another value is refused (say one or the other); the other sampling
    settings (temperature, max_tokens) stay the config's. Runs record the resolved values, so their
    fingerprints are those of the same decoding written out."""
    if mode != "card":
        raise ConfigError(f"pipeline.mpm_decoding: 'card' (the shipped adapter's decoding, read from its model "
                          f"card) or null, got {mode!r}")
    mpm = values.get("mpm")
    adapter = mpm.adapter if isinstance(mpm, LLMConfig) else mpm.get("adapter") if isinstance(mpm, Mapping) else None
    if not adapter:
        raise ConfigError("pipeline.mpm_decoding: card reads the decoding from a shipped adapter's card; set "
                          "pipeline.mpm.adapter (lazymem-135m, lazymem-135m-v1, lazymem-135m-v2)")
    fields, bias = shipped_decoding(adapter)
    sampling = values.get("mpm_sampling")
    bias_map = None if bias is None else {" KEEP": bias}
    given = sampling.logit_bias if isinstance(sampling, Sampling) else (sampling or {}).get("logit_bias")
    clashes = [f"{k}: {values[k]!r} (card: {v!r})" for k, v in fields.items() if k in values and values[k] != v]
    if given is not None and given != bias_map:
        clashes.append(f"mpm_sampling.logit_bias: {given!r} (card: {bias_map!r})")
    if clashes:
        raise ConfigError(f"pipeline.mpm_decoding: card sets the decoding of {adapter!r} from its model card, and the "
                          f"config sets {'; '.join(clashes)}: drop those keys, or mpm_decoding to write them out")
    if (mpm_written := _card_writer(mpm, adapter)) is not None:
        fields["mpm"] = mpm_written
    if isinstance(sampling, Sampling):
        fields["mpm_sampling"] = dataclasses.replace(sampling, logit_bias=bias_map)
    else:
        base = DEFAULT_MPM_SAMPLING.as_dict() if sampling is None else dict(sampling)
        fields["mpm_sampling"] = {**base, "logit_bias": bias_map}
    return fields
