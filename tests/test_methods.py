"""Methods are classes registered by name: the pipeline calls them, the rest of the project asks them.

Most tests below run once per registered method (``method_names()``), so a new method adds cases
here, not failures; tests/test_method_settings.py adds the toy method of docs/ARCHITECTURE.md and
runs it end to end.
"""

from __future__ import annotations

import dataclasses

import pytest
from fakerun import FAKE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)
from test_pipeline import FixedRetriever, Q, WordEncoder, keep_matching, make_history

from lazymem.errors import ConfigError
from lazymem.eval.config import EvalConfig, config_fingerprint, fingerprint_payload
from lazymem.llm import FakeBackend
from lazymem.pipeline import LazyMemPipeline, PipelineConfig
from lazymem.pipeline.methods import Method, method_class, method_names, settings_classes
from lazymem.pipeline.methods.base import plain_settings
from lazymem.prompts import PROMPTS

SERVER = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}  # what mem0's check asks for


def config_for(name: str, **pipeline) -> EvalConfig:
    """A config every method accepts (mem0 needs its mpm on a server, nanomemory a dense model)."""
    return EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": name, "mpm": SERVER, **pipeline}})


@pytest.mark.parametrize("name", method_names())
def test_a_registered_method_is_a_method_named_as_registered(name):
    from lazymem.eval.paper import PAPER_SYSTEM

    cls = method_class(name)
    assert issubclass(cls, Method) and cls.name == name and isinstance(cls.label, str) and cls.label
    assert (PAPER_SYSTEM.get(name) == cls.label) if cls.in_paper else name not in PAPER_SYSTEM


@pytest.mark.parametrize("name", method_names())
def test_what_it_says_it_does_hangs_together(name):
    cls = method_class(name)
    if cls.constructs:  # it labels the windows around the pool
        assert cls.retrieves and cls.processing_stage and callable(getattr(cls, "window_outputs", None))
    assert not cls.retrieves or cls.uses_dense  # the pool is hybrid: dense and BM25
    assert cls.mpm_client or cls.uses_mpm  # its own client to the mpm role is still that role
    assert cls.__new__(cls).answer_prompt in PROMPTS


@pytest.mark.parametrize("name", method_names())
def test_its_settings_are_the_config_section_of_its_name(name):
    cls, c = method_class(name), PipelineConfig()
    if cls.settings_class is None:
        assert name not in c.sections and name not in settings_classes()
        with pytest.raises(ConfigError, match=rf"pipeline: unknown field\(s\) \['{name}'\]"):
            PipelineConfig.from_dict({name: {}})
        return
    default = cls.settings_class()
    assert dataclasses.is_dataclass(default) and cls.settings_class.__dataclass_params__.frozen
    assert settings_classes()[name] is cls.settings_class and c.sections[name] == default == getattr(c, name)
    assert c.to_dict()[name] == plain_settings(default) and PipelineConfig.from_dict({name: {}}) == c
    assert PipelineConfig.from_dict(c.to_dict()) == c and PipelineConfig(**{name: default}) == c
    with pytest.raises(ConfigError, match=rf"pipeline.{name}: unknown field\(s\) \['no_such_setting'\]"):
        PipelineConfig.from_dict({name: {"no_such_setting": 1}})


@pytest.mark.parametrize("name", method_names())
def test_its_settings_enter_its_own_runs_fingerprint_only(name):
    cls = method_class(name)
    hashed = fingerprint_payload(config_for(name))["pipeline"]
    assert set(hashed) & set(settings_classes()) == ({name} if cls.settings_class else set())
    if cls.settings_class is not None:  # another method's runs leave its section out
        assert all(
            name not in fingerprint_payload(config_for(other))["pipeline"] for other in method_names() if other != name
        )


@pytest.mark.parametrize("name", method_names())
def test_the_dry_run_can_ask_it_what_it_calls(name):
    from lazymem.data import load_dataset

    cls, c = method_class(name), config_for(name).pipeline
    ds = load_dataset(SYNTH)
    calls = cls.calls(c, ds, list(ds.questions[:2]), list(ds.histories.values()))
    assert isinstance(calls, dict) and all(v is None or isinstance(v, int) for v in calls.values())
    docs = cls.documents(list(ds.histories.values()))
    assert docs is None or isinstance(docs, int)
    assert cls.settings(c) == (plain_settings(c.sections[name]) if cls.settings_class else {})


class TinyRetriever(FixedRetriever):
    """A fixed pool (FixedRetriever) and a bag-of-words encoder (sessions ranked by dense similarity)."""

    encoder = WordEncoder()


@pytest.mark.parametrize("name", method_names())
def test_it_answers_a_question_through_the_pipeline(name):
    cls = method_class(name)
    if not cls.mpm_client:
        pytest.skip(f"{name} calls its own server (tests/test_{name}.py runs it against a scripted one)")

    def mpm(prompt, sampling):  # window prompts get decisions, any other prompt (a pruning call) a memory
        return "Biscuit loves the beach." if isinstance(prompt, str) else keep_matching()(prompt, sampling)

    c = PipelineConfig.from_dict({"method": name, "mpm": FAKE, "answer": FAKE, "window": {"w": 1, "L": 4, "s": 3}})
    pipe = LazyMemPipeline(
        c, clients={"mpm": FakeBackend(mpm), "answer": FakeBackend(["an answer"])}, retriever=TinyRetriever([2, 10])
    )
    r = pipe.answer(make_history(), Q)
    assert r.ok and r.method == name and r.answer == "an answer" and r.memory
    assert r.answer_prompt == pipe.method.answer_prompt and (r.pool is not None) == cls.retrieves
    assert bool(r.windows) == cls.constructs and ("processing" in r.timings)


