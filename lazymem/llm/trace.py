"""A decision trace's lines, read while it is written (the ``<think>`` block LazyMem-135M writes before its
array: ``N. role: "first words ..." -> KEEP`` per message; ``lazymem.train.teacher``).

``trace_ops`` reads the op each line ends with (the array follows them: ``structured_trace``);
``trace_op_line`` says which line's op generated text writes next, and ``trace_keep_ids`` gives the
token ids a per-line KEEP bias needs (``Sampling.trace_keep_bias``, ``pipeline.keep_prior``).
"""
from __future__ import annotations

import re
from typing import Any

from lazymem.errors import ConfigError
from lazymem.llm.base import Sampling, bias_token_ids


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


_LINE_OP = re.compile(r"(KEEP|DROP)\W*$")


def trace_ops(text: str) -> list[str | None]:
    """The op each line of a ``<think>`` trace ends with (None where a line names none).

    >>> trace_ops('<think>\\n1. user: "hi ..." -> DROP\\n2. assistant: "x" -> KEEP\\n3. ?\\n</think>\\n[')
    ['DROP', 'KEEP', None]
    """
    start = text.find("<think>\n")
    end = text.find("\n</think>")
    if start < 0 or end < 0:
        return []
    lines = text[start + len("<think>\n"):end].split("\n")
    return [m.group(1) if (m := _LINE_OP.search(line)) else None for line in lines]
