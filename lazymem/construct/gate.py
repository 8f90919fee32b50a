"""The format gate (paper Eq. reward, the validity indicator o in V) and the decision schema.

A memory-processing model reads (query, window) and returns one KEEP/DROP decision per
non-empty message as a JSON array. ``parse_decisions`` judges one raw output: a verdict
that is ``ok`` with one Decision per position, or names its failure kind (FAILURE_KINDS).
``GateVerdict.fmt_ok`` is the paper's looser "Gate Fmt." (structure only).

>>> v = parse_decisions('[{"op": "KEEP", "compressed_content": "Moved to Lisbon.", "reason": "r"},'
...                     ' {"op": "DROP", "compressed_content": "", "reason": "r"}]', [7, 8])
>>> v.ok, [(d.pos, d.op, d.content) for d in v.decisions]
(True, [(7, 'KEEP', 'Moved to Lisbon.'), (8, 'DROP', '')])
>>> bad = parse_decisions('```json\\n[]\\n```', [])
>>> bad.reason, bad.fmt_ok
('extra_text', False)
>>> parse_decisions('[{"op": "keep", "compressed_content": "x", "reason": ""}]', [3]).fmt_ok
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lazymem.prompts import ARRAY_FOLLOWS_TRACE, THINK_LINES

OPS = ("KEEP", "DROP")
FIELDS = ("op", "compressed_content", "reason")  # exactly these, per the window-annotation listing
GATE_OK = "ok"
# Why an output failed the gate; GateVerdict.reason is GATE_OK or one of these.
FAILURE_KINDS: tuple[str, ...] = (
    "not_text",  # the output is not a str
    "empty",  # nothing but whitespace
    "truncated",  # JSON that stops mid-value (e.g. generation hit max_tokens)
    "invalid_json",  # not parseable by json.loads for another reason
    "extra_text",  # a JSON value with text before or after it (prose, code fences, two arrays)
    "not_array",  # valid JSON, but not an array
    "wrong_count",  # array length != number of non-empty messages in the window
    "item_not_object",  # an array item is not a JSON object
    "duplicate_field",  # an object repeats a key (json.loads would silently keep the last)
    "missing_field",  # op, compressed_content or reason absent
    "extra_field",  # any other key (an "id" included: decisions are matched by order)
    "bad_op",  # op is not exactly "KEEP" or "DROP"
    "bad_field_type",  # compressed_content or reason is not a string
    "invalid_unicode",  # a string holds a lone surrogate (cannot be written as UTF-8)
    "keep_empty_content",  # KEEP with empty or whitespace-only compressed_content
    "drop_with_content",  # DROP with compressed_content other than ""
)
# Failures that still count for the paper's "Gate Fmt." column: "a parseable JSON decision
# array with exactly one decision per input message" (structure only, not the item schema).
STRUCTURAL_FAILURES = frozenset(FAILURE_KINDS[: FAILURE_KINDS.index("wrong_count") + 1])


@dataclass(frozen=True)
class Decision:
    """The processor's action for one history message."""

    pos: int  # position of the message in its history
    op: str  # "KEEP" or "DROP"
    content: str  # compressed text for KEEP, "" for DROP
    rationale: str = ""  # the model's "reason" field (kept for inspection only)


@dataclass(frozen=True)
class GateVerdict:
    """The format gate's judgement on one raw output."""

    ok: bool  # passed the gate (o in V)
    reason: str  # GATE_OK or one of FAILURE_KINDS
    decisions: tuple[Decision, ...]  # one per decided position when ok, else ()
    raw: str  # the output as given (str() of it when it was not a str)
    detail: str = ""  # human-readable location of the failure, e.g. "item 3: op 'keep'"

    @property
    def fmt_ok(self) -> bool:
        """The paper's Gate Fmt. for this output: a parseable JSON decision array with exactly
        one decision per input message (item-schema failures still count as formatted)."""
        return self.ok or self.reason not in STRUCTURAL_FAILURES


