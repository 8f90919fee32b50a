"""The SFT teacher (paper App. "SFT data construction"): annotate windows, keep or discard each.

A teacher is any LLM client prompted with the window's chat messages (the paper: DeepSeek-V4-Flash
in high-thinking mode), or the offline **gold-label teacher** (``teacher: gold``), which KEEPs
every gold message with its verbatim text and DROPs the rest. The gold teacher is a named
option, recorded as such in the data card; it never stands in for a model that failed.

Every output goes through the same format gate as inference (``WindowPrompt.gate``) after a
leading ``<think>...</think>`` is set aside; the trace stays in the SFT target, as the paper's
"its reasoning and structured decisions form the SFT target". A reasoning server returns the
trace beside the text (``Completion.reasoning``: DeepSeek's ``reasoning_content``, vLLM's
``reasoning``); with ``keep_reasoning`` (``SFTDataConfig.teacher_reasoning``) it is put back
in front as ``<think>\\n{trace}\\n</think>\\n\\n`` (``with_reasoning``). An instance is discarded when
the call failed, the gate refuses the output (unparsable, schema violation, wrong number of
decisions: the gate's failure kind is the reason), or a gold message is dropped.

>>> from lazymem.records import History, Message, Question
>>> from lazymem.construct import window_prompts
>>> from lazymem.retrieve import build_windows
>>> h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in
...                        enumerate(["I moved to Lisbon.", "Nice!"])))
>>> q = Question("q", "single-session-user", "Where do I live?", "Lisbon", "h", "2023/06/01", evidence=(0,))
>>> (p,) = window_prompts(h, q, build_windows(h, [0], gold=q.evidence))
>>> print(gold_target(p, h))
[{"op": "KEEP", "compressed_content": "I moved to Lisbon.", "reason": "evidence for the query"}, {"op": "DROP", "compressed_content": "", "reason": "not evidence for the query"}]
>>> judge(p, gold_completion(p, h)).status, judge(p, completion("[]")).status
('ok', 'wrong_count')
>>> json.loads(gold_target(p, h, numbered=True))[1]["reason"]
'message 2: not evidence for the query'

"""  # noqa: E501  (a doctest's expected output is one line)

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lazymem.construct import FAILURE_KINDS, STRUCTURAL_FAILURES, WindowPrompt, strip_think
from lazymem.llm import Completion

if TYPE_CHECKING:
    from lazymem.llm import LLMClient, Sampling
    from lazymem.records import History, Question

GOLD = "gold"  # the config value that selects the gold-label teacher
GOLD_TRACE = "gold-trace"  # the gold-label teacher with a think trace that walks the window message by message
GOLD_TRACE_NUMBERED = "gold-trace-numbered"  # the same, each item's reason naming its message's number
GOLD_TEACHERS = (GOLD, GOLD_TRACE, GOLD_TRACE_NUMBERED)
GOLD_TEACHER = "gold-label teacher"  # its name in data cards and Completion.model
TRACE_WORDS = 8  # words of each message the trace quotes
KEEP_REASON = "evidence for the query"
DROP_REASON = "not evidence for the query"
OK = "ok"
FAILED_CALL = "failed_call"
DROPPED_GOLD = "dropped_gold"
DISCARD_REASONS: tuple[str, ...] = (FAILED_CALL, DROPPED_GOLD) + FAILURE_KINDS
_THINK = re.compile(r"\A\s*<think>(.*?)</think>", re.DOTALL)
# The paper's four discard reasons, each gate failure kind under one of them.
PAPER_GROUPS = ("failed_call", "drops_gold", "unparsable", "schema_violation", "wrong_count")


def paper_group(reason: str) -> str:
    """The paper's name for a discard reason (a gate failure kind is grouped).

    >>> [paper_group(r) for r in ("dropped_gold", "extra_text", "wrong_count", "bad_op")]
    ['drops_gold', 'unparsable', 'wrong_count', 'schema_violation']
    """
    if reason == FAILED_CALL:
        return "failed_call"
    if reason == DROPPED_GOLD:
        return "drops_gold"
    if reason == "wrong_count":
        return "wrong_count"
    if reason in STRUCTURAL_FAILURES:
        return "unparsable"
    if reason in FAILURE_KINDS:
        return "schema_violation"
    raise ValueError(f"unknown discard reason {reason!r}")


