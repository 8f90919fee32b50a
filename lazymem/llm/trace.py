"""A decision trace's lines, read while it is written (the ``<think>`` block LazyMem-135M writes before its
array: ``N. role: "first words ..." -> KEEP`` per message; ``lazymem.train.teacher``).

``trace_ops`` reads the op each line ends with (the array follows them: ``structured_trace``);
``trace_op_line`` says which line's op generated text writes next, and ``trace_keep_ids`` gives the
token ids a per-line KEEP bias needs (``Sampling.trace_keep_bias``, ``pipeline.keep_prior``).

``IndependentOps`` is ``Sampling.trace_independent``'s bookkeeping, shared by the engines: at every line's
op it records KEEP or DROP from the two op tokens' logits (biases and priors added) and then makes the
model write DROP, so each line is decided with every earlier op DROP (as ``lazymem train keep-bias
--set context=drop`` scores it) instead of after the ops the model itself wrote before it; ``set_ops``
writes the recorded decisions into the finished trace, which the array then follows.
"""

from __future__ import annotations

import re
from typing import Any

from lazymem.errors import ConfigError
from lazymem.llm.base import Sampling, bias_token_ids
from lazymem.prompts import ARRAY_FOLLOWS_TRACE


def trace_op_line(text: str) -> int | None:
    """The 0-based line of a ``<think>`` trace whose op generated ``text`` writes next: the text is inside the
    trace (it opens with ``<think>`` and a newline; line i follows the (i+1)-th newline) and its last line
    ends with ``->`` (``N. role: "quote" ->``, the op follows); None anywhere else. Where
    ``Sampling.trace_keep_bias`` acts: at the decision, as the teacher-forced probe reads P(KEEP).

    >>> [trace_op_line(t) for t in ("<think>\\n1. a ->", "<think>\\n1. a -> KEEP\\n2. b", "x\\n1. a -> KEEP\\n2. b ->")]
    [0, None, 1]
    >>> trace_op_line("<think>\\n1. a -> KEEP\\n</think>\\n[->") is None
    True
    """
    if "</think>" in text or "\n" not in text or not text.rstrip(" ").endswith("->"):
        return None
    return text.count("\n") - 1


def trace_keep_ids(tokenizer: Any, sampling: Sampling) -> tuple[int, dict[int, float]]:
    """(the `` KEEP`` token id, ``sampling.logit_bias`` as {token id: bias}) for ``Sampling.trace_keep_bias``."""
    keep = tokenizer.encode(" KEEP", add_special_tokens=False)
    if not keep:
        raise ConfigError("Sampling.trace_keep_bias: ' KEEP' encodes to no token")
    return int(keep[0]), bias_token_ids(tokenizer, sampling.logit_bias) if sampling.logit_bias else {}


def trace_drop_id(tokenizer: Any) -> int:
    """The first token id of `` DROP`` (the op ``Sampling.trace_independent`` makes the model write)."""
    drop = tokenizer.encode(" DROP", add_special_tokens=False)
    if not drop:
        raise ConfigError("Sampling.trace_independent: ' DROP' encodes to no token")
    return int(drop[0])


def require_followed_trace(sampling: Sampling) -> None:
    """Refuse ``Sampling.trace_independent`` without a decision schema whose array follows its trace: the
    decisions are written into the trace, and only such an array reads them (both engines, before a model loads)."""
    if sampling.trace_independent and not (sampling.json_schema or {}).get(ARRAY_FOLLOWS_TRACE):
        raise ConfigError(
            "Sampling.trace_independent: the array must follow a <think> trace (a decision schema "
            "with think=True, pipeline.structured_trace: true); this sampling has none"
        )


class IndependentOps:
    """Each trace line's op decided without the ops before it (``Sampling.trace_independent``).

    ``decide(line, keep_logit, drop_logit)`` records line i's op the first time its ``->`` is reached (KEEP
    when the `` KEEP`` logit, its biases and prior added, is at least the `` DROP`` one: greedy KEEP-vs-DROP
    as ``lazymem.train.prior`` reads it) and returns True then, when the engine must make the model write
    DROP; ``ops`` holds the decisions by line.

    >>> d = IndependentOps()
    >>> d.decide(0, 1.5, 1.0), d.decide(0, 0.0, 9.0), d.decide(1, -2.0, 1.0), d.ops
    (True, False, True, {0: 'KEEP', 1: 'DROP'})
    """

    def __init__(self) -> None:
        self.ops: dict[int, str] = {}

    def decide(self, line: int, keep_logit: float, drop_logit: float) -> bool:
        if line in self.ops:
            return False
        self.ops[line] = "KEEP" if keep_logit >= drop_logit else "DROP"
        return True


_LINE_OP = re.compile(r"(KEEP|DROP)\W*$")


def set_ops(text: str, ops: dict[int, str]) -> str:
    """``text`` with line i of its ``<think>`` trace ending in ``ops[i]`` instead of the op it was written with
    (lines without a decision, or naming no op, unchanged); text after the trace is kept as it is.

    >>> set_ops('<think>\\n1. a -> DROP\\n2. b -> DROP\\n</think>\\n[', {1: "KEEP"})
    '<think>\\n1. a -> DROP\\n2. b -> KEEP\\n</think>\\n['
    """
    start = text.find("<think>\n")
    end = text.find("\n</think>")
    if start < 0 or end < 0:
        return text
    head = start + len("<think>\n")
    lines = text[head:end].split("\n")
    for i, op in ops.items():
        if i < len(lines) and (m := _LINE_OP.search(lines[i])):
            lines[i] = lines[i][: m.start(1)] + op + lines[i][m.end(1) :]
    return text[:head] + "\n".join(lines) + text[end:]


def trace_ops(text: str) -> list[str | None]:
    """The op each line of a ``<think>`` trace ends with (None where a line names none).

    >>> trace_ops('<think>\\n1. user: "hi ..." -> DROP\\n2. assistant: "x" -> KEEP\\n3. ?\\n</think>\\n[')
    ['DROP', 'KEEP', None]
    """
    start = text.find("<think>\n")
    end = text.find("\n</think>")
    if start < 0 or end < 0:
        return []
    lines = text[start + len("<think>\n") : end].split("\n")
    return [m.group(1) if (m := _LINE_OP.search(line)) else None for line in lines]
