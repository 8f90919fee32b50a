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

Fitting the pruning call to its model's window (``fit_sessions``): Nano-Memory's gen.py joins
the top-k sessions into one prompt and sends it as it is (``PROMPT_P.format(fused_event=...)``
to gpt-4o-mini, a 128k-token window; it never counts or cuts), and its README runs ``--topk 3``.
Ten LoCoMo sessions are ~5-12k tokens, over SmolLM2-135M's 8,192. So here the prompt, rendered
with the model's chat template and counted by its tokenizer, must fit the window less the
reply's room (``mpm_sampling.max_tokens``): sessions are kept whole in rank order while they
fit (the lower-ranked rest is left out: fewer sessions); when even the top session alone does
not fit, it is cut to its best-matching turns (kept in their order) that fit, and a single turn
still too long loses characters from its end. ``fit`` in the record says what was cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lazymem.errors import ConfigError
from lazymem.prompts import PROMPTS
from lazymem.records import History, Message, Question

if TYPE_CHECKING:
    from lazymem.llm import LLMConfig
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

    def __init__(
        self,
        retriever: Retriever,
        top_k: int = NANOMEMORY_TOP_K,
        budget: int | None = None,
        count: Callable[[str], int] | None = None,
        window: int | None = None,
    ):
        if retriever.encoder is None:
            raise ConfigError(
                "method nanomemory ranks sessions by dense similarity: set pipeline.retrieval."
                "dense_model (e.g. minilm-offline)"
            )
        if top_k < 1:
            raise ConfigError(f"nanomemory top_k={top_k!r}: must be >= 1")
        if budget is not None and (count is None or budget < 1):
            raise ConfigError(
                f"nanomemory prompt budget {budget!r}: needs a token counter and must be >= 1 "
                "(the window must be larger than mpm_sampling.max_tokens)"
            )
        self.retriever, self.top_k = retriever, top_k
        self.budget, self.count = budget, count  # the pruning prompt's most tokens (None: not fitted)
        self.window = window  # the pruning call's context window (recorded)
        self._turns: dict[tuple[str, int], tuple[list, np.ndarray]] = {}  # (history id, n messages) -> turns, embs

    @classmethod
    def from_config(cls, retriever: Retriever, config) -> NanoMemory:
        """From a PipelineConfig: its top_k, and the window of ``nanomemory.context`` or the mpm model's."""
        window, budget = prompt_budget(config.mpm, config.mpm_sampling.max_tokens, config.nanomemory.context)
        return cls(retriever, config.nanomemory.top_k, budget, prompt_counter(config.mpm) if budget else None, window)

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
            turn_scores = [float(v) for v in sims[start : start + len(turns)]]
            s = max(turn_scores) if turns else 0.0
            scored.append((-s, rank_in_history, sid, date, turns, turn_scores))
            start += len(turns)
        scored.sort(key=lambda x: (x[0], x[1]))
        return [
            {
                "session_id": sid,
                "date": date,
                "score": -neg,
                "turns": turns,
                "turn_scores": turn_scores,
                "positions": [m.pos for t in turns for m in t],
            }
            for neg, _, sid, date, turns, turn_scores in scored[: self.top_k]
        ]

    @staticmethod
    def prompt(question: Question, sessions: Sequence[dict]) -> str:
        """The pruning call's user message (gen.py builds fused_event the same way)."""
        fused = ""
        for s in sessions:
            turns = s.get("turn_texts") or [turn_text(t) for t in s["turns"]]
            fused += f"\n### Session Date: {s['date']}\nSession Content:\n{turns}\n"
        return PROMPTS["nanomemory_prune"].render(
            fused_event=fused, question=question.text, question_date=question.query_time or "None"
        )

    def fitted_prompt(self, question: Question, sessions: Sequence[dict]) -> tuple[str, list[dict], dict | None]:
        """(prompt, the sessions it shows, fit record) under this NanoMemory's budget (module docstring)."""
        if self.budget is None:
            return self.prompt(question, sessions), list(sessions), None
        prompt, shown, fit = fit_sessions(lambda ss: self.prompt(question, ss), sessions, self.count, self.budget)
        return prompt, shown, {"window": self.window, **fit}