@dataclass(frozen=True)
class Annotation:
    """The teacher's output for one window and whether it becomes an SFT instance."""

    status: str  # OK or one of DISCARD_REASONS
    # the SFT target: the teacher's text (with keep_reasoning, a separate trace in front); "" if the call failed
    target: str
    n_keep: int  # KEEP decisions (0 unless the gate passed)
    n_decisions: int  # decisions parsed (0 unless the gate passed)
    has_think: bool  # the text opens with a <think>...</think> trace
    detail: str = ""  # the gate's or the call's error detail

    @property
    def ok(self) -> bool:
        return self.status == OK


def completion(text: str, model: str = GOLD_TEACHER) -> Completion:
    """A successful Completion holding ``text`` (what the gold teacher returns)."""
    return Completion(
        text=text, prompt_tokens=None, completion_tokens=None, latency_s=0.0, model=model, finish_reason="stop"
    )


def key_span(text: str, answer: str, query: str) -> str:
    """The gold teacher's key-span KEEP (the paper's "key-span extraction"): the sentence of ``text`` holding
    the most of the gold answer's content words (ties: the most of the query's, then the first); the whole
    text when it is one sentence or when no sentence holds an answer word (nothing is cut on a guess).
    Sentences split after ``.``, ``!`` or ``?`` and a space, so a ``[shares a photo of ...]`` caption after
    a sentence is a sentence of its own. The span is verbatim (a grounded KEEP).

    >>> key_span("Glad you asked! We went to the Rockies. [shares a photo of a lake]", "the Rockies",
    ...          "Where did Evan go?")
    'We went to the Rockies.'
    >>> key_span("Nice weather. Sunny again!", "Lisbon", "Where do I live?")
    'Nice weather. Sunny again!'
    """
    from lazymem.construct.extractive import split_sentences
    from lazymem.text import content_tokens

    sentences = split_sentences(text)
    if len(sentences) < 2:
        return text
    a, q = content_tokens(str(answer)), content_tokens(query)
    scores = [(len(a & content_tokens(x)), len(q & content_tokens(x))) for x in sentences]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    return sentences[best] if scores[best][0] > 0 else text


# What a gold teacher's KEEP holds: the message, or its key span; "content": targets for a content adapter (the
# model that writes the KEEP contents while another decides: llama.cpp's extra_body.content_adapter), see
# ``content_keeps``.
KEEP_STYLES = ("verbatim", "key_span", "content")
RELATED_REASON = "related to the query"  # a content target's KEEP of a non-gold message


def content_keeps(prompt: WindowPrompt, history: History, question: Question) -> dict[int, str]:
    """A content adapter's KEEPs of one window, by position: each gold message's ``key_span``, and each non-gold
    message the extractive processor would keep (word overlap with the query at least its threshold: what a
    deciding model with the lexical prior keeps besides the gold) cut to its sentence most like the query
    (``query_key_span``). Never a decision target: a model trained on it writes contents, another decides.

    >>> from lazymem.records import History, Message, Question
    >>> from lazymem.construct import window_prompts
    >>> from lazymem.retrieve import build_windows
    >>> texts = ["Big week! I moved to Lisbon.", "Lisbon traffic is awful. The trams are old.", "My cat sleeps."]
    >>> h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "d") for i, t in enumerate(texts)))
    >>> q = Question("q", "single-session-user", "Where did I move? Lisbon?", "Lisbon", "h", "d", evidence=(0,))
    >>> (p,) = window_prompts(h, q, build_windows(h, [1], gold=q.evidence))
    >>> content_keeps(p, h, q)
    {0: 'I moved to Lisbon.', 1: 'Lisbon traffic is awful.'}
    """
    from lazymem.construct.extractive import extractive_keeps, query_key_span

    texts = [history[p].text for p in prompt.decision_positions]
    out = {}
    for p, gold, text, kept in zip(
        prompt.decision_positions, prompt.gold_labels, texts, extractive_keeps(question.text, texts)
    ):
        if gold:
            out[p] = key_span(text, question.answer, question.text)
        elif kept:
            out[p] = query_key_span(question.text, text)
    return out