class _Obj(dict):
    """A JSON object that remembers keys it saw twice."""

    dupes: tuple[str, ...] = ()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.dupes = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook)
_JSON_WHITESPACE = " \t\n\r"  # str.strip() would also eat e.g. U+00A0, which json.loads rejects
_MAX_PROBES = 8  # '[' positions tried when diagnosing extra text; bounds the work at O(8n)


def _fail(raw: str, reason: str, detail: str = "") -> GateVerdict:
    return GateVerdict(False, reason, (), raw, detail)


def _diagnose_unparseable(text: str, err: Exception) -> tuple[str, str]:
    """Why json.loads refused ``text`` (already stripped): extra text, truncation, or other."""
    starts = [0]
    # Output that opens like JSON failed on its own value; only prose or a fence in front
    # (anything else first) is searched for an array further on. Probing '[' inside a
    # truncated array would find sub-arrays in its strings and misreport "extra_text".
    if text[0] not in "[{":
        i = text.find("[")
        while i != -1 and len(starts) < _MAX_PROBES:
            starts.append(i)
            i = text.find("[", i + 1)
    for start in starts:
        try:
            _, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        where = "before" if start else "after"
        return "extra_text", f"text {where} the JSON value (value spans {start}..{end} of {len(text)})"
    if isinstance(err, RecursionError):
        return "invalid_json", "nested too deeply"
    pos = getattr(err, "pos", -1)
    msg = getattr(err, "msg", str(err))
    if pos >= len(text) or msg.startswith("Unterminated string"):
        return "truncated", f"{msg} at char {pos}"
    return "invalid_json", f"{msg} at char {pos}"


def _encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_decisions(raw: str, window_positions: Sequence[int]) -> GateVerdict:
    """The format gate: accept only a JSON array of exactly one valid decision per position.

    Strictness follows the paper's listing ("Return only the JSON array. Do not output
    markdown ... directly parseable by json.loads()"): whitespace around the array is
    allowed (json.loads allows it), anything else is not, so code fences and prose fail as
    "extra_text". Decisions carry no id; the i-th item decides ``window_positions[i]``. Item
    checks run in order and the first failure is reported. Never raises on any ``raw``.

    Args:
        raw: the processor's output (strip any reasoning trace first, see strip_think).
        window_positions: positions of the window's non-empty messages, ascending
            (``prompts.decision_positions(window_messages)``).

    Raises:
        ValueError: only when ``window_positions`` is not strictly increasing (a caller bug).

    >>> parse_decisions('[{"op": "DROP", "compressed_content": "x", "reason": ""}]', [3]).reason
    'drop_with_content'
    """
    positions = tuple(window_positions)
    if any(b <= a for a, b in zip(positions, positions[1:])):
        raise ValueError(f"window positions must be strictly increasing, got {positions}")
    if not isinstance(raw, str):
        try:
            shown = str(raw)
        except Exception:  # a hostile __str__ must not break the never-raises promise
            shown = f"<{type(raw).__name__}>"
        return _fail(shown, "not_text", type(raw).__name__)
    if not raw.strip():
        return _fail(raw, "empty")
    try:
        value = _DECODER.decode(raw)  # exactly json.loads: only JSON whitespace may surround it
    except (ValueError, RecursionError) as err:
        return _fail(raw, *_diagnose_unparseable(raw.strip(_JSON_WHITESPACE), err))
    if not isinstance(value, list):
        return _fail(raw, "not_array", type(value).__name__)
    if len(value) != len(positions):
        return _fail(raw, "wrong_count", f"{len(value)} decisions for {len(positions)} messages")
    decisions = []
    for i, (item, pos) in enumerate(zip(value, positions)):
        where = f"item {i}"
        if not isinstance(item, dict):
            return _fail(raw, "item_not_object", f"{where}: {type(item).__name__}")
        if getattr(item, "dupes", ()):
            return _fail(raw, "duplicate_field", f"{where}: {item.dupes[0]!r}")
        missing = [f for f in FIELDS if f not in item]
        if missing:
            return _fail(raw, "missing_field", f"{where}: {missing[0]!r}")
        extra = [k for k in item if k not in FIELDS]
        if extra:
            return _fail(raw, "extra_field", f"{where}: {extra[0][:40]!r}")
        op, content, reason = item["op"], item["compressed_content"], item["reason"]
        if op not in OPS:  # also rejects non-strings: no list/dict equals "KEEP"
            return _fail(raw, "bad_op", f"{where}: {str(op)[:40]!r}")
        for name, v in (("compressed_content", content), ("reason", reason)):
            if not isinstance(v, str):
                return _fail(raw, "bad_field_type", f"{where}: {name} is {type(v).__name__}")
            if not _encodable(v):
                return _fail(raw, "invalid_unicode", f"{where}: {name}")
        if op == "KEEP" and not content.strip():
            return _fail(raw, "keep_empty_content", where)
        if op == "DROP" and content != "":
            return _fail(raw, "drop_with_content", where)
        decisions.append(Decision(pos, op, content, reason))
    return GateVerdict(True, GATE_OK, tuple(decisions), raw)


