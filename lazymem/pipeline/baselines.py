"""Baselines that build their memory differently from LazyMem: Oracle Session and NanoMemory.

- ``oracle_session_positions``: every message of the sessions that hold the question's gold
  evidence (the paper's Oracle Session: whole gold sessions, verbatim).
- ``NanoMemory``: the retrieve-then-construct baseline of Wu et al. ("Back to Basics", public
  code yuqian2003/Nano-Memory@5a1b152), as its ``retrieval.py --method argmax`` and ``gen.py``
  do it: a session's turns are consecutive message pairs ("[speaker]: text" lines joined by a
  newline), a session is scored by its best-matching turn (dense cosine with the query), the
  top-k sessions (the LazyMem paper used k = 10) are shown in rank order, each as
  ``### Session Date: ...`` with its turns as a Python list, in one pruning call (PROMPT_P:
  "Preserve original tokens, do not paraphrase"), whose reply is the memory. The answer step
  is the project's shared answer prompt with that memory (the paper fixes the answer model
  and prompt across systems so that only memory differs), not Nano-Memory's PROMPT_G.
  The dense encoder is the retriever's (MiniLM on CPU, Qwen3-Embedding-8B in the paper's
  configs); Nano-Memory's default is Contriever, which does not ship here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from lazymem.errors import ConfigError
from lazymem.prompts import PROMPTS
from lazymem.records import History, Message, Question

if TYPE_CHECKING:
    from lazymem.retrieve import Retriever

NANOMEMORY_TOP_K = 10  # sessions shown to the pruning call (the LazyMem paper's setting)


def oracle_session_positions(history: History, question: Question) -> list[int]:
    """Positions of every message in the sessions that contain the question's gold evidence.

    >>> from lazymem.records import Message
    >>> msgs = tuple(Message(i, f"m{i}", s, t, "user", "x", "") for i, (s, t) in
    ...              enumerate([("a", 0), ("a", 1), ("b", 0), ("b", 1)]))
    >>> oracle_session_positions(History("h", msgs), Question("q", "t", "?", "x", "h", evidence=(3,)))
    [2, 3]
    """
    sessions = {history[p].session_id for p in question.evidence}
    return [m.pos for m in history.messages if m.session_id in sessions]


def session_turns(history: History) -> list[tuple[str, str, list[list[Message]]]]:
    """(session id, session date, turns) in history order; a turn is up to two consecutive messages."""
    out: list[tuple[str, str, list[list[Message]]]] = []
    for m in history.messages:
        if not out or out[-1][0] != m.session_id:
            out.append((m.session_id, m.timestamp, []))
        turns = out[-1][2]
        if turns and len(turns[-1]) == 1:
            turns[-1].append(m)
        else:
            turns.append([m])
    return out


def turn_text(turn: Sequence[Message]) -> str:
    """A turn as Nano-Memory writes it: "[speaker]: text" lines joined by a newline."""
    return "\n".join(f"[{m.role}]: {m.text}" for m in turn)


class NanoMemory:
    """Session ranking by best-matching turn, and the pruning prompt (see the module docstring)."""

    def __init__(self, retriever: "Retriever", top_k: int = NANOMEMORY_TOP_K):
        if retriever.encoder is None:
            raise ConfigError("method nanomemory ranks sessions by dense similarity: set pipeline.retrieval."
                              "dense_model (e.g. minilm-offline)")
        if top_k < 1:
            raise ConfigError(f"nanomemory top_k={top_k!r}: must be >= 1")
        self.retriever, self.top_k = retriever, top_k
        self._turns: dict[tuple[str, int], tuple[list, np.ndarray]] = {}  # (history id, n messages) -> turns, embs

    def index(self, history: History) -> bool:
        """Embed the history's turns (kept for the last history); True when it had to be built."""
        key = (history.id, len(history))
        if key in self._turns:
            return False
        sessions = session_turns(history)
        texts = [turn_text(t) for _, _, turns in sessions for t in turns]
        embs = self.retriever.encoder.encode_docs(texts)
        self._turns = {key: (sessions, np.asarray(embs, dtype=np.float32))}  # one history at a time
        return True

    def rank_sessions(self, history: History, query: str) -> list[dict]:
        """The top-k sessions: id, date, score (best turn's cosine), turns, message positions."""
        self.index(history)
        sessions, embs = self._turns[(history.id, len(history))]
        q = np.asarray(self.retriever.encoder.encode_queries([query])[0], dtype=np.float32)
        sims = embs @ q
        scored, start = [], 0
        for rank_in_history, (sid, date, turns) in enumerate(sessions):
            s = float(sims[start:start + len(turns)].max()) if turns else 0.0
            scored.append((-s, rank_in_history, sid, date, turns))
            start += len(turns)
        scored.sort(key=lambda x: (x[0], x[1]))
        return [{"session_id": sid, "date": date, "score": -neg, "turns": turns,
                 "positions": [m.pos for t in turns for m in t]}
                for neg, _, sid, date, turns in scored[: self.top_k]]

    @staticmethod
    def prompt(question: Question, sessions: Sequence[dict]) -> str:
        """The pruning call's user message (gen.py builds fused_event the same way)."""
        fused = ""
        for s in sessions:
            turns = [turn_text(t) for t in s["turns"]]
            fused += f"\n### Session Date: {s['date']}\nSession Content:\n{turns}\n"
        return PROMPTS["nanomemory_prune"].render(fused_event=fused, question=question.text,
                                                  question_date=question.query_time or "None")
