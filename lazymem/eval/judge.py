"""The official LLM judges (LongMemEval, LoCoMo/Mem0): prompts, reply parsers, and judge_answer.

Prompts and parsers call no model: build a prompt, send it with any client (using the
settings in LONGMEMEVAL_JUDGE_SETTINGS / LOCOMO_JUDGE_SETTINGS), and parse the reply.
``judge_answer`` does all three for one response with a given client.

A reply with no verdict (a thinking model cut off mid-thought, a reply with neither yes nor no,
LoCoMo JSON that does not parse twice) is an error of the judge, counted and shown per run and per
table cell, never a silent "wrong": a judge that thinks (Qwen3 by default) needs
``chat_template_kwargs: {enable_thinking: false}`` or a ``thinking_budget`` that leaves room for
the verdict (``check_judge_client`` refuses the combination that cannot work before any call).

>>> parse_yes_no("Yes.")
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lazymem.errors import ConfigError
from lazymem.prompts import PROMPTS, PromptTemplate
from lazymem.records import Question

if TYPE_CHECKING:
    from lazymem.llm import LLMClient

# Request settings of the official scripts (only the judge model is swapped, as in the paper).
LONGMEMEVAL_JUDGE_SETTINGS = {"temperature": 0, "max_tokens": 10, "n": 1}
LOCOMO_JUDGE_SETTINGS = {"temperature": 0.0, "response_format": {"type": "json_object"}}
# What the runner asks for: LongMemEval's evaluate_qa.py asks for 10 tokens; Mem0's LoCoMo
# judge sets no cap (its reply is one sentence and a JSON label): 1024 leaves room.
JUDGE_MAX_TOKENS = {"longmemeval": 10, "locomo": 1024}
# Mem0 sends the LoCoMo judge JSON mode (response_format json_object); our backends take a JSON
# schema (an OpenAI json_schema response_format, vLLM structured outputs, outlines on transformers),
# so the judge gets the schema of the reply Mem0's prompt asks for: {"label": "CORRECT" | "WRONG"}.
LOCOMO_JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["CORRECT", "WRONG"]}},
    "required": ["label"],
    "additionalProperties": False,
}

# ---------------------------------------------------------------------------------------
# LongMemEval LLM judge (src/evaluation/evaluate_qa.py in xiaowu0162/LongMemEval).
# ---------------------------------------------------------------------------------------
_LONGMEMEVAL_PROMPT_BY_TYPE = {
    "single-session-user": "longmemeval_judge",
    "single-session-assistant": "longmemeval_judge",
    "multi-session": "longmemeval_judge",
    "temporal-reasoning": "longmemeval_judge_temporal",
    "knowledge-update": "longmemeval_judge_knowledge_update",
    "single-session-preference": "longmemeval_judge_preference",
}


def longmemeval_judge_template(question_type: str, abstention: bool = False) -> PromptTemplate:
    """The official prompt for a question type; abstention questions all share one prompt.

    >>> longmemeval_judge_template("multi-session", abstention=True).name
    'longmemeval_judge_abstention'
    """
    if abstention:
        return PROMPTS["longmemeval_judge_abstention"]
    try:
        return PROMPTS[_LONGMEMEVAL_PROMPT_BY_TYPE[question_type]]
    except KeyError:
        raise ValueError(
            f"no LongMemEval judge prompt for question type {question_type!r}"
            f" (known: {', '.join(_LONGMEMEVAL_PROMPT_BY_TYPE)})"
        ) from None


def longmemeval_judge_prompt(question: Question, response: str) -> str:
    """The judge's user message for one LongMemEval prediction (sent as the only message)."""
    template = longmemeval_judge_template(question.type, question.abstention)
    return template.render(question=question.text, answer=question.answer, response=response)


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_YES_NO = re.compile(r"\b(?:yes|no)\b", re.IGNORECASE)


def reply_after_thinking(response: str) -> str:
    """The part of a judge reply after an inline ``<think>...</think>`` trace ("" when the trace
    never closed: the model was cut off while thinking).

    >>> reply_after_thinking("<think> step0 step1 </think> yes"), reply_after_thinking("<think> step0 step1")
    ('yes', '')
    >>> reply_after_thinking("No.")
    'No.'
    """
    text = response.strip()
    if not text.startswith(_THINK_OPEN):
        return response
    _, closed, rest = text[len(_THINK_OPEN) :].partition(_THINK_CLOSE)
    return rest.strip() if closed else ""


def has_yes_no(response: str) -> bool:
    """Whether a LongMemEval judge reply gives a verdict: the word yes or no after any think trace.

    >>> has_yes_no("Yes."), has_yes_no("<think> the answer says yes"), has_yes_no("Correct.")
    (True, False, False)
    """
    return bool(_YES_NO.search(reply_after_thinking(response)))


def parse_yes_no(response: str) -> bool:
    """Official label: ``'yes' in response.lower()`` (so "no, not yes" is True, as official).

    >>> parse_yes_no("No."), parse_yes_no("YES")
    (False, True)
    """
    return "yes" in response.lower()


# ---------------------------------------------------------------------------------------
# LoCoMo LLM judge: Mem0's ACCURACY_PROMPT (see lazymem.prompts) and its parsing.
# ---------------------------------------------------------------------------------------
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)  # mem0.memory.utils.extract_json
_LABEL_WORD = re.compile(r"\b(CORRECT|WRONG)\b")


def locomo_judge_prompt(question: Question, response: str) -> str:
    """The LLM judge's user message for one LoCoMo prediction (categories 1-4)."""
    if question.category == 5:
        raise ValueError(f"{question.id}: category 5 has no gold answer; the Mem0 judge skips it")
    return PROMPTS["locomo_judge"].render(
        question=question.text, gold_answer=question.answer, generated_answer=response
    )


