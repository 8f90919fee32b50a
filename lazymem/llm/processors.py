"""The transformers backend's logits processors: what the grammar alone cannot say, one class each.

``TransformersBackend`` (``lazymem.llm.hf``) puts them in this order, each narrowing what the ones
before it still allow:

- ``BiasProcessor``: ``Sampling.logit_bias``, a fixed number added to some tokens' logits;
- ``TraceKeepBias``: ``Sampling.trace_keep_bias`` per trace line, and with ``Sampling.trace_independent``
  each line's op recorded as decided and written DROP (``lazymem.llm.trace.IndependentOps``);
- the JSON grammar (outlines), then ``FollowTrace``: item i's op is the op trace line i ends with;
- ``Grounded``: ``Sampling.grounded``, each KEEP's content a verbatim span of its message
  (``lazymem.llm.grounding``);
- ``Forced``: a content adapter's pass re-writes the decided trace token by token before its array.

Each is called as ``processor(input_ids, scores) -> scores`` (a row per prompt of the batch; ``width``
is the prompt's padded length, so ``input_ids[row, width:]`` is what the row has written). torch is
imported on first call.

>>> import torch
>>> BiasProcessor({2: 1.5})(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 4)).tolist()
[[0.0, 0.0, 1.5, 0.0]]
>>> Forced(width=1, ids=[[3, 1]])(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 4)).tolist()
[[-inf, 0.0, -inf, -inf]]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.llm.base import Sampling
from lazymem.llm.trace import IndependentOps, trace_drop_id, trace_keep_ids, trace_op_line, trace_ops

_OP_SET = re.compile(r'"op"[ ]?:[ ]?"([A-Z])')  # an item's op, from its first letter
_OP_OPEN = re.compile(r'"op"[ ]?:[ ]?"$')  # an op value opened, its letter not yet written


class FollowTrace:
    """Item i's op = the op trace line i ends with (a transformers LogitsProcessor after the grammar).

    While item i's op is not yet written, every token the grammar allows that would write the
    other op's first letter there (alone after the quote, or with the quote and key merged into
    one token) is masked; a trace line that names no op leaves the choice to the model. Right
    after ``"op": "`` that is the tokens starting with the other letter; elsewhere only tokens
    holding a quote can open an op value, so only those are checked.
    """

    def __init__(self, tok: Any, width: int, ids: Mapping[str, Any], decided: Sequence[IndependentOps] | None = None):
        self.tok, self.width, self.ids, self.decided = tok, width, ids, decided

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row in range(input_ids.shape[0]):
            text = self.tok.decode(input_ids[row, self.width :].tolist(), skip_special_tokens=True)
            end = text.find("</think>")
            if end < 0:
                continue
            ops, array = trace_ops(text), text[end:]
            if self.decided is not None:  # trace_independent: the recorded decisions, not the DROPs written
                ops = [self.decided[row].ops.get(i, op) for i, op in enumerate(ops)]
            done = len(_OP_SET.findall(array))
            if done >= len(ops) or ops[done] is None:
                continue
            other = "D" if ops[done] == "KEEP" else "K"
            tail = array[-16:]
            if _OP_OPEN.search(tail):  # the value's quote is written: its first letter is next
                scores[row, self.ids[other]] = float("-inf")
                continue
            before = len(_OP_SET.findall(tail))
            allowed = torch.isfinite(scores[row]) & self.ids["quoted"]
            for t in torch.nonzero(allowed).flatten().tolist():
                new = _OP_SET.findall(tail + self.ids["texts"][t])[before:]
                if new and new[0] == other:
                    scores[row, t] = float("-inf")
        return scores


class Grounded:
    """Item i's compressed_content stays a verbatim span of text i (a transformers LogitsProcessor,
    last in the list: it narrows what the grammar, if any, still allows). A row whose text is
    followed by ``JsonScan`` incrementally; where nothing the other processors allow is a span,
    the row is left as it is (the gate and the rewritten count then judge it)."""

    def __init__(self, tok: Any, width: int, texts: Sequence[str], vocab: Any):
        from lazymem.llm.grounding import SpanText

        self.tok, self.width, self.vocab = tok, width, vocab
        self.spans = [SpanText(t) for t in texts]
        self.rows: dict[int, tuple[str, Any]] = {}  # row -> (text scanned, JsonScan after it)

    def _scan(self, row: int, text: str) -> Any:
        from lazymem.llm.grounding import JsonScan

        done, scan = self.rows.get(row, ("", None))
        if scan is None or not text.startswith(done):  # a byte-level token may rewrite the last character
            done, scan = "", JsonScan()
        scan.feed(text[len(done) :])
        self.rows[row] = (text, scan)
        return scan

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row in range(input_ids.shape[0]):
            text = self.tok.decode(input_ids[row, self.width :].tolist(), skip_special_tokens=True)
            scan = self._scan(row, text)
            allowed = self.vocab.allowed(scan, self.spans)
            if allowed is not None:
                idx = torch.tensor(
                    sorted(t for t in allowed if t < scores.shape[1]), dtype=torch.long, device=scores.device
                )
                if idx.numel() and bool(torch.isfinite(scores[row, idx]).any()):
                    kept = scores[row, idx].clone()
                    scores[row] = float("-inf")
                    scores[row, idx] = kept
            elif scan.near_content:
                banned = [t for t in self.vocab.banned(scan, self.spans) if t < scores.shape[1]]
                finite = torch.isfinite(scores[row])
                finite[banned] = False
                if bool(finite.any()):
                    scores[row, banned] = float("-inf")
        return scores


class TraceKeepBias:
    """``Sampling.trace_keep_bias``: where the op of line i of a row's ``<think>`` trace comes next (after its
    ``->``: ``trace_op_line``), line i's number is added to `` KEEP``'s logit (after ``BiasProcessor``'s
    ``logit_bias``; a transformers LogitsProcessor). With ``Sampling.trace_independent`` it then records
    line i's op (``decided``: one ``IndependentOps`` per row) and makes `` DROP`` the greedy choice."""

    def __init__(self, tok: Any, width: int, s: Sampling, rows: int):
        self.tok, self.width, self.lines = tok, width, tuple(s.trace_keep_bias or ())
        self.keep, _ = trace_keep_ids(tok, s)
        self.drop = trace_drop_id(tok) if s.trace_independent else None
        self.decided = [IndependentOps() for _ in range(rows)] if s.trace_independent else None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        for row in range(input_ids.shape[0]):
            line = trace_op_line(self.tok.decode(input_ids[row, self.width :].tolist(), skip_special_tokens=True))
            if line is not None and line < len(self.lines):
                scores[row, self.keep] += self.lines[line]
            if (
                line is not None
                and self.decided is not None
                and self.decided[row].decide(line, float(scores[row, self.keep]), float(scores[row, self.drop]))
            ):
                scores[row, self.drop] = scores[row].max() + 1000.0  # written DROP, whatever was decided
        return scores


class Forced:
    """Row r writes ``ids[r]`` first, token by token (a transformers LogitsProcessor, last in the list): a content
    adapter's pass re-writes the trace the deciding model wrote, as decided, before its own array."""

    def __init__(self, width: int, ids: Sequence[Sequence[int]]):
        self.width, self.ids = width, [list(r) for r in ids]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        t = input_ids.shape[1] - self.width
        for row, forced in enumerate(self.ids):
            if t < len(forced):
                scores[row] = float("-inf")
                scores[row, forced[t]] = 0.0
        return scores


class BiasProcessor:
    """Adds a fixed bias to some tokens' logits at every step (a transformers LogitsProcessor)."""

    def __init__(self, bias: dict[int, float]):
        self.ids, self.values = list(bias), list(bias.values())

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        scores = scores.clone()
        scores[:, self.ids] += torch.tensor(self.values, dtype=scores.dtype, device=scores.device)
        return scores