def gold_target(
    prompt: WindowPrompt,
    history: History,
    numbered: bool = False,
    contents: dict[int, str] | None = None,
    keeps: set[int] | None = None,
) -> str:
    """The gold-label teacher's output: KEEP each gold message verbatim, DROP the rest (one JSON line).

    ``numbered``: each reason starts with its message's number (``"message 3: not evidence for
    the query"``), the trace's number: a small model then counts the array's items by copying the
    trace's numbers instead of counting identical DROP items (the paper's reason is "brief local").
    ``contents``: a gold position's KEEP content instead of its whole text (``key_span``).
    ``keeps``: the positions to KEEP instead of the gold ones (a content adapter's targets, ``content_keeps``);
    a kept non-gold message's reason says it is related to the query.
    """

    def reason(i: int, gold: bool, keep: bool) -> str:
        text = (KEEP_REASON if gold else RELATED_REASON) if keep else DROP_REASON
        return f"message {i}: {text}" if numbered else text

    contents = contents or {}
    items = [
        {"op": "KEEP", "compressed_content": contents.get(p, history[p].text), "reason": reason(i, gold, True)}
        if (gold if keeps is None else p in keeps)
        else {"op": "DROP", "compressed_content": "", "reason": reason(i, gold, False)}
        for i, (p, gold) in enumerate(zip(prompt.decision_positions, prompt.gold_labels), start=1)
    ]
    return json.dumps(items, ensure_ascii=False)


def gold_trace(prompt: WindowPrompt, history: History, keeps: set[int] | None = None) -> str:
    """A think trace for the gold target: each message numbered, its first words quoted, its op.

    The paper's SFT targets hold the teacher's reasoning before the decisions; a small model
    trained on this one learns to walk the window in order (one decision per message: the
    count comes from copying, not from counting) and to look at each message before its op.

    >>> from lazymem.records import History, Message, Question
    >>> from lazymem.construct import window_prompts
    >>> from lazymem.retrieve import build_windows
    >>> h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in
    ...                        enumerate(["I moved to Lisbon last spring with my two cats.", "Nice!"])))
    >>> q = Question("q", "single-session-user", "Where do I live?", "Lisbon", "h", "2023/06/01", evidence=(0,))
    >>> (p,) = window_prompts(h, q, build_windows(h, [0], gold=q.evidence))
    >>> print(gold_trace(p, h))
    <think>
    1. user: "I moved to Lisbon last spring with my ..." -> KEEP
    2. user: "Nice!" -> DROP
    </think>
    """
    lines = ["<think>"]
    for i, (pos, gold) in enumerate(zip(prompt.decision_positions, prompt.gold_labels), start=1):
        m = history[pos]
        keep = gold if keeps is None else pos in keeps
        lines.append(f"{trace_head(i, m.role, m.text)} {'KEEP' if keep else 'DROP'}")
    return "\n".join(lines + ["</think>"])


def trace_head(i: int, role: str, text: str) -> str:
    """One trace line up to its op: ``N. role: "first words ..." ->``."""
    words = text.split()
    quote = " ".join(words[:TRACE_WORDS]) + (" ..." if len(words) > TRACE_WORDS else "")
    return f'{i}. {role}: "{quote}" ->'


def gold_completion(
    prompt: WindowPrompt,
    history: History,
    trace: bool = False,
    numbered: bool = False,
    contents: dict[int, str] | None = None,
    keeps: set[int] | None = None,
) -> Completion:
    target = gold_target(prompt, history, numbered=numbered, contents=contents, keeps=keeps)
    return completion(gold_trace(prompt, history, keeps) + "\n" + target if trace else target)


def with_reasoning(out: Completion) -> str:
    """A teacher output as an SFT target: a separately returned trace put in front as
    ``<think>...</think>`` (the paper's targets), unless the text already opens with one.

    >>> print(with_reasoning(Completion("[]", None, None, 0.0, reasoning="No message helps.")))
    <think>
    No message helps.
    </think>
    <BLANKLINE>
    []
    """
    trace = (out.reasoning or "").strip()
    if not trace or not isinstance(out.text, str) or out.text.lstrip().startswith("<think>"):
        return out.text
    return f"<think>\n{trace}\n</think>\n\n{out.text.lstrip()}"