def parse_correct_wrong(response: str, strict: bool = True) -> bool | None:
    """Mem0's reading of the judge reply: JSON (optionally fenced) whose "label" is "CORRECT".

    Mem0's script raises when the reply is not such JSON; here that gives None. With
    ``strict=False`` such a reply falls back to its last standalone CORRECT/WRONG word (our
    addition, off by default), still None when there is none.

    >>> parse_correct_wrong('```json\\n{"label": "CORRECT"}\\n```')
    True
    >>> parse_correct_wrong("The dates differ. WRONG"), parse_correct_wrong("... WRONG", strict=False)
    (None, False)
    """
    text = response.strip()
    fenced = _FENCED.search(text)
    try:
        return json.loads(fenced.group(1) if fenced else text)["label"] == "CORRECT"
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        pass  # where Mem0's script would raise
    if strict:
        return None
    words = _LABEL_WORD.findall(response)
    return words[-1] == "CORRECT" if words else None


# ---------------------------------------------------------------------------------------
# Judging one response, and checking up front that a judge fits the questions.
# ---------------------------------------------------------------------------------------


def no_verdict_error(kind: str, reply: str, finish_reason: str | None, max_tokens: int) -> str:
    """Why a judge reply has no verdict, and what to change (the record's ``error``)."""
    cut = finish_reason == "length"
    thinking = reply.lstrip().startswith(_THINK_OPEN)
    why = (
        f"cut off at max_tokens={max_tokens}" + (" while thinking" if thinking else "")
        if cut
        else "a reply with no " + ("yes/no" if kind == "longmemeval" else 'readable {"label": ...} JSON')
    )
    return (
        f"judge reply has no verdict ({why}; reply starts {reply[:60]!r}): a thinking model (Qwen3 thinks by "
        "default) needs pipeline.judge.chat_template_kwargs {enable_thinking: false} or a "
        "pipeline.judge.thinking_budget that leaves room for the verdict; or raise judge_max_tokens"
    )


def judge_answer(
    client: LLMClient,
    question: Question,
    response: str,
    kind: str,
    seed: int = 0,
    max_tokens: int | None = None,
    json_mode: bool = True,
) -> dict:
    """Ask the official judge of `kind` about one response; a record with prompt, reply and label.

    ``label`` is True/False, or None when the question is not judged (LoCoMo category 5, which
    Mem0's judge skips), the call errored, or the reply gave no verdict. A reply with no verdict
    (``no_verdict_error``: a LongMemEval reply without the word yes or no once any think trace is
    dropped, e.g. a thinking model cut off at the official 10 tokens; a LoCoMo reply that is not
    Mem0's JSON, asked once more with seed + 1, the first reply kept in ``retry_of``) is an
    ``error`` with ``unparseable`` True: Mem0's script raises on it, and counting it wrong would
    hide a broken judge. The LongMemEval label is the official rule (``'yes' in reply.lower()``)
    on the reply after its think trace. With ``json_mode`` the LoCoMo judge's request carries
    LOCOMO_JUDGE_SCHEMA.
    """
    from lazymem.llm import Sampling
    from lazymem.llm.usage import call_usage

    out = {
        "kind": kind,
        "prompt_name": None,
        "prompt": None,
        "response": None,
        "label": None,
        "skipped": None,
        "error": None,
        "output": None,
        "unparseable": False,
        "attempts": 0,
        "retry_of": None,
    }
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
    schema = LOCOMO_JUDGE_SCHEMA if kind == "locomo" and json_mode else None
    cap = max_tokens or JUDGE_MAX_TOKENS[kind]
    for attempt in range(2 if kind == "locomo" else 1):
        sampling = Sampling(temperature=0.0, max_tokens=cap, seed=seed + attempt, json_schema=schema)
        c = client.generate([prompt], sampling)[0]
        out["attempts"] = attempt + 1
        if out["response"] is not None:
            out["retry_of"] = {"response": out["response"], "output": out["output"]}
        out["output"] = {
            "model": c.model,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "latency_s": c.latency_s,
            "cached": c.cached,
            "finish_reason": c.finish_reason,
            **call_usage(c),  # cached prompt tokens and passes, where the engine gives them
        }
        if c.error is not None:
            out["error"] = c.error
            return out
        out["response"] = c.text
        if kind == "longmemeval":
            if has_yes_no(c.text):
                out["label"] = parse_yes_no(reply_after_thinking(c.text))
                return out
            break
        label = parse_correct_wrong(reply_after_thinking(c.text))
        if label is not None:
            out["label"] = label
            return out
    out["unparseable"] = True
    out["error"] = no_verdict_error(kind, out["response"] or "", (out["output"] or {}).get("finish_reason"), cap)
    return out


def check_judge(questions: Sequence[Question], kind: str) -> None:
    """Fail before any model call when the judge cannot handle a selected question.

    >>> check_judge([Question("q", "multi-hop", "Who?", "Ann", "h")], "locomo")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: judge 'locomo' needs LoCoMo questions; ['q'] have no category (use longmemeval or none)
    """
    if kind == "longmemeval":
        for q in questions:
            try:
                longmemeval_judge_template(q.type, q.abstention)
            except ValueError as e:
                raise ConfigError(
                    f"judge 'longmemeval' on question {q.id!r}: {e} (use judge: locomo or none)"
                ) from None
    elif kind == "locomo":
        bad = [q.id for q in questions if q.category is None]
        if bad:
            raise ConfigError(
                f"judge 'locomo' needs LoCoMo questions; {bad[:3]} have no category (use longmemeval or none)"
            )