# what callers ask the shipped methods (a method added later needs no line here)
SHIPPED = {  # name: (retrieves, constructs, writes_text, uses_mpm, processing_stage, in_paper)
    "lazymem": (True, True, False, True, True, False),
    "extractive": (True, True, False, False, True, False),
    "rag": (True, False, False, False, False, False),
    "oracle_turn": (False, False, False, False, False, True),
    "oracle_session": (False, False, False, False, False, True),
    "nanomemory": (False, False, True, True, True, True),
    "mem0": (False, False, True, True, True, True),
    "full": (False, False, False, False, False, False),
}


def test_what_callers_ask_matches_what_each_shipped_method_does():
    for name, want in SHIPPED.items():
        cls = method_class(name)
        assert (
            cls.retrieves,
            cls.constructs,
            cls.writes_text,
            cls.uses_mpm,
            cls.processing_stage,
            cls.in_paper,
        ) == want, name
    assert {n: c.__name__ for n, c in settings_classes().items() if n in SHIPPED} == {
        "lazymem": "LazyMemSettings",
        "extractive": "ExtractiveConfig",
        "nanomemory": "NanoMemorySettings",
        "mem0": "Mem0Settings",
    }
    with pytest.raises(ConfigError, match="unknown method 'nope'; methods are"):
        method_class("nope")
    with pytest.raises(ConfigError, match="PipelineConfig.method='nope': must be one of"):
        PipelineConfig(method="nope")


def test_old_flat_method_settings_still_load_and_keep_their_fingerprint():
    flat = {"dataset": SYNTH, "pipeline": {"method": "nanomemory", "nanomemory_top_k": 4, "nanomemory_context": 2048}}
    nested = {"dataset": SYNTH, "pipeline": {"method": "nanomemory", "nanomemory": {"top_k": 4, "context": 2048}}}
    a, b = EvalConfig.from_dict(flat), EvalConfig.from_dict(nested)
    assert a == b and a.pipeline.nanomemory.top_k == 4 and config_fingerprint(a) == config_fingerprint(b)
    legacy = a.pipeline.legacy_dict()
    assert (legacy["nanomemory_top_k"], legacy["nanomemory_context"]) == (4, 2048) and "nanomemory" not in legacy
    flat_mem0 = EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": "rag", "mem0_chunk": 3}})
    assert flat_mem0.pipeline.mem0.chunk == 3
    with pytest.raises(ConfigError, match="nanomemory_top_k and nanomemory.top_k both set"):
        EvalConfig.from_dict(
            {"dataset": SYNTH, "pipeline": {"method": "rag", "nanomemory_top_k": 4, "nanomemory": {"top_k": 5}}}
        )
    # LazyMem's decoding, PipelineConfig fields before it was the lazymem section
    old = {
        "structured": True,
        "structured_trace": True,
        "grounded": True,
        "keep_prior": 8.0,
        "trace_independent": True,
        "schema_max_content": 100,
        "schema_max_reason": 0,
    }
    a = EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"mpm": FAKE, **old}})
    b = EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"mpm": FAKE, "lazymem": old}})
    assert a == b and a.pipeline.lazymem.keep_prior == 8.0 and config_fingerprint(a) == config_fingerprint(b)
    assert {k: a.pipeline.legacy_dict()[k] for k in old} == old and "lazymem" not in a.pipeline.legacy_dict()
    with pytest.raises(ConfigError, match="structured and lazymem.structured both set"):
        PipelineConfig.from_dict({"structured": True, "lazymem": {"structured": False}})
    # an override replaces a setting in either spelling: the base's other spelling gives way
    from lazymem.eval.config import apply_overrides

    base = {"dataset": SYNTH, "pipeline": {"mpm": FAKE, "structured": True, "schema_max_reason": 0}}
    for key in ("pipeline.lazymem.structured", "pipeline.structured"):
        c = EvalConfig.from_dict(apply_overrides(base, [f"{key}=false"]))
        assert not c.pipeline.lazymem.structured and c.pipeline.lazymem.schema_max_reason == 0
    c = EvalConfig.from_dict(apply_overrides(base, ["pipeline.lazymem={grounded: true}"]))
    assert c.pipeline.lazymem == type(c.pipeline.lazymem)(grounded=True)  # a whole section replaces the flat keys


def test_lazymem_settings_enter_lazymem_runs_only_and_old_fingerprints_still_match():
    from lazymem.eval.config import config_fingerprints

    rag = config_for("rag")
    decoded = config_for("rag", lazymem={"structured": True, "schema_max_content": 100})
    assert config_fingerprint(rag) == config_fingerprint(decoded)  # version 3: not rag's settings
    assert config_fingerprints(rag)[1:] != config_fingerprints(decoded)[1:]  # versions 2 and 1 hashed them
    lazy = config_for("lazymem")
    assert config_fingerprint(lazy) != config_fingerprint(config_for("lazymem", lazymem={"structured": True}))
    with pytest.raises(ConfigError, match="cannot do grounded decoding"):  # what LazyMem needs, it checks
        config_for("lazymem", lazymem={"grounded": True})
    assert config_for("rag", lazymem={"grounded": True}).pipeline.lazymem.grounded  # inert for another method