def fit_sessions(
    build: Callable[[Sequence[dict]], str], sessions: Sequence[dict], count: Callable[[str], int], budget: int
) -> tuple[str, list[dict], dict]:
    """The most of ``sessions`` (rank order) whose prompt ``build(shown)`` counts at most ``budget`` tokens.

    Whole sessions while they fit; if the top one alone does not, its best-matching turns
    (``turn_scores``), in their order; if one turn alone does not, that turn cut at its end.
    Returns (prompt, shown sessions, record of what was kept and cut).

    >>> words = lambda text: len(text.split())
    >>> build = lambda ss: " ".join(t for s in ss for t in s["turn_texts"])
    >>> ss = [{"session_id": "a", "turn_texts": ["x y", "z"], "turn_scores": [0.1, 0.9]},
    ...       {"session_id": "b", "turn_texts": ["u v w"], "turn_scores": [0.5]}]
    >>> prompt, shown, fit = fit_sessions(build, ss, words, 4)
    >>> prompt, fit["sessions_kept"], fit["sessions_dropped"], fit["tokens_cut"]
    ('x y z', 1, ['b'], 3)
    >>> fit_sessions(build, ss, words, 1)[0], fit_sessions(build, ss, words, 1)[2]["turns_cut"]
    ('z', 1)
    """
    full = build(sessions)
    n_full = count(full)
    fit = {
        "budget": budget,
        "prompt_tokens_full": n_full,
        "sessions_ranked": len(sessions),
        "sessions_kept": len(sessions),
        "sessions_dropped": [],
        "turns_cut": 0,
        "chars_cut": 0,
    }

    def done(prompt: str, shown: list[dict], n: int) -> tuple[str, list[dict], dict]:
        fit.update(
            prompt_tokens=n,
            tokens_cut=n_full - n,
            sessions_kept=len(shown),
            sessions_dropped=[s["session_id"] for s in sessions[len(shown) :]],
        )
        return prompt, shown, fit

    if n_full <= budget or not sessions:
        return done(full, list(sessions), n_full)
    kept: list[dict] = []
    for s in sessions:  # whole sessions in rank order (counts grow with every session)
        prompt = build(kept + [s])
        n = count(prompt)
        if n > budget:
            break
        kept.append(s)
    if kept:
        return done(build(kept), kept, count(build(kept)))
    top = dict(sessions[0])
    texts = list(top.get("turn_texts") or [turn_text(t) for t in top["turns"]])
    scores = top.get("turn_scores") or [0.0] * len(texts)
    order = sorted(range(len(texts)), key=lambda i: -scores[i])  # best-matching first (ties: earlier first)

    def with_turns(n_turns: int) -> dict:
        keep = sorted(order[:n_turns])
        turns = [top["turns"][i] for i in keep] if "turns" in top else []
        return {
            **top,
            "turn_texts": [texts[i] for i in keep],
            "turns": turns,
            "positions": [m.pos for t in turns for m in t],
        }

    lo, hi = 1, len(texts) - 1  # the most turns that fit (len(texts) did not)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if count(build([with_turns(mid)])) <= budget else (lo, mid - 1)
    cut = with_turns(lo)
    fit["turns_cut"] = len(texts) - lo
    if count(build([cut])) > budget:  # one turn alone is too long: keep its beginning
        text = cut["turn_texts"][0]
        lo_c, hi_c = 0, len(text)
        while lo_c < hi_c:
            mid = (lo_c + hi_c + 1) // 2
            ok = count(build([{**cut, "turn_texts": [text[:mid]]}])) <= budget
            lo_c, hi_c = (mid, hi_c) if ok else (lo_c, mid - 1)
        cut = {**cut, "turn_texts": [text[:lo_c]]}
        fit["chars_cut"] = len(text) - lo_c
    prompt = build([cut])
    n = count(prompt)
    if n > budget:
        raise ConfigError(
            f"nanomemory: the pruning prompt without any session text is {n} tokens, over its budget "
            f"of {budget} (the window less mpm_sampling.max_tokens): raise the window or lower "
            "max_tokens"
        )
    return done(prompt, [cut], n)


def prompt_budget(mpm: LLMConfig, reply_tokens: int | None, context: int | None) -> tuple[int | None, int | None]:
    """(window, the prompt's most tokens) of the pruning call: the window (``context``, else the mpm
    model's own: llama.cpp's n_ctx, transformers' max_position_embeddings; None for a server) less
    the reply's room. (None, None): not fitted."""
    if context is None:
        if mpm.backend == "llamacpp":
            from lazymem.llm.llamacpp import DEFAULT_N_CTX

            context = int((mpm.extra_body or {}).get("n_ctx", DEFAULT_N_CTX))
        elif mpm.backend == "transformers":
            from transformers import AutoConfig

            from lazymem.llm.models import resolve_model

            context = getattr(AutoConfig.from_pretrained(resolve_model(mpm.model)), "max_position_embeddings", None)
    if context is None:
        return None, None
    budget = int(context) - int(reply_tokens or 0)
    if budget < 1:
        raise ConfigError(
            f"nanomemory: the pruning call's window ({context} tokens) leaves no room for a prompt "
            f"after mpm_sampling.max_tokens={reply_tokens}"
        )
    return int(context), budget


def prompt_counter(mpm: LLMConfig) -> Callable[[str], int]:
    """Tokens of a user message as the mpm model reads it: its chat template with the generation
    prompt, tokenised by its own tokenizer (the text llama.cpp and transformers are given)."""
    from transformers import AutoTokenizer

    from lazymem.llm.base import to_messages
    from lazymem.llm.models import resolve_model

    if mpm.backend == "llamacpp":
        from lazymem.llm.gguf_build import gguf_source

        hf_dir = gguf_source(mpm.model)[1]
    else:
        hf_dir = resolve_model(mpm.model)
    try:
        tok = AutoTokenizer.from_pretrained(hf_dir)
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"nanomemory: fitting the pruning prompt needs the mpm model's tokenizer ({mpm.model!r}): {e}"
        ) from None

    def count(text: str) -> int:
        rendered = tok.apply_chat_template(
            to_messages(text), tokenize=False, add_generation_prompt=True, **(mpm.chat_template_kwargs or {})
        )
        return len(tok(rendered, add_special_tokens=False)["input_ids"])

    return count
