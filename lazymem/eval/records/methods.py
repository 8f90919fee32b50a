"""The method-specific part of a run record (its ``baseline`` object), typed per method.

``METHOD_PARTS`` maps a method name to its part class: NanoMemory's sessions and pruning call
(``lazymem.pipeline.methods.nanomemory``), Mem0's search results and ingestion
(``lazymem.pipeline.mem0.Mem0Store.memory``). A method without an entry records no part (None);
a record whose method is not listed keeps its ``baseline`` object as it is.

>>> part = NanoMemoryPart.from_json({"method": "nanomemory", "top_k": 2, "gold_shown": 1, "n_gold": 2,
...     "sessions": [{"session_id": "s1", "score": 0.5, "n_messages": 3, "gold": [4]}]})
>>> part.sessions[0].gold, part.gold_shown, part.prune_output is None
((4,), 1, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lazymem.eval.records.part import JsonPart
from lazymem.eval.records.parts import CallMeta


@dataclass(frozen=True)
class NanoSession(JsonPart):
    """One session NanoMemory showed its pruning call."""

    session_id: str
    score: float | None  # its best turn's cosine similarity to the question
    n_messages: int | None
    gold: tuple[int, ...] | None  # gold positions inside it


@dataclass(frozen=True)
class NanoMemoryPart(JsonPart):
    """NanoMemory's record: the sessions shown, how they were fitted, and the pruning call."""

    method: str | None
    top_k: int | None  # sessions asked for
    sessions: tuple[NanoSession, ...] | None  # those shown, best first
    gold_shown: int | None  # gold positions inside the sessions shown
    n_gold: int | None
    prune_output: CallMeta | None  # the pruning call (its reply is the memory)
    prune_think: str | None
    fit: Mapping[str, Any] | None  # how the prompt was fitted to the context window (baselines.fit_sessions)


@dataclass(frozen=True)
class Mem0Result(JsonPart):
    """One memory Mem0's search returned."""

    id: str | None
    memory: str | None  # the fact
    score: float | None
    date: str | None  # its session's date
    positions: tuple[int, ...] | None  # the chunk's positions it came from


@dataclass(frozen=True)
class Mem0Part(JsonPart):
    """Mem0's record: the store, its ingestion statistics and the search results."""

    method: str | None
    top_k: int | None
    user_id: str | None
    store: str | None  # the store folder's name
    settings: Mapping[str, Any] | None
    ingestion: Mapping[str, Any] | None  # progress and statistics of ingesting the history
    n_memories: int | None
    results: tuple[Mem0Result, ...] | None
    gold_shown: int | None  # gold positions inside the chunks the results came from
    n_gold: int | None


METHOD_PARTS: dict[str, type[JsonPart]] = {"nanomemory": NanoMemoryPart, "mem0": Mem0Part}