_THINK = re.compile(r"\A\s*<think>.*?</think>", re.DOTALL)


def strip_think(raw: str) -> str:
    """Drop a leading ``<think>...</think>`` reasoning trace (Qwen3 thinking mode).

    The gate itself never strips anything; callers that run a thinking model do this first.

    >>> strip_think("<think>hmm [1]</think>\\n[]")
    '\\n[]'
    """
    return _THINK.sub("", raw, count=1)


def decision_schema(n_messages: int, max_len: int | None = 512, max_reason_len: int = 128, think: bool = False) -> dict:
    """A bounded JSON schema of a valid output, for constrained decoding.

    ``think``: the output opens with a ``<think>`` trace of exactly ``n_messages`` numbered
    lines (how a model trained on ``teacher: gold-trace`` writes, e.g. LazyMem-135M, each line
    ending in ``-> KEEP`` or ``-> DROP``), and item i's op is the op trace line i ends with: the
    annotations ``x-lazymem-think-lines`` and ``x-lazymem-array-follows-trace`` carry this to the
    transformers backend (its grammar, then ``FollowTrace``).

    Exactly ``n_messages`` items; KEEP needs 1..max_len characters of content, DROP forces
    "" (maxLength 0); no other keys. Bounded strings matter: unbounded ones let constrained
    decoding run away. The one gap to the gate: whitespace-only KEEP content satisfies the
    schema but fails the gate (regex "pattern" support differs between grammar engines).
    ``max_len=None`` leaves a KEEP's content unbounded: only for grounded decoding, where the
    content can only be a span of its message (bounded by it), and the grammar is much smaller
    (a bounded string is one automaton state per character: at n=3 the transformers index took
    1.67 GB with ``max_len=512`` and 0.74 GB without).

    >>> decision_schema(1, None)["items"]["anyOf"][0]["properties"]["compressed_content"]
    {'type': 'string', 'minLength': 1}

    >>> decision_schema(2)["minItems"], decision_schema(2)["maxItems"]
    (2, 2)
    """
    if n_messages < 0 or (max_len is not None and max_len < 1) or max_reason_len < 0:
        raise ValueError(f"bad schema bounds: n={n_messages}, max_len={max_len}, max_reason_len={max_reason_len}")
    reason = {"type": "string", "maxLength": max_reason_len}

    def item(op: str, content: dict) -> dict:
        return {
            "type": "object",
            "properties": {"op": {"const": op}, "compressed_content": content, "reason": reason},
            "required": list(FIELDS),
            "additionalProperties": False,
        }

    schema = {
        "type": "array",
        "minItems": n_messages,
        "maxItems": n_messages,
        "items": {
            "anyOf": [
                item("KEEP", {"type": "string", "minLength": 1, **({} if max_len is None else {"maxLength": max_len})}),
                item("DROP", {"type": "string", "maxLength": 0}),
            ]
        },
    }
    return {**schema, THINK_LINES: n_messages, ARRAY_FOLLOWS_TRACE: True} if think else schema
