"""Settings of the query path: ``PipelineConfig``, the same keys as a recipe's ``pipeline:`` section.

Methods (``PipelineConfig.method``, one ``Method`` class each in ``lazymem.pipeline.methods``)
share retrieval, windowing and answering: ``lazymem`` (MPM construction), ``extractive`` (the
training-free ExtractiveProcessor instead of a model), ``rag`` (the paper's RAG TopN baseline: the
pool's messages verbatim, chronologically), ``oracle_turn`` (the gold evidence messages),
``oracle_session`` (the gold sessions), ``nanomemory`` (lazymem.pipeline.baselines), ``mem0`` (a
write-time baseline: Mem0, PyPI ``mem0ai``, ingests each history once with its own LLM calls to
the ``mpm`` server, and a question is answered from ``Memory.search``; lazymem.pipeline.mem0) and
``full`` (the whole history).

A method's own settings live beside its class (``Method.settings_class``) and are the section named
after it: ``lazymem:`` (the MPM's decoding: structured, grounded, KEEP priors, ...), ``extractive:``,
``nanomemory:`` (top_k, context), ``mem0:`` (top_k, chunk, observation_date); ``config.lazymem`` and so
on in Python. The flat spellings of earlier configs and manifests (``structured``, ``keep_prior``,
``nanomemory_top_k``, ``mem0_chunk``, ...: ``LEGACY_KEYS``) still load into their sections.

>>> PipelineConfig.from_dict({"method": "rag", "retrieval": {"n": 20}}).retrieval.n
20
>>> PipelineConfig.from_dict({"method": "rag", "nanomemory_top_k": 5}).nanomemory.top_k
5
>>> PipelineConfig.from_dict({"structured": True}) == PipelineConfig.from_dict({"lazymem": {"structured": True}})
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.construct import BRIDGES
from lazymem.errors import ConfigError, check_fields
from lazymem.fields import h, require
from lazymem.llm import LLMConfig, Sampling
from lazymem.llm.base import CONTENT_ADAPTER_BACKENDS, cpu_backend
from lazymem.llm.models import LAZYMEM_135M, LAZYMEM_135M_VERSIONS, resolve_adapter
from lazymem.pipeline.methods import method_class, method_names, settings_classes
from lazymem.pipeline.methods.base import plain_settings
from lazymem.pipeline.methods.mem0 import MEM0_SERVE_HINT  # noqa: F401 (re-exported)
from lazymem.retrieve import RetrievalConfig, WindowConfig

METHODS = method_names()  # the registered methods (lazymem.pipeline.methods.REGISTRY) at import time
ROLES = ("mpm", "answer", "judge")

# The paper prints no decoding settings for inference. Its MPM was trained to generate at
# most 3,072 tokens (Table "Explicit training hyperparameters", RL max generation length),
# and its judges run at temperature 0; we decode the MPM greedily under that cap. The answer
# cap is ours (the paper's answerer is Qwen3-32B in thinking mode: leave room for the trace).
DEFAULT_MPM_SAMPLING = Sampling(temperature=0.0, max_tokens=3072)
DEFAULT_ANSWER_SAMPLING = Sampling(temperature=0.0, max_tokens=1024)
# LazyMem's decoding settings were PipelineConfig fields before they became its section.
LAZYMEM_FLAT = (
    "structured",
    "structured_trace",
    "grounded",
    "keep_prior",
    "keep_prior_dense",
    "keep_prior_model",
    "trace_independent",
    "schema_max_content",
    "schema_max_reason",
)
# Earlier configs and manifests spelled these settings flat: (section, field) of each old key.
LEGACY_KEYS = {
    "nanomemory_top_k": ("nanomemory", "top_k"),
    "nanomemory_context": ("nanomemory", "context"),
    "mem0_top_k": ("mem0", "top_k"),
    "mem0_chunk": ("mem0", "chunk"),
    "mem0_observation_date": ("mem0", "observation_date"),
    **{key: ("lazymem", key) for key in LAZYMEM_FLAT},
}
_PARTS = (
    ("retrieval", RetrievalConfig),
    ("window", WindowConfig),
    ("mpm", LLMConfig),
    ("answer", LLMConfig),
    ("judge", LLMConfig),
    ("mpm_sampling", Sampling),
    ("answer_sampling", Sampling),
)


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


def _method_sections(given: Any) -> dict[str, Any]:
    """Every registered method's settings, in registry order: as given (a settings object, or a mapping of
    its fields; None: the defaults), the defaults for a method not given."""
    if not isinstance(given, Mapping):
        raise ConfigError(
            f"PipelineConfig.sections: expected a mapping of method name -> settings, got {type(given).__name__}"
        )
    classes = settings_classes()
    unknown = sorted(set(given) - set(classes))
    if unknown:
        raise ConfigError(
            f"PipelineConfig.sections: {unknown} are not methods with settings; those are {list(classes)}"
        )
    clash = sorted(set(classes) & {f.name for f in dataclasses.fields(PipelineConfig)})
    if clash:
        raise ConfigError(f"method registry: {clash} name both a method with settings and a PipelineConfig field")
    return {
        name: _section(cls, {} if given.get(name) is None else given[name], f"pipeline.{name}")
        for name, cls in classes.items()
    }


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that decides one question's answer; the same keys as a recipe's ``pipeline:``.

    Each method's own settings are ``sections[<method>]``: written ``pipeline.<method>:`` in YAML
    (``from_dict``), given as ``PipelineConfig(<method>=...)`` or ``dataclasses.replace(config, <method>=...)``
    in Python (a settings object or a mapping of its fields), read as ``config.<method>``.

    >>> c = PipelineConfig(method="nanomemory", nanomemory={"top_k": 3})
    >>> c.nanomemory.top_k, dataclasses.replace(c, nanomemory={"top_k": 4}).nanomemory.top_k, c.lazymem.structured
    (3, 4, False)
    """

    method: str = field(default="lazymem", metadata=h(f"one of {METHODS}"))
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig, metadata=h("hybrid retrieval (Sec. 3.1)"))
    window: WindowConfig = field(default_factory=WindowConfig, metadata=h("history windowing w, L, s (Sec. 3.2)"))
    mpm: LLMConfig = field(default_factory=LLMConfig, metadata=h("the memory-processing model (method lazymem)"))
    answer: LLMConfig = field(default_factory=LLMConfig, metadata=h("the frozen answer model"))
    judge: LLMConfig | None = field(default=None, metadata=h("the LLM judge (None = no judge model)"))
    mpm_sampling: Sampling = field(
        default=DEFAULT_MPM_SAMPLING, metadata=h("MPM decoding (json_schema is set per window)")
    )
    answer_sampling: Sampling = field(default=DEFAULT_ANSWER_SAMPLING, metadata=h("answer decoding"))
    strip_think: bool = field(default=True, metadata=h("drop a leading <think>...</think> from MPM and answer outputs"))
    bridges: str = field(
        default="none",
        metadata=h(
            "the constructing methods' windows (lazymem, extractive): 'none': every window message is a core "
            "message; 'overlap': messages a sub-window shares with its neighbour sub-window are shown as "
            "previous_bridge / next_bridge"
        ),
    )
    sections: Mapping[str, Any] = field(
        default_factory=dict,
        metadata=h(
            "each method's own settings by method name (its Method.settings_class; YAML: pipeline.<method>); a method "
            "left out gets its defaults"
        ),
    )

    def __post_init__(self):
        require(
            self.method in method_names(), "PipelineConfig", "method", self.method, f"must be one of {method_names()}"
        )
        for name, cls in _PARTS:
            if name != "judge":
                require(
                    isinstance(getattr(self, name), cls),
                    "PipelineConfig",
                    name,
                    getattr(self, name),
                    f"must be a {cls.__name__}",
                )
        require(
            self.judge is None or isinstance(self.judge, LLMConfig),
            "PipelineConfig",
            "judge",
            self.judge,
            "must be an LLMConfig or None",
        )
        # The window's decoding is set per window from pipeline.lazymem: one way to ask for each.
        for key, how in (
            ("json_schema", "set lazymem.structured: true and each window gets decision_schema(n)"),
            ("grounded", "set lazymem.grounded: true and each window gets its message texts"),
            ("trace_keep_bias", "set lazymem.keep_prior and each window gets its messages' priors"),
        ):
            require(
                getattr(self.mpm_sampling, key) is None,
                "PipelineConfig",
                "mpm_sampling",
                self.mpm_sampling,
                f"{key} must be unset: {how}",
            )
        require(
            not self.mpm_sampling.trace_independent,
            "PipelineConfig",
            "mpm_sampling",
            self.mpm_sampling,
            "trace_independent must be unset there: set pipeline.lazymem.trace_independent: true",
        )
        require(
            isinstance(self.strip_think, bool),
            "PipelineConfig",
            "strip_think",
            self.strip_think,
            "must be true or false",
        )
        require(self.bridges in BRIDGES, "PipelineConfig", "bridges", self.bridges, f"must be one of {BRIDGES}")
        object.__setattr__(self, "sections", _method_sections(self.sections))
        method_class(self.method).check(self)  # what the method itself needs (a dense model, a server)

    def __getattr__(self, name: str) -> Any:
        """``config.<method>``: that method's settings (``sections[<method>]``)."""
        sections = self.__dict__.get("sections")
        if sections is not None and not name.startswith("_") and name in sections:
            return sections[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def from_dict(cls, values: Mapping) -> PipelineConfig:
        """Build from a mapping (a recipe's ``pipeline:`` section); errors name the bad field."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"pipeline: expected a mapping, got {type(values).__name__}")
        v = _nest_legacy_keys(values)
        mode = v.pop("mpm_decoding", None)
        if mode is not None:
            v.update(_card_decoding(v, mode))
        classes = settings_classes()
        known = ({f.name for f in dataclasses.fields(cls)} - {"sections"}) | set(classes)
        unknown = sorted(set(v) - known)
        if unknown:
            raise ConfigError(f"pipeline: unknown field(s) {unknown}; known: {sorted(known)}")
        sections = {name: v.pop(name) for name in classes if name in v}
        for name, builder in _PARTS:
            if name in v and v[name] is not None:
                v[name] = _section(builder, v[name], f"pipeline.{name}")
        sections = _method_sections(sections)
        try:
            return cls(**v, sections=sections)
        except ConfigError as e:
            raise ConfigError(f"pipeline: {e}") from None

    @classmethod
    def from_yaml(cls, path: str) -> PipelineConfig:
        """Load a YAML file: its ``pipeline:`` section, or the whole file when it has none."""
        from lazymem.yamlio import read_mapping

        data = read_mapping(path)
        return cls.from_dict(data.get("pipeline", data))

    def to_dict(self) -> dict:
        """Plain JSON-ready values, each method's settings under its name (API keys never appear: LLMConfig
        holds only the variable name)."""
        d = dataclasses.asdict(self)
        d.pop("sections")
        d["mpm_sampling"], d["answer_sampling"] = self.mpm_sampling.as_dict(), self.answer_sampling.as_dict()
        d["retrieval"] = self.retrieval.as_dict()  # unset later fields left out: older fingerprints stay valid
        d.update({name: plain_settings(settings) for name, settings in self.sections.items()})
        return d

    def legacy_dict(self) -> dict:
        """``to_dict`` in the shape fingerprint versions 1 and 2 hashed, from before the method sections
        (``lazymem.eval.config``): LazyMem's settings flat, as the PipelineConfig fields they were then (one
        added later left out while unset: ``grounded``, ``keep_prior``, ``keep_prior_dense`` with its model,
        ``trace_independent``), NanoMemory's and Mem0's flat too (``nanomemory_top_k``, ``mem0_chunk``, ...),
        the extractive section as it was; a method registered since has no place in it."""
        d = self.to_dict()
        sections = {name: d.pop(name) for name in self.sections}
        d["extractive"] = sections["extractive"]
        for old, (section, key) in LEGACY_KEYS.items():
            d[old] = sections[section][key]
        for key in ("grounded", "keep_prior", "trace_independent"):
            if not d[key]:
                d.pop(key)
        if not d["keep_prior_dense"]:
            d.pop("keep_prior_dense")
            d.pop("keep_prior_model")
        return d


def _init_by_method(init):
    """``PipelineConfig.__init__`` that also takes each method's settings by the method's name (so
    ``dataclasses.replace(config, lazymem=...)`` works too); they go into ``sections``."""

    @functools.wraps(init)
    def __init__(self, *args: Any, sections: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        names = settings_classes()
        by_method = {name: kwargs.pop(name) for name in list(kwargs) if name in names}
        init(self, *args, sections={**(sections or {}), **by_method}, **kwargs)

    return __init__


PipelineConfig.__init__ = _init_by_method(PipelineConfig.__init__)  # type: ignore[method-assign]


def _nest_legacy_keys(values: Mapping) -> dict:
    """``values`` with the flat keys of earlier configs (``LEGACY_KEYS``) moved into their sections.

    >>> _nest_legacy_keys({"method": "rag", "nanomemory_top_k": 5, "structured": True})
    {'method': 'rag', 'nanomemory': {'top_k': 5}, 'lazymem': {'structured': True}}
    """
    v = dict(values)
    for old, (section, key) in LEGACY_KEYS.items():
        if old not in v:
            continue
        part = v.get(section)
        part = dataclasses.asdict(part) if dataclasses.is_dataclass(part) else {} if part is None else part
        if not isinstance(part, Mapping):
            continue  # the section's own error names it
        if key in part:
            raise ConfigError(f"pipeline: {old} and {section}.{key} both set: keep {section}.{key}")
        v[section] = {**part, key: v.pop(old)}
    return v


# What `pipeline.mpm_decoding: card` sets when a card has no `decoding` (v1 shipped with free generation).
FREE_DECODING = {
    "structured": False,
    "structured_trace": False,
    "grounded": False,
    "keep_prior": 0.0,
    "keep_prior_dense": 0.0,
    "trace_independent": False,
}


def shipped_decoding(name: str) -> tuple[dict, float | None]:
    """The decoding a shipped LazyMem-135M version was chosen with, read from its card (``card.json``): its
    ``pipeline.lazymem`` settings (structured, trace, grounded, KEEP priors; ``FREE_DECODING`` updated with the card's
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
        raise ConfigError(
            f"adapter {name!r}: only a shipped LazyMem-135M version ({LAZYMEM_135M}, "
            f"{', '.join(LAZYMEM_135M_VERSIONS)}) has a card to read its decoding from; write the "
            "decoding out (structured, grounded, keep_prior, mpm_sampling.logit_bias) for this adapter"
        )
    path = Path(resolve_adapter(name)) / "card.json"
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the model card ({e})") from None


def _card_writer(mpm: Any, adapter: str) -> Any:
    """``mpm`` with the content adapter the card of ``adapter`` names (``shipped_writer``) in its
    ``extra_body.content_adapter``; None where the card names none; on llama.cpp also ``extra_body.decode: batched``
    (a config's own ``decode`` stays). The in-process engines run it; another engine,
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
    if backend == "llamacpp":  # a question's windows in one batch: the same decisions (lazymem.llm.llamacpp_batch)
        extra.setdefault("decode", "batched")
    if "content_adapter" in extra and extra["content_adapter"] is None:  # the card's decoding without its writer
        extra.pop("content_adapter")
        return _with_extra(mpm, extra or None)
    if "content_adapter" in extra and extra["content_adapter"] != writer:
        raise ConfigError(
            f"pipeline.mpm_decoding: card sets the content adapter of {adapter!r} from its model card "
            f"({writer!r}), and the config sets pipeline.mpm.extra_body.content_adapter: "
            f"{extra['content_adapter']!r}: drop it, or mpm_decoding to write the decoding out"
        )
    if backend not in CONTENT_ADAPTER_BACKENDS:
        raise ConfigError(
            f"pipeline.mpm_decoding: card: the card of {adapter!r} names a content adapter ({writer!r}, "
            "extra_body.content_adapter: each KEEP's content written by a second adapter), which the "
            f"in-process engines (llamacpp, transformers) run; backend {backend!r} cannot. Write the "
            "decoding out (mpm_decoding: null and the card's keys) to run its decisions with their own "
            "contents there"
        )
    extra["content_adapter"] = writer
    return _with_extra(mpm, extra)


def _with_extra(mpm: Any, extra: dict | None) -> Any:
    return dataclasses.replace(mpm, extra_body=extra) if isinstance(mpm, LLMConfig) else {**mpm, "extra_body": extra}


def _card_decoding(values: Mapping, mode: Any) -> dict:
    """``pipeline.mpm_decoding: card``: the decoding the adapter's model card ships with (``pipeline.lazymem``:
    structured, trace, grounded, KEEP priors; and ``mpm_sampling.logit_bias``; ``shipped_decoding``; its content
    adapter, ``mpm.extra_body.content_adapter``: ``shipped_writer``). A config
    that also sets one of those keys to another value is refused (say one or the other); the other sampling
    settings (temperature, max_tokens) stay the config's. Runs record the resolved values, so their
    fingerprints are those of the same decoding written out."""
    if mode != "card":
        raise ConfigError(
            f"pipeline.mpm_decoding: 'card' (the shipped adapter's decoding, read from its model "
            f"card) or null, got {mode!r}"
        )
    mpm = values.get("mpm")
    adapter = mpm.adapter if isinstance(mpm, LLMConfig) else mpm.get("adapter") if isinstance(mpm, Mapping) else None
    if not adapter:
        raise ConfigError(
            "pipeline.mpm_decoding: card reads the decoding from a shipped adapter's card; set "
            "pipeline.mpm.adapter (lazymem-135m, lazymem-135m-v1, lazymem-135m-v2)"
        )
    fields, bias = shipped_decoding(adapter)
    sampling = values.get("mpm_sampling")
    bias_map = None if bias is None else {" KEEP": bias}
    given = sampling.logit_bias if isinstance(sampling, Sampling) else (sampling or {}).get("logit_bias")
    section = values.get("lazymem")  # the flat keys of earlier configs are already in it (_nest_legacy_keys)
    if dataclasses.is_dataclass(section):
        section = dataclasses.asdict(section)
    if section is not None and not isinstance(section, Mapping):
        raise ConfigError(
            f"pipeline.lazymem: expected a mapping of LazyMemSettings fields, got {type(section).__name__}"
        )
    section = dict(section or {})
    clashes = [
        f"lazymem.{k}: {section[k]!r} (card: {v!r})" for k, v in fields.items() if k in section and section[k] != v
    ]
    if given is not None and given != bias_map:
        clashes.append(f"mpm_sampling.logit_bias: {given!r} (card: {bias_map!r})")
    if clashes:
        raise ConfigError(
            f"pipeline.mpm_decoding: card sets the decoding of {adapter!r} from its model card, and the "
            f"config sets {'; '.join(clashes)}: drop those keys, or mpm_decoding to write them out"
        )
    out: dict[str, Any] = {"lazymem": {**section, **fields}}
    if (mpm_written := _card_writer(mpm, adapter)) is not None:
        out["mpm"] = mpm_written
    if isinstance(sampling, Sampling):
        out["mpm_sampling"] = dataclasses.replace(sampling, logit_bias=bias_map)
    else:
        base = DEFAULT_MPM_SAMPLING.as_dict() if sampling is None else dict(sampling)
        out["mpm_sampling"] = {**base, "logit_bias": bias_map}
    return out
