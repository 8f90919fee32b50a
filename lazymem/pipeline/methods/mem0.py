"""Method ``mem0``: Mem0 (PyPI ``mem0ai``), the write-time memory baseline.

Each history is ingested once with Mem0's own LLM calls to the ``mpm`` server, and a question is
answered from ``Memory.search`` (``lazymem.pipeline.mem0.Mem0Store`` has the protocol and its
sources). Settings: ``pipeline.mem0`` (``Mem0Settings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lazymem.errors import ConfigError
from lazymem.fields import h, require
from lazymem.pipeline.methods.base import Method, MethodOutput

MEM0_SERVE_HINT = (
    "`python -m llama_cpp.server --model X.gguf --port 8000` "
    "(pip install 'llama-cpp-python[server]'; base_url http://127.0.0.1:8000/v1, mpm.model: the name "
    "it serves) or `vllm serve MODEL --port 8000`"
)


@dataclass(frozen=True)
class Mem0Settings:
    """``pipeline.mem0``: Mem0's search depth, add-call size and dating."""

    top_k: int = field(default=30, metadata=h("memories Memory.search returns (Mem0's LoCoMo evaluation: --top_k 30)"))
    chunk: int = field(
        default=2, metadata=h("consecutive messages of one session per Memory.add call (Mem0's LoCoMo evaluation: 2)")
    )
    observation_date: bool = field(
        default=True,
        metadata=h(
            "give each add call its session's date as the Observation Date (custom instructions); "
            "false = stock OSS Mem0, whose extraction prompt dates every message today"
        ),
    )

    def __post_init__(self):
        for name in ("top_k", "chunk"):
            v = getattr(self, name)
            require(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1, "mem0", name, v, "must be an integer >= 1"
            )
        require(
            isinstance(self.observation_date, bool),
            "mem0",
            "observation_date",
            self.observation_date,
            "must be true or false",
        )


class Mem0Method(Method):
    name, label, in_paper = "mem0", "Mem0", True
    uses_dense = uses_mpm = writes_text = processing_stage = True
    mpm_client = False  # Mem0 calls the mpm server through its own 'openai' provider
    settings_class = Mem0Settings

    def __init__(self, pipeline):
        super().__init__(pipeline)
        self._store = None

    @property
    def store(self):
        """Its Mem0Store; the first use imports mem0ai and loads its embedder."""
        with self.pipeline.lock:
            if self._store is None:
                from lazymem.pipeline.mem0 import Mem0Store

                self._store = Mem0Store(self.config)
            return self._store

    @classmethod
    def check(cls, config) -> None:
        # Mem0 makes its own LLM calls (its 'openai' provider), so the mpm role must name a server.
        if config.mpm.backend != "openai":
            raise ConfigError(
                f"PipelineConfig.method={cls.name!r}: mem0 calls its LLM through Mem0's 'openai' provider, not "
                f"mpm.backend={config.mpm.backend!r}: set mpm.backend: openai and mpm.base_url to a local "
                f"OpenAI-compatible server, e.g. {MEM0_SERVE_HINT}"
            )
        if not config.mpm.base_url:
            raise ConfigError(
                f"PipelineConfig.method={cls.name!r}: mem0 needs mpm.base_url (unset, Mem0 would call "
                f"api.openai.com): serve a model locally, e.g. {MEM0_SERVE_HINT}"
            )

    def warm_up(self) -> None:
        _ = self.store  # a missing mem0ai stops a run here, before its first question

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def memory(self, history, question, pool, timings) -> MethodOutput:
        """Ingest the history once (store time), then search; sets its own timings."""
        memory, record, error = self.store.memory(history, question, timings)
        return MethodOutput(memory, error, baseline=record, timed=True)

    @classmethod
    def gold_shown(cls, record) -> int | None:
        return record.gold_shown

    @classmethod
    def calls(cls, config, dataset, questions, histories) -> dict:
        from lazymem.pipeline.mem0 import chunk_history

        n = sum(len(chunk_history(h, config.mem0.chunk)) for h in histories) if questions is not None else None
        return {"mpm_min": n}

    @classmethod
    def documents(cls, histories: list) -> None:
        return None  # one per fact Mem0 extracts: known only after ingestion