def think_text(text: str) -> str:
    """The reasoning inside a leading ``<think>...</think>``; "" when there is none.

    >>> think_text("<think>\\nGold: message 2.\\n</think>\\n[]"), think_text("[]")
    ('Gold: message 2.', '')
    """
    m = _THINK.match(text) if isinstance(text, str) else None
    return m.group(1).strip() if m else ""


def judge(prompt: WindowPrompt, out: Completion, keep_reasoning: bool = False) -> Annotation:
    """Keep or discard one teacher output for its window (see the module docstring)."""
    if out.error is not None:
        return Annotation(FAILED_CALL, "", 0, 0, False, out.error)
    text = with_reasoning(out) if keep_reasoning else out.text
    rest = strip_think(text) if isinstance(text, str) else text
    has_think = isinstance(text, str) and rest != text
    verdict = prompt.gate(rest)
    if not verdict.ok:
        return Annotation(verdict.reason, text, 0, 0, has_think, verdict.detail)
    n_keep = sum(d.op == "KEEP" for d in verdict.decisions)
    dropped = [d.pos for d, gold in zip(verdict.decisions, prompt.gold_labels) if gold and d.op == "DROP"]
    if dropped:
        return Annotation(
            DROPPED_GOLD, text, n_keep, len(verdict.decisions), has_think, f"gold position(s) {dropped} dropped"
        )
    return Annotation(OK, text, n_keep, len(verdict.decisions), has_think)


def key_spans(prompt: WindowPrompt, history: History, question: Question) -> dict[int, str]:
    """``key_span`` of each gold message of a window, by position."""
    return {
        p: key_span(history[p].text, question.answer, question.text)
        for p, gold in zip(prompt.decision_positions, prompt.gold_labels)
        if gold
    }


def annotate(
    prompts: Sequence[WindowPrompt],
    histories: Sequence[History],
    client: LLMClient | None,
    sampling: Sampling,
    trace: bool = False,
    numbered: bool = False,
    keep_reasoning: bool = False,
    questions: Sequence[Question] | None = None,
    keep: str = "verbatim",
) -> list[tuple[Completion, Annotation]]:
    """Teacher outputs for many windows and their verdicts, in order.

    ``client`` None means the gold-label teacher (``histories[i]`` gives window i's texts; with
    ``trace`` its target opens with ``gold_trace``, with ``numbered`` its reasons carry the message number);
    otherwise all windows go to the client in one ``generate`` call, so a server backend
    runs them concurrently and a cached client answers repeats from disk; ``keep_reasoning``
    puts a separately returned trace in the target (``with_reasoning``). ``keep="key_span"`` (the gold
    teacher only) KEEPs each gold message's ``key_span`` for its window's question (``questions[i]``);
    ``keep="content"`` (likewise) a content adapter's targets, ``content_keeps``.
    """
    if len(prompts) != len(histories):
        raise ValueError(f"{len(prompts)} prompts but {len(histories)} histories")
    if keep not in KEEP_STYLES:
        raise ValueError(f"keep must be one of {KEEP_STYLES}, got {keep!r}")
    if keep != "verbatim" and (client is not None or questions is None or len(questions) != len(prompts)):
        raise ValueError(f"keep={keep!r} is the gold teacher's (client None) and needs each window's question")
    if client is None:
        spans = (
            [key_spans(p, h, q) for p, h, q in zip(prompts, histories, questions)]
            if keep == "key_span"
            else [content_keeps(p, h, q) for p, h, q in zip(prompts, histories, questions)]
            if keep == "content"
            else [None] * len(prompts)
        )
        outs = [
            gold_completion(p, h, trace, numbered, c, set(c) if keep == "content" else None)
            for p, h, c in zip(prompts, histories, spans)
        ]
    else:
        outs = client.generate([list(p.messages) for p in prompts], sampling) if prompts else []
        if len(outs) != len(prompts):
            raise RuntimeError(f"teacher returned {len(outs)} completions for {len(prompts)} prompts")
    return [(o, judge(p, o, keep_reasoning)) for p, o in zip(prompts, outs)]
