"""The quality reward R_qual (paper Eq. quality_score, quality_reward) and its LLM judge.

Every KEEP message of a format-valid rollout is scored by a reward judge on faithfulness f
and utility u, both in {0, 1, 2}, with the paper's listing (``lazymem.prompts``,
"reward_judge"). Q(x) = 1[f > 0] (f + u) / 4, and R_qual is the mean Q over the kept
messages (0 when nothing is kept). A judge call that fails or a reply that cannot be read is
recorded and counted, and the rollout's R_qual becomes None: never a silent 0. A refused reply
that was cut off (finish_reason "length", or a ``<think>`` never closed) is counted as
``truncated``, not as a parse failure: that is the sign of a thinking judge without a thinking
budget (``LLMConfig.thinking_budget``; the paper's judge: 512 of its 1,024 tokens).

>>> parse_quality_judgement('<think>ok</think> {"faithfulness": 2, "utility": 1, "reason": "r"}')
(2, 1)
>>> quality_reward([quality_score(2, 1), quality_score(0, 2)])
0.375
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lazymem.construct.gate import strip_think
from lazymem.llm.base import LLMClient, LLMConfig, Sampling
from lazymem.prompts import PROMPTS, reward_judge_prompt
from lazymem.records import Message

log = logging.getLogger("lazymem.train")

SCORES = (0, 1, 2)  # the rubric's no / partial / full
# Paper, Appendix "Quality Reward: Scoring Rubric and Judge Configuration": temperature 0,
# at most 1,024 output tokens. Its 512-token thinking budget (LLMConfig.thinking_budget), 180 s
# timeout and three retries belong to the judge's LLMConfig, not to the sampling settings.
JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=1024)
# Why a judge reply was refused; JudgeParseError.kind is one of these.
PARSE_FAILURES = (
    "not_text",
    "empty",
    "invalid_json",
    "extra_text",
    "not_object",
    "duplicate_field",
    "missing_field",
    "bad_score",
)
CALL_ERROR = "call_error"  # the client returned Completion(error=...) (after its own retries)
TRUNCATED = "truncated"  # a refused reply that was cut off (see cut_off)
_OPEN_THINK = re.compile(r"\A\s*<think>(?!.*</think>)", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)


class JudgeParseError(ValueError):
    """A reward-judge reply that does not hold one valid {faithfulness, utility} object."""

    def __init__(self, kind: str, detail: str):
        self.kind, self.detail = kind, detail  # kind: one of PARSE_FAILURES
        super().__init__(f"judge reply refused ({kind}): {detail}")


class _Obj(dict):
    """A JSON object that remembers keys it saw twice (json.loads would keep the last silently)."""

    dupes: frozenset = frozenset()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        obj.dupes = frozenset(k for k in keys if keys.count(k) > 1)
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook)


def parse_quality_judgement(reply: str) -> tuple[int, int]:
    """(faithfulness, utility) from one reward-judge reply.

    Accepted: one JSON object whose "faithfulness" and "utility" are JSON integers in
    {0, 1, 2}, after dropping a leading ``<think>...</think>`` and surrounding whitespace.
    One enclosing Markdown code fence (```json ... ```) is tolerated, since the judge is not
    the model being trained and a fence does not change what it said; text outside the
    object or fence is not. Other fields of the listing's required_output
    (unsupported_claims, useful_evidence, reason) are not checked: they do not enter Q.

    Raises:
        JudgeParseError: naming the failure kind (PARSE_FAILURES): e.g. "2" (a string),
            1.5, true, 3 or -1 as a score are "bad_score"; two objects are "extra_text".

    >>> parse_quality_judgement('```json\\n{"faithfulness": 0, "utility": 2}\\n```')
    (0, 2)
    >>> parse_quality_judgement('{"faithfulness": "2", "utility": 1}')
    Traceback (most recent call last):
    ...
    lazymem.train.quality.JudgeParseError: judge reply refused (bad_score): faithfulness is str '2', not in (0, 1, 2)
    """
    if not isinstance(reply, str):
        raise JudgeParseError("not_text", f"reply is {type(reply).__name__}")
    text = strip_think(reply).strip()
    fenced = _FENCE.fullmatch(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise JudgeParseError("empty", "no text after the think trace" if reply.strip() else "empty reply")
    try:
        value, end = _DECODER.raw_decode(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise JudgeParseError(
            "invalid_json", f"{getattr(e, 'msg', type(e).__name__)} at char {getattr(e, 'pos', '?')} of {len(text)}"
        ) from None
    if end != len(text):
        raise JudgeParseError("extra_text", f"text after the JSON value (value ends at {end} of {len(text)})")
    if not isinstance(value, dict):
        raise JudgeParseError("not_object", f"a JSON {type(value).__name__}, not an object")
    scores = []
    for name in ("faithfulness", "utility"):
        if name in value.dupes:  # which of the two scores did the judge mean?
            raise JudgeParseError("duplicate_field", f"{name!r} appears more than once")
        if name not in value:
            raise JudgeParseError("missing_field", f"no {name!r} (keys: {sorted(value)[:8]})")
        v = value[name]
        if type(v) is not int or v not in SCORES:  # type(): bool is an int subclass; 2.0 is a float
            raise JudgeParseError("bad_score", f"{name} is {type(v).__name__} {str(v)[:20]!r}, not in {SCORES}")
        scores.append(v)
    return scores[0], scores[1]


def cut_off(completion: Any) -> bool:
    """Whether a reply stopped before it was done: the token limit ended it (finish_reason
    "length") or it opens a ``<think>`` it never closes.

    >>> from lazymem.llm import Completion
    >>> cut_off(Completion("<think>so the memory", 9, 1024, 0.0, finish_reason=None))
    True
    >>> cut_off(Completion('<think>ok</think> {"faithfulness": 2}', 9, 9, 0.0, finish_reason="stop"))
    False
    """
    text = getattr(completion, "text", "")
    return getattr(completion, "finish_reason", None) == "length" or (
        isinstance(text, str) and _OPEN_THINK.match(text) is not None
    )


def quality_score(faithfulness: int, utility: int) -> float:
    """Q(x) = 1[f > 0] (f + u) / 4 (paper Eq. quality_score): unfaithful content earns nothing.

    >>> quality_score(2, 2), quality_score(1, 0), quality_score(0, 2)
    (1.0, 0.25, 0.0)
    """
    for name, v in (("faithfulness", faithfulness), ("utility", utility)):
        if type(v) is not int or v not in SCORES:
            raise ValueError(f"{name}={v!r}: must be an integer in {SCORES}")
    return (faithfulness + utility) / 4 if faithfulness > 0 else 0.0


def quality_reward(scores: Sequence[float]) -> float:
    """R_qual (paper Eq. quality_reward): the mean Q over the kept messages, 0 when none is kept.

    >>> quality_reward([]), quality_reward([1.0, 0.5])
    (0.0, 0.75)
    """
    scores = list(scores)
    return sum(scores) / len(scores) if scores else 0.0


@dataclass(frozen=True)
class KeptMessage:
    """One KEEP decision to be judged: the compression, its source and the query's context."""

    compressed: str  # the rollout's compressed_content for this message
    sources: tuple[Message, ...]  # the source message(s) it compresses (usually one)
    query: str
    query_time: str
    gold_answer: str
    reasoning_chain: str = ""  # the referenced reasoning chain (the data's or the SFT teacher's; "" when none)

    def messages(self) -> list[dict[str, str]]:
        """The judge's chat: the paper's system prompt and its user-prompt listing."""
        user = reward_judge_prompt(
            query_time=self.query_time,
            query=self.query,
            gold_answer=self.gold_answer,
            reasoning_chain=self.reasoning_chain,
            sources=self.sources,
            compressed_memory=self.compressed,
        )
        return [{"role": "system", "content": PROMPTS["reward_judge"].system}, {"role": "user", "content": user}]


class QualityJudge:
    """Scores kept messages with the reward judge through any ``lazymem.llm`` client.

    All distinct judge prompts of one ``score`` call go to the client in ONE ``generate``
    call (the OpenAI-compatible backend runs them concurrently, up to its ``concurrency``;
    timeouts and retries are its job, caching is CachedClient's). Identical prompts (GRPO
    rollouts of one window often compress a message the same way) are sent once.

    Failures are recorded, never hidden: ``failures`` counts them by kind (CALL_ERROR,
    TRUNCATED for a refused reply that was cut off, or a JudgeParseError kind),
    ``recent_failures`` keeps the last few with their detail, and a rollout with any unjudged
    kept message gets R_qual None.

    Pickling: a judge built from an ``LLMConfig`` drops its client and rebuilds it on first
    use; one given a client pickles that client (a FakeBackend or CachedClient cannot be).

    >>> from lazymem.llm.fake import FakeBackend
    >>> src = Message(3, "s#3", "s", 3, "user", "I moved to Lisbon in May.", "2023/05/20")
    >>> kept = KeptMessage("Moved to Lisbon (May 2023).", (src,), "Where do I live?", "2023/06/01", "Lisbon")
    >>> vague = KeptMessage("Lives somewhere.", (src,), "Where do I live?", "2023/06/01", "Lisbon")
    >>> judge = QualityJudge(FakeBackend(['{"faithfulness": 2, "utility": 2}', 'oops']))
    >>> judge.score([[kept], [kept], [], [kept, vague]])  # 2 distinct requests
    [1.0, 1.0, 0.0, None]
    >>> dict(judge.failures), judge.calls
    ({'invalid_json': 1}, 2)
    """

    def __init__(self, client: LLMClient | LLMConfig, sampling: Sampling = JUDGE_SAMPLING, keep_failures: int = 50):
        self.config = client if isinstance(client, LLMConfig) else None
        self._client = None if self.config is not None else client
        self.sampling = sampling
        self.failures: Counter[str] = Counter()  # failed judge requests by kind, since creation
        self.recent_failures: deque[dict] = deque(maxlen=keep_failures)  # the last few, with detail
        self.calls = 0  # judge requests sent (distinct prompts), since creation

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            from lazymem.llm.factory import make_client

            self._client = make_client(self.config)
        return self._client

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.config is not None:
            state["_client"] = None
        return state

    def judge(self, items: Sequence[KeptMessage]) -> list[tuple[int, int] | None]:
        """(faithfulness, utility) per item, None where the call failed or the reply was refused."""
        prompts = [it.messages() for it in items]
        keys = [json.dumps(p, ensure_ascii=False) for p in prompts]
        first = dict(zip(keys, prompts))  # equal keys are equal prompts: each is sent once
        unique = list(first)
        if not unique:
            return []
        completions = self.client.generate([first[k] for k in unique], self.sampling)
        self.calls += len(unique)
        verdicts: dict[str, tuple[int, int] | None] = {}
        for k, c in zip(unique, completions):
            try:
                if c.error is not None:
                    raise JudgeParseError(CALL_ERROR, c.error)  # recorded like a refused reply
                verdicts[k] = parse_quality_judgement(c.text)
            except JudgeParseError as e:
                verdicts[k] = None
                # a reply cut off mid-thought is the budget's fault, not the judge's format
                kind = TRUNCATED if e.kind != CALL_ERROR and cut_off(c) else e.kind
                self.failures[kind] += 1
                self.recent_failures.append(
                    {"kind": kind, "detail": e.detail[:300], "reply": c.text[:300], "finish_reason": c.finish_reason}
                )
                log.warning("reward judge: %s (%s; finish_reason %s)", kind, e.detail[:200], c.finish_reason)
        return [verdicts[k] for k in keys]

    def score(self, rollouts: Sequence[Sequence[KeptMessage]]) -> list[float | None]:
        """R_qual per rollout (its kept messages); None when any of them could not be judged."""
        flat = [it for r in rollouts for it in r]
        verdicts = iter(self.judge(flat))
        out: list[float | None] = []
        for r in rollouts:
            fu = [next(verdicts) for _ in r]
            out.append(None if any(v is None for v in fu) else quality_reward([quality_score(*v) for v in fu]))
        return out
